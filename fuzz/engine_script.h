// SPDX-License-Identifier: GPL-2.0-or-later
// The fuzz_engine input format: a small binary script of TCP segments in both directions of up
// to four connections between two hosts. Shared by the fuzz target (which runs scripts) and the
// seed generator (which writes them from sample captures).
//
//   script  := config:u8 variant:u8 record*
//   config  bit 0  prepend SYN, SYN-ACK, MPA Request and Reply on connection 0
//           bit 1  CRC in that handshake           bit 2/3  markers client->server / server->client
//           bit 4  hint: analyse port 4791 mid-stream (no handshake needed)
//           bit 5  tiny Limits (every cap is hit quickly)
//           bit 6  a regions file with one region  bit 7  no upper-layer advertisement decoding
//   variant bit 0  MPA revision 1 (else 2, enhanced)  bits 1..7: IRD for the handshake
//   record  := ctl:u8 seq_delta:be16 flags:u8 length:be16 octets[length]
//   ctl     bit 0  direction (0 client->server)   bit 1  the segment lost 100 octets to snaplen
//           bit 2  the segment claims 2^32-1 octets of payload (all but those present lost)
//           bit 3  octets are a ULPDU: wrap them in an FPDU with a correct CRC
//           bits 4..5 connection (client port 40000 + n)
//   seq     = the direction's next expected sequence number + (int16) seq_delta
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "ddpscope/common/bytes.h"
#include "ddpscope/net/packet.h"

namespace ddpscope::fuzz {

namespace script {
inline constexpr std::uint8_t kHandshake = 0x01;
inline constexpr std::uint8_t kCrc = 0x02;
inline constexpr std::uint8_t kMarkersC2s = 0x04;
inline constexpr std::uint8_t kMarkersS2c = 0x08;
inline constexpr std::uint8_t kHint = 0x10;
inline constexpr std::uint8_t kTinyLimits = 0x20;
inline constexpr std::uint8_t kRegions = 0x40;
inline constexpr std::uint8_t kNoAdverts = 0x80;

inline constexpr std::uint8_t kDirServer = 0x01;
inline constexpr std::uint8_t kLostTail = 0x02;
inline constexpr std::uint8_t kHugeClaim = 0x04;
inline constexpr std::uint8_t kWrapFpdu = 0x08;

inline constexpr std::uint16_t kServerPort = 4791;
inline constexpr std::uint16_t kClientPort = 40000;
inline constexpr std::size_t kRecordHeader = 6;
}  // namespace script

// Appends one record.
inline void append_record(Bytes& out, std::uint8_t ctl, std::int16_t seq_delta, std::uint8_t flags,
                          ByteView octets) {
  ByteWriter w(out);
  w.u8(ctl);
  w.be16(static_cast<std::uint16_t>(seq_delta));
  w.u8(flags);
  const std::size_t n = std::min<std::size_t>(octets.size(), 0xFFFF);
  w.be16(static_cast<std::uint16_t>(n));
  w.bytes(octets.first(n));
}

}  // namespace ddpscope::fuzz
