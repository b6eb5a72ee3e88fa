// SPDX-License-Identifier: GPL-2.0-or-later
// IPsec ESP Security Associations (RFC 4303 §3.4.2) as users already have them: Wireshark's ESP
// SA table (the `esp_sa` UAT file of a Wireshark profile, so one file works in both tools) and the
// output of `ip -s xfrm state` (Linux, keys shown). Parsing only: no crypto here (crypto.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ddpscope/common/bytes.h"
#include "ddpscope/net/packet.h"

namespace ddpscope::esp {

// Encryption transforms (RFC 7146 §4.1 lists AES-GCM-16 and AES-CBC; RFC 3723 §2.3.1 3DES-CBC
// and AES-CTR). AES-GCM is combined mode (RFC 4106): its ICV is the integrity.
enum class Cipher : std::uint8_t {
  null,
  aes_cbc,
  aes_ctr,
  aes_gcm_8,
  aes_gcm_12,
  aes_gcm_16,
  des3_cbc,
  des_cbc,
};
enum class Integrity : std::uint8_t {
  null,
  hmac_sha1_96,
  hmac_sha256_96,  // the pre-RFC 4868 truncation Linux/KAME once used
  hmac_sha256_128,
  hmac_sha384_192,
  hmac_sha512_256,
  hmac_md5_96,
};

bool is_aead(Cipher c);
// Octets of the explicit IV, of a cipher block (for padding), of the ICV.
std::size_t iv_size(Cipher c);
std::size_t block_size(Cipher c);
std::size_t icv_size(Cipher c, Integrity i);
// Octets of key material the transform takes: AES-GCM and AES-CTR end in a 4-octet salt/nonce.
bool key_size_ok(Cipher c, std::size_t octets);
// "AES-GCM-16 (128-bit key)", "HMAC-SHA-256-128", "NULL".
std::string cipher_name(Cipher c, std::size_t key_octets);
std::string integrity_name(Cipher c, Integrity i);

// Wireshark 4.0's labels (epan/dissectors/packet-ipsec.c, esp_encryption_type_vals and
// esp_authentication_type_vals), as its esp_sa file stores them.
std::string_view wireshark_label(Cipher c);
std::string_view wireshark_label(Integrity i);

// An address field of an SA: any ("*"), one address, or a prefix ("10.0.0.0/8", "10.0.*.*").
struct AddressMatch {
  bool any = true;
  net::Address addr;
  unsigned prefix = 0;  // bits compared
  bool matches(const net::Address& a) const;
  std::string to_string() const;
};

struct SecurityAssociation {
  std::string origin;  // "FILE:LINE", for messages
  bool v6 = false;
  AddressMatch src, dst;
  std::uint32_t spi = 0;
  Cipher cipher = Cipher::null;
  Bytes enc_key;  // with the 4-octet salt (GCM) or nonce (CTR) at its end
  Integrity integrity = Integrity::null;
  Bytes auth_key;
  bool esn = false;                  // RFC 4303 §2.2.1 Extended Sequence Numbers (xfrm flag esn)
  std::uint32_t replay_window = 64;  // RFC 4303 §3.4.3 (xfrm replay-window); 0: no check
  // With ESN, the high half of the sequence number where the SA is known to be (xfrm's ESN
  // context seq-hi / oseq-hi, dumped after the capture): a capture that starts with a high half
  // above 0 is found by trying it and the few below it on the SA's first packet.
  std::uint32_t esn_hi_hint = 0;
  std::optional<std::string> mode;  // "tunnel" / "transport" when the file says (xfrm)
  bool udp_encap = false;           // xfrm encap espinudp
};

// One line of an SA file that is not understood: parsing stops there (a usage error).
// `text`'s name for messages is `name` ("FILE"); lines are numbered from 1.
bool parse_esp_sa(std::string_view text, const std::string& name,
                  std::vector<SecurityAssociation>& out, std::string& error);
bool parse_xfrm(std::string_view text, const std::string& name,
                std::vector<SecurityAssociation>& out, std::string& error);
bool load_esp_sa_file(const std::string& path, std::vector<SecurityAssociation>& out,
                      std::string& error);
bool load_xfrm_file(const std::string& path, std::vector<SecurityAssociation>& out,
                    std::string& error);

// What the iWARP IPsec profile (RFC 3723 §2.3, updated by RFC 7146 §4) forbids in `sa`, in one
// line; empty when nothing. `require_confidentiality`: the policy forbids NULL encryption.
std::string profile_violation(const SecurityAssociation& sa, bool require_confidentiality);

// The SA as one esp_sa line / one `ip -s xfrm state` entry (the synthetic generator writes both).
std::string to_esp_sa_line(const SecurityAssociation& sa);
std::string to_xfrm_state(const SecurityAssociation& sa, const net::Address& src,
                          const net::Address& dst);

}  // namespace ddpscope::esp
