// SPDX-License-Identifier: GPL-2.0-or-later
#include "ddpscope/esp/sa.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace ddpscope::esp {

bool is_aead(Cipher c) {
  return c == Cipher::aes_gcm_8 || c == Cipher::aes_gcm_12 || c == Cipher::aes_gcm_16;
}

std::size_t iv_size(Cipher c) {
  switch (c) {
    case Cipher::null:
      return 0;
    case Cipher::aes_cbc:
      return 16;
    case Cipher::des3_cbc:
    case Cipher::des_cbc:
    case Cipher::aes_ctr:  // RFC 3686 §3.1
    case Cipher::aes_gcm_8:
    case Cipher::aes_gcm_12:
    case Cipher::aes_gcm_16:  // RFC 4106 §3.1
      return 8;
  }
  return 0;
}

std::size_t block_size(Cipher c) {
  switch (c) {
    case Cipher::aes_cbc:
      return 16;
    case Cipher::des3_cbc:
    case Cipher::des_cbc:
      return 8;
    default:
      return 4;  // RFC 4303 §2.4: the trailer ends on a 4-octet boundary
  }
}

std::size_t icv_size(Cipher c, Integrity i) {
  if (c == Cipher::aes_gcm_8) return 8;
  if (c == Cipher::aes_gcm_12) return 12;
  if (c == Cipher::aes_gcm_16) return 16;
  switch (i) {
    case Integrity::null:
      return 0;
    case Integrity::hmac_sha1_96:
    case Integrity::hmac_sha256_96:
    case Integrity::hmac_md5_96:
      return 12;
    case Integrity::hmac_sha256_128:
      return 16;
    case Integrity::hmac_sha384_192:
      return 24;
    case Integrity::hmac_sha512_256:
      return 32;
  }
  return 0;
}

bool key_size_ok(Cipher c, std::size_t n) {
  switch (c) {
    case Cipher::null:
      return n == 0;
    case Cipher::aes_cbc:
      return n == 16 || n == 24 || n == 32;
    case Cipher::aes_ctr:
    case Cipher::aes_gcm_8:
    case Cipher::aes_gcm_12:
    case Cipher::aes_gcm_16:
      return n == 20 || n == 28 || n == 36;
    case Cipher::des3_cbc:
      return n == 24;
    case Cipher::des_cbc:
      return n == 8;
  }
  return false;
}

std::string cipher_name(Cipher c, std::size_t key_octets) {
  const std::size_t aes_bits = 8 * (key_octets >= 4 ? key_octets - 4 : 0);
  switch (c) {
    case Cipher::null:
      return "NULL";
    case Cipher::aes_cbc:
      return "AES-CBC (" + std::to_string(8 * key_octets) + "-bit key)";
    case Cipher::aes_ctr:
      return "AES-CTR (" + std::to_string(aes_bits) + "-bit key)";
    case Cipher::aes_gcm_8:
      return "AES-GCM-8 (" + std::to_string(aes_bits) + "-bit key)";
    case Cipher::aes_gcm_12:
      return "AES-GCM-12 (" + std::to_string(aes_bits) + "-bit key)";
    case Cipher::aes_gcm_16:
      return "AES-GCM-16 (" + std::to_string(aes_bits) + "-bit key)";
    case Cipher::des3_cbc:
      return "3DES-CBC";
    case Cipher::des_cbc:
      return "DES-CBC";
  }
  return "?";
}

std::string integrity_name(Cipher c, Integrity i) {
  if (is_aead(c)) return "AES-GCM ICV";
  switch (i) {
    case Integrity::null:
      return "NULL";
    case Integrity::hmac_sha1_96:
      return "HMAC-SHA-1-96";
    case Integrity::hmac_sha256_96:
      return "HMAC-SHA-256-96";
    case Integrity::hmac_sha256_128:
      return "HMAC-SHA-256-128";
    case Integrity::hmac_sha384_192:
      return "HMAC-SHA-384-192";
    case Integrity::hmac_sha512_256:
      return "HMAC-SHA-512-256";
    case Integrity::hmac_md5_96:
      return "HMAC-MD5-96";
  }
  return "?";
}

