// SPDX-License-Identifier: GPL-2.0-or-later
// Wireshark and the GUI know each other (issue 18): `ddpscope-gui FILE --frame N` (what
// Wireshark's Tools › ddpscope menu runs) focuses frame N in every view once the analysis
// has finished, and "Open in Wireshark at this frame" passes the capture, the frame, the
// regions file and a capture's mid-stream ports as the plugin's preferences and Decode As.
#include <QFileInfo>
#include <QProcess>
#include <QSignalSpy>
#include <QTableView>
#include <QTemporaryDir>
#include <QTreeView>
#include <QtTest>

#include "findings_model.h"
#include "gui_test_util.h"
#include "main_window.h"
#include "msn_chart_widget.h"
#include "region_map_widget.h"
#include "stream_tree_model.h"
#include "wireshark_launch.h"

using namespace ddpscope;
using namespace ddpscope::gui;

namespace {
QString sample(const char* name) {
  return qEnvironmentVariable("DDPSCOPE_SAMPLES_DIR") + QStringLiteral("/synthetic/") +
         QLatin1String(name);
}
}  // namespace

class WiresharkIntegrationTest : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;

 private slots:
  void initTestCase() {
    QVERIFY(tmp_.isValid());
    test::useTemporarySettings(tmp_);
  }

  // Frame 14 of fault-bounds.pcap is the Write past its region's end (ddp.tagged.bounds).
  void frameOnLoadFocusesEveryView() {
    const QString file = sample("fault-bounds.pcap");
    QVERIFY(QFileInfo::exists(file));
    MainWindow w;
    w.resize(1200, 800);
    w.show();
    QSignalSpy done(&w, &MainWindow::analysisFinished);
    w.focusFrameWhenLoaded(14);
    // Frame 14 is out of bounds only with the regions file (given, as to the CLI).
    w.openFile(file, sample("fault-bounds.regions.json"));
    QVERIFY(done.wait(120000));
    QCOMPARE(w.focusedFrame(), std::uint64_t{14});
    QCOMPARE(w.findingsView()->currentIndex().data(FindingsModel::FrameRole).toULongLong(),
             quint64{14});
    const int finding = w.findingsView()->currentIndex().data(FindingsModel::FindingRole).toInt();
    QCOMPARE(w.snapshot()->model->findings.at(std::size_t(finding)).code(),
             std::string_view("ddp.tagged.bounds"));
    QCOMPARE(w.regionMap()->highlightFrame(), std::uint64_t{14});
    QCOMPARE(w.msnChart()->highlightFrame(), std::uint64_t{14});
    const auto region = w.snapshot()->region_of_frame(14);
    QVERIFY(region.has_value());
    QCOMPARE(w.regionMap()->region(), int(*region));
    QCOMPARE(w.streamsView()->currentIndex().data(StreamTreeModel::RegionRole).toInt(),
             int(*region));
    // Only once: the next analysis (Reload) does not jump back to it.
    w.focusFrame(3);
    w.openFile(file);
    QVERIFY(done.wait(120000));
    QVERIFY(w.focusedFrame() != 14);
  }

  void wiresharkGetsFrameRegionsAndHints() {
    WiresharkRequest r;
    r.capture = QStringLiteral("/tmp/x.pcap");
    r.frame = 14;
    QCOMPARE(wiresharkArguments(r), (QStringList{"-r", "/tmp/x.pcap", "-g", "14"}));
    r.regions_file = sample("fault-bounds.regions.json");
    r.ports = {7174, 4420};
    r.crc = false;
    r.markers = true;
    QCOMPARE(
        wiresharkArguments(r),
        (QStringList{"-r", "/tmp/x.pcap", "-g", "14", "-o",
                     "iwarp.mpa.regions_file:" + QFileInfo(r.regions_file).absoluteFilePath(), "-d",
                     "tcp.port==7174,iwarp.mpa", "-d", "tcp.port==4420,iwarp.mpa", "-o",
                     "iwarp.mpa.midstream_crc:false", "-o", "iwarp.mpa.midstream_markers:TRUE"}));
    r.crc.reset();
    QVERIFY(wiresharkArguments(r).contains(QStringLiteral("iwarp.mpa.midstream_crc:auto")));
    // The Data Sink profile the analysis used (issue 40); none when none was chosen.
    QVERIFY(!wiresharkArguments(r).join(' ').contains(QStringLiteral("sink_profile")));
    r.sink_profile = SinkProfile::siw;
    QVERIFY(wiresharkArguments(r).contains(QStringLiteral("iwarp.mpa.sink_profile:siw")));
  }

  // The window passes the regions file its analysis used, and none when it used none (the
  // sidecar beside the capture is not loaded by itself, as with `ddpscope analyze`).
  void windowPassesItsRegionsFile() {
    MainWindow w;
    QVERIFY(w.loadSynchronously(sample("fault-bounds.pcap")));
    QVERIFY(!w.wiresharkArguments().join(' ').contains(QStringLiteral("regions_file")));
    QVERIFY2(w.statusText().contains(QStringLiteral("fault-bounds.regions.json")),
             qPrintable(w.statusText()));
    QVERIFY(w.loadSynchronously(sample("fault-bounds.pcap"), sample("fault-bounds.regions.json")));
    w.focusFrame(14);
    const QStringList args = w.wiresharkArguments();
    QCOMPARE(args.mid(0, 4), (QStringList{"-r", sample("fault-bounds.pcap"), "-g", "14"}));
    QVERIFY2(args.contains("iwarp.mpa.regions_file:" +
                           QFileInfo(sample("fault-bounds.regions.json")).absoluteFilePath()),
             qPrintable(args.join(' ')));
  }

  // The binary: --frame needs a frame number and a file.
  void frameOptionIsChecked() {
    const QString gui = qEnvironmentVariable("DDPSCOPE_GUI");
    if (gui.isEmpty()) QSKIP("DDPSCOPE_GUI not set");
    for (const QStringList& args :
         {QStringList{"--frame", "0", sample("fault-bounds.pcap")},
          QStringList{"--frame", "x", sample("fault-bounds.pcap")}, QStringList{"--frame", "3"}}) {
      QProcess p;
      p.start(gui, args);
      QVERIFY(p.waitForFinished(60000));
      QCOMPARE(p.exitCode(), 2);
      QVERIFY(p.readAllStandardError().contains("--frame takes a frame number"));
    }
    // --screenshot with --frame renders (the findings view at the selected finding).
    const QString out = tmp_.filePath(QStringLiteral("frame.png"));
    QProcess p;
    p.start(gui, {"--screenshot", out, "--view", "findings", "--frame", "14",
                  sample("fault-bounds.pcap")});
    QVERIFY(p.waitForFinished(60000));
    QCOMPARE(p.exitCode(), 0);
    QVERIFY(QFileInfo(out).size() > 1000);
  }
};

QTEST_MAIN(WiresharkIntegrationTest)
#include "wireshark_integration_test.moc"
