// SPDX-License-Identifier: GPL-2.0-or-later
// iSER (RFC 7145): the header and BHS codecs, the decoder's recognition of a stream and what it
// reads of SCSI commands and responses, and the engine's ULP checks on small builder-made
// streams (hostile::Wire).
#include "ddpscope/ulp/iser.h"

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

// SENDs of a stream whose start the capture holds (the MPA Request names the initiator).
AdvertContext from_initiator(std::uint64_t length, std::uint16_t port = 3260) {
  AdvertContext c = test::send_from_client(length, port);
  c.from_initiator = true;
  return c;
}
AdvertContext from_target(std::uint64_t length, std::uint16_t port = 3260) {
  AdvertContext c = test::send_from_server(length, port);
  c.from_initiator = false;
  return c;
}

// An iSER-framed SCSI Command: READ(10) (R) or WRITE(10) (W) of `edtl` octets.
Bytes scsi_command(bool read, std::uint32_t itt, std::uint32_t edtl, std::uint32_t stag,
                   std::uint64_t base, std::uint32_t immediate = 0, bool final = true) {
  IserHeader h;
  (read ? h.read_valid : h.write_valid) = true;
  (read ? h.read_stag : h.write_stag) = stag;
  (read ? h.read_base : h.write_base) = base;
  IscsiBhs b;
  b.opcode = iscsi_opcode::scsi_command;
  b.flags = static_cast<std::uint8_t>((final ? IscsiBhs::kFinal : 0) |
                                      (read ? IscsiBhs::kRead : IscsiBhs::kWrite) | 0x01);
  b.itt = itt;
  b.word20 = edtl;
  b.data_length = immediate;
  b.cdb[0] = read ? 0x28 : 0x2A;
  Bytes m = encode_iser_header(h);
  const Bytes pdu = encode_iscsi_bhs(b);
  m.insert(m.end(), pdu.begin(), pdu.end());
  m.insert(m.end(), immediate, 0xAB);
  return m;
}
Bytes scsi_response(std::uint32_t itt, std::uint8_t status = 0, std::uint32_t underflow = 0) {
  IscsiBhs b;
  b.opcode = iscsi_opcode::scsi_response;
  b.flags = static_cast<std::uint8_t>(0x80 | (underflow ? IscsiBhs::kUnderflow : 0));
  b.status = status;
  b.itt = itt;
  b.residual = underflow;
  Bytes m = encode_iser_header(IserHeader{});
  const Bytes pdu = encode_iscsi_bhs(b);
  m.insert(m.end(), pdu.begin(), pdu.end());
  return m;
}
TEST(IserCodec, HeaderRoundTripsAndReservedBitsAreRefused) {
  IserHeader h;
  h.write_valid = true;
  h.write_stag = 0x11223344;
  h.write_base = 0x7f0000001000;
  h.read_valid = true;
  h.read_stag = 0x55667788;
  h.read_base = 0x7f0000002000;
  const Bytes b = encode_iser_header(h);
  ASSERT_EQ(b.size(), kIserHeaderSize);
  EXPECT_EQ(b[0], 0x1C);  // control-type, W, R
  EXPECT_EQ(decode_iser_header(b), h);
  Bytes bad = b;
  bad[2] = 1;
  EXPECT_FALSE(decode_iser_header(bad));
  bad = b;
  bad[0] = 0x40;  // opcode 4: none
  EXPECT_FALSE(decode_iser_header(bad));
  EXPECT_FALSE(decode_iser_header(ByteView(b).first(27)));
}

// RFC 7145 §9.3/§9.4 Hello and HelloReply: only the first four octets are read; the total
// length of these messages is not checked (not verified against a real implementation).
TEST(IserCodec, HelloFieldsFirstFourOctetsOnly_LengthUnverified) {
  IserHeader hello;
  hello.opcode = iser_opcode::hello;
  hello.max_version = 1;
  hello.min_or_cur_version = 1;
  hello.ird_or_ord = 16;
  const Bytes b = encode_iser_header(hello);
  EXPECT_EQ(b[0], 0x20);
  EXPECT_EQ(b[1], 0x11);
  EXPECT_EQ(decode_iser_header(ByteView(b).first(4)), hello);
  IserStream st;
  UlpEvents ev;
  IserDecoder d;
  d.decode(from_initiator(b.size()), &st, b, ev);
  EXPECT_TRUE(st.claimed());
  EXPECT_NE(st.describe().find("Hello MaxVer 1 MinVer 1 IRD 16"), std::string::npos);
  EXPECT_TRUE(ev.empty());
}