namespace {

struct CipherLabel {
  Cipher c;
  std::string_view label;
};
// Wireshark 4.0 packet-ipsec.c esp_encryption_type_vals (the ones we decrypt).
constexpr CipherLabel kCipherLabels[] = {
    {Cipher::null, "NULL"},
    {Cipher::des3_cbc, "TripleDES-CBC [RFC2451]"},
    {Cipher::aes_cbc, "AES-CBC [RFC3602]"},
    {Cipher::aes_ctr, "AES-CTR [RFC3686]"},
    {Cipher::des_cbc, "DES-CBC [RFC2405]"},
    {Cipher::aes_gcm_8, "AES-GCM with 8 octet ICV [RFC4106]"},
    {Cipher::aes_gcm_12, "AES-GCM with 12 octet ICV [RFC4106]"},
    {Cipher::aes_gcm_16, "AES-GCM with 16 octet ICV [RFC4106]"},
};
struct IntegrityLabel {
  Integrity i;
  std::string_view label;
};
constexpr IntegrityLabel kIntegrityLabels[] = {
    {Integrity::null, "NULL"},
    {Integrity::hmac_sha1_96, "HMAC-SHA-1-96 [RFC2404]"},
    {Integrity::hmac_sha256_96, "HMAC-SHA-256-96 [draft-ietf-ipsec-ciph-sha-256-00]"},
    {Integrity::hmac_sha256_128, "HMAC-SHA-256-128 [RFC4868]"},
    {Integrity::hmac_sha384_192, "HMAC-SHA-384-192 [RFC4868]"},
    {Integrity::hmac_sha512_256, "HMAC-SHA-512-256 [RFC4868]"},
    {Integrity::hmac_md5_96, "HMAC-MD5-96 [RFC2403]"},
};

std::string hex_of(ByteView b) {
  std::string s = "0x";
  char buf[3];
  for (std::uint8_t v : b) {
    std::snprintf(buf, sizeof buf, "%02x", v);
    s += buf;
  }
  return s;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// "0x…" hex (an odd digit count has a 0 in front, as Wireshark reads it); anything else is the
// key's octets as text (Wireshark's ASCII keys).
bool parse_key(std::string_view s, Bytes& out, bool allow_text) {
  out.clear();
  if (s.size() >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    std::string_view h = s.substr(2);
    std::size_t i = 0;
    if (h.size() % 2 == 1) {
      const int d = hex_digit(h[0]);
      if (d < 0) return false;
      out.push_back(static_cast<std::uint8_t>(d));
      i = 1;
    }
    for (; i + 1 < h.size() + 1 && i < h.size(); i += 2) {
      const int a = hex_digit(h[i]), b = hex_digit(h[i + 1]);
      if (a < 0 || b < 0) return false;
      out.push_back(static_cast<std::uint8_t>(a << 4 | b));
    }
    return true;
  }
  if (!allow_text) return false;
  out.assign(s.begin(), s.end());
  return true;
}

bool parse_u32(std::string_view s, std::uint32_t& v) {
  int base = 10;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    s.remove_prefix(2);
    base = 16;
  }
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v, base);
  return ec == std::errc() && p == s.data() + s.size();
}

// "*", "10.0.0.1", "10.0.0.0/8", "10.0.*.*", "2001:db8::/32" (Wireshark's forms).
bool parse_address(std::string_view s, bool v6, AddressMatch& m) {
  m = AddressMatch{};
  if (s == "*" || s.empty()) return true;
  std::string text(s);
  int prefix = -1;
  if (auto slash = text.find('/'); slash != std::string::npos) {
    std::uint32_t p = 0;
    if (!parse_u32(std::string_view(text).substr(slash + 1), p)) return false;
    prefix = static_cast<int>(p);
    text.resize(slash);
  }
  if (!v6 && text.find('*') != std::string::npos) {
    // Trailing "*" octets: a prefix of the octets before them.
    int octets = 0;
    std::string fixed;
    std::stringstream ss(text);
    std::string part;
    bool star = false;
    int parts = 0;
    while (std::getline(ss, part, '.')) {
      ++parts;
      if (part == "*") {
        star = true;
        fixed += (fixed.empty() ? "" : ".") + std::string("0");
      } else {
        if (star) return false;  // "10.*.0.1": not a prefix
        ++octets;
        fixed += (fixed.empty() ? "" : ".") + part;
      }
    }
    if (parts != 4) return false;
    text = fixed;
    prefix = prefix < 0 ? 8 * octets : std::min(prefix, 8 * octets);
  }
  auto a = net::Address::parse(text);
  if (!a || a->v6 != v6) return false;
  const int max = v6 ? 128 : 32;
  if (prefix > max) return false;
  m.any = false;
  m.addr = *a;
  m.prefix = static_cast<unsigned>(prefix < 0 ? max : prefix);
  return true;
}

