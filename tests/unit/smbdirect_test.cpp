// SPDX-License-Identifier: GPL-2.0-or-later
// SMB Direct (MS-SMBD) with the SMB2 RDMA channel: the negotiate, data transfer and SMB2
// codecs, the decoder's recognition of a stream, its reassembly of fragments and what it
// reads of READ/WRITE requests and responses, and the engine's ULP checks (hostile::Wire).
#include "ddpscope/ulp/smbdirect.h"

#include <gtest/gtest.h>

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

AdvertContext from_client(std::uint64_t length) {
  return test::send_from_client(length, 9999);
}
AdvertContext from_server(std::uint64_t length) {
  return test::send_from_server(length, 9999);
}
Bytes data(const Bytes& smb2, std::uint32_t remaining = 0) {
  SmbdDataHeader h;
  h.credits_requested = 1;
  h.credits_granted = 1;
  h.remaining_data_length = remaining;
  return encode_smbd_data(h, smb2);
}

TEST(SmbDirectCodec, NegotiateAndDataHeaders) {
  SmbdNegotiateRequest rq;
  rq.credits_requested = 255;
  rq.preferred_send_size = 1364;
  rq.max_receive_size = 8192;
  rq.max_fragmented_size = 1048576;
  const Bytes b = encode_smbd_negotiate_request(rq);
  ASSERT_EQ(b.size(), kSmbdNegotiateRequestSize);
  const auto d = decode_smbd_negotiate_request(b);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->max_fragmented_size, 1048576u);
  EXPECT_FALSE(decode_smbd_negotiate_request(ByteView(b).first(19)));
  SmbdNegotiateResponse rs;
  rs.credits_granted = 255;
  rs.max_read_write_size = 1048576;
  const Bytes r = encode_smbd_negotiate_response(rs);
  ASSERT_EQ(r.size(), kSmbdNegotiateResponseSize);
  EXPECT_EQ(decode_smbd_negotiate_response(r)->max_read_write_size, 1048576u);
  // Data: offset 24, 8-aligned, inside the message; an empty one (a keep-alive) is offset 0.
  const Bytes m = data(Bytes(40, 1));
  EXPECT_TRUE(decode_smbd_data_header(m, m.size()));
  EXPECT_FALSE(decode_smbd_data_header(m, m.size() - 1));
  Bytes odd = m;
  odd[12] = 20;  // DataOffset 20: not 8-aligned
  EXPECT_FALSE(decode_smbd_data_header(odd, odd.size()));
  const Bytes empty = encode_smbd_data({}, {});
  EXPECT_TRUE(decode_smbd_data_header(empty, empty.size()));
}

TEST(SmbDirectCodec, Smb2ReadWriteRequestsAndResponses) {
  const auto rd = decode_smb2(
      encode_smb2_read_request(5, 8192, 2, {{0x1000, 0x77, 4096}, {0x9000, 0x78, 4096}}));
  ASSERT_TRUE(rd);
  ASSERT_EQ(rd->size(), 1u);
  EXPECT_EQ((*rd)[0].command, smb2_command::read);
  EXPECT_EQ((*rd)[0].message_id, 5u);
  EXPECT_EQ((*rd)[0].channel, 2u);
  ASSERT_EQ((*rd)[0].buffers.size(), 2u);
  EXPECT_EQ((*rd)[0].buffers[1], (SmbDirectBuffer{0x9000, 0x78, 4096}));
  const auto wr = decode_smb2(encode_smb2_write_request(6, 4096, 1, {{0x2000, 0x79, 4096}}));
  ASSERT_TRUE(wr);
  EXPECT_EQ((*wr)[0].length, 4096u);
  EXPECT_EQ((*wr)[0].buffers.size(), 1u);
  const auto rs = decode_smb2(encode_smb2_response(smb2_command::read, 5, 0, 8192));
  ASSERT_TRUE(rs);
  EXPECT_TRUE((*rs)[0].response);
  EXPECT_EQ((*rs)[0].transferred, 8192u);
  // Channel info pointing past the PDU: what is there is read, the rest marked partial.
  Bytes cut = encode_smb2_read_request(7, 8192, 1, {{0x1000, 0x77, 4096}, {0x2000, 0x78, 4096}});
  cut.resize(cut.size() - 8);
  const auto p = decode_smb2(cut);
  ASSERT_TRUE(p);
  EXPECT_EQ((*p)[0].buffers.size(), 1u);
  EXPECT_TRUE((*p)[0].buffers_partial);
  EXPECT_FALSE(decode_smb2(Bytes(64, 0)));
}

