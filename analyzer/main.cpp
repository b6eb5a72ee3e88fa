// SPDX-License-Identifier: GPL-2.0-or-later
// ddpscope: the analyzer CLI. A thin adapter: libpcap frames in, core's analysis, reports out.
#include <sched.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <thread>

#include "cmd_endpoint_commands.h"
#include "cmd_limits.h"
#include "ddpscope/analysis/analyzer.h"
#include "ddpscope/analysis/regions_file.h"
#include "ddpscope/capture/feed.h"
#include "ddpscope/esp/layer.h"
#include "ddpscope/findings/catalog.h"
#include "ddpscope/report/report.h"
#include "manual.h"
#ifdef DDPSCOPE_HAVE_SYNTH
#include "ddpscope/synth/synth.h"
#endif

namespace {

using namespace ddpscope;

// Exit codes: 0 no error finding, 1 an error finding, 2 usage or unreadable input.
constexpr int kExitClean = 0;
constexpr int kExitFindings = 1;
constexpr int kExitUsage = 2;

// Progress on stderr while a capture is read: only when stderr is a terminal (a pipe or a file
// gets none: scripts read it) and not --quiet. A percentage when the file's size is known (of
// the compressed file for gzip), else frames and octets read (standard input). The line is
// cleared before the report is written, so a report on the same terminal starts clean.
class Progress {
 public:
  Progress(bool quiet, std::uint64_t total)
      : total_(total), enabled_(!quiet && isatty(STDERR_FILENO) == 1) {}
  bool enabled() const { return enabled_; }
  void update(const capture::FeedProgress& at, std::uint64_t octets) {
    if (!enabled_) return;
    const auto now = std::chrono::steady_clock::now();
    if (shown_ && now - last_ < std::chrono::milliseconds(100)) return;
    last_ = now;
    char line[160];
    int n = 0;
    if (total_ > 0) {
      const int pct = static_cast<int>(100.0 * static_cast<double>(at.bytes_read) /
                                       static_cast<double>(total_));
      n = std::snprintf(line, sizeof line, "[%-25.*s] %3d%%  %llu frames", pct / 4,
                        "#########################", pct,
                        static_cast<unsigned long long>(at.frames));
    } else {
      n = std::snprintf(line, sizeof line, "%llu frames, %llu MiB read",
                        static_cast<unsigned long long>(at.frames),
                        static_cast<unsigned long long>(octets >> 20));
    }
    if (n < 0) return;
    const int len = std::min<int>(n, sizeof line - 1);
    // Pad over a longer previous line.
    std::fprintf(stderr, "\r%s%*s", line, std::max(0, width_ - len), "");
    std::fflush(stderr);
    width_ = std::max(width_, len);
    shown_ = true;
  }
  // Erases the line (the cursor back at its start). Before anything else is written.
  void clear() {
    if (!shown_) return;
    std::fprintf(stderr, "\r%*s\r", width_, "");
    std::fflush(stderr);
    shown_ = false;
    width_ = 0;
  }
  ~Progress() { clear(); }

