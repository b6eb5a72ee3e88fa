// SPDX-License-Identifier: GPL-2.0-or-later
// What the views draw, checked on the rendered widgets (offscreen grabs and the real table
// view), not only on their geometry: the hex view's 16 octets and ASCII in one row at the
// default width, a 64-octet violation at least 4 px wide on a 16 MiB region, the placement
// trace's violating bar in the violation colour at its frame, and the same finding counts as
// the CLI for every bundled sample.
#include <QFontMetrics>
#include <QHeaderView>
#include <QImage>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTableView>
#include <QTemporaryDir>
#include <QtTest>

#include "bytes_model.h"
#include "bytes_page.h"
#include "findings_model.h"
#include "gui_test_util.h"
#include "labels.h"
#include "main_window.h"
#include "placement_trace_widget.h"
#include "region_map_widget.h"

using namespace ddpscope;
using namespace ddpscope::gui;

namespace {
QString sample(const char* name) {
  for (const QString& f : test::sampleCaptures())
    if (QFileInfo(f).fileName() == QLatin1String(name)) return f;
  return {};
}

// Longest run of pixels of colour `c` on row `y` of `img`, and where it starts.
int longestRun(const QImage& img, int y, QColor c, int* start = nullptr) {
  int best = 0, run = 0;
  for (int x = 0; x < img.width(); ++x) {
    if (img.pixelColor(x, y).rgb() == c.rgb()) {
      if (++run > best) {
        best = run;
        if (start) *start = x - run + 1;
      }
    } else {
      run = 0;
    }
  }
  return best;
}
}  // namespace

