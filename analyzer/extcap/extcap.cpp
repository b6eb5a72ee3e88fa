// SPDX-License-Identifier: GPL-2.0-or-later
// ddpscope-extcap: a Wireshark extcap interface, "ddpscope replay". Wireshark (or tshark -i)
// runs it to list the interface, its link type and its options; on --capture it starts
// `ddpscope replay CAPTURE --stream-index N --side S --peer HOST:PORT` (with replay's --llp,
// --sctp-stack, --sctp-udp-port, --sctp-peer-udp-port, --ignore, --all-streams and --fault when
// given) and streams the replayed exchange, captured live on lo (LiveSession, filtered to the
// peer's TCP or SCTP port, or to its UDP port for SCTP over UDP, and the user's capture filter),
// into Wireshark's FIFO. It ends when the replay has ended (and the last frames were captured) or
// when Wireshark stops it (SIGTERM), and then stops the replay. The protocol:
// https://www.wireshark.org/docs/wsdg_html_chunked/ChCaptureExtcap.html
#include <getopt.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "ddpscope/capture/live_capture.h"

extern char** environ;

namespace {

constexpr const char* kInterface = "ddpscope-replay";
constexpr std::uint32_t kLinkTypeEthernet = 1;  // what Linux's lo presents

std::atomic<bool> g_stop{false};
void on_signal(int) {
  g_stop = true;
}

struct Args {
  bool interfaces = false;
  bool dlts = false;
  bool config = false;
  bool capture = false;
  bool filter_given = false;
  std::string interface;
  std::string fifo;
  std::string filter;
  std::string capture_file;
  std::string stream_index = "0";  // as `ddpscope replay --stream-index`
  std::string side = "client";
  std::string peer;
  std::string ddpscope;  // the ddpscope binary; default: beside this one, else PATH
  std::string live_interface = "lo";
  // As `ddpscope replay` takes them.
  std::string llp = "mpa";
  std::string sctp_stack = "auto";
  std::string sctp_udp_port;       // usrsctp: SCTP over UDP from this local port
  std::string sctp_peer_udp_port;  // ... to this one of the peer's (replay's default: 9899)
  std::string ignore;              // ULP fields not to compare, comma-separated
  bool all_streams = false;
  std::string fault;  // replay's --fault KIND:N[:STREAM]
};

void print_interfaces() {
  std::printf(
      "extcap {version=%s}{help=https://github.com/ddpscope/ddpscope}\n"
      "interface {value=%s}{display=ddpscope replay (a capture's iWARP side against a live "
      "peer)}\n",
      DDPSCOPE_VERSION, kInterface);
}

void print_dlts() {
  std::printf("dlt {number=%u}{name=EN10MB}{display=Ethernet (loopback)}\n", kLinkTypeEthernet);
}

void print_config() {
  std::printf(
      "arg {number=0}{call=--capture-file}{display=Capture to replay}{type=fileselect}"
      "{mustexist=true}{required=true}{tooltip=pcap or pcapng file holding the iWARP stream}\n"
      "arg {number=1}{call=--stream-index}{display=Stream}{type=unsigned}{default=0}"
      "{tooltip=Stream number in the capture (as ddpscope analyze numbers them)}\n"
      "arg {number=2}{call=--side}{display=Side to replay}{type=selector}"
      "{tooltip=client: connect to the peer; server: listen on the peer address}\n"
      "value {arg=2}{value=client}{display=client (initiator)}{default=true}\n"
      "value {arg=2}{value=server}{display=server (responder)}\n"
      "arg {number=3}{call=--peer}{display=Live peer (HOST:PORT)}{type=string}"
      "{required=true}{validation=^[^:]+:[0-9]+$}{tooltip=Address of the live peer}\n"
      "arg {number=4}{call=--ddpscope}{display=ddpscope binary}{type=fileselect}"
      "{tooltip=Default: beside ddpscope-extcap, else from PATH}\n"
      "arg {number=5}{call=--llp}{display=Lower layer}{type=selector}"
      "{tooltip=What carries DDP to the live peer}\n"
      "value {arg=5}{value=mpa}{display=MPA over TCP}{default=true}\n"
      "value {arg=5}{value=sctp}{display=SCTP (RFC 5043)}\n"
      "arg {number=6}{call=--sctp-stack}{display=SCTP stack}{type=selector}"
      "{tooltip=auto: the kernel's when it has SCTP, else usrsctp}\n"
      "value {arg=6}{value=auto}{display=auto}{default=true}\n"
      "value {arg=6}{value=kernel}{display=kernel (Linux SCTP)}\n"
      "value {arg=6}{value=user}{display=user (usrsctp)}\n"
      "arg {number=7}{call=--sctp-udp-port}{display=SCTP over UDP: local port}{type=unsigned}"
      "{range=1,65535}{tooltip=usrsctp: SCTP in UDP (RFC 6951) from this port; empty: native "
      "SCTP}\n"
      "arg {number=8}{call=--sctp-peer-udp-port}{display=SCTP over UDP: peer's port}"
      "{type=unsigned}{range=1,65535}{tooltip=Default 9899 (RFC 6951)}\n"
      "arg {number=9}{call=--ignore}{display=ULP fields not compared}{type=string}"
      "{tooltip=Comma-separated, besides the defaults (ddpscope replay --help lists them), e.g. "
      "nvme.sqhd,smb2.credits}\n"
      "arg {number=10}{call=--all-streams}{display=Replay every stream}{type=boolflag}"
      "{tooltip=Every stream of the capture, in captured order (a ULP session over several "
      "connections)}\n"
      "arg {number=11}{call=--fault}{display=Inject a fault}{type=string}"
      "{tooltip=KIND:N[:STREAM] into our message N: skip, corrupt, overrun or invalidate-key "
      "(ddpscope replay --help)}\n");
}

std::string default_ddpscope() {
  char self[PATH_MAX] = {};
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n > 0) {
    std::string dir(self, static_cast<std::size_t>(n));
    dir.resize(dir.rfind('/') + 1);
    if (::access((dir + "ddpscope").c_str(), X_OK) == 0) return dir + "ddpscope";
  }
  return "ddpscope";  // posix_spawnp searches PATH
}