// Four octets are weak evidence: any SEND may begin 0x20 (the speed benchmark's 64-octet Sends
// did, and their stream was named iSER). A Hello claims the stream only as its sender's first
// message, with a hint (port 3260 or the iSER CM private data), and a HelloReply only after the
// peer's Hello.
TEST(IserDecoder, HelloClaimsOnlyAsFirstMessageWithAHint) {
  IserDecoder d;
  IserHeader hello;
  hello.opcode = iser_opcode::hello;
  hello.max_version = 2;
  hello.min_or_cur_version = 1;
  const Bytes b = encode_iser_header(hello);
  IserHeader reply = hello;
  reply.opcode = iser_opcode::hello_reply;
  const Bytes r = encode_iser_header(reply);
  UlpEvents ev;
  {  // another port, no CM hint: a Hello and a HelloReply alone are not iSER
    IserStream st;
    d.decode(from_initiator(b.size(), 9999), &st, b, ev);
    d.decode(from_target(r.size(), 9999), &st, r, ev);
    EXPECT_FALSE(st.claimed());
  }
  {  // port 3260, but a Hello after the initiator's first message is not one
    IserStream st;
    const Bytes other(64, 0x55);
    d.decode(from_initiator(other.size()), &st, other, ev);
    d.decode(from_initiator(b.size()), &st, b, ev);
    EXPECT_FALSE(st.claimed());
  }
  {  // a HelloReply with no Hello before it
    IserStream st;
    d.decode(from_target(r.size()), &st, r, ev);
    EXPECT_FALSE(st.claimed());
  }
  {  // mid-stream (the capture does not show whose message is first)
    IserStream st;
    AdvertContext c = from_initiator(b.size());
    c.from_initiator.reset();
    d.decode(c, &st, b, ev);
    EXPECT_FALSE(st.claimed());
  }
  {  // the iSER CM private data as the hint, then Hello and HelloReply in order
    IserStream st;
    UlpSetup setup;
    setup.request = Bytes{0x00, 0x00, 0x00, 0x00};
    d.setup(&st, setup);
    d.decode(from_initiator(b.size(), 9999), &st, b, ev);
    d.decode(from_target(r.size(), 9999), &st, r, ev);
    EXPECT_TRUE(st.claimed());
    EXPECT_NE(st.describe().find("HelloReply CurVer 1"), std::string::npos) << st.describe();
  }
}

TEST(IserCodec, BhsOfCommandAndResponse) {
  const Bytes m = scsi_command(true, 0x1f, 4096, 0xabc, 0x1000);
  const auto b = decode_iscsi_bhs(ByteView(m).subspan(kIserHeaderSize));
  ASSERT_TRUE(b);
  EXPECT_EQ(b->opcode, iscsi_opcode::scsi_command);
  EXPECT_EQ(b->itt, 0x1fu);
  EXPECT_EQ(b->word20, 4096u);
  EXPECT_EQ(iser_command_name(*b), "SCSI READ(10) ITT 0x1f LUN 0");
  EXPECT_EQ(scsi_cdb_name(0xC1), "opcode 0xc1");
}

TEST(IserCodec, BidirectionalReadLengthFromItsAhs) {
  const Bytes ahs{0x00, 0x05, 0x02, 0x00, 0x00, 0x00, 0x10, 0x00};
  EXPECT_EQ(iscsi_bidi_read_length(ahs), 4096u);
  const Bytes other{0x00, 0x11, 0x01, 0x00};  // an extended CDB AHS, cut short
  EXPECT_FALSE(iscsi_bidi_read_length(other));
}

