// SPDX-License-Identifier: GPL-2.0-or-later
// The endpoint over real loopback sockets, captured on "lo" with LiveCapture (root) and
// analyzed by core's Analyzer: a clean exchange of every operation has no error finding; a
// hostile raw-socket peer breaking one rule draws the right Terminate, nothing is written
// outside the registered region, and the analyzer's Terminate finding matches what was sent.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <mutex>
#include <thread>

#include "ddpscope/analysis/analyzer.h"
#include "ddpscope/capture/live_capture.h"
#include "ddpscope/endpoint/endpoint.h"
#include "raw_peer.h"

namespace ddpscope {
namespace {

using session::Event;
using session::EventKind;
using session::PostStatus;
using State = session::Session::State;
using testing_peer::addr_of;
using testing_peer::pattern;
using testing_peer::RawPeer;

// Captures "tcp port P" on lo in a thread; frames are analyzed afterwards.
class LoCapture {
 public:
  explicit LoCapture(std::uint16_t port) {
    std::string err;
    cap_ = capture::LiveCapture::open("lo", "tcp port " + std::to_string(port), err);
    if (!cap_) {
      error_ = err;
      return;
    }
    thread_ = std::thread([this] {
      capture::Frame f;
      while (true) {
        const int rc = cap_->next(f, 20);
        if (rc < 0) break;
        if (rc == 0) {
          if (stop_) break;
          continue;
        }
        std::lock_guard<std::mutex> g(mu_);
        frames_.push_back(
            {f.number, f.ts_ns, f.link_type, Bytes(f.data.begin(), f.data.end()), f.wire_length});
      }
    });
  }
  ~LoCapture() { stop(); }
  const std::string& error() const { return error_; }
  // Waits for the kernel to deliver the last frames, then stops.
  void stop() {
    if (!thread_.joinable()) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    stop_ = true;
    thread_.join();
  }
  const Model& analyze(Analyzer& a) {
    for (const auto& f : frames_)
      a.feed_frame(f.number, f.ts, f.link, f.data, f.wire);
    a.finish();
    return a.model();
  }
  std::size_t frames() const { return frames_.size(); }