// The quoted, comma-separated fields of one UAT line; \xNN, \\ and \" escapes.
bool uat_fields(std::string_view line, std::vector<std::string>& out, std::string& why) {
  out.clear();
  std::size_t i = 0;
  auto skip_space = [&] {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r'))
      ++i;
  };
  while (true) {
    skip_space();
    if (i >= line.size() || line[i] != '"') {
      why = "expected a double-quoted field";
      return false;
    }
    ++i;
    std::string f;
    bool closed = false;
    while (i < line.size()) {
      const char c = line[i++];
      if (c == '"') {
        closed = true;
        break;
      }
      if (c == '\\' && i < line.size()) {
        const char e = line[i++];
        if (e == 'x' && i + 1 < line.size() + 1 && i + 2 <= line.size()) {
          const int a = hex_digit(line[i]), b = hex_digit(line[i + 1]);
          if (a < 0 || b < 0) {
            why = "bad \\x escape";
            return false;
          }
          f += static_cast<char>(a << 4 | b);
          i += 2;
        } else {
          f += e;
        }
        continue;
      }
      f += c;
    }
    if (!closed) {
      why = "unterminated quoted field";
      return false;
    }
    out.push_back(std::move(f));
    skip_space();
    if (i >= line.size()) return true;
    if (line[i] != ',') {
      why = "expected a comma between fields";
      return false;
    }
    ++i;
  }
}

std::string at_line(const std::string& name, std::size_t n) {
  return name + ":" + std::to_string(n);
}

bool read_file(const std::string& path, std::string& text, std::string& error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = "cannot open " + path;
    return false;
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  text = ss.str();
  return true;
}

}  // namespace

std::string_view wireshark_label(Cipher c) {
  for (const auto& l : kCipherLabels)
    if (l.c == c) return l.label;
  return "NULL";
}
std::string_view wireshark_label(Integrity i) {
  for (const auto& l : kIntegrityLabels)
    if (l.i == i) return l.label;
  return "NULL";
}

bool AddressMatch::matches(const net::Address& a) const {
  if (any) return true;
  if (a.v6 != addr.v6) return false;
  unsigned bits = prefix;
  for (std::size_t i = 0; bits > 0; ++i) {
    const unsigned take = bits >= 8 ? 8 : bits;
    const std::uint8_t mask = static_cast<std::uint8_t>(0xFF00u >> take);
    if ((a.bytes[i] & mask) != (addr.bytes[i] & mask)) return false;
    bits -= take;
  }
  return true;
}

std::string AddressMatch::to_string() const {
  if (any) return "*";
  const unsigned max = addr.v6 ? 128 : 32;
  return addr.to_string() + (prefix == max ? "" : "/" + std::to_string(prefix));
}