TEST(IserDecoder, RecognisedByLoginOrPortHintNeverByContentAlone) {
  IserDecoder d;
  const Bytes read = scsi_command(true, 1, 512, 0x10, 0x1000);
  {
    IserStream st;  // port 9999, no Login, no set-up: nothing
    UlpEvents ev;
    d.decode(from_initiator(read.size(), 9999), &st, read, ev);
    EXPECT_FALSE(st.claimed());
    EXPECT_TRUE(ev.empty());
  }
  {
    IserStream st;  // the Login claims the stream whatever the port
    UlpEvents ev;
    const Bytes login = test::iser_login_request();
    d.decode(from_initiator(login.size(), 9999), &st, login, ev);
    EXPECT_TRUE(st.claimed());
    EXPECT_EQ(st.describe(),
              "by iSCSI Login over iSER; initiator iqn.2026-12.org.example:host, target "
              "iqn.2026-12.org.example:disk");
    d.decode(from_initiator(read.size(), 9999), &st, read, ev);
    ASSERT_EQ(ev.commands.size(), 1u);
    const UlpCommand& c = ev.commands[0];
    EXPECT_EQ(c.name, "SCSI READ(10) ITT 0x1 LUN 0");
    ASSERT_EQ(c.regions.size(), 1u);
    EXPECT_EQ(c.regions[0].stag, 0x10u);
    EXPECT_EQ(c.regions[0].length, 512u);
    EXPECT_EQ(c.regions[0].access, ddp::access::remote_write);
    EXPECT_TRUE(c.regions[0].invalidate);
  }
  {
    IserStream st;  // port 3260 and a well-formed iSER PDU
    UlpEvents ev;
    d.decode(from_initiator(read.size()), &st, read, ev);
    EXPECT_TRUE(st.claimed());
    EXPECT_EQ(ev.commands.size(), 1u);
  }
  {
    IserStream st;  // the iSER CM REQ private data and a well-formed iSER PDU
    UlpSetup s;
    s.request = Bytes{0x40, 0, 0, 0};
    s.initiator = from_initiator(0).sender;
    d.setup(&st, s);
    EXPECT_FALSE(st.claimed());
    UlpEvents ev;
    d.decode(from_initiator(read.size(), 9999), &st, read, ev);
    EXPECT_TRUE(st.claimed());
  }
}

TEST(IserDecoder, WriteRegionIsSolicitedDataOnlyAndResponseResidual) {
  IserDecoder d;
  IserStream st;
  UlpEvents ev;
  // 8192 octets, 1024 of them immediate: the target reads the other 7168.
  const Bytes w = scsi_command(false, 2, 8192, 0x20, 0x2400, 1024);
  d.decode(from_initiator(w.size()), &st, w, ev);
  ASSERT_EQ(ev.commands.size(), 1u);
  ASSERT_EQ(ev.commands[0].regions.size(), 1u);
  EXPECT_EQ(ev.commands[0].regions[0].length, 7168u);
  EXPECT_EQ(ev.commands[0].regions[0].access, ddp::access::remote_read);
  EXPECT_FALSE(ev.commands[0].partial);
  // Without F, unsolicited Data-Out PDUs follow: the transfer is not judged.
  const Bytes w2 = scsi_command(false, 3, 8192, 0x21, 0x2400, 1024, false);
  d.decode(from_initiator(w2.size()), &st, w2, ev);
  EXPECT_TRUE(ev.commands.back().partial);
  const Bytes r = scsi_response(2, 0, 512);
  d.decode(from_target(r.size()), &st, r, ev);
  ASSERT_EQ(ev.completions.size(), 1u);
  EXPECT_EQ(ev.completions[0].id, 2u);
  EXPECT_TRUE(ev.completions[0].success);
  EXPECT_EQ(ev.completions[0].residual, 512u);
  const Bytes check = scsi_response(3, 0x02);  // CHECK CONDITION
  d.decode(from_target(check.size()), &st, check, ev);
  EXPECT_FALSE(ev.completions.back().success);
  // A SCSI Response from the initiator is no response.
  d.decode(from_initiator(r.size()), &st, r, ev);
  EXPECT_EQ(ev.completions.size(), 2u);
}

TEST(IserDecoder, HostileMessagesYieldNothing) {
  IserDecoder d;
  IserStream st;
  st.recognised = true;
  Bytes m = scsi_command(true, 1, 512, 0x10, 0x1000);
  for (std::size_t n = 0; n < m.size(); ++n) {
    UlpEvents ev;
    d.decode(from_initiator(n), &st, ByteView(m).first(n), ev);
    EXPECT_TRUE(ev.empty()) << n;
  }
  // A bidirectional command whose AHS length runs past the message: no read region.
  Bytes bidi = scsi_command(true, 4, 512, 0x10, 0x1000);
  bidi[kIserHeaderSize + 1] |= IscsiBhs::kWrite;
  bidi[kIserHeaderSize + 4] = 0xFF;
  UlpEvents ev;
  d.decode(from_initiator(bidi.size()), &st, bidi, ev);
  ASSERT_EQ(ev.commands.size(), 1u);
  EXPECT_TRUE(ev.commands[0].regions.empty());
  EXPECT_TRUE(ev.commands[0].partial);
}

// ---- the engine's ULP checks on a builder-made iSER stream ----------------------------------

