// SPDX-License-Identifier: GPL-2.0-or-later
// The initiator's opening message rules out the decoders whose ULP cannot open with it
// (UlpStreamDecoders, AdvertisementDecoder::may_open): each ULP's own opening keeps its decoder,
// a well-known port keeps it, and nothing is judged where the MSN, the handshake or the octets
// at hand cannot say the message is the initiator's whole first Send.
#include <gtest/gtest.h>

#include <string>

#include "ddpscope/analysis/analyzer.h"
#include "ddpscope/ulp/advert.h"
#include "ddpscope/ulp/iser.h"
#include "ddpscope/ulp/nvmeof.h"
#include "ddpscope/ulp/rpcrdma.h"
#include "ddpscope/ulp/rping.h"
#include "ddpscope/ulp/smbdirect.h"
#include "ddpscope/wire/mpa.h"
#include "ddpscope/wire/rdmap.h"
#include "hostile/hostile_builders.h"
#include "ulp_test_util.h"

namespace ddpscope {
namespace {

using namespace ulp;

constexpr std::size_t kNvme = 0, kIser = 1, kRpcRdma = 2, kSmbDirect = 3, kRping = 4;

Bytes rping_advert() {
  return encode_rping_info(RpingInfo{0x00007f3a12345000ULL, 0x1234, 4096});
}

// A Fabrics Connect command capsule with its 1,024 octets of in-capsule data.
Bytes nvme_connect() {
  NvmeSqe q;
  q.opcode = kNvmeFabricsOpcode;
  q.flags = 0x40;  // PSDT 01b: SGL
  q.nsid = 0x01;   // FCTYPE Connect
  q.sgl1 = NvmeSgl{0, 1024, 0, sgl_type::data_block, sgl_subtype::offset};
  q.cdw[0] = 1u << 16;  // qid 1
  q.cdw[1] = 127;
  Bytes c = encode_nvme_sqe(q);
  c.resize(c.size() + kNvmeConnectDataSize, 0);
  return c;
}

Bytes rpc_call(std::uint32_t vers = 1) {
  RpcRdmaHeader h;
  h.xid = 9;
  h.vers = vers;
  h.credit = 32;
  Bytes m = encode_rpcrdma_header(h);
  const Bytes call = encode_rpc_call({9, 100003, 3, 0});
  m.insert(m.end(), call.begin(), call.end());
  return m;
}

Bytes smbd_negotiate() {
  SmbdNegotiateRequest rq;
  rq.credits_requested = 16;
  return encode_smbd_negotiate_request(rq);
}

// A Send of `m` from the initiator (10.0.0.1:40000) to 10.0.0.2:port with the MSN given.
AdvertContext first_send(const Bytes& m, std::uint32_t msn, std::uint16_t port = 7000) {
  AdvertContext c = test::send_from_client(m.size(), port);
  c.from_initiator = true;
  c.msn = msn;
  return c;
}

bool claimed_by(UlpStreamDecoders& d, std::size_t decoder) {
  return d.claimed() && *d.claimed() == decoder;
}

TEST(UlpOpening, EachUlpsOwnOpeningKeepsItsDecoderAndClaims) {
  const auto decoders = default_advertisement_decoders();
  const struct {
    Bytes message;
    std::size_t decoder;
  } openings[] = {{nvme_connect(), kNvme},
                  {test::iser_login_request(), kIser},
                  {rpc_call(), kRpcRdma},
                  {smbd_negotiate(), kSmbDirect}};
  for (const auto& o : openings) {
    // The decoders themselves say the opening may open their ULP (asked directly: the claim
    // on the same message would otherwise stop the judgement before it is made).
    UlpStreamDecoders fresh(decoders);
    EXPECT_TRUE(
        decoders[o.decoder]->may_open(first_send(o.message, 1), fresh.state(o.decoder), o.message))
        << decoders[o.decoder]->name();
    UlpStreamDecoders d(decoders);
    d.decode(first_send(o.message, 1), o.message);
    EXPECT_TRUE(claimed_by(d, o.decoder)) << decoders[o.decoder]->name();
  }
}

TEST(UlpOpening, AnRpingAdvertisementFirstRulesOutEveryUlpThatOpensOtherwise) {
  const auto decoders = default_advertisement_decoders();
  UlpStreamDecoders d(decoders);
  const Bytes advert = rping_advert();
  const auto found = d.decode(first_send(advert, 1), advert);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].decoder, kRping);
  EXPECT_FALSE(d.asked(kNvme));
  EXPECT_FALSE(d.asked(kIser));
  EXPECT_FALSE(d.asked(kRpcRdma));
  EXPECT_FALSE(d.asked(kSmbDirect));
  EXPECT_TRUE(d.asked(kRping));
  // A Connect later on the stream is no NVMe queue's opening: the stream stays unclaimed.
  const Bytes connect = nvme_connect();
  EXPECT_TRUE(d.decode(first_send(connect, 2), connect).empty());
  EXPECT_FALSE(d.claimed());
  // rping is still asked.
  EXPECT_EQ(d.decode(first_send(advert, 3), advert).size(), 1u);
}

