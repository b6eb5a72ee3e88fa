// SPDX-License-Identifier: GPL-2.0-or-later
// Hostile captures: values at the edges of their fields, counts far beyond the caps, files
// that lie about their records. Expectations (issue 8): no crash, memory bounded by the caps in
// limits.h (hitting one is an engine.limit-reached finding and the analysis goes on), time
// linear in the input, and nothing before a truncation lost. Caps are set small here so that
// "millions" become thousands and the tests stay fast.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "ddpscope/analysis/analyzer.h"
#include "ddpscope/capture/feed.h"
#include "ddpscope/net/packet.h"
#include "ddpscope/ulp/iser.h"
#include "ddpscope/ulp/nvmeof.h"
#include "ddpscope/ulp/rpcrdma.h"
#include "ddpscope/ulp/smbdirect.h"
#include "ddpscope/wire/mpa.h"
#include "ddpscope/wire/rdmap.h"
#include "hostile_builders.h"

namespace ddpscope {
namespace {

using namespace hostile;
namespace fs = std::filesystem;

// ---- extreme field values ----------------------------------------------------------------

TEST(Hostile, TaggedOffsetsAtTheTopOf64Bits) {
  Analyzer an;
  const RegionSpec top_region{0x200, UINT64_MAX - 15, 16, std::nullopt, "top"};
  an.add_regions({&top_region, 1});
  Wire w(an);
  w.handshake();
  const Bytes p16(16, 0xAB), p1(1, 0xCD);
  w.fpdu(0, wire::tagged_header(Opcode::rdma_write, 0x100, UINT64_MAX, true),
         p1);  // ends exactly at 2^64
  w.fpdu(0, wire::tagged_header(Opcode::rdma_write, 0x100, UINT64_MAX - 7, true), p16);  // wraps
  w.fpdu(0, wire::tagged_header(Opcode::rdma_write, 0x200, UINT64_MAX - 15, true),
         p16);  // fills the region
  w.fpdu(0, wire::tagged_header(Opcode::rdma_write, 0x200, UINT64_MAX - 3, true),
         p16);  // wraps past it
  // A Read Request whose ranges wrap: learned, shown, never trusted for arithmetic.
  Bytes rr;
  ByteWriter rw(rr);
  wire::encode_read_request(
      wire::ReadRequest{
          0x300,
          UINT64_MAX - 1,
          UINT32_MAX,
          0x200,
          UINT64_MAX,
      },
      rw);
  w.fpdu(0, wire::untagged_header(Opcode::read_request, wire::kQnReadRequest, 1, 0, true), rr);
  w.fpdu(1, wire::tagged_header(Opcode::read_response, 0x300, UINT64_MAX - 1, true), p16);
  an.finish();
  const Model& m = an.model();
  // One finding per segment, the first rule broken in the rule layer's order
  // (rdmap/data_sink.h): STag before TO wrap, the Read Response's size before its region.
  EXPECT_EQ(count(m, FindingId::ddp_tagged_invalid_stag), 2u);  // STag 0x100 is not a region
  EXPECT_EQ(count(m, FindingId::ddp_tagged_to_wrap), 2u);       // the Write past 0x200, the source
  EXPECT_EQ(count(m, FindingId::rdmap_read_response_size_mismatch), 1u);
  EXPECT_EQ(count(m, FindingId::ddp_tagged_bounds), 0u);
  const ShadowBuffer* top = m.memory.find(RegionKey{*net::Address::parse("10.0.0.254"), 0x200});
  ASSERT_NE(top, nullptr);
  // Known limit: placed ranges are [begin, end) in 64 bits, so a segment ending exactly at 2^64
  // keeps its octets up to 2^64 - 2; the octet at TO 2^64 - 1 is not recorded.
  EXPECT_GE(top->bytes_placed(), 15u);
  EXPECT_EQ(top->read(UINT64_MAX - 15, 15), Bytes(15, 0xAB));
}

TEST(Hostile, MessageOffsetsAndLengthsNear2To32) {
  Analyzer an;
  Wire w(an);
  w.crc = false;
  w.handshake();
  const Bytes p(200, 1);
  w.fpdu(0, wire::untagged_header(Opcode::send, 0, 1, 0, false), p);
  w.fpdu(0, wire::untagged_header(Opcode::send, 0, 1, UINT32_MAX - 99, true), p);  // MO wraps
  w.fpdu(0, wire::untagged_header(Opcode::send, 0, 2, UINT32_MAX, true), p);  // first MO at the top
  w.fpdu(0, wire::untagged_header(Opcode::send, 0, UINT32_MAX, 0, true),
         p);                                                         // MSN 2^32-1 and 0: behind 3
  w.fpdu(0, wire::untagged_header(Opcode::send, 0, 0, 0, true), p);  // in serial (mod 2^32) order
  w.fpdu(0, wire::untagged_header(Opcode::send, 0, 0x80000002u, 0, true),
         p);  // ahead of 3 by 2^31-1
  // A TCP segment claiming 2^32-1 octets of payload, 10 captured: a loss, not an allocation.
  const Bytes ten(10, 0);
  w.segment(1, w.seq[1], ten, net::tcp_flag::ack, UINT32_MAX);
  an.finish();
  const Model& m = an.model();
  EXPECT_GE(count(m, FindingId::ddp_untagged_invalid_mo), 2u);
  EXPECT_EQ(count(m, FindingId::ddp_untagged_msn_duplicate), 2u);
  EXPECT_EQ(count(m, FindingId::ddp_untagged_msn_gap), 1u);
  EXPECT_EQ(count(m, FindingId::capture_truncated_frame), 1u);
  EXPECT_EQ(m.streams.size(), 1u);
}

TEST(Hostile, SequenceNumbersWrapAround2To32) {
  Analyzer an;
  Wire w(an);
  w.seq = {UINT32_MAX - 40, UINT32_MAX - 2};
  w.handshake();
  for (std::uint32_t msn = 1; msn <= 20; ++msn)
    w.fpdu(0, wire::untagged_header(Opcode::send, 0, msn, 0, true), Bytes(30, 2));
  an.finish();
  const Model& m = an.model();
  EXPECT_EQ(m.streams[0].dirs[0].fpdus, 20u);
  EXPECT_EQ(count(m, FindingId::tcp_gap), 0u);
  EXPECT_EQ(m.streams[0].dirs[0].opcodes[3].messages, 20u);
}

TEST(Hostile, PrivateDataLength65535) {
  Analyzer an;
  Wire w(an);
  w.handshake(65535);
  w.fpdu(0, wire::untagged_header(Opcode::send, 0, 1, 0, true), Bytes(8, 3));
  an.finish();
  const Model& m = an.model();
  ASSERT_EQ(m.streams.size(), 1u);
  EXPECT_EQ(m.streams[0].dirs[0].mpa_frame->private_data.size(), 65535u);
  EXPECT_GE(count(m, FindingId::mpa_handshake_invalid), 1u);  // above RFC 5044's 512
  EXPECT_EQ(m.streams[0].dirs[0].fpdus, 1u);                  // framing goes on after it

  // Claimed but never sent: the stream ends inside the private data.
  Analyzer an2;
  Wire w2(an2);
  w2.syn();
  wire::MpaReqRep req;
  req.kind = wire::MpaFrameKind::request;
  req.private_data = Bytes(65535, 0);
  Bytes cut = wire::encode_mpa_reqrep(req);
  cut.resize(300);
  w2.send(0, cut);
  an2.finish();
  EXPECT_EQ(an2.model().streams.size(), 1u);
}

// ---- counts beyond the caps --------------------------------------------------------------

TEST(Hostile, ManyStagsHitMaxRegions) {
  AnalyzerOptions o;
  o.limits.max_regions = 500;
  Analyzer an(o);
  Wire w(an);
  w.crc = false;
  w.handshake();
  const Bytes p(4, 9);
  for (std::uint32_t stag = 1; stag <= 20000; ++stag)
    w.fpdu(0, wire::tagged_header(Opcode::rdma_write, stag, 0, true), p);
  w.fpdu(0, wire::untagged_header(Opcode::send, 0, 7, 0, true), p);  // analysis goes on: an MSN gap
  an.finish();
  const Model& m = an.model();
  EXPECT_EQ(m.memory.buffers().size(), 500u);
  EXPECT_TRUE(has_limit(m, "max_regions"));
  EXPECT_EQ(count(m, FindingId::engine_limit_reached), 1u);  // reported once
  EXPECT_EQ(count(m, FindingId::ddp_untagged_msn_gap), 1u);
  EXPECT_EQ(m.streams[0].dirs[0].opcodes[0].messages, 20000u);
}

TEST(Hostile, ManyDisjointPlacementsHitTheRangeCap) {
  AnalyzerOptions o;
  o.limits.max_ranges_per_region = 1000;
  Analyzer an(o);
  Wire w(an);
  w.crc = false;
  w.handshake();
  const Bytes p(1, 9);
  for (std::uint64_t i = 0; i < 20000; ++i)
    w.fpdu(0, wire::tagged_header(Opcode::rdma_write, 0x100, i * 2, true), p);
  an.finish();
  const Model& m = an.model();
  const ShadowBuffer* b = m.memory.find(RegionKey{*net::Address::parse("10.0.0.254"), 0x100});
  ASSERT_NE(b, nullptr);
  EXPECT_LE(b->extents().size(), 1000u);
  EXPECT_LE(b->ranges().size(), 1000u);
  EXPECT_EQ(b->ranges().size() + b->ranges_dropped(), 20000u);
  EXPECT_EQ(b->bytes_placed(), 20000u);
  EXPECT_TRUE(has_limit(m, "max_ranges_per_region"));
}

TEST(Hostile, ManyStreamsHitMaxStreams) {
  AnalyzerOptions o;
  o.limits.max_streams = 300;
  Analyzer an(o);
  std::uint64_t frames = 0;
  for (std::uint32_t i = 0; i < 20000; ++i) {
    Wire w(an, static_cast<std::uint16_t>(1024 + i % 60000), 1 + i / 60000);
    w.frame_counter = &frames;
    w.handshake();
  }
  an.finish();
  const Model& m = an.model();
  EXPECT_EQ(m.streams.size(), 300u);
  EXPECT_TRUE(has_limit(m, "max_streams"));
  EXPECT_EQ(m.frames, 0u);  // fed as TCP segments, not frames
  for (const auto& s : m.streams)
    EXPECT_EQ(s.state, StreamState::full);
}

TEST(Hostile, ManyMsnsHitMessageRecordsAndFindingsCaps) {
  AnalyzerOptions o;
  o.limits.max_message_records = 2000;
  o.limits.max_findings = 1000;
  Analyzer an(o);
  Wire w(an);
  w.crc = false;
  w.handshake();
  const Bytes p(4, 9);
  const std::uint32_t n = 100000;
  for (std::uint32_t msn = 1; msn <= n; ++msn)  // in order: no findings
    w.fpdu(0, wire::untagged_header(Opcode::send, 0, msn, 0, true), p);
  for (std::uint32_t k = 0; k < n; ++k)  // every one a gap of 2
    w.fpdu(0, wire::untagged_header(Opcode::send, 0, n + 2 + 2 * k, 0, true), p);
  an.finish();
  const Model& m = an.model();
  EXPECT_EQ(m.messages.size(), 2000u);
  EXPECT_TRUE(has_limit(m, "max_message_records"));
  EXPECT_EQ(m.findings.size(), 1000u);
  EXPECT_EQ(count(m, FindingId::ddp_untagged_msn_gap), n);
  EXPECT_EQ(m.findings_dropped, n + 1 - 1000);  // the gaps and the limit, less those kept
  EXPECT_EQ(m.streams[0].dirs[0].queues.at(0).messages, 2u * n);
  EXPECT_EQ(m.message_count, 2u * n);  // every message counted, recorded or not
}

TEST(Hostile, WithoutMessageRecordsTheFindingsAreTheSame) {
  // A host that shows no message records (ddpscope analyze) keeps none, and reports exactly
  // what a host that keeps them does: the record cap's finding included, at the same frame.
  auto run = [](bool records) {
    AnalyzerOptions o;
    o.limits.max_message_records = 300;
    o.message_records = records;
    auto an = std::make_unique<Analyzer>(o);
    Wire w(*an);
    w.crc = false;
    w.handshake();
    const Bytes p(4, 9);
    for (std::uint32_t msn = 1; msn <= 1000; ++msn)  // MSN 500 missing: one gap finding
      if (msn != 500) w.fpdu(0, wire::untagged_header(Opcode::send, 0, msn, 0, true), p);
    an->finish();
    return an;
  };
  const auto with = run(true);
  const auto without = run(false);
  EXPECT_EQ(with->model().messages.size(), 300u);
  EXPECT_TRUE(without->model().messages.empty());
  EXPECT_EQ(with->model().message_count, 999u);
  EXPECT_EQ(without->model().message_count, 999u);
  ASSERT_EQ(with->model().findings.size(), without->model().findings.size());
  ASSERT_TRUE(has_limit(without->model(), "max_message_records"));
  for (std::size_t i = 0; i < with->model().findings.size(); ++i) {
    const Finding& a = with->model().findings[i];
    const Finding& b = without->model().findings[i];
    EXPECT_EQ(a.id, b.id) << i;
    EXPECT_EQ(a.frame, b.frame) << i;
    EXPECT_EQ(a.message, b.message) << i;
  }
}

TEST(Hostile, UndeliveredMessagesHitMaxPendingMessages) {
  AnalyzerOptions o;
  o.limits.max_pending_messages = 100;
  Analyzer an(o);
  Wire w(an);
  w.crc = false;
  w.handshake();
  const Bytes p(4, 9);
  w.fpdu(0, wire::tagged_header(Opcode::rdma_write, 0x100, 0, false),
         p);  // never completed: blocks delivery
  for (std::uint32_t msn = 1; msn <= 5000; ++msn)
    w.fpdu(0, wire::untagged_header(Opcode::send, 0, msn, 0, true), p);
  an.finish();
  const Model& m = an.model();
  EXPECT_TRUE(has_limit(m, "max_pending_messages"));
  std::size_t delivered = 0;
  for (const auto& r : m.messages)
    delivered += r.delivered_frame != 0;
  EXPECT_GT(delivered, 4800u);  // the queue moved on once the cap dropped the blocker
}

TEST(Hostile, ReadRequestStormHitsMaxOutstandingReads) {
  AnalyzerOptions o;
  o.limits.max_outstanding_reads = 256;
  Analyzer an(o);
  Wire w(an);
  w.crc = false;
  w.handshake();
  for (std::uint32_t i = 0; i < 20000; ++i) {
    Bytes rr;
    ByteWriter rw(rr);
    wire::encode_read_request(wire::ReadRequest{0x1000 + i, 0, 64, 0x100, 0}, rw);
    w.fpdu(0, wire::untagged_header(Opcode::read_request, wire::kQnReadRequest, i + 1, 0, true),
           rr);
  }
  // The newest are still matched; the first was forgotten at the cap.
  w.fpdu(1, wire::tagged_header(Opcode::read_response, 0x1000 + 20000 - 256, 0, true),
         Bytes(64, 1));
  an.finish();
  const Model& m = an.model();
  EXPECT_TRUE(has_limit(m, "max_outstanding_reads"));
  EXPECT_EQ(count(m, FindingId::rdmap_read_response_unmatched), 0u);
  EXPECT_EQ(count(m, FindingId::ddp_tagged_invalid_stag), 0u);
}

TEST(Hostile, AtomicStormHitsMaxOutstandingAtomics) {
  AnalyzerOptions o;
  o.limits.max_outstanding_atomics = 128;
  Analyzer an(o);
  Wire w(an);
  w.crc = false;
  w.handshake();
  for (std::uint32_t i = 0; i < 5000; ++i) {
    Bytes a;
    ByteWriter aw(a);
    wire::encode_atomic_request(wire::AtomicRequest{0, 0, i, 0x100, 0, 1, 0, 0, 0}, aw);
    w.fpdu(0, wire::untagged_header(Opcode::atomic_request, wire::kQnAtomicRequest, i + 1, 0, true),
           a);
  }
  Bytes r;
  ByteWriter rw(r);
  wire::encode_atomic_response(wire::AtomicResponse{4999, 7}, rw);
  w.fpdu(1, wire::untagged_header(Opcode::atomic_response, wire::kQnAtomicResponse, 1, 0, true), r);
  an.finish();
  const Model& m = an.model();
  EXPECT_TRUE(has_limit(m, "max_outstanding_atomics"));
  EXPECT_EQ(count(m, FindingId::rdmap_atomic_response_unmatched), 0u);
}

// An NVMe/RDMA host (claimed by its Fabrics Connect) that sends command after command, each
// with a full keyed SGL list in its in-capsule data, and never a completion: the outstanding
// commands and their regions stop at max_ulp_outstanding, the shadow buffers at max_regions;
// a command tracked before the cap still completes cleanly.
TEST(Hostile, NvmeCommandStormHitsMaxUlpOutstanding) {
  AnalyzerOptions o;
  o.limits.max_regions = 20000;
  Analyzer an(o);
  Wire w(an);
  w.crc = false;
  w.handshake();
  std::uint32_t msn = 1;
  const auto send = [&](const Bytes& body) {
    w.fpdu(0, wire::untagged_header(Opcode::send, wire::kQnSend, msn++, 0, true), body);
  };
  ulp::NvmeSqe connect;
  connect.opcode = ulp::kNvmeFabricsOpcode;
  connect.flags = 0x40;
  connect.nsid = 0x01;  // fctype Connect
  connect.cdw[0] = 1u << 16;
  send(ulp::encode_nvme_sqe(connect));
  // Command 0: one 512-octet buffer, written and completed below.
  ulp::NvmeSqe read;
  read.opcode = 0x02;
  read.flags = 0x40;
  read.nsid = 1;
  read.sgl1 = {0x100000, 512, 0x77, ulp::sgl_type::keyed_data_block, ulp::sgl_subtype::address};
  send(ulp::encode_nvme_sqe(read));
  constexpr std::uint32_t kPerCommand = 250;
  for (std::uint16_t cid = 1; cid <= 400; ++cid) {
    ulp::NvmeSqe q = read;
    q.cid = cid;
    q.sgl1 = {0, kPerCommand * 16, 0, ulp::sgl_type::last_segment, ulp::sgl_subtype::offset};
    Bytes cap = ulp::encode_nvme_sqe(q);
    ByteWriter cw(cap);
    for (std::uint32_t i = 0; i < kPerCommand; ++i)
      ulp::encode_nvme_sgl({0x10000000ull * cid + 0x1000ull * i, 4096, (cid << 12) + i + 0x1000,
                            ulp::sgl_type::keyed_data_block, ulp::sgl_subtype::address},
                           cw);
    send(cap);
  }
  w.fpdu(1, wire::tagged_header(Opcode::rdma_write, 0x77, 0x100000, true), Bytes(512, 1));
  ulp::NvmeCqe done;
  send(Bytes{});  // (keeps the client's MSNs honest; an empty Send is no capsule)
  w.fpdu(1, wire::untagged_header(Opcode::send, wire::kQnSend, 1, 0, true),
         ulp::encode_nvme_cqe(done));
  an.finish();
  const Model& m = an.model();
  EXPECT_TRUE(has_limit(m, "max_ulp_outstanding"));
  EXPECT_TRUE(has_limit(m, "max_regions"));
  for (const auto& f : m.findings)
    EXPECT_EQ(f.id, FindingId::engine_limit_reached) << f.message;
  const ShadowBuffer* b = m.memory.find(RegionKey{net::Address::v4(0x0A000001), 0x77});
  ASSERT_TRUE(b);
  EXPECT_EQ(b->completed_frame, w.frames());
}

// An iSER initiator (claimed by its Login), an NFS/RDMA client (claimed by an inline RPC Call)
// and an SMB Direct client (claimed by its Negotiate Request) that send command after command
// and never an answer: the outstanding commands stop at max_ulp_outstanding and nothing but
// the limit is reported; the RPC decoder's own memory of the Calls' write chunks stays at its
// cap.
TEST(Hostile, UlpCommandStormsHitMaxUlpOutstanding) {
  for (const std::string_view ulp : {"iser", "rpc-rdma", "smb-direct"}) {
    AnalyzerOptions o;
    o.limits.max_ulp_outstanding = 500;
    Analyzer an(o);
    Wire w(an);
    w.crc = false;
    w.handshake();
    std::uint32_t msn = 1;
    const auto send = [&](const Bytes& body) {
      w.fpdu(0, wire::untagged_header(Opcode::send, wire::kQnSend, msn++, 0, true), body);
    };
    const auto cat = [](Bytes a, const Bytes& b) {
      a.insert(a.end(), b.begin(), b.end());
      return a;
    };
    if (ulp == "iser") {
      ulp::IscsiBhs login;
      login.opcode = ulp::iscsi_opcode::login_request;
      send(cat(ulp::encode_iser_header({}), ulp::encode_iscsi_bhs(login)));
    } else if (ulp == "smb-direct") {
      ulp::SmbdNegotiateRequest rq;
      rq.credits_requested = 16;
      send(ulp::encode_smbd_negotiate_request(rq));
    }
    for (std::uint32_t id = 1; id <= 3000; ++id) {
      const std::uint32_t stag = 0x10000 + id;
      const std::uint64_t base = 0x100000ull * id;
      if (ulp == "iser") {
        ulp::IserHeader h;
        h.read_valid = true;
        h.read_stag = stag;
        h.read_base = base;
        ulp::IscsiBhs b;
        b.opcode = ulp::iscsi_opcode::scsi_command;
        b.flags = ulp::IscsiBhs::kFinal | ulp::IscsiBhs::kRead;
        b.itt = id;
        b.word20 = 4096;
        b.cdb[0] = 0x28;
        send(cat(ulp::encode_iser_header(h), ulp::encode_iscsi_bhs(b)));
      } else if (ulp == "rpc-rdma") {
        ulp::RpcRdmaHeader h;
        h.xid = id;
        h.writes = {{ulp::RdmaSegment{stag, 4096, base}}};
        send(cat(ulp::encode_rpcrdma_header(h), ulp::encode_rpc_call({id, 100003, 3, 6})));
      } else {
        ulp::SmbdDataHeader h;
        h.credits_requested = 1;
        send(ulp::encode_smbd_data(
            h, ulp::encode_smb2_read_request(id, 4096, 2, {{base, stag, 4096}})));
      }
    }
    an.finish();
    const Model& m = an.model();
    EXPECT_EQ(m.streams[0].ulp, ulp);
    EXPECT_TRUE(has_limit(m, "max_ulp_outstanding")) << ulp;
    for (const auto& f : m.findings)
      EXPECT_EQ(f.id, FindingId::engine_limit_reached) << f.message;
  }
  // The decoder alone: its table of Calls' writable octets stops at its cap.
  ulp::RpcRdmaDecoder d;
  ulp::RpcRdmaStream st;
  AdvertContext ctx;
  ctx.opcode = static_cast<std::uint8_t>(Opcode::send);
  ctx.sender = {net::Address::v4(0x0A000001), 40000};
  ctx.receiver = {net::Address::v4(0x0A000002), 20049};
  UlpEvents ev;
  for (std::uint32_t id = 1; id <= 2 * ulp::RpcRdmaStream::kMaxOutstanding; ++id) {
    ulp::RpcRdmaHeader h;
    h.xid = id;
    h.writes = {{ulp::RdmaSegment{id, 16, 0}}};
    Bytes m = ulp::encode_rpcrdma_header(h);
    const Bytes c = ulp::encode_rpc_call({id, 100003, 3, 6});
    m.insert(m.end(), c.begin(), c.end());
    d.decode(ctx, &st, m, ev);
  }
  EXPECT_EQ(st.writable.size(), ulp::RpcRdmaStream::kMaxOutstanding);
  EXPECT_TRUE(ev.commands.back().partial);
  EXPECT_FALSE(ev.commands.front().partial);
}

TEST(Hostile, BusyStreamsHitMaxHistoryTotal) {
  // 100 streams each deliver 64 KiB both ways: 256 KiB of history per direction by default
  // would be 12.5 MiB; 1 MiB for all of them caps it, and every message is still analysed.
  AnalyzerOptions o;
  o.limits.max_history_total = 1u << 20;
  Analyzer an(o);
  std::uint64_t frames = 0;
  const Bytes body(1000, 9);
  for (std::uint16_t i = 0; i < 100; ++i) {
    Wire w(an, static_cast<std::uint16_t>(30000 + i));
    w.frame_counter = &frames;
    w.handshake();
    for (std::uint32_t k = 1; k <= 64; ++k) {
      w.fpdu(0, wire::untagged_header(Opcode::send, 0, k, 0, true), body);
      w.fpdu(1, wire::untagged_header(Opcode::send, 0, k, 0, true), body);
    }
  }
  an.finish();
  const Model& m = an.model();
  EXPECT_TRUE(has_limit(m, "max_history_total"));
  EXPECT_EQ(m.streams.size(), 100u);
  for (const auto& s : m.streams)
    EXPECT_EQ(s.dirs[0].fpdus + s.dirs[1].fpdus, 128u);
  for (const auto& f : m.findings)
    EXPECT_NE(f.severity, Severity::error) << f.message;
}

TEST(Hostile, ManyStreamsResynchronisingHitMaxResyncTotal) {
  // As below, out-of-order octets past max_pending_total move into the framers (they come
  // after a hole, so each framer looks for a boundary in 60000 octets that hold none). With
  // 1 MiB for the reassemblers and 1 MiB for all framers, about 17 streams wait in each during
  // the feed; every later one gives up framing at once and is already reported unframed.
  AnalyzerOptions o;
  o.limits.max_pending_total = 1u << 20;
  o.limits.max_resync_total = 1u << 20;
  Analyzer an(o);
  std::uint64_t frames = 0;
  std::vector<std::unique_ptr<Wire>> conns;
  const Bytes chunk(60000, 7);
  for (std::uint16_t i = 0; i < 100; ++i) {
    conns.push_back(std::make_unique<Wire>(an, static_cast<std::uint16_t>(21000 + i)));
    Wire& w = *conns.back();
    w.frame_counter = &frames;
    w.crc = false;
    w.handshake();
    w.segment(0, w.seq[0] + 1, chunk);
  }
  std::uint64_t unframed = 0;
  for (const auto& st : an.model().streams)
    unframed += st.dirs[0].bytes_unframed;
  EXPECT_GE(unframed, (100u - 2 * ((1u << 20) / 60000) - 2) * 60000u);
  an.finish();
  const Model& m = an.model();
  EXPECT_TRUE(has_limit(m, "max_resync_total"));
  EXPECT_EQ(m.streams.size(), 100u);
  EXPECT_EQ(count(m, FindingId::tcp_gap), 100u);
  for (const auto& st : m.streams)
    EXPECT_EQ(st.dirs[0].bytes_unframed, 60000u);
}

TEST(Hostile, OutOfOrderOctetsOfManyStreamsHitMaxPendingTotal) {
  AnalyzerOptions o;
  o.limits.max_pending_total = 1u << 20;  // 1 MiB for all directions; 4 MiB each by default
  Analyzer an(o);
  std::uint64_t frames = 0;
  std::vector<std::unique_ptr<Wire>> conns;
  const Bytes chunk(60000, 7);
  for (std::uint16_t i = 0; i < 100; ++i) {
    conns.push_back(std::make_unique<Wire>(an, static_cast<std::uint16_t>(20000 + i)));
    Wire& w = *conns.back();
    w.frame_counter = &frames;
    w.crc = false;
    w.handshake();
    // A hole of one octet, then data that must wait behind it.
    w.segment(0, w.seq[0] + 1, chunk);
  }
  an.finish();
  const Model& m = an.model();
  EXPECT_TRUE(has_limit(m, "max_pending_total"));
  EXPECT_EQ(m.streams.size(), 100u);
  EXPECT_EQ(count(m, FindingId::tcp_gap), 100u);  // every hole, early or at the end
}

// ---- time: a million tiny out-of-order segments ------------------------------------------

// Sends `octets` of FPDUs (1000-octet Sends) as 1-octet segments, each block of 64 in reverse
// order: every segment but the block's last waits out of order. Returns the seconds taken.
double tiny_segments(std::size_t octets, std::uint64_t* fpdus) {
  Analyzer an;
  Wire w(an);
  w.crc = false;
  w.handshake();
  Bytes stream;
  for (std::uint32_t msn = 1; stream.size() < octets; ++msn) {
    const Bytes f =
        w.fpdu_bytes(wire::untagged_header(Opcode::send, 0, msn, 0, true), Bytes(976, 5));
    stream.insert(stream.end(), f.begin(), f.end());
  }
  stream.resize(octets);
  const auto t0 = std::chrono::steady_clock::now();
  constexpr std::size_t kBlock = 64;
  const std::uint32_t base = w.seq[0];
  for (std::size_t b = 0; b < octets; b += kBlock) {
    const std::size_t n = std::min(kBlock, octets - b);
    for (std::size_t i = n; i-- > 0;)
      w.segment(0, base + static_cast<std::uint32_t>(b + i), ByteView(stream).subspan(b + i, 1));
  }
  an.finish();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  *fpdus = an.model().streams[0].dirs[0].fpdus;
  EXPECT_EQ(count(an.model(), FindingId::tcp_gap), 0u);
  return s;
}

TEST(Hostile, MillionTinyOutOfOrderSegmentsTakeLinearTime) {
  std::uint64_t small_fpdus = 0, big_fpdus = 0;
  const double small = tiny_segments(100'000, &small_fpdus);
  const double big = tiny_segments(1'000'000, &big_fpdus);
  EXPECT_EQ(small_fpdus, 100u);
  EXPECT_EQ(big_fpdus, 1000u);
  std::printf("[hostile] 100k tiny segments: %.3f s, 1M: %.3f s (ratio %.1f)\n", small, big,
              big / small);
  // Linear is a ratio of 10; quadratic would be 100. Generous for a loaded machine.
  EXPECT_LT(big, 40 * small + 1.0);
}

// ---- files that lie ------------------------------------------------------------------------

fs::path tmp_file(const std::string& name) {
  return fs::path(DDPSCOPE_HOSTILE_TMP_DIR) / name;
}

void write_bytes(const fs::path& p, ByteView b) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

Bytes read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return Bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void le32(Bytes& b, std::uint32_t v) {
  for (int i = 0; i < 4; ++i)
    b.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}
void le16(Bytes& b, std::uint16_t v) {
  b.push_back(static_cast<std::uint8_t>(v));
  b.push_back(static_cast<std::uint8_t>(v >> 8));
}

// Classic pcap, microsecond, built octet by octet so that records can lie.
Bytes pcap_header(std::uint32_t snaplen = 262144, std::uint32_t link = 1) {
  Bytes b;
  le32(b, 0xA1B2C3D4);
  le16(b, 2);
  le16(b, 4);
  le32(b, 0);
  le32(b, 0);
  le32(b, snaplen);
  le32(b, link);
  return b;
}
void pcap_record(Bytes& b, ByteView data, std::uint32_t caplen, std::uint32_t len,
                 std::uint32_t sec = 1) {
  le32(b, sec);
  le32(b, 0);
  le32(b, caplen);
  le32(b, len);
  b.insert(b.end(), data.begin(), data.end());
}

Bytes syn_frame(std::uint16_t port) {
  net::TcpFrameSpec s;
  s.src = {net::Address::v4(0x0A000001), port};
  s.dst = {net::Address::v4(0x0A000002), 4791};
  s.flags = net::tcp_flag::syn;
  s.mss = 1460;
  return net::encode_tcp_frame(s, {});
}

struct FileRun {
  std::unique_ptr<Analyzer> an = std::make_unique<Analyzer>();
  std::string open_error;
  std::string read_error;
  std::uint64_t frames = 0;
};

// What every host does (capture::feed): every frame until the end or the first error, then the
// error as capture.truncated-file.
FileRun analyze_file(const fs::path& p, capture::ReaderKind kind = capture::ReaderKind::automatic) {
  FileRun r;
  auto reader = capture::CaptureReader::open(p.string(), r.open_error, kind);
  if (!reader) return r;
  const capture::FeedResult fed = capture::feed(*reader, *r.an);
  r.frames = fed.last_frame;
  r.read_error = fed.error;
  return r;
}

TEST(HostileFile, AbsurdCaplen) {
  const Bytes syn = syn_frame(40000);
  const auto n = static_cast<std::uint32_t>(syn.size());
  for (std::uint32_t caplen : {0xFFFFFFFFu, 0x7FFFFFFFu, 262145u + 1000u}) {
    Bytes b = pcap_header();
    pcap_record(b, syn, n, n);
    pcap_record(b, syn, caplen, caplen);  // claims far more than the file holds
    const fs::path p = tmp_file("absurd-caplen.pcap");
    write_bytes(p, b);
    FileRun r = analyze_file(p);
    EXPECT_EQ(r.frames, 1u) << caplen;
    EXPECT_FALSE(r.read_error.empty()) << caplen;
    EXPECT_EQ(count(r.an->model(), FindingId::capture_truncated_file), 1u);
    EXPECT_EQ(r.an->model().streams.size(), 1u);
  }
  // len below caplen, caplen above the file's snaplen but present: read as captured.
  Bytes b = pcap_header(64);
  pcap_record(b, syn, n, 10);
  pcap_record(b, syn, n, n);
  const fs::path p = tmp_file("lying-len.pcap");
  write_bytes(p, b);
  FileRun r = analyze_file(p);
  EXPECT_TRUE(r.open_error.empty()) << r.open_error;
}

// Frame boundaries of a classic pcap file: offset of each record header.
std::vector<std::size_t> record_offsets(const Bytes& file) {
  std::vector<std::size_t> at;
  std::size_t pos = 24;
  while (pos + 16 <= file.size()) {
    at.push_back(pos);
    std::uint32_t caplen = 0;
    std::memcpy(&caplen, file.data() + pos + 8, 4);  // written on this (little-endian) host
    pos += 16 + caplen;
  }
  return at;
}

std::vector<std::pair<std::string, std::uint64_t>> findings_of(const Model& m) {
  std::vector<std::pair<std::string, std::uint64_t>> v;
  for (const auto& f : m.findings)
    v.emplace_back(std::string(f.code()), f.frame);
  return v;
}

TEST(HostileFile, FileCutInsideARecordKeepsEverythingBefore) {
  const Bytes file = read_bytes(fs::path(DDPSCOPE_SOURCE_DIR) / "samples/synthetic/fault-msn.pcap");
  const auto at = record_offsets(file);
  ASSERT_GT(at.size(), 10u);
  for (std::size_t k : {std::size_t{3}, at.size() / 2, at.size() - 1}) {
    // Clean cut before record k, and a cut in the middle of record k's data / header.
    const Bytes clean(file.begin(), file.begin() + static_cast<std::ptrdiff_t>(at[k]));
    write_bytes(tmp_file("cut-clean.pcap"), clean);
    const FileRun ref = analyze_file(tmp_file("cut-clean.pcap"));
    ASSERT_TRUE(ref.read_error.empty());
    ASSERT_EQ(ref.frames, k);
    for (std::size_t extra : {std::size_t{7}, std::size_t{16 + 20}}) {
      const Bytes cut(file.begin(), file.begin() + static_cast<std::ptrdiff_t>(at[k] + extra));
      write_bytes(tmp_file("cut-mid.pcap"), cut);
      const FileRun r = analyze_file(tmp_file("cut-mid.pcap"));
      EXPECT_EQ(r.frames, k);
      EXPECT_NE(r.read_error.find("truncated"), std::string::npos) << r.read_error;
      auto expected = findings_of(ref.an->model());
      auto got = findings_of(r.an->model());
      ASSERT_FALSE(got.empty());
      EXPECT_EQ(got.back().first, "capture.truncated-file");
      EXPECT_EQ(got.back().second, k);  // the last complete frame
      got.erase(std::remove_if(got.begin(), got.end(),
                               [](const auto& f) { return f.first == "capture.truncated-file"; }),
                got.end());
      EXPECT_EQ(got, expected) << "cut inside record " << k;
    }
  }
}

// pcapng blocks (little-endian), built here so that interfaces and link types can be mixed.
void pcapng_block(Bytes& b, std::uint32_t type, const Bytes& body) {
  const auto len = static_cast<std::uint32_t>(12 + body.size());
  le32(b, type);
  le32(b, len);
  b.insert(b.end(), body.begin(), body.end());
  le32(b, len);
}
Bytes pcapng_shb() {
  Bytes body;
  le32(body, 0x1A2B3C4D);
  le16(body, 1);
  le16(body, 0);
  le32(body, 0xFFFFFFFF);
  le32(body, 0xFFFFFFFF);
  Bytes b;
  pcapng_block(b, 0x0A0D0D0A, body);
  return b;
}
void pcapng_idb(Bytes& b, std::uint16_t link) {
  Bytes body;
  le16(body, link);
  le16(body, 0);
  le32(body, 262144);
  pcapng_block(b, 1, body);
}
void pcapng_epb(Bytes& b, std::uint32_t iface, ByteView data) {
  Bytes body;
  le32(body, iface);
  le32(body, 0);
  le32(body, 1000);
  le32(body, static_cast<std::uint32_t>(data.size()));
  le32(body, static_cast<std::uint32_t>(data.size()));
  body.insert(body.end(), data.begin(), data.end());
  while (body.size() % 4)
    body.push_back(0);
  pcapng_block(b, 6, body);
}

TEST(HostileFile, PcapngWithSeveralInterfacesAndLinkTypes) {
  const Bytes syn1 = syn_frame(40001), syn2 = syn_frame(40002), syn3 = syn_frame(40003);
  {
    // Two Ethernet interfaces, frames on both: all read.
    Bytes b = pcapng_shb();
    pcapng_idb(b, 1);
    pcapng_idb(b, 1);
    pcapng_epb(b, 0, syn1);
    pcapng_epb(b, 1, syn2);
    pcapng_epb(b, 0, syn3);
    write_bytes(tmp_file("two-ethernet.pcapng"), b);
    const FileRun r = analyze_file(tmp_file("two-ethernet.pcapng"));
    EXPECT_EQ(r.frames, 3u);
    EXPECT_TRUE(r.read_error.empty()) << r.read_error;
    EXPECT_EQ(r.an->model().streams.size(), 3u);
  }
  {
    // A raw-IP interface described after Ethernet frames: the mapped reader (the default)
    // reads on, each frame with its interface's link type; libpcap stops there, the frames
    // before it are analysed and the stop is reported as capture.truncated-file.
    Bytes b = pcapng_shb();
    pcapng_idb(b, 1);
    pcapng_epb(b, 0, syn1);
    pcapng_epb(b, 0, syn2);
    pcapng_idb(b, 101);
    pcapng_epb(b, 1, ByteView(syn3).subspan(14));
    write_bytes(tmp_file("mixed-links.pcapng"), b);
    const FileRun r = analyze_file(tmp_file("mixed-links.pcapng"));
    EXPECT_EQ(r.frames, 3u);
    EXPECT_EQ(r.an->model().streams.size(), 3u);
    EXPECT_TRUE(r.read_error.empty()) << r.read_error;
    const FileRun lib = analyze_file(tmp_file("mixed-links.pcapng"), capture::ReaderKind::libpcap);
    EXPECT_EQ(lib.frames, 2u);
    EXPECT_EQ(lib.an->model().streams.size(), 2u);
    EXPECT_FALSE(lib.read_error.empty());
    EXPECT_EQ(count(lib.an->model(), FindingId::capture_truncated_file), 1u);
  }
  {
    // An Enhanced Packet Block naming an interface that was never described.
    Bytes b = pcapng_shb();
    pcapng_idb(b, 1);
    pcapng_epb(b, 0, syn1);
    pcapng_epb(b, 7, syn2);
    write_bytes(tmp_file("bad-interface.pcapng"), b);
    const FileRun r = analyze_file(tmp_file("bad-interface.pcapng"));
    EXPECT_EQ(r.frames, 1u);
    EXPECT_FALSE(r.read_error.empty());
  }
}

}  // namespace
}  // namespace ddpscope
