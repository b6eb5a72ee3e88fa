// SPDX-License-Identifier: GPL-2.0-or-later
// Upper-layer buffer advertisements: an upper layer tells its peer an STag, a base TO and a
// length inside an untagged message (rping in its SEND; NVMe-oF, iSER and SMB Direct in their
// own PDUs). A decoder turns such a payload into regions the engine then checks against.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ddpscope/common/bytes.h"
#include "ddpscope/net/packet.h"

namespace ddpscope {

struct AdvertContext {
  std::uint8_t opcode = 0;  // RDMAP opcode of the message (a Send variant)
  net::Endpoint sender;     // who advertised (owns the memory); port 0: not known
  net::Endpoint receiver;   // port 0: not known
  std::uint32_t stream = 0;
};

struct AdvertisedRegion {
  std::uint32_t stag = 0;
  std::uint64_t base = 0;
  std::uint64_t length = 0;
  net::Address owner;
  // The upper layer registers the region for this connection only (its own protection domain):
  // using it on another stream while this one lasts is a violation.
  bool per_connection = false;
};

class AdvertisementDecoder {
 public:
  virtual ~AdvertisementDecoder() = default;
  virtual std::string_view name() const = 0;  // "rping"
  // Appends the regions advertised by one complete untagged message.
  virtual void decode(const AdvertContext& ctx, ByteView message,
                      std::vector<AdvertisedRegion>& out) const = 0;
};

// rping (rdma-core librdmacm/examples/rping.c): a 16-octet SEND holding
// { be64 buf; be32 rkey; be32 size; }, taken to be one by ulp::rping_advertisement (rping.h).
// rping allocates a protection domain per connection and registers its buffers in it, so the
// region is per connection.
class RpingAdvertisementDecoder final : public AdvertisementDecoder {
 public:
  std::string_view name() const override { return "rping"; }
  void decode(const AdvertContext& ctx, ByteView message,
              std::vector<AdvertisedRegion>& out) const override;
};

std::vector<std::unique_ptr<AdvertisementDecoder>> default_advertisement_decoders();

}  // namespace ddpscope