// Once only rping is asked, a message of any size but its advertisement's asks nobody: the
// engine skips the decode (wants()), and decode() itself does not call rping either.
TEST(UlpOpening, OnlyRpingLeftAsksAboutItsOwnSizeOnly) {
  const auto decoders = default_advertisement_decoders();
  UlpStreamDecoders d(decoders);
  // Before the opening is judged, every size is wanted (the opening's, and four ULPs asked).
  EXPECT_TRUE(d.wants(64, 1));
  EXPECT_TRUE(d.wants(64, 7));
  const Bytes advert = rping_advert();
  d.decode(first_send(advert, 1), advert);
  ASSERT_TRUE(d.asked(kRping));
  ASSERT_FALSE(d.asked(kNvme));
  EXPECT_FALSE(d.wants(64, 2));
  EXPECT_FALSE(d.wants(0, 2));
  EXPECT_FALSE(d.wants(17, 2));
  EXPECT_TRUE(d.wants(RpingInfo::kSize, 2));
  const Bytes other(64, 0x5A);
  EXPECT_TRUE(d.decode(first_send(other, 2), other).empty());
  EXPECT_EQ(d.decode(first_send(advert, 3), advert).size(), 1u);
}

// An empty first Send defers the judgement to the next MSN: that MSN is wanted whatever its
// size, and a claimed stream wants every message.
TEST(UlpOpening, TheOpeningAndAClaimedStreamAreAlwaysWanted) {
  const auto decoders = default_advertisement_decoders();
  UlpStreamDecoders d(decoders);
  d.decode(first_send(Bytes{}, 1), Bytes{});
  EXPECT_TRUE(d.wants(64, 2));
  const Bytes connect = nvme_connect();
  d.decode(first_send(connect, 2), connect);
  ASSERT_TRUE(claimed_by(d, kNvme));
  EXPECT_TRUE(d.wants(16, 3));
  EXPECT_TRUE(d.wants(4096, 9));
}

TEST(UlpOpening, WithoutTheOpeningKnownALaterConnectStillClaims) {
  const auto decoders = default_advertisement_decoders();
  const Bytes advert = rping_advert(), connect = nvme_connect();
  // MSN not known (0), no handshake seen (from_initiator unset), the responder's first Send,
  // a first Send of which fewer octets are at hand than it has: none is judged.
  for (int variant = 0; variant < 4; ++variant) {
    UlpStreamDecoders d(decoders);
    AdvertContext c = first_send(advert, 1);
    ByteView at_hand = advert;
    if (variant == 0) c.msn = 0;
    if (variant == 1) c.from_initiator.reset();
    if (variant == 2) c.from_initiator = false;
    if (variant == 3) at_hand = ByteView(advert).first(8);
    d.decode(c, at_hand);
    EXPECT_TRUE(d.asked(kNvme)) << variant;
    d.decode(first_send(connect, 2), connect);
    EXPECT_TRUE(claimed_by(d, kNvme)) << variant;
  }
}

TEST(UlpOpening, TheJudgementIsTheFirstSendsOnlyAndAnEmptySendDefersIt) {
  const auto decoders = default_advertisement_decoders();
  const Bytes advert = rping_advert(), connect = nvme_connect();
  {
    // MSN 1 lost to the capture (or damaged, so never decoded): MSN 2 is not judged.
    UlpStreamDecoders d(decoders);
    d.decode(first_send(advert, 2), advert);
    EXPECT_TRUE(d.asked(kNvme));
  }
  {
    // An empty first Send (an RFC 6581 RTR) opens nothing: the next message is the opening.
    UlpStreamDecoders d(decoders);
    const Bytes empty;
    d.decode(first_send(empty, 1), empty);
    EXPECT_TRUE(d.asked(kNvme));
    d.decode(first_send(connect, 2), connect);
    EXPECT_TRUE(claimed_by(d, kNvme));
  }
  {
    UlpStreamDecoders d(decoders);
    const Bytes empty;
    d.decode(first_send(empty, 1), empty);
    d.decode(first_send(advert, 2), advert);
    EXPECT_FALSE(d.asked(kNvme));
  }
}