bool parse_esp_sa(std::string_view text, const std::string& name,
                  std::vector<SecurityAssociation>& out, std::string& error) {
  std::size_t n = 0;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    std::size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    std::string_view line = text.substr(pos, nl - pos);
    pos = nl + 1;
    ++n;
    while (!line.empty() && (line.back() == '\r' || line.back() == ' '))
      line.remove_suffix(1);
    std::size_t lead = 0;
    while (lead < line.size() && (line[lead] == ' ' || line[lead] == '\t'))
      ++lead;
    line.remove_prefix(lead);
    if (line.empty() || line[0] == '#') {
      if (nl == text.size()) break;
      continue;
    }
    const std::string where = at_line(name, n);
    std::vector<std::string> f;
    std::string why;
    if (!uat_fields(line, f, why)) {
      error = where + ": " + why + " (an esp_sa line is 8 double-quoted fields)";
      return false;
    }
    if (f.size() != 8) {
      error = where + ": " + std::to_string(f.size()) +
              " fields; an esp_sa line has 8 (protocol, source, destination, SPI, encryption, "
              "encryption key, authentication, authentication key)";
      return false;
    }
    SecurityAssociation sa;
    sa.origin = where;
    if (f[0] == "IPv4") {
      sa.v6 = false;
    } else if (f[0] == "IPv6") {
      sa.v6 = true;
    } else {
      error = where + ": protocol \"" + f[0] + "\" (IPv4 or IPv6)";
      return false;
    }
    if (!parse_address(f[1], sa.v6, sa.src)) {
      error = where + ": source address \"" + f[1] + "\" is not an " + f[0] + " address";
      return false;
    }
    if (!parse_address(f[2], sa.v6, sa.dst)) {
      error = where + ": destination address \"" + f[2] + "\" is not an " + f[0] + " address";
      return false;
    }
    if (!parse_u32(f[3], sa.spi)) {
      error = where + ": SPI \"" + f[3] + "\" (0x followed by up to 8 hex digits)";
      return false;
    }
    bool known = false;
    for (const auto& l : kCipherLabels)
      if (l.label == f[4]) {
        sa.cipher = l.c;
        known = true;
      }
    if (!known) {
      error = where + ": encryption \"" + f[4] + "\" is not one ddpscope decrypts (" +
              "NULL, TripleDES-CBC [RFC2451], AES-CBC [RFC3602], AES-CTR [RFC3686], DES-CBC "
              "[RFC2405], AES-GCM with 8/12/16 octet ICV [RFC4106])";
      return false;
    }
    known = false;
    for (const auto& l : kIntegrityLabels)
      if (l.label == f[6]) {
        sa.integrity = l.i;
        known = true;
      }
    if (!known) {
      error = where + ": authentication \"" + f[6] + "\" is not one ddpscope checks";
      return false;
    }
    if (is_aead(sa.cipher)) sa.integrity = Integrity::null;
    if (!parse_key(f[5], sa.enc_key, true) || !key_size_ok(sa.cipher, sa.enc_key.size())) {
      error = where + ": encryption key \"" + f[5] + "\" is not a key for " + f[4] + " (" +
              std::to_string(sa.enc_key.size()) + " octets" +
              (is_aead(sa.cipher) || sa.cipher == Cipher::aes_ctr
                   ? "; AES-GCM/CTR take the AES key followed by the 4-octet salt)"
                   : ")");
      return false;
    }
    if (!parse_key(f[7], sa.auth_key, true) ||
        (sa.integrity != Integrity::null && sa.auth_key.empty())) {
      error = where + ": authentication key \"" + f[7] + "\" is missing or not hex";
      return false;
    }
    out.push_back(std::move(sa));
    if (nl == text.size()) break;
  }
  return true;
}

namespace {

struct XfrmAlgo {
  std::string_view name;
  Cipher c;
};
constexpr XfrmAlgo kXfrmEnc[] = {
    {"cbc(aes)", Cipher::aes_cbc},       {"rfc3686(ctr(aes))", Cipher::aes_ctr},
    {"cbc(des3_ede)", Cipher::des3_cbc}, {"cbc(des)", Cipher::des_cbc},
    {"ecb(cipher_null)", Cipher::null},  {"cipher_null", Cipher::null},
};

std::vector<std::string_view> words(std::string_view line) {
  std::vector<std::string_view> w;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && std::isspace(static_cast<unsigned char>(line[i])))
      ++i;
    std::size_t j = i;
    while (j < line.size() && !std::isspace(static_cast<unsigned char>(line[j])))
      ++j;
    if (j > i) w.push_back(line.substr(i, j - i));
    i = j;
  }
  return w;
}

}  // namespace

