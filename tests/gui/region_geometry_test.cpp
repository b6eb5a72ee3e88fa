// SPDX-License-Identifier: GPL-2.0-or-later
// Region map geometry: known ranges -> pixel spans with a kind, at every zoom level.
#include <QElapsedTimer>
#include <QtTest>

#include "bytes_model.h"
#include "gui_test_util.h"
#include "labels.h"
#include "region_geometry.h"
#include "snapshot.h"

using namespace ddpscope;
using namespace ddpscope::gui;

namespace {

PlacedRange range(std::uint64_t b, std::uint64_t e, std::uint64_t frame, std::uint8_t op,
                  bool overlap = false, bool conflict = false, bool violation = false) {
  PlacedRange r;
  r.begin = b;
  r.end = e;
  r.frame = frame;
  r.opcode = op;
  r.overlap = overlap;
  r.conflict = conflict;
  r.violation = violation;
  return r;
}

QString dump(const std::vector<MapSpan>& spans) {
  QStringList l;
  for (const auto& s : spans)
    l << QStringLiteral("[%1,%2) %3 op%4").arg(s.x0).arg(s.x1).arg(to_string(s.kind)).arg(s.opcode);
  return l.join(QStringLiteral("; "));
}

// Spans tile [0, width) without gaps.
void checkTiling(const std::vector<MapSpan>& spans, int width) {
  int x = 0;
  for (const auto& s : spans) {
    QCOMPARE(s.x0, x);
    QVERIFY(s.x1 > s.x0);
    x = s.x1;
  }
  QCOMPARE(x, width);
}

}  // namespace

class RegionGeometryTest : public QObject {
  Q_OBJECT
 private slots:
  void knownBoundsHolesAndOverlap() {
    // Region [1000, 2000), 100 px: 10 octets a pixel.
    std::vector<PlacedRange> ranges{range(1000, 1200, 1, 0), range(1300, 1500, 2, 2),
                                    range(1450, 1520, 3, 2, /*overlap=*/true)};
    RegionGeometryInput in;
    in.base = 1000;
    in.length = 1000;
    in.ranges = ranges;
    const auto dom = region_domain(in);
    QCOMPARE(dom.first, std::uint64_t(1000));
    QCOMPARE(dom.second, std::uint64_t(2000));
    const auto spans = layout_region(in, dom.first, dom.second, 100);
    const std::vector<MapSpan> expected{{0, 20, SpanKind::placed, 0},
                                        {20, 30, SpanKind::hole, -1},
                                        {30, 45, SpanKind::placed, 2},
                                        {45, 52, SpanKind::overlap, 2},
                                        {52, 100, SpanKind::hole, -1}};
    QVERIFY2(spans == expected, qPrintable(dump(spans)));
  }

  // Octets placed again are drawn as core classifies them: reuse after delivery ("rewritten",
  // normal), the same content again (overlap), conflict; conflict wins over the others.
  void rewrittenOverlapAndConflictAreDistinct() {
    PlacedRange reuse = range(10, 20, 2, 0, /*overlap=*/true);
    reuse.reused = true;
    PlacedRange reuse_conflict = range(30, 40, 4, 0, true, /*conflict=*/true);
    reuse_conflict.reused = true;
    std::vector<PlacedRange> ranges{range(0, 50, 1, 0), reuse, range(20, 30, 3, 0, true),
                                    reuse_conflict};
    RegionGeometryInput in;
    in.ranges = ranges;
    const auto spans = layout_region(in, 0, 50, 5);
    const std::vector<MapSpan> expected{{0, 1, SpanKind::placed, 0},
                                        {1, 2, SpanKind::rewritten, 0},
                                        {2, 3, SpanKind::overlap, 0},
                                        {3, 4, SpanKind::conflict, 0},
                                        {4, 5, SpanKind::placed, 0}};
    QVERIFY2(spans == expected, qPrintable(dump(spans)));
    QVERIFY(spanColor(SpanKind::rewritten) != spanColor(SpanKind::conflict));
    QVERIFY(spanColor(SpanKind::rewritten) != spanColor(SpanKind::overlap));
  }

  void violationOutsideKnownBounds() {
    // Bounds [0, 100); a range reaching 120: the bar spans [0, 120), the tail is a violation
    // even when the range carries no flag (geometry checks the bounds itself).
    std::vector<PlacedRange> ranges{range(90, 120, 7, 0)};
    RegionGeometryInput in;
    in.base = 0;
    in.length = 100;
    in.ranges = ranges;
    const auto dom = region_domain(in);
    QCOMPARE(dom.second, std::uint64_t(120));
    const auto spans = layout_region(in, dom.first, dom.second, 12);
    const std::vector<MapSpan> expected{
        {0, 9, SpanKind::hole, -1}, {9, 10, SpanKind::placed, 0}, {10, 12, SpanKind::violation, 0}};
    QVERIFY2(spans == expected, qPrintable(dump(spans)));
  }

