// SPDX-License-Identifier: GPL-2.0-or-later
// File › Capture: a live capture on "lo" started from the main window's capture dialog while
// an endpoint pair exchanges real iWARP traffic over loopback sockets. The views show the
// stream while the capture still runs; after Stop the findings and streams equal the
// analysis of the savefile (core's and `ddpscope analyze --json`'s). Bad filters and unknown
// interfaces end in a message, not a crash. Needs root or CAP_NET_RAW (CI runs as root);
// without capture permission the capture tests are skipped, any other failure fails.
#include <QAction>
#include <QCheckBox>
#include <QComboBox>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QProcess>
#include <QPushButton>
#include <QSettings>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>
#include <atomic>
#include <thread>

#include "capture_dialog.h"
#include "ddpscope/capture/live_capture.h"
#include "ddpscope/endpoint/endpoint.h"
#include "findings_model.h"
#include "gui_test_util.h"
#include "main_window.h"
#include "stream_tree_model.h"

using namespace ddpscope;
using namespace ddpscope::gui;

namespace {

// Skips the calling test when the process may not capture; fails on any other error.
#define REQUIRE_CAPTURE_PERMISSION()                                                      \
  do {                                                                                    \
    std::string err_;                                                                     \
    capture::LiveFailure why_ = capture::LiveFailure::none;                               \
    if (!capture::LiveCapture::open("lo", "", err_, &why_)) {                             \
      if (why_ == capture::LiveFailure::permission)                                       \
        QSKIP(qPrintable(QStringLiteral("live capture needs root or CAP_NET_RAW: %1")     \
                             .arg(QString::fromStdString(err_))));                        \
      QFAIL(qPrintable(                                                                   \
          QStringLiteral("cannot capture on lo: %1").arg(QString::fromStdString(err_)))); \
    }                                                                                     \
  } while (0)

std::uint64_t addrOf(const Bytes& b) {
  return reinterpret_cast<std::uintptr_t>(b.data());
}

Bytes pattern(std::size_t n, std::uint8_t seed) {
  Bytes b(n);
  for (std::size_t i = 0; i < n; ++i)
    b[i] = static_cast<std::uint8_t>(seed + i * 7);
  return b;
}

// An endpoint pair on 127.0.0.1 (the port is known before traffic starts, for the capture
// filter). run() exchanges Sends and RDMA Writes, then writes to an STag the server never
// registered, which draws the server's Terminate (a finding the analysis must show).
class EndpointTraffic {
 public:
  EndpointTraffic() : loop_(mem_) {
    scfg_.pd = mem_.alloc_pd();
    scfg_.mpa.revision = 2;
    scfg_.mpa.crc = true;
    ccfg_ = scfg_;
    ccfg_.pd = mem_.alloc_pd();
    std::string err;
    listening_ = loop_.listen("127.0.0.1", 0, scfg_, err);
    error_ = err;
  }
  bool listening() const { return listening_; }
  std::uint16_t port() const { return loop_.listen_port(); }
  const std::string& error() const { return error_; }

  // On the traffic thread; error() tells what failed.
  bool run() {
    Bytes smem(100000);
    const std::uint32_t sstag =
        *mem_.register_region(scfg_.pd, smem, addrOf(smem), session::access::all);
    std::vector<Bytes> srecv(4, Bytes(4096)), crecv(4, Bytes(4096));
    endpoint::Connection* server = nullptr;
    int recvs = 0, writes = 0, terminates = 0;
    loop_.on_connection = [&](endpoint::Connection& c) {
      const bool is_server = c.session().role() == session::Role::responder;
      auto& bufs = is_server ? srecv : crecv;
      for (std::size_t i = 0; i < bufs.size(); ++i)
        c.session().post_recv(bufs[i], i);
      if (is_server) server = &c;
    };
    loop_.on_event = [&](endpoint::Connection&, const session::Event& e) {
      recvs += e.kind == session::EventKind::recv_completed;
      writes += e.kind == session::EventKind::write_placed;
      terminates += e.kind == session::EventKind::terminate_received;
    };
    std::string err;
    endpoint::Connection* client = loop_.connect("127.0.0.1", port(), ccfg_, err);
    if (!client) return fail("connect: " + err);
    using State = session::Session::State;
    if (!loop_.run_until(
            [&] {
              return server && server->session().state() == State::established &&
                     client->session().state() == State::established;
            },
            5000))
      return fail("no MPA connection");
    auto& cs = client->session();
    cs.send(pattern(300, 1));
    cs.rdma_write(pattern(20000, 2), sstag, addrOf(smem) + 100);
    cs.send(pattern(1000, 3));
    if (!loop_.run_until([&] { return recvs == 2 && writes == 1; }, 5000))
      return fail("Sends and the RDMA Write did not complete");
    // An STag the server never registered: RFC 5040 §7.2 (Invalid STag) draws a Terminate.
    cs.rdma_write(pattern(64, 4), sstag ^ 0x5500, addrOf(smem));
    if (!loop_.run_until([&] { return terminates == 1; }, 5000))
      return fail("no Terminate for the invalid STag");
    client->abort();
    server->abort();
    loop_.run_until([&] { return client->done() && server->done(); }, 2000);
    return true;
  }

