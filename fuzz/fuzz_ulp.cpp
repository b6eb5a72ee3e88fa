// SPDX-License-Identifier: GPL-2.0-or-later
// The upper-layer advertisement decoders (ulp/*.h) on their own. The first octet picks the
// decoder and whether the stream is claimed by its set-up first; then messages follow, each
// { octet: bit 0 from the server, bit 1 Send with Invalidate, bit 2 cut short; be16 length;
// the octets }. Beyond "no crash", the decoders' bounds are checked: regions per command,
// the RPC decoder's table of Calls and the SMB Direct reassembly stay within their caps.
#include <cstdint>
#include <memory>

#include "ddpscope/ulp/iser.h"
#include "ddpscope/ulp/nvmeof.h"
#include "ddpscope/ulp/rpcrdma.h"
#include "ddpscope/ulp/smbdirect.h"
#include "ddpscope/wire/rdmap.h"
#include "fuzz_input.h"

namespace {

using namespace ddpscope;

std::unique_ptr<AdvertisementDecoder> pick(std::uint8_t which, std::size_t& max_regions) {
  switch (which % 4) {
    case 0:
      max_regions = ulp::kNvmeMaxKeyedDescriptors;
      return std::make_unique<ulp::NvmeRdmaDecoder>();
    case 1:
      max_regions = 2;  // a Read STag and a Write STag
      return std::make_unique<ulp::IserDecoder>();
    case 2:
      max_regions = ulp::kRpcRdmaMaxSegments;
      return std::make_unique<ulp::RpcRdmaDecoder>();
    default:
      max_regions = ulp::kSmbdMaxDescriptors * 32;  // per descriptor list, 32 compounds
      return std::make_unique<ulp::SmbDirectDecoder>();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::FuzzInput fi(data, size);
  const std::uint8_t config = fi.u8();
  std::size_t max_regions = 0;
  const auto decoder = pick(config, max_regions);
  const auto state = decoder->new_stream();
  const net::Endpoint client{net::Address::v4(0x0A000001), 40000};
  const net::Endpoint server{net::Address::v4(0x0A000002),
                             static_cast<std::uint16_t>(config & 0x10 ? 3260 : 4791)};
  if (config & 0x04) {
    UlpSetup s;
    s.initiator = client;
    s.responder = server;
    const ByteView pd = fi.take(fi.u8());
    s.request = Bytes(pd.begin(), pd.end());
    decoder->setup(state.get(), s);
  }
  for (int n = 0; n < 256 && !fi.empty(); ++n) {
    const std::uint8_t flags = fi.u8();
    const ByteView m = fi.take(fi.be16());
    AdvertContext ctx;
    ctx.opcode = static_cast<std::uint8_t>(flags & 0x02 ? wire::Opcode::send_invalidate
                                                        : wire::Opcode::send);
    ctx.sender = flags & 0x01 ? server : client;
    ctx.receiver = flags & 0x01 ? client : server;
    ctx.from_initiator = !(flags & 0x01);
    ctx.length = m.size() + (flags & 0x04 ? 100 : 0);
    UlpEvents ev;
    decoder->decode(ctx, state.get(), m, ev);
    for (const UlpCommand& c : ev.commands) {
      DDPSCOPE_FUZZ_CHECK(c.regions.size() <= max_regions);
      for (const AdvertisedRegion& r : c.regions)
        DDPSCOPE_FUZZ_CHECK(r.owner == ctx.sender.addr && r.length > 0);
    }
    (void)state->describe();
  }
  if (auto* rpc = dynamic_cast<ulp::RpcRdmaStream*>(state.get()))
    DDPSCOPE_FUZZ_CHECK(rpc->writable.size() <= ulp::RpcRdmaStream::kMaxOutstanding);
  if (auto* smb = dynamic_cast<ulp::SmbDirectStream*>(state.get()))
    for (const auto& ra : smb->from)
      DDPSCOPE_FUZZ_CHECK(ra.kept.size() <= ulp::kSmbdMaxReassembly);
  return 0;
}
