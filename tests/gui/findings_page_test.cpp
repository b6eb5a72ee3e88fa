// SPDX-License-Identifier: GPL-2.0-or-later
// The Findings view against `ddpscope analyze --json`: the STag and direction columns, the
// Terminate triple with its name (and the full text as a tooltip), the filters by code, stream
// and severity with their count, and selecting a finding focusing its frame in every view; the
// Data Sink profile chosen in Tools › Data Sink Profile (issue 40) shown in the Terminate column.
#include <QAction>
#include <QComboBox>
#include <QHeaderView>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QProcess>
#include <QSignalSpy>
#include <QTableView>
#include <QTemporaryDir>
#include <QtTest>

#include "findings_model.h"
#include "findings_page.h"
#include "gui_test_util.h"
#include "main_window.h"
#include "msn_chart_widget.h"
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

QJsonArray cliFindings(const QString& file, const QString& regions = {},
                       const QString& profile = {}) {
  QProcess p;
  QStringList args{"analyze", "--json", "-q", file};
  if (!regions.isEmpty()) args << "--regions" << regions;
  if (!profile.isEmpty()) args << "--sink-profile" << profile;
  p.start(qEnvironmentVariable("DDPSCOPE_CLI"), args);
  if (!p.waitForFinished(120000)) return {};
  return QJsonDocument::fromJson(p.readAllStandardOutput()).object().value("findings").toArray();
}

QString header(const QAbstractItemModel& m, int c) {
  return m.headerData(c, Qt::Horizontal).toString();
}
}  // namespace

