// SPDX-License-Identifier: GPL-2.0-or-later
// What the engine keeps of a stream's upper layer (engine_ulp.cpp): the advertisement decoders'
// states and the commands awaiting their completion, with the regions each advertised and what
// of them the peer has written or read so far. Internal to core/src/analysis.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ddpscope/ddp/shadow.h"
#include "ddpscope/findings/catalog.h"
#include "ddpscope/ulp/advert.h"

namespace ddpscope {

// One region a command advertised, and the octets of it the peer has transferred (RDMA Writes
// placed into it, or the ranges its Read Requests read), as disjoint [begin, end) extents.
struct UlpRegionTrack {
  RegionKey key;
  std::uint64_t base = 0;
  std::uint64_t length = 0;
  std::optional<std::uint8_t> access;  // ddp::access bits the command implies
  bool invalidate = false;             // the key ends with the command
  std::map<std::uint64_t, std::uint64_t> done;
  std::uint64_t covered = 0;     // octets in `done`
  bool capped = false;           // `done` hit its cap: coverage unknown
  bool access_reported = false;  // ulp.access-mismatch said once per region
  static constexpr std::size_t kMaxExtents = 1024;
  // Adds [to, to + len) clipped to the region.
  void add(std::uint64_t to, std::uint64_t len);
};

struct UlpCommandTrack {
  std::size_t decoder = 0;
  std::uint64_t id = 0;
  std::string name;
  std::string operation;    // UlpCommand::operation (the name when it gave none)
  std::uint64_t frame = 0;  // the frame that advertised it
  std::int64_t ts_ns = 0;   // its capture time (the timing model's request time)
  std::uint64_t pdu = 0;    // PduEvent::id of the Send's segment that completed it
  int direction = 0;        // the direction that sent it
  std::vector<UlpRegionTrack> regions;
  std::optional<std::uint64_t> transfer_length;
  bool partial = false;
  Consequence lost = Consequence::none;  // capture loss on the stream while it was outstanding
};

struct UlpStream {
  explicit UlpStream(const std::vector<std::unique_ptr<AdvertisementDecoder>>& d) : decoders(d) {}
  UlpStreamDecoders decoders;
  using CommandKey = std::pair<std::size_t, std::uint64_t>;  // (decoder, id)
  std::map<CommandKey, UlpCommandTrack> outstanding;
  std::map<RegionKey, std::vector<CommandKey>> by_key;  // outstanding commands per region
  std::size_t tracked = 0;  // outstanding commands and their regions (max_ulp_outstanding)
  // The claiming decoder's state changed since StreamModel::ulp_detail was last written (its
  // describe() is read when the model is, not built per message).
  bool detail_stale = false;
};

}  // namespace ddpscope
