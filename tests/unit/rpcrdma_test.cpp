// SPDX-License-Identifier: GPL-2.0-or-later
// RPC-over-RDMA version 1 (RFC 8166): the transport header, RPC message and CM private data
// codecs, the decoder's recognition of a stream and what it reads of Calls and Replies, and
// the engine's ULP checks on small builder-made streams (hostile::Wire).
#include "ddpscope/ulp/rpcrdma.h"

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

AdvertContext from_client(std::uint64_t length, std::uint16_t port = 20049) {
  return test::send_from_client(length, port);
}
AdvertContext from_server(std::uint64_t length, std::uint16_t port = 20049) {
  return test::send_from_server(length, port);
}

Bytes cat(Bytes a, const Bytes& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// An NFSv3 READ Call (RDMA_MSG) with one write chunk of one segment for the data.
Bytes nfs_read(std::uint32_t xid, std::uint32_t handle, std::uint64_t offset, std::uint32_t len) {
  RpcRdmaHeader h;
  h.xid = xid;
  h.credit = 32;
  h.writes = {{RdmaSegment{handle, len, offset}}};
  return cat(encode_rpcrdma_header(h), encode_rpc_call({xid, 100003, 3, 6}));
}
// An NFSv3 WRITE Call whose data is in a read chunk at XDR position 100.
Bytes nfs_write(std::uint32_t xid, std::uint32_t handle, std::uint64_t offset, std::uint32_t len) {
  RpcRdmaHeader h;
  h.xid = xid;
  h.credit = 32;
  h.reads = {ReadSegment{100, RdmaSegment{handle, len, offset}}};
  return cat(encode_rpcrdma_header(h), encode_rpc_call({xid, 100003, 3, 7}));
}
// The Reply (RDMA_MSG), returning the write chunk with `written` octets in its one segment.
Bytes reply(std::uint32_t xid, std::optional<std::uint32_t> written = std::nullopt,
            std::uint32_t handle = 0, std::uint32_t accept_stat = 0) {
  RpcRdmaHeader h;
  h.xid = xid;
  h.credit = 32;
  if (written) h.writes = {{RdmaSegment{handle, *written, 0}}};
  return cat(encode_rpcrdma_header(h), encode_rpc_reply({xid, false, 0, accept_stat}));
}

TEST(RpcRdmaCodec, HeaderRoundTripsWithEveryList) {
  RpcRdmaHeader h;
  h.xid = 0x1234;
  h.credit = 128;
  h.proc = rpcrdma_proc::nomsg;
  h.reads = {ReadSegment{0, {0x11, 512, 0x1000}}, ReadSegment{0, {0x12, 100, 0x2000}}};
  h.writes = {{RdmaSegment{0x21, 4096, 0x3000}, RdmaSegment{0x22, 4096, 0x4000}}, {}};
  h.reply = std::vector<RdmaSegment>{{0x31, 1024, 0x5000}};
  const Bytes b = encode_rpcrdma_header(h);
  EXPECT_EQ(b.size(), 16u + (2 * 24 + 4) + (4 + 4 + 32 + 4 + 4 + 4) + (4 + 4 + 16));
  const auto d = decode_rpcrdma_header(b);
  ASSERT_TRUE(d);
  EXPECT_EQ(*d, h);
  EXPECT_EQ(d->size, b.size());
  // Every cut is refused; so is version 2 and a discriminator of 2.
  for (std::size_t n = 0; n < b.size(); ++n)
    EXPECT_FALSE(decode_rpcrdma_header(ByteView(b).first(n))) << n;
  Bytes v2 = b;
  v2[7] = 2;
  EXPECT_FALSE(decode_rpcrdma_header(v2));
  Bytes disc = b;
  disc[19] = 2;
  EXPECT_FALSE(decode_rpcrdma_header(disc));
}

TEST(RpcRdmaCodec, HostileSegmentCountsAreBounded) {
  RpcRdmaHeader h;
  h.writes = {{}};
  Bytes b = encode_rpcrdma_header(h);
  b[27] = 0xFF;  // count 255 with no segments behind it
  EXPECT_FALSE(decode_rpcrdma_header(b));
  // 300 read segments: the first kRpcRdmaMaxSegments kept, the header marked truncated.
  RpcRdmaHeader many;
  for (std::uint32_t i = 0; i < 300; ++i)
    many.reads.push_back({0, {i, 16, 0}});
  const auto d = decode_rpcrdma_header(encode_rpcrdma_header(many));
  ASSERT_TRUE(d);
  EXPECT_EQ(d->reads.size(), kRpcRdmaMaxSegments);
  EXPECT_TRUE(d->truncated);
}

TEST(RpcRdmaCodec, RpcMessagesAndNames) {
  const auto c = decode_rpc_call(encode_rpc_call({0x1f, 100003, 3, 6}));
  ASSERT_TRUE(c);
  EXPECT_EQ(rpc_call_name(*c), "NFSv3 READ xid 0x1f");
  EXPECT_EQ(rpc_call_name({0x20, 100003, 4, 1}), "NFSv4 COMPOUND xid 0x20");
  EXPECT_EQ(rpc_call_name({0x21, 100005, 3, 1}), "RPC prog 100005 vers 3 proc 1 xid 0x21");
  const auto r = decode_rpc_reply(encode_rpc_reply({0x1f, false, 0, 0}));
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->accepted_success);
  EXPECT_FALSE(decode_rpc_reply(encode_rpc_call({0x1f, 100003, 3, 6})));
  const auto cm = decode_rpcrdma_cm(encode_rpcrdma_cm({1, true, 3, 3}));
  ASSERT_TRUE(cm);
  EXPECT_TRUE(cm->remote_invalidation);
  EXPECT_FALSE(decode_rpcrdma_cm(Bytes{0, 0, 0, 0, 1, 0, 0, 0}));
}

