// SPDX-License-Identifier: GPL-2.0-or-later
// `ddpscope replay CAPTURE --stream N --side client|server --peer HOST:PORT`: replays one side
// of a captured stream against a live peer over the userspace endpoint. The MPA handshake is
// repeated with the captured parameters; that side's messages are re-sent (Sends verbatim;
// RDMA Writes, Read Requests and atomics with the peer's STags and TOs remapped through its
// advertisements, compared with the captured peer's at the same message positions); the live
// peer's Read Requests are answered from regions registered under the captured STags and
// filled with the captured data. Each message the live peer sends is compared with the
// capture's, in order: sequence, sizes, data, Terminates.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstring>
#include <deque>
#include <iostream>
#include <map>

#include "cmd_endpoint_options.h"
#include "ddpscope/analysis/analyzer.h"
#include "ddpscope/capture/feed.h"
#include "ddpscope/endpoint/endpoint.h"
#include "ddpscope/ulp/advert.h"

namespace ddpscope::cli {
namespace {

using session::Event;
using session::EventKind;
namespace op = wire;

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

// One captured DDP message (all its segments).
struct CapMsg {
  int dir = 0;
  std::uint8_t opcode = 0;
  bool tagged = false;
  std::uint32_t qn = 0, msn = 0, rsvd_ulp1 = 0;
  std::uint32_t stag = 0;
  std::uint64_t to = 0;
  Bytes data;
  std::optional<wire::ReadRequest> rr;
  std::optional<wire::AtomicRequest> atomic;
  std::optional<wire::AtomicResponse> atomic_resp;
  std::optional<std::uint64_t> immediate;
  std::optional<TerminateError> term;
  std::uint64_t frame = 0;
  std::int64_t ts_ns = 0;  // when its last segment was captured
};

class Collector final : public AnalysisObserver {
 public:
  explicit Collector(std::uint32_t stream) : stream_(stream) {}
  std::int64_t now_ns = 0;  // timestamp of the frame being fed
  void on_pdu(const PduEvent& p) override {
    if (p.stream != stream_ || p.kind != PduKind::fpdu || !p.ddp || !p.crc_ok) return;
    const auto& h = p.ddp->header;
    const int d = p.direction;
    const std::uint8_t opcode = wire::RdmapControl::from_byte(h.rsvd_ulp0).opcode;
    CapMsg& m = open_[d][h.control.tagged ? 0xFFFFFFFFu : h.qn];
    if (m.data.empty() && !m.rr && !m.term && m.frame == 0) {
      m.dir = d;
      m.opcode = opcode;
      m.tagged = h.control.tagged;
      m.qn = h.qn;
      m.msn = h.msn;
      m.rsvd_ulp1 = h.rsvd_ulp1;
      m.stag = h.stag;
      m.to = h.to;
      m.frame = p.slices.empty() ? 0 : p.slices.front().frame;
    }
    const std::uint64_t off = h.control.tagged ? h.to - m.to : h.mo;
    if (off < (64u << 20) && p.ddp->payload.size() < (64u << 20)) {
      if (m.data.size() < off + p.ddp->payload.size()) m.data.resize(off + p.ddp->payload.size());
      std::copy(p.ddp->payload.begin(), p.ddp->payload.end(),
                m.data.begin() + static_cast<std::ptrdiff_t>(off));
    }
    if (p.read_request) m.rr = p.read_request;
    if (p.atomic_request) m.atomic = p.atomic_request;
    if (p.atomic_response) m.atomic_resp = p.atomic_response;
    if (p.immediate_data) m.immediate = p.immediate_data;
    if (p.terminate)
      m.term = TerminateError{p.terminate->control.layer, p.terminate->control.etype,
                              p.terminate->control.code};
    if (h.control.last) {
      m.ts_ns = now_ns;
      msgs.push_back(std::move(m));
      open_[d].erase(h.control.tagged ? 0xFFFFFFFFu : h.qn);
    }
  }
  std::vector<CapMsg> msgs;