class FindingsPageTest : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;

 private slots:
  void initTestCase() {
    QVERIFY(tmp_.isValid());
    test::useTemporarySettings(tmp_);
    if (qEnvironmentVariableIsEmpty("DDPSCOPE_CLI")) QSKIP("DDPSCOPE_CLI not set");
  }

  // fault-bounds with its regions file: each row's code, frame, direction, STag and Terminate
  // as the CLI reports.
  void columnsShowStagDirectionAndTerminate() {
    const QString file = sample("fault-bounds.pcap");
    if (file.isEmpty()) QSKIP("samples/synthetic/fault-bounds.pcap missing");
    const QString regions = QFileInfo(file).absolutePath() + "/fault-bounds.regions.json";
    const QJsonArray cli = cliFindings(file, regions);
    QVERIFY(!cli.isEmpty());
    MainWindow w;
    w.resize(1280, 800);
    QVERIFY(w.loadSynchronously(file, regions));
    w.show();
    w.showView(MainWindow::ViewFindings);
    const FindingsModel& m = *w.findingsModel();
    QCOMPARE(header(m, FindingsModel::ColStag), QStringLiteral("STag"));
    QCOMPARE(header(m, FindingsModel::ColDirection), QStringLiteral("Direction"));
    QCOMPARE(m.rowCount(), int(cli.size()));
    int with_stag = 0;
    for (int r = 0; r < m.rowCount(); ++r) {
      const QJsonObject c = cli[r].toObject();
      auto cell = [&](int col, int role = Qt::DisplayRole) {
        return m.index(r, col).data(role).toString();
      };
      QCOMPARE(cell(FindingsModel::ColCode), c.value("code").toString());
      QCOMPARE(m.index(r, FindingsModel::ColFrame).data().toLongLong(),
               c.value("frame").toInteger());
      QCOMPARE(cell(FindingsModel::ColDirection),
               QStringLiteral("%1 → %2").arg(c.value("from").toString(), c.value("to").toString()));
      // The STag the CLI's message names ("... of STag 0x00003c03 ...").
      const QString stag = cell(FindingsModel::ColStag);
      if (c.value("message").toString().contains("STag 0x")) {
        QVERIFY2(!stag.isEmpty(), qPrintable(c.value("message").toString()));
        QVERIFY2(c.value("message").toString().contains("STag " + stag),
                 qPrintable(stag + " vs " + c.value("message").toString()));
        ++with_stag;
      }
      const QJsonObject t = c.value("terminate").toObject();
      if (t.isEmpty()) {
        QVERIFY(cell(FindingsModel::ColTerminate).isEmpty());
        continue;
      }
      // The triple first, then its name; the tooltip spells the whole of it.
      const QString triple = QStringLiteral("%1/%2/%3")
                                 .arg(t.value("layer").toInt())
                                 .arg(t.value("etype").toInt(), 0, 16)
                                 .arg(t.value("code").toInt(), 2, 16, QLatin1Char('0'));
      QVERIFY2(cell(FindingsModel::ColTerminate).startsWith(triple),
               qPrintable(cell(FindingsModel::ColTerminate)));
      QVERIFY(cell(FindingsModel::ColTerminate).endsWith(t.value("name").toString()));
      QVERIFY(
          cell(FindingsModel::ColTerminate, Qt::ToolTipRole).contains(t.value("name").toString()));
    }
    QVERIFY(with_stag >= 2);
    // Sized to contents: the Terminate column is not cut (its text fits its width).
    QTableView* v = w.findingsView();
    const QFontMetrics fm(v->font());
    for (int r = 0; r < m.rowCount(); ++r) {
      const QString t = m.index(r, FindingsModel::ColTerminate).data().toString();
      QVERIFY2(fm.horizontalAdvance(t) <= v->columnWidth(FindingsModel::ColTerminate),
               qPrintable(t));
    }
  }

  // fault-nvmeof (two streams): code, stream and severity filters, alone and together.
  // Tools › Data Sink Profile › siw analyses the file again; the Terminate column then shows
  // siw's verdict, and RFC's beside it where they differ, as `analyze --sink-profile siw` says:
  // fault-headers' too-long Read Request (frame 18: RFC 1/2/05, siw closes) and Send on the
  // tagged model (frame 16: RFC 0/2/06, siw 1/2/03). Back to RFC shows RFC's alone again.
  void sinkProfileChangesTheTerminateColumn() {
    const QString file = sample("fault-headers.pcap");
    if (file.isEmpty()) QSKIP("samples/synthetic/fault-headers.pcap missing");
    MainWindow w;
    w.resize(1280, 800);
    w.show();
    w.showView(MainWindow::ViewFindings);
    QSignalSpy done(&w, &MainWindow::analysisFinished);
    w.openFile(file);
    QVERIFY(done.wait(120000));
    QCOMPARE(w.sinkProfileActions().size(), 2);
    QVERIFY(w.sinkProfileActions()[0]->isChecked());
    // What the view shows (through its sort/filter proxy), for the finding at `frame`.
    QTableView* v = w.findingsView();
    auto shown = [&](std::uint64_t frame, const char* code, int role = Qt::DisplayRole) {
      const QAbstractItemModel* m = v->model();
      for (int r = 0; r < m->rowCount(); ++r)
        if (m->index(r, FindingsModel::ColFrame).data().toULongLong() == frame &&
            m->index(r, FindingsModel::ColCode).data().toString() == QLatin1String(code))
          return m->index(r, FindingsModel::ColTerminate).data(role).toString();
      return QStringLiteral("<no row>");
    };
    const QFontMetrics fm(v->font());
    auto fits = [&](const QString& t) {
      return fm.horizontalAdvance(t) <= v->columnWidth(FindingsModel::ColTerminate);
    };
    const QString rfc18 = shown(18, "ddp.untagged.message-too-long");
    const QString rfc16 = shown(16, "rdmap.opcode-invalid");
    QVERIFY2(rfc18.startsWith("1/2/05") && !rfc18.contains("RFC:"), qPrintable(rfc18));
    QVERIFY2(rfc16.startsWith("0/2/06") && !rfc16.contains("RFC:"), qPrintable(rfc16));

    w.sinkProfileActions()[1]->trigger();  // siw
    QVERIFY(w.isAnalyzing());
    QVERIFY(done.wait(120000));
    QVERIFY(w.sinkProfileActions()[1]->isChecked());
    QCOMPARE(w.snapshot()->model->sink_profile, std::optional<SinkProfile>(SinkProfile::siw));
    const QString siw18 = shown(18, "ddp.untagged.message-too-long");
    const QString siw16 = shown(16, "rdmap.opcode-invalid");
    QVERIFY2(siw18.startsWith("(none: close)") && siw18.contains("[RFC: 1/2/05"),
             qPrintable(siw18));
    QVERIFY2(siw16.startsWith("1/2/03") && siw16.contains("[RFC: 0/2/06"), qPrintable(siw16));
    QVERIFY2(fits(siw18) && fits(siw16), "the Terminate column cuts siw's verdict");
    QVERIFY(shown(18, "ddp.untagged.message-too-long", Qt::ToolTipRole)
                .contains("What the siw Data Sink does: close"));
    // The same verdicts as the CLI's under the same profile, row by row.
    if (!qEnvironmentVariableIsEmpty("DDPSCOPE_CLI")) {
      const QJsonArray cli = cliFindings(file, {}, QStringLiteral("siw"));
      QCOMPARE(w.findingsModel()->rowCount(), int(cli.size()));
      for (int r = 0; r < int(cli.size()); ++r) {
        const QJsonObject c = cli[r].toObject();
        const QString cell =
            w.findingsModel()->index(r, FindingsModel::ColTerminate).data().toString();
        const QJsonObject t = c.value("terminate").toObject();
        const QJsonObject rfc = c.value("rfc_terminate").toObject();
        if (!t.isEmpty()) QVERIFY2(cell.contains(t.value("name").toString()), qPrintable(cell));
        if (t.isEmpty() && c.value("sink_outcome").isString())
          QVERIFY2(cell.startsWith("(none: " + c.value("sink_outcome").toString() + ")"),
                   qPrintable(cell));
        QCOMPARE(cell.contains("[RFC: "), !rfc.isEmpty());
        if (!rfc.isEmpty()) QVERIFY2(cell.contains(rfc.value("name").toString()), qPrintable(cell));
      }
    }

    w.sinkProfileActions()[0]->trigger();  // back to RFC
    QVERIFY(done.wait(120000));
    QCOMPARE(shown(18, "ddp.untagged.message-too-long"), rfc18);
    QCOMPARE(shown(16, "rdmap.opcode-invalid"), rfc16);
  }

  void filtersByCodeStreamAndSeverity() {
    const QString file = sample("fault-nvmeof.pcap");
    if (file.isEmpty()) QSKIP("samples/synthetic/fault-nvmeof.pcap missing");
    const QJsonArray cli = cliFindings(file);
    MainWindow w;
    QVERIFY(w.loadSynchronously(file));
    FindingsPage* page = w.findingsPage();
    QCOMPARE(page->proxy()->rowCount(), int(cli.size()));
    auto cliCount = [&](const QString& code, int stream, const QString& min_sev) {
      const QStringList sev{"note", "warning", "error"};
      int n = 0;
      for (const QJsonValue& v : cli) {
        const QJsonObject o = v.toObject();
        if (!code.isEmpty() && o.value("code").toString() != code) continue;
        if (stream >= 0 && o.value("stream").toInt(-1) != stream) continue;
        if (sev.indexOf(o.value("severity").toString()) < sev.indexOf(min_sev)) continue;
        ++n;
      }
      return n;
    };
    // Every code and stream that occurs is offered.
    QSet<QString> codes;
    QSet<int> streams;
    for (const QJsonValue& v : cli) {
      codes.insert(v.toObject().value("code").toString());
      if (v.toObject().contains("stream")) streams.insert(v.toObject().value("stream").toInt());
    }
    QCOMPARE(page->codeCombo()->count(), int(codes.size()) + 1);
    QCOMPARE(page->streamCombo()->count(), int(streams.size()) + 1);
    QVERIFY(streams.size() >= 2);
    for (const QString& code : codes) {
      page->setCodeFilter(code);
      QCOMPARE(page->proxy()->rowCount(), cliCount(code, -1, "note"));
      for (int r = 0; r < page->proxy()->rowCount(); ++r)
        QCOMPARE(page->proxy()->index(r, FindingsModel::ColCode).data().toString(), code);
    }
    page->setCodeFilter(QString());
    for (int s : streams) {
      page->setStreamFilter(s);
      QCOMPARE(page->proxy()->rowCount(), cliCount({}, s, "note"));
      QCOMPARE(page->countText(),
               QStringLiteral("%1 of %2").arg(cliCount({}, s, "note")).arg(cli.size()));
      page->severityCombo()->setCurrentIndex(2);  // errors only
      QCOMPARE(page->proxy()->rowCount(), cliCount({}, s, "error"));
      page->severityCombo()->setCurrentIndex(0);
    }
    page->setStreamFilter(-1);
    QCOMPARE(page->proxy()->rowCount(), int(cli.size()));
    // Filters survive a reload of the same capture.
    page->setCodeFilter(*codes.begin());
    const int shown = page->proxy()->rowCount();
    QVERIFY(w.loadSynchronously(file));
    QCOMPARE(page->proxy()->code(), *codes.begin());
    QCOMPARE(page->proxy()->rowCount(), shown);
  }

  // Selecting a finding in the table (as a click does) focuses its frame in every view.
  void selectingAFindingSelectsItsFrameEverywhere() {
    const QString file = sample("fault-bounds.pcap");
    if (file.isEmpty()) QSKIP("samples/synthetic/fault-bounds.pcap missing");
    MainWindow w;
    w.resize(1280, 800);
    QVERIFY(w.loadSynchronously(file));
    w.show();
    w.showView(MainWindow::ViewFindings);
    QTableView* v = w.findingsView();
    for (int r = 0; r < v->model()->rowCount(); ++r) {
      const QModelIndex idx = v->model()->index(r, FindingsModel::ColMessage);
      QTest::mouseClick(v->viewport(), Qt::LeftButton, {}, v->visualRect(idx).center());
      const std::uint64_t frame = idx.data(FindingsModel::FrameRole).toULongLong();
      QCOMPARE(w.focusedFrame(), frame);
      QCOMPARE(w.regionMap()->highlightFrame(), frame);
      QCOMPARE(w.placementTrace()->highlightFrame(), frame);
      QCOMPARE(w.msnChart()->highlightFrame(), frame);
      if (auto region = w.snapshot()->region_of_frame(frame))
        QCOMPARE(w.placementTrace()->region(), int(*region));
    }
  }
};

QTEST_MAIN(FindingsPageTest)
#include "findings_page_test.moc"
