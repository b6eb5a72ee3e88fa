// SPDX-License-Identifier: GPL-2.0-or-later
// Hostile peers on real loopback sockets (issue 8): half-open and slow handshakes, connection
// floods beyond the per-process cap, floods of tiny FPDUs, Read Request storms beyond IRD with a
// peer that does not read, Terminate storms, and peers that vanish in the middle of a message.
// In every case a well-behaved client on the same endpoint Loop keeps doing RDMA Writes, Reads
// and Sends whose data is verified; the endpoint's own counters (Session::peak_usage) bound
// what it holds; short configured timeouts fire; guard bytes around every region stay intact.
#include <gtest/gtest.h>

#include <cstdio>
#include <functional>
#include <map>

#include "ddpscope/wire/mpa.h"
#include "ddpscope/wire/rdmap.h"
#include "raw_peer.h"

namespace ddpscope {
namespace {

using session::Event;
using session::EventKind;
using session::PostStatus;
using State = session::Session::State;
using testing_peer::GuardedRegion;
using testing_peer::pattern;
using testing_peer::RawPeer;

constexpr std::int64_t kMs = 1'000'000;
constexpr std::size_t kRound = 8192;  // octets written and read back per good round
constexpr std::size_t kGoodSend = 300;

struct ArenaOptions {
  std::int64_t handshake_ms = 300;
  std::int64_t stall_ms = 300;
  std::int64_t teardown_ms = 200;
  std::uint16_t ird = 16;
  std::size_t max_pending_events = 4096;
  std::size_t recv_count = 16;  // receive buffers posted on each accepted connection
  std::size_t recv_size = 4096;
};

// What the endpoint saw on one accepted connection.
struct ServerConn {
  std::unique_ptr<GuardedRegion> recv;  // the posted receive buffers, back to back
  std::vector<Event> events;
  Bytes first_octets;  // first octet of every Send received (tiny-Send flood)
  std::size_t count(EventKind k) const {
    return static_cast<std::size_t>(
        std::count_if(events.begin(), events.end(), [k](const Event& e) { return e.kind == k; }));
  }
  bool has_error(const std::string& what) const {
    return std::any_of(events.begin(), events.end(), [&](const Event& e) {
      return e.kind == EventKind::error && e.message.find(what) != std::string::npos;
    });
  }
};

// One listening endpoint Loop with a well-behaved client connected to it. Each good round: an
// RDMA Write of kRound octets to the server's region, an RDMA Read of them back, and a Send;
// the Read's data and the Send's octets are compared when they complete.
class Arena {
 public:
  explicit Arena(ArenaOptions o = {})
      : opt_(o),
        loop_(mem_),
        good_mem_(4 * kRound),
        hostile_mem_(4096),
        client_mem_(4 * kRound),
        client_recv_(4096) {
    scfg_.pd = mem_.alloc_pd();
    scfg_.mpa.crc = true;
    scfg_.mpa.ird = o.ird;
    scfg_.limits.handshake_timeout_ns = o.handshake_ms * kMs;
    scfg_.limits.stall_timeout_ns = o.stall_ms * kMs;
    scfg_.limits.teardown_timeout_ns = o.teardown_ms * kMs;
    scfg_.limits.max_pending_events = o.max_pending_events;
    good_stag_ =
        *mem_.register_region(scfg_.pd, good_mem_.region(), good_mem_.base(), session::access::all);
    hostile_stag_ = *mem_.register_region(scfg_.pd, hostile_mem_.region(), hostile_mem_.base(),
                                          session::access::all);
    ccfg_.pd = mem_.alloc_pd();
    client_stag_ = *mem_.register_region(ccfg_.pd, client_mem_.region(), client_mem_.base(),
                                         session::access::all);
    loop_.on_connection = [this](endpoint::Connection& c) {
      if (c.session().role() == session::Role::initiator) {
        c.session().post_recv(client_recv_.region(), 0);
        return;
      }
      ServerConn& s = servers_[&c];
      s.recv = std::make_unique<GuardedRegion>(opt_.recv_count * opt_.recv_size);
      for (std::size_t i = 0; i < opt_.recv_count; ++i)
        c.session().post_recv(recv_buffer(s, i), i);
    };
    loop_.on_event = [this](endpoint::Connection& c, const Event& e) { on_event(c, e); };
  }
  ~Arena() {
    // Every region, on every connection, kept its guard bytes.
    EXPECT_TRUE(good_mem_.guards_intact());
    EXPECT_TRUE(hostile_mem_.guards_intact());
    EXPECT_TRUE(client_mem_.guards_intact());
    EXPECT_TRUE(client_recv_.guards_intact());
    for (const auto& [c, s] : servers_)
      EXPECT_TRUE(s.recv->guards_intact()) << c->peer();
  }

