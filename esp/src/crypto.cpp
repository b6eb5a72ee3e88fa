// SPDX-License-Identifier: GPL-2.0-or-later
#include "ddpscope/esp/crypto.h"

#include <gcrypt.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <mutex>

// gcry_control through the loader's non-variadic stand-in (gcrypt_loader.cpp says why).
extern "C" gcry_error_t ddpscope_gcry_control(enum gcry_ctl_cmds cmd, int arg);

namespace ddpscope::esp {
namespace {

void init_gcrypt() {
  static std::once_flag once;
  std::call_once(once, [] {
    gcry_check_version(nullptr);
    ddpscope_gcry_control(GCRYCTL_DISABLE_SECMEM, 0);
    ddpscope_gcry_control(GCRYCTL_INITIALIZATION_FINISHED, 0);
  });
}

int gcry_algo(Cipher c, std::size_t aes_octets) {
  switch (c) {
    case Cipher::des3_cbc:
      return GCRY_CIPHER_3DES;
    case Cipher::des_cbc:
      return GCRY_CIPHER_DES;
    default:
      return aes_octets == 32   ? GCRY_CIPHER_AES256
             : aes_octets == 24 ? GCRY_CIPHER_AES192
                                : GCRY_CIPHER_AES128;
  }
}

int gcry_mode(Cipher c) {
  switch (c) {
    case Cipher::aes_ctr:
      return GCRY_CIPHER_MODE_CTR;
    case Cipher::aes_gcm_8:
    case Cipher::aes_gcm_12:
    case Cipher::aes_gcm_16:
      return GCRY_CIPHER_MODE_GCM;
    default:
      return GCRY_CIPHER_MODE_CBC;
  }
}

int gcry_mac_algo(Integrity i) {
  switch (i) {
    case Integrity::hmac_sha1_96:
      return GCRY_MAC_HMAC_SHA1;
    case Integrity::hmac_sha256_96:
    case Integrity::hmac_sha256_128:
      return GCRY_MAC_HMAC_SHA256;
    case Integrity::hmac_sha384_192:
      return GCRY_MAC_HMAC_SHA384;
    case Integrity::hmac_sha512_256:
      return GCRY_MAC_HMAC_SHA512;
    case Integrity::hmac_md5_96:
      return GCRY_MAC_HMAC_MD5;
    case Integrity::null:
      break;
  }
  return 0;
}

void put_be32(std::uint8_t* p, std::uint32_t v) {
  p[0] = static_cast<std::uint8_t>(v >> 24);
  p[1] = static_cast<std::uint8_t>(v >> 16);
  p[2] = static_cast<std::uint8_t>(v >> 8);
  p[3] = static_cast<std::uint8_t>(v);
}

}  // namespace

struct SaCrypto::Impl {
  SecurityAssociation sa;
  gcry_cipher_hd_t cipher = nullptr;
  gcry_mac_hd_t mac = nullptr;
  Bytes salt;  // GCM salt / CTR nonce (the key's last 4 octets)
  std::size_t iv = 0, icv = 0;
  ~Impl() {
    if (cipher) gcry_cipher_close(cipher);
    if (mac) gcry_mac_close(mac);
  }

  // The HMAC of `covered` (|| seq_hi with ESN), truncated to the ICV (RFC 4303 §2.2.1, §3.3.4).
  Bytes hmac(ByteView covered, std::uint32_t seq_hi) const {
    gcry_mac_reset(mac);
    gcry_mac_write(mac, covered.data(), covered.size());
    if (sa.esn) {
      std::uint8_t hi[4];
      put_be32(hi, seq_hi);
      gcry_mac_write(mac, hi, 4);
    }
    Bytes out(64);
    std::size_t len = out.size();
    gcry_mac_read(mac, out.data(), &len);
    out.resize(std::min(len, icv));
    return out;
  }

  bool set_nonce(ByteView iv_octets) const {
    if (sa.cipher == Cipher::aes_ctr) {
      // RFC 3686 §4: nonce || IV || block counter 1.
      std::uint8_t block[16];
      std::memcpy(block, salt.data(), 4);
      std::memcpy(block + 4, iv_octets.data(), 8);
      put_be32(block + 12, 1);
      return gcry_cipher_setctr(cipher, block, 16) == 0;
    }
    if (is_aead(sa.cipher)) {
      // RFC 4106 §4: salt || IV.
      std::uint8_t nonce[12];
      std::memcpy(nonce, salt.data(), 4);
      std::memcpy(nonce + 4, iv_octets.data(), 8);
      return gcry_cipher_setiv(cipher, nonce, 12) == 0;
    }
    return gcry_cipher_setiv(cipher, iv_octets.data(), iv_octets.size()) == 0;
  }

