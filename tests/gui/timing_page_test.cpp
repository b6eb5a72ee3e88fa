// SPDX-License-Identifier: GPL-2.0-or-later
// The Timing view against `ddpscope analyze --timing --json` on real captures: every histogram
// bin holds the CLI's count and is drawn at its height, the slowest operation's bar is drawn in
// the accent colour and heads the slowest table, and clicking it (bar or row) selects its frame
// in the other views. Also what issue 42 asked of the other views: messages named by their ULP
// command (NVMe-oF and iSER samples) in the Streams tree and the MSN chart, and the Findings
// view's detail pane with a finding's whole text.
#include <QAbstractTextDocumentLayout>
#include <QComboBox>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTableView>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTextBrowser>
#include <QTreeView>
#include <QtTest>
#include <map>

#include "findings_model.h"
#include "findings_page.h"
#include "gui_test_util.h"
#include "labels.h"
#include "main_window.h"
#include "msn_chart_widget.h"
#include "msn_page.h"
#include "stream_tree_model.h"
#include "timing_page.h"

using namespace ddpscope;
using namespace ddpscope::gui;

namespace {
QString sample(const char* name) {
  for (const QString& f : test::sampleCaptures())
    if (QFileInfo(f).fileName() == QLatin1String(name)) return f;
  return {};
}

QJsonObject cliJson(const QString& file) {
  QProcess p;
  p.start(qEnvironmentVariable("DDPSCOPE_CLI"), {"analyze", "--timing", "--json", "-q", file});
  if (!p.waitForFinished(120000)) return {};
  return QJsonDocument::fromJson(p.readAllStandardOutput()).object();
}

// The colour drawn at a point of a widget's rendering.
QColor pixel(const QImage& img, QPointF at) {
  return img.pixelColor(at.toPoint());
}

// Every item under `parent` of the stream tree, fetching lazily loaded queues.
void collect(StreamTreeModel* m, const QModelIndex& parent, QList<QModelIndex>& out) {
  while (m->canFetchMore(parent))
    m->fetchMore(parent);
  for (int r = 0; r < m->rowCount(parent); ++r) {
    const QModelIndex i = m->index(r, 0, parent);
    out << i;
    collect(m, i, out);
  }
}
}  // namespace

