// SPDX-License-Identifier: GPL-2.0-or-later
// The MSN chart as drawn (offscreen grabs): on fault-msn the MSN the CLI reports missing has
// its own row with the gap marker at the frame where the next MSN arrived, and clicking it
// focuses that frame (and its finding); the duplicate MSN is ringed; a queue of one message
// is a readable row (bar and delivery mark); one of 20,000 messages is aggregated and still
// marks its one missing MSN, at any zoom.
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QRegularExpression>
#include <QTableView>
#include <QTemporaryDir>
#include <QtTest>

#include "findings_model.h"
#include "gui_test_util.h"
#include "labels.h"
#include "main_window.h"
#include "msn_chart_widget.h"

using namespace ddpscope;
using namespace ddpscope::gui;

namespace {
QString sample(const char* name) {
  for (const QString& f : test::sampleCaptures())
    if (QFileInfo(f).fileName() == QLatin1String(name)) return f;
  return {};
}

QJsonObject cliJson(const QStringList& args) {
  QProcess p;
  p.start(qEnvironmentVariable("DDPSCOPE_CLI"), args);
  if (!p.waitForFinished(120000)) return {};
  return QJsonDocument::fromJson(p.readAllStandardOutput()).object();
}

// `ddpscope synth` of `sends` Sends of 64 octets from the client; the ones listed in `skip`
// skip an MSN (the next Send goes out with MSN + 2).
QString synthSends(const QTemporaryDir& dir, const QString& name, int sends,
                   const QList<int>& skip) {
  QJsonArray ops;
  for (int i = 0; i < sends; ++i) {
    QJsonObject op{{"op", "send"},
                   {"from", "client"},
                   {"size", 64},
                   {"pattern", "counter"},
                   {"seed", i & 255}};
    if (skip.contains(i)) op.insert("fault", QJsonObject{{"msn", "skip"}});
    ops.append(op);
  }
  const QJsonObject conn{{"client", QJsonObject{{"ip", "10.0.0.1"}, {"port", 40001}}},
                         {"server", QJsonObject{{"ip", "10.0.0.2"}, {"port", 4791}}},
                         {"mpa", QJsonObject{{"revision", 2}, {"crc", true}}}};
  const QJsonObject spec{{"name", name},
                         {"description", "MSN chart test"},
                         {"connections", QJsonArray{conn}},
                         {"operations", ops}};
  const QString json = dir.filePath(name + ".json");
  const QString pcap = dir.filePath(name + ".pcap");
  QFile f(json);
  if (!f.open(QIODevice::WriteOnly)) return {};
  f.write(QJsonDocument(spec).toJson());
  f.close();
  QProcess p;
  p.start(qEnvironmentVariable("DDPSCOPE_CLI"), {"synth", json, "-o", pcap});
  if (!p.waitForFinished(120000) || p.exitCode() != 0) {
    qWarning("synth: %s", p.readAllStandardError().constData());
    return {};
  }
  return pcap;
}

int countColour(const QImage& img, const QRect& r, QColor c) {
  int n = 0;
  const QRect in = r.intersected(img.rect());
  for (int y = in.top(); y <= in.bottom(); ++y)
    for (int x = in.left(); x <= in.right(); ++x)
      n += img.pixelColor(x, y).rgb() == c.rgb();
  return n;
}

std::vector<int> missingRows(const MsnSeries& s) {
  std::vector<int> rows;
  for (std::size_t i = 0; i < s.rows.size(); ++i)
    if (s.rows[i].missing) rows.push_back(int(i));
  return rows;
}

// The gap marker drawn in the missing colour (its upper middle is solid).
bool markerDrawn(const QImage& img, const QRect& m) {
  if (m.isEmpty()) return false;
  return countColour(img, QRect(m.center().x() - 1, m.top() + 1, 3, m.height() / 3),
                     MsnChartWidget::missingColor()) > 0;
}
}  // namespace

