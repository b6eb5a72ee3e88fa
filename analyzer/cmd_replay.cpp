// SPDX-License-Identifier: GPL-2.0-or-later
// `ddpscope replay CAPTURE --stream-index N --side client|server --peer HOST:PORT`: replays one
// side of a captured stream against a live peer over the userspace endpoint, on either LLP
// (--llp mpa|sctp, whichever the capture used: the DDP/RDMAP plan does not depend on it). The
// connection setup is repeated with the captured parameters (an MPA Request/Reply becomes SCTP's
// Session Initiate/Accept and back, replay_session_config); that side's messages are re-sent (Sends
// verbatim; RDMA Writes, Read Requests and atomics with the peer's STags and TOs remapped through
// its advertisements, compared with the captured peer's at the same message positions); the live
// peer's Read Requests are answered from regions registered under the captured STags and
// filled with the captured data. Each message the live peer sends is compared with the
// capture's, in order: sequence, sizes, data, Terminates.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>

#include "cmd_endpoint_options.h"
#include "ddpscope/analysis/analyzer.h"
#include "ddpscope/capture/feed.h"
#include "ddpscope/endpoint/endpoint.h"
#include "ddpscope/session/replay_plan.h"

namespace ddpscope::cli {
namespace {

using session::Event;
using session::EventKind;

struct ReplayArgs {
  std::string capture;
  std::vector<std::uint32_t> streams;
  bool all_streams = false;
  std::string side = "client";
  std::string peer;
  int wait_ms = 3000;
  int timeout_s = 60;
  int start_delay_ms = kDefaultStartDelayMs;  // as the client, before the first message
  bool verbose = false;
  bool json = false;
  std::vector<std::string> ignore;
  std::string fault;  // tests only: "skip:N" or "corrupt:N" (our script message N)
  LlpFlags llp;
  session::Llp target_llp() const {
    return llp.llp == "sctp" ? session::Llp::sctp : session::Llp::mpa;
  }
};

// Everything one stream's replay found, for the text lines and --json.
struct StreamResult {
  std::uint32_t stream = 0;
  std::string ulp;
  std::size_t messages = 0;
  nlohmann::json differences = nlohmann::json::array();
  nlohmann::json timing = nlohmann::json::array();
  nlohmann::json skipped = nlohmann::json::array();
  nlohmann::json setup = nlohmann::json::array();  // what of the captured setup changed LLP
  std::optional<std::uint16_t> nvme_cntlid;        // what the live controller assigned
  bool connected = false;
};

class Reporter {
 public:
  explicit Reporter(bool json) : json_(json) {}
  // A line as `replay` prints it; kept for --json with its fields (and the captured message's
  // first frame, `frame`, for a host that shows the capture beside it).
  void diff(StreamResult& r, std::size_t index, const std::string& arrow, const std::string& what,
            const std::string& why, std::uint64_t frame = 0) {
    std::string line = index ? "DIFF #" + std::to_string(index) + " " + arrow : "DIFF " + arrow;
    if (!what.empty())
      line += ": expected " + what + ";";
    else
      line += ":";
    line += " " + why;
    print(line);
    nlohmann::json j = {{"direction", arrow}, {"expected", what}, {"difference", why}};
    if (index) j["message"] = index;
    if (frame) j["frame"] = frame;
    r.differences.push_back(std::move(j));
  }
  void print(const std::string& line) {
    if (!json_) std::printf("%s\n", line.c_str());
  }
  bool json() const { return json_; }

