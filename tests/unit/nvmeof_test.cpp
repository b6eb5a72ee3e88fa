// SPDX-License-Identifier: GPL-2.0-or-later
// NVMe-oF/RDMA: the capsule and CM private data codecs, the decoder's recognition of a stream
// and what it reads of commands and completions, and the engine's ULP checks on small
// builder-made streams (hostile::Wire).
#include "ddpscope/ulp/nvmeof.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "ddpscope/analysis/analyzer.h"
#include "ddpscope/ddp/rules.h"
#include "ddpscope/wire/mpa.h"
#include "ddpscope/wire/rdmap.h"
#include "hostile/hostile_builders.h"
#include "ulp_test_util.h"

namespace ddpscope {
namespace {

using namespace ulp;
using wire::Opcode;

NvmeSqe command(std::uint8_t opcode, std::uint16_t cid, std::uint64_t addr, std::uint32_t len,
                std::uint32_t key, std::uint8_t subtype = sgl_subtype::invalidate_key) {
  NvmeSqe q;
  q.opcode = opcode;
  q.flags = 0x40;  // PSDT 01b: SGL
  q.cid = cid;
  q.nsid = 1;
  q.sgl1 = NvmeSgl{addr, len, key, sgl_type::keyed_data_block, subtype};
  return q;
}

AdvertContext from_host(std::uint64_t length, std::uint16_t port = 4420) {
  return test::send_from_client(length, port);
}
AdvertContext from_controller(std::uint64_t length, std::uint16_t port = 4420) {
  return test::send_from_server(length, port);
}

// The octets of the real siw capture samples/siw/siw-nvmeof.pcap, frame 146: NVM Read cid 0x61
// of 4096 octets into key 0xdf639c01 (keyed SGL, invalidate key).
const char* kSiwRead =
    "02406100010000000000000000000000000000000000000000605263e0f122ff001000019c63df4f"
    "000000000000000007000000000000000000000000000000";

Bytes from_hex(std::string_view h) {
  Bytes b;
  for (std::size_t i = 0; i + 1 < h.size(); i += 2)
    b.push_back(static_cast<std::uint8_t>(std::stoi(std::string(h.substr(i, 2)), nullptr, 16)));
  return b;
}

TEST(NvmeCodec, SiwReadCapsuleDecodes) {
  const Bytes cap = from_hex(kSiwRead);
  ASSERT_EQ(cap.size(), kNvmeSqeSize);
  const auto q = decode_nvme_sqe(cap);
  ASSERT_TRUE(q);
  EXPECT_EQ(q->opcode, 0x02);
  EXPECT_EQ(q->cid, 0x61);
  EXPECT_EQ(q->nsid, 1u);
  EXPECT_EQ(q->sgl1.type, sgl_type::keyed_data_block);
  EXPECT_EQ(q->sgl1.subtype, sgl_subtype::invalidate_key);
  EXPECT_EQ(q->sgl1.address, 0xff22f1e063526000u);
  EXPECT_EQ(q->sgl1.length, 4096u);
  EXPECT_EQ(q->sgl1.key, 0xdf639c01u);
  EXPECT_EQ(nvme_data_direction(*q), NvmeDataDirection::controller_to_host);
  EXPECT_EQ(nvme_command_name(*q, false), "NVMe Read cid 97 nsid 1");
  EXPECT_EQ(encode_nvme_sqe(*q), cap);  // every field it reads, it writes back
}

TEST(NvmeCodec, CqeAndCmPrivateDataRoundTrip) {
  NvmeCqe c;
  c.cid = 0x1234;
  c.sqhd = 7;
  c.status = 0x0005;  // status field 2, phase 1
  const auto d = decode_nvme_cqe(encode_nvme_cqe(c));
  ASSERT_TRUE(d);
  EXPECT_EQ(d->cid, 0x1234);
  EXPECT_FALSE(d->success());
  EXPECT_FALSE(decode_nvme_cqe(Bytes(17, 0)));
  const NvmeCmRequest r{0, 1, 128, 127, 0};
  const auto rd = decode_nvme_cm_request(encode_nvme_cm_request(r));
  ASSERT_TRUE(rd);
  EXPECT_EQ(rd->qid, 1);
  EXPECT_EQ(rd->hsqsize, 127);
  // Record format 1, zero sizes, a reserved octet set, another length: not NVMe's.
  Bytes bad = encode_nvme_cm_request(r);
  bad[0] = 1;
  EXPECT_FALSE(decode_nvme_cm_request(bad));
  EXPECT_FALSE(decode_nvme_cm_request(encode_nvme_cm_request({0, 1, 0, 0, 0})));
  bad = encode_nvme_cm_request(r);
  bad[20] = 1;
  EXPECT_FALSE(decode_nvme_cm_request(bad));
  EXPECT_FALSE(decode_nvme_cm_request(Bytes(31, 0)));
  EXPECT_TRUE(decode_nvme_cm_reply(encode_nvme_cm_reply({0, 32})));
}

TEST(NvmeCodec, KeyedListInCapsuleData) {
  NvmeSqe q = command(0x02, 5, 0, 0, 0);
  q.sgl1 = NvmeSgl{0, 32, 0, sgl_type::last_segment, sgl_subtype::offset};
  Bytes cap = encode_nvme_sqe(q);
  ByteWriter w(cap);
  encode_nvme_sgl({0x1000, 512, 0xA1, sgl_type::keyed_data_block, sgl_subtype::address}, w);
  encode_nvme_sgl({0x9000, 1024, 0xA2, sgl_type::keyed_data_block, sgl_subtype::address}, w);
  const auto bufs = nvme_capsule_buffers(*decode_nvme_sqe(cap), cap);
  ASSERT_EQ(bufs.keyed.size(), 2u);
  EXPECT_EQ(bufs.keyed[1].key, 0xA2u);
  EXPECT_EQ(bufs.keyed[1].length, 1024u);
  EXPECT_FALSE(bufs.partial);
  // A list that runs past the capsule: what is there, marked partial.
  cap.resize(cap.size() - 8);
  const auto cut = nvme_capsule_buffers(*decode_nvme_sqe(cap), cap);
  EXPECT_EQ(cut.keyed.size(), 1u);
  EXPECT_TRUE(cut.partial);
}

TEST(NvmeDecoder, RecognisedByCmPrivateDataNotByPortAlone) {
  const NvmeRdmaDecoder d;
  const Bytes cap = encode_nvme_sqe(command(0x02, 1, 0x10000, 4096, 0x77));
  // Port 7174, no set-up: a capsule-shaped Send is not enough.
  auto st = d.new_stream();
  UlpEvents ev;
  d.decode(from_host(cap.size(), 7174), st.get(), cap, ev);
  EXPECT_TRUE(ev.empty());
  EXPECT_FALSE(st->claimed());
  // The same on another port after the NVMe/RDMA CM private data.
  UlpSetup s;
  s.request = encode_nvme_cm_request({0, 1, 32, 31, 0});
  s.reply = encode_nvme_cm_reply({0, 32});
  s.initiator = from_host(0, 7174).sender;
  s.responder = from_host(0, 7174).receiver;
  d.setup(st.get(), s);
  EXPECT_TRUE(st->claimed());
  d.decode(from_host(cap.size(), 7174), st.get(), cap, ev);
  ASSERT_EQ(ev.commands.size(), 1u);
  const UlpCommand& c = ev.commands[0];
  EXPECT_EQ(c.name, "NVMe Read cid 1 nsid 1");
  ASSERT_EQ(c.regions.size(), 1u);
  EXPECT_EQ(c.regions[0].stag, 0x77u);
  EXPECT_EQ(c.regions[0].length, 4096u);
  EXPECT_EQ(*c.regions[0].access, ddp::access::remote_write);
  EXPECT_TRUE(c.regions[0].invalidate);
  EXPECT_EQ(c.regions[0].owner.to_string(), "10.0.0.1");
  // A Write's buffer is for the controller to read.
  UlpEvents w;
  const Bytes wr = encode_nvme_sqe(command(0x01, 2, 0x20000, 512, 0x78, sgl_subtype::address));
  d.decode(from_host(wr.size(), 7174), st.get(), wr, w);
  ASSERT_EQ(w.commands.size(), 1u);
  EXPECT_EQ(*w.commands[0].regions[0].access, ddp::access::remote_read);
  EXPECT_FALSE(w.commands[0].regions[0].invalidate);
}

TEST(NvmeDecoder, PortHintWithContentAndConnectByContent) {
  const NvmeRdmaDecoder d;
  auto st = d.new_stream();
  UlpEvents ev;
  const Bytes cap = encode_nvme_sqe(command(0x02, 9, 0x10000, 4096, 0x77));
  d.decode(from_host(cap.size()), st.get(), cap, ev);
  EXPECT_TRUE(st->claimed());
  ASSERT_EQ(ev.commands.size(), 1u);
  // The completion (16 octets from the controller) names the CID.
  NvmeCqe cqe;
  cqe.cid = 9;
  UlpEvents done;
  d.decode(from_controller(16), st.get(), encode_nvme_cqe(cqe), done);
  ASSERT_EQ(done.completions.size(), 1u);
  EXPECT_EQ(done.completions[0].id, 9u);
  EXPECT_TRUE(done.completions[0].success);
  // A 16-octet Send from the host is no completion.
  UlpEvents none;
  d.decode(from_host(16), st.get(), encode_nvme_cqe(cqe), none);
  EXPECT_TRUE(none.empty());

  // A Fabrics Connect claims a stream on any port; its in-capsule data names the NQNs.
  auto st2 = d.new_stream();
  NvmeSqe conn = command(kNvmeFabricsOpcode, 0, 0, 1024, 0);
  conn.nsid = 0x01;  // fctype Connect
  conn.sgl1 = NvmeSgl{0, 1024, 0, sgl_type::data_block, sgl_subtype::offset};
  conn.cdw[0] = 1u << 16;  // qid 1
  conn.cdw[1] = 127;       // sqsize
  Bytes c = encode_nvme_sqe(conn);
  Bytes data(kNvmeConnectDataSize, 0);
  const std::string sub = "nqn.test:sub", host = "nqn.test:host";
  std::copy(sub.begin(), sub.end(), data.begin() + 256);
  std::copy(host.begin(), host.end(), data.begin() + 512);
  c.insert(c.end(), data.begin(), data.end());
  UlpEvents cev;
  d.decode(from_host(c.size(), 7000), st2.get(), c, cev);
  EXPECT_TRUE(st2->claimed());
  ASSERT_EQ(cev.commands.size(), 1u);
  EXPECT_EQ(cev.commands[0].name, "NVMe-oF Connect cid 0 qid 1");
  EXPECT_TRUE(cev.commands[0].regions.empty());  // in-capsule data: no remote buffer
  const std::string desc = st2->describe();
  EXPECT_NE(desc.find("hostnqn nqn.test:host"), std::string::npos) << desc;
  EXPECT_NE(desc.find("Connect sqsize 127"), std::string::npos) << desc;
}

TEST(NvmeDecoder, HostileCapsulesYieldNothingOrBoundedLists) {
  const NvmeRdmaDecoder d;
  auto st = d.new_stream();
  UlpSetup s;
  s.request = encode_nvme_cm_request({0, 1, 32, 31, 0});
  d.setup(st.get(), s);
  // Every length below, at and past an SQE, all 0xFF: no crash, a bounded list.
  for (std::size_t n = 0; n < 200; n += 7) {
    const Bytes junk(n, 0xFF);
    UlpEvents ev;
    d.decode(from_host(n), st.get(), junk, ev);
    for (const auto& c : ev.commands)
      EXPECT_LE(c.regions.size(), kNvmeMaxKeyedDescriptors);
  }
  // A segment descriptor claiming 2^32 octets of list.
  NvmeSqe q = command(0x02, 1, 0, 0, 0);
  q.sgl1 = NvmeSgl{8, 0xFFFFFFF0u, 0, sgl_type::segment, sgl_subtype::offset};
  Bytes cap = encode_nvme_sqe(q);
  cap.resize(4096, 0x4F);
  const auto bufs = nvme_capsule_buffers(*decode_nvme_sqe(cap), cap);
  EXPECT_TRUE(bufs.partial);
  EXPECT_LE(bufs.keyed.size(), kNvmeMaxKeyedDescriptors);
}

// ---- the engine's ULP checks on a builder-made NVMe/RDMA stream -----------------------------

struct NvmeWire {
  explicit NvmeWire(Analyzer& an) : w(an) { w.crc = false; }
  hostile::Wire w;
  // SYNs, MPA Request and Reply carrying the NVMe/RDMA CM private data (the server is on port
  // 4791: the set-up, not the port, says NVMe).
  void handshake() {
    w.syn();
    wire::MpaReqRep req;
    req.kind = wire::MpaFrameKind::request;
    req.revision = 1;
    req.private_data = encode_nvme_cm_request({0, 1, 32, 31, 0});
    w.send(0, wire::encode_mpa_reqrep(req));
    wire::MpaReqRep rep = req;
    rep.kind = wire::MpaFrameKind::reply;
    rep.private_data = encode_nvme_cm_reply({0, 32});
    w.send(1, wire::encode_mpa_reqrep(rep));
  }
  std::uint32_t msn[2] = {1, 1};
  void send(int dir, const Bytes& body, std::uint32_t inv = 0) {
    const Opcode op = inv ? Opcode::send_invalidate : Opcode::send;
    w.fpdu(dir, wire::untagged_header(op, wire::kQnSend, msn[dir]++, 0, true, inv), body);
  }
  void write(std::uint32_t stag, std::uint64_t to, std::size_t n) {
    w.fpdu(1, wire::tagged_header(Opcode::rdma_write, stag, to, true), Bytes(n, 0x5A));
  }
  void complete(std::uint16_t cid, std::uint32_t inv = 0) {
    NvmeCqe c;
    c.cid = cid;
    send(1, encode_nvme_cqe(c), inv);
  }
};

using test::of;

TEST(NvmeEngine, CleanReadLearnsBoundsAndEndsAtCompletion) {
  Analyzer an;
  NvmeWire n(an);
  n.handshake();
  n.send(0, encode_nvme_sqe(command(0x02, 3, 0x10000, 2048, 0x300)));
  n.write(0x300, 0x10000, 2048);
  n.complete(3, 0x300);
  an.finish();
  const Model& m = an.model();
  EXPECT_TRUE(m.findings.empty()) << m.findings[0].message;
  EXPECT_EQ(m.streams[0].ulp, "nvme-rdma");
  const ShadowBuffer* b = m.memory.find(RegionKey{*net::Address::parse("10.0.0.1"), 0x300});
  ASSERT_TRUE(b);
  EXPECT_EQ(b->source, RegionSource::advertisement);
  EXPECT_TRUE(b->bounds_enforced);
  EXPECT_EQ(b->ulp, "nvme-rdma");
  EXPECT_EQ(b->command, "NVMe Read cid 3 nsid 1");
  EXPECT_TRUE(b->invalidated);
  EXPECT_NE(b->completed_frame, 0u);
}

// Each untagged message is named by what the decoder found in it (Model::ulp_name): the
// command capsule by its command, the response capsule as its completion.
TEST(NvmeEngine, MessagesAreNamedByTheirCommandAndCompletion) {
  Analyzer an;
  NvmeWire n(an);
  n.handshake();
  n.send(0, encode_nvme_sqe(command(0x02, 97, 0x10000, 2048, 0x300)));
  n.write(0x300, 0x10000, 2048);
  NvmeCqe failed;
  failed.cid = 97;
  failed.status = 0x0004;  // SC 02h, phase 0
  n.send(1, encode_nvme_cqe(failed));
  n.complete(98);  // no such command
  an.finish();
  const Model& m = an.model();
  std::vector<std::string> names;
  for (const MessageRecord& r : m.messages)
    if (!r.tagged) names.emplace_back(m.ulp_name(r));
  ASSERT_EQ(names.size(), 3u);
  EXPECT_EQ(names[0], "NVMe Read cid 97 nsid 1");
  EXPECT_EQ(names[1], "completion of NVMe Read cid 97 nsid 1, status 0x2");
  EXPECT_EQ(names[2], "completion of nvme-rdma id 98");
  for (const MessageRecord& r : m.messages) {
    if (!r.tagged) continue;
    EXPECT_EQ(m.ulp_name(r), "");
  }
}

TEST(NvmeEngine, EachUlpCheckFires) {
  Analyzer an;
  NvmeWire n(an);
  n.handshake();
  // A Write command's buffer RDMA-Written: access mismatch.
  n.send(0, encode_nvme_sqe(command(0x01, 1, 0x10000, 512, 0x101)));
  n.write(0x101, 0x10000, 512);
  n.complete(1, 0x101);
  // A Read completed after half its data: incomplete transfer.
  n.send(0, encode_nvme_sqe(command(0x02, 2, 0x20000, 1024, 0x102)));
  n.write(0x102, 0x20000, 512);
  n.complete(2, 0x102);
  // Completion invalidating another key, then a Write to the command's own key after it.
  n.send(0, encode_nvme_sqe(command(0x02, 3, 0x30000, 256, 0x103)));
  n.write(0x103, 0x30000, 256);
  n.complete(3, 0x999);
  n.write(0x103, 0x30000, 16);
  an.finish();
  const Model& m = an.model();
  EXPECT_EQ(of(m, "ulp.access-mismatch").size(), 1u);
  EXPECT_EQ(of(m, "ulp.incomplete-transfer").size(), 1u);
  EXPECT_EQ(of(m, "ulp.invalidate-mismatch").size(), 1u);
  EXPECT_EQ(of(m, "rdmap.stag-invalidated-use").size(), 1u);
  for (const auto* f : of(m, "ulp.incomplete-transfer"))
    EXPECT_NE(f->message.find("512 of 1024"), std::string::npos) << f->message;
}

// A command that failed moved what it moved: no transfer check. Nor for a command whose
// completion never comes (an Asynchronous Event Request), nor one whose capsule the capture
// lacks (its completion names an unknown CID).
TEST(NvmeEngine, FailedUnansweredAndUnknownCommandsAreNotJudged) {
  Analyzer an;
  NvmeWire n(an);
  n.handshake();
  n.send(0, encode_nvme_sqe(command(0x02, 2, 0x20000, 1024, 0x102)));
  n.write(0x102, 0x20000, 512);
  NvmeCqe failed;
  failed.cid = 2;
  failed.status = 0x0281 << 1;  // Media and Data Integrity Errors / Unrecovered Read Error
  n.send(1, encode_nvme_cqe(failed), 0x102);
  n.send(0, encode_nvme_sqe(command(0x0C, 3, 0, 0, 0)));  // AER: no data, no completion
  n.complete(77);
  an.finish();
  EXPECT_TRUE(an.model().findings.empty()) << an.model().findings[0].message;
}

TEST(NvmeEngine, CaptureLossMakesTheTransferCheckANote) {
  Analyzer an;
  NvmeWire n(an);
  n.handshake();
  n.send(0, encode_nvme_sqe(command(0x02, 2, 0x20000, 1024, 0x102)));
  n.write(0x102, 0x20000, 512);
  // The second half's FPDU is missing from the capture.
  const Bytes lost =
      n.w.fpdu_bytes(wire::tagged_header(Opcode::rdma_write, 0x102, 0x20200, true), Bytes(512, 1));
  n.w.seq[1] += static_cast<std::uint32_t>(lost.size());
  n.complete(2, 0x102);
  an.finish();
  const auto f = of(an.model(), "ulp.incomplete-transfer");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0]->severity, Severity::note);
  EXPECT_EQ(f[0]->consequence_of, Consequence::gap);
}

TEST(NvmeEngine, OutstandingCommandsAreCapped) {
  AnalyzerOptions o;
  o.limits.max_ulp_outstanding = 2;
  Analyzer an(o);
  NvmeWire n(an);
  n.handshake();
  for (std::uint16_t cid = 0; cid < 4; ++cid)
    n.send(0, encode_nvme_sqe(command(0x02, cid, 0x10000 * (cid + 1), 64, 0x200 + cid)));
  an.finish();
  EXPECT_TRUE(hostile::has_limit(an.model(), "max_ulp_outstanding"));
}

}  // namespace
}  // namespace ddpscope