  void flaggedViolationAndConflictPriority() {
    std::vector<PlacedRange> ranges{range(0, 50, 1, 0), range(20, 30, 2, 0, true, true),
                                    range(40, 50, 3, 0, true, false, true)};
    RegionGeometryInput in;
    in.ranges = ranges;  // bounds unknown: observed extent [0, 50)
    const auto spans = layout_region(in, 0, 50, 5);
    const std::vector<MapSpan> expected{{0, 2, SpanKind::placed, 0},
                                        {2, 3, SpanKind::conflict, 0},
                                        {3, 4, SpanKind::placed, 0},
                                        {4, 5, SpanKind::violation, 0}};
    QVERIFY2(spans == expected, qPrintable(dump(spans)));
  }

  void partialColumnsShowHoles() {
    // A 1-octet hole inside a 10-octet column still shows (partial), at any zoom.
    std::vector<PlacedRange> ranges{range(0, 15, 1, 3), range(16, 100, 2, 3)};
    RegionGeometryInput in;
    in.ranges = ranges;
    const auto spans = layout_region(in, 0, 100, 10);
    const std::vector<MapSpan> expected{
        {0, 1, SpanKind::placed, 3}, {1, 2, SpanKind::partial, 3}, {2, 10, SpanKind::placed, 3}};
    QVERIFY2(spans == expected, qPrintable(dump(spans)));
    // Far zoomed out: region of 2^40 octets with a 1-octet hole, 1000 px.
    std::vector<PlacedRange> big{range(0, 1ull << 39, 1, 0),
                                 range((1ull << 39) + 1, 1ull << 40, 2, 0)};
    in.ranges = big;
    const auto s2 = layout_region(in, 0, 1ull << 40, 1000);
    checkTiling(s2, 1000);
    QCOMPARE(int(s2.size()), 3);
    QCOMPARE(s2[1].kind, SpanKind::partial);
    QCOMPARE(s2[1].x0, 500);
  }

  void zoomedInBeyondOneOctetPerPixel() {
    std::vector<PlacedRange> ranges{range(1, 2, 1, 0)};
    RegionGeometryInput in;
    in.ranges = ranges;
    const auto spans = layout_region(in, 0, 4, 8);  // 2 px per octet
    const std::vector<MapSpan> expected{
        {0, 2, SpanKind::hole, -1}, {2, 4, SpanKind::placed, 0}, {4, 8, SpanKind::hole, -1}};
    QVERIFY2(spans == expected, qPrintable(dump(spans)));
    QCOMPARE(column_octets(0, 4, 8, 3), std::make_pair(std::uint64_t(1), std::uint64_t(2)));
  }

  void viewWindowClipsAndPans() {
    std::vector<PlacedRange> ranges{range(0, 100, 1, 0), range(200, 300, 2, 2)};
    RegionGeometryInput in;
    in.ranges = ranges;
    const auto spans = layout_region(in, 50, 250, 4);  // 50 octets a pixel
    const std::vector<MapSpan> expected{
        {0, 1, SpanKind::placed, 0}, {1, 3, SpanKind::hole, -1}, {3, 4, SpanKind::placed, 2}};
    QVERIFY2(spans == expected, qPrintable(dump(spans)));
    QCOMPARE(octet_to_x(50, 250, 4, 150), 2.0);
  }

  void dominantOpcodeWins() {
    std::vector<PlacedRange> ranges{range(0, 3, 1, 0), range(3, 10, 2, 2)};
    RegionGeometryInput in;
    in.ranges = ranges;
    const auto spans = layout_region(in, 0, 10, 1);
    QCOMPARE(int(spans.size()), 1);
    QCOMPARE(spans[0].opcode, 2);
    QCOMPARE(spans[0].kind, SpanKind::placed);
  }

  void extentsOverrideCappedRanges() {
    // The buffer kept only the first range; its extents know the rest was placed.
    std::vector<PlacedRange> ranges{range(0, 10, 1, 0)};
    std::map<std::uint64_t, std::uint64_t> extents{{0, 100}};
    RegionGeometryInput in;
    in.ranges = ranges;
    in.extents = &extents;
    const auto spans = layout_region(in, 0, 100, 10);
    QCOMPARE(int(spans.size()), 2);
    QCOMPARE(spans[1].kind, SpanKind::placed);
    QCOMPARE(spans[1].opcode, -1);  // placed, opcode not known
  }

