// SPDX-License-Identifier: GPL-2.0-or-later
// The ESP layer under the analysis (a capture::FrameLayer): finds ESP packets in captured frames
// (IPv4 and IPv6, transport and tunnel mode, RFC 3948 UDP encapsulation on port 4500), checks
// them as a receiver does (RFC 4303 §3.4: SA lookup by SPI and addresses, anti-replay window with
// ESN, ICV, decryption, padding and next header) and hands the analysis the inner packet under
// the outer frame's number. What a receiver would drop is a finding (esp.*), never analysed.
// At the end: esp.unknown-spi once per SPI without a key, the per-stream ESP summary
// (Analyzer::note_esp) and, with require_esp, esp.unprotected for iWARP streams seen in the clear.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "ddpscope/analysis/analyzer.h"
#include "ddpscope/capture/feed.h"
#include "ddpscope/esp/sa.h"

namespace ddpscope::esp {

struct EspOptions {
  std::vector<SecurityAssociation> sas;
  // --require-esp: an iWARP stream in the clear is esp.unprotected.
  bool require_esp = false;
  // --esp-policy confidentiality: NULL encryption is esp.profile-violation (RFC 3723 §2.3.1
  // leaves confidentiality to the policy; integrity is always required).
  bool require_confidentiality = false;
};

class EspLayer : public capture::FrameLayer {
 public:
  explicit EspLayer(EspOptions options);
  ~EspLayer() override;
  // Why an SA's keys were refused by libgcrypt ("FILE:LINE: ..."), empty when all were taken.
  const std::string& error() const { return error_; }

  const capture::Frame* replace(const capture::Frame& frame, capture::LayerNotes& notes) override;
  // Not a frame decoded as TCP or SCTP (unless --require-esp looks for TCP in the clear): the
  // frame decoder found no ESP there.
  bool wants(const net::FrameDecode& decoded) const override;
  void finish(Analyzer& analyzer) override;

  // ESP packets seen with no key (after finish: what esp.unknown-spi reported).
  std::uint64_t frames_without_key() const { return frames_without_key_; }

 private:
  struct SaState;
  struct Unknown {
    std::uint32_t spi = 0;
    std::string from, to;
    std::uint64_t first_frame = 0;
    std::uint64_t frames = 0;
  };
  struct DirKey {
    net::Endpoint from, to;
    auto operator<=>(const DirKey&) const = default;
  };
  struct Packet;
  const capture::Frame* process(const capture::Frame& frame, capture::LayerNotes& notes);
  const capture::Frame* open(const capture::Frame& frame, const Packet& packet,
                             capture::LayerNotes& notes);
  void note_clear(const capture::Frame& frame);

  EspOptions options_;
  std::vector<std::unique_ptr<SaState>> sas_;
  std::multimap<std::uint32_t, std::size_t> by_spi_;
  std::map<std::tuple<std::uint32_t, net::Address, net::Address>, Unknown> unknown_;
  std::uint64_t unknown_dropped_ = 0;  // frames of SPIs past the table's cap
  std::uint64_t frames_without_key_ = 0;
  std::map<DirKey, EspProtection> protected_;
  std::map<DirKey, std::uint64_t> clear_;  // first frame of each direction seen in the clear
  std::string error_;
  Bytes plain_;  // the decrypted payload of the last ESP packet (a tunnel's inner packet)
  Bytes inner_;  // the packet built for a transport-mode ESP packet
  capture::Frame frame_;
};

}  // namespace ddpscope::esp