  // Listens and brings the good client to Full Operation Phase.
  void start() {
    std::string err;
    ASSERT_TRUE(loop_.listen("127.0.0.1", 0, scfg_, err)) << err;
    client_ = loop_.connect("127.0.0.1", loop_.listen_port(), ccfg_, err);
    ASSERT_TRUE(client_) << err;
    ASSERT_TRUE(loop_.run_until(
        [&] {
          const endpoint::Connection* g = good_server();
          return g && g->session().state() == State::established &&
                 client_->session().state() == State::established;
        },
        5000));
  }

  session::MemoryTable& mem() { return mem_; }
  endpoint::Loop& loop() { return loop_; }
  std::uint16_t port() const { return loop_.listen_port(); }
  std::uint32_t hostile_stag() const { return hostile_stag_; }
  GuardedRegion& hostile_mem() { return hostile_mem_; }
  std::uint32_t server_pd() const { return scfg_.pd; }
  const session::SessionConfig& server_config() const { return scfg_; }

  // The endpoint's side of a raw peer's connection (nullptr until accepted).
  endpoint::Connection* server_for(const RawPeer& p) {
    const std::string want = "127.0.0.1:" + std::to_string(p.local_port());
    for (auto& c : loop_.connections())
      if (c->session().role() == session::Role::responder && c->peer() == want) return c.get();
    return nullptr;
  }
  ServerConn& state_of(endpoint::Connection* c) { return servers_.at(c); }
  endpoint::Connection* good_server() {
    if (!client_ || client_->local_port() == 0) return nullptr;
    const std::string want = "127.0.0.1:" + std::to_string(client_->local_port());
    for (auto& c : loop_.connections())
      if (c->session().role() == session::Role::responder && c->peer() == want) return c.get();
    return nullptr;
  }

  // Poll rounds (moving every raw peer's octets too) until `done` or the time is up.
  bool run(const std::function<bool()>& done, int timeout_ms,
           const std::vector<RawPeer*>& peers = {}) {
    const std::int64_t end = endpoint::now_ns() + timeout_ms * kMs;
    while (!done()) {
      if (endpoint::now_ns() > end) return false;
      for (RawPeer* p : peers)
        p->step();
      loop_.poll_once(2);
      for (RawPeer* p : peers)
        p->read_available();
      step_good();
    }
    return true;
  }
  // A raw peer's MPA handshake (the crafting session as initiator) against the endpoint.
  endpoint::Connection* handshake(RawPeer& p) {
    p.craft().start();
    endpoint::Connection* c = nullptr;
    run(
        [&] {
          c = server_for(p);
          return c && c->session().state() == State::established &&
                 p.craft().state() == State::established;
        },
        5000, {&p});
    return c;
  }

  std::size_t good_rounds() const { return rounds_done_; }
  // `more` further good rounds after the hostile part, then every good check.
  void finish_good(std::size_t more = 3) {
    const std::size_t target = rounds_done_ + more;
    EXPECT_TRUE(run([&] { return rounds_done_ >= target || good_errors_ > 0; }, 5000))
        << "good client stuck after " << rounds_done_ << " rounds";
    EXPECT_EQ(good_errors_, 0u) << good_log_;
    EXPECT_GE(rounds_done_, target);
    EXPECT_EQ(client_->session().state(), State::established);
    EXPECT_FALSE(client_->done());
  }

