// SPDX-License-Identifier: GPL-2.0-or-later
// One SA's ESP transform (RFC 4303 §2-3) over libgcrypt: verify and decrypt a received packet,
// and (for the synthetic generator) build one. No hand-written cipher: libgcrypt does AES
// (CBC, CTR, GCM), 3DES, DES and the HMACs.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "ddpscope/common/bytes.h"
#include "ddpscope/esp/sa.h"

namespace ddpscope::esp {

struct Opened {
  enum class Status : std::uint8_t {
    ok,
    icv_mismatch,  // RFC 4303 §3.4.4: integrity check failed (AEAD tag or HMAC)
    invalid,       // RFC 4303 §2.4-2.6: lengths, padding or next header inconsistent
  };
  Status status = Status::invalid;
  // The Payload Data (inner IP packet in tunnel mode, the transport's PDU): a view into the
  // plaintext buffer given to SaCrypto::open.
  ByteView payload;
  std::uint8_t next_header = 0;
  std::string detail;  // for invalid
};

class SaCrypto {
 public:
  explicit SaCrypto(const SecurityAssociation& sa);
  ~SaCrypto();
  SaCrypto(const SaCrypto&) = delete;
  SaCrypto& operator=(const SaCrypto&) = delete;
  // Empty when libgcrypt accepted the keys; why not otherwise.
  const std::string& error() const { return error_; }

  // `esp` is the ESP packet from its SPI to its last ICV octet. `seq_hi` is the high half of the
  // sequence number with ESN (RFC 4303 §2.2.1: authenticated, never sent), ignored without.
  // The plaintext goes to `plaintext` (overwritten; its storage reused from packet to packet).
  Opened open(ByteView esp, std::uint32_t seq_hi, Bytes& plaintext) const;

  // An ESP packet: header, IV (`iv`: iv_size() octets), encrypted payload with the RFC 4303
  // §2.4 default padding (pad octets 1, 2, 3, ...; `extra_pad` blocks more), trailer, ICV.
  // `bad_padding`: the padding's first octet altered before encryption (esp.decrypt-invalid).
  Bytes seal(std::uint32_t seq, std::uint32_t seq_hi, ByteView payload, std::uint8_t next_header,
             ByteView iv, bool bad_padding = false) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::string error_;
};

}  // namespace ddpscope::esp
