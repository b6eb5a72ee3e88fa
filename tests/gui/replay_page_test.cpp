// SPDX-License-Identifier: GPL-2.0-or-later
// The Replay page (issue 41): the form becomes `ddpscope replay`'s command line; a replay of a
// real siw capture against a live peer (our endpoint, echoing every Send: not what the capture
// shows) lists the differences it reports, and choosing one focuses its captured frame in the
// main window.
#include <QAction>
#include <QComboBox>
#include <QFile>
#include <QLineEdit>
#include <QProcess>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QTreeWidget>
#include <QtTest>

#include "gui_test_util.h"
#include "main_window.h"
#include "replay_page.h"
#include "stream_tree_model.h"
#include "streams_page.h"

using namespace ddpscope;
using namespace ddpscope::gui;

namespace {

QString sample(const QString& name) {
  return qEnvironmentVariable("DDPSCOPE_SAMPLES_DIR") + QLatin1Char('/') + name;
}

}  // namespace

class ReplayPageTest : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;

 private slots:
  void initTestCase() {
    QVERIFY(tmp_.isValid());
    test::useTemporarySettings(tmp_);
  }

  void theFormIsReplaysCommandLine() {
    ReplayPage page;
    QVERIFY(!page.start());  // no capture
    page.setCapture(QStringLiteral("/x/a.pcap"), 3);
    page.setStream(2);
    page.peerEdit()->setText(QStringLiteral("10.0.0.2:4420"));
    QCOMPARE(page.arguments(), QStringList({"replay", "/x/a.pcap", "--stream-index", "2", "--side",
                                            "client", "--peer", "10.0.0.2:4420", "--json"}));
    page.setStream(7);  // past the capture's streams: unchanged
    QCOMPARE(page.streamSpin()->value(), 2);
    page.sideCombo()->setCurrentIndex(1);
    page.llpCombo()->setCurrentIndex(1);
    page.udpPortSpin()->setValue(9898);
    page.peerUdpPortSpin()->setValue(9899);
    page.ignoreEdit()->setText(QStringLiteral(" nvme.sqhd, smb2.credits,"));
    page.waitSpin()->setValue(500);
    page.faultEdit()->setText(QStringLiteral(" overrun:17:1 "));
    QCOMPARE(
        page.arguments(),
        QStringList(
            {"replay",       "/x/a.pcap",    "--stream-index",  "2",        "--side",
             "server",       "--peer",       "10.0.0.2:4420",   "--llp",    "sctp",
             "--sctp-stack", "auto",         "--sctp-udp-port", "9898",     "--sctp-peer-udp-port",
             "9899",         "--ignore",     "nvme.sqhd",       "--ignore", "smb2.credits",
             "--fault",      "overrun:17:1", "--wait-ms",       "500",      "--json"}));
    page.peerEdit()->setText(QStringLiteral("no port"));
    QVERIFY(!page.start());
    QVERIFY(page.statusText().contains(QStringLiteral("HOST:PORT")));
    QVERIFY(!page.isRunning());
  }

  // The Streams page's context menu: "Replay Against a Live Peer…" opens the Replay page on the
  // chosen stream.
  void aStreamsContextMenuOpensTheReplayPageOnIt() {
    MainWindow w;
    QVERIFY(w.loadSynchronously(sample(QStringLiteral("siw/siw-nvmeof.pcap"))));
    auto* streams = qobject_cast<StreamsPage*>(w.streamsView());
    QVERIFY(streams);
    QVERIFY(streams->actions().contains(streams->replayAction()));
    const int last = int(w.snapshot()->model->streams.size()) - 1;
    QVERIFY(last >= 1);
    w.streamsView()->setCurrentIndex(w.streamModel()->indexForStream(std::uint32_t(last)));
    QVERIFY(streams->replayAction()->isEnabled());
    streams->replayAction()->trigger();
    QCOMPARE(w.replayPage()->streamSpin()->value(), last);
    QVERIFY(w.replayPage()->isVisibleTo(&w));  // its tab is the current one
    QCOMPARE(w.viewWidget(MainWindow::ViewReplay), static_cast<QWidget*>(w.replayPage()));
    QVERIFY(w.replayPage()->arguments().contains(QStringLiteral("--stream-index")));
    QCOMPARE(w.replayPage()->arguments().at(3), QString::number(last));
  }

  void differencesOfALiveReplayFocusTheirFrames() {
    const QString cli = qEnvironmentVariable("DDPSCOPE_CLI");
    if (cli.isEmpty()) QSKIP("the ddpscope CLI is not built");
    // The live peer: our endpoint, echoing each Send, on a port it picks.
    const QString portfile = tmp_.filePath(QStringLiteral("port"));
    QProcess peer;
    peer.start(cli, {"endpoint", "listen", "-p", "0", "--echo", "-q", "--port-file", portfile});
    QVERIFY(peer.waitForStarted());
    QTRY_VERIFY_WITH_TIMEOUT(QFile(portfile).size() > 0, 10000);
    QFile f(portfile);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QString port = QString::fromUtf8(f.readAll()).trimmed();

    MainWindow w;
    QVERIFY(w.loadSynchronously(sample(QStringLiteral("siw/siw-rping-4000.pcap"))));
    ReplayPage* page = w.replayPage();
    QVERIFY(page);
    page->setProgram(cli);
    page->peerEdit()->setText(QStringLiteral("127.0.0.1:") + port);
    page->waitSpin()->setValue(500);
    QSignalSpy done(page, &ReplayPage::replayFinished);
    QVERIFY(page->start());
    QVERIFY(page->isRunning());
    QVERIFY(done.wait(60000));
    // The endpoint ends with the connection; it is stopped if it did not.
    if (!peer.waitForFinished(5000)) peer.kill();

    // The first difference: the server's RDMA Read Request of 4000 octets never came (the echo
    // peer sends only Sends). Frame 9 is its first frame, read by hand: MPA length 0x2e, DDP
    // 0x41 (untagged, last), RDMAP 0x41 (Read Request), QN 1, from the server's port 7174.
    QTreeWidget* tree = page->differencesView();
    QVERIFY2(tree->topLevelItemCount() >= 2, qPrintable(page->statusText()));
    QTreeWidgetItem* first = tree->topLevelItem(0);
    QCOMPARE(first->text(0), QStringLiteral("2"));
    QCOMPARE(first->text(1), QStringLiteral("0"));
    QCOMPARE(first->text(2), QStringLiteral("server->client"));
    QCOMPARE(first->text(3), QStringLiteral("RDMA Read Request of 4000 octets"));
    QVERIFY(first->text(4).contains(QStringLiteral("sent nothing")));
    QCOMPARE(first->text(5), QStringLiteral("9"));
    QVERIFY(page->statusText().startsWith(
        QStringLiteral("%1 differences").arg(tree->topLevelItemCount())));
    // Choosing a line focuses its frame in the main window; the next one moves it.
    tree->setCurrentItem(first);
    QCOMPARE(w.focusedFrame(), std::uint64_t(9));
    QTreeWidgetItem* second = tree->topLevelItem(1);
    tree->setCurrentItem(second);
    QCOMPARE(w.focusedFrame(), second->text(5).toULongLong());
    QVERIFY(w.focusedFrame() > 9);
  }
};

QTEST_MAIN(ReplayPageTest)
#include "replay_page_test.moc"