class MsnChartTest : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;

 private slots:
  void initTestCase() {
    QVERIFY(tmp_.isValid());
    test::useTemporarySettings(tmp_);
  }

  // Rows in serial MSN order across the 2^32 wrap (RFC 5041 §5.1), a gap of one MSN (0) and
  // of three (3..5) as one row each, a duplicate as a second record in its MSN's row, and a
  // record older than the first one seen sorted before it.
  void rowsFollowSerialOrderGapsAndDuplicates() {
    auto model = std::make_shared<Model>();
    const std::uint32_t msns[] = {0xfffffffeu, 0xffffffffu, 1, 2, 2, 6, 0xfffffffdu};
    std::uint64_t frame = 10;
    for (std::uint32_t msn : msns) {
      MessageRecord r;
      r.opcode = std::uint8_t(wire::Opcode::send);
      r.msn = msn;
      r.first_frame = r.placed_frame = r.delivered_frame = frame++;
      r.complete = true;
      model->messages.push_back(r);
    }
    auto snap = std::make_shared<Snapshot>();
    snap->model = model;
    snap->build_index();
    QCOMPARE(snap->series.size(), std::size_t(1));
    const MsnSeries& s = snap->series[0];
    QStringList rows;
    for (const MsnRow& r : s.rows)
      rows << (r.missing ? QStringLiteral("missing %1+%2@%3").arg(r.msn).arg(r.count).arg(r.frame)
                         : QStringLiteral("%1x%2").arg(r.msn).arg(r.copies()));
    QCOMPARE(rows.join(' '), QStringLiteral("4294967293x1 4294967294x1 4294967295x1 missing 0+1@12 "
                                            "1x1 2x2 missing 3+3@15 6x1"));
    QCOMPARE(s.missing, std::uint64_t(4));
    QCOMPARE(s.duplicates, std::uint64_t(1));
    QCOMPARE(s.first_frame, std::uint64_t(10));
    QCOMPARE(s.last_frame, std::uint64_t(16));
    // Drawn: both gap rows marked.
    MsnChartWidget chart;
    chart.resize(800, 400);
    chart.setSeries(snap, 0);
    chart.show();
    const QImage img = chart.grab().toImage();
    QVERIFY(markerDrawn(img, chart.missingMarkerRect(3)));
    QVERIFY(markerDrawn(img, chart.missingMarkerRect(6)));
    QVERIFY(chart.missingMarkerRect(2).isEmpty());
  }

  // Clicking a bar emits its message's first frame; Shift+wheel zooms frames only, Ctrl+wheel
  // rows only, plain wheel both; Up/Down pan rows; Home resets.
  void clickWheelAndKeys() {
    if (qEnvironmentVariableIsEmpty("DDPSCOPE_CLI")) QSKIP("DDPSCOPE_CLI not set");
    const QString pcap = synthSends(tmp_, "some-sends", 200, {50});
    QVERIFY(!pcap.isEmpty());
    const SnapshotPtr snap = analyze_capture(pcap.toStdString());
    MsnChartWidget chart;
    chart.resize(900, 500);
    chart.setSeries(snap, 0);
    chart.show();
    const auto full_f = chart.frameView(), full_r = chart.rowView();
    auto wheel = [&](Qt::KeyboardModifiers mods) {
      const QPoint at = chart.plotRect().center();
      QWheelEvent ev(at, chart.mapToGlobal(at), QPoint(), QPoint(0, 120), Qt::NoButton, mods,
                     Qt::NoScrollPhase, false);
      QApplication::sendEvent(&chart, &ev);
    };
    wheel(Qt::ShiftModifier);
    QVERIFY(chart.frameView().second - chart.frameView().first < full_f.second - full_f.first - 1);
    QCOMPARE(chart.rowView(), full_r);
    QTest::keyClick(&chart, Qt::Key_Home);
    wheel(Qt::ControlModifier);
    QCOMPARE(chart.frameView(), full_f);
    QVERIFY(chart.rowView().second - chart.rowView().first < full_r.second - full_r.first - 1);
    const auto zoomed = chart.rowView();
    QTest::keyClick(&chart, Qt::Key_Down);
    QVERIFY(chart.rowView().first > zoomed.first);
    QTest::keyClick(&chart, Qt::Key_Home);
    QCOMPARE(chart.rowView(), full_r);
    // Zoom in until rows are drawn one by one, then click the first message's bar.
    for (int i = 0; i < 10 && chart.aggregated(); ++i)
      chart.zoom(2.0, 0.0);
    QVERIFY(!chart.aggregated());
    const MsnSeries& s = snap->series[0];
    const MessageRecord& first = snap->model->messages[s.by_msn[s.rows[0].begin]];
    const QRect row = chart.rowRect(0);
    QVERIFY(!row.isEmpty());
    const auto [xb, xe] = chart.frameView();
    const int x = chart.plotRect().left() +
                  int((double(first.first_frame) - xb) / (xe - xb) * chart.plotRect().width()) + 2;
    QSignalSpy clicked(&chart, &MsnChartWidget::messageClicked);
    QTest::mouseClick(&chart, Qt::LeftButton, {}, QPoint(x, row.center().y()));
    QCOMPARE(clicked.count(), 1);
    QCOMPARE(clicked.first().first().toULongLong(), quint64(first.first_frame));
    QCOMPARE(chart.highlightFrame(), first.first_frame);
  }

  void missingMsnOfFaultMsnHasItsMarker() {
    const QString file = sample("fault-msn.pcap");
    if (file.isEmpty()) QSKIP("samples/synthetic/fault-msn.pcap missing");
    if (qEnvironmentVariableIsEmpty("DDPSCOPE_CLI")) QSKIP("DDPSCOPE_CLI not set");
    // Which MSN is missing, as the CLI says: "MSN 3 on QN 0, expected 2" -> MSN 2.
    const QJsonObject rep = cliJson({"analyze", "--json", "-q", file});
    QJsonObject gap;
    for (const QJsonValue& v : rep.value("findings").toArray())
      if (v.toObject().value("code").toString() == "ddp.untagged.msn-gap") gap = v.toObject();
    QVERIFY2(!gap.isEmpty(), "the CLI reports no msn-gap on fault-msn");
    const auto m = QRegularExpression(R"(MSN (\d+) on QN (\d+), expected (\d+))")
                       .match(gap.value("message").toString());
    QVERIFY2(m.hasMatch(), qPrintable(gap.value("message").toString()));
    const std::uint32_t got = m.captured(1).toUInt(), qn = m.captured(2).toUInt(),
                        expected = m.captured(3).toUInt();
    const std::uint64_t frame = std::uint64_t(gap.value("frame").toInteger());
    const int direction = gap.value("direction").toString() == "client-to-server" ? 0 : 1;

    MainWindow w;
    w.resize(1280, 800);
    QVERIFY(w.loadSynchronously(file));
    w.show();
    w.focusFrame(frame, std::uint32_t(gap.value("stream").toInteger()), direction);
    w.showView(MainWindow::ViewMsn);
    QApplication::processEvents();
    MsnChartWidget* chart = w.msnChart();
    const MsnSeries* s = chart->currentSeries();
    QVERIFY(s);
    QCOMPARE(s->qn, qn);
    QCOMPARE(s->direction, direction);
    const std::vector<int> rows = missingRows(*s);
    QCOMPARE(rows.size(), std::size_t(1));
    const MsnRow& row = s->rows[std::size_t(rows.front())];
    QCOMPARE(row.msn, expected);
    QCOMPARE(row.count, got - expected);
    QCOMPARE(row.frame, frame);
    QCOMPARE(s->missing, std::uint64_t(got - expected));
    // Drawn: the marker in the missing colour on the row, at the gap's frame; no other row
    // has one.
    const QImage img = chart->grab().toImage();
    const QRect marker = chart->missingMarkerRect(rows.front());
    QVERIFY(!marker.isEmpty());
    QVERIFY(chart->rowRect(rows.front()).contains(marker.center()));
    QVERIFY2(markerDrawn(img, marker), "no gap marker drawn");
    for (int r = 0; r < int(s->rows.size()); ++r)
      if (!s->rows[std::size_t(r)].missing) QVERIFY(chart->missingMarkerRect(r).isEmpty());
    // Rows before and after it are the MSNs around the gap.
    QVERIFY(rows.front() > 0 && rows.front() + 1 < int(s->rows.size()));
    QCOMPARE(s->rows[std::size_t(rows.front()) - 1].msn + 1, expected);
    QCOMPARE(s->rows[std::size_t(rows.front()) + 1].msn, got);
    // Clicking the marker focuses the gap's frame, and its finding in the table.
    w.focusFrame(1);
    QTest::mouseClick(chart, Qt::LeftButton, {}, marker.center());
    QCOMPARE(w.focusedFrame(), frame);
    QCOMPARE(w.findingsView()->currentIndex().data(FindingsModel::FrameRole).toULongLong(),
             quint64(frame));
  }

  void duplicateMsnIsMarked() {
    const QString file = sample("fault-msn.pcap");
    if (file.isEmpty()) QSKIP("samples/synthetic/fault-msn.pcap missing");
    MainWindow w;
    w.resize(1280, 800);
    QVERIFY(w.loadSynchronously(file));
    w.show();
    const Model& m = *w.snapshot()->model;
    const Finding* dup = nullptr;
    for (const Finding& f : m.findings)
      if (f.id == FindingId::ddp_untagged_msn_duplicate) dup = &f;
    QVERIFY(dup);
    w.focusFrame(dup->frame, dup->stream, dup->direction);
    w.showView(MainWindow::ViewMsn);
    QApplication::processEvents();
    MsnChartWidget* chart = w.msnChart();
    const MsnSeries* s = chart->currentSeries();
    QVERIFY(s);
    bool listed = false;
    for (const auto& [frame, is_dup] : chart->markers())
      listed |= frame == dup->frame && is_dup;
    QVERIFY(listed);
    // The duplicate is a second record in its MSN's row (ringed), or, when core keeps no
    // record of it, a dashed line at its frame: either way in the duplicate colour there.
    const QImage img = chart->grab().toImage();
    const QRect pr = chart->plotRect();
    int dup_row = -1;
    for (std::size_t r = 0; r < s->rows.size(); ++r)
      for (std::uint32_t k = s->rows[r].begin + 1; k < s->rows[r].end; ++k)
        if (m.messages[s->by_msn[k]].first_frame == dup->frame) dup_row = int(r);
    const auto [xb, xe] = chart->frameView();
    const int x = pr.left() + int((double(dup->frame) - xb) / (xe - xb) * pr.width());
    const QRect around = dup_row >= 0 ? chart->rowRect(dup_row).adjusted(0, -8, 0, 8)
                                      : QRect(pr.left(), pr.top(), pr.width(), pr.height());
    QVERIFY2(countColour(img, QRect(x - 10, around.top(), 20, around.height()),
                         MsnChartWidget::duplicateColor()) > 0,
             "no duplicate mark at the duplicate's frame");
    QVERIFY(s->duplicates > 0 || dup_row < 0);
  }

  void oneMessageQueueIsAReadableRow() {
    if (qEnvironmentVariableIsEmpty("DDPSCOPE_CLI")) QSKIP("DDPSCOPE_CLI not set");
    const QString pcap = synthSends(tmp_, "one-send", 1, {});
    QVERIFY(!pcap.isEmpty());
    const SnapshotPtr snap = analyze_capture(pcap.toStdString());
    QCOMPARE(snap->series.size(), std::size_t(1));
    MsnChartWidget chart;
    chart.resize(900, 420);
    chart.setSeries(snap, 0);
    chart.show();
    QVERIFY(!chart.aggregated());
    const QRect row = chart.rowRect(0);
    QVERIFY(row.height() >= 12 && row.height() <= 30);
    const QImage img = chart.grab().toImage();
    const MessageRecord& msg = snap->model->messages[snap->series[0].messages.front()];
    QVERIFY(msg.delivered_frame != 0);
    // The placement bar in the opcode's colour (a few pixels wide at least), the delivery mark.
    QVERIFY(countColour(img, row, opcodeColor(msg.opcode)) >= 3 * 4);
    QVERIFY(countColour(img, row, MsnChartWidget::deliveredColor()) > 0);
    // Nothing drawn in the missing colour: no gap.
    QCOMPARE(countColour(img, chart.plotRect(), MsnChartWidget::missingColor()), 0);
  }

  void denseQueueIsAggregatedAndKeepsItsGap() {
    if (qEnvironmentVariableIsEmpty("DDPSCOPE_CLI")) QSKIP("DDPSCOPE_CLI not set");
    const int n = 20000, skip = 12345;
    const QString pcap = synthSends(tmp_, "many-sends", n, {skip});
    QVERIFY(!pcap.isEmpty());
    const SnapshotPtr snap = analyze_capture(pcap.toStdString());
    QCOMPARE(snap->series.size(), std::size_t(1));
    const MsnSeries& s = snap->series[0];
    QCOMPARE(s.messages.size(), std::size_t(n));
    QCOMPARE(s.missing, std::uint64_t(1));
    const std::vector<int> rows = missingRows(s);
    QCOMPARE(rows.size(), std::size_t(1));
    QCOMPARE(rows.front(), skip);  // after MSNs 1..skip (rows 0..skip-1)
    MsnChartWidget chart;
    chart.resize(900, 420);
    chart.setSeries(snap, 0);
    chart.show();
    QVERIFY(chart.aggregated());
    QImage img = chart.grab().toImage();
    // Bars drawn (aggregated coverage in the queue's colour) over much of the diagonal.
    const QColor bar = opcodeColor(snap->model->messages[s.messages.front()].opcode);
    QVERIFY(countColour(img, chart.plotRect(), bar) > chart.plotRect().height());
    // The one missing MSN, at ~1/8000 of the height, still has its band and marker.
    QVERIFY(chart.rowRect(rows.front()).height() >= 2);
    QVERIFY2(markerDrawn(img, chart.missingMarkerRect(rows.front())), "gap marker lost");
    // Zoomed in until rows are drawn one by one, the gap is still marked in view.
    for (int i = 0; i < 40 && chart.aggregated(); ++i) {
      chart.zoom(2.0);
      chart.setHighlightFrame(s.rows[std::size_t(rows.front())].frame);
    }
    QVERIFY(!chart.aggregated());
    img = chart.grab().toImage();
    QVERIFY2(markerDrawn(img, chart.missingMarkerRect(rows.front())), "gap marker lost zoomed in");
  }
};

QTEST_MAIN(MsnChartTest)
#include "msn_chart_test.moc"