  // RFC 4106 §5: SPI || sequence number (SPI || high || low with ESN).
  struct Aad {
    std::array<std::uint8_t, 12> octets{};
    std::size_t size = 0;
    const std::uint8_t* data() const { return octets.data(); }
  };
  Aad aad(ByteView header, std::uint32_t seq_hi) const {
    Aad a;
    std::memcpy(a.octets.data(), header.data(), 4);
    a.size = 4;
    if (sa.esn) {
      put_be32(a.octets.data() + 4, seq_hi);
      a.size = 8;
    }
    std::memcpy(a.octets.data() + a.size, header.data() + 4, 4);
    a.size += 4;
    return a;
  }
};

SaCrypto::SaCrypto(const SecurityAssociation& sa) : impl_(std::make_unique<Impl>()) {
  init_gcrypt();
  Impl& m = *impl_;
  m.sa = sa;
  m.iv = iv_size(sa.cipher);
  m.icv = icv_size(sa.cipher, sa.integrity);
  if (!key_size_ok(sa.cipher, sa.enc_key.size())) {
    error_ = "key of " + std::to_string(sa.enc_key.size()) + " octets for " +
             cipher_name(sa.cipher, sa.enc_key.size());
    return;
  }
  if (sa.cipher != Cipher::null) {
    Bytes key = sa.enc_key;
    if (is_aead(sa.cipher) || sa.cipher == Cipher::aes_ctr) {
      m.salt.assign(key.end() - 4, key.end());
      key.resize(key.size() - 4);
    }
    if (gcry_cipher_open(&m.cipher, gcry_algo(sa.cipher, key.size()), gcry_mode(sa.cipher), 0) ||
        gcry_cipher_setkey(m.cipher, key.data(), key.size())) {
      error_ = "libgcrypt refused the " + cipher_name(sa.cipher, sa.enc_key.size()) + " key";
      return;
    }
  }
  if (!is_aead(sa.cipher) && sa.integrity != Integrity::null) {
    if (gcry_mac_open(&m.mac, gcry_mac_algo(sa.integrity), 0, nullptr) ||
        gcry_mac_setkey(m.mac, sa.auth_key.data(), sa.auth_key.size())) {
      error_ = "libgcrypt refused the " + integrity_name(sa.cipher, sa.integrity) + " key";
      return;
    }
  }
}

SaCrypto::~SaCrypto() = default;

Opened SaCrypto::open(ByteView esp, std::uint32_t seq_hi, Bytes& pt) const {
  const Impl& m = *impl_;
  Opened r;
  auto invalid = [&](std::string why) {
    r.status = Opened::Status::invalid;
    r.detail = std::move(why);
    return r;
  };
  if (!error_.empty()) return invalid(error_);
  if (esp.size() < 8 + m.iv + m.icv + 2)
    return invalid(std::to_string(esp.size()) + " octets: too short for the SA's IV, trailer and " +
                   std::to_string(m.icv) + "-octet ICV");
  const ByteView header = esp.first(8);
  const ByteView iv = esp.subspan(8, m.iv);
  const ByteView icv = esp.last(m.icv);
  const ByteView ct = esp.subspan(8 + m.iv, esp.size() - 8 - m.iv - m.icv);
  pt.assign(ct.begin(), ct.end());
  if (is_aead(m.sa.cipher)) {
    if (ct.size() % 4 != 0)
      return invalid("ciphertext of " + std::to_string(ct.size()) +
                     " octets does not end on a 4-octet boundary");
    const Impl::Aad a = m.aad(header, seq_hi);
    if (!m.set_nonce(iv) || gcry_cipher_authenticate(m.cipher, a.data(), a.size) ||
        gcry_cipher_decrypt(m.cipher, pt.data(), pt.size(), nullptr, 0))
      return invalid("libgcrypt failed to decrypt");
    if (gcry_cipher_checktag(m.cipher, icv.data(), icv.size())) {
      r.status = Opened::Status::icv_mismatch;
      return r;
    }
  } else {
    if (m.mac) {
      const Bytes want = m.hmac(esp.first(esp.size() - m.icv), seq_hi);
      if (want.size() != icv.size() || std::memcmp(want.data(), icv.data(), icv.size()) != 0) {
        r.status = Opened::Status::icv_mismatch;
        return r;
      }
    }
    if (m.cipher) {
      const std::size_t bs = block_size(m.sa.cipher);
      if (m.sa.cipher != Cipher::aes_ctr && ct.size() % bs != 0)
        return invalid("ciphertext of " + std::to_string(ct.size()) +
                       " octets is not a whole number of " + std::to_string(bs) + "-octet blocks");
      if (!m.set_nonce(iv) || gcry_cipher_decrypt(m.cipher, pt.data(), pt.size(), nullptr, 0))
        return invalid("libgcrypt failed to decrypt");
    }
  }
  // RFC 4303 §2.4-2.6: Payload Data, Padding, Pad Length, Next Header.
  const std::size_t n = pt.size();
  const std::uint8_t pad_len = pt[n - 2];
  r.next_header = pt[n - 1];
  if (std::size_t{pad_len} + 2 > n)
    return invalid("Pad Length " + std::to_string(pad_len) + " exceeds the " +
                   std::to_string(n - 2) + " decrypted octets before it");
  // The default padding (RFC 4303 §2.4: 1, 2, 3, ...), which every implementation we know sends.
  for (std::size_t i = 0; i < pad_len; ++i)
    if (pt[n - 2 - pad_len + i] != static_cast<std::uint8_t>(i + 1))
      return invalid("padding octet " + std::to_string(i + 1) + " is " +
                     std::to_string(pt[n - 2 - pad_len + i]) + ", not " + std::to_string(i + 1) +
                     " (RFC 4303 §2.4)");
  if (r.next_header == 0 || r.next_header == 255)
    return invalid("Next Header " + std::to_string(r.next_header) + " (RFC 4303 §2.6)");
  r.payload = ByteView(pt).first(n - 2 - pad_len);
  r.status = Opened::Status::ok;
  return r;
}

Bytes SaCrypto::seal(std::uint32_t seq, std::uint32_t seq_hi, ByteView payload,
                     std::uint8_t next_header, ByteView iv, bool bad_padding) const {
  const Impl& m = *impl_;
  Bytes out(8 + m.iv);
  put_be32(out.data(), m.sa.spi);
  put_be32(out.data() + 4, seq);
  std::copy_n(iv.begin(), m.iv, out.begin() + 8);
  Bytes pt(payload.begin(), payload.end());
  const std::size_t bs = block_size(m.sa.cipher);
  std::size_t pad = (bs - (pt.size() + 2) % bs) % bs;
  if (bad_padding && pad == 0) pad = bs;
  for (std::size_t i = 0; i < pad; ++i)
    pt.push_back(static_cast<std::uint8_t>(i + 1));
  if (bad_padding) pt[payload.size()] ^= 0x80;
  pt.push_back(static_cast<std::uint8_t>(pad));
  pt.push_back(next_header);
  const ByteView header(out.data(), 8);
  if (is_aead(m.sa.cipher)) {
    const Impl::Aad a = m.aad(header, seq_hi);
    m.set_nonce(iv);
    gcry_cipher_authenticate(m.cipher, a.data(), a.size);
    gcry_cipher_encrypt(m.cipher, pt.data(), pt.size(), nullptr, 0);
    out.insert(out.end(), pt.begin(), pt.end());
    Bytes tag(m.icv);
    gcry_cipher_gettag(m.cipher, tag.data(), tag.size());
    out.insert(out.end(), tag.begin(), tag.end());
    return out;
  }
  if (m.cipher) {
    m.set_nonce(iv);
    gcry_cipher_encrypt(m.cipher, pt.data(), pt.size(), nullptr, 0);
  }
  out.insert(out.end(), pt.begin(), pt.end());
  if (m.mac) {
    const Bytes icv = m.hmac(out, seq_hi);
    out.insert(out.end(), icv.begin(), icv.end());
  }
  return out;
}

}  // namespace ddpscope::esp