TEST(UlpOpening, AWellKnownPortKeepsItsDecoderAsked) {
  const auto decoders = default_advertisement_decoders();
  const Bytes advert = rping_advert();
  const struct {
    std::uint16_t port;
    std::size_t decoder;
  } ports[] = {{kNvmeRdmaPort, kNvme},
               {kIscsiPort, kIser},
               {kNfsRdmaPort, kRpcRdma},
               {kSmbDirectPort, kSmbDirect}};
  for (const auto& p : ports) {
    UlpStreamDecoders d(decoders);
    d.decode(first_send(advert, 1, p.port), advert);
    for (std::size_t i = kNvme; i <= kSmbDirect; ++i)
      EXPECT_EQ(d.asked(i), i == p.decoder) << "port " << p.port << " decoder " << i;
  }
}

TEST(UlpOpening, OpeningsThatDoNotClaimYetStillKeepTheirDecoder) {
  const auto decoders = default_advertisement_decoders();
  // An RPC-over-RDMA header of another version (answered with ERR_VERS before version 1) and an
  // iSER Hello without a hint claim nothing, but may open their ULP.
  const Bytes v2 = rpc_call(2);
  EXPECT_TRUE(decoders[kRpcRdma]->may_open(first_send(v2, 1), nullptr, v2));
  IserHeader hello;
  hello.opcode = iser_opcode::hello;
  const Bytes h = encode_iser_header(hello);
  UlpStreamDecoders d(decoders);
  d.decode(first_send(h, 1), h);
  EXPECT_FALSE(d.claimed());
  EXPECT_TRUE(d.asked(kIser));
  EXPECT_FALSE(d.asked(kNvme));
  // iSER's CM private data hint keeps it too.
  UlpStreamDecoders hinted(decoders);
  UlpSetup s;
  s.request = Bytes{0, 0, 0, 0};
  hinted.setup(s);
  const Bytes advert = rping_advert();
  hinted.decode(first_send(advert, 1), advert);
  EXPECT_TRUE(hinted.asked(kIser));
  EXPECT_FALSE(hinted.asked(kSmbDirect));
}

TEST(UlpOpening, DecodersRejectOthersOpenings) {
  const auto decoders = default_advertisement_decoders();
  const Bytes connect = nvme_connect(), login = test::iser_login_request(), call = rpc_call(),
              negotiate = smbd_negotiate();
  UlpStreamDecoders d(decoders);
  EXPECT_FALSE(decoders[kNvme]->may_open(first_send(login, 1), d.state(kNvme), login));
  EXPECT_FALSE(decoders[kIser]->may_open(first_send(connect, 1), d.state(kIser), connect));
  EXPECT_FALSE(decoders[kSmbDirect]->may_open(first_send(call, 1), d.state(kSmbDirect), call));
  EXPECT_FALSE(
      decoders[kRpcRdma]->may_open(first_send(negotiate, 1), d.state(kRpcRdma), negotiate));
}

// ---- through the engine: the MSN and the handshake come from the stream ----------------------

// A stream (hostile::Wire's: ports 40000 and 4791) whose start the capture holds (SYNs, MPA
// Request and Reply) and whose initiator sends `first` (when not empty), then an iSCSI Login over
// iSER.
std::string ulp_of_stream(const Bytes& first) {
  Analyzer an;
  hostile::Wire w(an);
  w.crc = false;
  w.handshake();
  std::uint32_t msn = 1;
  if (!first.empty())
    w.fpdu(0, wire::untagged_header(wire::Opcode::send, wire::kQnSend, msn++, 0, true), first);
  w.fpdu(0, wire::untagged_header(wire::Opcode::send, wire::kQnSend, msn++, 0, true),
         test::iser_login_request());
  an.finish();
  return an.model().streams.empty() ? "(no stream)" : an.model().streams[0].ulp;
}

TEST(UlpOpening, TheEngineJudgesTheInitiatorsFirstSendOfAStreamWhoseStartItSaw) {
  // The Login as the first Send names the stream.
  EXPECT_EQ(ulp_of_stream({}), "iser");
  // After an rping advertisement it is no iSER stream's opening: nothing names the stream.
  EXPECT_EQ(ulp_of_stream(rping_advert()), "");
}

}  // namespace
}  // namespace ddpscope