TEST(SmbDirectDecoder, RecognisedByNegotiateOrSmb2ContentNeverByPortAlone) {
  SmbDirectDecoder d;
  {
    SmbDirectStream st;  // a data transfer message of no SMB2: nothing
    UlpEvents ev;
    const Bytes m = data(Bytes(80, 0x41));
    d.decode(from_client(m.size()), &st, m, ev);
    EXPECT_FALSE(st.claimed());
  }
  {
    SmbDirectStream st;
    UlpEvents ev;
    SmbdNegotiateRequest rq;
    rq.credits_requested = 16;
    const Bytes n = encode_smbd_negotiate_request(rq);
    d.decode(from_client(n.size()), &st, n, ev);
    EXPECT_TRUE(st.claimed());
    EXPECT_EQ(st.evidence, "SMB Direct Negotiate Request");
    const Bytes m = data(encode_smb2_read_request(5, 4096, 2, {{0x1000, 0x77, 4096}}));
    d.decode(from_client(m.size()), &st, m, ev);
    ASSERT_EQ(ev.commands.size(), 1u);
    EXPECT_EQ(ev.commands[0].name, "SMB2 READ mid 5");
    ASSERT_EQ(ev.commands[0].regions.size(), 1u);
    EXPECT_EQ(ev.commands[0].regions[0].stag, 0x77u);
    EXPECT_EQ(ev.commands[0].regions[0].access, ddp::access::remote_write);
    EXPECT_TRUE(ev.commands[0].regions[0].invalidate);
    // An interim response (STATUS_PENDING) completes nothing; the final one does.
    const Bytes pending = data(encode_smb2_response(smb2_command::read, 5, kSmb2StatusPending, 0));
    d.decode(from_server(pending.size()), &st, pending, ev);
    EXPECT_TRUE(ev.completions.empty());
    const Bytes done = data(encode_smb2_response(smb2_command::read, 5, 0, 4096));
    d.decode(from_server(done.size()), &st, done, ev);
    ASSERT_EQ(ev.completions.size(), 1u);
    EXPECT_EQ(ev.completions[0].transferred, 4096u);
  }
}

TEST(SmbDirectDecoder, FragmentedRequestIsReassembledAndBounded) {
  SmbDirectDecoder d;
  SmbDirectStream st;
  UlpEvents ev;
  const Bytes req =
      encode_smb2_write_request(9, 8192, 1, {{0x1000, 0x50, 4096}, {0x3000, 0x51, 4096}});
  // Three fragments: 64, 64, the rest.
  const ByteView r(req);
  const Bytes f1 =
      data(Bytes(r.begin(), r.begin() + 64), static_cast<std::uint32_t>(req.size() - 64));
  const Bytes f2 =
      data(Bytes(r.begin() + 64, r.begin() + 128), static_cast<std::uint32_t>(req.size() - 128));
  const Bytes f3 = data(Bytes(r.begin() + 128, r.end()));
  for (const Bytes* f : {&f1, &f2, &f3})
    d.decode(from_client(f->size()), &st, *f, ev);
  EXPECT_TRUE(st.claimed());
  ASSERT_EQ(ev.commands.size(), 1u);
  ASSERT_EQ(ev.commands[0].regions.size(), 2u);
  EXPECT_EQ(ev.commands[0].regions[1].stag, 0x51u);
  EXPECT_EQ(ev.commands[0].regions[1].access, ddp::access::remote_read);
  EXPECT_FALSE(ev.commands[0].regions[1].invalidate);  // RDMA_V1: no invalidation asked
  // A sender that never ends its message: what is kept stops at the cap.
  for (int i = 0; i < 100; ++i) {
    const Bytes f = data(Bytes(1024, 0x41), 1);
    d.decode(from_client(f.size()), &st, f, ev);
  }
  EXPECT_LE(st.from[0].kept.size(), kSmbdMaxReassembly);
  EXPECT_EQ(st.from[0].total, 100u * 1024);
}