struct IserWire {
  explicit IserWire(Analyzer& an) : w(an) { w.crc = false; }
  hostile::Wire w;
  // SYNs, MPA Request and Reply; the Login over iSER names the stream (the port is not 3260).
  void handshake() {
    w.handshake();  // SYNs, MPA Request and Reply (revision 1, CRC as w.crc)
    send(0, test::iser_login_request());
  }
  std::uint32_t msn[2] = {1, 1};
  void send(int dir, const Bytes& body, std::uint32_t inv = 0) {
    const Opcode op = inv ? Opcode::send_invalidate : Opcode::send;
    w.fpdu(dir, wire::untagged_header(op, wire::kQnSend, msn[dir]++, 0, true, inv), body);
  }
  void write(std::uint32_t stag, std::uint64_t to, std::size_t n) {
    w.fpdu(1, wire::tagged_header(Opcode::rdma_write, stag, to, true), Bytes(n, 0x5A));
  }
};

using test::of;

TEST(IserEngine, CleanReadLearnsBoundsAndEndsAtTheResponse) {
  Analyzer an;
  IserWire n(an);
  n.handshake();
  n.send(0, scsi_command(true, 0x1f, 2048, 0x300, 0x10000));
  n.write(0x300, 0x10000, 2048);
  n.send(1, scsi_response(0x1f), 0x300);
  // A short read the response owns up to (residual underflow): no finding.
  n.send(0, scsi_command(true, 0x20, 4096, 0x301, 0x20000));
  n.write(0x301, 0x20000, 1024);
  n.send(1, scsi_response(0x20, 0, 3072), 0x301);
  an.finish();
  const Model& m = an.model();
  EXPECT_TRUE(m.findings.empty()) << m.findings[0].message;
  EXPECT_EQ(m.streams[0].ulp, "iser");
  const ShadowBuffer* b = m.memory.find(RegionKey{*net::Address::parse("10.0.0.1"), 0x300});
  ASSERT_TRUE(b);
  EXPECT_EQ(b->source, RegionSource::advertisement);
  EXPECT_TRUE(b->bounds_enforced);
  EXPECT_EQ(b->ulp, "iser");
  EXPECT_EQ(b->command, "SCSI READ(10) ITT 0x1f LUN 0");
  EXPECT_TRUE(b->invalidated);
  EXPECT_NE(b->completed_frame, 0u);
}

TEST(IserEngine, EachUlpCheckFires) {
  Analyzer an;
  IserWire n(an);
  n.handshake();
  // A WRITE's buffer RDMA-Written: access mismatch.
  n.send(0, scsi_command(false, 1, 512, 0x101, 0x10000));
  n.write(0x101, 0x10000, 512);
  n.send(1, scsi_response(1), 0x101);
  // A READ answered after half its data: incomplete transfer.
  n.send(0, scsi_command(true, 2, 1024, 0x102, 0x20000));
  n.write(0x102, 0x20000, 512);
  n.send(1, scsi_response(2), 0x102);
  // A response invalidating another key, then a Write to the command's own key after it.
  n.send(0, scsi_command(true, 3, 256, 0x103, 0x30000));
  n.write(0x103, 0x30000, 256);
  n.send(1, scsi_response(3), 0x999);
  n.write(0x103, 0x30000, 16);
  // Past the end of a READ's buffer: bounds.
  n.send(0, scsi_command(true, 4, 256, 0x104, 0x40000));
  n.write(0x104, 0x40000, 512);
  // A response whose residual says less than was placed: length mismatch.
  n.send(0, scsi_command(true, 5, 1024, 0x105, 0x50000));
  n.write(0x105, 0x50000, 1024);
  n.send(1, scsi_response(5, 0, 512), 0x105);
  an.finish();
  const Model& m = an.model();
  EXPECT_EQ(of(m, "ulp.access-mismatch").size(), 1u);
  EXPECT_EQ(of(m, "ulp.incomplete-transfer").size(), 1u);
  EXPECT_EQ(of(m, "ulp.invalidate-mismatch").size(), 1u);
  EXPECT_EQ(of(m, "rdmap.stag-invalidated-use").size(), 1u);
  EXPECT_EQ(of(m, "ddp.tagged.bounds").size(), 1u);
  ASSERT_EQ(of(m, "ulp.length-mismatch").size(), 1u);
  EXPECT_NE(of(m, "ulp.length-mismatch")[0]->message.find("says 512 octets"), std::string::npos)
      << of(m, "ulp.length-mismatch")[0]->message;
  for (const auto* f : of(m, "ulp.incomplete-transfer"))
    EXPECT_NE(f->message.find("512 of 1024"), std::string::npos) << f->message;
}

}  // namespace
}  // namespace ddpscope