 private:
  std::span<std::uint8_t> recv_buffer(ServerConn& s, std::size_t i) {
    return s.recv->region().subspan(i * opt_.recv_size, opt_.recv_size);
  }
  void step_good() {
    if (!client_ || in_round_ || client_->session().state() != State::established) return;
    const std::size_t r = rounds_started_++;
    round_off_ = (r % 4) * kRound;
    round_data_ = pattern(kRound, static_cast<std::uint8_t>(r));
    round_send_ = pattern(kGoodSend, static_cast<std::uint8_t>(r + 77));
    auto& cs = client_->session();
    const bool ok = cs.rdma_write(round_data_, good_stag_, good_mem_.base() + round_off_, r) ==
                        PostStatus::ok &&
                    cs.rdma_read(client_stag_, client_mem_.base() + round_off_, kRound, good_stag_,
                                 good_mem_.base() + round_off_, r) == PostStatus::ok &&
                    cs.send(round_send_) == PostStatus::ok;
    if (!ok) fail_good("post failed in round " + std::to_string(r));
    in_round_ = true;
    read_ok_ = recv_ok_ = false;
  }
  void fail_good(const std::string& why) {
    ++good_errors_;
    good_log_ += why + "\n";
  }
  void round_part_done() {
    if (read_ok_ && recv_ok_) {
      in_round_ = false;
      ++rounds_done_;
    }
  }
  void on_event(endpoint::Connection& c, const Event& e) {
    if (&c == client_) {
      if (e.kind == EventKind::read_completed) {
        if (!std::equal(round_data_.begin(), round_data_.end(), client_mem_.data() + round_off_))
          fail_good("read data differs in round " + std::to_string(rounds_done_));
        read_ok_ = true;
        round_part_done();
      } else if (e.kind == EventKind::error || e.kind == EventKind::terminate_received ||
                 e.kind == EventKind::terminate_sent || e.kind == EventKind::closed) {
        fail_good("client: " + std::string(session::to_string(e.kind)) + " " + e.message);
      }
      return;
    }
    auto it = servers_.find(&c);
    if (it == servers_.end()) return;
    ServerConn& s = it->second;
    const bool good = &c == good_server();
    if (!good) s.events.push_back(e);
    if (e.kind == EventKind::recv_completed) {
      const std::span<std::uint8_t> buf = recv_buffer(s, e.wr_id);
      if (good) {
        if (e.length != kGoodSend ||
            !std::equal(round_send_.begin(), round_send_.end(), buf.data()))
          fail_good("send data differs in round " + std::to_string(rounds_done_));
        recv_ok_ = true;
        round_part_done();
      } else if (e.length > 0) {
        s.first_octets.push_back(buf[0]);
      }
      c.session().post_recv(buf, e.wr_id);
    } else if (good && (e.kind == EventKind::error || e.kind == EventKind::terminate_received ||
                        e.kind == EventKind::terminate_sent)) {
      fail_good("good server side: " + std::string(session::to_string(e.kind)) + " " + e.message);
    }
  }

