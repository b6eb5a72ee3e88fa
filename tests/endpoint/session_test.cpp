// SPDX-License-Identifier: GPL-2.0-or-later
// The endpoint engine in memory: two sessions wired back to back (bytes cut into random
// chunks), every operation under both MPA revisions, CRC and markers on and off; the traffic is
// also fed to core's Analyzer, which must find no error. Then a hostile peer (raw ULPDUs) breaks
// each Data Sink rule and the engine must answer with the right Terminate and place nothing.
#include "ddpscope/session/session.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>

#include "ddpscope/analysis/analyzer.h"
#include "ddpscope/common/crc32c.h"

namespace ddpscope::session {
namespace {

using wire::Opcode;

struct Side {
  Session* s;
  std::vector<Event> events;
  Bytes sent;  // everything this side put on the wire
};

// Wires two sessions and an analyzer (fed as TCP segments 10.0.0.1:40000 <-> 10.0.0.2:4791).
class Wire {
 public:
  Wire(Session& a, Session& b, std::uint32_t seed = 1) : rng_(seed) {
    side_[0].s = &a;
    side_[1].s = &b;
    AnalyzerOptions o;
    analyzer_ = std::make_unique<Analyzer>(o);
    net::TcpSegment syn;
    for (int d = 0; d < 2; ++d) {
      syn.src = ep(d);
      syn.dst = ep(1 - d);
      syn.seq = seq_[d] - 1;
      syn.flags = net::tcp_flag::syn | (d ? net::tcp_flag::ack : 0);
      syn.mss = 1460;
      analyzer_->feed_tcp(frame_++, ts(), syn);
    }
  }
  static net::Endpoint ep(int d) {
    return net::Endpoint{*net::Address::parse(d ? "10.0.0.2" : "10.0.0.1"),
                         static_cast<std::uint16_t>(d ? 4791 : 40000)};
  }
  std::int64_t ts() { return 1'000'000'000LL + static_cast<std::int64_t>(frame_) * 1000; }
  // Moves bytes both ways until nothing moves.
  void pump(int max_rounds = 100000) {
    for (int round = 0; round < max_rounds; ++round) {
      bool moved = false;
      for (int d = 0; d < 2; ++d) {
        Side& from = side_[d];
        Side& to = side_[1 - d];
        collect(from);
        const ByteView out = from.s->output();
        if (out.empty()) continue;
        std::size_t n = out.size();
        if (chunky_) n = std::min<std::size_t>(n, 1 + rng_() % 700);
        Bytes chunk(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(n));
        from.s->consume_output(n);
        from.sent.insert(from.sent.end(), chunk.begin(), chunk.end());
        if (analyze_) {
          net::TcpSegment seg;
          seg.src = ep(d);
          seg.dst = ep(1 - d);
          seg.seq = seq_[d];
          seg.flags = net::tcp_flag::ack | net::tcp_flag::psh;
          seg.payload = chunk;
          seg.payload_length = static_cast<std::uint32_t>(chunk.size());
          analyzer_->feed_tcp(frame_++, ts(), seg);
          seq_[d] += static_cast<std::uint32_t>(chunk.size());
        }
        to.s->receive(chunk);
        moved = true;
      }
      collect(side_[0]);
      collect(side_[1]);
      if (!moved) return;
    }
  }
  void collect(Side& s) {
    Event e;
    while (s.s->poll_event(e))
      s.events.push_back(e);
  }
  std::vector<Event>& events(int d) { return side_[d].events; }
  const Event* find(int d, EventKind k, std::size_t nth = 0) {
    for (const auto& e : side_[d].events)
      if (e.kind == k && nth-- == 0) return &e;
    return nullptr;
  }
  const Model& finish() {
    analyzer_->finish();
    return analyzer_->model();
  }
  std::string error_findings() {
    std::string s;
    for (const auto& f : analyzer_->model().findings)
      if (f.severity == Severity::error) s += std::string(f.code()) + ": " + f.message + "\n";
    return s;
  }
  bool chunky_ = true;
  bool analyze_ = true;

 private:
  std::mt19937 rng_;
  Side side_[2];
  std::unique_ptr<Analyzer> analyzer_;
  std::uint32_t seq_[2] = {1000, 5000000};
  std::uint64_t frame_ = 1;
};

struct Params {
  std::uint8_t revision;
  bool crc;
  bool markers_i;  // the initiator asks for markers
  bool markers_r;
  RtrType rtr;
};

std::string name(const Params& p) {
  return "rev" + std::to_string(p.revision) + (p.crc ? "_crc" : "_nocrc") +
         (p.markers_i ? "_mi" : "") + (p.markers_r ? "_mr" : "") + "_rtr" +
         std::string(to_string(p.rtr));
}

SessionConfig make_config(Role role, const Params& p, std::uint32_t pd) {
  SessionConfig c;
  c.role = role;
  c.pd = pd;
  c.emss = 1460;
  c.mpa.revision = p.revision;
  c.mpa.crc = p.crc && role == Role::initiator;  // the responder follows the initiator's C
  c.mpa.markers = role == Role::initiator ? p.markers_i : p.markers_r;
  c.mpa.peer_to_peer = p.rtr != RtrType::none;
  c.mpa.rtr_types = p.rtr == RtrType::write  ? rtr_offer::write
                    : p.rtr == RtrType::read ? rtr_offer::read
                    : p.rtr == RtrType::send ? rtr_offer::send
                                             : rtr_offer::write;
  if (role == Role::responder)
    c.mpa.rtr_types = rtr_offer::write | rtr_offer::read | rtr_offer::send;
  c.mpa.private_data = {'h', 'i', static_cast<std::uint8_t>(role)};
  return c;
}

Bytes pattern(std::size_t n, std::uint8_t seed) {
  Bytes b(n);
  for (std::size_t i = 0; i < n; ++i)
    b[i] = static_cast<std::uint8_t>(seed + i * 7 + (i >> 8));
  return b;
}

class SessionMatrix : public ::testing::TestWithParam<Params> {};

TEST_P(SessionMatrix, EveryOperation) {
  const Params p = GetParam();
  MemoryTable mem;
  const std::uint32_t pd_i = mem.alloc_pd(), pd_r = mem.alloc_pd();
  Session ini(mem, make_config(Role::initiator, p, pd_i));
  Session res(mem, make_config(Role::responder, p, pd_r));
  Wire w(ini, res, p.revision * 7 + p.crc);
  // The responder's memory: a region the initiator writes and reads, guarded on both sides.
  Bytes res_mem(40000 + 64, 0xEE);
  auto res_region = std::span<std::uint8_t>(res_mem).subspan(32, 40000);
  const auto res_stag =
      *mem.register_region(pd_r, res_region, 0x10000, access::all, res.stream_id());
  Bytes ini_mem(40000, 0);
  const auto ini_stag = *mem.register_region(pd_i, ini_mem, 0x5000, access::all);
  Bytes inv_mem(16, 0);
  const auto inv_stag = *mem.register_region(pd_r, inv_mem, 0, access::remote_write);
  // Receive buffers on both sides.
  std::vector<Bytes> rbufs(8, Bytes(5000));
  for (std::size_t i = 0; i < 4; ++i)
    ASSERT_EQ(res.post_recv(rbufs[i], 100 + i), PostStatus::ok);
  for (std::size_t i = 4; i < 8; ++i)
    ASSERT_EQ(ini.post_recv(rbufs[i], 100 + i), PostStatus::ok);

  res.start(0);
  ini.start(0);
  w.pump();
  ASSERT_EQ(ini.state(), Session::State::established) << Session::state_name(ini.state());
  ASSERT_EQ(res.state(), Session::State::established) << Session::state_name(res.state());
  ASSERT_TRUE(w.find(0, EventKind::connected));
  ASSERT_TRUE(w.find(1, EventKind::connected));
  EXPECT_EQ(w.find(0, EventKind::connected)->private_data, (Bytes{'h', 'i', 1}));
  EXPECT_EQ(w.find(1, EventKind::connected)->private_data, (Bytes{'h', 'i', 0}));
  EXPECT_EQ(ini.negotiated().crc, p.crc);
  EXPECT_EQ(ini.negotiated().tx_markers, p.markers_r);
  EXPECT_EQ(res.negotiated().tx_markers, p.markers_i);
  if (p.revision == 2) {
    EXPECT_EQ(ini.negotiated().rtr, p.rtr);
  }

  // Send with SE, multi-segment.
  const Bytes msg1 = pattern(4000, 1);
  Session::SendOptions so;
  so.solicited = true;
  ASSERT_EQ(ini.send(msg1, so), PostStatus::ok);
  // RDMA Write of 30000 octets at TO 0x10000 + 100.
  const Bytes wdata = pattern(30000, 2);
  ASSERT_EQ(ini.rdma_write(wdata, res_stag, 0x10000 + 100), PostStatus::ok);
  // RDMA Read back 20000 octets into the initiator's region.
  ASSERT_EQ(ini.rdma_read(ini_stag, 0x5000 + 8, 20000, res_stag, 0x10000 + 100, 77),
            PostStatus::ok);
  // Send with Invalidate of the responder's inv_stag.
  so = {};
  so.invalidate_stag = inv_stag;
  ASSERT_EQ(ini.send(pattern(10, 3), so), PostStatus::ok);
  // Responder sends back.
  w.pump();
  ASSERT_EQ(res.send(pattern(100, 4)), PostStatus::ok);
  // RFC 7306: immediate data and atomics on the responder's region.
  ASSERT_EQ(ini.send_immediate(0x1122334455667788ULL, true), PostStatus::ok);
  std::uint64_t v = 40;
  std::memcpy(res_region.data() + 32000, &v, 8);
  ASSERT_EQ(ini.atomic_fetch_add(res_stag, 0x10000 + 32000, 2, 501), PostStatus::ok);
  ASSERT_EQ(ini.atomic_compare_swap(res_stag, 0x10000 + 32000, 42, 7, 502), PostStatus::ok);
  w.pump();

  ASSERT_EQ(ini.state(), Session::State::established);
  ASSERT_EQ(res.state(), Session::State::established);
  const Event* r1 = w.find(1, EventKind::recv_completed, 0);
  ASSERT_TRUE(r1);
  EXPECT_EQ(r1->length, 4000u);
  EXPECT_TRUE(r1->solicited);
  EXPECT_EQ(Bytes(rbufs[0].begin(), rbufs[0].begin() + 4000), msg1);
  const Event* wp = w.find(1, EventKind::write_placed);
  ASSERT_TRUE(wp);
  EXPECT_EQ(wp->length, 30000u);
  EXPECT_TRUE(std::equal(wdata.begin(), wdata.end(), res_region.begin() + 100));
  const Event* rc = w.find(0, EventKind::read_completed);
  ASSERT_TRUE(rc);
  EXPECT_EQ(rc->wr_id, 77u);
  EXPECT_TRUE(std::equal(wdata.begin(), wdata.begin() + 20000, ini_mem.begin() + 8));
  const Event* r2 = w.find(1, EventKind::recv_completed, 1);
  ASSERT_TRUE(r2);
  EXPECT_EQ(r2->invalidated_stag, inv_stag);
  EXPECT_FALSE(mem.find(inv_stag)->valid);
  const Event* r3 = w.find(0, EventKind::recv_completed, 0);
  ASSERT_TRUE(r3);
  EXPECT_EQ(r3->length, 100u);
  const Event* imm = w.find(1, EventKind::immediate_received);
  ASSERT_TRUE(imm);
  EXPECT_EQ(imm->value, 0x1122334455667788ULL);
  const Event* a1 = w.find(0, EventKind::atomic_completed, 0);
  const Event* a2 = w.find(0, EventKind::atomic_completed, 1);
  ASSERT_TRUE(a1 && a2);
  EXPECT_EQ(a1->value, 40u);
  EXPECT_EQ(a2->value, 42u);
  std::memcpy(&v, res_region.data() + 32000, 8);
  EXPECT_EQ(v, 7u);
  // Guard bytes untouched.
  for (std::size_t i = 0; i < 32; ++i)
    EXPECT_EQ(res_mem[i], 0xEE);
  for (std::size_t i = 32 + 40000; i < res_mem.size(); ++i)
    EXPECT_EQ(res_mem[i], 0xEE);

  // Graceful close.
  ini.close();
  w.pump();
  EXPECT_EQ(ini.state(), Session::State::closed);
  EXPECT_TRUE(ini.want_shutdown());
  res.receive_eof();
  EXPECT_EQ(res.state(), Session::State::closed);
  const Model& m = w.finish();
  EXPECT_EQ(w.error_findings(), "");
  // Every FPDU fits the MULPDU derived from the MSS (RFC 5044 §8).
  for (const auto& f : m.findings)
    EXPECT_NE(f.id, FindingId::mpa_fpdu_exceeds_mulpdu) << f.message;
}

std::vector<Params> matrix() {
  std::vector<Params> v;
  for (std::uint8_t rev : {1, 2})
    for (bool crc : {false, true})
      for (int m = 0; m < 4; ++m)
        v.push_back(Params{rev, crc, (m & 1) != 0, (m & 2) != 0,
                           rev == 2 ? RtrType::write : RtrType::none});
  v.push_back(Params{2, true, false, false, RtrType::read});
  v.push_back(Params{2, false, false, false, RtrType::send});
  v.push_back(Params{2, true, true, true, RtrType::read});
  return v;
}
INSTANTIATE_TEST_SUITE_P(All, SessionMatrix, ::testing::ValuesIn(matrix()),
                         [](const auto& info) { return name(info.param); });

// --- handshake failures ---------------------------------------------------------------------

TEST(SessionHandshake, ResponderRejects) {
  MemoryTable mem;
  Params p{2, false, false, false, RtrType::write};
  SessionConfig rc = make_config(Role::responder, p, mem.alloc_pd());
  rc.mpa.reject = true;
  rc.mpa.private_data = {'n', 'o'};
  Session ini(mem, make_config(Role::initiator, p, mem.alloc_pd()));
  Session res(mem, rc);
  Wire w(ini, res);
  res.start();
  ini.start();
  w.pump();
  ASSERT_TRUE(w.find(0, EventKind::rejected));
  EXPECT_EQ(w.find(0, EventKind::rejected)->private_data, (Bytes{'n', 'o'}));
  EXPECT_EQ(ini.state(), Session::State::failed);
  EXPECT_EQ(res.state(), Session::State::failed);
  const Model& m = w.finish();
  ASSERT_EQ(m.streams.size(), 1u);
  EXPECT_EQ(m.streams[0].state, StreamState::rejected);
}

TEST(SessionHandshake, BadReplyKeyDrawsTerminate) {
  MemoryTable mem;
  Session ini(mem, make_config(Role::initiator, Params{2, false, false, false, RtrType::write},
                               mem.alloc_pd()));
  ini.start();
  std::string bogus = "MPA ID Rep Fram!";
  bogus += std::string("\x00\x02\x00\x00", 4);
  ini.receive(ByteView(reinterpret_cast<const std::uint8_t*>(bogus.data()), bogus.size()));
  EXPECT_EQ(ini.state(), Session::State::terminated);
  ASSERT_TRUE(ini.terminate_sent());
  EXPECT_EQ(*ini.terminate_sent(), (TerminateError{2, 0, mpa_code::invalid_reqrep}));
}

TEST(SessionHandshake, ResponderRefusesBadRevisionAndGarbage) {
  MemoryTable mem;
  Params p{2, false, false, false, RtrType::write};
  {
    Session res(mem, make_config(Role::responder, p, mem.alloc_pd()));
    res.start();
    wire::MpaReqRep req;
    req.revision = 3;
    res.receive(wire::encode_mpa_reqrep(req));
    EXPECT_EQ(res.state(), Session::State::failed);
    auto rep = wire::decode_mpa_reqrep(res.output());
    ASSERT_TRUE(rep);
    EXPECT_TRUE(rep->reject);
  }
  {
    Session res(mem, make_config(Role::responder, p, mem.alloc_pd()));
    res.start();
    const Bytes junk(100, 'x');
    res.receive(junk);
    EXPECT_EQ(res.state(), Session::State::failed);
  }
}

TEST(SessionHandshake, NoMatchingRtr) {
  MemoryTable mem;
  Params p{2, false, false, false, RtrType::send};
  SessionConfig rc = make_config(Role::responder, p, mem.alloc_pd());
  rc.mpa.rtr_types = rtr_offer::write;  // the initiator offers Send only: we propose Write
  Session ini(mem, make_config(Role::initiator, p, mem.alloc_pd()));
  Session res(mem, rc);
  Wire w(ini, res);
  res.start();
  ini.start();
  w.pump();
  ASSERT_TRUE(ini.terminate_sent());
  EXPECT_EQ(*ini.terminate_sent(), (TerminateError{2, 0, mpa_code::no_matching_rtr}));
  ASSERT_TRUE(res.terminate_received());
  EXPECT_EQ(*res.terminate_received(), (TerminateError{2, 0, mpa_code::no_matching_rtr}));
}

TEST(SessionHandshake, Timeout) {
  MemoryTable mem;
  Session ini(mem, make_config(Role::initiator, Params{1, false, false, false, RtrType::none},
                               mem.alloc_pd()));
  ini.start(1000);
  ASSERT_TRUE(ini.deadline());
  ini.on_timer(*ini.deadline());
  EXPECT_EQ(ini.state(), Session::State::failed);
}

TEST(SessionHandshake, IrdOrdNegotiated) {
  MemoryTable mem;
  Params p{2, false, false, false, RtrType::write};
  SessionConfig ic = make_config(Role::initiator, p, mem.alloc_pd());
  ic.mpa.ird = 4;
  ic.mpa.ord = 8;
  SessionConfig rc = make_config(Role::responder, p, mem.alloc_pd());
  rc.mpa.ird = 2;
  rc.mpa.ord = 16;
  Session ini(mem, ic), res(mem, rc);
  Wire w(ini, res);
  res.start();
  ini.start();
  w.pump();
  EXPECT_EQ(res.negotiated().ird, 2);
  EXPECT_EQ(res.negotiated().ord, 4);
  EXPECT_EQ(ini.negotiated().ord, 2);
  EXPECT_EQ(ini.negotiated().ird, 4);
}

// --- hostile peer: each rule broken once ----------------------------------------------------

struct Hostile {
  MemoryTable mem;
  std::uint32_t pd = mem.alloc_pd();
  std::uint32_t other_pd = mem.alloc_pd();
  Bytes region_mem = Bytes(256 + 64, 0xA5);
  std::span<std::uint8_t> region = std::span<std::uint8_t>(region_mem).subspan(32, 256);
  Bytes recv = Bytes(64, 0);
  std::unique_ptr<Session> victim;
  std::unique_ptr<Session> peer;  // raw ULPDUs only
  std::uint32_t stag = 0;
  std::uint32_t ro_stag = 0;       // remote read only
  std::uint32_t foreign_stag = 0;  // other PD
  std::uint32_t bound_stag = 0;    // another stream
  std::uint32_t msn = 1;