// ---- the engine's ULP checks on a builder-made SMB Direct stream ----------------------------

struct SmbWire {
  explicit SmbWire(Analyzer& an) : w(an) { w.crc = false; }
  hostile::Wire w;
  void handshake() {
    w.handshake();  // SYNs, MPA Request and Reply (revision 1, CRC as w.crc)
    SmbdNegotiateRequest rq;
    rq.credits_requested = 16;
    send(0, encode_smbd_negotiate_request(rq));
    send(1, encode_smbd_negotiate_response({}));
  }
  std::uint32_t msn[2] = {1, 1};
  void send(int dir, const Bytes& body, std::uint32_t inv = 0) {
    const Opcode op = inv ? Opcode::send_invalidate : Opcode::send;
    w.fpdu(dir, wire::untagged_header(op, wire::kQnSend, msn[dir]++, 0, true, inv), body);
  }
  void write(std::uint32_t stag, std::uint64_t to, std::size_t n) {
    w.fpdu(1, wire::tagged_header(Opcode::rdma_write, stag, to, true), Bytes(n, 0x5A));
  }
  void read(std::uint64_t mid, std::uint32_t stag, std::uint64_t base, std::uint32_t n) {
    send(0, data(encode_smb2_read_request(mid, n, 2, {{base, stag, n}})));
  }
  void done(std::uint16_t cmd, std::uint64_t mid, std::uint32_t n, std::uint32_t inv = 0) {
    send(1, data(encode_smb2_response(cmd, mid, 0, n)), inv);
  }
};

using test::of;

TEST(SmbDirectEngine, CleanAndShortReadsEndAtTheResponse) {
  Analyzer an;
  SmbWire n(an);
  n.handshake();
  n.read(5, 0x300, 0x10000, 2048);
  n.write(0x300, 0x10000, 2048);
  n.done(smb2_command::read, 5, 2048, 0x300);
  n.read(6, 0x301, 0x20000, 4096);  // end of file: 100 octets, and the response says so
  n.write(0x301, 0x20000, 100);
  n.done(smb2_command::read, 6, 100, 0x301);
  an.finish();
  const Model& m = an.model();
  EXPECT_TRUE(m.findings.empty()) << m.findings[0].message;
  EXPECT_EQ(m.streams[0].ulp, "smb-direct");
  const ShadowBuffer* b = m.memory.find(RegionKey{*net::Address::parse("10.0.0.1"), 0x300});
  ASSERT_TRUE(b);
  EXPECT_EQ(b->command, "SMB2 READ mid 5");
  EXPECT_TRUE(b->bounds_enforced);
  EXPECT_TRUE(b->invalidated);
}

TEST(SmbDirectEngine, EachUlpCheckFires) {
  Analyzer an;
  SmbWire n(an);
  n.handshake();
  n.send(0, data(encode_smb2_write_request(1, 512, 2, {{0x10000, 0x101, 512}})));
  n.write(0x101, 0x10000, 512);  // into a WRITE's buffer: access mismatch
  n.done(smb2_command::write, 1, 512, 0x101);
  n.read(2, 0x102, 0x20000, 1024);
  n.write(0x102, 0x20000, 512);
  n.done(smb2_command::read, 2, 1024, 0x102);  // says 1024 after 512: incomplete
  n.read(3, 0x103, 0x30000, 256);
  n.write(0x103, 0x30000, 256);
  n.done(smb2_command::read, 3, 256, 0x999);  // another key: invalidate mismatch
  n.write(0x103, 0x30000, 16);                // after the completion: invalidated use
  n.read(5, 0x105, 0x50000, 1024);
  n.write(0x105, 0x50000, 1024);
  n.done(smb2_command::read, 5, 512, 0x105);  // says 512 after 1024: length mismatch
  an.finish();
  const Model& m = an.model();
  EXPECT_EQ(of(m, "ulp.access-mismatch").size(), 1u);
  EXPECT_EQ(of(m, "ulp.incomplete-transfer").size(), 1u);
  EXPECT_EQ(of(m, "ulp.invalidate-mismatch").size(), 1u);
  EXPECT_EQ(of(m, "rdmap.stag-invalidated-use").size(), 1u);
  EXPECT_EQ(of(m, "ulp.length-mismatch").size(), 1u);
}

}  // namespace
}  // namespace ddpscope
