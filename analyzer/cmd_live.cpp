// SPDX-License-Identifier: GPL-2.0-or-later
// `ddpscope live -i IFACE [-f BPF] [--write FILE]`: live capture through libpcap, analysis as
// packets arrive, findings printed as they happen, optional saving of the capture.
#include <CLI/CLI.hpp>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <set>
#include <vector>

#include "cmd_limits.h"
#include "ddpscope/analysis/analyzer.h"
#include "ddpscope/capture/feed.h"
#include "ddpscope/capture/live_capture.h"
#include "ddpscope/report/report.h"

namespace ddpscope::cli {
namespace {

std::atomic<bool> g_stop{false};
void on_signal(int) {
  g_stop = true;
}

struct LiveArgs {
  std::string iface;
  std::string bpf;
  std::string write;
  double duration_s = 0;
  std::uint64_t max_frames = 0;
  bool quiet = false;
  std::vector<std::uint16_t> ports;  // mid-stream hints, as `analyze --port`
  std::string hint_crc = "auto";     // --mid-stream-crc
  bool hint_markers = false;
  std::vector<std::string> limits;  // --limit NAME=VALUE
  bool list = false;                // -D: list the interfaces instead
  std::string sink_profile;         // --sink-profile
};

// tshark -D's form: "1. lo (Loopback)".
int list_live_interfaces() {
  std::string error;
  const auto ifs = capture::list_interfaces(error);
  if (!error.empty()) {
    std::cerr << "live: " << error << "\n";
    return 2;
  }
  std::size_t i = 0;
  for (const auto& f : ifs) {
    std::printf("%zu. %s", ++i, f.name.c_str());
    if (!f.description.empty())
      std::printf(" (%s)", f.description.c_str());
    else if (f.loopback)
      std::printf(" (Loopback)");
    if (!f.up) std::printf(" [down]");
    std::printf("\n");
  }
  return 0;
}

// Prints each finding once, as the engine raises it.
class Printer final : public AnalysisObserver {
 public:
  explicit Printer(const Analyzer& a) : a_(a) {}
  void on_pdu(const PduEvent& pdu) override {
    for (std::size_t i : pdu.findings)
      print(i);
  }
  void on_finding(std::size_t i) override { print(i); }

 private:
  void print(std::size_t i) {
    if (!printed_.insert(i).second) return;
    report::write_finding_line(std::cout, a_.model(), a_.model().findings[i]);
    std::cout.flush();
  }
  const Analyzer& a_;
  std::set<std::size_t> printed_;
};

int run_live(const LiveArgs& a) {
  std::string err;
  capture::LiveOptions options;
  options.interface = a.iface;
  options.filter = a.bpf;
  options.write_path = a.write;
  auto live = capture::LiveSession::open(options, err);
  if (!live) {
    std::cerr << "ddpscope live: " << err << "\n";
    return 2;
  }
  AnalyzerOptions aopt;
  apply_limits(a.limits, aopt.limits);
  if (!a.sink_profile.empty()) aopt.sink_profile = sink_profile_by_name(a.sink_profile);
  for (std::uint16_t p : a.ports)
    aopt.hints.push_back(
        StreamHint{p, std::nullopt, cli::mid_stream_crc(a.hint_crc), a.hint_markers});
  Analyzer analyzer(aopt);
  Printer printer(analyzer);
  analyzer.set_observer(&printer);
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  if (!a.quiet) {
    std::fprintf(stderr, "capturing on %s%s%s\n", a.iface.c_str(), a.bpf.empty() ? "" : ", filter ",
                 a.bpf.c_str());
  }
  capture::LiveRunLimits limits;
  limits.stop = &g_stop;
  limits.max_frames = a.max_frames;
  limits.duration_ns = static_cast<std::int64_t>(a.duration_s * 1e9);
  const bool ok =
      live->run([&](const capture::Frame& f) { capture::feed_frame(analyzer, f); }, {}, limits);
  if (!ok) std::cerr << "ddpscope live: " << live->error() << "\n";
  analyzer.finish();
  if (!live->close(err)) {
    std::cerr << "ddpscope live: " << err << "\n";
    return 2;
  }
  const Model& m = analyzer.model();
  if (!a.quiet)
    std::fprintf(stderr, "%llu frames, %zu streams, %zu findings (%s)\n",
                 static_cast<unsigned long long>(m.frames), m.streams.size(), m.findings.size(),
                 live->capture().stats().c_str());
  if (!ok) return 2;
  // Errors past --limit max_findings count as the printed ones do.
  return m.severity_counts[static_cast<std::size_t>(Severity::error)] ? 1 : 0;
}

}  // namespace

void add_live_command(CLI::App& app, std::function<int()>& run) {
  auto a = std::make_shared<LiveArgs>();
  auto* sc = app.add_subcommand("live", "Capture live, analyze as packets arrive");
  sc->add_option("-i,--interface", a->iface, "interface (e.g. lo, eth0); -D lists them");
  sc->add_flag("-D,--list-interfaces", a->list, "list the interfaces to capture on, as tshark -D");
  sc->add_option("-f,--filter", a->bpf, "BPF capture filter");
  sc->add_option("-w,--write", a->write, "also save the capture (pcap)");
  sc->add_option("--duration", a->duration_s, "stop after this many seconds");
  sc->add_option("-c,--count", a->max_frames, "stop after this many frames");
  sc->add_flag("-q,--quiet", a->quiet, "no summary on stderr");
  sc->add_option("--port", a->ports,
                 "analyse TCP streams on this port even without an MPA handshake (repeatable)")
      ->check(CLI::Range(1, 65535).description("a TCP port, 1 to 65535"));
  add_mid_stream_crc_option(sc, a->hint_crc);
  sc->add_flag("--mid-stream-markers", a->hint_markers,
               "accepted, no effect: markers are located only from the MPA handshake");
  add_limit_option(sc, a->limits);
  add_sink_profile_option(sc, a->sink_profile);
  sc->callback([a, &run] {
    run = [a] {
      if (a->list) return list_live_interfaces();
      if (a->iface.empty()) {
        std::cerr << "live: -i INTERFACE is required (-D lists them)\n";
        return 2;
      }
      return run_live(*a);
    };
  });
}

}  // namespace ddpscope::cli