class TimingPageTest : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;

 private slots:
  void initTestCase() {
    QVERIFY(tmp_.isValid());
    test::useTemporarySettings(tmp_);
    if (qEnvironmentVariableIsEmpty("DDPSCOPE_CLI")) QSKIP("DDPSCOPE_CLI not set");
  }

  // Each kind's panel: per bin, the CLI's count (summed over streams and directions), drawn as
  // a bar of that height in the bar colour; empty bins draw nothing.
  void histogramBinsAreTheModels_data() {
    QTest::addColumn<QString>("file");
    QTest::newRow("siw-nvmeof") << sample("siw-nvmeof.pcap");
    QTest::newRow("siw-nfs-rdma") << sample("siw-nfs-rdma.pcap");
    QTest::newRow("fault-iser") << sample("fault-iser.pcap");
  }
  void histogramBinsAreTheModels() {
    QFETCH(QString, file);
    QVERIFY(!file.isEmpty());
    const QJsonObject cli = cliJson(file);
    const QJsonArray ops = cli.value("timing").toObject().value("operations").toArray();
    QVERIFY(!ops.isEmpty());
    std::map<QString, std::map<std::size_t, std::uint64_t>> want;  // kind -> bucket -> count
    for (const auto& o : ops)
      for (const auto& b : o.toObject().value("histogram").toArray())
        want[o.toObject().value("kind").toString()][LatencyHistogram::bucket_of(
            std::uint64_t(b.toObject().value("lower_ns").toDouble()))] +=
            std::uint64_t(b.toObject().value("count").toDouble());

    MainWindow w;
    w.resize(1200, 900);
    QVERIFY(w.loadSynchronously(file));
    w.showView(MainWindow::ViewTiming);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    LatencyHistogramWidget* h = w.timingPage()->histograms();
    QCOMPARE(h->panels().size(), want.size());
    const QImage img = h->grab().toImage();
    for (int p = 0; p < int(h->panels().size()); ++p) {
      const auto& panel = h->panels()[std::size_t(p)];
      const QString kind = qstr(to_string(panel.kind));
      QVERIFY2(want.count(kind), qPrintable(kind));
      std::uint64_t max = 0;
      for (const auto& [b, n] : want[kind])
        max = std::max(max, n);
      for (std::size_t b = 0; b < LatencyHistogram::kBuckets; ++b) {
        const std::uint64_t n = want[kind].count(b) ? want[kind][b] : 0;
        QCOMPARE(panel.histogram.bucket(b), n);
        const QRectF bar = h->barRect(p, b);
        if (!n) {
          QVERIFY(bar.isEmpty());
          continue;
        }
        QVERIFY2(!bar.isEmpty(), qPrintable(QStringLiteral("%1 bucket %2").arg(kind).arg(b)));
        const double expect = std::max(2.0, h->plotRect(p).height() * double(n) / double(max));
        QVERIFY(std::abs(bar.height() - expect) < 1.0);
        const QColor c = pixel(img, bar.center());
        QVERIFY2(
            c == LatencyHistogramWidget::barColor() || c == LatencyHistogramWidget::slowestColor(),
            qPrintable(c.name()));
      }
    }
  }

  // siw-nvmeof's slowest operation (the CLI's: an NVMe command, frame 208 -> 229): its bar in
  // the accent colour, the first row of the table; clicking the bar selects frame 208 in the
  // MSN chart, the Streams tree (its command message) and the table; so does the row.
  void slowestOperationIsDrawnListedAndSelects() {
    const QString file = sample("siw-nvmeof.pcap");
    QVERIFY(!file.isEmpty());
    const QJsonArray ops = cliJson(file).value("timing").toObject().value("operations").toArray();
    QString kind;
    double ns = 0, req = 0, done = 0;
    for (const auto& o : ops)
      for (const auto& s : o.toObject().value("slowest").toArray())
        if (s.toObject().value("ns").toDouble() > ns) {
          ns = s.toObject().value("ns").toDouble();
          req = s.toObject().value("request_frame").toDouble();
          done = s.toObject().value("completion_frame").toDouble();
          kind = o.toObject().value("kind").toString();
        }
    QVERIFY(req > 0);

    MainWindow w;
    w.resize(1200, 900);
    QVERIFY(w.loadSynchronously(file));
    w.showView(MainWindow::ViewTiming);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    TimingPage* page = w.timingPage();
    QTableWidget* table = page->slowestTable();
    QVERIFY(table->rowCount() > 0);
    QCOMPARE(table->item(0, TimingPage::ColKind)->text(), kind);
    QCOMPARE(table->item(0, TimingPage::ColRequest)->text().toULongLong(), quint64(req));
    QCOMPARE(table->item(0, TimingPage::ColCompletion)->text().toULongLong(), quint64(done));
    QCOMPARE(table->item(0, TimingPage::ColLatency)->text(), latencyText(std::uint64_t(ns)));

    LatencyHistogramWidget* h = page->histograms();
    int panel = -1;
    for (int p = 0; p < int(h->panels().size()); ++p)
      if (qstr(to_string(h->panels()[std::size_t(p)].kind)) == kind) panel = p;
    QVERIFY(panel >= 0);
    const std::size_t bucket = LatencyHistogram::bucket_of(std::uint64_t(ns));
    const QRectF bar = h->barRect(panel, bucket);
    QVERIFY(!bar.isEmpty());
    const QImage img = h->grab().toImage();
    QCOMPARE(pixel(img, bar.center()), LatencyHistogramWidget::slowestColor());
    // No other bar of the panel is in the accent colour.
    for (std::size_t b = 0; b < LatencyHistogram::kBuckets; ++b) {
      const QRectF other = h->barRect(panel, b);
      if (b != bucket && !other.isEmpty())
        QVERIFY(pixel(img, other.center()) != LatencyHistogramWidget::slowestColor());
    }

    QTest::mouseClick(h, Qt::LeftButton, {}, bar.center().toPoint());
    QCOMPARE(w.focusedFrame(), quint64(req));
    QCOMPARE(w.msnChart()->highlightFrame(), quint64(req));
    const QModelIndex cur = w.streamsView()->currentIndex();
    QVERIFY(cur.isValid());
    QCOMPARE(cur.data(StreamTreeModel::KindRole).toInt(), int(StreamTreeModel::KindMessage));
    QCOMPARE(cur.data(StreamTreeModel::FrameRole).toULongLong(), quint64(req));
    QCOMPARE(table->currentRow(), 0);

    // Elsewhere, then the row: the same selection.
    w.focusFrame(1);
    QCOMPARE(w.msnChart()->highlightFrame(), quint64(1));
    table->setCurrentCell(1, 0);
    table->setCurrentCell(0, 0);
    QCOMPARE(w.focusedFrame(), quint64(req));
    QCOMPARE(w.msnChart()->highlightFrame(), quint64(req));
  }

  // The throughput chart of a stream with stall events (siw-rping-crc: CRC drops): a mark per
  // event in its kind's colour; clicking one selects its frame.
  void stallsAreMarkedOnTheThroughput() {
    const QString file = sample("siw-rping-crc.pcap");
    QVERIFY(!file.isEmpty());
    MainWindow w;
    w.resize(1200, 900);
    QVERIFY(w.loadSynchronously(file));
    w.showView(MainWindow::ViewTiming);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    ThroughputWidget* t = w.timingPage()->throughput();
    QVERIFY(t->stream());
    QVERIFY(!t->series().empty());
    if (t->stalls().empty()) QSKIP("no stall event on the busiest stream of siw-rping-crc");
    const QImage img = t->grab().toImage();
    for (std::size_t i = 0; i < t->stalls().size(); ++i) {
      const QRectF m = t->stallRect(i);
      QVERIFY(!m.isEmpty());
      QCOMPARE(pixel(img, m.center()), stallColor(t->stalls()[i].kind));
    }
    const auto& first = t->stalls().front();
    QTest::mouseClick(t, Qt::LeftButton, {}, t->stallRect(0).center().toPoint());
    // Marks at one time overlap: the click selects the first mark under it.
    std::uint64_t frame = first.frame;
    for (std::size_t i = 0; i < t->stalls().size(); ++i)
      if (t->stallRect(i).adjusted(-2, -2, 2, 2).contains(t->stallRect(0).center())) {
        frame = t->stalls()[i].frame;
        break;
      }
    QCOMPARE(w.focusedFrame(), frame);
  }

  // A message an upper layer named shows its command, in the Streams tree and as the label the
  // MSN chart draws: NVMe-oF (siw-nvmeof frame 146: NVM Read cid 0x61) and iSER (fault-iser).
  void messagesNameTheirUlpCommand_data() {
    QTest::addColumn<QString>("file");
    QTest::addColumn<QString>("name");
    QTest::newRow("nvme-of") << sample("siw-nvmeof.pcap") << QStringLiteral("NVMe Read cid 97");
    QTest::newRow("iser") << sample("fault-iser.pcap") << QStringLiteral("SCSI ");
  }
  void messagesNameTheirUlpCommand() {
    QFETCH(QString, file);
    QFETCH(QString, name);
    QVERIFY(!file.isEmpty());
    MainWindow w;
    w.resize(1200, 900);
    QVERIFY(w.loadSynchronously(file));
    // The tree: a message item whose details start with the command's name.
    QList<QModelIndex> items;
    collect(w.streamModel(), {}, items);
    QModelIndex found;
    for (const QModelIndex& i : items)
      if (i.data(StreamTreeModel::KindRole).toInt() == StreamTreeModel::KindMessage &&
          i.siblingAtColumn(StreamTreeModel::ColDetails).data().toString().startsWith(name))
        found = i;
    QVERIFY2(found.isValid(), qPrintable(name));
    const QString details = found.siblingAtColumn(StreamTreeModel::ColDetails).data().toString();
    QVERIFY2(details.contains(QStringLiteral(" — Send")), qPrintable(details));
    // The chart: the label drawn for that message's row names it too.
    const quint64 frame = found.data(StreamTreeModel::FrameRole).toULongLong();
    w.showView(MainWindow::ViewMsn);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    w.focusFrame(frame);
    MsnChartWidget* chart = w.msnChart();
    const MsnSeries* s = chart->currentSeries();
    QVERIFY(s);
    int row = -1;
    for (int r = 0; r < int(s->rows.size()); ++r)
      for (std::uint32_t k = s->rows[std::size_t(r)].begin; k < s->rows[std::size_t(r)].end; ++k)
        if (w.snapshot()->model->messages[s->by_msn[k]].first_frame == frame) row = r;
    QVERIFY(row >= 0);
    QVERIFY2(chart->rowLabel(row).startsWith(name), qPrintable(chart->rowLabel(row)));
    QCOMPARE(chart->rowLabel(row), details.section(QStringLiteral(" — duplicate"), 0, 0));
  }

  // The Findings view's detail pane: the selected finding's whole message, wrapped to the
  // pane's width, while the table's column cuts it.
  void findingsDetailPaneShowsTheWholeText() {
    const QString file = sample("fault-bounds.pcap");
    QVERIFY(!file.isEmpty());
    MainWindow w;
    w.resize(700, 700);
    QVERIFY(w.loadSynchronously(file));
    w.showView(MainWindow::ViewFindings);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    const Model& m = *w.snapshot()->model;
    QVERIFY(!m.findings.empty());
    // The longest message.
    int longest = 0;
    for (int i = 0; i < int(m.findings.size()); ++i)
      if (m.findings[std::size_t(i)].message.size() >
          m.findings[std::size_t(longest)].message.size())
        longest = i;
    const QString message = QString::fromStdString(m.findings[std::size_t(longest)].message);
    QTextBrowser* pane = w.findingsPage()->detailPane();
    QVERIFY(pane->toPlainText().isEmpty() || !pane->toPlainText().contains(message));
    w.selectFinding(longest);
    QVERIFY2(pane->toPlainText().contains(message), qPrintable(pane->toPlainText()));
    QVERIFY(pane->toPlainText().contains(qstr(m.findings[std::size_t(longest)].code())));
    // Wrapped: no line wider than the pane, and the message took more than one line when it
    // is wider than the pane.
    QVERIFY(pane->document()->size().width() <= pane->viewport()->width() + 1);
    const int text_w = pane->fontMetrics().horizontalAdvance(message);
    if (text_w > pane->viewport()->width())
      QVERIFY(pane->document()->documentLayout()->documentSize().height() >
              2.5 * pane->fontMetrics().height());
    // The table's message column does not show it all.
    QTableView* v = w.findingsView();
    const int col = FindingsModel::ColMessage;
    QVERIFY(v->columnWidth(col) < text_w);
  }
};

QTEST_MAIN(TimingPageTest)
#include "timing_page_test.moc"