bool parse_xfrm(std::string_view text, const std::string& name,
                std::vector<SecurityAssociation>& out, std::string& error) {
  std::optional<SecurityAssociation> cur;
  bool cur_esp = false, cur_spi = false, cur_enc = false;
  std::size_t cur_line = 0;
  auto close = [&]() -> bool {
    if (!cur) return true;
    const std::string where = cur->origin;
    if (!cur_esp) {  // an AH or IPComp state: nothing of ours
      cur.reset();
      return true;
    }
    if (!cur_spi) {
      error = where + ": state without \"proto esp spi 0x…\"";
      return false;
    }
    if (!cur_enc) {
      error = where +
              ": ESP state without an \"enc\" or \"aead\" line (use ip -s xfrm state: "
              "it shows the keys)";
      return false;
    }
    out.push_back(std::move(*cur));
    cur.reset();
    return true;
  };
  std::size_t n = 0, pos = 0;
  while (pos < text.size()) {
    std::size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    const std::string_view line = text.substr(pos, nl - pos);
    pos = nl + 1;
    ++n;
    const auto w = words(line);
    if (w.empty()) continue;
    const std::string where = at_line(name, n);
    auto bad = [&](const std::string& what) {
      error = where + ": " + what;
      return false;
    };
    if (w[0] == "src") {
      if (!close()) return false;
      if (w.size() < 4 || w[2] != "dst") return bad("expected \"src ADDRESS dst ADDRESS\"");
      auto s = net::Address::parse(w[1]), d = net::Address::parse(w[3]);
      if (!s || !d || s->v6 != d->v6) return bad("src/dst are not two addresses of one family");
      cur.emplace();
      cur->origin = where;
      cur->v6 = s->v6;
      cur->src = AddressMatch{false, *s, s->v6 ? 128u : 32u};
      cur->dst = AddressMatch{false, *d, d->v6 ? 128u : 32u};
      cur_esp = cur_spi = cur_enc = false;
      cur_line = n;
      continue;
    }
    if (!cur) {
      // Text before the first state ("ip -s xfrm state" prints nothing else; be strict).
      return bad("expected a state starting with \"src ADDRESS dst ADDRESS\"");
    }
    (void)cur_line;
    for (std::size_t i = 0; i < w.size(); ++i) {
      if (w[i] == "proto" && i + 1 < w.size()) {
        cur_esp = w[i + 1] == "esp";
      } else if (w[i] == "spi" && i + 1 < w.size() && w[0] == "proto") {
        // "spi 0xcfc0d07b(3485519995)": iproute2 prints the SPI in hex and, with -s, again in
        // decimal; the two must agree.
        std::string_view t = w[i + 1];
        std::optional<std::string_view> dec;
        if (const auto open = t.find('('); open != std::string_view::npos && t.back() == ')') {
          dec = t.substr(open + 1, t.size() - open - 2);
          t = t.substr(0, open);
        }
        std::uint32_t again = 0;
        if (!parse_u32(t, cur->spi) || (dec && (!parse_u32(*dec, again) || again != cur->spi)))
          return bad("spi \"" + std::string(w[i + 1]) + "\"");
        cur_spi = true;
      } else if (w[i] == "mode" && i + 1 < w.size() && w[0] == "proto") {
        if (w[i + 1] != "tunnel" && w[i + 1] != "transport")
          return bad("mode \"" + std::string(w[i + 1]) + "\" (tunnel or transport)");
        cur->mode = std::string(w[i + 1]);
      } else if (w[i] == "replay-window" && i == 0 && i + 1 < w.size() &&
                 !(w.size() > 2 && w[2] == "replay")) {  // not the stats: line's counters
        std::uint32_t v = 0;
        if (!parse_u32(w[i + 1], v)) return bad("replay-window \"" + std::string(w[i + 1]) + "\"");
        // 0: no anti-replay check, unless an ESN context gives its replay_window below.
        cur->replay_window = v;
      } else if (w[i] == "flag") {
        for (std::size_t k = i + 1; k < w.size(); ++k)
          if (w[k] == "esn") cur->esn = true;
      } else if (w[i] == "esn" && w[0] == "anti-replay") {
        cur->esn = true;
      } else if ((w[i] == "seq-hi" || w[i] == "oseq-hi") && i + 1 < w.size()) {
        std::uint32_t v = 0;
        std::string_view t = w[i + 1];
        if (!t.empty() && t.back() == ',') t.remove_suffix(1);
        if (parse_u32(t, v)) cur->esn_hi_hint = std::max(cur->esn_hi_hint, v);
      } else if (w[i] == "replay_window" && i + 1 < w.size()) {
        std::uint32_t v = 0;
        std::string_view t = w[i + 1];
        if (!t.empty() && t.back() == ',') t.remove_suffix(1);
        if (parse_u32(t, v)) cur->replay_window = v;
      }
    }
    if (w[0] == "encap" && w.size() >= 3 && w[2] == "espinudp") cur->udp_encap = true;
    if (w[0] == "aead" || w[0] == "enc" || w[0] == "auth" || w[0] == "auth-trunc") {
      if (w.size() < 2) return bad("\"" + std::string(w[0]) + "\" without an algorithm");
      const std::string_view algo = w[1];
      Bytes key;
      // "enc ecb(cipher_null) " has no key; the others "0x… (N bits)".
      if (w.size() >= 3 && !parse_key(w[2], key, false))
        return bad("key \"" + std::string(w[2]) + "\" is not hex (0x…)");
      if (w[0] == "aead") {
        if (algo != "rfc4106(gcm(aes))") return bad("aead \"" + std::string(algo) + "\"");
        std::uint32_t icv = 0;
        if (w.size() < 6 || !parse_u32(w[5], icv))
          return bad("aead without its ICV length in bits (\"… (160 bits) 128\")");
        if (icv == 64)
          cur->cipher = Cipher::aes_gcm_8;
        else if (icv == 96)
          cur->cipher = Cipher::aes_gcm_12;
        else if (icv == 128)
          cur->cipher = Cipher::aes_gcm_16;
        else
          return bad("AES-GCM ICV of " + std::to_string(icv) + " bits (64, 96 or 128)");
        cur->enc_key = key;
        cur_enc = true;
      } else if (w[0] == "enc") {
        bool found = false;
        for (const auto& a : kXfrmEnc)
          if (a.name == algo) {
            cur->cipher = a.c;
            found = true;
          }
        if (!found) return bad("enc \"" + std::string(algo) + "\" is not one ddpscope decrypts");
        cur->enc_key = key;
        cur_enc = true;
      } else {
        std::uint32_t trunc = 0;
        if (w[0] == "auth-trunc" && (w.size() < 6 || !parse_u32(w[5], trunc)))
          return bad("auth-trunc without its truncation in bits");
        Integrity in;
        if (algo == "digest_null")
          in = Integrity::null;
        else if (algo == "hmac(sha1)" && (trunc == 0 || trunc == 96))
          in = Integrity::hmac_sha1_96;
        else if (algo == "hmac(md5)" && (trunc == 0 || trunc == 96))
          in = Integrity::hmac_md5_96;
        else if (algo == "hmac(sha256)" && (trunc == 0 || trunc == 96))
          in = Integrity::hmac_sha256_96;
        else if (algo == "hmac(sha256)" && trunc == 128)
          in = Integrity::hmac_sha256_128;
        else if (algo == "hmac(sha384)" && trunc == 192)
          in = Integrity::hmac_sha384_192;
        else if (algo == "hmac(sha512)" && trunc == 256)
          in = Integrity::hmac_sha512_256;
        else
          return bad(std::string(w[0]) + " \"" + std::string(algo) + "\"" +
                     (trunc ? " " + std::to_string(trunc) : "") + " is not one ddpscope checks");
        cur->integrity = in;
        cur->auth_key = key;
      }
      if (cur_enc && !key_size_ok(cur->cipher, cur->enc_key.size()))
        return bad("key of " + std::to_string(cur->enc_key.size()) + " octets for " +
                   cipher_name(cur->cipher, cur->enc_key.size()));
    }
  }
  return close();
}