bool split_peer(const std::string& peer, std::string& host, std::string& port) {
  const auto colon = peer.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == peer.size()) return false;
  host = peer.substr(0, colon);
  port = peer.substr(colon + 1);
  for (char c : port)
    if (c < '0' || c > '9') return false;
  const long p = std::strtol(port.c_str(), nullptr, 10);
  return p > 0 && p < 65536;
}

// The replay's stdout goes to our stderr: Wireshark shows it when the capture fails, and the
// FIFO carries nothing but the pcap stream.
pid_t start_replay(const Args& a, std::string& error) {
  std::vector<std::string> argv_s = {a.ddpscope.empty() ? default_ddpscope() : a.ddpscope,
                                     "replay",
                                     a.capture_file,
                                     "--stream-index",
                                     a.stream_index,
                                     "--side",
                                     a.side,
                                     "--peer",
                                     a.peer};
  if (a.all_streams) {  // in place of one stream
    argv_s.erase(argv_s.begin() + 3, argv_s.begin() + 5);
    argv_s.push_back("--all-streams");
  }
  if (a.llp != "mpa") {
    argv_s.insert(argv_s.end(), {"--llp", a.llp, "--sctp-stack", a.sctp_stack});
    if (!a.sctp_udp_port.empty()) argv_s.insert(argv_s.end(), {"--sctp-udp-port", a.sctp_udp_port});
    if (!a.sctp_peer_udp_port.empty())
      argv_s.insert(argv_s.end(), {"--sctp-peer-udp-port", a.sctp_peer_udp_port});
  }
  for (std::size_t at = 0; at < a.ignore.size();) {
    std::size_t comma = a.ignore.find(',', at);
    if (comma == std::string::npos) comma = a.ignore.size();
    if (comma > at) argv_s.insert(argv_s.end(), {"--ignore", a.ignore.substr(at, comma - at)});
    at = comma + 1;
  }
  if (!a.fault.empty()) argv_s.insert(argv_s.end(), {"--fault", a.fault});
  std::vector<char*> argv;
  for (auto& s : argv_s)
    argv.push_back(s.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, STDERR_FILENO, STDOUT_FILENO);
  pid_t pid = -1;
  const int rc = posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    error = argv_s[0] + ": " + std::strerror(rc);
    return -1;
  }
  return pid;
}