 private:
  bool fail(const std::string& why) {
    error_ = why;
    return false;
  }
  session::MemoryTable mem_;
  endpoint::Loop loop_;
  session::SessionConfig scfg_, ccfg_;
  bool listening_ = false;
  std::string error_;
};

QMessageBox* errorBox(MainWindow& w) {
  return w.findChild<QMessageBox*>(QStringLiteral("errorBox"));
}

QString findingKey(const Finding& f) {
  return QStringLiteral("%1 %2 %3: %4")
      .arg(f.frame)
      .arg(f.stream)
      .arg(QString::fromStdString(std::string(f.code())), QString::fromStdString(f.message));
}

QStringList findingKeys(const Model& m) {
  QStringList keys;
  for (const Finding& f : m.findings)
    keys << findingKey(f);
  keys.sort();
  return keys;
}

}  // namespace

class LiveCaptureTest : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;

 private slots:
  void initTestCase() {
    QVERIFY(tmp_.isValid());
    test::useTemporarySettings(tmp_);
  }

  void captureFromTheMenuFollowsTrafficLive() {
    REQUIRE_CAPTURE_PERMISSION();
    EndpointTraffic traffic;
    QVERIFY2(traffic.listening(), traffic.error().c_str());
    const QString saved = tmp_.filePath(QStringLiteral("live.pcap"));

    MainWindow w;
    w.resize(1200, 800);
    w.show();
    QVERIFY(w.captureAction()->isEnabled());
    QVERIFY(!w.stopCaptureAction()->isEnabled());
    // File › Capture… opens the dialog; fill it in as a user would and press Start.
    w.captureAction()->trigger();
    auto* dialog = w.findChild<CaptureDialog*>();
    QVERIFY(dialog);
    QTRY_VERIFY(dialog->isVisible());
    QVERIFY(dialog->interfaceCombo()->findText(QStringLiteral("lo")) >= 0);
    dialog->interfaceCombo()->setCurrentText(QStringLiteral("lo"));
    dialog->filterEdit()->clear();
    QTest::keyClicks(dialog->filterEdit(), QStringLiteral("tcp port %1").arg(traffic.port()));
    QVERIFY(dialog->filterErrorLabel()->isHidden());
    dialog->savePathEdit()->setText(saved);
    QVERIFY(dialog->saveCheck()->isChecked());
    QVERIFY(dialog->startButton()->isEnabled());
    QTest::mouseClick(dialog->startButton(), Qt::LeftButton);
    QVERIFY(w.isCapturing());
    QVERIFY(w.stopCaptureAction()->isEnabled());
    QVERIFY(!w.captureAction()->isEnabled());
    // The worker has the interface open once it reports the kernel's counters.
    QTRY_VERIFY_WITH_TIMEOUT(w.liveStatus().have_kernel_stats || !w.isCapturing(), 10000);
    QVERIFY2(w.isCapturing(), qPrintable(w.lastError()));

    std::atomic<bool> done{false};
    bool ok = false;
    std::thread t([&] {
      ok = traffic.run();
      done = true;
    });
    QTRY_VERIFY_WITH_TIMEOUT(done.load(), 30000);
    t.join();
    QVERIFY2(ok, traffic.error().c_str());

    // Live: the stream and the Terminate's finding are in the views before Stop.
    QTRY_VERIFY_WITH_TIMEOUT(w.snapshot() && w.snapshot()->model->streams.size() == 1 &&
                                 !w.snapshot()->model->findings.empty(),
                             10000);
    QVERIFY(w.isCapturing());
    QVERIFY(!w.snapshot()->final);
    QCOMPARE(w.snapshot()->live_interface, std::string("lo"));
    QCOMPARE(w.streamModel()->rowCount(), 1);
    QVERIFY(w.streamModel()->indexForStream(0).isValid());
    QVERIFY(w.findingsModel()->rowCount() > 0);
    QVERIFY(w.statusText().contains(QStringLiteral("capturing")));
    QVERIFY(w.captureStatusText().contains(QStringLiteral("packets")));
    QVERIFY(w.liveStatus().frames > 10);
    qInfo("live, before Stop: %llu frames, %zu findings", qulonglong(w.snapshot()->model->frames),
          w.snapshot()->model->findings.size());

    // Stop: the analysis is finished as at the end of a file.
    QSignalSpy finished(&w, &MainWindow::analysisFinished);
    w.stopCaptureAction()->trigger();
    QVERIFY(finished.wait(10000));
    QVERIFY(!w.isCapturing());
    QVERIFY(!errorBox(w));
    const SnapshotPtr live = w.snapshot();
    QVERIFY(live->final);
    QVERIFY2(live->error.empty(), live->error.c_str());
    QCOMPARE(QString::fromStdString(live->path), saved);
    QCOMPARE(live->live.frames, live->model->frames);
    QVERIFY(w.captureStatusText().contains(QString::number(live->live.frames)));
    const Model& lm = *live->model;
    QCOMPARE(lm.streams.size(), std::size_t(1));
    QVERIFY(lm.streams[0].state != StreamState::not_iwarp);
    bool terminate = false;
    for (const Finding& f : lm.findings)
      terminate |=
          f.terminate.has_value() || std::string(f.code()).find("terminate") != std::string::npos;
    QVERIFY2(terminate, qPrintable(findingKeys(lm).join(QLatin1Char('\n'))));
    qInfo("after Stop: %llu frames, %zu messages, %zu findings:\n%s", qulonglong(lm.frames),
          lm.messages.size(), lm.findings.size(),
          qPrintable(findingKeys(lm).join(QLatin1Char('\n'))));

    // The savefile analyses to the same result (core).
    const SnapshotPtr file = analyze_capture(saved.toStdString());
    QVERIFY2(file->error.empty(), file->error.c_str());
    const Model& fm = *file->model;
    QCOMPARE(fm.frames, lm.frames);
    QCOMPARE(findingKeys(fm), findingKeys(lm));
    QCOMPARE(fm.streams.size(), lm.streams.size());
    QCOMPARE(fm.streams[0].state, lm.streams[0].state);
    QCOMPARE(fm.streams[0].dirs[0].fpdus, lm.streams[0].dirs[0].fpdus);
    QCOMPARE(fm.streams[0].dirs[1].fpdus, lm.streams[0].dirs[1].fpdus);
    QCOMPARE(fm.messages.size(), lm.messages.size());
    QCOMPARE(file->regions.size(), live->regions.size());

    // ... and as the CLI reports it.
    const QString cli = qEnvironmentVariable("DDPSCOPE_CLI");
    if (!cli.isEmpty()) {
      QProcess p;
      p.start(cli, {QStringLiteral("analyze"), saved, QStringLiteral("--json")});
      QVERIFY(p.waitForFinished(60000));
      const QJsonObject rep = QJsonDocument::fromJson(p.readAllStandardOutput()).object();
      QCOMPARE(rep.value(QStringLiteral("streams")).toArray().size(), int(lm.streams.size()));
      QStringList cli_keys;
      for (const QJsonValue& v : rep.value(QStringLiteral("findings")).toArray()) {
        const QJsonObject f = v.toObject();
        cli_keys << QStringLiteral("%1 %2 %3: %4")
                        .arg(f.value(QStringLiteral("frame")).toInteger())
                        .arg(f.value(QStringLiteral("stream")).toInteger())
                        .arg(f.value(QStringLiteral("code")).toString(),
                             f.value(QStringLiteral("message")).toString());
      }
      cli_keys.sort();
      QCOMPARE(cli_keys, findingKeys(lm));
    }

    // File › Reload now opens the savefile: the same findings in the table.
    QVERIFY(w.reloadAction()->isEnabled());
    w.reloadAction()->trigger();
    QVERIFY(finished.wait(30000));
    QVERIFY(w.snapshot()->live_interface.empty());
    QCOMPARE(findingKeys(*w.snapshot()->model), findingKeys(lm));
    QCOMPARE(w.findingsModel()->rowCount(), int(lm.findings.size()));
  }

  void badFilterIsRefusedWithAMessage() {
    MainWindow w;
    w.show();
    w.captureAction()->trigger();
    auto* dialog = w.findChild<CaptureDialog*>();
    QVERIFY(dialog);
    dialog->filterEdit()->clear();
    QTest::keyClicks(dialog->filterEdit(), QStringLiteral("tcp port"));
    QVERIFY(!dialog->filterErrorLabel()->isHidden());
    QVERIFY(!dialog->filterErrorLabel()->text().isEmpty());
    QVERIFY(!dialog->startButton()->isEnabled());
    QTest::keyClicks(dialog->filterEdit(), QStringLiteral(" 4420"));
    QVERIFY(dialog->filterErrorLabel()->isHidden());
    QVERIFY(dialog->startButton()->isEnabled());
    dialog->portsEdit()->setText(QStringLiteral("4420, 99999"));
    QVERIFY(!dialog->startButton()->isEnabled());
    dialog->reject();

    // The same filter from the command line's path: a message, no capture.
    CaptureRequest r;
    r.filter = QStringLiteral("this is not bpf");
    w.startCapture(r);
    QVERIFY(!w.isCapturing());
    QVERIFY(w.lastError().contains(QStringLiteral("this is not bpf")));
    QMessageBox* box = errorBox(w);
    QVERIFY(box);
    QCOMPARE(box->text(), w.lastError());
    QVERIFY(w.statusText().contains(w.lastError()));
    QVERIFY(w.captureAction()->isEnabled());
  }

  void unknownInterfaceShowsTheError() {
    MainWindow w;
    w.show();
    QSignalSpy finished(&w, &MainWindow::analysisFinished);
    CaptureRequest r;
    r.interface = QStringLiteral("ddpscope-none0");
    w.startCapture(r);
    QVERIFY(finished.wait(10000));
    QVERIFY(!w.isCapturing());
    // Root: "No such device"; others: no permission. Either way, named and shown.
    QVERIFY2(w.lastError().contains(QStringLiteral("ddpscope-none0")), qPrintable(w.lastError()));
    QMessageBox* box = errorBox(w);
    QVERIFY(box);
    QCOMPARE(box->text(), w.lastError());
    QVERIFY(w.snapshot());
    QVERIFY(w.snapshot()->final);
    QCOMPARE(w.snapshot()->frames_read, std::uint64_t(0));
    QVERIFY(w.captureAction()->isEnabled());
    QVERIFY(!w.stopCaptureAction()->isEnabled());
  }

  // --stream and --regions (MainWindow::startCapture, the command line's path) apply to a
  // live capture as to a file: the findings equal `ddpscope analyze SAVEFILE --regions F
  // --stream EP`'s, and differ from the analysis without them (the regions file does not
  // list the STag the server registered, so its Writes hit an unknown STag).
  void captureTakesStreamAndRegionsAsAFileDoes() {
    REQUIRE_CAPTURE_PERMISSION();
    const QString cli = qEnvironmentVariable("DDPSCOPE_CLI");
    if (cli.isEmpty()) QSKIP("DDPSCOPE_CLI not set");
    EndpointTraffic traffic;
    QVERIFY2(traffic.listening(), traffic.error().c_str());
    const QString saved = tmp_.filePath(QStringLiteral("live-hints.pcap"));
    const QString regions = tmp_.filePath(QStringLiteral("live.regions.json"));
    {
      QFile f(regions);
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write(R"([{"stag": "0x00123400", "base": "0x1000", "length": 16, "sink": "127.0.0.1"}])");
    }
    const QString endpoint = QStringLiteral("127.0.0.1:%1").arg(traffic.port());
    MainWindow w;
    w.show();
    CaptureRequest r;
    r.filter = QStringLiteral("tcp port %1").arg(traffic.port());
    r.writePath = saved;
    r.streams.push_back(net::Endpoint{*net::Address::parse("127.0.0.1"), traffic.port()});
    r.regionsPath = regions;
    w.startCapture(r);
    QTRY_VERIFY_WITH_TIMEOUT(w.liveStatus().have_kernel_stats || !w.isCapturing(), 10000);
    QVERIFY2(w.isCapturing(), qPrintable(w.lastError()));
    std::atomic<bool> done{false};
    bool ok = false;
    std::thread t([&] {
      ok = traffic.run();
      done = true;
    });
    QTRY_VERIFY_WITH_TIMEOUT(done.load(), 30000);
    t.join();
    QVERIFY2(ok, traffic.error().c_str());
    QTRY_VERIFY_WITH_TIMEOUT(w.snapshot() && w.snapshot()->model->frames >= w.liveStatus().frames &&
                                 w.liveStatus().frames > 10,
                             10000);
    QSignalSpy finished(&w, &MainWindow::analysisFinished);
    w.stopCapture();
    QVERIFY(finished.wait(10000));
    const SnapshotPtr live = w.snapshot();
    QVERIFY2(live->error.empty(), live->error.c_str());
    QCOMPARE(QString::fromStdString(live->regions_file), regions);
    auto cliKeys = [&](const QStringList& extra) {
      QProcess p;
      p.start(cli, QStringList{QStringLiteral("analyze"), saved, QStringLiteral("--json")} + extra);
      p.waitForFinished(60000);
      QStringList keys;
      for (const QJsonValue& v : QJsonDocument::fromJson(p.readAllStandardOutput())
                                     .object()
                                     .value(QStringLiteral("findings"))
                                     .toArray()) {
        const QJsonObject f = v.toObject();
        keys << QStringLiteral("%1 %2 %3: %4")
                    .arg(f.value(QStringLiteral("frame")).toInteger())
                    .arg(f.value(QStringLiteral("stream")).toInteger())
                    .arg(f.value(QStringLiteral("code")).toString(),
                         f.value(QStringLiteral("message")).toString());
      }
      keys.sort();
      return keys;
    };
    const QStringList with =
        cliKeys({QStringLiteral("--regions"), regions, QStringLiteral("--stream"), endpoint});
    QCOMPARE(findingKeys(*live->model), with);
    QVERIFY(with != cliKeys({}));
    // Reload (the savefile) applies the same regions file again.
    w.reloadAction()->trigger();
    QVERIFY(finished.wait(30000));
    QCOMPARE(QString::fromStdString(w.snapshot()->regions_file), regions);
  }

  // The dialog offers what the command line does: mid-stream endpoints (checked as typed) and a
  // regions file, remembered for next time.
  void dialogTakesStreamsAndRegions() {
    MainWindow w;
    w.show();
    w.captureAction()->trigger();
    auto* dialog = w.findChild<CaptureDialog*>();
    QVERIFY(dialog);
    dialog->filterEdit()->clear();
    dialog->streamsEdit()->clear();
    QTest::keyClicks(dialog->streamsEdit(), QStringLiteral("10.0.0.2:4420, 10.0.0.9"));
    QVERIFY(!dialog->startButton()->isEnabled());
    dialog->streamsEdit()->setText(QStringLiteral("10.0.0.2:4420, [::1]:5000"));
    QVERIFY(dialog->startButton()->isEnabled());
    dialog->regionsEdit()->setText(tmp_.filePath(QStringLiteral("r.regions.json")));
    const CaptureRequest r = dialog->request();
    QCOMPARE(r.streams.size(), std::size_t(2));
    QCOMPARE(r.streams[0], (net::Endpoint{*net::Address::parse("10.0.0.2"), 4420}));
    QCOMPARE(r.streams[1], (net::Endpoint{*net::Address::parse("::1"), 5000}));
    QCOMPARE(r.regionsPath, tmp_.filePath(QStringLiteral("r.regions.json")));
    dialog->interfaceCombo()->setCurrentText(QStringLiteral("ddpscope-none0"));
    QSignalSpy finished(&w, &MainWindow::analysisFinished);
    dialog->accept();  // remembers the choices; the capture fails on the regions file
    QVERIFY(finished.wait(10000));
    QVERIFY(!w.lastError().isEmpty());
    CaptureDialog again(&w);
    QCOMPARE(again.request().streams, r.streams);
    QCOMPARE(again.request().regionsPath, r.regionsPath);
    // Later tests open the dialog with the defaults.
    QSettings().remove(QStringLiteral("capture"));
  }

  // A regions file that cannot be read stops the capture before it starts, with the reason.
  void badRegionsFileIsReported() {
    MainWindow w;
    w.show();
    QSignalSpy finished(&w, &MainWindow::analysisFinished);
    CaptureRequest r;
    r.regionsPath = tmp_.filePath(QStringLiteral("no-such.regions.json"));
    w.startCapture(r);
    QVERIFY(finished.wait(10000));
    QVERIFY(!w.isCapturing());
    QVERIFY(!w.lastError().isEmpty());
    QCOMPARE(w.snapshot()->frames_read, std::uint64_t(0));
    QVERIFY(errorBox(w));
  }

  void closingTheWindowStopsTheCapture() {
    REQUIRE_CAPTURE_PERMISSION();
    auto w = std::make_unique<MainWindow>();
    CaptureRequest r;
    r.filter = QStringLiteral("tcp port 9");  // nothing: the capture idles
    w->startCapture(r);
    QTRY_VERIFY_WITH_TIMEOUT(w->liveStatus().have_kernel_stats || !w->isCapturing(), 10000);
    QVERIFY2(w->isCapturing(), qPrintable(w->lastError()));
    w.reset();  // joins the worker: returns only once the capture loop has ended
  }
};

QTEST_MAIN(LiveCaptureTest)
#include "live_capture_test.moc"