 private:
  std::uint64_t total_;
  bool enabled_;
  bool shown_ = false;
  int width_ = 0;
  std::chrono::steady_clock::time_point last_{};
};

struct AnalyzeArgs {
  std::string file;
  bool json = false;
  std::string regions;
  std::string export_dir;
  std::vector<std::uint16_t> ports;
  std::vector<std::string> streams;
  std::string hint_crc = "auto";  // --mid-stream-crc
  bool hint_markers = false;
  bool no_advert = false;
  bool no_crc_check = false;
  std::optional<std::uint32_t> send_buffer;
  std::optional<std::size_t> retention_mib;  // default: Limits
  std::optional<std::size_t> window_mib;
  std::vector<std::string> limits;  // NAME=VALUE, applied after the two above
  std::string output;
  std::string filter;
  bool quiet = false;
  std::optional<unsigned> threads;  // default: the cores this process may run on
  std::string reader = "auto";      // --reader: auto, mapped, libpcap
  std::vector<std::string> esp_sa;  // Wireshark esp_sa files
  std::vector<std::string> xfrm;    // ip -s xfrm state output
  bool require_esp = false;
  std::string esp_policy = "integrity";
  std::string sink_profile;  // empty: RFC's, not named in the report
  bool timing = false;       // --timing: the timing model, in the report
  // `ddpscope timing`: the timing tables instead of the report.
  bool timing_tables = false;
  std::string timing_by = "stream";
  std::size_t timing_top = 10;
  bool timing_csv = false;
};

// --reader: which parser reads the capture file (capture::ReaderKind).
void add_reader_option(CLI::App* app, std::string& reader) {
  app->add_option("--reader", reader,
                  "auto (default): the file mapped, records read where they lie, libpcap for "
                  "what that reader does not take (stdin, pipes, old pcap versions); libpcap: "
                  "libpcap only, for comparison; mapped: never libpcap (env DDPSCOPE_READER)")
      ->check(CLI::IsMember({"auto", "mapped", "libpcap"}));
}

// The CPUs the process may run on (its affinity mask; a container's cpuset), at least 1.
unsigned cores_available() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

int analyze(const AnalyzeArgs& a) {
  AnalyzerOptions opt;
  if (a.retention_mib) opt.limits.payload_retention = *a.retention_mib << 20;
  if (a.window_mib) opt.limits.reassembly_window = *a.window_mib << 20;
  cli::apply_limits(a.limits, opt.limits);
  opt.decode_advertisements = !a.no_advert;
  opt.check_crc = !a.no_crc_check;
  opt.message_records = false;   // no report shows them (the GUI's MSN chart does)
  opt.placement_ranges = false;  // the reports show their counts only (the GUI shows each)
  // The reader below lives until the report is written, after finish(): the frames the feed
  // says stay valid (a mapped, uncompressed file's, fed where they lie) are referred to by TCP
  // reassembly's retransmission history rather than copied. Which frames do is the feed's to say,
  // frame by frame (not after a hand-over to libpcap mid-file, nor copies in a shard's batch).
  opt.frames_stay_valid = true;
  opt.send_buffer_size = a.send_buffer;
  if (!a.sink_profile.empty()) opt.sink_profile = sink_profile_by_name(a.sink_profile);
  if (a.timing || a.timing_tables) {
    TimingOptions to;
    if (a.timing_tables) to.top = a.timing_top;
    opt.timing = to;
  }
  for (auto p : a.ports)
    opt.hints.push_back(
        StreamHint{p, std::nullopt, cli::mid_stream_crc(a.hint_crc), a.hint_markers});
  for (const auto& text : a.streams) {
    // IP:PORT or [IPv6]:PORT
    const auto colon = text.rfind(':');
    std::optional<net::Address> addr;
    unsigned long port = 0;
    if (colon != std::string::npos && colon + 1 < text.size()) {
      addr = net::Address::parse(text.substr(0, colon));
      try {
        port = std::stoul(text.substr(colon + 1));
      } catch (...) {
        port = 0;
      }
    }
    if (!addr || port == 0 || port > 65535) {
      std::cerr << "ddpscope: --stream wants IP:PORT (one endpoint of the stream), not " << text
                << "\n";
      return kExitUsage;
    }
    opt.hints.push_back(StreamHint{std::nullopt,
                                   net::Endpoint{*addr, static_cast<std::uint16_t>(port)},
                                   cli::mid_stream_crc(a.hint_crc), a.hint_markers});
  }
  std::string err_export;
  RegionsFile regions;
  if (!a.regions.empty()) {
    std::string err;
    if (!load_regions_file(a.regions, regions, err)) {
      std::cerr << "ddpscope: " << err << "\n";
      return kExitUsage;
    }
    opt.protection_domains = regions.protection_domains;
  }
  if (!a.export_dir.empty() && !report::check_export_dir(a.export_dir, err_export)) {
    std::cerr << "ddpscope: --export-dir " << err_export << "\n";
    return kExitUsage;
  }
  // ESP keys: a bad or partial SA file is a usage error naming its line.
  // Always there: without keys it still reports ESP traffic it cannot analyse (esp.unknown-spi).
  std::unique_ptr<esp::EspLayer> esp_layer;
  esp::EspOptions eo;
  {
    eo.require_esp = a.require_esp;
    eo.require_confidentiality = a.esp_policy == "confidentiality";
    std::string err;
    for (const auto& f : a.esp_sa)
      if (!esp::load_esp_sa_file(f, eo.sas, err)) {
        std::cerr << "ddpscope: --esp-sa " << err << "\n";
        return kExitUsage;
      }
    for (const auto& f : a.xfrm)
      if (!esp::load_xfrm_file(f, eo.sas, err)) {
        std::cerr << "ddpscope: --xfrm " << err << "\n";
        return kExitUsage;
      }
    esp_layer = std::make_unique<esp::EspLayer>(eo);
    if (!esp_layer->error().empty()) {
      std::cerr << "ddpscope: " << esp_layer->error() << "\n";
      return kExitUsage;
    }
  }
  // --threads N: the reader on one thread; N == 2: the analysis on another; N >= 3: N - 1
  // engines (shards), each on its share of the streams, merged into the same report
  // (Analyzer's sharded constructor). A merge that cannot vouch for itself (streams of two
  // shards sharing an STag, a budget of all streams the shards may pass together: exact() is
  // false) is not reported: the capture is read again and analysed by one engine, beside the
  // reader. Not sharded: standard input (it cannot be read again), the timing model (one
  // engine's), --require-esp (its check reads the streams before the end of input).
  const unsigned threads = a.threads.value_or(cores_available());
  const bool can_reread = a.file != "-";
  unsigned shards = threads >= 3 && can_reread && !a.require_esp ? threads - 1 : 1;
  const bool trace = std::getenv("DDPSCOPE_SHARD_TRACE") != nullptr;  // why, on stderr
  std::unique_ptr<Analyzer> analyzer_ptr;
  std::unique_ptr<capture::CaptureReader> reader;
  std::uint64_t octets = 0;  // captured octets read, for input of unknown size
  std::optional<Progress> progress;
  for (;;) {
    analyzer_ptr = std::make_unique<Analyzer>(opt, shards);
    Analyzer& analyzer = *analyzer_ptr;
    if (!a.regions.empty()) analyzer.add_regions(regions.regions);
    std::string err;
    capture::ReaderKind reader_kind = capture::ReaderKind::automatic;
    capture::parse_reader_kind(a.reader, reader_kind);  // checked by the option
    reader = capture::CaptureReader::open(a.file, err, reader_kind);
    if (!reader) {
      std::cerr << "ddpscope: " << err << "\n";
      return kExitUsage;
    }
    if (!a.filter.empty() && !reader->set_filter(a.filter, err)) {
      std::cerr << "ddpscope: " << err << "\n";
      return kExitUsage;
    }
    progress.emplace(a.quiet, reader->file_size());
    capture::FeedOptions feed_options;
    feed_options.threads = threads;
    feed_options.layer = esp_layer.get();
    // The queue's cap in frames, for tests that want it to fill quickly (cli.threads).
    if (const char* q = std::getenv("DDPSCOPE_PIPELINE_FRAMES"))
      feed_options.pipeline_frames = std::max(1ul, std::strtoul(q, nullptr, 10));
    octets = 0;
    if (progress->enabled()) {
      feed_options.progress_every = 1024;
      feed_options.progress = [&](const capture::FeedProgress& at) {
        progress->update(at, octets);
        return true;
      };
      feed_options.on_frame = [&octets](const capture::Frame& f) { octets += f.data.size(); };
    }
    // Everything before damage in the file is analysed; the damage is a finding.
    const capture::FeedResult fed = capture::feed(*reader, analyzer, feed_options);
    if (trace && !fed.shard_cpu_s.empty()) {
      std::cerr << "ddpscope: CPU seconds: reader " << fed.reader_cpu_s << ", shards";
      for (double s : fed.shard_cpu_s)
        std::cerr << " " << s;
      std::cerr << "\n";
    }
    if (trace)
      std::cerr << "ddpscope: " << analyzer.shards() << " engine(s)"
                << (analyzer.unsharded_reason().empty() ? ""
                                                        : " (" + analyzer.unsharded_reason() + ")")
                << (analyzer.exact() ? "" : "; analysed again by one: " + analyzer.inexact_reason())
                << "\n";
    if (analyzer.exact()) break;
    // Again, from the start, with one engine (and a fresh ESP layer: it counts what it saw).
    shards = 1;
    progress->clear();
    esp_layer = std::make_unique<esp::EspLayer>(eo);
  }
  Analyzer& analyzer = *analyzer_ptr;
  progress->clear();
  const Model& m = analyzer.model();
  if (m.finding_counts[static_cast<std::size_t>(FindingId::esp_unknown_spi)])
    std::cerr << "ddpscope: ESP packets without a key were not analysed (esp.unknown-spi); pass "
                 "their SAs with --esp-sa FILE (Wireshark's esp_sa table) or --xfrm FILE (the "
                 "output of ip -s xfrm state)\n";
  if (m.frames_unsupported && !net::is_supported_link_type(reader->link_type())) {
    std::cerr << "ddpscope: " << m.frames_unsupported << " of " << m.frames
              << " frames have the unsupported link type "
              << capture::CaptureReader::link_type_name(reader->link_type())
              << "; ddpscope decodes Ethernet, Linux cooked (SLL, SLL2), raw IP and BSD loopback "
                 "(NULL, LOOP)\n";
  }
  std::ofstream file_out;
  std::ostream* out = &std::cout;
  if (!a.output.empty()) {
    file_out.open(a.output);
    if (!file_out) {
      std::cerr << "ddpscope: cannot write " << a.output << "\n";
      return kExitUsage;
    }
    out = &file_out;
  }
  const std::string name = std::filesystem::path(a.file).filename().string();
  errno = 0;
  if (a.timing_tables) {
    const auto by = a.timing_by == "ulp"    ? report::TimingBy::ulp
                    : a.timing_by == "stag" ? report::TimingBy::stag
                                            : report::TimingBy::stream;
    report::write_timing_tables(*out, m, *analyzer.timing(), by, a.timing_csv);
  } else if (a.json) {
    report::write_json(*out, m, name, analyzer.timing());
    *out << "\n";
  } else {
    report::write_text(*out, m, name, analyzer.timing());
  }
  out->flush();
  if (!*out) {
    // A report that did not reach its file is not a report (a full disk, a closed pipe).
    std::cerr << "ddpscope: cannot write the report to "
              << (a.output.empty() ? std::string("standard output") : a.output) << ": "
              << std::strerror(errno ? errno : EIO) << "\n";
    return kExitUsage;
  }
  std::string err;
  if (!a.export_dir.empty() && !report::export_shadow_buffers(m, a.export_dir, err)) {
    std::cerr << "ddpscope: " << err << "\n";
    return kExitUsage;
  }
  if (a.timing_tables) return kExitClean;  // tables, not a verdict
  // Errors past --limit max_findings count as the kept ones do.
  return m.severity_counts[static_cast<std::size_t>(Severity::error)] ? kExitFindings : kExitClean;
}

// `codes` (exact codes or dotted prefixes such as "ddp.tagged") narrow the list; none: all.
int list_findings(bool json, const std::vector<std::string>& codes) {
  std::vector<const FindingSpec*> specs;
  for (const auto& s : finding_catalog()) {
    bool wanted = codes.empty();
    for (const auto& c : codes)
      wanted = wanted || s.code == c || s.code.starts_with(c + ".");
    if (wanted) specs.push_back(&s);
  }
  for (const auto& c : codes) {
    bool known = false;
    for (const FindingSpec* s : specs)
      known = known || s->code == c || s->code.starts_with(c + ".");
    if (!known) {
      std::cerr << "ddpscope list-findings: no finding code \"" << c
                << "\"; `ddpscope list-findings` lists them\n";
      return kExitUsage;
    }
  }
  if (json) {
    nlohmann::json j = nlohmann::json::array();
    for (const FindingSpec* sp : specs) {
      const FindingSpec& s = *sp;
      nlohmann::json e{{"code", s.code},
                       {"severity", to_string(s.severity)},
                       {"layer", s.layer},
                       {"rfc", s.rfc},
                       {"summary", s.summary}};
      if (s.terminate)
        e["terminate"] = {{"layer", s.terminate->layer},
                          {"etype", s.terminate->etype},
                          {"code", s.terminate->code},
                          {"name", terminate_error_name(*s.terminate)}};
      // RFC 5043 defines no LLP Terminate codes: what the sink does instead (§11.3).
      if (s.llp_action != LlpAction::none) {
        e["llp_action"] = to_string(s.llp_action);
        e["terminate_note"] = "RFC 5043 defines no LLP Terminate codes";
      }
      j.push_back(e);
    }
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  for (const FindingSpec* sp : specs) {
    const FindingSpec& s = *sp;
    std::printf("%-34s %-8s %-18s %s", std::string(s.code).c_str(),
                std::string(to_string(s.severity)).c_str(), std::string(s.rfc).c_str(),
                std::string(s.summary).c_str());
    if (s.terminate) std::printf(" [Terminate %s]", terminate_error_name(*s.terminate).c_str());
    if (s.llp_action == LlpAction::session_terminate)
      std::printf(" [Session Terminate: RFC 5043 defines no LLP Terminate codes]");
    if (s.llp_action == LlpAction::abort)
      std::printf(" [SCTP ABORT: RFC 5043 defines no LLP Terminate codes]");
    std::printf("\n");
  }
  return 0;
}

// `ddpscope` without a command (or with a word that is none): the commands, one line each with
// the description `ddpscope help` shows, as git does; on stderr, for a usage error.
void print_commands(const CLI::App& app) {
  std::fprintf(stderr, "usage: ddpscope COMMAND [ARGS...]\n\ncommands:\n");
  for (const CLI::App* c : app.get_subcommands([](const CLI::App* s) {
         return !s->get_group().empty();  // hidden ones left out
       }))
    std::fprintf(stderr, "   %-15s %s\n", c->get_name().c_str(), c->get_description().c_str());
  std::fprintf(stderr,
               "\n`ddpscope help COMMAND` or `ddpscope COMMAND --help` shows a command's "
               "options.\n");
}

// --port, --stream and --mid-stream-crc: what analyze and timing take for streams whose MPA
// handshake the capture does not hold.
void add_mid_stream_options(CLI::App* sc, AnalyzeArgs& a) {
  sc->add_option("--port", a.ports,
                 "analyze streams on this TCP port even without an MPA handshake")
      ->check(CLI::Range(1, 65535).description("a TCP port, 1 to 65535"));
  sc->add_option("--stream", a.streams,
                 "analyze the stream with this endpoint (IP:PORT) even without an MPA handshake");
  cli::add_mid_stream_crc_option(sc, a.hint_crc);
}

// The command a command line runs: its first word, when that is a command other than help
// (commands come first: ddpscope has no options of its own but --help and --version). Only that
// command's options are built then: the option tree of every command is ~2.5 M instructions, a
// third of start-up (bench/RESULTS.md), and help, the manual page and the completion need all
// of it. Empty: build every command (also for a command missing from this list: it is then
// built with all the others, only slower).
std::string_view command_run(int argc, char** argv) {
  if (argc < 2) return {};
  const std::string_view word = argv[1];
  for (std::string_view name : {"analyze", "timing", "synth", "list-findings", "list-limits",
                                "endpoint", "rping", "live", "replay"})
    if (word == name) return name;
  return {};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"ddpscope: see and debug iWARP (MPA/DDP/RDMAP) traffic"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("ddpscope ") + DDPSCOPE_VERSION);
  const std::string_view only = command_run(argc, argv);
  const auto wants = [only](std::string_view name) { return only.empty() || only == name; };

  AnalyzeArgs aa;
  CLI::App* an = nullptr;
  if (wants("analyze")) {
    an = app.add_subcommand("analyze", "Analyze a pcap/pcapng capture");
    an->add_option("-r,FILE", aa.file,
                   "capture file: pcap or pcapng, gzip-compressed or not (.pcap.gz); - for stdin")
        ->required();
    an->add_option("-Y,--filter", aa.filter,
                   "BPF capture filter applied while reading (pcap-filter(7)); frames keep their "
                   "numbers");
    an->add_flag("--json", aa.json, "JSON report (schema in the README)");
    an->add_option("--regions", aa.regions, "JSON file of known STag regions");
    an->add_option("--export-dir", aa.export_dir, "write each shadow buffer and index.json here");
    add_mid_stream_options(an, aa);
    an->add_flag("--mid-stream-markers", aa.hint_markers,
                 "accepted, no effect: markers are located only from the MPA handshake");
    an->add_flag("--no-advertisements", aa.no_advert,
                 "do not learn regions from rping-style advertisements");
    an->add_flag("--no-crc-check", aa.no_crc_check, "do not verify MPA CRCs");
    an->add_option("--send-buffer", aa.send_buffer, "size of the receive buffers posted for Sends");
    cli::add_sink_profile_option(an, aa.sink_profile);
    an->add_option("--retain-mib", aa.retention_mib,
                   "MiB of placed payload kept for shadow buffers (0 = none)");
    an->add_option("--window-mib", aa.window_mib,
                   "MiB of out-of-order TCP data held per direction");
    cli::add_limit_option(an, aa.limits);
    an->add_option("-o,--output", aa.output, "write the report to this file");
    an->add_flag("-q,--quiet", aa.quiet,
                 "no progress line (shown on stderr only when it is a terminal)");
    an->add_option("--threads", aa.threads,
                   "threads: 1 reads, decodes and analyses on one; 2 reads and decodes on one "
                   "while another analyses; N >= 3 reads on one and analyses on N - 1, the "
                   "streams spread over them (the same report: streams sharing an STag are "
                   "analysed again on one); default: the cores available")
        ->check(CLI::Range(1u, 1024u));
    add_reader_option(an, aa.reader);

    an->add_option("--esp-sa", aa.esp_sa,
                   "decrypt IPsec ESP with the SAs of this file (Wireshark's esp_sa table, as in a "
                   "Wireshark profile); repeatable");
    an->add_option("--xfrm", aa.xfrm,
                   "decrypt IPsec ESP with the SAs of this file (the output of ip -s xfrm state); "
                   "repeatable");
    an->add_flag("--require-esp", aa.require_esp,
                 "an iWARP stream seen in the clear is a finding (esp.unprotected)");
    an->add_option("--esp-policy", aa.esp_policy,
                   "integrity (default): NULL encryption is allowed; confidentiality: it is an "
                   "esp.profile-violation")
        ->check(CLI::IsMember({"integrity", "confidentiality"}));
    an->add_flag(
        "--timing", aa.timing,
        "add operation latencies, throughput and stalls to the report (\"timing\" in JSON)");
  }

  AnalyzeArgs ta;
  ta.timing_tables = true;
  CLI::App* tm = nullptr;
  if (wants("timing")) {
    tm = app.add_subcommand(
        "timing",
        "Operation latencies, placed-octet throughput and stalls of a capture, as tables");
    tm->add_option("-r,FILE", ta.file, "capture file: pcap or pcapng, gzip-compressed or not")
        ->required();
    tm->add_option("--by", ta.timing_by,
                   "stream: operations per stream, kind and direction, then throughput (default); "
                   "ulp: per operation kind over every stream; stag: placed octets per STag")
        ->check(CLI::IsMember({"stream", "ulp", "stag"}));
    tm->add_option("--top", ta.timing_top, "slowest operations listed per row (default 10)")
        ->check(CLI::Range(std::size_t{1}, std::size_t{1000}));
    tm->add_flag("--csv", ta.timing_csv, "comma-separated values, one header line");
    tm->add_option("-Y,--filter", ta.filter, "BPF capture filter applied while reading");
    add_mid_stream_options(tm, ta);
    cli::add_limit_option(tm, ta.limits);
    tm->add_option("-o,--output", ta.output, "write the tables to this file");
    tm->add_flag("-q,--quiet", ta.quiet, "no progress line");
    tm->add_option("--threads", ta.threads, "threads (as analyze --threads)")
        ->check(CLI::Range(1u, 1024u));
    add_reader_option(tm, ta.reader);
  }

  std::string scenario, synth_out;
  CLI::App* sy = nullptr;
  if (wants("synth")) {
    sy = app.add_subcommand("synth", "Generate a synthetic capture from a scenario");
    sy->add_option("SCENARIO", scenario, "scenario JSON (docs/synth-scenarios.md)")->required();
    sy->add_option("-o,--output", synth_out, "output pcap")->required();
  }

  bool lf_json = false;
  std::vector<std::string> lf_codes;
  CLI::App* lf = nullptr;
  if (wants("list-findings")) {
    lf = app.add_subcommand("list-findings", "List every finding code the analyzer reports");
    lf->add_flag("--json", lf_json, "as JSON");
    lf->add_option("CODE", lf_codes,
                   "only these codes, or every code under a prefix (ddp.tagged); default: all");
  }

  CLI::App* ll = nullptr;
  if (wants("list-limits"))
    ll = app.add_subcommand("list-limits",
                            "List the engine's caps (--limit NAME=VALUE) with their defaults");

  std::function<int()> run_endpoint_command;  // endpoint, rping, live, replay
  cli::add_endpoint_commands(app, run_endpoint_command, wants);

  std::vector<std::string> help_topic;
  bool write_man = false, write_completion = false;
  CLI::App* hp = nullptr;
  if (only.empty()) {
    hp = app.add_subcommand("help", "Show the help of ddpscope or of one command (help CMD [SUB])");
    hp->add_option("COMMAND", help_topic, "a command, and a subcommand of it (endpoint listen)");
    // Hidden: the build writes ddpscope.1 and the bash completion from this App tree.
    hp->add_flag("--man", write_man, "write the manual page (troff)")->group("");
    hp->add_flag("--bash-completion", write_completion, "write the bash completion script")
        ->group("");
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (app.get_subcommands().empty() && (dynamic_cast<const CLI::RequiredError*>(&e) ||
                                          dynamic_cast<const CLI::ExtrasError*>(&e))) {
      // No command given, or a word that is not one.
      const auto extra = app.remaining();
      if (!extra.empty()) {
        const std::string& word = extra.front();
        if (word.starts_with('-'))
          std::cerr << "ddpscope: unknown option \"" << word << "\"\n\n";
        else
          std::cerr << "ddpscope: \"" << word << "\" is not a command\n\n";
      }
      print_commands(app);
      return kExitUsage;
    }
    const int rc = app.exit(e);
    return rc == 0 ? 0 : kExitUsage;
  }
  if (hp && hp->parsed() && (write_man || write_completion)) {
    if (write_man)
      cli::write_man_page(std::cout, app, DDPSCOPE_VERSION);
    else
      cli::write_bash_completion(std::cout, app);
    return kExitClean;
  }
  if (hp && hp->parsed()) {
    const CLI::App* topic = &app;
    for (const auto& name : help_topic) {
      const CLI::App* sub = nullptr;
      for (const CLI::App* c : topic->get_subcommands([](const CLI::App*) { return true; }))
        if (c->get_name() == name) sub = c;
      if (sub == nullptr || sub == hp) {
        std::cerr << "ddpscope help: no command \"" << name << "\"; `ddpscope help` lists them\n";
        return kExitUsage;
      }
      topic = sub;
    }
    std::string path = "ddpscope";
    for (const auto& name : help_topic)
      path += " " + name;
    // The formatter directly: App::help() would show the last parsed subcommand (help itself).
    std::cout << topic->get_formatter()->make_help(topic, path, CLI::AppFormatMode::Normal);
    return kExitClean;
  }
  if (run_endpoint_command) return run_endpoint_command();
  if (an && an->parsed()) return analyze(aa);
  if (tm && tm->parsed()) return analyze(ta);
  if (lf && lf->parsed()) return list_findings(lf_json, lf_codes);
  if (ll && ll->parsed()) return cli::list_limits();
  if (sy && sy->parsed()) {
#ifdef DDPSCOPE_HAVE_SYNTH
    synth::SynthResult result;
    std::string err;
    if (!synth::synthesize(scenario, synth_out, result, err)) {
      std::cerr << "ddpscope synth: " << err << "\n";
      return kExitUsage;
    }
    std::cout << "wrote " << synth_out << " (" << result.frames << " frames, "
              << result.expected.size() << " expected findings in " << result.expected_path
              << ")\n";
    return 0;
#else
    std::cerr << "ddpscope synth: this build has no synthetic generator\n";
    return kExitUsage;
#endif
  }
  return kExitUsage;
}