int run_capture(const Args& a) {
  using namespace ddpscope;
  std::string host, port;
  if (a.capture_file.empty() || a.peer.empty() || a.fifo.empty()) {
    std::fprintf(stderr, "ddpscope-extcap: --capture needs --fifo, --capture-file and --peer\n");
    return 2;
  }
  if (a.llp != "mpa" && a.llp != "sctp") {
    std::fprintf(stderr, "ddpscope-extcap: --llp is mpa or sctp, not %s\n", a.llp.c_str());
    return 2;
  }
  if (a.sctp_stack != "auto" && a.sctp_stack != "kernel" && a.sctp_stack != "user") {
    std::fprintf(stderr, "ddpscope-extcap: --sctp-stack is auto, kernel or user, not %s\n",
                 a.sctp_stack.c_str());
    return 2;
  }
  if (!split_peer(a.peer, host, port)) {
    std::fprintf(stderr, "ddpscope-extcap: --peer takes HOST:PORT, not %s\n", a.peer.c_str());
    return 2;
  }
  if (a.side != "client" && a.side != "server") {
    std::fprintf(stderr, "ddpscope-extcap: --side is client or server\n");
    return 2;
  }
  capture::LiveOptions options;
  options.interface = a.live_interface;
  // What the replay sends and receives: TCP or SCTP on the peer's port, or the UDP datagrams
  // that carry SCTP (RFC 6951).
  if (a.llp == "mpa")
    options.filter = "tcp port " + port;
  else if (!a.sctp_udp_port.empty())
    // Our UDP port, and the peer's when we connect to it (a server learns the client's).
    options.filter = "(udp port " + a.sctp_udp_port +
                     (a.side == "client"
                          ? " or udp port " + (a.sctp_peer_udp_port.empty() ? std::string("9899")
                                                                            : a.sctp_peer_udp_port)
                          : std::string()) +
                     ")";
  else
    options.filter = "sctp port " + port;
  if (!a.filter.empty()) options.filter += " and (" + a.filter + ")";
  options.write_path = a.fifo;
  std::string err;
  auto live = capture::LiveSession::open(options, err);
  if (!live) {
    std::fprintf(stderr, "ddpscope-extcap: %s\n", err.c_str());
    return 2;
  }
  const pid_t child = start_replay(a, err);
  if (child < 0) {
    std::fprintf(stderr, "ddpscope-extcap: %s\n", err.c_str());
    return 2;
  }
  // The replay's end stops the capture, once the kernel has handed over its last frames.
  std::atomic<bool> stop{false};
  int status = 0;
  std::thread waiter([&] {
    while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    stop = true;
  });
  std::thread forward([&] {
    while (!stop && !g_stop)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (g_stop) ::kill(child, SIGTERM);  // Wireshark stopped us: stop the replay too
    stop = true;
  });
  capture::LiveRunLimits limits;
  limits.stop = &stop;
  const bool ok = live->run([](const capture::Frame&) {}, {}, limits);
  stop = true;
  forward.join();
  if (!ok) ::kill(child, SIGTERM);
  waiter.join();
  if (!ok) std::fprintf(stderr, "ddpscope-extcap: %s\n", live->error().c_str());
  if (!live->close(err)) {
    std::fprintf(stderr, "ddpscope-extcap: %s\n", err.c_str());
    return 2;
  }
  const auto c = live->counters();
  std::fprintf(stderr, "ddpscope-extcap: %llu frames (%s)\n",
               static_cast<unsigned long long>(c.frames), live->capture().stats().c_str());
  if (!ok) return 2;
  if (g_stop) return 0;
  // The replay's own exit code: 0 no difference, 1 differences (both are results), else failed.
  if (!WIFEXITED(status) || WEXITSTATUS(status) > 1) {
    std::fprintf(stderr, "ddpscope-extcap: the replay failed (status %d)\n", status);
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  enum {
    kInterfaces = 1000,
    kVersion,
    kInterfaceOpt,
    kDlts,
    kConfig,
    kCapture,
    kFifo,
    kFilter,
    kCaptureFile,
    kStreamIndex,
    kStreamEndpoint,
    kSide,
    kPeer,
    kDdpscope,
    kLiveInterface,
    kLlp,
    kSctpStack,
    kSctpUdpPort,
    kSctpPeerUdpPort,
    kIgnore,
    kAllStreams,
    kFault,
    kIgnored,
  };
  static const option longopts[] = {
      {"extcap-interfaces", no_argument, nullptr, kInterfaces},
      {"extcap-version", optional_argument, nullptr, kVersion},
      {"extcap-interface", required_argument, nullptr, kInterfaceOpt},
      {"extcap-dlts", no_argument, nullptr, kDlts},
      {"extcap-config", no_argument, nullptr, kConfig},
      {"capture", no_argument, nullptr, kCapture},
      {"fifo", required_argument, nullptr, kFifo},
      {"extcap-capture-filter", required_argument, nullptr, kFilter},
      {"capture-file", required_argument, nullptr, kCaptureFile},
      {"stream-index", required_argument, nullptr, kStreamIndex},
      // Named so that getopt does not take it as an abbreviation of --stream-index: --stream is
      // an endpoint (IP:PORT) wherever ddpscope accepts it.
      {"stream", required_argument, nullptr, kStreamEndpoint},
      {"side", required_argument, nullptr, kSide},
      {"peer", required_argument, nullptr, kPeer},
      {"ddpscope", required_argument, nullptr, kDdpscope},
      {"live-interface", required_argument, nullptr, kLiveInterface},
      {"llp", required_argument, nullptr, kLlp},
      {"sctp-stack", required_argument, nullptr, kSctpStack},
      {"sctp-udp-port", required_argument, nullptr, kSctpUdpPort},
      {"sctp-peer-udp-port", required_argument, nullptr, kSctpPeerUdpPort},
      {"ignore", required_argument, nullptr, kIgnore},
      {"all-streams", no_argument, nullptr, kAllStreams},
      {"fault", required_argument, nullptr, kFault},
      // Passed by some Wireshark versions; nothing to do for them here.
      {"extcap-reload-option", required_argument, nullptr, kIgnored},
      {"extcap-control-in", required_argument, nullptr, kIgnored},
      {"extcap-control-out", required_argument, nullptr, kIgnored},
      {"debug", no_argument, nullptr, kIgnored},
      {"debug-file", required_argument, nullptr, kIgnored},
      {nullptr, 0, nullptr, 0},
  };
  Args a;
  int c;
  while ((c = getopt_long(argc, argv, "", longopts, nullptr)) != -1) {
    switch (c) {
      case kInterfaces:
        a.interfaces = true;
        break;
      case kInterfaceOpt:
        a.interface = optarg;
        break;
      case kDlts:
        a.dlts = true;
        break;
      case kConfig:
        a.config = true;
        break;
      case kCapture:
        a.capture = true;
        break;
      case kFifo:
        a.fifo = optarg;
        break;
      case kFilter:
        a.filter = optarg;
        a.filter_given = true;
        break;
      case kCaptureFile:
        a.capture_file = optarg;
        break;
      case kStreamIndex:
        a.stream_index = optarg;
        break;
      case kStreamEndpoint:
        std::fprintf(stderr,
                     "ddpscope-extcap: the stream's number is --stream-index N (--stream, in "
                     "ddpscope analyze, is an endpoint IP:PORT)\n");
        return 2;
      case kSide:
        a.side = optarg;
        break;
      case kPeer:
        a.peer = optarg;
        break;
      case kDdpscope:
        a.ddpscope = optarg;
        break;
      case kLiveInterface:
        a.live_interface = optarg;
        break;
      case kLlp:
        a.llp = optarg;
        break;
      case kSctpStack:
        a.sctp_stack = optarg;
        break;
      case kSctpUdpPort:
        a.sctp_udp_port = optarg;
        break;
      case kSctpPeerUdpPort:
        a.sctp_peer_udp_port = optarg;
        break;
      case kIgnore:
        a.ignore = optarg;
        break;
      case kAllStreams:
        a.all_streams = true;
        break;
      case kFault:
        a.fault = optarg;
        break;
      case kVersion:
      case kIgnored:
        break;
      default:
        std::fprintf(stderr,
                     "usage: ddpscope-extcap --extcap-interfaces | --extcap-interface %s "
                     "(--extcap-dlts | --extcap-config | --capture --fifo PATH "
                     "--capture-file FILE --peer HOST:PORT [--stream-index N | --all-streams] "
                     "[--side S] [--llp mpa|sctp] [--sctp-stack auto|kernel|user] "
                     "[--sctp-udp-port N] [--sctp-peer-udp-port N] [--ignore F,F...] "
                     "[--fault KIND:N[:STREAM]])\n",
                     kInterface);
        return 2;
    }
  }
  if (a.interfaces) {
    print_interfaces();
    return 0;
  }
  if (a.interface != kInterface) {
    std::fprintf(stderr, "ddpscope-extcap: unknown interface \"%s\" (only %s)\n",
                 a.interface.c_str(), kInterface);
    return 2;
  }
  if (a.dlts) {
    print_dlts();
    return 0;
  }
  if (a.config) {
    print_config();
    return 0;
  }
  if (!a.capture) {
    // Wireshark checks a capture filter by running us with it alone: a message means invalid.
    std::string err;
    if (a.filter_given && !ddpscope::capture::check_filter(a.filter, kLinkTypeEthernet, err)) {
      std::printf("%s\n", err.c_str());
      return 1;
    }
    return 0;
  }
  std::signal(SIGTERM, on_signal);
  std::signal(SIGINT, on_signal);
  std::signal(SIGPIPE, SIG_IGN);  // Wireshark closed the FIFO: a write error ends the capture
  return run_capture(a);
}