 private:
  bool json_;
};

// Fault injection for the tests: our script message N (1-based, as DIFF numbers it) is not
// sent ("skip") or goes with its first octet flipped ("corrupt").
struct Fault {
  std::string kind;
  std::size_t index = 0;
};

int replay_stream(const ReplayArgs& a, const Model& model, std::uint32_t stream_index,
                  std::vector<session::CapturedMessage> messages, const Fault& fault,
                  bool retry_connect, std::optional<std::uint16_t> carried_cntlid, Reporter& out,
                  StreamResult& result) {
  result.stream = stream_index;
  const StreamModel& sm = model.streams[stream_index];
  const bool client = a.side == "client";
  const auto side = client ? session::ReplaySide::client : session::ReplaySide::server;
  std::string err;
  // 2. The handshake parameters of our side.
  const session::Llp llp = a.target_llp();
  auto cfg = session::replay_session_config(sm, side, llp);
  if (!cfg) {
    const bool sctp = sm.llp == Llp::sctp;
    std::cerr << "replay: stream " << stream_index << " has no "
              << (sctp ? (client ? "Session Initiate" : "Session Accept")
                       : (client ? "MPA Request" : "MPA Reply"))
              << " in the capture: no connection setup to repeat\n";
    return 2;
  }
  // Printed once connected (a listening replay's first line says it waits).
  const std::vector<std::string> notes = session::replay_setup_notes(sm, side, llp);
  for (const std::string& note : notes)
    result.setup.push_back(note);
  std::string host;
  std::uint16_t port = 0;
  if (!endpoint::split_host_port(a.peer, host, port)) {
    std::cerr << "replay: --peer wants HOST:PORT\n";
    return 2;
  }
  session::MemoryTable mem(endpoint::process_memory_limits());
  cfg->pd = mem.alloc_pd();

  // 3. The plan: our regions under the captured STags, filled with the captured data, each
  // registered when the script first names it.
  auto plan = session::make_replay_plan(sm, side, std::move(messages), err);
  if (!plan) {
    std::cerr << "replay: " << err << "\n";
    return 2;
  }
  for (const std::string& f : a.ignore)
    plan->ignored.push_back(f);
  plan->nvme_cntlid = carried_cntlid;
  if (carried_cntlid && plan->ulp == "nvme-rdma")
    out.print("NVMe-oF controller ID " + hex_number(*carried_cntlid) +
              " (the live controller's) goes into this stream's Connect");
  result.ulp = plan->ulp;
  result.messages = plan->script.size();
  std::map<std::uint32_t, std::uint32_t> registered;  // STag index -> STag
  const auto register_from = [&](std::size_t i) {
    for (auto& [stag, r] : plan->regions) {
      if (r.first_use != i) continue;
      // The same index under a new key: the upper layer registered the buffer again.
      if (auto it = registered.find(stag >> 8); it != registered.end()) mem.deregister(it->second);
      if (!mem.register_region_at(stag, cfg->pd, r.mem, r.base, session::access::all)) {
        std::cerr << "replay: cannot register STag " << hex_number(stag) << "\n";
        return false;
      }
      registered[stag >> 8] = stag;
    }
    return true;
  };
  const std::vector<session::CapturedMessage>& script = plan->script;
  const int us = plan->us();

  // 4. The live connection.
  endpoint::Loop loop(mem);
  if (!apply_llp_flags(loop, a.llp, "replay")) return 2;
  std::vector<Bytes> recvs(64, Bytes(plan->max_send));
  std::deque<session::LiveMessage> live;
  endpoint::Connection* conn = nullptr;
  bool closed = false;
  bool connect_failed = false;
  // Read Requests we issued, by wr_id: where the data lands.
  struct PendingRead {
    std::uint32_t stag;
    std::uint64_t to;
    std::uint32_t size;
  };
  std::vector<PendingRead> reads;
  loop.on_connection = [&](endpoint::Connection& c) {
    if (conn) {
      c.abort();
      return;
    }
    conn = &c;
    for (std::size_t i = 0; i < recvs.size(); ++i)
      c.session().post_recv(recvs[i], i);
  };
  loop.on_event = [&](endpoint::Connection& c, const Event& e) {
    session::LiveMessage m;
    m.at_ns = endpoint::now_ns();
    m.opcode = e.opcode;
    m.length = e.length;
    switch (e.kind) {
      case EventKind::recv_completed:
        m.data.assign(recvs[e.wr_id].begin(), recvs[e.wr_id].begin() + e.length);
        c.session().post_recv(recvs[e.wr_id], e.wr_id);
        break;
      case EventKind::write_placed:
        m.stag = e.stag;
        m.to = e.to;
        m.data = plan->region_bytes(e.stag, e.to, e.length);
        break;
      case EventKind::read_requested:
        m.stag = e.stag;
        m.to = e.to;
        break;
      case EventKind::read_completed: {
        const PendingRead& r = reads[e.wr_id];
        m.opcode = static_cast<std::uint8_t>(wire::Opcode::read_response);
        m.data = plan->region_bytes(r.stag, r.to, r.size);
        break;
      }
      case EventKind::immediate_received:
      case EventKind::atomic_completed:
        m.value = e.value;
        break;
      case EventKind::terminate_received:
        m.opcode = static_cast<std::uint8_t>(wire::Opcode::terminate);
        m.terminate = e.terminate;
        break;
      case EventKind::closed:
      case EventKind::error:
      case EventKind::rejected:
        if (e.kind != EventKind::closed) {
          if (retry_connect && e.kind == EventKind::error &&
              c.session().state() != session::Session::State::established) {
            connect_failed = true;
          } else {
            out.print("live: " + std::string(to_string(e.kind)) + ": " + e.message);
          }
        }
        closed = true;
        return;
      case EventKind::terminate_sent:
        out.print("live: we sent Terminate " + e.message);
        closed = true;
        return;
      default:
        return;
    }
    plan->observe_live(m);
    live.push_back(std::move(m));
  };
  const auto established = [&] {
    return closed || (conn && conn->session().state() == session::Session::State::established);
  };
  if (client) {
    // A later stream of a whole session: the live server may still be going back to listen.
    for (int attempt = 0;; ++attempt) {
      if (!loop.connect(host, port, *cfg, err)) {
        std::cerr << "replay: " << err << "\n";
        return 2;
      }
      loop.run_until(established, a.timeout_s * 1000);
      if (!connect_failed || attempt >= 50) break;
      conn = nullptr;
      closed = connect_failed = false;
      loop.run_until([] { return false; }, 100);
    }
  } else {
    if (!loop.listen(host, port, *cfg, err)) {
      std::cerr << "replay: " << err << "\n";
      return 2;
    }
    if (!out.json()) {
      std::printf("replay: waiting for the live client on %s:%u\n", host.c_str(),
                  loop.listen_port());
      std::fflush(stdout);
    }
    loop.run_until(established, a.timeout_s * 1000);
    // One connection per stream: the client's next one (a whole session's next stream) must
    // not land in this listener's backlog while this stream runs. TCP resets it when the
    // listener closes and the client retries; usrsctp leaves such an association hanging.
    loop.stop_listening();
  }
  if (!established() || closed) {
    out.diff(result, 0, "handshake", "",
             llp == session::Llp::sctp
                 ? "the live peer did not accept the DDP Stream session (RFC 5043 §6)"
                 : "the live peer did not reach Full Operation Phase");
    return 1;
  }
  result.connected = true;
  const auto& neg = conn->session().negotiated();
  {
    char line[160];
    if (llp == session::Llp::sctp)
      std::snprintf(line, sizeof line, "connected over %s: peer-to-peer %s, RTR %s",
                    loop.transport_name().c_str(), neg.peer_to_peer ? "yes" : "no",
                    std::string(session::to_string(neg.rtr)).c_str());
    else
      std::snprintf(line, sizeof line, "connected: rev %u, CRC %s, peer-to-peer %s, RTR %s",
                    neg.revision, neg.crc ? "on" : "off", neg.peer_to_peer ? "yes" : "no",
                    std::string(session::to_string(neg.rtr)).c_str());
    out.print(line);
    for (const std::string& note : notes)
      out.print("setup: " + note);
    if (!plan->ulp.empty())
      out.print("ULP: " + plan->ulp + " (stream " + std::to_string(stream_index) + ")");
  }
  if (llp == session::Llp::mpa && sm.revision && neg.revision != *sm.revision)
    out.diff(
        result, 0, "handshake", "",
        "revision " + std::to_string(neg.revision) + ", captured " + std::to_string(*sm.revision));
  if (client) loop.run_until([&] { return closed; }, a.start_delay_ms);

  // 5. Walk the captured messages in order.
  int slow = 0;
  std::size_t index = 0;
  // Timing: the delay from the previous message (either side) to each peer message, captured
  // vs live. Reported when the live peer is much slower; not counted as a difference.
  std::int64_t cap_prev = script.empty() ? 0 : script.front().ts_ns;
  std::int64_t live_prev = endpoint::now_ns();
  auto& s = conn->session();
  for (const session::CapturedMessage& m : script) {
    const std::size_t at = index++;
    if (!register_from(at)) return 2;
    if (plan->ours_to_send(m)) plan->apply_fills(index);
    const char* arrow = m.direction == 0 ? "client->server" : "server->client";
    if (m.direction == us) {
      if (!plan->ours_to_send(m)) continue;  // our session answers the live peer's requests
      // A transfer for a command the live peer never sent has no live buffer to go to.
      if (const std::string cmd = plan->blocked_by(at); !cmd.empty()) {
        out.print("SKIP #" + std::to_string(index) + " " + arrow + " " + plan->label(at) + ": " +
                  cmd + " was not sent by the live peer");
        result.skipped.push_back({{"message", index}, {"label", plan->label(at)}});
        continue;
      }
      plan->observe_sent(at);
      if (fault.kind == "skip" && fault.index == index) continue;
      Bytes data = wire::opcode_is_send_family(m.opcode) ? plan->outgoing(at) : m.data;
      if (fault.kind == "corrupt" && fault.index == index && !data.empty()) data[0] ^= 0xFF;
      const auto is = [&](wire::Opcode o) { return m.opcode == static_cast<std::uint8_t>(o); };
      session::PostStatus st = session::PostStatus::ok;
      if (wire::opcode_is_send_family(m.opcode)) {
        session::Session::SendOptions so;
        so.solicited = is(wire::Opcode::send_se) || is(wire::Opcode::send_se_invalidate);
        if (wire::opcode_invalidates(m.opcode))
          so.invalidate_stag = plan->live_stag_to(m.rsvd_ulp1, 0).first;
        st = s.send(data, so);
      } else if (is(wire::Opcode::rdma_write)) {
        auto [stag, to] = plan->live_stag_to(m.stag, m.to);
        st = s.rdma_write(data, stag, to);
      } else if (m.read_request) {
        const wire::ReadRequest& rr = *m.read_request;
        auto [stag, to] = plan->live_stag_to(rr.source_stag, rr.source_to);
        reads.push_back({rr.sink_stag, rr.sink_to, rr.size});
        st = s.rdma_read(rr.sink_stag, rr.sink_to, rr.size, stag, to, reads.size() - 1);
      } else if (m.immediate) {
        st = s.send_immediate(*m.immediate, is(wire::Opcode::immediate_data_se));
      } else if (m.atomic_request) {
        const wire::AtomicRequest& ar = *m.atomic_request;
        auto [stag, to] = plan->live_stag_to(ar.remote_stag, ar.remote_to);
        st = ar.atomic_opcode == static_cast<std::uint8_t>(wire::AtomicOp::fetch_add)
                 ? s.atomic_fetch_add(stag, to, ar.add_swap_data)
                 : s.atomic_compare_swap(stag, to, ar.compare_data, ar.add_swap_data);
      } else if (m.terminate) {
        s.terminate(*m.terminate);
      }
      if (a.verbose || st != session::PostStatus::ok)
        out.print(
            "#" + std::to_string(index) + " " + arrow + " " + plan->label(at) + ": sent" +
            (st == session::PostStatus::ok ? "" : " FAILED (" + std::string(to_string(st)) + ")"));
      loop.flush();
      cap_prev = m.ts_ns;
      live_prev = endpoint::now_ns();
      continue;
    }
    // A message of the peer: wait for the live one that stands for it (by the ULP's identity
    // where it has one) and compare.
    std::optional<std::size_t> k;
    loop.run_until([&] { return (k = plan->pick(at, live)) || closed; }, a.wait_ms);
    if (!k) k = plan->pick(at, live);
    if (!k) {
      const std::string lost =
          plan->ulp_info[at].key ? plan->missing(at) : "the live peer sent nothing";
      out.diff(result, index, arrow, plan->label(at), lost + (closed ? " (connection ended)" : ""),
               m.frame);
      if (closed && !plan->ulp_info[at].key) break;
      continue;
    }
    session::LiveMessage l = std::move(live[*k]);
    live.erase(live.begin() + static_cast<std::ptrdiff_t>(*k));
    const std::int64_t cap_delay = m.ts_ns - cap_prev;
    const std::int64_t live_delay = l.at_ns - live_prev;
    cap_prev = m.ts_ns;
    live_prev = l.at_ns;
    if (live_delay > 10 * cap_delay + 200'000'000) {
      char line[256];
      std::snprintf(line, sizeof line, "TIMING #%zu %s: %s after %.1f ms, captured after %.1f ms",
                    index, arrow, plan->label(at).c_str(), static_cast<double>(live_delay) / 1e6,
                    static_cast<double>(cap_delay) / 1e6);
      out.print(line);
      result.timing.push_back({{"message", index},
                               {"live_ms", static_cast<double>(live_delay) / 1e6},
                               {"captured_ms", static_cast<double>(cap_delay) / 1e6}});
      ++slow;
    }
    const std::string why = plan->compare(at, l);
    if (why.empty()) {
      if (a.verbose)
        out.print("#" + std::to_string(index) + " " + arrow + " " + plan->label(at) + ": same");
    } else {
      out.diff(result, index, arrow, plan->label(at), why, m.frame);
    }
  }
  // Anything more the live peer sends is a difference too.
  loop.run_until([&] { return !live.empty() || closed; }, 300);
  for (const auto& l : live)
    out.diff(result, 0, "extra", "", plan->extra(l));
  result.nvme_cntlid = plan->learned_cntlid;
  if (!closed) {
    s.close();
    loop.run_until([&] { return conn->done() || closed; }, 1000);
  }
  const std::size_t diffs = result.differences.size();
  std::string tail = std::to_string(script.size()) + " captured messages replayed, " +
                     std::to_string(diffs) + " difference" + (diffs == 1 ? "" : "s");
  if (slow) tail += ", " + std::to_string(slow) + " much slower than captured";
  out.print(tail);
  return diffs ? 1 : 0;
}

int run_replay(const ReplayArgs& a) {
  // 1. The capture, once: every stream's messages are assembled in the one pass.
  std::string err;
  auto reader = capture::CaptureReader::open(a.capture, err);
  if (!reader) {
    std::cerr << "replay: " << err << "\n";
    return 2;
  }
  Fault fault;
  if (!a.fault.empty()) {
    const auto colon = a.fault.find(':');
    fault.kind = a.fault.substr(0, colon);
    if (colon != std::string::npos)
      fault.index = std::strtoul(a.fault.c_str() + colon + 1, nullptr, 10);
  }
  Analyzer analyzer;
  // The assemblers watch every stream asked for; --all-streams: all, found after the pass.
  std::vector<std::uint32_t> wanted = a.streams;
  if (wanted.empty() && !a.all_streams) wanted.push_back(0);
  struct Assemblers final : AnalysisObserver {
    std::map<std::uint32_t, std::unique_ptr<session::MessageAssembler>> by_stream;
    bool all = false;
    void on_pdu(const PduEvent& p) override {
      auto it = by_stream.find(p.stream);
      if (it == by_stream.end()) {
        if (!all) return;
        it = by_stream.emplace(p.stream, std::make_unique<session::MessageAssembler>(p.stream))
                 .first;
        it->second->set_frame_time(now);
      }
      it->second->on_pdu(p);
    }
    std::int64_t now = 0;
  } assemblers;
  assemblers.all = a.all_streams;
  for (std::uint32_t i : wanted)
    assemblers.by_stream.emplace(i, std::make_unique<session::MessageAssembler>(i));
  analyzer.set_observer(&assemblers);
  capture::FeedOptions feed_options;
  feed_options.on_frame = [&assemblers](const capture::Frame& f) {
    assemblers.now = f.ts_ns;
    for (auto& [i, asm_] : assemblers.by_stream)
      asm_->set_frame_time(f.ts_ns);
  };
  const capture::FeedResult fed = capture::feed(*reader, analyzer, feed_options);
  if (!fed.error.empty())
    std::cerr << "replay: " << fed.error << ": replaying the " << fed.last_frame
              << " frames before it\n";
  const Model& model = analyzer.model();
  if (a.all_streams) {
    wanted.clear();
    for (const StreamModel& sm : model.streams)
      if (session::captured_setup(sm, session::ReplaySide::client) ||
          session::captured_setup(sm, session::ReplaySide::server))
        wanted.push_back(sm.id);
  }
  for (std::uint32_t i : wanted) {
    if (i >= model.streams.size()) {
      std::cerr << "replay: the capture has " << model.streams.size() << " streams\n";
      return 2;
    }
  }
  // A whole session goes in captured order: by the stream's first frame.
  std::sort(wanted.begin(), wanted.end(), [&](std::uint32_t x, std::uint32_t y) {
    return model.streams[x].first_frame < model.streams[y].first_frame;
  });
  wanted.erase(std::unique(wanted.begin(), wanted.end()), wanted.end());
  Reporter out(a.json);
  nlohmann::json streams = nlohmann::json::array();
  int rc = 0;
  std::size_t total = 0;
  std::optional<std::uint16_t> cntlid;
  for (std::size_t n = 0; n < wanted.size(); ++n) {
    const std::uint32_t i = wanted[n];
    if (wanted.size() > 1) out.print("== stream " + std::to_string(i));
    StreamResult result;
    std::vector<session::CapturedMessage> messages;
    if (auto it = assemblers.by_stream.find(i); it != assemblers.by_stream.end())
      messages = it->second->take_messages();
    const int r =
        replay_stream(a, model, i, std::move(messages), fault, n > 0, cntlid, out, result);
    // The controller ID the live controller assigned at the admin queue's Connect goes into
    // the later Connects (NVMe-oF 1.1 §3.3).
    if (result.nvme_cntlid) cntlid = result.nvme_cntlid;
    total += result.differences.size();
    streams.push_back({{"stream", result.stream},
                       {"ulp", result.ulp},
                       {"messages", result.messages},
                       {"connected", result.connected},
                       {"nvme_cntlid", result.nvme_cntlid ? nlohmann::json(*result.nvme_cntlid)
                                                          : nlohmann::json()},
                       {"differences", result.differences},
                       {"skipped", result.skipped},
                       {"setup", result.setup},
                       {"timing", result.timing}});
    rc = std::max(rc, r);
    if (r == 2) break;
  }
  if (a.json) {
    nlohmann::json j = {{"capture", a.capture},
                        {"side", a.side},
                        {"llp", a.llp.llp},
                        {"streams", streams},
                        {"differences", total}};
    std::cout << j.dump(2) << "\n";
  }
  return rc;
}

}  // namespace

void add_replay_command(CLI::App& app, std::function<int()>& run) {
  auto a = std::make_shared<ReplayArgs>();
  auto* sc = app.add_subcommand("replay",
                                "Replay one side of a captured stream against a live "
                                "peer and report where it differs");
  sc->add_option("CAPTURE", a->capture, "pcap/pcapng file")->required();
  sc->add_option("--stream-index", a->streams,
                 "the stream's number in the analyzer's report (\"stream\": N; default 0); "
                 "repeated: those streams, one after another in captured order");
  sc->add_flag("--all-streams", a->all_streams,
               "replay every stream with an MPA handshake or SCTP session setup, in captured "
               "order");
  // One meaning per option name across commands: --stream is an endpoint (IP:PORT) in analyze
  // and the GUI. Here the old spelling of the number is refused by name, before other checks.
  sc->add_option_function<std::string>(
        "--stream",
        [](const std::string&) {
          throw CLI::ValidationError(
              "replay: the stream's number is --stream-index N (--stream, in analyze, is an "
              "endpoint IP:PORT)");
        },
        "")
      ->group("");
  sc->add_option("--side", a->side, "the side to replay: client or server")
      ->check(CLI::IsMember({"client", "server"}));
  sc->add_option("--peer", a->peer,
                 "HOST:PORT of the live peer (client side), or to listen on (server side)")
      ->required();
  sc->add_option("--wait-ms", a->wait_ms, "how long to wait for each peer message (3000)");
  sc->add_option("--timeout", a->timeout_s, "connection timeout in seconds (60)");
  add_start_delay_flag(sc, a->start_delay_ms);
  sc->add_flag("-v", a->verbose, "print every message, not only differences");
  sc->add_flag("--json", a->json, "print the result as JSON (the same information)");
  std::string fields;
  std::vector<std::string> names;
  for (const auto& f : session::replay_varying_fields()) {
    fields += std::string(f.name) + (f.by_default ? " (default)" : "") + ", ";
    names.emplace_back(f.name);
  }
  sc->add_option(
        "--ignore", a->ignore,
        "a ULP field not to compare, besides the defaults: " + fields.substr(0, fields.size() - 2))
      ->check(CLI::IsMember(names));
  add_llp_flags(sc, a->llp);
  sc->add_option("--fault", a->fault, "")->group("");  // tests: skip:N or corrupt:N
  sc->callback([a, &run] { run = [a] { return run_replay(*a); }; });
}

}  // namespace ddpscope::cli