 private:
  struct F {
    std::uint64_t number;
    std::int64_t ts;
    std::uint32_t link;
    Bytes data;
    std::uint32_t wire;
  };
  std::unique_ptr<capture::LiveCapture> cap_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::vector<F> frames_;
  std::string error_;
};

std::string errors_of(const Model& m) {
  std::string s;
  for (const auto& f : m.findings)
    if (f.severity == Severity::error) s += std::string(f.code()) + ": " + f.message + "\n";
  return s;
}

struct Params {
  std::uint8_t revision;
  bool crc;
  bool markers;
};

class EndpointPair : public ::testing::TestWithParam<Params> {};

TEST_P(EndpointPair, EveryOperationCapturedClean) {
  const Params p = GetParam();
  session::MemoryTable mem;
  endpoint::Loop loop(mem);
  session::SessionConfig scfg;
  scfg.pd = mem.alloc_pd();
  scfg.mpa.revision = p.revision;
  scfg.mpa.markers = p.markers;
  session::SessionConfig ccfg = scfg;
  ccfg.pd = mem.alloc_pd();
  ccfg.mpa.crc = p.crc;
  scfg.mpa.crc = false;
  std::string err;
  ASSERT_TRUE(loop.listen("127.0.0.1", 0, scfg, err)) << err;
  LoCapture cap(loop.listen_port());
  ASSERT_EQ(cap.error(), "");

  // Server memory: one region the client writes, reads and hits with atomics.
  Bytes smem(200000);
  const std::uint32_t sstag =
      *mem.register_region(scfg.pd, smem, addr_of(smem), session::access::all);
  Bytes cmem(200000);
  const std::uint32_t cstag =
      *mem.register_region(ccfg.pd, cmem, addr_of(cmem), session::access::all);
  std::vector<Bytes> srecv(8, Bytes(70000)), crecv(8, Bytes(70000));
  std::vector<Event> sev, cev;
  endpoint::Connection* server = nullptr;
  loop.on_connection = [&](endpoint::Connection& c) {
    const bool is_server = c.session().role() == session::Role::responder;
    auto& bufs = is_server ? srecv : crecv;
    for (std::size_t i = 0; i < bufs.size(); ++i)
      c.session().post_recv(bufs[i], i);
    if (is_server) server = &c;
  };
  loop.on_event = [&](endpoint::Connection& c, const Event& e) {
    (c.session().role() == session::Role::responder ? sev : cev).push_back(e);
  };
  endpoint::Connection* client = loop.connect("127.0.0.1", loop.listen_port(), ccfg, err);
  ASSERT_TRUE(client) << err;
  ASSERT_TRUE(loop.run_until(
      [&] {
        return server && server->session().state() == State::established &&
               client->session().state() == State::established;
      },
      3000));
  auto& cs = client->session();
  auto& ss = server->session();
  // Sends (plain, SE, large), a large Write, a Read, immediate data, atomics, and a Send the
  // server answers with Send with Invalidate of one of the client's STags.
  const Bytes big = pattern(65536, 3);
  ASSERT_EQ(cs.send(pattern(100, 1)), PostStatus::ok);
  session::Session::SendOptions se;
  se.solicited = true;
  ASSERT_EQ(cs.send(big, se), PostStatus::ok);
  const Bytes wdata = pattern(150000, 5);
  ASSERT_EQ(cs.rdma_write(wdata, sstag, addr_of(smem) + 1000), PostStatus::ok);
  ASSERT_EQ(cs.rdma_read(cstag, addr_of(cmem) + 4, 120000, sstag, addr_of(smem) + 1000, 9),
            PostStatus::ok);
  ASSERT_EQ(cs.send_immediate(0xABCDEF), PostStatus::ok);
  std::uint64_t v = 5;
  std::memcpy(smem.data() + 180000, &v, 8);
  ASSERT_EQ(cs.atomic_fetch_add(sstag, addr_of(smem) + 180000, 10), PostStatus::ok);
  Bytes inv_mem(64);
  const std::uint32_t inv_stag = *mem.register_region(ccfg.pd, inv_mem, 0, session::access::all);
  session::Session::SendOptions so;
  so.invalidate_stag = inv_stag;
  ASSERT_EQ(ss.send(pattern(10, 7), so), PostStatus::ok);
  ASSERT_TRUE(loop.run_until(
      [&] {
        int recvs = 0, reads = 0, atom = 0, imm = 0, crecvs = 0;
        for (const auto& e : sev) {
          recvs += e.kind == EventKind::recv_completed;
          imm += e.kind == EventKind::immediate_received;
        }
        for (const auto& e : cev) {
          reads += e.kind == EventKind::read_completed;
          atom += e.kind == EventKind::atomic_completed;
          crecvs += e.kind == EventKind::recv_completed;
        }
        return recvs == 2 && reads == 1 && atom == 1 && imm == 1 && crecvs == 1;
      },
      5000));
  EXPECT_TRUE(std::equal(wdata.begin(), wdata.end(), smem.begin() + 1000));
  EXPECT_TRUE(std::equal(wdata.begin(), wdata.begin() + 120000, cmem.begin() + 4));
  EXPECT_TRUE(std::equal(big.begin(), big.end(), srecv[1].begin()));
  EXPECT_FALSE(mem.find(inv_stag)->valid);
  std::memcpy(&v, smem.data() + 180000, 8);
  EXPECT_EQ(v, 15u);
  cs.close();
  ASSERT_TRUE(loop.run_until([&] { return client->done() && server->done(); }, 3000));
  cap.stop();
  Analyzer analyzer;
  const Model& m = cap.analyze(analyzer);
  ASSERT_EQ(m.streams.size(), 1u);
  EXPECT_EQ(m.streams[0].state, StreamState::full);
  EXPECT_EQ(m.streams[0].dirs[0].crc_errors, 0u);
  EXPECT_EQ(errors_of(m), "");
  EXPECT_GT(m.streams[0].dirs[0].fpdus, 5u);
}

INSTANTIATE_TEST_SUITE_P(All, EndpointPair,
                         ::testing::Values(Params{1, false, false}, Params{1, true, true},
                                           Params{2, false, false}, Params{2, true, false},
                                           Params{2, false, true}, Params{2, true, true}),
                         [](const auto& info) {
                           return "rev" + std::to_string(info.param.revision) +
                                  (info.param.crc ? "_crc" : "_nocrc") +
                                  (info.param.markers ? "_markers" : "");
                         });

// --- hostile raw-socket peer ----------------------------------------------------------------

struct Case {
  const char* name;
  TerminateError expect;
};

class HostilePeer : public ::testing::TestWithParam<Case> {};

TEST_P(HostilePeer, AnswersWithTheRightTerminate) {
  const Case k = GetParam();
  const std::string name = k.name;
  session::MemoryTable mem;
  endpoint::Loop loop(mem);
  session::SessionConfig vcfg;
  vcfg.pd = mem.alloc_pd();
  vcfg.mpa.crc = true;
  std::string err;
  ASSERT_TRUE(loop.listen("127.0.0.1", 0, vcfg, err)) << err;
  LoCapture cap(loop.listen_port());
  ASSERT_EQ(cap.error(), "");
  // The victim's region with guard bytes on both sides, and one receive buffer of 64 octets.
  Bytes backing(256 + 64, 0xA5);
  std::span<std::uint8_t> region(backing.data() + 32, 256);
  const std::uint64_t base = 0x100000;
  const std::uint32_t stag = *mem.register_region(vcfg.pd, region, base, session::access::all);
  const std::uint32_t other_pd = mem.alloc_pd();
  const std::uint32_t foreign = *mem.register_region(other_pd, region, base, session::access::all);
  const std::uint32_t bound =
      *mem.register_region(vcfg.pd, region, base, session::access::all, 0xDEAD);
  Bytes recv(64, 0);
  endpoint::Connection* victim = nullptr;
  loop.on_connection = [&](endpoint::Connection& c) {
    victim = &c;
    c.session().post_recv(recv, 1);
  };
  RawPeer peer(loop.listen_port(), mem, true);
  ASSERT_TRUE(peer.connected());
  peer.craft().start();
  peer.pump(loop);
  ASSERT_TRUE(victim);
  ASSERT_EQ(victim->session().state(), State::established);

  const auto tagged = [&](std::uint32_t s, std::uint64_t to, std::size_t len) {
    Bytes u;
    ByteWriter w(u);
    wire::DdpHeader h;
    h.control.tagged = true;
    h.control.last = true;
    h.rsvd_ulp0 = wire::RdmapControl{1, 0, 0}.byte();
    h.stag = s;
    h.to = to;
    wire::encode_ddp_header(h, w);
    w.bytes(Bytes(len, 0x42));
    return u;
  };
  const auto untagged = [&](std::uint32_t qn, std::uint32_t msn, std::uint32_t mo,
                            std::size_t len) {
    Bytes u;
    ByteWriter w(u);
    wire::DdpHeader h;
    h.control.last = true;
    h.rsvd_ulp0 = wire::RdmapControl{1, 0, 3}.byte();
    h.qn = qn;
    h.msn = msn;
    h.mo = mo;
    wire::encode_ddp_header(h, w);
    w.bytes(Bytes(len, 0x42));
    return u;
  };
  if (name == "bad_crc") {
    wire::FpduEncodeOptions o;
    Bytes f = wire::encode_fpdu(tagged(stag, base, 8), o);
    f[8] ^= 0xFF;
    peer.write_raw(f);
  } else if (name == "invalid_stag") {
    peer.craft().send_raw_ulpdu(tagged(stag ^ 0x7F, base, 8));
  } else if (name == "invalidated_stag") {
    mem.invalidate(stag);
    peer.craft().send_raw_ulpdu(tagged(stag, base, 8));
  } else if (name == "bounds") {
    peer.craft().send_raw_ulpdu(tagged(stag, base + 200, 100));
  } else if (name == "wrong_pd") {
    peer.craft().send_raw_ulpdu(tagged(foreign, base, 8));
  } else if (name == "wrong_stream") {
    peer.craft().send_raw_ulpdu(tagged(bound, base, 8));
  } else if (name == "to_wrap") {
    peer.craft().send_raw_ulpdu(tagged(stag, ~std::uint64_t{0} - 3, 8));
  } else if (name == "bad_qn") {
    peer.craft().send_raw_ulpdu(untagged(7, 1, 0, 8));
  } else if (name == "bad_msn") {
    peer.craft().send_raw_ulpdu(untagged(0, 3, 0, 8));
  } else if (name == "bad_mo") {
    peer.craft().send_raw_ulpdu(untagged(0, 1, 16, 8));
  } else if (name == "oversized") {
    peer.craft().send_raw_ulpdu(untagged(0, 1, 0, 100));
  }
  peer.pump(loop, 50);
  ASSERT_TRUE(victim->session().terminate_sent());
  EXPECT_EQ(*victim->session().terminate_sent(), k.expect)
      << terminate_error_name(*victim->session().terminate_sent());
  EXPECT_EQ(victim->session().state(), State::terminated);
  // The crafting peer decoded the Terminate off the wire.
  ASSERT_TRUE(peer.craft().terminate_received());
  EXPECT_EQ(*peer.craft().terminate_received(), k.expect);
  // Nothing placed anywhere.
  EXPECT_TRUE(std::all_of(backing.begin(), backing.end(), [](auto b) { return b == 0xA5; }));
  EXPECT_TRUE(std::all_of(recv.begin(), recv.end(), [](auto b) { return b == 0; }));
  // The local side asks for abortive teardown (RFC 5040 §5.4).
  victim->abort();
  peer.pump(loop, 5);
  cap.stop();
  Analyzer analyzer;
  const Model& m = cap.analyze(analyzer);
  bool matched = false;
  for (const auto& f : m.findings)
    if (f.id == FindingId::rdmap_terminate && f.terminate == k.expect && f.direction == 1)
      matched = true;
  EXPECT_TRUE(matched) << "no rdmap.terminate finding with " << terminate_error_name(k.expect);
  if (name == "bad_crc") {
    bool crc = false;
    for (const auto& f : m.findings)
      crc |= f.id == FindingId::mpa_crc_mismatch && f.terminate == k.expect;
    EXPECT_TRUE(crc);
  }
}

INSTANTIATE_TEST_SUITE_P(All, HostilePeer,
                         ::testing::Values(Case{"bad_crc", {2, 0, 2}},
                                           Case{"invalid_stag", {1, 1, 0}},
                                           Case{"invalidated_stag", {1, 1, 0}},
                                           Case{"bounds", {1, 1, 1}}, Case{"wrong_pd", {1, 1, 2}},
                                           Case{"wrong_stream", {1, 1, 2}},
                                           Case{"to_wrap", {1, 1, 3}}, Case{"bad_qn", {1, 2, 1}},
                                           Case{"bad_msn", {1, 2, 3}}, Case{"bad_mo", {1, 2, 4}},
                                           Case{"oversized", {1, 2, 5}}),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(EndpointLimits, ConnectionCapPerProcess) {
  session::MemoryTable mem;
  endpoint::Loop loop(mem);
  session::SessionConfig cfg;
  cfg.pd = mem.alloc_pd();
  std::string err;
  ASSERT_TRUE(loop.listen("127.0.0.1", 0, cfg, err)) << err;
  const std::size_t old = endpoint::max_connections();
  endpoint::set_max_connections(endpoint::open_connections() + 1);
  EXPECT_TRUE(loop.connect("127.0.0.1", loop.listen_port(), cfg, err)) << err;
  EXPECT_FALSE(loop.connect("127.0.0.1", loop.listen_port(), cfg, err));
  EXPECT_NE(err.find("limit"), std::string::npos) << err;
  endpoint::set_max_connections(old);
}

TEST(HostileHandshake, GarbageRequestClosesWithoutPlacing) {
  session::MemoryTable mem;
  endpoint::Loop loop(mem);
  session::SessionConfig vcfg;
  vcfg.pd = mem.alloc_pd();
  std::string err;
  ASSERT_TRUE(loop.listen("127.0.0.1", 0, vcfg, err)) << err;
  RawPeer peer(loop.listen_port(), mem, false);
  ASSERT_TRUE(peer.connected());
  const std::string junk = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
  peer.write_raw(ByteView(reinterpret_cast<const std::uint8_t*>(junk.data()), junk.size()));
  peer.pump(loop, 50);
  ASSERT_EQ(loop.connections().size(), 1u);
  EXPECT_EQ(loop.connections()[0]->session().state(), State::failed);
  EXPECT_TRUE(peer.eof());
}

TEST(HostileHandshake, BadReplyDrawsTerminate) {
  // The endpoint as initiator against a raw listener that answers with a broken Reply.
  session::MemoryTable mem;
  endpoint::Loop loop(mem);
  const int lfd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(lfd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(listen(lfd, 1), 0);
  socklen_t len = sizeof a;
  getsockname(lfd, reinterpret_cast<sockaddr*>(&a), &len);
  const std::uint16_t port = ntohs(a.sin_port);
  LoCapture cap(port);
  session::SessionConfig cfg;
  cfg.pd = mem.alloc_pd();
  std::string err;
  endpoint::Connection* c = loop.connect("127.0.0.1", port, cfg, err);
  ASSERT_TRUE(c) << err;
  const int fd = accept(lfd, nullptr, nullptr);
  ASSERT_GE(fd, 0);
  loop.run_until([&] { return c->session().state() == State::mpa_wait_reply; }, 1000);
  wire::MpaReqRep rep;
  rep.kind = wire::MpaFrameKind::reply;
  rep.revision = 7;  // no such revision
  const Bytes raw = wire::encode_mpa_reqrep(rep);
  ASSERT_EQ(::send(fd, raw.data(), raw.size(), 0), ssize_t(raw.size()));
  loop.run_until([&] { return c->session().state() == State::terminated; }, 2000);
  ASSERT_TRUE(c->session().terminate_sent());
  EXPECT_EQ(*c->session().terminate_sent(), (TerminateError{2, 0, mpa_code::invalid_reqrep}));
  loop.flush();
  c->abort();
  ::close(fd);
  ::close(lfd);
  cap.stop();
  Analyzer analyzer;
  const Model& m = cap.analyze(analyzer);
  ASSERT_EQ(m.streams.size(), 1u);
  bool invalid = false;
  for (const auto& f : m.findings)
    invalid |= f.id == FindingId::mpa_handshake_invalid;
  EXPECT_TRUE(invalid);
}

}  // namespace
}  // namespace ddpscope