bool load_esp_sa_file(const std::string& path, std::vector<SecurityAssociation>& out,
                      std::string& error) {
  std::string text;
  if (!read_file(path, text, error)) return false;
  return parse_esp_sa(text, path, out, error);
}

bool load_xfrm_file(const std::string& path, std::vector<SecurityAssociation>& out,
                    std::string& error) {
  std::string text;
  if (!read_file(path, text, error)) return false;
  return parse_xfrm(text, path, out, error);
}

std::string profile_violation(const SecurityAssociation& sa, bool require_confidentiality) {
  if (!is_aead(sa.cipher) && sa.integrity == Integrity::null)
    return "NULL integrity: the profile requires data origin authentication and integrity "
           "(RFC 3723 §2.3.1, RFC 7146 §4)";
  if (sa.cipher == Cipher::null && require_confidentiality)
    return "NULL encryption while the policy (--esp-policy confidentiality) requires "
           "confidentiality";
  if (sa.cipher == Cipher::des_cbc || sa.cipher == Cipher::aes_gcm_8 ||
      sa.cipher == Cipher::aes_gcm_12)
    return cipher_name(sa.cipher, sa.enc_key.size()) +
           " is not in the profile (RFC 7146 §4.1: AES-GCM with a 16-octet ICV, AES-CBC; RFC "
           "3723 §2.3.1: 3DES-CBC, AES-CTR)";
  if (sa.integrity == Integrity::hmac_md5_96 || sa.integrity == Integrity::hmac_sha256_96)
    return integrity_name(sa.cipher, sa.integrity) +
           " is not in the profile (RFC 7146 §4.1: HMAC-SHA-256-128; RFC 3723 §2.3.1: "
           "HMAC-SHA-1-96)";
  return {};
}

