// SPDX-License-Identifier: GPL-2.0-or-later
// ddpscope-gui [FILE] [--frame N] [--sink-profile rfc|siw]
// ddpscope-gui --capture IFACE [--filter BPF] [--write FILE] [--port PORT]... [--stream IP:PORT]...
//              [--mid-stream-crc auto|true|false] [--regions FILE] [--duration S]
// ddpscope-gui --screenshot OUT.png FILE [--view
// streams|regions|msn|findings|bytes|placement|timing|replay]
// [--frame N]
#include <QApplication>
#include <QCommandLineParser>
#include <QImage>
#include <QPixmap>
#include <QTimer>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "capture_dialog.h"
#include "main_window.h"

using ddpscope::gui::MainWindow;

static int screenshot(MainWindow& w, const QString& out, const QString& file,
                      const QString& regions, const QString& view_name, std::uint64_t frame) {
  std::optional<MainWindow::View> view;
  if (!view_name.isEmpty()) {
    view = MainWindow::parseView(view_name);
    if (!view) {
      std::fprintf(stderr, "ddpscope-gui: unknown view '%s'\n", qPrintable(view_name));
      return 2;
    }
  }
  w.resize(1280, 800);
  if (!w.loadSynchronously(file, regions)) {
    std::fprintf(stderr, "ddpscope-gui: %s: %s\n", qPrintable(file),
                 w.snapshot() ? w.snapshot()->error.c_str() : "cannot analyse");
    return 1;
  }
  w.show();
  if (frame) w.focusFrame(frame);
  if (view) w.showView(*view);
  QApplication::processEvents();
  QWidget* target = view ? w.viewWidget(*view) : static_cast<QWidget*>(&w);
  const QPixmap pix = target->grab();
  if (pix.isNull() || !pix.save(out, "PNG")) {
    std::fprintf(stderr, "ddpscope-gui: cannot write %s\n", qPrintable(out));
    return 1;
  }
  return 0;
}

