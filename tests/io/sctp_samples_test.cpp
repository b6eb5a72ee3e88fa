// SPDX-License-Identifier: GPL-2.0-or-later
// The analysis of three SCTP associations built frame by frame with the test builders: what the
// builder-made samples held before `ddpscope synth` wrote them from scenarios ("llp": "sctp";
// samples/synthetic/clean-sctp*.json, fault-sctp.json). What synth cannot inject yet (a
// retransmission pair captured in reversed TSN order, several DDP streams on one association, a
// non-DDP PPID 16 message, a retransmission with other octets) stays covered here.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "unit/sctp_builders.h"

namespace ddpscope {
namespace {

using sctptest::Association;
using wire::Opcode;

Bytes pattern(std::size_t n, std::uint8_t seed) {
  Bytes b(n);
  for (std::size_t i = 0; i < n; ++i)
    b[i] = static_cast<std::uint8_t>(seed + i * 13);
  return b;
}

// IPv4: setup with the DDP adaptation indication, an Initiate whose 512 octets of private data
// needed two fragments (a small path: RFC 5043 §9 allows SCTP fragmentation where the other
// choice is IP fragmentation) and an Accept, Sends, a pair captured in reversed TSN order, a
// retransmission, two DDP-SSNs sent in reversed TSN order (RFC 5043 §10: legal, the DDP-SSN is
// the order), an RDMA Write and a Read, SACKs, Session Terminate from both sides, SHUTDOWN.
TEST(SctpSamples, CleanSctp) {
  Analyzer an;
  Association a(an);
  a.setup();
  {
    wire::DdpSessionControl init;
    init.ddp_ssn = a.next_ssn(0);
    init.function_code = wire::ddp_session_fn::initiate;
    init.private_data = pattern(wire::kDdpSessionMaxPrivateData, 12);
    a.raw_message(0, wire::encode_ddp_session_control(init), wire::kPpidDdpSessionControl, 2);
  }
  a.session(1, wire::ddp_session_fn::accept, pattern(8, 13));
  a.send(0, 1, pattern(200, 1));
  a.send(1, 1, pattern(64, 2));
  {
    // DDP-SSN 3 in a lower TSN than DDP-SSN 2, in one packet.
    const Bytes s2 = a.seg(
        0, sctptest::ulpdu(wire::untagged_header(Opcode::send, 0, 2, 0, true), pattern(40, 3)));
    const Bytes s3 = a.seg(
        0, sctptest::ulpdu(wire::untagged_header(Opcode::send, 0, 3, 0, true), pattern(40, 14)));
    Bytes chunks = a.data_chunk(0, s3, wire::kPpidDdpSegment);
    const Bytes c2 = a.data_chunk(0, s2, wire::kPpidDdpSegment);
    chunks.insert(chunks.end(), c2.begin(), c2.end());
    a.packet(0, chunks);
  }
  a.sack(1);
  // Two messages, the second one's chunk captured first, the first one retransmitted.
  const Bytes m3 =
      sctptest::ulpdu(wire::untagged_header(Opcode::send, 0, 4, 0, true), pattern(100, 4));
  const Bytes m4 =
      sctptest::ulpdu(wire::untagged_header(Opcode::send, 0, 5, 0, true), pattern(100, 5));
  const Bytes c3 = a.data_chunk(0, a.seg(0, m3), wire::kPpidDdpSegment);
  const Bytes c4 = a.data_chunk(0, a.seg(0, m4), wire::kPpidDdpSegment);
  a.packet(0, c4);
  a.packet(0, c3);
  a.packet(0, c3);
  a.sack(1);
  // An RDMA Write of two segments, then a Read Request and its Response.
  const Bytes w1 = sctptest::ulpdu(wire::tagged_header(Opcode::rdma_write, 0x1234, 0x10000, false),
                                   pattern(512, 6));
  const Bytes w2 = sctptest::ulpdu(
      wire::tagged_header(Opcode::rdma_write, 0x1234, 0x10000 + 512, true), pattern(512, 7));
  Bytes both = a.data_chunk(0, a.seg(0, w1), wire::kPpidDdpSegment);
  const Bytes second = a.data_chunk(0, a.seg(0, w2), wire::kPpidDdpSegment);
  both.insert(both.end(), second.begin(), second.end());
  a.packet(0, both);
  wire::ReadRequest rr;
  rr.sink_stag = 0x5678;
  rr.sink_to = 0x2000;
  rr.size = 256;
  rr.source_stag = 0x9ABC;
  rr.source_to = 0x40000;
  Bytes rrb;
  ByteWriter rw(rrb);
  wire::encode_read_request(rr, rw);
  a.message(0, sctptest::ulpdu(wire::untagged_header(Opcode::read_request, 1, 1, 0, true), rrb));
  a.message(1, sctptest::ulpdu(wire::tagged_header(Opcode::read_response, 0x5678, 0x2000, true),
                               pattern(256, 8)));
  a.terminate(0);
  a.terminate(1);
  a.sack(1);
  a.sack(0);
  Bytes sd;
  wire::encode_sctp_shutdown(a.tsn[1] - 1, sd);
  a.packet(0, sd);
  Bytes sda;
  wire::encode_sctp_shutdown_ack(sda);
  a.packet(1, sda);
  Bytes sdc;
  wire::encode_sctp_shutdown_complete(false, sdc);
  a.packet(0, sdc);
  an.finish();
  EXPECT_TRUE(an.model().findings.empty()) << ::testing::PrintToString(sctptest::codes(an.model()));
}

// IPv6 in UDP (RFC 6951), two DDP streams on SCTP streams 1 and 2 of one association (each
// stream's DDP-SSNs its own, RFC 5043 §5.2.1), an enhanced session (RFC 6581 §7) on stream 2,
// the active side's first segment sent once its Initiate was SACKed and before the Accept
// arrived (RFC 5043 §6.6 allows it), a Terminate from one side only.
TEST(SctpSamples, CleanSctpV6Udp) {
  Analyzer an;
  Association a(an, true, true);
  a.setup();
  a.session(0, wire::ddp_session_fn::initiate, Bytes(4, 0x11));
  a.sack(1);
  a.send(0, 1, pattern(300, 9));
  a.session(1, wire::ddp_session_fn::accept, Bytes(4, 0x22));
  a.stream_id = 2;
  wire::MpaEnhancedPd word;
  word.ird = word.ord = 4;
  a.session(0, wire::ddp_session_fn::enhanced_initiate, Bytes(6, 0x33), word);
  a.session(1, wire::ddp_session_fn::enhanced_accept, Bytes(2, 0x44), word);
  a.send(0, 1, pattern(300, 10));
  a.send(1, 1, pattern(30, 11));
  a.terminate(1);
  a.stream_id = 1;
  a.terminate(0);
  a.sack(1);
  a.sack(0);
  an.finish();
  EXPECT_TRUE(an.model().findings.empty()) << ::testing::PrintToString(sctptest::codes(an.model()));
  EXPECT_EQ(an.model().streams.size(), 2u);
}

// Every SCTP finding at a known frame (each rule of RFC 5043 with its section), and a DDP fault
// (MSN gap) over SCTP.
TEST(SctpSamples, FaultSctp) {
  Analyzer an;
  Association a(an);
  const auto ulpdu_send = [](std::uint32_t msn, ByteView body) {
    return sctptest::ulpdu(wire::untagged_header(Opcode::send, 0, msn, 0, true), body);
  };
  a.setup();                     // frames 1-4
  a.session_setup();             // 5-6
  a.send(0, 1, pattern(50, 1));  // 7
  a.corrupt_next = true;
  const Bytes c2 = a.data_chunk(0, a.seg(0, ulpdu_send(2, pattern(50, 2))), wire::kPpidDdpSegment);
  a.packet(0, c2);  // 8: sctp.checksum-mismatch
  a.packet(0, c2);  // 9: its retransmission
  a.data_chunk(0, a.seg(0, ulpdu_send(3, pattern(40, 3))), wire::kPpidDdpSegment);  // lost
  a.send(0, 4, pattern(50, 4));  // 10: sctp.gap (first frame past the hole)
  a.sack(1);                     // 11
  a.send(0, 6, pattern(50, 5));  // 12: ddp.untagged.msn-gap (MSN 5 skipped)
  // 13: sctp.ppid-invalid (RFC 5043 §5.2: DDP on PPID 51)
  a.raw_message(0, wire::encode_ddp_sctp_message(0, ulpdu_send(7, pattern(8, 6))), 51);
  a.message(0, Bytes(5, 0xEE));  // 14: sctp.ppid-invalid (PPID 16, not a DDP segment)
  a.stream_id = 2;
  a.session(0, wire::ddp_session_fn::initiate);  // 15
  a.send(0, 1, pattern(20, 7));                  // 16: sctp.segment-early (§6.6)
  a.session(1, wire::ddp_session_fn::reject);    // 17: sctp.session-rejected (§6.2)
  a.session(0, 0x0009);                          // 18: sctp.function-code-invalid (§5.2.3)
  a.stream_id = 3;
  a.session(0, wire::ddp_session_fn::initiate);                 // 19
  a.session(1, wire::ddp_session_fn::accept, pattern(600, 9));  // 20: sctp.private-data-invalid
  a.session(0, wire::ddp_session_fn::accept);  // 21: sctp.session-invalid (§6.1: passive answers)
  a.unordered = false;
  a.send(0, 1, pattern(20, 10));  // 22: sctp.chunk-ordered (§4, §10: U = 0)
  a.unordered = true;
  a.send(0, 2, pattern(3000, 11), 3);  // 23: sctp.segment-too-large (§9: fragmented)
  // 24: sctp.ssn-invalid (§5.2.1: DDP-SSN 1 used again)
  a.raw_message(0, wire::encode_ddp_sctp_message(1, ulpdu_send(3, pattern(20, 12))));
  a.session(1, wire::ddp_session_fn::terminate, Bytes(4, 0x55));  // 25: private data in Terminate
  a.stream_id = 1;
  const Bytes c7 = a.data_chunk(0, a.seg(0, ulpdu_send(7, pattern(30, 8))), wire::kPpidDdpSegment);
  a.packet(0, c7);  // 26
  Bytes altered = c7;
  altered[wire::kSctpDataHeaderSize + 20] ^= 0x01;
  a.packet(0, altered);  // 27: sctp.retransmission-conflict
  a.sack(1);             // 28
  a.stream_id = 4;
  a.session_setup();              // 29-30
  a.next_ssn(0);                  // DDP-SSN 1 never sent
  a.send(0, 1, pattern(20, 13));  // 31: held behind DDP-SSN 1
  a.sack(1);                      // 32
  Bytes sd;
  wire::encode_sctp_shutdown(a.tsn[1] - 1, sd);
  a.packet(0, sd);  // 33
  Bytes sda;
  wire::encode_sctp_shutdown_ack(sda);
  a.packet(1, sda);  // 34
  Bytes sdc;
  wire::encode_sctp_shutdown_complete(false, sdc);
  a.packet(0, sdc);  // 35
  // A second association whose setup left the DDP adaptation indication out (§5.1, §11.1).
  Association b(an);
  b.port = {5001, 7001};
  b.frame = a.frame;
  b.setup(false);     // 36-39
  b.session_setup();  // 40: sctp.adaptation-missing; 41
  an.finish();
  std::vector<std::pair<std::string, std::uint64_t>> got;
  for (const auto& f : an.model().findings)
    if (!f.consequence()) got.emplace_back(std::string(f.code()), f.frame);
  const std::vector<std::pair<std::string, std::uint64_t>> want{
      {"sctp.checksum-mismatch", 8},
      {"sctp.gap", 10},
      {"ddp.untagged.msn-gap", 12},
      {"sctp.ppid-invalid", 13},
      {"sctp.ppid-invalid", 14},
      {"sctp.segment-early", 16},
      {"sctp.session-rejected", 17},
      {"sctp.function-code-invalid", 18},
      {"sctp.private-data-invalid", 20},
      {"sctp.session-invalid", 21},
      {"sctp.chunk-ordered", 22},
      {"sctp.segment-too-large", 23},
      {"sctp.ssn-invalid", 24},
      {"sctp.private-data-invalid", 25},
      {"sctp.retransmission-conflict", 27},
      {"sctp.adaptation-missing", 40},
      {"sctp.session-unterminated", 26},
      {"sctp.ssn-invalid", 31},
      {"sctp.session-unterminated", 31}};
  EXPECT_EQ(got, want);
}

}  // namespace
}  // namespace ddpscope
