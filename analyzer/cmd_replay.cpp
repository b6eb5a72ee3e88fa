// SPDX-License-Identifier: GPL-2.0-or-later
// `ddpscope replay CAPTURE --stream-index N --side client|server --peer HOST:PORT`: replays one
// side of a captured stream against a live peer over the userspace endpoint. The MPA handshake is
// repeated with the captured parameters; that side's messages are re-sent (Sends verbatim;
// RDMA Writes, Read Requests and atomics with the peer's STags and TOs remapped through its
// advertisements, compared with the captured peer's at the same message positions); the live
// peer's Read Requests are answered from regions registered under the captured STags and
// filled with the captured data. Each message the live peer sends is compared with the
// capture's, in order: sequence, sizes, data, Terminates.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <deque>
#include <iostream>

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
  std::uint32_t stream = 0;
  std::string side = "client";
  std::string peer;
  int wait_ms = 3000;
  int timeout_s = 60;
  int start_delay_ms = kDefaultStartDelayMs;  // as the client, before the first message
  bool verbose = false;
};

int run_replay(const ReplayArgs& a) {
  // 1. The capture.
  std::string err;
  auto reader = capture::CaptureReader::open(a.capture, err);
  if (!reader) {
    std::cerr << "replay: " << err << "\n";
    return 2;
  }
  Analyzer analyzer;
  session::MessageAssembler assembler(a.stream);
  analyzer.set_observer(&assembler);
  capture::FeedOptions feed_options;
  feed_options.on_frame = [&assembler](const capture::Frame& f) {
    assembler.set_frame_time(f.ts_ns);
  };
  const capture::FeedResult fed = capture::feed(*reader, analyzer, feed_options);
  if (!fed.error.empty())
    std::cerr << "replay: " << fed.error << ": replaying the " << fed.last_frame
              << " frames before it\n";
  const Model& model = analyzer.model();
  if (a.stream >= model.streams.size()) {
    std::cerr << "replay: the capture has " << model.streams.size() << " streams\n";
    return 2;
  }
  const StreamModel& sm = model.streams[a.stream];
  const bool client = a.side == "client";
  const auto side = client ? session::ReplaySide::client : session::ReplaySide::server;
  // 2. The handshake parameters of our side.
  auto cfg = session::replay_session_config(sm, side);
  if (!cfg) {
    std::cerr << "replay: stream " << a.stream << " has no MPA " << (client ? "Request" : "Reply")
              << "\n";
    return 2;
  }
  std::string host;
  std::uint16_t port = 0;
  if (!endpoint::split_host_port(a.peer, host, port)) {
    std::cerr << "replay: --peer wants HOST:PORT\n";
    return 2;
  }
  session::MemoryTable mem(endpoint::process_memory_limits());
  cfg->pd = mem.alloc_pd();

  // 3. Our regions under the captured STags, filled with the captured data.
  auto plan = session::make_replay_plan(sm, side, assembler.take_messages(), err);
  if (!plan) {
    std::cerr << "replay: " << err << "\n";
    return 2;
  }
  for (auto& [stag, r] : plan->regions) {
    if (!mem.register_region_at(stag, cfg->pd, r.mem, r.base, session::access::all)) {
      std::cerr << "replay: cannot register STag " << stag << "\n";
      return 2;
    }
  }
  const std::vector<session::CapturedMessage>& script = plan->script;
  const int us = plan->us();

  // 4. The live connection.
  endpoint::Loop loop(mem);
  std::vector<Bytes> recvs(64, Bytes(plan->max_send));
  std::deque<session::LiveMessage> live;
  endpoint::Connection* conn = nullptr;
  bool closed = false;
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
        if (e.kind != EventKind::closed)
          std::printf("live: %s: %s\n", std::string(to_string(e.kind)).c_str(), e.message.c_str());
        closed = true;
        return;
      case EventKind::terminate_sent:
        std::printf("live: we sent Terminate %s\n", e.message.c_str());
        closed = true;
        return;
      default:
        return;
    }
    live.push_back(std::move(m));
  };
  if (client) {
    if (!loop.connect(host, port, *cfg, err)) {
      std::cerr << "replay: " << err << "\n";
      return 2;
    }
  } else {
    if (!loop.listen(host, port, *cfg, err)) {
      std::cerr << "replay: " << err << "\n";
      return 2;
    }
    std::printf("replay: waiting for the live client on %s:%u\n", host.c_str(), loop.listen_port());
    std::fflush(stdout);
  }
  if (!loop.run_until(
          [&] {
            return closed ||
                   (conn && conn->session().state() == session::Session::State::established);
          },
          a.timeout_s * 1000) ||
      closed) {
    std::printf("DIFF handshake: the live peer did not reach Full Operation Phase\n");
    return 1;
  }
  const auto& neg = conn->session().negotiated();
  std::printf("connected: rev %u, CRC %s, peer-to-peer %s, RTR %s\n", neg.revision,
              neg.crc ? "on" : "off", neg.peer_to_peer ? "yes" : "no",
              std::string(session::to_string(neg.rtr)).c_str());
  if (sm.revision && neg.revision != *sm.revision)
    std::printf("DIFF handshake: revision %u, captured %u\n", neg.revision, *sm.revision);
  if (client) loop.run_until([&] { return closed; }, a.start_delay_ms);

  // 5. Walk the captured messages in order.
  int diffs = 0;
  int slow = 0;
  std::size_t index = 0;
  // Timing: the delay from the previous message (either side) to each peer message, captured
  // vs live. Reported when the live peer is much slower; not counted as a difference.
  std::int64_t cap_prev = script.empty() ? 0 : script.front().ts_ns;
  std::int64_t live_prev = endpoint::now_ns();
  auto& s = conn->session();
  for (const session::CapturedMessage& m : script) {
    ++index;
    if (plan->ours_to_send(m)) plan->apply_fills(index);
    const char* arrow = m.direction == 0 ? "client->server" : "server->client";
    if (m.direction == us) {
      if (!plan->ours_to_send(m)) continue;  // our session answers the live peer's requests
      const auto is = [&](wire::Opcode o) { return m.opcode == static_cast<std::uint8_t>(o); };
      session::PostStatus st = session::PostStatus::ok;
      if (wire::opcode_is_send_family(m.opcode)) {
        session::Session::SendOptions so;
        so.solicited = is(wire::Opcode::send_se) || is(wire::Opcode::send_se_invalidate);
        if (wire::opcode_invalidates(m.opcode))
          so.invalidate_stag = plan->live_stag_to(m.rsvd_ulp1, 0).first;
        st = s.send(m.data, so);
      } else if (is(wire::Opcode::rdma_write)) {
        auto [stag, to] = plan->live_stag_to(m.stag, m.to);
        st = s.rdma_write(m.data, stag, to);
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
        std::printf("#%zu %s %s: sent%s\n", index, arrow, describe(m).c_str(),
                    st == session::PostStatus::ok
                        ? ""
                        : (" FAILED (" + std::string(to_string(st)) + ")").c_str());
      loop.flush();
      cap_prev = m.ts_ns;
      live_prev = endpoint::now_ns();
      continue;
    }
    // A message of the peer: wait for the live one and compare.
    loop.run_until([&] { return !live.empty() || closed; }, a.wait_ms);
    if (live.empty()) {
      std::printf("DIFF #%zu %s: expected %s; the live peer sent nothing%s\n", index, arrow,
                  describe(m).c_str(), closed ? " (connection ended)" : "");
      ++diffs;
      if (closed) break;
      continue;
    }
    session::LiveMessage l = std::move(live.front());
    live.pop_front();
    const std::int64_t cap_delay = m.ts_ns - cap_prev;
    const std::int64_t live_delay = l.at_ns - live_prev;
    cap_prev = m.ts_ns;
    live_prev = l.at_ns;
    if (live_delay > 10 * cap_delay + 200'000'000) {
      std::printf("TIMING #%zu %s: %s after %.1f ms, captured after %.1f ms\n", index, arrow,
                  describe(m).c_str(), static_cast<double>(live_delay) / 1e6,
                  static_cast<double>(cap_delay) / 1e6);
      ++slow;
    }
    const std::string why = plan->compare(m, l);
    if (why.empty()) {
      if (a.verbose) std::printf("#%zu %s %s: same\n", index, arrow, describe(m).c_str());
    } else {
      std::printf("DIFF #%zu %s: expected %s; %s\n", index, arrow, describe(m).c_str(),
                  why.c_str());
      ++diffs;
    }
  }
  // Anything more the live peer sends is a difference too.
  loop.run_until([&] { return !live.empty() || closed; }, 300);
  for (const auto& l : live) {
    std::printf("DIFF extra: the live peer sent %s, not in the capture\n", describe(l).c_str());
    ++diffs;
  }
  if (!closed) {
    s.close();
    loop.run_until([&] { return conn->done() || closed; }, 1000);
  }
  std::printf("%zu captured messages replayed, %d difference%s", script.size(), diffs,
              diffs == 1 ? "" : "s");
  if (slow) std::printf(", %d much slower than captured", slow);
  std::printf("\n");
  return diffs ? 1 : 0;
}

}  // namespace

void add_replay_command(CLI::App& app, std::function<int()>& run) {
  auto a = std::make_shared<ReplayArgs>();
  auto* sc = app.add_subcommand("replay",
                                "Replay one side of a captured stream against a live "
                                "peer and report where it differs");
  sc->add_option("CAPTURE", a->capture, "pcap/pcapng file")->required();
  sc->add_option("--stream-index", a->stream,
                 "the stream's number in the analyzer's report (\"stream\": N; default 0)");
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
  sc->callback([a, &run] { run = [a] { return run_replay(*a); }; });
}

}  // namespace ddpscope::cli