int main(int argc, char** argv) {
  // --screenshot, --help and --version need no display: they render offscreen unless a
  // platform was chosen. Without a display the window itself cannot open: say so plainly.
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) {
    bool headless = false;
    for (int i = 1; i < argc; ++i)
      for (const char* flag :
           {"--screenshot", "--help", "-h", "-?", "--help-all", "--version", "-v"})
        if (std::strcmp(argv[i], flag) == 0 ||
            (std::strncmp(argv[i], "--screenshot=", 13) == 0 && std::strcmp(flag, "-v") == 0))
          headless = true;
#if defined(__linux__)
    const bool display =
        !qEnvironmentVariableIsEmpty("DISPLAY") || !qEnvironmentVariableIsEmpty("WAYLAND_DISPLAY");
#else
    const bool display = true;
#endif
    if (headless) {
      qputenv("QT_QPA_PLATFORM", "offscreen");
    } else if (!display) {
      std::fprintf(
          stderr,
          "ddpscope-gui: no display (DISPLAY and WAYLAND_DISPLAY are unset), so the window "
          "cannot open.\n  Render a view instead: ddpscope-gui --screenshot OUT.png FILE "
          "[--view VIEW]\n  or read the text report: ddpscope analyze FILE\n");
      return 1;
    }
  }
  QApplication app(argc, argv);
  QApplication::setOrganizationName(QStringLiteral("ddpscope"));
  QApplication::setApplicationName(QStringLiteral("ddpscope-gui"));
  QApplication::setApplicationVersion(QStringLiteral(DDPSCOPE_VERSION));

  QCommandLineParser parser;
  parser.setApplicationDescription(QStringLiteral("iWARP (MPA/DDP/RDMAP) capture analysis"));
  parser.addHelpOption();
  parser.addVersionOption();
  QCommandLineOption shot(QStringLiteral("screenshot"),
                          QStringLiteral("Load FILE, render a view to OUT.png and exit."),
                          QStringLiteral("OUT.png"));
  QCommandLineOption view(
      QStringLiteral("view"),
      QStringLiteral("View for --screenshot: streams, regions, msn, findings, "
                     "bytes, placement, timing, replay (default: the main window)."),
      QStringLiteral("VIEW"));
  QCommandLineOption capture(QStringLiteral("capture"),
                             QStringLiteral("Capture live on IFACE (as File › Capture)."),
                             QStringLiteral("IFACE"));
  QCommandLineOption filter(QStringLiteral("filter"),
                            QStringLiteral("BPF capture filter for --capture."),
                            QStringLiteral("BPF"));
  QCommandLineOption write(QStringLiteral("write"),
                           QStringLiteral("Save the --capture to FILE (pcap)."),
                           QStringLiteral("FILE"));
  QCommandLineOption port(QStringLiteral("port"),
                          QStringLiteral("Analyse streams on PORT without an MPA handshake, in "
                                         "FILE or the --capture (repeatable; as ddpscope "
                                         "analyze --port)."),
                          QStringLiteral("PORT"));
  QCommandLineOption duration(QStringLiteral("duration"),
                              QStringLiteral("Stop the --capture after S seconds."),
                              QStringLiteral("S"));
  QCommandLineOption stream(QStringLiteral("stream"),
                            QStringLiteral("Analyse the stream with this endpoint (IP:PORT) of "
                                           "FILE or the --capture without an MPA handshake "
                                           "(repeatable)."),
                            QStringLiteral("IP:PORT"));
  QCommandLineOption crc(QStringLiteral("mid-stream-crc"),
                         QStringLiteral("For --port/--stream streams: CRC in use, auto (default), "
                                        "true or false."),
                         QStringLiteral("auto|true|false"), QStringLiteral("auto"));
  QCommandLineOption regions(
      QStringLiteral("regions"),
      QStringLiteral("JSON file of known STag regions for FILE or the --capture. As with "
                     "ddpscope analyze, "
                     "NAME.regions.json beside a capture is not loaded unless given here "
                     "(or with File > Apply Regions File)."),
      QStringLiteral("FILE"));
  parser.addOption(shot);
  parser.addOption(stream);
  parser.addOption(crc);
  parser.addOption(regions);
  QCommandLineOption sink_profile(
      QStringLiteral("sink-profile"),
      QStringLiteral("The Data Sink whose verdicts the findings show (as ddpscope analyze "
                     "--sink-profile): rfc (the RFCs) or siw (Linux siw 6.1 as observed); "
                     "Tools > Data Sink Profile changes it."),
      QStringLiteral("rfc|siw"));
  parser.addOption(sink_profile);
  parser.addOption(view);
  parser.addOption(capture);
  parser.addOption(filter);
  parser.addOption(write);
  parser.addOption(port);
  QCommandLineOption frame(QStringLiteral("frame"),
                           QStringLiteral("Select frame N (Wireshark's number) in every view once "
                                          "FILE is analysed."),
                           QStringLiteral("N"));
  parser.addOption(duration);
  parser.addOption(frame);
  parser.addPositionalArgument(QStringLiteral("FILE"), QStringLiteral("pcap or pcapng capture"));
  parser.process(app);
  const QStringList files = parser.positionalArguments();
  std::uint64_t frame_number = 0;
  if (parser.isSet(frame)) {
    bool ok = false;
    frame_number = parser.value(frame).toULongLong(&ok);
    if (!ok || frame_number == 0 || files.isEmpty()) {
      std::fprintf(stderr, "ddpscope-gui: --frame takes a frame number (1, 2, ...) of FILE\n");
      return 2;
    }
  }

  // The stream hints, checked before any window opens.
  ddpscope::gui::FileHints hints;
  {
    QList<quint16> ports;
    if (!ddpscope::gui::parsePorts(parser.values(port).join(QLatin1Char(',')), ports)) {
      std::fprintf(stderr, "ddpscope-gui: --port takes a port number (1-65535)\n");
      return 2;
    }
    const QString c = parser.value(crc).toLower();
    if (c == QLatin1String("true") || c == QLatin1String("on") || c == QLatin1String("1")) {
      hints.crc = true;
    } else if (c == QLatin1String("false") || c == QLatin1String("off") ||
               c == QLatin1String("0")) {
      hints.crc = false;
    } else if (c != QLatin1String("auto")) {
      std::fprintf(stderr, "ddpscope-gui: --mid-stream-crc wants auto, true or false, not %s\n",
                   qPrintable(c));
      return 2;
    }
    for (quint16 p : ports) {
      hints.ports.push_back(p);
      hints.hints.push_back(ddpscope::StreamHint{p, std::nullopt, hints.crc, false});
    }
    std::vector<ddpscope::net::Endpoint> endpoints;
    QString bad;
    if (!ddpscope::gui::parseEndpoints(parser.values(stream).join(QLatin1Char(',')), endpoints,
                                       &bad)) {
      std::fprintf(stderr,
                   "ddpscope-gui: --stream wants IP:PORT (one endpoint of the stream), not %s\n",
                   qPrintable(bad));
      return 2;
    }
    for (const auto& e : endpoints)
      hints.hints.push_back(ddpscope::StreamHint{std::nullopt, e, hints.crc, false});
    if (parser.isSet(sink_profile)) {
      hints.sink_profile =
          ddpscope::sink_profile_by_name(parser.value(sink_profile).toLower().toStdString());
      if (!hints.sink_profile) {
        std::fprintf(stderr, "ddpscope-gui: --sink-profile wants rfc or siw, not %s\n",
                     qPrintable(parser.value(sink_profile)));
        return 2;
      }
    }
  }

  MainWindow w;
  w.setFileHints(hints);
  if (parser.isSet(shot)) {
    if (files.isEmpty()) {
      std::fprintf(stderr, "ddpscope-gui: --screenshot needs a capture FILE\n");
      return 2;
    }
    return screenshot(w, parser.value(shot), files.first(), parser.value(regions),
                      parser.value(view), frame_number);
  }
  w.resize(1280, 800);
  w.show();
  if (parser.isSet(capture)) {
    ddpscope::gui::CaptureRequest req;
    req.interface = parser.value(capture);
    req.filter = parser.value(filter);
    req.writePath = parser.value(write);
    req.ports = QList<quint16>(hints.ports.begin(), hints.ports.end());
    req.crc = hints.crc;
    // --stream and --regions as for a file.
    for (const ddpscope::StreamHint& h : hints.hints)
      if (h.endpoint) req.streams.push_back(*h.endpoint);
    req.regionsPath = parser.value(regions);
    bool ok = true;
    const double seconds = parser.isSet(duration) ? parser.value(duration).toDouble(&ok) : 0;
    if (!ok || seconds < 0) {
      std::fprintf(stderr, "ddpscope-gui: --duration takes a number of seconds\n");
      return 2;
    }
    w.startCapture(req);
    if (seconds > 0)
      QTimer::singleShot(static_cast<int>(seconds * 1000), &w, [&w] { w.stopCapture(); });
  } else if (!files.isEmpty()) {
    if (frame_number) w.focusFrameWhenLoaded(frame_number);
    w.openFile(files.first(), parser.value(regions));
  }
  return QApplication::exec();
}
