// SPDX-License-Identifier: GPL-2.0-or-later
// The endpoint engine over SCTP (RFC 5043) in memory: two sessions exchange whole user messages
// (PPID and stream id with each, as an SCTP association delivers them). Setup by DDP Stream
// Session Control (PPID 17), every DDP segment one PPID 16 message (its DDP-SSN, then the
// segment, no MPA framing), MULPDU from the path MTU, messages delivered out of order and put
// back in DDP-SSN order; then a hostile peer breaks RFC 5043's rules (answered with a Session
// Terminate, RFC 5043 §11.3) and a Data Sink rule (answered with the RDMAP Terminate it names).
#include <gtest/gtest.h>

#include <cstring>
#include <deque>
#include <tuple>

#include "../unit/sctp_builders.h"
#include "ddpscope/session/session.h"
#include "ddpscope/wire/ddp.h"
#include "ddpscope/wire/rdmap.h"
#include "ddpscope/wire/sctp.h"

namespace ddpscope::session {
namespace {

struct Message {
  std::uint32_t ppid;
  std::uint16_t stream_id;
  Bytes data;
};

struct Side {
  Session* s = nullptr;
  std::vector<Event> events;
  std::vector<Message> sent;  // every user message this side gave the association
};

// Two sessions on one association: each pump moves whole messages both ways. Every message is
// also fed to core's Analyzer as a real SCTP packet (the unit tests' frame builder), which must
// find what the sessions did without an error.
class Association {
 public:
  Association(Session& a, Session& b) : frames_(analyzer_) {
    side_[0].s = &a;
    side_[1].s = &b;
    frames_.stream_id = 0;
    frames_.setup();
  }
  // Delivers each side's messages in pairs swapped (the second before the first), as unordered
  // SCTP delivery may (RFC 5043 §10), in the capture too.
  bool swap_pairs = false;
  void pump(int max_rounds = 100000) {
    for (int round = 0; round < max_rounds; ++round) {
      bool moved = false;
      for (int d = 0; d < 2; ++d) {
        Side& from = side_[d];
        collect(from);
        std::vector<Message> batch;
        for (int k = 0; k < (swap_pairs ? 2 : 1); ++k) {
          const auto m = from.s->next_message();
          if (!m) break;
          batch.push_back(Message{m->ppid, m->stream_id, Bytes(m->data.begin(), m->data.end())});
          from.s->consume_output(batch.back().data.size());
          from.sent.push_back(batch.back());
        }
        if (batch.size() == 2) std::swap(batch[0], batch[1]);
        for (const Message& msg : batch) {
          frames_.raw_message(d, msg.data, msg.ppid);
          if (++unacked_ % 8 == 0) frames_.sack(1 - d);
          side_[1 - d].s->receive_message(msg.ppid, msg.stream_id, msg.data, 0);
          moved = true;
        }
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
  const Event* find(int d, EventKind k, std::size_t nth = 0) {
    for (const auto& e : side_[d].events)
      if (e.kind == k && nth-- == 0) return &e;
    return nullptr;
  }
  const std::vector<Message>& sent(int d) const { return side_[d].sent; }
  const Model& finish() {
    analyzer_.finish();
    return analyzer_.model();
  }

 private:
  Side side_[2];
  Analyzer analyzer_{AnalyzerOptions{}};
  sctptest::Association frames_;
  std::size_t unacked_ = 0;
};

SessionConfig sctp_config(Role role, std::uint32_t pd) {
  SessionConfig c;
  c.role = role;
  c.pd = pd;
  c.llp = Llp::sctp;
  c.mpa.private_data = {'p', 'd', static_cast<std::uint8_t>(role)};
  if (role == Role::responder)
    c.mpa.rtr_types = rtr_offer::write | rtr_offer::read | rtr_offer::send;
  return c;
}

Bytes pattern(std::size_t n, std::uint8_t seed) {
  Bytes b(n);
  for (std::size_t i = 0; i < n; ++i)
    b[i] = static_cast<std::uint8_t>(seed + i * 13 + (i >> 9));
  return b;
}

// The untagged DDP segments a message of `ops` produced, decoded (each is one PPID 16 message).
std::vector<wire::DdpSegment> segments(const std::vector<Message>& sent) {
  std::vector<wire::DdpSegment> out;
  for (const auto& m : sent) {
    if (m.ppid != wire::kPpidDdpSegment) continue;
    auto seg = wire::decode_ddp_segment(ByteView(m.data).subspan(wire::kDdpSsnSize));
    if (seg) out.push_back(*seg);
  }
  return out;
}

// The DDP-SSN of a user message (RFC 5043 §5.2.1).
std::uint16_t ssn_of(const Message& m) {
  return static_cast<std::uint16_t>(m.data.at(0) << 8 | m.data.at(1));
}

class SctpSession : public ::testing::TestWithParam<RtrType> {};

TEST_P(SctpSession, SetupBySessionControlThenEveryOperationOnePpid16MessagePerSegment) {
  const RtrType rtr = GetParam();
  MemoryTable mem;
  const std::uint32_t pd_i = mem.alloc_pd(), pd_r = mem.alloc_pd();
  SessionConfig ci = sctp_config(Role::initiator, pd_i);
  ci.mpa.peer_to_peer = rtr != RtrType::none;
  ci.mpa.rtr_types = rtr == RtrType::read   ? rtr_offer::read
                     : rtr == RtrType::send ? rtr_offer::send
                                            : rtr_offer::write;
  Session ini(mem, ci);
  Session res(mem, sctp_config(Role::responder, pd_r));
  ini.set_path_mtu(1500);
  res.set_path_mtu(1500);
  // RFC 5043 §9: one DATA chunk of one packet, less the DDP-SSN.
  EXPECT_EQ(ini.negotiated().mulpdu, 1500u - 20 - 12 - 16 - 2);
  Association a(ini, res);
  a.swap_pairs = GetParam() == RtrType::none;  // out-of-TSN-order DDP-SSNs on one of the runs
  Bytes res_mem(50000, 0);
  const auto res_stag = *mem.register_region(pd_r, res_mem, 0x10000, access::all, res.stream_id());
  Bytes ini_mem(50000, 0);
  const auto ini_stag = *mem.register_region(pd_i, ini_mem, 0x5000, access::all);
  Bytes rbuf(8000), ibuf(8000);
  ASSERT_EQ(res.post_recv(rbuf, 1), PostStatus::ok);
  ASSERT_EQ(ini.post_recv(ibuf, 2), PostStatus::ok);
  res.start(0);
  ini.start(0);
  a.pump();
  ASSERT_EQ(ini.state(), Session::State::established) << Session::state_name(ini.state());
  ASSERT_EQ(res.state(), Session::State::established) << Session::state_name(res.state());
  EXPECT_EQ(ini.negotiated().rtr, rtr == RtrType::none ? RtrType::none : rtr);
  EXPECT_EQ(ini.negotiated().peer_to_peer, rtr != RtrType::none);
  ASSERT_TRUE(a.find(0, EventKind::connected));
  ASSERT_TRUE(a.find(1, EventKind::connected));
  EXPECT_EQ(a.find(0, EventKind::connected)->private_data, (Bytes{'p', 'd', 1}));
  EXPECT_EQ(a.find(1, EventKind::connected)->private_data, (Bytes{'p', 'd', 0}));
  // Session control first on each side: Initiate, then Accept (enhanced, RFC 6581).
  ASSERT_FALSE(a.sent(0).empty());
  ASSERT_FALSE(a.sent(1).empty());
  EXPECT_EQ(a.sent(0)[0].ppid, wire::kPpidDdpSessionControl);
  EXPECT_EQ(a.sent(1)[0].ppid, wire::kPpidDdpSessionControl);
  const auto init = wire::decode_ddp_session_control(a.sent(0)[0].data);
  const auto acc = wire::decode_ddp_session_control(a.sent(1)[0].data);
  ASSERT_TRUE(init && acc);
  EXPECT_EQ(init->kind(), wire::DdpSessionKind::initiate);
  EXPECT_EQ(acc->kind(), wire::DdpSessionKind::accept);
  ASSERT_TRUE(init->enhanced_pd && acc->enhanced_pd);
  EXPECT_EQ(acc->enhanced_pd->peer_to_peer, rtr != RtrType::none);

  const Bytes msg = pattern(5000, 1), wdata = pattern(30000, 2);
  ASSERT_EQ(ini.send(msg), PostStatus::ok);
  ASSERT_EQ(ini.rdma_write(wdata, res_stag, 0x10000 + 100), PostStatus::ok);
  ASSERT_EQ(ini.rdma_read(ini_stag, 0x5000, 20000, res_stag, 0x10000 + 100, 9), PostStatus::ok);
  ASSERT_EQ(res.send(pattern(300, 3)), PostStatus::ok);
  a.pump();
  ASSERT_EQ(ini.state(), Session::State::established);
  ASSERT_EQ(res.state(), Session::State::established);
  const Event* rc = a.find(1, EventKind::recv_completed);
  ASSERT_TRUE(rc);
  EXPECT_EQ(rc->length, msg.size());
  EXPECT_TRUE(std::equal(msg.begin(), msg.end(), rbuf.begin()));
  ASSERT_TRUE(a.find(1, EventKind::write_placed));
  EXPECT_TRUE(std::equal(wdata.begin(), wdata.end(), res_mem.begin() + 100));
  const Event* rd = a.find(0, EventKind::read_completed);
  ASSERT_TRUE(rd);
  EXPECT_EQ(rd->wr_id, 9u);
  EXPECT_TRUE(std::equal(wdata.begin(), wdata.begin() + 20000, ini_mem.begin()));
  ASSERT_TRUE(a.find(0, EventKind::recv_completed));

  // Every other message is exactly one DDP segment (no MPA length, pad or CRC) within MULPDU
  // after its DDP-SSN, on the DDP Stream's SCTP stream; each side numbers its messages 0, 1, 2,
  // ... (RFC 5043 §5.2.1: reset to zero with the session, no gaps).
  for (int d = 0; d < 2; ++d) {
    for (std::size_t i = 0; i < a.sent(d).size(); ++i)
      EXPECT_EQ(ssn_of(a.sent(d)[i]), i) << "side " << d;
    for (std::size_t i = 1; i < a.sent(d).size(); ++i) {
      const Message& m = a.sent(d)[i];
      EXPECT_EQ(m.ppid, wire::kPpidDdpSegment) << "side " << d << " message " << i;
      EXPECT_EQ(m.stream_id, 0u);
      EXPECT_LE(m.data.size(), ini.negotiated().mulpdu + wire::kDdpSsnSize);
      const ByteView body = ByteView(m.data).subspan(wire::kDdpSsnSize);
      auto seg = wire::decode_ddp_segment(body);
      ASSERT_TRUE(seg) << "side " << d << " message " << i;
      const std::size_t hdr =
          seg->header.control.tagged ? wire::kDdpTaggedHeaderSize : wire::kDdpUntaggedHeaderSize;
      EXPECT_EQ(hdr + seg->payload.size(), body.size());
    }
  }
  // The 30000-octet Write took ceil(30000 / (MULPDU - 14)) tagged segments.
  std::size_t writes = 0;
  for (const auto& s : segments(a.sent(0)))
    if (s.header.control.tagged && s.header.stag == res_stag) ++writes;
  const std::size_t room = ini.negotiated().mulpdu - wire::kDdpTaggedHeaderSize;
  EXPECT_EQ(writes, (30000 + room - 1) / room);

  ini.close();
  a.pump();
  EXPECT_TRUE(ini.want_shutdown());
  // RFC 5043 §6.1: the accepted session ends with a Session Terminate (no private data).
  const Message& last = a.sent(0).back();
  EXPECT_EQ(last.ppid, wire::kPpidDdpSessionControl);
  const auto term = wire::decode_ddp_session_control(last.data);
  ASSERT_TRUE(term);
  EXPECT_EQ(term->kind(), wire::DdpSessionKind::terminate);
  EXPECT_TRUE(term->private_data.empty());

  // The analyzer's SCTP LLP agrees: one DDP stream over SCTP, every PPID 16 message a segment,
  // no warning or error (the endpoint and the analysis share the rule layer).
  const Model& m = a.finish();
  for (const auto& f : m.findings)
    EXPECT_EQ(f.severity, Severity::note) << f.code() << ": " << f.message;
  ASSERT_EQ(m.streams.size(), 1u);
  EXPECT_EQ(m.streams[0].llp, ddpscope::Llp::sctp);
  std::uint64_t segments = 0, ppid16 = 0;
  for (const auto& d : m.streams[0].dirs)
    for (const auto& c : d.opcodes)
      segments += c.segments;
  for (int d = 0; d < 2; ++d)
    for (const auto& msg : a.sent(d))
      ppid16 += msg.ppid == wire::kPpidDdpSegment;
  EXPECT_EQ(segments, ppid16);
}

INSTANTIATE_TEST_SUITE_P(Rtr, SctpSession,
                         ::testing::Values(RtrType::write, RtrType::read, RtrType::send,
                                           RtrType::none),
                         [](const auto& info) { return std::string(to_string(info.param)); });

TEST(SctpSessionSetup, MpaSessionProducesNoMessages) {
  MemoryTable mem;
  SessionConfig c;
  c.role = Role::initiator;
  Session s(mem, c);
  s.start(0);
  EXPECT_GT(s.output_size(), 0u);  // the MPA Request, as a byte stream
  EXPECT_FALSE(s.next_message());  // no SCTP messages on an MPA stream
  s.receive_message(wire::kPpidDdpSessionControl, 0, Bytes{0, 3, 0, 0}, 0);  // ignored
  EXPECT_EQ(s.state(), Session::State::mpa_wait_reply);
}

TEST(SctpSessionSetup, RejectCarriesPrivateData) {
  MemoryTable mem;
  Session ini(mem, sctp_config(Role::initiator, mem.alloc_pd()));
  SessionConfig cr = sctp_config(Role::responder, mem.alloc_pd());
  cr.mpa.reject = true;
  Session res(mem, cr);
  Association a(ini, res);
  res.start(0);
  ini.start(0);
  a.pump();
  EXPECT_EQ(ini.state(), Session::State::failed);
  EXPECT_EQ(res.state(), Session::State::failed);
  const Event* rj = a.find(0, EventKind::rejected);
  ASSERT_TRUE(rj);
  EXPECT_EQ(rj->private_data, (Bytes{'p', 'd', 1}));
  ASSERT_TRUE(a.find(1, EventKind::rejected));
  ASSERT_EQ(a.sent(1).size(), 1u);
  const auto rep = wire::decode_ddp_session_control(a.sent(1)[0].data);
  ASSERT_TRUE(rep);
  EXPECT_EQ(rep->kind(), wire::DdpSessionKind::reject);
}

// A hostile peer: raw messages into one session.
struct Hostile {
  MemoryTable mem;
  std::unique_ptr<Session> s;
  std::vector<Event> events;
  std::uint16_t ssn = 0;  // the hostile peer's next DDP-SSN
  explicit Hostile(Role role) {
    s = std::make_unique<Session>(mem, sctp_config(role, mem.alloc_pd()));
    s->start(0);
  }
  // A user message as given (its DDP-SSN included).
  void raw(std::uint32_t ppid, ByteView data, std::uint16_t sid = 0) {
    s->receive_message(ppid, sid, data, 0);
    Event e;
    while (s->poll_event(e))
      events.push_back(e);
  }
  // A DDP segment (PPID 16) or other octets behind the peer's next DDP-SSN.
  void in(std::uint32_t ppid, ByteView body, std::uint16_t sid = 0) {
    raw(ppid, wire::encode_ddp_sctp_message(ssn++, body), sid);
  }
  // Session control with the peer's next DDP-SSN.
  void control(wire::DdpSessionControl m) {
    m.ddp_ssn = ssn++;
    raw(wire::kPpidDdpSessionControl, wire::encode_ddp_session_control(m));
  }
  // The last Session Control message the session sent.
  std::optional<wire::DdpSessionControl> last_control() {
    std::optional<wire::DdpSessionControl> c;
    for (const auto& m : out()) {
      if (m.ppid != wire::kPpidDdpSessionControl) continue;
      if (auto d = wire::decode_ddp_session_control(m.data)) c = *d;
    }
    return c;
  }
  // Drains the session's output; returns the messages.
  std::vector<Message> out() {
    std::vector<Message> v;
    while (auto m = s->next_message()) {
      v.push_back({m->ppid, m->stream_id, Bytes(m->data.begin(), m->data.end())});
      s->consume_output(m->data.size());
    }
    return v;
  }
  // The Terminate the session sent last, decoded from its PPID 16 message.
  std::optional<wire::Terminate> terminate() {
    std::optional<wire::Terminate> t;
    for (const auto& m : out()) {
      if (m.ppid != wire::kPpidDdpSegment) continue;
      auto seg = wire::decode_ddp_segment(ByteView(m.data).subspan(wire::kDdpSsnSize));
      if (!seg || seg->header.control.tagged || seg->header.qn != wire::kQnTerminate) continue;
      auto d = wire::decode_terminate(seg->payload);
      if (d) t = *d;
    }
    return t;
  }
};

wire::DdpSessionControl accept_message() {
  wire::DdpSessionControl m;
  m.function_code = wire::ddp_session_fn::enhanced_accept;
  wire::MpaEnhancedPd pd;
  pd.peer_to_peer = true;
  pd.zero_length_write_rtr = true;
  pd.ird = 4;
  pd.ord = 4;
  m.enhanced_pd = pd;
  return m;
}

// A zero-length RDMA Write (the Write RTR), as raw DDP segment octets.
Bytes rtr_write() {
  Bytes b;
  ByteWriter w(b);
  wire::DdpHeader h;
  h.control.tagged = true;
  h.control.last = true;
  h.rsvd_ulp0 = wire::RdmapControl{wire::kRdmapVersion, 0,
                                   static_cast<std::uint8_t>(wire::Opcode::rdma_write)}
                    .byte();
  h.stag = 1;
  wire::encode_ddp_header(h, w);
  return b;
}

TEST(SctpSessionHostile, ResponderClosesOnADdpSegmentBeforeTheInitiate) {
  Hostile h(Role::responder);
  h.in(wire::kPpidDdpSegment, rtr_write());
  EXPECT_EQ(h.s->state(), Session::State::failed);
  EXPECT_TRUE(h.out().empty());  // nothing answered: no stream to report in yet
}

// RFC 5043 §6.6: the passive side's segments follow its Accept. An SCTP-level rule ends the
// stream with a Session Terminate (§11.3), not an RDMAP Terminate with an LLP code RFC 5043 does
// not define.
TEST(SctpSessionHostile, InitiatorEndsTheStreamOnADdpSegmentBeforeTheAccept) {
  Hostile h(Role::initiator);
  h.out();    // the Initiate
  h.ssn = 1;  // the Accept (DDP-SSN 0) never came
  h.in(wire::kPpidDdpSegment, rtr_write());
  h.ssn = 0;
  h.control(accept_message());  // DDP-SSN 0: the segment, then, is judged after it
  // In DDP-SSN order the segment follows the Accept, so RFC 5043 has nothing against it (the
  // Data Sink then judges the Write itself).
  EXPECT_FALSE(h.s->session_terminate_sent());
  Hostile g(Role::initiator);
  g.out();
  g.in(wire::kPpidDdpSegment, rtr_write());  // DDP-SSN 0: before any Accept
  EXPECT_EQ(g.s->state(), Session::State::terminated);
  EXPECT_FALSE(g.s->terminate_sent());
  ASSERT_TRUE(g.s->session_terminate_sent());
  EXPECT_EQ(*g.s->session_terminate_sent(), FindingId::sctp_segment_early);
  const auto t = g.last_control();
  ASSERT_TRUE(t);
  EXPECT_EQ(t->kind(), wire::DdpSessionKind::terminate);
  EXPECT_EQ(t->ddp_ssn, 1u);  // after our Initiate (0)
}

TEST(SctpSessionHostile, InitiatorEndsTheStreamOnAMalformedAccept) {
  Hostile h(Role::initiator);
  h.out();
  h.raw(wire::kPpidDdpSessionControl, Bytes{0x00, 0x00, 0x00});  // no room for a function code
  EXPECT_EQ(h.s->state(), Session::State::terminated);
  ASSERT_TRUE(h.s->session_terminate_sent());
  EXPECT_EQ(*h.s->session_terminate_sent(), FindingId::sctp_session_invalid);
}

// RFC 5043 §5.2.3: undefined function codes; over 512 octets of private data.
TEST(SctpSessionHostile, InitiatorEndsTheStreamOnAnUndefinedFunctionCodeOrLongPrivateData) {
  for (const auto& [fn, pd, want] :
       {std::tuple{std::uint16_t{9}, std::size_t{0}, FindingId::sctp_function_code_invalid},
        std::tuple{std::uint16_t{wire::ddp_session_fn::accept}, std::size_t{513},
                   FindingId::sctp_private_data_invalid}}) {
    Hostile h(Role::initiator);
    h.out();
    wire::DdpSessionControl m;
    m.function_code = fn;
    m.private_data.assign(pd, 0x42);
    h.control(m);
    EXPECT_EQ(h.s->state(), Session::State::terminated);
    ASSERT_TRUE(h.s->session_terminate_sent());
    EXPECT_EQ(*h.s->session_terminate_sent(), want);
  }
}

// RFC 5043 §5.2.1, §10: a DDP-SSN used twice breaks the stream's order.
TEST(SctpSessionHostile, ReusedDdpSsnEndsTheStream) {
  Hostile h(Role::initiator);
  h.out();
  h.control(accept_message());
  ASSERT_EQ(h.s->state(), Session::State::established);
  h.out();
  h.in(wire::kPpidDdpSegment, rtr_write());
  h.ssn = 1;
  h.in(wire::kPpidDdpSegment, rtr_write());
  EXPECT_EQ(h.s->state(), Session::State::terminated);
  ASSERT_TRUE(h.s->session_terminate_sent());
  EXPECT_EQ(*h.s->session_terminate_sent(), FindingId::sctp_ssn_invalid);
}

// RFC 5043 §6.3: a Terminate in answer to the Initiate is the non-ULP reject.
TEST(SctpSessionHostile, TerminateAnsweringTheInitiateIsAReject) {
  Hostile h(Role::initiator);
  h.out();
  wire::DdpSessionControl t;
  t.function_code = wire::ddp_session_fn::terminate;
  h.control(t);
  EXPECT_EQ(h.s->state(), Session::State::failed);
  bool rejected = false;
  for (const auto& e : h.events)
    rejected |= e.kind == EventKind::rejected;
  EXPECT_TRUE(rejected);
  EXPECT_FALSE(h.s->session_terminate_sent());
}

// RFC 5043 §4, §10: the same rule as the analyzer's (sctp::check_unordered), from the socket's
// receive flags.
TEST(SctpSessionHostile, OrderedMessageEndsTheStream) {
  Hostile h(Role::initiator);
  h.out();
  h.control(accept_message());
  ASSERT_EQ(h.s->state(), Session::State::established);
  h.s->receive_message(wire::kPpidDdpSegment, 0,
                       wire::encode_ddp_sctp_message(h.ssn++, rtr_write()), 0, /*unordered=*/false);
  EXPECT_EQ(h.s->state(), Session::State::terminated);
  ASSERT_TRUE(h.s->session_terminate_sent());
  EXPECT_EQ(*h.s->session_terminate_sent(), FindingId::sctp_chunk_ordered);
}

TEST(SctpSessionHostile, ResponderRefusesAnAcceptInsteadOfAnInitiate) {
  Hostile h(Role::responder);
  h.control(accept_message());
  EXPECT_EQ(h.s->state(), Session::State::failed);
}

TEST(SctpSessionHostile, ResponderWaitsForTheRtrThenEndsTheStreamOnABadPpid) {
  Hostile h(Role::responder);
  wire::DdpSessionControl init;
  init.function_code = wire::ddp_session_fn::enhanced_initiate;
  wire::MpaEnhancedPd pd;
  pd.peer_to_peer = true;
  pd.zero_length_write_rtr = true;
  pd.ird = 4;
  pd.ord = 4;
  init.enhanced_pd = pd;
  h.control(init);
  EXPECT_EQ(h.s->state(), Session::State::wait_rtr);
  const auto acc = h.out();
  ASSERT_EQ(acc.size(), 1u);
  EXPECT_EQ(acc[0].ppid, wire::kPpidDdpSessionControl);
  h.in(wire::kPpidDdpSegment, rtr_write());
  EXPECT_EQ(h.s->state(), Session::State::established);
  h.in(51, rtr_write());  // DDP-looking data on another PPID
  EXPECT_EQ(h.s->state(), Session::State::terminated);
  ASSERT_TRUE(h.s->session_terminate_sent());
  EXPECT_EQ(*h.s->session_terminate_sent(), FindingId::sctp_ppid_invalid);
  const auto t = h.last_control();
  ASSERT_TRUE(t);
  EXPECT_EQ(t->kind(), wire::DdpSessionKind::terminate);
}

TEST(SctpSessionHostile, InitiatorEndsTheStreamOnASessionControlMessageAfterSetup) {
  Hostile h(Role::initiator);
  h.out();
  h.control(accept_message());
  EXPECT_EQ(h.s->state(), Session::State::established);
  h.out();  // the RTR
  h.control(accept_message());
  EXPECT_EQ(h.s->state(), Session::State::terminated);
  ASSERT_TRUE(h.s->session_terminate_sent());
  EXPECT_EQ(*h.s->session_terminate_sent(), FindingId::sctp_session_invalid);
}

// The Data Sink model is the same over SCTP: an RDMA Write to an unknown STag draws DDP's
// Tagged Buffer / Invalid STag, quoting the DDP header (RFC 5041 §7, RFC 5040 §4.8), as over MPA.
TEST(SctpSessionHostile, DataSinkRuleOverSctpDrawsTheSameTerminateAsOverMpa) {
  Hostile h(Role::initiator);
  h.out();
  h.control(accept_message());
  ASSERT_EQ(h.s->state(), Session::State::established);
  h.out();
  Bytes w;
  ByteWriter bw(w);
  wire::DdpHeader dh;
  dh.control.tagged = true;
  dh.control.last = true;
  dh.rsvd_ulp0 = wire::RdmapControl{wire::kRdmapVersion, 0,
                                    static_cast<std::uint8_t>(wire::Opcode::rdma_write)}
                     .byte();
  dh.stag = 0x7777700;
  dh.to = 0;
  wire::encode_ddp_header(dh, bw);
  w.insert(w.end(), 64, 0xAB);
  h.in(wire::kPpidDdpSegment, w);
  EXPECT_EQ(h.s->state(), Session::State::terminated);
  const auto t = h.terminate();
  ASSERT_TRUE(t);
  EXPECT_EQ(t->control.layer, static_cast<std::uint8_t>(TermLayer::ddp));
  EXPECT_EQ(t->control.etype, ddp_etype::tagged_buffer);
  EXPECT_EQ(t->control.code, ddp_tagged_code::invalid_stag);
  EXPECT_TRUE(t->control.m && t->control.d);
  ASSERT_TRUE(t->ddp_header);
  EXPECT_EQ(t->ddp_header->stag, 0x7777700u);
}

TEST(SctpSessionHostile, InputPausesAtMaxPendingEvents) {
  MemoryTable mem;
  SessionConfig c = sctp_config(Role::initiator, mem.alloc_pd());
  c.limits.max_pending_events = 2;
  c.mpa.peer_to_peer = false;
  c.mpa.enhanced = false;  // a plain Initiate, answered by a plain Accept (RFC 6581 §7)
  Session s(mem, c);
  Bytes buf(64);
  ASSERT_EQ(s.post_recv(buf, 5), PostStatus::ok);
  s.start(0);
  while (auto m = s.next_message())
    s.consume_output(m->data.size());
  wire::DdpSessionControl acc;
  acc.function_code = wire::ddp_session_fn::accept;
  s.receive_message(wire::kPpidDdpSessionControl, 0, wire::encode_ddp_session_control(acc), 0);
  ASSERT_EQ(s.state(), Session::State::established);
  EXPECT_FALSE(s.input_paused());  // one event (connected) waits
  Bytes send;
  ByteWriter w(send);
  wire::DdpHeader h;
  h.control.tagged = false;
  h.control.last = true;
  h.rsvd_ulp0 =
      wire::RdmapControl{wire::kRdmapVersion, 0, static_cast<std::uint8_t>(wire::Opcode::send)}
          .byte();
  h.qn = wire::kQnSend;
  h.msn = 1;
  wire::encode_ddp_header(h, w);
  send.insert(send.end(), {'h', 'i'});
  s.receive_message(wire::kPpidDdpSegment, 0, wire::encode_ddp_sctp_message(1, send), 0);
  EXPECT_TRUE(s.input_paused());  // connected + recv_completed
  Event e;
  std::vector<EventKind> kinds;
  while (s.poll_event(e))
    kinds.push_back(e.kind);
  EXPECT_EQ(kinds, (std::vector<EventKind>{EventKind::connected, EventKind::recv_completed}));
  s.resume_input();
  EXPECT_FALSE(s.input_paused());
  EXPECT_EQ(Bytes(buf.begin(), buf.begin() + 2), (Bytes{'h', 'i'}));
}

}  // namespace
}  // namespace ddpscope::session