std::string to_esp_sa_line(const SecurityAssociation& sa) {
  char spi[16];
  std::snprintf(spi, sizeof spi, "0x%08x", sa.spi);
  auto q = [](std::string_view s) {  // appended: see Endpoint::to_string on operator+
    std::string quoted(1, '"');
    quoted.append(s);
    quoted += '"';
    return quoted;
  };
  return q(sa.v6 ? "IPv6" : "IPv4") + "," + q(sa.src.to_string()) + "," + q(sa.dst.to_string()) +
         "," + q(spi) + "," + q(wireshark_label(sa.cipher)) + "," + q(hex_of(sa.enc_key)) + "," +
         q(wireshark_label(is_aead(sa.cipher) ? Integrity::null : sa.integrity)) + "," +
         q(sa.auth_key.empty() ? "" : hex_of(sa.auth_key));
}

std::string to_xfrm_state(const SecurityAssociation& sa, const net::Address& src,
                          const net::Address& dst) {
  auto hex_hi = [](std::uint32_t v) {
    char b[16];
    std::snprintf(b, sizeof b, "0x%x", v);
    return std::string(b);
  };
  char spi[16];
  std::snprintf(spi, sizeof spi, "0x%08x", sa.spi);
  std::string s = "src " + src.to_string() + " dst " + dst.to_string() + "\n";
  s += "\tproto esp spi " + std::string(spi) + " reqid 1 mode " + sa.mode.value_or("tunnel") + "\n";
  s += "\treplay-window " + std::to_string(sa.esn ? 0 : sa.replay_window) + " flag af-unspec" +
       (sa.esn ? " esn" : "") + "\n";
  const std::string key = hex_of(sa.enc_key);
  const std::string bits = " (" + std::to_string(8 * sa.enc_key.size()) + " bits)";
  auto auth = [&](std::string_view algo, int trunc) {
    s += "\tauth-trunc " + std::string(algo) + " " + hex_of(sa.auth_key) + " (" +
         std::to_string(8 * sa.auth_key.size()) + " bits) " + std::to_string(trunc) + "\n";
  };
  if (is_aead(sa.cipher)) {
    const int icv = static_cast<int>(8 * icv_size(sa.cipher, sa.integrity));
    s += "\taead rfc4106(gcm(aes)) " + key + bits + " " + std::to_string(icv) + "\n";
  } else {
    switch (sa.integrity) {
      case Integrity::null:
        break;
      case Integrity::hmac_sha1_96:
        auth("hmac(sha1)", 96);
        break;
      case Integrity::hmac_sha256_96:
        auth("hmac(sha256)", 96);
        break;
      case Integrity::hmac_sha256_128:
        auth("hmac(sha256)", 128);
        break;
      case Integrity::hmac_sha384_192:
        auth("hmac(sha384)", 192);
        break;
      case Integrity::hmac_sha512_256:
        auth("hmac(sha512)", 256);
        break;
      case Integrity::hmac_md5_96:
        auth("hmac(md5)", 96);
        break;
    }
    std::string_view enc = "ecb(cipher_null)";
    for (const auto& a : kXfrmEnc)
      if (a.c == sa.cipher) {
        enc = a.name;
        break;
      }
    s += "\tenc " + std::string(enc) + " " + (sa.enc_key.empty() ? "" : key + bits) + "\n";
  }
  if (sa.udp_encap) s += "\tencap type espinudp sport 4500 dport 4500 addr 0.0.0.0\n";
  if (sa.esn)
    s += "\tanti-replay esn context:\n\t seq-hi " + hex_hi(sa.esn_hi_hint) + ", seq 0x0, oseq-hi " +
         hex_hi(sa.esn_hi_hint) + ", oseq 0x0\n\t replay_window " +
         std::to_string(sa.replay_window) + ", bitmap-length " +
         std::to_string((sa.replay_window + 31) / 32) + "\n";
  s += "\tsel src 0.0.0.0/0 dst 0.0.0.0/0\n";
  return s;
}

}  // namespace ddpscope::esp