TEST(RpcRdmaDecoder, RecognisedByAnRpcMessageOrSetUpNeverByPortAlone) {
  RpcRdmaDecoder d;
  RpcRdmaHeader bare;  // RDMA_NOMSG with nothing: a header alone
  bare.proc = rpcrdma_proc::nomsg;
  bare.reads = {ReadSegment{0, {0x11, 200, 0x1000}}};
  const Bytes nomsg = encode_rpcrdma_header(bare);
  {
    RpcRdmaStream st;
    UlpEvents ev;
    d.decode(from_client(nomsg.size(), 9999), &st, nomsg, ev);
    EXPECT_FALSE(st.claimed());
    EXPECT_TRUE(ev.empty());
  }
  {
    RpcRdmaStream st;  // the port hint with a well-formed header
    UlpEvents ev;
    d.decode(from_client(nomsg.size()), &st, nomsg, ev);
    EXPECT_TRUE(st.claimed());
    ASSERT_EQ(ev.commands.size(), 1u);
    EXPECT_EQ(ev.commands[0].name, "RPC Call xid 0x0 (RDMA_NOMSG)");
    EXPECT_EQ(ev.commands[0].regions[0].access, ddp::access::remote_read);
  }
  {
    RpcRdmaStream st;  // an RPC Call whatever the port
    UlpEvents ev;
    const Bytes m = nfs_read(0x1f, 0x21, 0x3000, 4096);
    d.decode(from_client(m.size(), 9999), &st, m, ev);
    EXPECT_TRUE(st.claimed());
    ASSERT_EQ(ev.commands.size(), 1u);
    EXPECT_EQ(ev.commands[0].name, "NFSv3 READ xid 0x1f");
    ASSERT_EQ(ev.commands[0].regions.size(), 1u);
    EXPECT_EQ(ev.commands[0].regions[0].access, ddp::access::remote_write);
    EXPECT_TRUE(ev.commands[0].regions[0].invalidate);
    // Its Reply, 1000 of the 4096 octets written: the residual is the rest.
    const Bytes r = reply(0x1f, 1000, 0x21);
    d.decode(from_server(r.size(), 9999), &st, r, ev);
    ASSERT_EQ(ev.completions.size(), 1u);
    EXPECT_TRUE(ev.completions[0].success);
    EXPECT_EQ(ev.completions[0].residual, 3096u);
  }
  {
    RpcRdmaStream st;  // the CM private data (RFC 8797)
    UlpSetup s;
    s.request = encode_rpcrdma_cm({1, true, 3, 3});
    s.initiator = from_client(0).sender;
    d.setup(&st, s);
    EXPECT_TRUE(st.claimed());
    EXPECT_EQ(st.describe(), "by RPC-over-RDMA CM private data; remote invalidation offered");
  }
  {
    RpcRdmaStream st;  // an inline RPC message with another XID than the header's: not one
    UlpEvents ev;
    Bytes m = nfs_read(0x1f, 0x21, 0x3000, 4096);
    m[m.size() - 40 + 3] ^= 1;
    d.decode(from_client(m.size(), 9999), &st, m, ev);
    EXPECT_FALSE(st.claimed());
  }
}