  // `markers`: the victim asks for markers, so what it receives carries them.
  explicit Hostile(bool crc = true, std::size_t low_water = 256u << 10, bool markers = false) {
    Params p{2, crc, false, markers, RtrType::write};
    SessionConfig rc = make_config(Role::responder, p, pd);
    rc.mpa.ird = 1;
    rc.limits.tx_low_water = low_water;
    victim = std::make_unique<Session>(mem, rc);
    SessionConfig ic = make_config(Role::initiator, p, other_pd);
    peer = std::make_unique<Session>(mem, ic);
    stag = *mem.register_region(pd, region, 0x1000, access::all);
    ro_stag = *mem.register_region(pd, region, 0x1000, access::remote_read);
    foreign_stag = *mem.register_region(other_pd, region, 0x1000, access::all);
    bound_stag = *mem.register_region(pd, region, 0x1000, access::all, 999999);
    victim->post_recv(recv, 1);
    victim->start();
    peer->start();
    pump();
  }
  void pump() {
    for (int i = 0; i < 100; ++i) {
      bool moved = false;
      if (peer->output_size()) {
        Bytes b(peer->output().begin(), peer->output().end());
        peer->consume_output(b.size());
        victim->receive(b);
        moved = true;
      }
      if (victim->output_size()) {
        Bytes b(victim->output().begin(), victim->output().end());
        victim->consume_output(b.size());
        peer->receive(b);
        moved = true;
      }
      if (!moved) return;
    }
  }
  Bytes tagged(std::uint32_t s, std::uint64_t to, std::size_t len, bool last = true,
               std::uint8_t opcode = 0) {
    Bytes u;
    ByteWriter w(u);
    wire::DdpHeader h;
    h.control.tagged = true;
    h.control.last = last;
    h.rsvd_ulp0 = wire::RdmapControl{1, 0, opcode}.byte();
    h.stag = s;
    h.to = to;
    wire::encode_ddp_header(h, w);
    w.bytes(Bytes(len, 0x42));
    return u;
  }
  Bytes untagged(std::uint8_t opcode, std::uint32_t qn, std::uint32_t m, std::uint32_t mo,
                 ByteView body, bool last = true, std::uint32_t inv = 0) {
    Bytes u;
    ByteWriter w(u);
    wire::DdpHeader h;
    h.control.last = last;
    h.rsvd_ulp0 = wire::RdmapControl{1, 0, opcode}.byte();
    h.rsvd_ulp1 = inv;
    h.qn = qn;
    h.msn = m;
    h.mo = mo;
    wire::encode_ddp_header(h, w);
    w.bytes(body);
    return u;
  }
  void inject(ByteView ulpdu) {
    peer->send_raw_ulpdu(ulpdu);
    pump();
  }
  bool guards_intact() const {
    for (std::size_t i = 0; i < 32; ++i)
      if (region_mem[i] != 0xA5) return false;
    for (std::size_t i = 32 + 256; i < region_mem.size(); ++i)
      if (region_mem[i] != 0xA5) return false;
    return true;
  }
  bool region_untouched() const {
    return std::all_of(region_mem.begin(), region_mem.end(), [](auto b) { return b == 0xA5; });
  }
  void expect_terminate(TerminateError e) {
    EXPECT_EQ(victim->state(), Session::State::terminated);
    ASSERT_TRUE(victim->terminate_sent());
    EXPECT_EQ(*victim->terminate_sent(), e) << terminate_error_name(*victim->terminate_sent());
    ASSERT_TRUE(peer->terminate_received());
    EXPECT_EQ(*peer->terminate_received(), e);
    EXPECT_TRUE(region_untouched());
  }
};

constexpr TerminateError T(std::uint8_t l, std::uint8_t t, std::uint8_t c) {
  return {l, t, c};
}

TEST(SessionHostile, CleanWriteIsPlaced) {
  Hostile h;
  ASSERT_EQ(h.victim->state(), Session::State::established);
  h.inject(h.tagged(h.stag, 0x1000 + 10, 20));
  EXPECT_EQ(h.victim->state(), Session::State::established);
  EXPECT_EQ(h.region[10], 0x42);
  EXPECT_TRUE(h.guards_intact());
}

TEST(SessionHostile, InvalidStag) {
  Hostile h;
  h.inject(h.tagged(h.stag ^ 0x01, 0x1000, 8));  // key mismatch
  h.expect_terminate(T(1, 1, 0));
}

TEST(SessionHostile, InvalidatedStag) {
  Hostile h;
  h.mem.invalidate(h.stag);
  h.inject(h.tagged(h.stag, 0x1000, 8));
  h.expect_terminate(T(1, 1, 0));
}

TEST(SessionHostile, BoundsViolation) {
  Hostile h;
  h.inject(h.tagged(h.stag, 0x1000 + 250, 8));
  h.expect_terminate(T(1, 1, 1));
}

TEST(SessionHostile, BelowBase) {
  Hostile h;
  h.inject(h.tagged(h.stag, 0x1000 - 4, 8));
  h.expect_terminate(T(1, 1, 1));
}

TEST(SessionHostile, WrongProtectionDomain) {
  Hostile h;
  h.inject(h.tagged(h.foreign_stag, 0x1000, 8));
  h.expect_terminate(T(1, 1, 2));
}

TEST(SessionHostile, WrongStream) {
  Hostile h;
  h.inject(h.tagged(h.bound_stag, 0x1000, 8));
  h.expect_terminate(T(1, 1, 2));
}

TEST(SessionHostile, ToWrap) {
  Hostile h;
  h.inject(h.tagged(h.stag, ~std::uint64_t{0} - 3, 8));
  h.expect_terminate(T(1, 1, 3));
}

TEST(SessionHostile, NoWriteAccess) {
  Hostile h;
  h.inject(h.tagged(h.ro_stag, 0x1000, 8));
  h.expect_terminate(T(1, 1, 0));
}

TEST(SessionHostile, WriteContinuationTo) {
  Hostile h;
  h.inject(h.tagged(h.stag, 0x1000, 8, false));
  h.region_mem.assign(h.region_mem.size(), 0xA5);  // first segment placed legitimately
  h.inject(h.tagged(h.stag, 0x1000 + 9, 8));
  h.expect_terminate(T(1, 1, 1));
}

TEST(SessionHostile, BadQn) {
  Hostile h;
  h.inject(h.untagged(3, 5, 1, 0, Bytes(8)));
  h.expect_terminate(T(1, 2, 1));
}

TEST(SessionHostile, BadMsn) {
  Hostile h;
  h.inject(h.untagged(3, 0, 2, 0, Bytes(8)));
  h.expect_terminate(T(1, 2, 3));
  EXPECT_TRUE(std::all_of(h.recv.begin(), h.recv.end(), [](auto b) { return b == 0; }));
}

TEST(SessionHostile, BadMo) {
  Hostile h;
  h.inject(h.untagged(3, 0, 1, 4, Bytes(8)));
  h.expect_terminate(T(1, 2, 4));
}

TEST(SessionHostile, OversizedMessage) {
  Hostile h;
  h.inject(h.untagged(3, 0, 1, 0, Bytes(65, 1)));
  h.expect_terminate(T(1, 2, 5));
  EXPECT_TRUE(std::all_of(h.recv.begin(), h.recv.end(), [](auto b) { return b == 0; }));
}

TEST(SessionHostile, NoReceiveBuffer) {
  Hostile h;
  h.inject(h.untagged(3, 0, 1, 0, Bytes(8, 1)));
  ASSERT_EQ(h.victim->state(), Session::State::established);
  h.inject(h.untagged(3, 0, 2, 0, Bytes(8, 1)));
  h.expect_terminate(T(1, 2, 2));
}

TEST(SessionHostile, BadCrc) {
  Hostile h;
  Bytes u = h.tagged(h.stag, 0x1000, 8);
  Bytes fpdu = wire::encode_fpdu(u, {});
  fpdu[5] ^= 0x10;
  h.victim->receive(fpdu);
  EXPECT_EQ(h.victim->terminate_sent(), T(2, 0, 2));
  EXPECT_TRUE(h.region_untouched());
}

// The victim receives markers (RFC 5044 §4.3); FPDUs are written here at known stream positions
// relative to the peer's S0 and handed to the victim directly.
struct MarkedHostile : Hostile {
  Bytes big = Bytes(2048, 0);
  std::uint32_t big_stag = 0;
  std::uint64_t pos = 0;  // the peer's stream position from S0, for the next FPDU