 private:
  std::uint32_t stream_;
  std::map<std::uint32_t, CapMsg> open_[2];
};

std::string describe(const CapMsg& m) {
  std::string s = std::string(wire::opcode_info(m.opcode).name);
  if (m.rr)
    s += " of " + std::to_string(m.rr->size) + " octets";
  else if (m.term)
    s += " " + terminate_error_name(*m.term);
  else
    s += ", " + std::to_string(m.data.size()) + " octets";
  return s;
}

// What the live peer did, as observed by our session.
struct LiveMsg {
  std::int64_t at_ns = 0;  // when our session reported it
  std::uint8_t opcode = 0;
  Bytes data;
  std::uint32_t stag = 0;
  std::uint64_t to = 0;
  std::uint32_t length = 0;
  std::uint64_t value = 0;
  TerminateError term{};
};

std::string describe(const LiveMsg& m) {
  std::string s = std::string(wire::opcode_info(m.opcode).name);
  if (m.opcode == static_cast<std::uint8_t>(wire::Opcode::terminate))
    return s + " " + terminate_error_name(m.term);
  return s + ", " + std::to_string(m.length) + " octets";
}

struct Region {
  std::uint64_t lo = UINT64_MAX, hi = 0;
  Bytes mem;
  void cover(std::uint64_t to, std::uint64_t len) {
    lo = std::min(lo, to);
    hi = std::max(hi, to + len);
  }
};

std::vector<AdvertisedRegion> adverts_of(ByteView msg) {
  std::vector<AdvertisedRegion> out;
  RpingAdvertisementDecoder dec;
  AdvertContext ctx;
  ctx.opcode = static_cast<std::uint8_t>(wire::Opcode::send);
  dec.decode(ctx, msg, out);
  return out;
}

bool is_send(std::uint8_t opcode) {
  return wire::opcode_is_send_family(opcode);
}

int run_replay(const ReplayArgs& a) {
  // 1. The capture.
  std::string err;
  auto reader = capture::CaptureReader::open(a.capture, err);
  if (!reader) {
    std::cerr << "replay: " << err << "\n";
    return 2;
  }
  Analyzer analyzer;
  Collector col(a.stream);
  analyzer.set_observer(&col);
  capture::FeedOptions feed_options;
  feed_options.on_frame = [&col](const capture::Frame& f) { col.now_ns = f.ts_ns; };
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
  const int us = client ? 0 : 1;
  const auto& our_frame = sm.dirs[us].mpa_frame;
  if (!our_frame) {
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

  // 2. The handshake parameters of our side.
  session::MemoryTable mem(endpoint::process_memory_limits());
  session::SessionConfig cfg;
  cfg.pd = mem.alloc_pd();
  cfg.mpa.revision = our_frame->revision;
  cfg.mpa.crc = our_frame->crc;
  cfg.mpa.markers = our_frame->markers;
  cfg.mpa.enhanced = our_frame->enhanced_pd.has_value();
  const ByteView upd = our_frame->ulp_private_data();
  cfg.mpa.private_data.assign(upd.begin(), upd.end());
  if (our_frame->enhanced_pd) {
    const auto& e = *our_frame->enhanced_pd;
    cfg.mpa.ird = e.ird;
    cfg.mpa.ord = e.ord;
    cfg.mpa.peer_to_peer = e.peer_to_peer;
    cfg.mpa.rtr_types = (e.zero_length_send_rtr ? session::rtr_offer::send : 0) |
                        (e.zero_length_write_rtr ? session::rtr_offer::write : 0) |
                        (e.zero_length_read_rtr ? session::rtr_offer::read : 0);
    if (!client && cfg.mpa.rtr_types == 0) cfg.mpa.rtr_types = session::rtr_offer::write;
  } else {
    cfg.mpa.peer_to_peer = false;
  }

  // 3. Our regions under the captured STags, filled with the captured data.
  std::map<std::uint32_t, Region> ours;
  std::vector<CapMsg> script;
  bool skipped_rtr[2] = {!sm.peer_to_peer, !(sm.peer_to_peer && sm.rtr == "read")};
  for (auto& m : col.msgs) {
    // The RTR (and the Read Response to a Read RTR) belong to the handshake.
    if (!skipped_rtr[0] && m.dir == 0) {
      skipped_rtr[0] = true;
      continue;
    }
    if (!skipped_rtr[1] && m.dir == 1 &&
        m.opcode == static_cast<std::uint8_t>(wire::Opcode::read_response)) {
      skipped_rtr[1] = true;
      continue;
    }
    if (m.dir == us && is_send(m.opcode))
      for (const auto& r : adverts_of(m.data))
        ours[r.stag].cover(r.base, r.length);
    if (m.dir == us && m.rr && m.rr->size) ours[m.rr->sink_stag].cover(m.rr->sink_to, m.rr->size);
    if (m.dir != us && m.rr && m.rr->size)
      ours[m.rr->source_stag].cover(m.rr->source_to, m.rr->size);
    if (m.dir != us && m.tagged && !m.data.empty()) ours[m.stag].cover(m.to, m.data.size());
    if (m.dir != us && m.atomic) ours[m.atomic->remote_stag].cover(m.atomic->remote_to, 8);
    script.push_back(m);
  }
  std::size_t total = 0;
  for (auto& [stag, r] : ours) {
    if (r.hi <= r.lo || r.hi - r.lo > (256u << 20) || (total += r.hi - r.lo) > (1u << 30)) {
      std::cerr << "replay: region of STag " << stag << " too large\n";
      return 2;
    }
    r.mem.assign(r.hi - r.lo, 0);
  }
  // What our side sent as Read Responses came from our regions, as they were when the peer
  // read them: each fill is applied just before the peer's Read Request is due.
  struct Fill {
    std::size_t at;  // script index of the peer's Read Request
    std::uint32_t stag;
    std::uint64_t to;
    const Bytes* data;
  };
  std::vector<Fill> fills;
  for (std::size_t i = 0; i < script.size(); ++i) {
    const CapMsg& m = script[i];
    if (m.dir == us || !m.rr || !m.rr->size) continue;
    for (std::size_t j = i + 1; j < script.size(); ++j) {
      const CapMsg& r = script[j];
      if (r.dir != us || r.opcode != static_cast<std::uint8_t>(wire::Opcode::read_response) ||
          r.stag != m.rr->sink_stag || r.to != m.rr->sink_to)
        continue;
      fills.push_back(Fill{i, m.rr->source_stag, m.rr->source_to, &r.data});
      break;
    }
  }
  const auto is_ours_to_send = [&](const CapMsg& m) {
    return m.dir == us && m.opcode != static_cast<std::uint8_t>(wire::Opcode::read_response) &&
           m.opcode != static_cast<std::uint8_t>(wire::Opcode::atomic_response);
  };
  // Applies the fills of the peer's Read Requests due before our next message after `from`.
  const auto apply_fills = [&](std::size_t from) {
    std::size_t until = from;
    while (until < script.size() && !is_ours_to_send(script[until]))
      ++until;
    for (const Fill& f : fills) {
      if (f.at < from || f.at >= until) continue;
      Region& reg = ours[f.stag];
      const std::uint64_t off = f.to - reg.lo;
      std::copy_n(f.data->begin(), std::min<std::size_t>(f.data->size(), reg.mem.size() - off),
                  reg.mem.begin() + static_cast<std::ptrdiff_t>(off));
    }
  };
  apply_fills(0);
  for (auto& [stag, r] : ours) {
    if (!mem.register_region_at(stag, cfg.pd, r.mem, r.lo, session::access::all)) {
      std::cerr << "replay: cannot register STag " << stag << "\n";
      return 2;
    }
  }
  std::size_t max_send = 4096;
  for (const auto& m : script)
    if (m.dir != us && is_send(m.opcode)) max_send = std::max(max_send, m.data.size());

  // 4. The live connection.
  endpoint::Loop loop(mem);
  std::vector<Bytes> recvs(64, Bytes(max_send));
  std::deque<LiveMsg> live;
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
  const auto region_bytes = [&](std::uint32_t stag, std::uint64_t to, std::size_t len) {
    Bytes out;
    auto it = ours.find(stag);
    if (it == ours.end() || to < it->second.lo || to + len > it->second.hi) return out;
    const auto b = it->second.mem.begin() + static_cast<std::ptrdiff_t>(to - it->second.lo);
    out.assign(b, b + static_cast<std::ptrdiff_t>(len));
    return out;
  };
  loop.on_event = [&](endpoint::Connection& c, const Event& e) {
    LiveMsg m;
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
        m.data = region_bytes(e.stag, e.to, e.length);
        break;
      case EventKind::read_requested:
        m.stag = e.stag;
        m.to = e.to;
        break;
      case EventKind::read_completed: {
        const PendingRead& r = reads[e.wr_id];
        m.opcode = static_cast<std::uint8_t>(wire::Opcode::read_response);
        m.data = region_bytes(r.stag, r.to, r.size);
        break;
      }
      case EventKind::immediate_received:
      case EventKind::atomic_completed:
        m.value = e.value;
        break;
      case EventKind::terminate_received:
        m.opcode = static_cast<std::uint8_t>(wire::Opcode::terminate);
        m.term = e.terminate;
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
    if (!loop.connect(host, port, cfg, err)) {
      std::cerr << "replay: " << err << "\n";
      return 2;
    }
  } else {
    if (!loop.listen(host, port, cfg, err)) {
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
  struct Map {
    std::uint32_t live_stag;
    std::uint64_t cap_base, live_base;
  };
  std::map<std::uint32_t, Map> remap;  // captured peer STag -> live
  const auto map_to = [&](std::uint32_t stag, std::uint64_t to) {
    auto it = remap.find(stag);
    if (it == remap.end()) return std::pair{stag, to};
    return std::pair{it->second.live_stag, it->second.live_base + (to - it->second.cap_base)};
  };
  int diffs = 0;
  int slow = 0;
  std::size_t index = 0;
  // Timing: the delay from the previous message (either side) to each peer message, captured
  // vs live. Reported when the live peer is much slower; not counted as a difference.
  std::int64_t cap_prev = script.empty() ? 0 : script.front().ts_ns;
  std::int64_t live_prev = endpoint::now_ns();
  auto& s = conn->session();
  for (const CapMsg& m : script) {
    ++index;
    if (is_ours_to_send(m)) apply_fills(index);
    const char* arrow = m.dir == 0 ? "client->server" : "server->client";
    if (m.dir == us) {
      if (m.opcode == static_cast<std::uint8_t>(wire::Opcode::read_response) ||
          m.opcode == static_cast<std::uint8_t>(wire::Opcode::atomic_response))
        continue;  // the engine answers the live peer's requests itself
      session::PostStatus st = session::PostStatus::ok;
      if (is_send(m.opcode)) {
        session::Session::SendOptions so;
        so.solicited = m.opcode == 5 || m.opcode == 6;
        if (wire::opcode_invalidates(m.opcode)) so.invalidate_stag = map_to(m.rsvd_ulp1, 0).first;
        st = s.send(m.data, so);
      } else if (m.opcode == static_cast<std::uint8_t>(wire::Opcode::rdma_write)) {
        auto [stag, to] = map_to(m.stag, m.to);
        st = s.rdma_write(m.data, stag, to);
      } else if (m.rr) {
        auto [stag, to] = map_to(m.rr->source_stag, m.rr->source_to);
        reads.push_back({m.rr->sink_stag, m.rr->sink_to, m.rr->size});
        st = s.rdma_read(m.rr->sink_stag, m.rr->sink_to, m.rr->size, stag, to, reads.size() - 1);
      } else if (m.immediate) {
        st = s.send_immediate(*m.immediate, m.opcode == 9);
      } else if (m.atomic) {
        auto [stag, to] = map_to(m.atomic->remote_stag, m.atomic->remote_to);
        st = m.atomic->atomic_opcode == 0
                 ? s.atomic_fetch_add(stag, to, m.atomic->add_swap_data)
                 : s.atomic_compare_swap(stag, to, m.atomic->compare_data, m.atomic->add_swap_data);
      } else if (m.term) {
        s.terminate(*m.term);
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
    LiveMsg l = std::move(live.front());
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
    std::string why;
    if (l.opcode != m.opcode) {
      why = "the live peer sent " + describe(l);
    } else if (m.term) {
      if (!(l.term == *m.term)) why = "Terminate " + terminate_error_name(l.term);
    } else if (m.rr) {
      if (l.length != m.rr->size) why = "Read of " + std::to_string(l.length) + " octets";
    } else if (m.immediate || m.atomic_resp) {
      const std::uint64_t want = m.immediate ? *m.immediate : m.atomic_resp->original_value;
      if (l.value != want) why = "value " + std::to_string(l.value);
    } else if (l.data.size() != m.data.size()) {
      why = "size " + std::to_string(l.data.size()) + " octets";
    } else if (is_send(m.opcode) && !adverts_of(m.data).empty() && !adverts_of(l.data).empty()) {
      // An advertisement: learn the live STag/TO for this captured one (same positions).
      const auto cap = adverts_of(m.data);
      const auto lv = adverts_of(l.data);
      for (std::size_t i = 0; i < std::min(cap.size(), lv.size()); ++i)
        remap[cap[i].stag] = Map{lv[i].stag, cap[i].base, lv[i].base};
      if (cap[0].length != lv[0].length)
        why = "advertised length " + std::to_string(lv[0].length) + ", captured " +
              std::to_string(cap[0].length);
    } else if (l.data != m.data) {
      std::size_t at = 0;
      while (at < l.data.size() && l.data[at] == m.data[at])
        ++at;
      why = "data differs from octet " + std::to_string(at);
    }
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
  sc->add_option("--stream", a->stream, "stream number in the analyzer's report (default 0)");
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