// ---- the engine's ULP checks on a builder-made RPC-over-RDMA stream --------------------------

struct RpcWire {
  explicit RpcWire(Analyzer& an) : w(an) { w.crc = false; }
  hostile::Wire w;
  void handshake() {
    w.handshake();  // SYNs, MPA Request and Reply (revision 1, CRC as w.crc)
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

TEST(RpcRdmaEngine, CleanReadAndShortReadLearnBoundsAndEndAtTheReply) {
  Analyzer an;
  RpcWire n(an);
  n.handshake();
  n.send(0, nfs_read(0x1f, 0x300, 0x10000, 2048));
  n.write(0x300, 0x10000, 2048);
  n.send(1, reply(0x1f, 2048, 0x300));
  // End of file: 100 octets written and said so.
  n.send(0, nfs_read(0x20, 0x301, 0x20000, 4096));
  n.write(0x301, 0x20000, 100);
  n.send(1, reply(0x20, 100, 0x301));
  an.finish();
  const Model& m = an.model();
  EXPECT_TRUE(m.findings.empty()) << m.findings[0].message;
  EXPECT_EQ(m.streams[0].ulp, "rpc-rdma");
  const ShadowBuffer* b = m.memory.find(RegionKey{*net::Address::parse("10.0.0.1"), 0x300});
  ASSERT_TRUE(b);
  EXPECT_EQ(b->source, RegionSource::advertisement);
  EXPECT_TRUE(b->bounds_enforced);
  EXPECT_EQ(b->command, "NFSv3 READ xid 0x1f");
  EXPECT_TRUE(b->invalidated);
}

TEST(RpcRdmaEngine, EachUlpCheckFires) {
  Analyzer an;
  RpcWire n(an);
  n.handshake();
  // A WRITE's read chunk RDMA-Written: access mismatch.
  n.send(0, nfs_write(1, 0x101, 0x10000, 512));
  n.write(0x101, 0x10000, 512);
  n.send(1, reply(1));
  // A READ answered after half its data, the Reply claiming all: incomplete transfer.
  n.send(0, nfs_read(2, 0x102, 0x20000, 1024));
  n.write(0x102, 0x20000, 512);
  n.send(1, reply(2, 1024, 0x102));
  // A Reply invalidating another key, then a Write to the command's own key after it.
  n.send(0, nfs_read(3, 0x103, 0x30000, 256));
  n.write(0x103, 0x30000, 256);
  n.send(1, reply(3, 256, 0x103), 0x999);
  n.write(0x103, 0x30000, 16);
  // All 1024 octets written, the Reply saying 512: length mismatch.
  n.send(0, nfs_read(5, 0x105, 0x50000, 1024));
  n.write(0x105, 0x50000, 1024);
  n.send(1, reply(5, 512, 0x105));
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