  MarkedHostile() : Hostile(true, 256u << 10, true) {
    big_stag = *mem.register_region(pd, big, 0x10000, access::all);
    // Learn where the peer's stream stands (modulo 512, all markers depend on): its next FPDU,
    // as the peer frames it, is long enough to hold a marker.
    const Bytes u = tagged(big_stag, 0x10000, 600);
    peer->send_raw_ulpdu(u);
    const Bytes out(peer->output().begin(), peer->output().end());
    peer->consume_output(out.size());
    for (std::uint64_t p = 0; p < wire::kMpaMarkerInterval; p += 4) {
      if (fpdu(u, p) == out) {
        pos = p + out.size();
        victim->receive(out);
        std::fill(big.begin(), big.end(), 0);
        return;
      }
    }
    ADD_FAILURE() << "the peer's FPDU matches no stream position";
  }
  Bytes fpdu(ByteView ulpdu, std::uint64_t at,
             wire::MarkerConvention c = wire::MarkerConvention::leading_marker_in_fpdu) const {
    wire::FpduEncodeOptions o;
    o.markers = true;
    o.stream_pos = at;
    o.convention = c;
    return wire::encode_fpdu(ulpdu, o);
  }
  // Zero-length Writes up to the next marker position, so that the next FPDU starts on it.
  void to_marker_position() {
    while (pos % wire::kMpaMarkerInterval != 0) {
      const std::size_t room = wire::kMpaMarkerInterval - pos % wire::kMpaMarkerInterval;
      const std::size_t n = room >= 20 ? std::min<std::size_t>(room - 20, 200) : 0;
      send(tagged(stag, 0x1000, n));
    }
  }
  void send(ByteView ulpdu,
            wire::MarkerConvention c = wire::MarkerConvention::leading_marker_in_fpdu) {
    const Bytes raw = fpdu(ulpdu, pos, c);
    pos += raw.size();
    victim->receive(raw);
  }
};

TEST(SessionHostile, MarkersInBothConventionsAreAccepted) {
  MarkedHostile h;
  for (const auto c :
       {wire::MarkerConvention::leading_marker_in_fpdu, wire::MarkerConvention::literal}) {
    SCOPED_TRACE(std::string(wire::to_string(c)));
    h.to_marker_position();
    ASSERT_EQ(h.victim->state(), Session::State::established);
    // A leading marker, and a second marker inside whose FPDUPTR follows the convention.
    Bytes u = h.tagged(h.big_stag, 0x10000, 700);
    std::fill(u.begin() + 14, u.end(), static_cast<std::uint8_t>(0x30 + static_cast<int>(c)));
    const Bytes raw = h.fpdu(u, h.pos, c);
    ASSERT_EQ(load_be16(&raw[512 + 2]),
              c == wire::MarkerConvention::literal ? 508 : 512);  // the inner marker's FPDUPTR
    h.send(u, c);
    EXPECT_EQ(h.victim->state(), Session::State::established);
    EXPECT_FALSE(h.victim->terminate_sent());
    EXPECT_EQ(h.big[699], 0x30 + static_cast<int>(c));
  }
}

TEST(SessionHostile, MarkerPointingElsewhere) {
  MarkedHostile h;
  h.to_marker_position();
  Bytes raw = h.fpdu(h.tagged(h.big_stag, 0x10000, 700), h.pos);
  raw[512 + 3] ^= 0x04;  // the inner marker's FPDUPTR fits neither convention (CRC still good)
  // Recompute the CRC over the tampered octets, so that only the FPDUPTR is wrong.
  mpa_crc_to_wire(crc32c(ByteView(raw).first(raw.size() - 4)), &raw[raw.size() - 4]);
  h.victim->receive(raw);
  EXPECT_EQ(h.victim->terminate_sent(), T(2, 0, 3));
  EXPECT_TRUE(std::all_of(h.big.begin(), h.big.end(), [](auto b) { return b == 0; }));
}

TEST(SessionHostile, BadCrcWithMarkers) {
  MarkedHostile h;
  h.to_marker_position();
  Bytes raw = h.fpdu(h.tagged(h.big_stag, 0x10000, 700), h.pos);
  raw[600] ^= 0x01;  // payload after the inner marker
  h.victim->receive(raw);
  EXPECT_EQ(h.victim->terminate_sent(), T(2, 0, 2));
  EXPECT_TRUE(std::all_of(h.big.begin(), h.big.end(), [](auto b) { return b == 0; }));
}

TEST(SessionHostile, BadDdpVersion) {
  Hostile h;
  Bytes u = h.tagged(h.stag, 0x1000, 8);
  u[0] = (u[0] & ~0x03) | 0x02;
  h.inject(u);
  h.expect_terminate(T(1, 1, 4));
}

TEST(SessionHostile, BadRdmapVersionAndOpcode) {
  {
    Hostile h;
    Bytes u = h.tagged(h.stag, 0x1000, 8);
    u[1] = 0x80;
    h.inject(u);
    h.expect_terminate(T(0, 2, 5));
  }
  {
    Hostile h;
    h.inject(h.untagged(0xC, 0, 1, 0, Bytes(8)));
    h.expect_terminate(T(0, 2, 6));
  }
  {
    Hostile h;
    h.inject(h.tagged(h.stag, 0x1000, 8, true, 3));  // Send as tagged
    h.expect_terminate(T(0, 2, 6));
  }
}

TEST(SessionHostile, ReadRequestChecks) {
  const auto rr = [](std::uint32_t src, std::uint64_t to, std::uint32_t size) {
    wire::ReadRequest r;
    r.sink_stag = 0x777;
    r.size = size;
    r.source_stag = src;
    r.source_to = to;
    Bytes b;
    ByteWriter w(b);
    wire::encode_read_request(r, w);
    return b;
  };
  {
    Hostile h;
    h.inject(h.untagged(1, 1, 1, 0, rr(h.stag ^ 0x01, 0x1000, 8)));
    h.expect_terminate(T(0, 1, 0));
  }
  {
    Hostile h;
    h.inject(h.untagged(1, 1, 1, 0, rr(h.stag, 0x1000 + 200, 100)));
    h.expect_terminate(T(0, 1, 1));
  }
  {
    Hostile h;
    h.inject(h.untagged(1, 1, 1, 0, rr(h.foreign_stag, 0x1000, 8)));
    h.expect_terminate(T(0, 1, 3));
  }
  {
    Hostile h;  // a valid read is answered
    h.victim->receive(wire::encode_fpdu(h.untagged(1, 1, 1, 0, rr(h.stag, 0x1000, 8)), {}));
    EXPECT_EQ(h.victim->state(), Session::State::established);
    EXPECT_GT(h.victim->output_size(), 20u);  // the Read Response
  }
  {
    Hostile h;  // body too short
    h.inject(h.untagged(1, 1, 1, 0, Bytes(20)));
    h.expect_terminate(T(0, 2, 0xFF));
  }
}

TEST(SessionHostile, IrdExceeded) {
  // Low-water mark 0: the victim never gets to answer, so both requests stay outstanding.
  Hostile h(true, 0);
  wire::ReadRequest r;
  r.sink_stag = 0x777;
  r.size = 200;
  r.source_stag = h.stag;
  r.source_to = 0x1000;
  Bytes b;
  ByteWriter w(b);
  wire::encode_read_request(r, w);
  h.inject(h.untagged(1, 1, 1, 0, b));
  EXPECT_EQ(h.victim->state(), Session::State::established);
  h.inject(h.untagged(1, 1, 2, 0, b));
  h.expect_terminate(T(0, 2, 7));
}

TEST(SessionHostile, InvalidateForeignStag) {
  Hostile h;
  h.inject(h.untagged(4, 0, 1, 0, Bytes(8), true, h.foreign_stag));
  h.expect_terminate(T(0, 1, 9));
}

TEST(SessionHostile, UnmatchedReadResponse) {
  Hostile h;
  h.inject(h.tagged(h.stag, 0x1000, 8, true, 2));
  h.expect_terminate(T(1, 0, 0));
}

TEST(SessionHostile, GarbageNeverCrashes) {
  std::mt19937 rng(5);
  for (int i = 0; i < 300; ++i) {
    Hostile h(i % 2 == 0);
    Bytes junk(1 + rng() % 300);
    for (auto& b : junk)
      b = static_cast<std::uint8_t>(rng());
    if (i % 3 == 0) junk = wire::encode_fpdu(junk, {});
    h.victim->receive(junk);
    EXPECT_TRUE(h.guards_intact());
  }
}

namespace ddpscope::session {
namespace {

TEST(SessionTeardown, GracefulCloseFinishesPendingReadsAndRefusesNewWork) {
  MemoryTable mem;
  Params p{2, true, false, false, RtrType::write};
  Session ini(mem, make_config(Role::initiator, p, mem.alloc_pd()));
  Session res(mem, make_config(Role::responder, p, mem.alloc_pd()));
  Wire w(ini, res);
  Bytes src = pattern(5000, 9), dst(5000);
  const auto sstag = *mem.register_region(res.pd(), src, 0, access::remote_read);
  const auto dstag = *mem.register_region(ini.pd(), dst, 0, access::local_write);
  res.start();
  ini.start();
  w.pump();
  ASSERT_EQ(ini.rdma_read(dstag, 0, 5000, sstag, 0, 1), PostStatus::ok);
  ini.close();  // the Read is outstanding: the session waits for it
  EXPECT_EQ(ini.state(), Session::State::closing);
  EXPECT_EQ(ini.send(pattern(4, 1)), PostStatus::not_connected);
  EXPECT_FALSE(ini.want_shutdown());
  w.pump();
  EXPECT_TRUE(w.find(0, EventKind::read_completed));
  EXPECT_EQ(dst, src);
  EXPECT_EQ(ini.state(), Session::State::closed);
  EXPECT_TRUE(ini.want_shutdown());
}

TEST(SessionTeardown, AfterTerminateInputIsIgnoredUntilAbort) {
  MemoryTable mem;
  Params p{2, false, false, false, RtrType::write};
  Session ini(mem, make_config(Role::initiator, p, mem.alloc_pd()));
  Session res(mem, make_config(Role::responder, p, mem.alloc_pd()));
  Wire w(ini, res);
  res.start();
  ini.start();
  w.pump();
  ini.terminate(TerminateError{0, rdmap_etype::remote_operation, rdmap_code::unspecified});
  w.pump();
  EXPECT_EQ(res.state(), Session::State::terminated);
  EXPECT_EQ(res.send(pattern(4, 1)), PostStatus::not_connected);
  const std::size_t before = w.events(1).size();
  res.receive(Bytes(100, 0x11));  // ignored: no event, no crash
  w.pump();
  EXPECT_EQ(w.events(1).size(), before);
  res.abort();
  EXPECT_EQ(res.state(), Session::State::closed);
  EXPECT_EQ(res.output_size(), 0u);
}

}  // namespace
}  // namespace ddpscope::session

// --- limits against hostile peers (the socket-level tests are hostile_peer_test.cpp) ---------

// Brings an initiator and a responder to Full Operation Phase and returns the responder's
// region (STag) for tagged Writes.
struct Pair {
  MemoryTable mem;
  Params p{2, true, false, false, RtrType::write};
  std::unique_ptr<Session> ini, res;
  Bytes region = Bytes(4096, 0);
  std::uint32_t stag = 0;
  explicit Pair(SessionLimits limits) {
    SessionConfig rc = make_config(Role::responder, p, mem.alloc_pd());
    rc.limits = limits;
    ini = std::make_unique<Session>(mem, make_config(Role::initiator, p, mem.alloc_pd()));
    res = std::make_unique<Session>(mem, rc);
    stag = *mem.register_region(rc.pd, region, 0, access::all);
    Wire w(*ini, *res);
    w.analyze_ = false;
    res->start(1000);
    ini->start(1000);
    w.pump();
  }
  Bytes take_output() {
    Bytes b(ini->output().begin(), ini->output().end());
    ini->consume_output(b.size());
    Event e;
    while (ini->poll_event(e)) {
    }
    return b;
  }
};

TEST(SessionLimits, TinyFloodPausesAtMaxPendingEvents) {
  SessionLimits l;
  l.max_pending_events = 64;
  Pair s(l);
  ASSERT_EQ(s.res->state(), Session::State::established);
  Event e;
  while (s.res->poll_event(e)) {
  }
  for (std::uint32_t i = 0; i < 1000; ++i) {
    const std::uint8_t b = static_cast<std::uint8_t>(i);
    ASSERT_EQ(s.ini->rdma_write(ByteView(&b, 1), s.stag, i % 4096), PostStatus::ok);
  }
  const Bytes flood = s.take_output();
  // In two receives; the second arrives while paused and is kept in order.
  s.res->receive(ByteView(flood).first(flood.size() / 2));
  EXPECT_TRUE(s.res->input_paused());
  EXPECT_EQ(s.res->usage().events, 64u);
  s.res->receive(ByteView(flood).subspan(flood.size() / 2));
  EXPECT_EQ(s.res->usage().events, 64u);
  std::size_t placed = 0;
  for (int guard = 0; guard < 100; ++guard) {
    while (s.res->poll_event(e)) {
      ASSERT_EQ(e.kind, EventKind::write_placed);
      ASSERT_EQ(e.to, placed % 4096);
      ++placed;
    }
    if (!s.res->input_paused()) break;
    s.res->resume_input();
  }
  EXPECT_EQ(placed, 1000u);
  EXPECT_FALSE(s.res->input_paused());
  EXPECT_EQ(s.res->peak_usage().events, 64u);
  EXPECT_EQ(s.res->usage().rx_bytes, 0u);
  EXPECT_EQ(s.res->state(), Session::State::established);
}

TEST(SessionLimits, StalledPartialFpduTimesOutWithoutDelivery) {
  SessionLimits l;
  l.stall_timeout_ns = 5000;
  Pair s(l);
  Bytes buf(256, 0);
  ASSERT_EQ(s.res->post_recv(buf, 7), PostStatus::ok);
  ASSERT_EQ(s.ini->send(pattern(200, 1)), PostStatus::ok);
  const Bytes out = s.take_output();
  s.res->receive(ByteView(out).first(50), 10'000);
  ASSERT_TRUE(s.res->deadline());
  EXPECT_EQ(*s.res->deadline(), 15'000);
  // Trickled octets are no progress: the deadline stays.
  s.res->receive(ByteView(out).subspan(50, 1), 14'000);
  EXPECT_EQ(*s.res->deadline(), 15'000);
  s.res->on_timer(14'999);
  EXPECT_EQ(s.res->state(), Session::State::established);
  s.res->on_timer(15'000);
  EXPECT_EQ(s.res->state(), Session::State::closed);
  EXPECT_TRUE(s.res->want_abort());
  EXPECT_EQ(s.res->usage().rx_bytes, 0u);
  Event e;
  bool stalled = false;
  while (s.res->poll_event(e)) {
    EXPECT_NE(e.kind, EventKind::recv_completed);
    stalled |= e.kind == EventKind::error;
  }
  EXPECT_TRUE(stalled);
}

TEST(SessionLimits, CompleteFpdusKeepAMultiSegmentMessageAlive) {
  SessionLimits l;
  l.stall_timeout_ns = 5000;
  Pair s(l);
  Bytes buf(8000, 0);
  ASSERT_EQ(s.res->post_recv(buf, 7), PostStatus::ok);
  const Bytes msg = pattern(4000, 2);
  ASSERT_EQ(s.ini->send(msg), PostStatus::ok);
  const Bytes out = s.take_output();
  // One FPDU at a time, each within the stall timeout of the last.
  std::size_t pos = 0;
  std::int64_t t = 10'000;
  while (pos < out.size()) {
    const std::size_t n = wire::fpdu_size(load_be16(&out[pos]));
    s.res->receive(ByteView(out).subspan(pos, n), t);
    pos += n;
    t += 4000;
    s.res->on_timer(t);
  }
  EXPECT_EQ(s.res->state(), Session::State::established);
  EXPECT_FALSE(s.res->deadline());
  Event e;
  bool done = false;
  while (s.res->poll_event(e))
    done |= e.kind == EventKind::recv_completed;
  EXPECT_TRUE(done);
  EXPECT_TRUE(std::equal(msg.begin(), msg.end(), buf.begin()));
}

TEST(SessionTeardown, TerminateReceivedAsksForAResetAfterTheTeardownTimeout) {
  SessionLimits l;
  l.teardown_timeout_ns = 3000;
  Pair s(l);
  s.ini->terminate(TerminateError{0, rdmap_etype::remote_operation, rdmap_code::unspecified});
  s.res->receive(s.take_output(), 20'000);
  EXPECT_EQ(s.res->state(), Session::State::terminated);
  ASSERT_TRUE(s.res->deadline());
  EXPECT_EQ(*s.res->deadline(), 23'000);
  s.res->on_timer(22'999);
  EXPECT_FALSE(s.res->want_abort());
  s.res->on_timer(23'000);
  EXPECT_TRUE(s.res->want_abort());
}

}  // namespace
}  // namespace ddpscope::session