  ArenaOptions opt_;
  session::MemoryTable mem_;
  endpoint::Loop loop_;
  session::SessionConfig scfg_;
  session::SessionConfig ccfg_;
  GuardedRegion good_mem_;
  GuardedRegion hostile_mem_;
  GuardedRegion client_mem_;
  GuardedRegion client_recv_;
  std::uint32_t good_stag_ = 0;
  std::uint32_t hostile_stag_ = 0;
  std::uint32_t client_stag_ = 0;
  endpoint::Connection* client_ = nullptr;
  std::map<endpoint::Connection*, ServerConn> servers_;
  // The good client's rounds.
  bool in_round_ = false;
  bool read_ok_ = false;
  bool recv_ok_ = false;
  std::size_t rounds_started_ = 0;
  std::size_t rounds_done_ = 0;
  std::size_t round_off_ = 0;
  Bytes round_data_;
  Bytes round_send_;
  std::size_t good_errors_ = 0;
  std::string good_log_;
};

// The octet sizes of the FPDUs back to back in `raw` (no markers).
std::vector<std::size_t> fpdu_sizes(ByteView raw) {
  std::vector<std::size_t> out;
  for (std::size_t pos = 0; pos + 2 <= raw.size();) {
    const std::size_t n = wire::fpdu_size(load_be16(&raw[pos]));
    out.push_back(n);
    pos += n;
  }
  return out;
}

Bytes untagged_ulpdu(wire::Opcode opcode, std::uint32_t qn, std::uint32_t msn, ByteView body) {
  Bytes u;
  ByteWriter w(u);
  wire::DdpHeader h;
  h.control.last = true;
  h.rsvd_ulp0 =
      wire::RdmapControl{wire::kRdmapVersion, 0, static_cast<std::uint8_t>(opcode)}.byte();
  h.qn = qn;
  h.msn = msn;
  wire::encode_ddp_header(h, w);
  w.bytes(body);
  return u;
}

void report(const char* what, const session::SessionUsage& u) {
  std::printf("[hostile] %s: peak rx %zu, tx %zu, events %zu, IRQ %zu, held %zu octets\n", what,
              u.rx_bytes, u.tx_bytes, u.events, u.inbound_reads, u.held_bytes);
}

// Restores the per-process connection cap however the test ends.
struct CapGuard {
  std::size_t old = endpoint::max_connections();
  ~CapGuard() { endpoint::set_max_connections(old); }
};

// 1. A TCP connect that never sends the MPA Request, and one that trickles it one octet every
// 40 ms: both are failed at the handshake timeout (FIN), and reset after the teardown timeout
// since these peers never close; their slots are free again.
TEST(HostilePeers, HalfOpenAndSlowHandshakesTimeOut) {
  Arena a;
  a.start();
  const std::size_t open_before = endpoint::open_connections();
  RawPeer silent(a.port(), a.mem(), false);
  RawPeer slow(a.port(), a.mem(), false);
  ASSERT_TRUE(silent.connected() && slow.connected());
  slow.craft().start();
  const Bytes request = slow.take_craft_output();
  std::size_t trickled = 0;
  std::int64_t next = 0;
  const std::size_t rounds_before = a.good_rounds();
  endpoint::Connection* vs = nullptr;
  endpoint::Connection* vt = nullptr;
  ASSERT_TRUE(a.run(
      [&] {
        if (trickled < request.size() && endpoint::now_ns() >= next && !slow.write_failed()) {
          slow.write_raw(ByteView(request).subspan(trickled++, 1));
          next = endpoint::now_ns() + 40 * kMs;
        }
        vs = a.server_for(silent);
        vt = a.server_for(slow);
        return vs && vt && vs->done() && vt->done();
      },
      5000, {&silent, &slow}));
  EXPECT_LT(trickled, request.size());  // the Request never completed
  std::printf(
      "[hostile] handshakes: timeout %lld ms, teardown %lld ms; slow peer sent %zu of %zu "
      "octets\n",
      static_cast<long long>(a.server_config().limits.handshake_timeout_ns / kMs),
      static_cast<long long>(a.server_config().limits.teardown_timeout_ns / kMs), trickled,
      request.size());
  for (endpoint::Connection* v : {vs, vt}) {
    EXPECT_EQ(v->session().state(), State::closed);  // failed, then reset
    EXPECT_TRUE(a.state_of(v).has_error("MPA handshake timed out"));
    EXPECT_EQ(a.state_of(v).count(EventKind::connected), 0u);
    EXPECT_LE(v->session().peak_usage().rx_bytes, request.size());
  }
  EXPECT_GE(a.loop().timed_out(), 2u);
  a.run([&] { return silent.eof() && slow.eof(); }, 2000, {&silent, &slow});
  EXPECT_TRUE(silent.eof());
  EXPECT_EQ(endpoint::open_connections(), open_before);
  EXPECT_GT(a.good_rounds(), rounds_before);  // served the good client meanwhile
  a.finish_good();
}

// 2. Twenty connections against a cap of six more: six are served, fourteen are reset at once;
// once the six close, six new ones are accepted (no slot or descriptor leaked).
TEST(HostilePeers, ConnectionFloodBeyondCap) {
  Arena a;
  a.start();
  CapGuard cap;
  const std::size_t open_before = endpoint::open_connections();
  constexpr std::size_t kAllowed = 6;
  constexpr std::size_t kFlood = 20;
  endpoint::set_max_connections(open_before + kAllowed);
  std::vector<std::unique_ptr<RawPeer>> peers;
  std::vector<RawPeer*> all;
  for (std::size_t i = 0; i < kFlood; ++i) {
    peers.push_back(std::make_unique<RawPeer>(a.port(), a.mem(), false));
    ASSERT_TRUE(peers.back()->connected());
    peers.back()->craft().start();
    all.push_back(peers.back().get());
    if (i % 5 == 4) a.run([] { return false; }, 20, all);  // the listen backlog is 16
  }
  const auto settled = [&] {
    std::size_t up = 0, refused = 0;
    for (auto& p : peers) {
      up += p->craft().state() == State::established;
      refused += p->eof();
    }
    return std::make_pair(up, refused);
  };
  ASSERT_TRUE(a.run(
      [&] {
        const auto [up, refused] = settled();
        return up + refused == kFlood;
      },
      5000, all));
  EXPECT_EQ(settled().first, kAllowed);
  EXPECT_EQ(a.loop().refused(), kFlood - kAllowed);
  EXPECT_EQ(endpoint::open_connections(), open_before + kAllowed);
  // The admitted ones work: each sends a message that lands intact.
  std::vector<endpoint::Connection*> served;
  for (auto& p : peers) {
    if (p->craft().state() != State::established) continue;
    served.push_back(a.server_for(*p));
    ASSERT_TRUE(served.back());
    ASSERT_EQ(p->craft().send(pattern(100, 9)), PostStatus::ok);
  }
  ASSERT_TRUE(a.run(
      [&] {
        return std::all_of(served.begin(), served.end(), [&](endpoint::Connection* c) {
          return a.state_of(c).count(EventKind::recv_completed) == 1;
        });
      },
      5000, all));
  // They leave; their slots come back.
  for (auto& p : peers)
    p->close();
  ASSERT_TRUE(a.run([&] { return endpoint::open_connections() == open_before; }, 5000));
  std::vector<std::unique_ptr<RawPeer>> again;
  std::vector<RawPeer*> again_raw;
  for (std::size_t i = 0; i < kAllowed; ++i) {
    again.push_back(std::make_unique<RawPeer>(a.port(), a.mem(), false));
    again.back()->craft().start();
    again_raw.push_back(again.back().get());
  }
  EXPECT_TRUE(a.run(
      [&] {
        return std::all_of(again.begin(), again.end(),
                           [](const auto& p) { return p->craft().state() == State::established; });
      },
      5000, again_raw));
  EXPECT_EQ(a.loop().refused(), kFlood - kAllowed);
  std::printf("[hostile] connection flood: %zu attempts, %zu served, %llu reset at accept\n",
              kFlood, kAllowed, static_cast<unsigned long long>(a.loop().refused()));
  a.finish_good();
}

// 3. 20000 one-octet RDMA Writes and 20000 one-octet Sends back to back (about 1 MB of FPDUs):
// every one is placed where it belongs, and the session never holds more than
// max_pending_events events or more than one socket read of input.
TEST(HostilePeers, TinyFpduFloodStaysBounded) {
  ArenaOptions o;
  o.max_pending_events = 256;
  o.recv_count = 512;
  o.recv_size = 512;
  Arena a(o);
  a.start();
  RawPeer p(a.port(), a.mem(), true);
  ASSERT_TRUE(p.connected());
  endpoint::Connection* v = a.handshake(p);
  ASSERT_TRUE(v);
  constexpr std::size_t kN = 20000;
  const std::uint64_t base = a.hostile_mem().base();
  Bytes expect(4096, 0);
  for (std::size_t i = 0; i < kN; ++i) {
    const std::uint8_t b = static_cast<std::uint8_t>(i * 7 + 1);
    ASSERT_EQ(p.craft().rdma_write(ByteView(&b, 1), a.hostile_stag(), base + i % 4096),
              PostStatus::ok);
    expect[i % 4096] = b;
    const std::uint8_t s = static_cast<std::uint8_t>(i);
    ASSERT_EQ(p.craft().send(ByteView(&s, 1)), PostStatus::ok);
    Event e;
    while (p.craft().poll_event(e)) {
    }
  }
  const std::size_t flood_octets = p.craft().output_size();
  const std::size_t rounds_before = a.good_rounds();
  ServerConn& sv = a.state_of(v);
  ASSERT_TRUE(a.run(
      [&] {
        return sv.count(EventKind::recv_completed) == kN ||
               v->session().state() != State::established;
      },
      20000, {&p}));
  EXPECT_EQ(v->session().state(), State::established);
  EXPECT_EQ(sv.count(EventKind::write_placed), kN);
  EXPECT_EQ(sv.count(EventKind::recv_completed), kN);
  EXPECT_EQ(v->session().bytes_placed(), kN);  // tagged placement
  EXPECT_TRUE(std::equal(expect.begin(), expect.end(), a.hostile_mem().data()));
  ASSERT_EQ(sv.first_octets.size(), kN);
  for (std::size_t i = 0; i < kN; ++i)
    ASSERT_EQ(sv.first_octets[i], static_cast<std::uint8_t>(i)) << i;
  const session::SessionUsage peak = v->session().peak_usage();
  report("tiny-FPDU flood", peak);
  std::printf("[hostile] tiny-FPDU flood: %zu FPDUs, %zu octets\n", 2 * kN, flood_octets);
  EXPECT_LE(peak.events, o.max_pending_events + 1);
  EXPECT_LE(peak.rx_bytes, (1u << 20) + 65536);  // one socket read, or one FPDU
  EXPECT_LE(peak.held_bytes, 3u << 20);
  EXPECT_GT(a.good_rounds(), rounds_before);
  a.finish_good();
}

// 4. A peer that never reads its socket asks for 4 x 2 MB with IRD 4: the endpoint's transmit
// queue stays under tx_low_water plus one chunk. Then five more Read Requests: beyond IRD, so
// the endpoint sends Terminate RDMAP / Remote Operation / 0x07 (catastrophic, localized to the
// stream) and drops its Read Response queue. That code is what Linux siw sends for a full IRQ
// (reference: "How Linux siw behaves"); the reference does not say which code RFC 5040 wants.
TEST(HostilePeers, ReadStormBeyondIrd_TerminateAsSiw_RfcCodeUnverified) {
  ArenaOptions o;
  o.ird = 4;
  o.teardown_ms = 5000;  // the peer reads the Terminate before the reset
  Arena a(o);
  constexpr std::size_t kBig = 2u << 20;
  GuardedRegion big(kBig);
  {
    const Bytes fill = pattern(kBig, 42);
    std::copy(fill.begin(), fill.end(), big.data());
  }
  const std::uint32_t big_stag =
      *a.mem().register_region(a.server_pd(), big.region(), big.base(), session::access::all);
  a.start();
  RawPeer p(a.port(), a.mem(), true, 4096);
  ASSERT_TRUE(p.connected());
  endpoint::Connection* v = a.handshake(p);
  ASSERT_TRUE(v);
  ASSERT_EQ(v->session().negotiated().ird, 4);
  ASSERT_EQ(p.craft().negotiated().ord, 4);
  GuardedRegion sink(kBig);
  const std::uint32_t sink_stag =
      *a.mem().register_region(p.craft().pd(), sink.region(), sink.base(), session::access::all);
  // Slow reader: four legitimate 2 MB Reads, and the peer stops reading.
  p.set_reading(false);
  for (std::uint64_t k = 0; k < 4; ++k)
    ASSERT_EQ(p.craft().rdma_read(sink_stag, sink.base(), kBig, big_stag, big.base(), k),
              PostStatus::ok);
  const auto& limits = a.server_config().limits;
  const std::size_t rounds_before = a.good_rounds();
  // Backed up: the kernel's buffers are full and the session keeps its queue at the low water.
  std::uint64_t last_out = 0;
  int still = 0;
  ASSERT_TRUE(a.run(
      [&] {
        const std::uint64_t out = v->bytes_out();
        still = out == last_out ? still + 1 : 0;
        last_out = out;
        return v->session().output_size() >= limits.tx_low_water && still > 50;
      },
      10000, {&p}));
  EXPECT_GT(v->session().usage().inbound_reads, 0u);
  EXPECT_LT(v->bytes_out(), 4 * kBig);
  // Five more Read Requests (MSN 5..9), while not reading.
  wire::ReadRequest rr;
  rr.sink_stag = sink_stag;
  rr.sink_to = sink.base();
  rr.size = 16;
  rr.source_stag = big_stag;
  rr.source_to = big.base();
  Bytes body;
  ByteWriter w(body);
  wire::encode_read_request(rr, w);
  for (std::uint32_t msn = 5; msn < 10; ++msn)
    p.craft().send_raw_ulpdu(
        untagged_ulpdu(wire::Opcode::read_request, wire::kQnReadRequest, msn, body));
  ASSERT_TRUE(a.run([&] { return v->session().terminate_sent().has_value(); }, 5000, {&p}));
  const TerminateError expect{static_cast<std::uint8_t>(TermLayer::rdmap),
                              rdmap_etype::remote_operation, rdmap_code::catastrophic_stream};
  EXPECT_EQ(*v->session().terminate_sent(), expect)
      << terminate_error_name(*v->session().terminate_sent());
  EXPECT_EQ(v->session().state(), State::terminated);
  EXPECT_EQ(v->session().usage().inbound_reads, 0u);
  const session::SessionUsage peak = v->session().peak_usage();
  report("slow reader + Read storm", peak);
  EXPECT_LE(peak.inbound_reads, 4u);
  EXPECT_LE(peak.tx_bytes, limits.tx_low_water + (256u << 10) + (32u << 10));
  // The peer reads again: the Read Responses already queued, then the Terminate.
  p.set_reading(true);
  ASSERT_TRUE(
      a.run([&] { return p.craft().terminate_received().has_value() || p.eof(); }, 10000, {&p}));
  ASSERT_TRUE(p.craft().terminate_received());
  EXPECT_EQ(*p.craft().terminate_received(), expect);
  const std::size_t placed = std::min<std::size_t>(p.craft().bytes_placed(), kBig);
  EXPECT_GT(placed, 0u);
  EXPECT_TRUE(std::equal(sink.data(), sink.data() + placed, big.data()));
  EXPECT_TRUE(sink.guards_intact());
  EXPECT_TRUE(big.guards_intact());
  std::printf("[hostile] Read storm: IRD 4, %zu octets of Read Response reached the peer\n",
              static_cast<std::size_t>(p.craft().bytes_placed()));
  EXPECT_GT(a.good_rounds(), rounds_before);
  a.finish_good();
}

// 5. A thousand Terminates and 64 KB of garbage after them: the first is reported, the rest
// is dropped unread into nothing, no Terminate is sent back, and the endpoint resets the
// connection at the teardown timeout (RFC 5040 §5.4) since the application did not.
TEST(HostilePeers, TerminateStormHandledOnceThenTornDown) {
  Arena a;
  a.start();
  const std::size_t open_before = endpoint::open_connections();
  RawPeer p(a.port(), a.mem(), true);
  ASSERT_TRUE(p.connected());
  endpoint::Connection* v = a.handshake(p);
  ASSERT_TRUE(v);
  wire::Terminate t;
  t.control.layer = static_cast<std::uint8_t>(TermLayer::rdmap);
  t.control.etype = rdmap_etype::remote_operation;
  t.control.code = rdmap_code::unspecified;
  Bytes body;
  ByteWriter w(body);
  wire::encode_terminate(t, wire::TerminateLayout::rfc, w);
  for (std::uint32_t msn = 1; msn <= 1000; ++msn)
    p.craft().send_raw_ulpdu(
        untagged_ulpdu(wire::Opcode::terminate, wire::kQnTerminate, msn, body));
  p.step();
  p.write_raw(pattern(65536, 3));
  const std::uint64_t timed_out_before = a.loop().timed_out();
  ASSERT_TRUE(a.run([&] { return v->done(); }, 5000, {&p}));
  const ServerConn& sv = a.state_of(v);
  EXPECT_EQ(sv.count(EventKind::terminate_received), 1u);
  EXPECT_EQ(sv.count(EventKind::terminate_sent), 0u);
  ASSERT_TRUE(v->session().terminate_received());
  EXPECT_EQ(*v->session().terminate_received(),
            (TerminateError{t.control.layer, t.control.etype, t.control.code}));
  EXPECT_FALSE(v->session().terminate_sent());
  EXPECT_EQ(a.loop().timed_out(), timed_out_before + 1);
  const session::SessionUsage peak = v->session().peak_usage();
  report("Terminate storm", peak);
  EXPECT_LE(peak.events, 2u);
  EXPECT_LE(peak.rx_bytes, 65536u + 8);
  a.run([&] { return p.eof(); }, 2000, {&p});
  EXPECT_TRUE(p.eof());
  EXPECT_EQ(endpoint::open_connections(), open_before);
  a.finish_good();
}

// 6. Peers that vanish mid-message: half a Send FPDU then silence; two of the three FPDUs of a
// Send then silence; half a Send FPDU then RST; two of the three FPDUs of an RDMA Write then
// RST. No half message is ever delivered; the silent ones are dropped at the stall timeout, the
// reset ones at once; nothing outside the regions is touched.
TEST(HostilePeers, PeerVanishingMidMessageIsCleanedUp) {
  Arena a;
  a.start();
  const std::size_t open_before = endpoint::open_connections();
  struct Case {
    const char* name;
    bool write;     // RDMA Write instead of Send
    bool segments;  // whole FPDUs of a 3-FPDU message (else half of one FPDU)
    bool rst;
  };
  const Case cases[] = {{"half FPDU, silent", false, false, false},
                        {"2 of 3 segments, silent", false, true, false},
                        {"half FPDU, RST", false, false, true},
                        {"2 of 3 Write segments, RST", true, true, true}};
  std::vector<std::unique_ptr<RawPeer>> peers;
  std::vector<RawPeer*> raw;
  std::vector<endpoint::Connection*> victims;
  std::vector<std::uint64_t> expect_in;  // octets the endpoint will have read
  for (const Case& k : cases) {
    peers.push_back(std::make_unique<RawPeer>(a.port(), a.mem(), true));
    RawPeer& p = *peers.back();
    ASSERT_TRUE(p.connected());
    victims.push_back(a.handshake(p));
    ASSERT_TRUE(victims.back()) << k.name;
    const Bytes msg = pattern(k.segments ? 3000 : 200, 5);
    if (k.write)
      ASSERT_EQ(p.craft().rdma_write(msg, a.hostile_stag(), a.hostile_mem().base()),
                PostStatus::ok);
    else
      ASSERT_EQ(p.craft().send(msg), PostStatus::ok);
    const Bytes out = p.take_craft_output();
    const std::vector<std::size_t> sizes = fpdu_sizes(out);
    ASSERT_EQ(sizes.size(), k.segments ? 3u : 1u) << k.name;
    const std::size_t n = k.segments ? sizes[0] + sizes[1] : sizes[0] / 2;
    expect_in.push_back(victims.back()->bytes_in() + n);
    p.write_raw(ByteView(out).first(n));
  }
  for (auto& p : peers)
    raw.push_back(p.get());
  // The octets arrive; the RST ones then reset.
  ASSERT_TRUE(a.run(
      [&] {
        for (std::size_t i = 0; i < victims.size(); ++i)
          if (victims[i]->bytes_in() < expect_in[i]) return false;
        return true;
      },
      3000, raw));
  for (std::size_t i = 0; i < std::size(cases); ++i)
    if (cases[i].rst) peers[i]->reset();
  ASSERT_TRUE(a.run(
      [&] {
        return std::all_of(victims.begin(), victims.end(),
                           [](endpoint::Connection* c) { return c->done(); });
      },
      5000, raw));
  for (std::size_t i = 0; i < std::size(cases); ++i) {
    const Case& k = cases[i];
    const ServerConn& sv = a.state_of(victims[i]);
    EXPECT_EQ(sv.count(EventKind::recv_completed), 0u) << k.name;
    EXPECT_EQ(sv.count(EventKind::write_placed), 0u) << k.name;
    EXPECT_EQ(sv.count(EventKind::terminate_sent), 0u) << k.name;
    if (k.rst)
      EXPECT_EQ(sv.count(EventKind::closed), 1u) << k.name;
    else
      EXPECT_TRUE(sv.has_error("stalled")) << k.name;
    EXPECT_EQ(victims[i]->session().usage().rx_bytes, 0u) << k.name;
    EXPECT_LE(victims[i]->session().peak_usage().rx_bytes, 1500u) << k.name;
    report(k.name, victims[i]->session().peak_usage());
  }
  EXPECT_EQ(endpoint::open_connections(), open_before);
  a.finish_good();
}

}  // namespace
}  // namespace ddpscope