class ViewsTest : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;

 private slots:
  void initTestCase() {
    QVERIFY(tmp_.isValid());
    test::useTemporarySettings(tmp_);
  }

  // The bytes pane at the window's default size shows a full row: the offset, 16 octets in
  // hex and their 16 ASCII characters, none clipped or elided.
  void hexViewShowsSixteenOctetsAndAsciiInARow() {
    const QString file = sample("siw-rping-crc.pcap");
    if (file.isEmpty()) QSKIP("samples/siw/siw-rping-crc.pcap missing");
    MainWindow w;
    w.resize(1280, 800);  // what ddpscope-gui opens with
    QVERIFY(w.loadSynchronously(file));
    w.show();
    w.showView(MainWindow::ViewBytes);
    BytesPage* page = w.bytesPage();
    BytesModel* m = page->model();
    QTableView* v = page->view();
    // A region and a row with 16 placed octets.
    int row = -1;
    for (int r = 0; r < int(w.snapshot()->regions.size()) && row < 0; ++r) {
      page->setRegion(w.snapshot(), r);
      for (int i = 0; i < m->rowCount() && row < 0; ++i) {
        bool full = true;
        for (int c = 0; c < 16 && full; ++c)
          full = m->index(i, BytesModel::ColOctet0 + c).data(BytesModel::PlacedRole).toBool();
        if (full) row = i;
      }
    }
    QVERIFY2(row >= 0, "no row of 16 placed octets in any region");
    v->scrollTo(m->index(row, 0), QAbstractItemView::PositionAtTop);
    QApplication::processEvents();
    const QRect vp = v->viewport()->rect();
    const QFontMetrics fm(v->font());
    const std::uint64_t to = m->index(row, 0).data(BytesModel::OffsetRole).toULongLong();
    std::vector<bool> known;
    const Bytes bytes = m->buffer()->read(to, 16, &known);
    QString expect_ascii;
    for (int c = 0; c < 16; ++c) {
      const QModelIndex idx = m->index(row, BytesModel::ColOctet0 + c);
      const QString text = idx.data().toString();
      QCOMPARE(text, QStringLiteral("%1").arg(bytes[std::size_t(c)], 2, 16, QLatin1Char('0')));
      const QRect r = v->visualRect(idx);
      QVERIFY2(vp.contains(r), qPrintable(QStringLiteral("octet %1 at %2..%3 outside 0..%4")
                                              .arg(c)
                                              .arg(r.left())
                                              .arg(r.right())
                                              .arg(vp.right())));
      QVERIFY(r.width() >= fm.horizontalAdvance(text));
      const char ch = char(bytes[std::size_t(c)]);
      expect_ascii += ch >= 0x20 && ch < 0x7f ? QLatin1Char(ch) : QLatin1Char('.');
    }
    const QModelIndex ascii = m->index(row, BytesModel::ColAscii);
    QCOMPARE(ascii.data().toString(), expect_ascii);
    const QRect ar = v->visualRect(ascii);
    QVERIFY(vp.contains(ar));
    QVERIFY2(ar.width() >= fm.horizontalAdvance(expect_ascii),
             qPrintable(QStringLiteral("ASCII column %1 px for %2 px of text")
                            .arg(ar.width())
                            .arg(fm.horizontalAdvance(expect_ascii))));
    QVERIFY(vp.contains(v->visualRect(m->index(row, BytesModel::ColOffset))));
    // Selecting octets names the frames that placed them; Go to TO finds the row.
    v->selectionModel()->select(QItemSelection(m->index(row, BytesModel::ColOctet0),
                                               m->index(row, BytesModel::ColOctet0 + 15)),
                                QItemSelectionModel::ClearAndSelect);
    QVERIFY2(page->selectionText().contains(QStringLiteral("placed by frame")),
             qPrintable(page->selectionText()));
    const auto frames = m->framesIn(to, to + 16);
    QVERIFY(!frames.empty());
    QVERIFY(page->selectionText().contains(QString::number(frames.front())));
    QVERIFY(page->goToTo(to + 5));
    QCOMPARE(v->currentIndex().row(), row);
    QCOMPARE(v->currentIndex().column(), BytesModel::ColOctet0 + 5);
  }

  // Holes read "..", and octets are not shifted when an extent starts mid-row.
  void hexViewAlignsRowsAndShowsHoles() {
    ShadowMemory mem;
    ShadowBuffer* b = mem.get_or_create(RegionKey{{}, 0x42}, 4);
    QVERIFY(b);
    b->base = 0x1000;
    b->length = 0x100;
    b->bounds_enforced = true;
    const Bytes a(8, 0x41), c(4, 0x43);
    PlacedRange r1{0x1004, 0x100c, 3, 0};
    mem.place(*b, r1, ByteView(a.data(), a.size()));
    PlacedRange r2{0x1080, 0x1084, 9, 0};
    mem.place(*b, r2, ByteView(c.data(), c.size()));
    auto snap = std::make_shared<Snapshot>();
    snap->model = std::make_shared<const Model>();
    snap->regions.push_back(RegionInfo{b});
    BytesModel m;
    m.setRegion(snap, 0);
    QCOMPARE(m.origin(), quint64(0x1000));
    QCOMPARE(m.rowCount(), 3);  // [0x1000, 0x1010), hole, [0x1080, 0x1090)
    QCOMPARE(m.index(0, BytesModel::ColOffset).data().toString(), QStringLiteral("00000000"));
    QCOMPARE(m.index(0, BytesModel::ColOctet0 + 3).data().toString(), QStringLiteral(".."));
    QCOMPARE(m.index(0, BytesModel::ColOctet0 + 4).data().toString(), QStringLiteral("41"));
    QCOMPARE(m.index(0, BytesModel::ColOctet0 + 4).data(BytesModel::FrameRole).toULongLong(), 3u);
    QCOMPARE(m.index(0, BytesModel::ColAscii).data().toString(),
             QStringLiteral("    AAAAAAAA    "));
    QVERIFY(m.index(1, 0).data(BytesModel::HoleRole).toBool());
    QCOMPARE(m.index(1, BytesModel::ColOctet0).data().toString(), QStringLiteral(".."));
    QCOMPARE(m.index(2, BytesModel::ColOffset).data().toString(), QStringLiteral("00000080"));
    QCOMPARE(m.index(2, BytesModel::ColOctet0).data().toString(), QStringLiteral("43"));
    QCOMPARE(m.rowForTo(0x1082), 2);
    QCOMPARE(m.rowForTo(0x1040), 1);
    QCOMPARE(m.rowForFrame(9), 2);
  }

  // A 64-octet bounds violation on a 16 MiB region: at least 4 px of violation colour in the
  // rendered bar, with its marker above.
  void violationOnHugeRegionIsVisible() {
    ShadowMemory mem;
    ShadowBuffer* b = mem.get_or_create(RegionKey{{}, 0x1234}, 4);
    QVERIFY(b);
    const std::uint64_t base = 0x7f0000000000, len = 16u << 20;
    b->base = base;
    b->length = len;
    b->bounds_enforced = true;
    const Bytes chunk(4096, 0x5a);
    for (std::uint64_t i = 0; i < 64; ++i) {
      PlacedRange r{base + i * 0x40000, base + i * 0x40000 + 4096, 10 + i, 0};
      mem.place(*b, r, ByteView(chunk.data(), chunk.size()));
    }
    PlacedRange v{base + len, base + len + 64, 200, 0};
    v.violation = true;
    mem.place(*b, v, ByteView(chunk.data(), 64));
    auto snap = std::make_shared<Snapshot>();
    snap->model = std::make_shared<const Model>();
    snap->regions.push_back(RegionInfo{b, std::nullopt, -1, 0, 0, 1});
    RegionMapWidget map;
    map.resize(1000, 260);
    map.setRegion(snap, 0);
    map.show();
    const QImage img = map.grab().toImage();
    const QRect bar = map.barRect();
    const QColor red = spanColor(SpanKind::violation);
    int start = 0;
    const int run = longestRun(img, bar.top() + bar.height() / 4, red, &start);
    QVERIFY2(run >= 4, qPrintable(QStringLiteral("violation drawn %1 px wide").arg(run)));
    // At the end of the region (right edge), not elsewhere.
    QVERIFY(start > bar.left() + bar.width() * 9 / 10);
    // The marker: violation colour above the bar, over the violation.
    bool marker = false;
    for (int y = bar.top() - 9; y < bar.top(); ++y)
      for (int x = start - 6; x < start + run + 6; ++x)
        if (x >= 0 && x < img.width() && img.pixelColor(x, y).rgb() == red.rgb()) marker = true;
    QVERIFY(marker);
  }

  // siw-rping-crc: rping rewrites its buffers each round after delivery (core: reused, no
  // conflict, no finding): the region map draws that in the rewritten colour, never as
  // conflict, and the placement trace outlines those bars in the same colour.
  void reusedBufferIsRewrittenNotConflict() {
    const QString file = sample("siw-rping-crc.pcap");
    if (file.isEmpty()) QSKIP("samples/siw/siw-rping-crc.pcap missing");
    MainWindow w;
    w.resize(1280, 800);
    QVERIFY(w.loadSynchronously(file));
    w.show();
    const SnapshotPtr snap = w.snapshot();
    QVERIFY(snap->model->findings.empty());
    int region = -1;
    for (std::size_t r = 0; r < snap->regions.size() && region < 0; ++r)
      if (snap->regions[r].buffer->overwrites() > 0) region = int(r);
    QVERIFY2(region >= 0, "no reused region in siw-rping-crc");
    QCOMPARE(snap->regions[std::size_t(region)].conflicts, std::uint64_t(0));
    w.selectRegion(region);
    w.showView(MainWindow::ViewRegions);
    QApplication::processEvents();
    RegionMapWidget* map = w.regionMap();
    const QImage img = map->grab().toImage();
    const QRect bar = map->barRect();
    const QColor teal = spanColor(SpanKind::rewritten);
    const QColor conflict = spanColor(SpanKind::conflict);
    int rewritten = 0, conflicting = 0;
    for (int y = bar.top(); y <= bar.bottom() + 10; ++y)
      for (int x = bar.left(); x <= bar.right(); ++x) {
        rewritten += img.pixelColor(x, y).rgb() == teal.rgb();
        conflicting += img.pixelColor(x, y).rgb() == conflict.rgb();
      }
    QVERIFY2(rewritten > bar.width(), qPrintable(QString::number(rewritten)));
    QCOMPARE(conflicting, 0);
    // Placement trace: a reused range's bar outlined in the rewritten colour.
    w.showView(MainWindow::ViewPlacement);
    QApplication::processEvents();
    PlacementTraceWidget* t = w.placementTrace();
    const QImage trace = t->grab().toImage();
    const auto& ranges = snap->regions[std::size_t(region)].buffer->ranges();
    bool outlined = false;
    for (std::size_t i = 0; i < ranges.size() && !outlined; ++i) {
      if (!ranges[i].reused) continue;
      const QRect br = t->barRect(i);
      for (int x = br.left() - 2; x <= br.right() + 2 && !outlined; ++x)
        outlined |= trace.pixelColor(x, br.center().y()).rgb() == teal.rgb();
    }
    QVERIFY(outlined);
  }

  // fault-bounds: the violating segment's bar is in the violation colour at its frame.
  void placementTraceShowsViolationAtItsFrame() {
    const QString file = sample("fault-bounds.pcap");
    if (file.isEmpty()) QSKIP("samples/synthetic/fault-bounds.pcap missing");
    MainWindow w;
    w.resize(1280, 800);
    QVERIFY(w.loadSynchronously(file));
    w.show();
    SnapshotPtr snap = w.snapshot();
    int region = -1;
    std::size_t idx = 0;
    for (std::size_t r = 0; r < snap->regions.size() && region < 0; ++r) {
      const auto& ranges = snap->regions[r].buffer->ranges();
      for (std::size_t i = 0; i < ranges.size(); ++i)
        if (ranges[i].violation) {
          region = int(r);
          idx = i;
          break;
        }
    }
    QVERIFY2(region >= 0, "fault-bounds has no violating placement");
    const std::uint64_t frame = snap->regions[std::size_t(region)].buffer->ranges()[idx].frame;
    w.selectRegion(region);
    w.showView(MainWindow::ViewPlacement);
    QApplication::processEvents();
    PlacementTraceWidget* t = w.placementTrace();
    QCOMPARE(t->region(), region);
    const QImage img = t->grab().toImage();
    const QRect bar = t->barRect(idx);
    QVERIFY(!bar.isEmpty());
    const QColor red = spanColor(SpanKind::violation);
    QCOMPARE(img.pixelColor(bar.center()).rgb(), red.rgb());
    // At its frame: the bar's x is where the frame axis puts it, and other bars are not red.
    const auto& ranges = snap->regions[std::size_t(region)].buffer->ranges();
    for (std::size_t i = 0; i < ranges.size(); ++i) {
      if (ranges[i].violation) continue;
      const QRect other = t->barRect(i);
      if (other.isEmpty() || other.intersects(bar)) continue;
      QVERIFY(img.pixelColor(other.center()).rgb() != red.rgb());
      if (ranges[i].frame < frame) QVERIFY(other.center().x() < bar.center().x());
      if (ranges[i].frame > frame) QVERIFY(other.center().x() > bar.center().x());
    }
    // Clicking the bar focuses its frame everywhere.
    QSignalSpy clicked(t, &PlacementTraceWidget::rangeClicked);
    QTest::mouseClick(t, Qt::LeftButton, {}, bar.center());
    QCOMPARE(clicked.count(), 1);
    QCOMPARE(clicked.first().first().toULongLong(), quint64(frame));
    QCOMPARE(w.focusedFrame(), frame);
  }

  // Every bundled sample: the GUI lists as many findings as `ddpscope analyze --json`.
  void findingCountsMatchTheCli_data() {
    QTest::addColumn<QString>("file");
    for (const QString& f : test::sampleCaptures())
      QTest::newRow(qPrintable(QFileInfo(f).fileName())) << f;
  }
  void findingCountsMatchTheCli() {
    QFETCH(QString, file);
    const QString cli = qEnvironmentVariable("DDPSCOPE_CLI");
    if (cli.isEmpty()) QSKIP("DDPSCOPE_CLI not set");
    QProcess p;
    p.start(cli, {QStringLiteral("analyze"), QStringLiteral("--json"), QStringLiteral("-q"), file});
    QVERIFY(p.waitForFinished(120000));
    const QJsonDocument doc = QJsonDocument::fromJson(p.readAllStandardOutput());
    QVERIFY2(doc.isObject(), qPrintable(QString::fromUtf8(p.readAllStandardError())));
    const int cli_count = int(doc.object().value(QStringLiteral("findings")).toArray().size());
    MainWindow w;
    w.loadSynchronously(file);  // false for damaged captures: their findings still count
    if (w.findingsModel()->rowCount() != cli_count) {
      QStringList gui, cli_codes;
      for (const Finding& f : w.snapshot()->model->findings)
        gui << QStringLiteral("%1@%2")
                   .arg(QString::fromUtf8(f.code().data(), qsizetype(f.code().size())))
                   .arg(f.frame);
      for (const auto& v : doc.object().value(QStringLiteral("findings")).toArray())
        cli_codes << QStringLiteral("%1@%2")
                         .arg(v.toObject().value(QStringLiteral("code")).toString())
                         .arg(v.toObject().value(QStringLiteral("frame")).toInteger());
      qWarning("GUI: %s\nCLI: %s", qPrintable(gui.join(' ')), qPrintable(cli_codes.join(' ')));
    }
    QCOMPARE(w.findingsModel()->rowCount(), cli_count);
  }

  // No view renders blank: each view of each documented sample has drawn content (several
  // colours over a good share of its pixels), as the --screenshot images in docs/ show.
  void noViewRendersBlank_data() {
    QTest::addColumn<QString>("file");
    for (const char* n :
         {"fault-bounds.pcap", "fault-msn.pcap", "siw-rping-crc.pcap", "siw-nvmeof.pcap"})
      if (!sample(n).isEmpty()) QTest::newRow(n) << sample(n);
  }
  void noViewRendersBlank() {
    QFETCH(QString, file);
    MainWindow w;
    w.resize(1280, 800);
    QVERIFY(w.loadSynchronously(file));
    w.show();
    for (int v = 0; v < MainWindow::ViewCount; ++v) {
      // Region views of a capture without tagged placement show only "Select a region".
      const bool region_view = v == MainWindow::ViewPlacement || v == MainWindow::ViewBytes;
      if (region_view && w.snapshot()->regions.empty()) continue;
      w.showView(MainWindow::View(v));
      QApplication::processEvents();
      const QImage img = w.viewWidget(MainWindow::View(v))->grab().toImage();
      QVERIFY(!img.isNull());
      const QRgb bg = img.pixel(img.width() - 2, img.height() - 2);
      QSet<QRgb> colours;
      qint64 drawn = 0;
      for (int y = 0; y < img.height(); y += 2)
        for (int x = 0; x < img.width(); x += 2) {
          const QRgb c = img.pixel(x, y);
          colours.insert(c);
          if (c != bg) ++drawn;
        }
      const qint64 total = qint64(img.width() / 2) * (img.height() / 2);
      QVERIFY2(colours.size() >= 4 && drawn * 50 >= total,
               qPrintable(QStringLiteral("view %1: %2 colours, %3 of %4 pixels drawn")
                              .arg(v)
                              .arg(colours.size())
                              .arg(drawn)
                              .arg(total)));
    }
  }

  // With the regions file given to both, the counts still agree (and differ from without).
  void findingCountsMatchTheCliWithRegions() {
    const QString cli = qEnvironmentVariable("DDPSCOPE_CLI");
    if (cli.isEmpty()) QSKIP("DDPSCOPE_CLI not set");
    const QString file = sample("fault-bounds.pcap");
    const QString regions = QFileInfo(file).absolutePath() + "/fault-bounds.regions.json";
    QProcess p;
    p.start(cli, {"analyze", "--json", "-q", "--regions", regions, file});
    QVERIFY(p.waitForFinished(120000));
    const int cli_count = int(QJsonDocument::fromJson(p.readAllStandardOutput())
                                  .object()
                                  .value(QStringLiteral("findings"))
                                  .toArray()
                                  .size());
    MainWindow w;
    QVERIFY(w.loadSynchronously(file, regions));
    QCOMPARE(w.findingsModel()->rowCount(), cli_count);
    QVERIFY(w.loadSynchronously(file));
    QVERIFY(w.findingsModel()->rowCount() < cli_count);
  }
};

QTEST_MAIN(ViewsTest)
#include "views_test.moc"