  void coalesceAndHitTest() {
    std::vector<PlacedRange> ranges{range(50, 60, 3, 0), range(0, 10, 1, 0), range(5, 20, 2, 0)};
    const auto ext = coalesce(ranges);
    QCOMPARE(int(ext.size()), 2);
    QCOMPARE(ext.at(0), std::uint64_t(20));
    QCOMPARE(ext.at(50), std::uint64_t(60));
    const auto hits = ranges_at(ranges, 8, 9);
    QCOMPARE(int(hits.size()), 2);
    QCOMPARE(hits[0], std::size_t(1));
    QCOMPARE(hits[1], std::size_t(2));
  }

  void lastWriterAttribution() {
    std::vector<PlacedRange> ranges{range(0, 100, 1, 0), range(20, 30, 2, 0), range(25, 40, 3, 0)};
    const auto w = BytesModel::lastWriters(ranges);
    // [0,20) f1, [20,25) f2, [25,40) f3, [40,100) f1
    QCOMPARE(int(w.size()), 4);
    QCOMPARE(w.at(0).frame, std::uint64_t(1));
    QCOMPARE(w.at(0).end, std::uint64_t(20));
    QCOMPARE(w.at(20).frame, std::uint64_t(2));
    QCOMPARE(w.at(25).frame, std::uint64_t(3));
    QCOMPARE(w.at(25).end, std::uint64_t(40));
    QCOMPARE(w.at(40).frame, std::uint64_t(1));
    QCOMPARE(w.at(40).end, std::uint64_t(100));
  }

  void hundredThousandRangesStaySmooth() {
    std::vector<PlacedRange> ranges;
    ranges.reserve(100000);
    for (std::uint64_t i = 0; i < 100000; ++i)
      ranges.push_back(range(i * 16, i * 16 + 10, i + 1, std::uint8_t(i % 3 == 0 ? 2 : 0)));
    const auto ext = coalesce(ranges);
    RegionGeometryInput in;
    in.ranges = ranges;
    in.extents = &ext;
    QElapsedTimer t;
    t.start();
    const auto spans = layout_region(in, 0, 1600000, 1500);
    const auto ms = t.elapsed();
    checkTiling(spans, 1500);
    for (const auto& s : spans)
      QCOMPARE(s.kind, SpanKind::partial);  // 6-octet holes everywhere
    QVERIFY2(ms < 200, qPrintable(QStringLiteral("layout took %1 ms").arg(ms)));
    // Zoomed in on 160 octets: ranges and holes resolve.
    const auto zoomed = layout_region(in, 1600, 1760, 160);
    QCOMPARE(int(zoomed.size()), 20);
    QCOMPARE(zoomed[0].kind, SpanKind::placed);
    QCOMPARE(zoomed[1].kind, SpanKind::hole);
  }

  void realCaptureRegions() {
    QStringList files;
    const QString shared = qEnvironmentVariable("DDPSCOPE_SHARED_CAPTURES");
    if (!shared.isEmpty()) files << shared + QStringLiteral("/softuiwarp-rping.pcap");
    const QDir samples(qEnvironmentVariable("DDPSCOPE_SAMPLES_DIR"));
    for (const QString& f :
         samples.entryList({QStringLiteral("*.pcap"), QStringLiteral("*.pcapng")}))
      files << samples.filePath(f);
    int checked = 0;
    for (const QString& f : files) {
      if (!QFileInfo::exists(f)) continue;
      SnapshotPtr snap = analyze_capture(f.toStdString());
      QVERIFY2(snap->error.empty(), snap->error.c_str());
      for (const RegionInfo& r : snap->regions) {
        const auto in = geometry_input(*r.buffer);
        const auto [lo, hi] = region_domain(in);
        if (hi <= lo) continue;
        const auto spans = layout_region(in, lo, hi, 640);
        checkTiling(spans, 640);
        bool any_placed = false, any_issue = false;
        for (const auto& s : spans) {
          const bool issue = s.kind == SpanKind::overlap || s.kind == SpanKind::conflict ||
                             s.kind == SpanKind::violation;
          any_issue |= issue;
          any_placed |= s.kind == SpanKind::placed || s.kind == SpanKind::partial;
        }
        // Placed octets show (unless every column carries an issue); a region with nothing
        // placed shows only holes and the refused (issue) ranges.
        if (r.buffer->bytes_placed() > 0)
          QVERIFY(any_placed || any_issue);
        else
          QVERIFY(!any_placed);
        if (r.violations || r.overlaps || r.conflicts) QVERIFY2(any_issue, qPrintable(f));
        ++checked;
      }
    }
    if (!checked) QSKIP("no capture with placed regions available");
  }
};

QTEST_APPLESS_MAIN(RegionGeometryTest)
#include "region_geometry_test.moc"
