// SPDX-License-Identifier: GPL-2.0-or-later
#include "scenario.h"

#include <limits>
#include <set>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace ddpscope::synth {
namespace {

using json = nlohmann::json;

// Parsing a scenario is not the data path: a failure throws ScenarioError internally and
// parse_scenario turns it into the error string.
struct ScenarioError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw ScenarioError(path + ": " + what);
}

// A JSON object whose keys are consumed one by one; finish() rejects the keys nobody asked
// for, so a typo in a scenario is an error instead of a silently ignored option.
class Obj {
 public:
  Obj(const json& j, std::string path) : j_(j), path_(std::move(path)) {
    if (!j.is_object()) fail(path_, "expected an object");
  }
  const std::string& path() const { return path_; }
  std::string at(const std::string& key) const { return path_ + "." + key; }
  bool has(const std::string& key) {
    used_.insert(key);
    return j_.contains(key);
  }
  const json& get(const std::string& key) {
    used_.insert(key);
    return j_.at(key);
  }
  std::uint64_t u64(const std::string& key, std::uint64_t def,
                    std::uint64_t max = std::numeric_limits<std::uint64_t>::max()) {
    if (!has(key)) return def;
    return to_u64(get(key), at(key), max);
  }
  std::int64_t i64(const std::string& key, std::int64_t def) {
    if (!has(key)) return def;
    const json& v = get(key);
    if (!v.is_number_integer()) fail(at(key), "expected an integer");
    return v.get<std::int64_t>();
  }
  bool boolean(const std::string& key, bool def) {
    if (!has(key)) return def;
    const json& v = get(key);
    if (!v.is_boolean()) fail(at(key), "expected true or false");
    return v.get<bool>();
  }
  std::string str(const std::string& key, const std::string& def) {
    if (!has(key)) return def;
    const json& v = get(key);
    if (!v.is_string()) fail(at(key), "expected a string");
    return v.get<std::string>();
  }
  void finish() const {
    for (auto it = j_.begin(); it != j_.end(); ++it)
      if (!used_.count(it.key())) fail(path_, "unknown key \"" + it.key() + "\"");
  }

  // Integers may be JSON numbers or strings ("0x1234" or "4660") for 64-bit values.
  static std::uint64_t to_u64(const json& v, const std::string& path, std::uint64_t max) {
    std::uint64_t out = 0;
    if (v.is_number_unsigned()) {
      out = v.get<std::uint64_t>();
    } else if (v.is_number_integer()) {
      if (v.get<std::int64_t>() < 0) fail(path, "expected a non-negative integer");
      out = static_cast<std::uint64_t>(v.get<std::int64_t>());
    } else if (v.is_string()) {
      const std::string s = v.get<std::string>();
      std::size_t used = 0;
      try {
        out = std::stoull(s, &used, 0);
      } catch (const std::exception&) {
        fail(path, "\"" + s + "\" is not an integer");
      }
      if (used != s.size() || s.empty() || s[0] == '-')
        fail(path, "\"" + s + "\" is not an integer");
    } else {
      fail(path, "expected an integer (number or \"0x...\" string)");
    }
    if (out > max) fail(path, "value " + std::to_string(out) + " exceeds " + std::to_string(max));
    return out;
  }

 private:
  const json& j_;
  std::string path_;
  std::set<std::string> used_;
};

constexpr std::uint64_t kU8 = 0xFF;
constexpr std::uint64_t kU16 = 0xFFFF;
constexpr std::uint64_t kU32 = 0xFFFFFFFF;
constexpr std::uint64_t kMaxPayload = 16u << 20;  // keeps a scenario's capture small

Bytes parse_hex(const std::string& text, const std::string& path) {
  Bytes out;
  int hi = -1;
  for (char ch : text) {
    if (ch == ' ' || ch == ':' || ch == '\n') continue;
    int v = -1;
    if (ch >= '0' && ch <= '9') v = ch - '0';
    if (ch >= 'a' && ch <= 'f') v = ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F') v = ch - 'A' + 10;
    if (v < 0) fail(path, std::string("invalid hex digit '") + ch + "'");
    if (hi < 0) {
      hi = v;
    } else {
      out.push_back(static_cast<std::uint8_t>((hi << 4) | v));
      hi = -1;
    }
  }
  if (hi >= 0) fail(path, "odd number of hex digits");
  return out;
}

// Key material when the scenario gives none: a fixed pattern (synthetic captures only).
Bytes default_key(std::size_t n, std::uint8_t seed) {
  Bytes k(n);
  for (std::size_t i = 0; i < n; ++i)
    k[i] = static_cast<std::uint8_t>(seed + 17 * i);
  return k;
}

EspSpec parse_esp(const json& j, const std::string& path, std::size_t connections) {
  Obj o(j, path);
  EspSpec e;
  e.mode = o.str("mode", "tunnel");
  if (e.mode != "tunnel" && e.mode != "transport") fail(o.at("mode"), "tunnel or transport");
  const std::string enc = o.str("encryption", "aes-gcm-16");
  const std::uint64_t bits = o.u64("key_bits", enc == "3des-cbc"  ? 192
                                               : enc == "des-cbc" ? 64
                                                                  : 128);
  struct {
    const char* name;
    esp::Cipher c;
  } ciphers[] = {{"aes-gcm-16", esp::Cipher::aes_gcm_16}, {"aes-gcm-12", esp::Cipher::aes_gcm_12},
                 {"aes-gcm-8", esp::Cipher::aes_gcm_8},   {"aes-cbc", esp::Cipher::aes_cbc},
                 {"aes-ctr", esp::Cipher::aes_ctr},       {"3des-cbc", esp::Cipher::des3_cbc},
                 {"des-cbc", esp::Cipher::des_cbc},       {"null", esp::Cipher::null}};
  bool found = false;
  for (const auto& c : ciphers)
    if (enc == c.name) {
      e.cipher = c.c;
      found = true;
    }
  if (!found)
    fail(o.at("encryption"),
         "aes-gcm-16, aes-gcm-12, aes-gcm-8, aes-cbc, aes-ctr, 3des-cbc, des-cbc or null");
  const std::string integ = o.str("integrity", esp::is_aead(e.cipher) ? "null" : "hmac-sha256-128");
  struct {
    const char* name;
    esp::Integrity i;
  } integrities[] = {{"null", esp::Integrity::null},
                     {"hmac-sha1-96", esp::Integrity::hmac_sha1_96},
                     {"hmac-sha256-96", esp::Integrity::hmac_sha256_96},
                     {"hmac-sha256-128", esp::Integrity::hmac_sha256_128},
                     {"hmac-sha384-192", esp::Integrity::hmac_sha384_192},
                     {"hmac-sha512-256", esp::Integrity::hmac_sha512_256},
                     {"hmac-md5-96", esp::Integrity::hmac_md5_96}};
  found = false;
  for (const auto& c : integrities)
    if (integ == c.name) {
      e.integrity = c.i;
      found = true;
    }
  if (!found) fail(o.at("integrity"), "null, hmac-sha1-96, hmac-sha256-128, ...");
  if (esp::is_aead(e.cipher) && e.integrity != esp::Integrity::null)
    fail(o.at("integrity"), "AES-GCM has its own ICV: integrity must be null");
  const bool salted = esp::is_aead(e.cipher) || e.cipher == esp::Cipher::aes_ctr;
  const std::size_t key_octets =
      e.cipher == esp::Cipher::null ? 0 : static_cast<std::size_t>(bits / 8) + (salted ? 4 : 0);
  e.enc_key = o.has("encryption_key")
                  ? parse_hex(o.str("encryption_key", ""), o.at("encryption_key"))
                  : default_key(key_octets, 0x31);
  if (!esp::key_size_ok(e.cipher, e.enc_key.size()))
    fail(o.at("encryption_key"),
         std::to_string(e.enc_key.size()) + " octets: not a key for " + enc);
  const std::size_t auth_octets = e.integrity == esp::Integrity::null              ? 0
                                  : e.integrity == esp::Integrity::hmac_sha1_96    ? 20
                                  : e.integrity == esp::Integrity::hmac_md5_96     ? 16
                                  : e.integrity == esp::Integrity::hmac_sha384_192 ? 48
                                  : e.integrity == esp::Integrity::hmac_sha512_256 ? 64
                                                                                   : 32;
  e.auth_key = o.has("integrity_key") ? parse_hex(o.str("integrity_key", ""), o.at("integrity_key"))
                                      : default_key(auth_octets, 0x5a);
  if (o.has("spi")) {
    const json& v = o.get("spi");
    if (!v.is_array() || v.size() != 2) fail(o.at("spi"), "expected [client SPI, server SPI]");
    e.spi_client = static_cast<std::uint32_t>(Obj::to_u64(v[0], o.at("spi") + "[0]", kU32));
    e.spi_server = static_cast<std::uint32_t>(Obj::to_u64(v[1], o.at("spi") + "[1]", kU32));
    if (e.spi_client < 256 || e.spi_server < 256 || e.spi_client == e.spi_server)
      fail(o.at("spi"), "two different SPIs of at least 256 (RFC 4303 §2.1)");
  }
  e.esn = o.boolean("esn", false);
  e.first_seq = o.u64("first_seq", 1, e.esn ? ~std::uint64_t{0} >> 1 : kU32);
  if (e.first_seq == 0) fail(o.at("first_seq"), "sequence numbers start at 1");
  e.udp_encap = o.boolean("udp_encap", false);
  e.replay_window = static_cast<std::uint32_t>(o.u64("replay_window", 64, 4096));
  if (o.has("tunnel")) {
    const json& v = o.get("tunnel");
    if (!v.is_array() || v.size() != 2 || !v[0].is_string() || !v[1].is_string())
      fail(o.at("tunnel"), "expected [client gateway, server gateway] addresses");
    e.tunnel_client = net::Address::parse(v[0].get<std::string>());
    e.tunnel_server = net::Address::parse(v[1].get<std::string>());
    if (!e.tunnel_client || !e.tunnel_server || e.tunnel_client->v6 != e.tunnel_server->v6)
      fail(o.at("tunnel"), "two addresses of one family");
  }
  if (o.has("connections")) {
    const json& v = o.get("connections");
    if (!v.is_array()) fail(o.at("connections"), "expected an array of connection indexes");
    for (std::size_t i = 0; i < v.size(); ++i) {
      const auto c = Obj::to_u64(v[i], o.at("connections"), connections ? connections - 1 : 0);
      e.connections.push_back(static_cast<int>(c));
    }
  }
  if (o.has("faults")) {
    const json& v = o.get("faults");
    if (!v.is_array()) fail(o.at("faults"), "expected an array");
    for (std::size_t i = 0; i < v.size(); ++i) {
      Obj f(v[i], o.at("faults") + "[" + std::to_string(i) + "]");
      EspFault x;
      x.where = f.path();
      const std::string kind = f.str("kind", "");
      if (kind == "replay")
        x.kind = EspFault::Kind::replay;
      else if (kind == "icv")
        x.kind = EspFault::Kind::icv;
      else if (kind == "bad_padding")
        x.kind = EspFault::Kind::bad_padding;
      else
        fail(f.at("kind"), "replay, icv or bad_padding");
      x.frame = f.u64("frame", 0, 1u << 24);
      if (x.frame == 0) fail(f.at("frame"), "a frame number (1-based)");
      x.after = f.u64("after", 1, 1u << 20);
      f.finish();
      e.faults.push_back(x);
    }
  }
  e.require_esp = o.boolean("require_esp", false);
  e.keys_given = o.boolean("keys_given", true);
  const std::string policy = o.str("policy", "integrity");
  if (policy != "integrity" && policy != "confidentiality")
    fail(o.at("policy"), "integrity or confidentiality");
  e.require_confidentiality = policy == "confidentiality";
  o.finish();
  return e;
}

// Deterministic fill patterns, so regenerated samples are byte-identical.
Bytes fill_pattern(const std::string& pattern, std::uint64_t size, std::uint64_t seed,
                   const std::string& path) {
  Bytes out(size);
  if (pattern == "counter") {
    for (std::uint64_t i = 0; i < size; ++i)
      out[i] = static_cast<std::uint8_t>(seed + i);
  } else if (pattern == "zero") {
  } else if (pattern == "random") {
    std::uint64_t x = seed * 0x9E3779B97F4A7C15ULL + 0x2545F4914F6CDD1DULL;
    for (std::uint64_t i = 0; i < size; ++i) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      out[i] = static_cast<std::uint8_t>(x >> 24);
    }
  } else if (pattern.rfind("byte:", 0) == 0) {
    const std::uint64_t b = Obj::to_u64(json(pattern.substr(5)), path, kU8);
    for (auto& o : out)
      o = static_cast<std::uint8_t>(b);
  } else {
    fail(path, "unknown pattern \"" + pattern + "\" (counter, zero, random, byte:N)");
  }
  return out;
}

// Payload keys: "text" | "hex" | "size" with "pattern" (default counter) and "seed".
// `required` false: absent keys give std::nullopt.
std::optional<Bytes> parse_payload(Obj& o, std::uint64_t seed_default) {
  int forms = o.has("text") + o.has("hex");
  const bool sized = o.has("size");
  if (forms > 1) fail(o.path(), "give at most one of \"text\" and \"hex\"");
  const std::string pattern = o.str("pattern", "counter");
  const std::uint64_t seed = o.u64("seed", seed_default);
  if (o.has("text")) {
    if (sized) fail(o.path(), "\"size\" conflicts with \"text\"");
    const std::string text = o.str("text", "");
    return Bytes(text.begin(), text.end());
  }
  if (o.has("hex")) {
    if (sized) fail(o.path(), "\"size\" conflicts with \"hex\"");
    return parse_hex(o.str("hex", ""), o.at("hex"));
  }
  if (sized) return fill_pattern(pattern, o.u64("size", 0, kMaxPayload), seed, o.at("pattern"));
  return std::nullopt;
}

Bytes parse_private_data(const json& v, const std::string& path) {
  if (v.is_string()) {
    const std::string text = v.get<std::string>();
    return Bytes(text.begin(), text.end());
  }
  Obj o(v, path);
  auto b = parse_payload(o, 0);
  o.finish();
  if (!b) fail(path, "expected \"text\", \"hex\" or \"size\"");
  return *b;
}

net::Endpoint parse_endpoint(Obj& o, std::uint16_t& mss, std::uint32_t& isn,
                             const std::string& default_ip, std::uint16_t default_port) {
  net::Endpoint e;
  const std::string ip = o.str("ip", default_ip);
  auto addr = net::Address::parse(ip);
  if (!addr) fail(o.at("ip"), "\"" + ip + "\" is not an IPv4 or IPv6 address");
  e.addr = *addr;
  e.port = static_cast<std::uint16_t>(o.u64("port", default_port, kU16));
  if (e.port == 0) fail(o.at("port"), "port 0 is not usable");
  mss = static_cast<std::uint16_t>(o.u64("mss", mss, kU16));
  if (mss < 64) fail(o.at("mss"), "MSS below 64 cannot carry an FPDU");
  isn = static_cast<std::uint32_t>(o.u64("isn", isn, kU32));
  o.finish();
  return e;
}

ConnectionSpec parse_connection(const json& j, const std::string& path, std::size_t index) {
  Obj o(j, path);
  ConnectionSpec c;
  c.client_isn = 0x1000 + static_cast<std::uint32_t>(index) * 0x100000;
  c.server_isn = 0x80000000u + static_cast<std::uint32_t>(index) * 0x100000;
  {
    const json ej = o.has("client") ? o.get("client") : json::object();
    Obj e(ej, o.at("client"));
    c.client = parse_endpoint(e, c.client_mss, c.client_isn, "10.0.0.1",
                              static_cast<std::uint16_t>(40000 + index));
  }
  {
    const json ej = o.has("server") ? o.get("server") : json::object();
    Obj e(ej, o.at("server"));
    c.server = parse_endpoint(e, c.server_mss, c.server_isn, "10.0.0.2", 7174);
  }
  if (c.client.addr.v6 != c.server.addr.v6) fail(path, "client and server mix IPv4 and IPv6");
  if (o.has("mpa")) {
    Obj m(o.get("mpa"), o.at("mpa"));
    c.request_revision = static_cast<std::uint8_t>(m.u64("revision", 2, kU8));
    c.reply_revision = static_cast<std::uint8_t>(m.u64("reply_revision", c.request_revision, kU8));
    c.enhanced = m.boolean("enhanced", c.request_revision == 2);
    if (c.enhanced && c.request_revision != 2)
      fail(m.at("enhanced"), "the RFC 6581 enhanced word needs revision 2");
    c.peer_to_peer = m.boolean("p2p", false);
    c.rtr = m.str("rtr", "");
    if (!c.rtr.empty() && c.rtr != "write" && c.rtr != "read" && c.rtr != "send")
      fail(m.at("rtr"), "expected \"write\", \"read\" or \"send\"");
    if (!c.rtr.empty() && !c.enhanced) fail(m.at("rtr"), "an RTR needs the enhanced word");
    c.client_ird = static_cast<std::uint16_t>(m.u64("client_ird", 16, 0x3FFF));
    c.client_ord = static_cast<std::uint16_t>(m.u64("client_ord", 16, 0x3FFF));
    c.server_ird = static_cast<std::uint16_t>(m.u64("server_ird", 16, 0x3FFF));
    c.server_ord = static_cast<std::uint16_t>(m.u64("server_ord", 16, 0x3FFF));
    const bool crc = m.boolean("crc", false);
    c.client_crc = m.boolean("client_crc", crc);
    c.server_crc = m.boolean("server_crc", crc || c.client_crc);
    c.client_requests_markers = m.boolean("client_requests_markers", false);
    c.server_requests_markers = m.boolean("server_requests_markers", false);
    c.client_reserved_flags = static_cast<std::uint8_t>(m.u64("client_reserved_flags", 0, 0x0F));
    c.server_reserved_flags = static_cast<std::uint8_t>(m.u64("server_reserved_flags", 0, 0x0F));
    if (m.has("client_private_data"))
      c.client_private_data =
          parse_private_data(m.get("client_private_data"), m.at("client_private_data"));
    if (m.has("server_private_data"))
      c.server_private_data =
          parse_private_data(m.get("server_private_data"), m.at("server_private_data"));
    c.reject = m.boolean("reject", false);
    m.finish();
  }
  if (o.has("segment_size")) {
    c.segment_size = static_cast<std::uint32_t>(o.u64("segment_size", 0, 65535 - 18));
    if (*c.segment_size == 0) fail(o.at("segment_size"), "must be at least 1");
  }
  if (o.has("tcp_segment_size")) {
    c.tcp_segment_size = static_cast<std::uint32_t>(o.u64("tcp_segment_size", 0, 65000));
    if (*c.tcp_segment_size == 0) fail(o.at("tcp_segment_size"), "must be at least 1");
  }
  c.fpdus_per_segment = static_cast<std::uint32_t>(o.u64("fpdus_per_segment", 0, 1000));
  c.fin = o.boolean("fin", true);
  if (o.has("vlan")) c.vlan = static_cast<std::uint16_t>(o.u64("vlan", 0, 4095));
  if (o.has("llp")) {
    c.llp = o.str("llp", "mpa");
    if (*c.llp != "mpa" && *c.llp != "sctp") fail(o.at("llp"), "expected \"mpa\" or \"sctp\"");
  }
  if (o.has("sctp")) {
    Obj x(o.get("sctp"), o.at("sctp"));
    c.sctp.adaptation = x.boolean("adaptation", true);
    if (x.has("initiate_function_code"))
      c.sctp.initiate_function_code =
          static_cast<std::uint16_t>(x.u64("initiate_function_code", 0, kU16));
    c.sctp.initiate_fragments = static_cast<std::uint32_t>(x.u64("initiate_fragments", 1, 64));
    if (c.sctp.initiate_fragments == 0) fail(x.at("initiate_fragments"), "must be at least 1");
    c.sctp.terminate = x.boolean("terminate", true);
    c.sctp.terminate_private_data =
        static_cast<std::uint32_t>(x.u64("terminate_private_data", 0, 1024));
    c.sctp.early = x.str("early", "");
    if (!c.sctp.early.empty() && c.sctp.early != "unacked" && c.sctp.early != "after_sack")
      fail(x.at("early"), "expected \"unacked\" or \"after_sack\"");
    x.finish();
  }
  o.finish();
  return c;
}

// What "llp": "sctp" cannot carry is refused here, by the JSON path that asks for it.
SctpSpec parse_sctp(const Scenario& s, Obj& o) {
  SctpSpec sp;
  if (o.has("sctp")) {
    Obj x(o.get("sctp"), o.at("sctp"));
    sp.over_udp = x.boolean("udp", false);
    sp.stream_id = static_cast<std::uint16_t>(x.u64("stream", 1, kU16));
    x.finish();
  }
  if (s.esp) fail(o.at("llp"), "\"llp\": \"sctp\" with \"esp\" is not supported");
  if (!s.tcp_faults.empty()) fail(o.at("tcp_faults"), "TCP faults need \"llp\": \"mpa\"");
  for (std::size_t i = 0; i < s.connections.size(); ++i) {
    const ConnectionSpec& c = s.connections[i];
    const std::string at = o.at("connections") + "[" + std::to_string(i) + "]";
    if (!c.over_sctp) continue;
    if (c.client_crc || c.server_crc || c.client_requests_markers || c.server_requests_markers ||
        c.client_reserved_flags || c.server_reserved_flags || c.request_revision != 2 ||
        c.reply_revision != 2 || c.tcp_segment_size || c.vlan)
      fail(at, "MPA framing, TCP or VLAN options need \"llp\": \"mpa\"");
  }
  for (const OpSpec& op : s.ops) {
    if (!s.connections[op.connection].over_sctp) continue;
    if (!op.tcp_faults.empty()) fail(op.where, "TCP faults need \"llp\": \"mpa\"");
    if (op.fault.corrupt_crc || op.fault.corrupt_marker || op.fault.ulpdu_length)
      fail(op.where, "MPA faults (CRC, markers, ULPDU_Length) need \"llp\": \"mpa\"");
  }
  return sp;
}

TcpFault parse_tcp_fault(const json& j, const std::string& path, std::optional<int> op) {
  Obj o(j, path);
  TcpFault f;
  f.where = path;
  const std::string kind = o.str("kind", "");
  if (kind == "drop") {
    f.kind = TcpFaultKind::drop;
  } else if (kind == "duplicate") {
    f.kind = TcpFaultKind::duplicate;
  } else if (kind == "reorder") {
    f.kind = TcpFaultKind::reorder;
  } else if (kind == "conflict") {
    f.kind = TcpFaultKind::conflict;
  } else if (kind == "receiver_drop") {
    f.kind = TcpFaultKind::receiver_drop;
  } else {
    fail(o.at("kind"),
         "expected \"drop\", \"duplicate\", \"reorder\", \"conflict\" or \"receiver_drop\"");
  }
  if (op) {
    f.op = op;
    f.op_segment = static_cast<int>(o.u64("segment", 0, 1u << 20));
  } else if (o.has("op")) {
    f.op = static_cast<int>(o.u64("op", 0, 1u << 20));
    f.op_segment = static_cast<int>(o.u64("segment", 0, 1u << 20));
  } else if (o.has("index")) {
    f.index = static_cast<int>(o.u64("index", 0, 1u << 24));
  } else {
    fail(path, "give \"op\" (with optional \"segment\") or \"index\"");
  }
  f.after = static_cast<int>(o.u64("after", 2, 1000));
  o.finish();
  return f;
}

OpFault parse_op_fault(const json& j, const std::string& path) {
  Obj o(j, path);
  OpFault f;
  if (o.has("segment")) {
    const json& s = o.get("segment");
    if (s.is_string() && s.get<std::string>() == "last") {
      f.segment = -1;
    } else {
      f.segment = static_cast<int>(Obj::to_u64(s, o.at("segment"), 1u << 20));
    }
  }
  f.corrupt_crc = o.boolean("corrupt_crc", false);
  f.corrupt_marker = o.boolean("corrupt_marker", false);
  f.ddp_ssn = o.str("ddp_ssn", "");
  if (!f.ddp_ssn.empty() && f.ddp_ssn != "skip" && f.ddp_ssn != "reuse")
    fail(o.at("ddp_ssn"), "expected \"skip\" or \"reuse\"");
  f.ordered = o.boolean("ordered", false);
  f.fragments = static_cast<std::uint32_t>(o.u64("fragments", 1, 64));
  if (f.fragments == 0) fail(o.at("fragments"), "must be at least 1");
  f.reverse_tsn = o.boolean("reverse_tsn", false);
  f.bad_checksum = o.boolean("bad_checksum", false);
  f.lost = o.boolean("lost", false);
  if (o.has("ppid")) f.ppid = static_cast<std::uint32_t>(o.u64("ppid", 0, kU32));
  if (o.has("ulpdu_length"))
    f.ulpdu_length = static_cast<std::uint16_t>(o.u64("ulpdu_length", 0, kU16));
  if (o.has("ddp_version")) f.ddp_version = static_cast<std::uint8_t>(o.u64("ddp_version", 0, 3));
  if (o.has("ddp_reserved"))
    f.ddp_reserved = static_cast<std::uint8_t>(o.u64("ddp_reserved", 0, 0x0F));
  if (o.has("rdmap_version"))
    f.rdmap_version = static_cast<std::uint8_t>(o.u64("rdmap_version", 0, 3));
  if (o.has("opcode")) f.opcode = static_cast<std::uint8_t>(o.u64("opcode", 0, 0x0F));
  if (o.has("qn")) f.qn = static_cast<std::uint32_t>(o.u64("qn", 0, kU32));
  f.msn = o.str("msn", "");
  if (!f.msn.empty() && f.msn != "skip" && f.msn != "duplicate")
    fail(o.at("msn"), "expected \"skip\" or \"duplicate\"");
  f.mo_delta = o.i64("mo_delta", 0);
  f.to_delta = o.i64("to_delta", 0);
  f.segment_after_last = o.boolean("segment_after_last", false);
  f.read_request_extra = static_cast<std::uint32_t>(o.u64("read_request_extra", 0, 4096));
  f.tagged = o.boolean("tagged", false);
  if (o.has("response_sink_stag"))
    f.response_sink_stag = static_cast<std::uint32_t>(o.u64("response_sink_stag", 0, kU32));
  f.response_size_delta = o.i64("response_size_delta", 0);
  if (o.has("response_request_id"))
    f.response_request_id = static_cast<std::uint32_t>(o.u64("response_request_id", 0, kU32));
  o.finish();
  return f;
}

std::uint8_t parse_term_field(Obj& o, const std::string& key, std::uint64_t max) {
  if (!o.has(key)) fail(o.path(), "missing \"" + key + "\"");
  const json& v = o.get(key);
  if (key == "layer" && v.is_string()) {
    const std::string s = v.get<std::string>();
    if (s == "rdmap") return 0;
    if (s == "ddp") return 1;
    if (s == "llp" || s == "mpa") return 2;
    fail(o.at(key), "expected rdmap, ddp, llp or a number");
  }
  return static_cast<std::uint8_t>(Obj::to_u64(v, o.at(key), max));
}

OpSpec parse_op(const json& j, const std::string& path, int index, std::size_t connections) {
  Obj o(j, path);
  OpSpec op;
  op.where = path;
  const std::string type = o.str("op", "");
  op.label = o.str("label", "");
  op.connection = static_cast<int>(o.u64("connection", 0, 1u << 16));
  if (static_cast<std::size_t>(op.connection) >= connections)
    fail(o.at("connection"), "no connection " + std::to_string(op.connection));
  const std::string from = o.str("from", "");
  if (from == "client") {
    op.side = Side::client;
  } else if (from == "server") {
    op.side = Side::server;
  } else {
    fail(o.at("from"), "expected \"client\" or \"server\"");
  }
  const std::uint64_t seed = static_cast<std::uint64_t>(index) * 37 + 1;
  auto payload = [&](bool required) {
    auto b = parse_payload(o, seed);
    if (!b && required) fail(path, "give the payload as \"text\", \"hex\" or \"size\"");
    return b ? *b : Bytes{};
  };
  if (type == "send") {
    op.type = OpType::send;
    op.data = payload(false);
    op.solicited = o.boolean("solicited", false);
    if (o.has("invalidate_stag"))
      op.invalidate_stag = static_cast<std::uint32_t>(o.u64("invalidate_stag", 0, kU32));
  } else if (type == "write" || type == "read_response") {
    op.type = type == "write" ? OpType::write : OpType::read_response;
    op.stag = static_cast<std::uint32_t>(o.u64("stag", 0, kU32));
    op.to = o.u64("to", 0);
    op.data = payload(false);
  } else if (type == "read") {
    op.type = OpType::read;
    op.read.sink_stag = static_cast<std::uint32_t>(o.u64("sink_stag", 0, kU32));
    op.read.sink_to = o.u64("sink_to", 0);
    op.read.source_stag = static_cast<std::uint32_t>(o.u64("source_stag", 0, kU32));
    op.read.source_to = o.u64("source_to", 0);
    op.data = payload(true);
    op.read.size = static_cast<std::uint32_t>(op.data.size());
    op.count = static_cast<int>(o.u64("count", 1, 64));
    if (op.count < 1) fail(o.at("count"), "must be at least 1");
    op.respond = o.boolean("respond", true);
  } else if (type == "atomic") {
    op.type = OpType::atomic;
    const std::string kind = o.str("kind", "fetch_add");
    if (kind == "fetch_add") {
      op.atomic.atomic_opcode = static_cast<std::uint8_t>(wire::AtomicOp::fetch_add);
    } else if (kind == "cmp_swap") {
      op.atomic.atomic_opcode = static_cast<std::uint8_t>(wire::AtomicOp::compare_swap);
    } else {
      fail(o.at("kind"), "expected \"fetch_add\" or \"cmp_swap\"");
    }
    op.atomic.request_id = static_cast<std::uint32_t>(o.u64("request_id", 1, kU32));
    op.atomic.remote_stag = static_cast<std::uint32_t>(o.u64("stag", 0, kU32));
    op.atomic.remote_to = o.u64("to", 0);
    op.atomic.add_swap_data = o.u64("add_swap_data", 1);
    op.atomic.add_swap_mask = o.u64("add_swap_mask", 0);
    op.atomic.compare_data = o.u64("compare_data", 0);
    op.atomic.compare_mask = o.u64("compare_mask", 0);
    op.original_value = o.u64("original_value", 0);
  } else if (type == "atomic_response") {
    op.type = OpType::atomic_response;
    op.request_id = static_cast<std::uint32_t>(o.u64("request_id", 1, kU32));
    op.original_value = o.u64("original_value", 0);
  } else if (type == "immediate") {
    op.type = OpType::immediate;
    op.immediate = o.u64("data", 0);
    op.solicited = o.boolean("solicited", false);
  } else if (type == "terminate") {
    op.type = OpType::terminate;
    op.term.layer = parse_term_field(o, "layer", 0x0F);
    op.term.etype = parse_term_field(o, "etype", 0x0F);
    op.term.code = parse_term_field(o, "code", kU8);
    op.term.d = o.boolean("include_ddp_header", false);
    op.term.r = o.boolean("include_rdmap_header", false);
    op.term.m = op.term.d;
    op.siw_layout = o.boolean("siw_layout", false);
  } else if (type == "advertise_rping") {
    op.type = OpType::advertise_rping;
    op.adv_base = o.u64("buf", 0);
    op.adv_stag = static_cast<std::uint32_t>(o.u64("rkey", 0, kU32));
    op.adv_length = static_cast<std::uint32_t>(o.u64("size", 0, kU32));
  } else {
    fail(o.at("op"),
         "unknown operation \"" + type +
             "\" (send, write, read, read_response, atomic, atomic_response, immediate, "
             "terminate, advertise_rping)");
  }
  if (o.has("segment_size")) {
    op.segment_size = static_cast<std::uint32_t>(o.u64("segment_size", 0, 65535 - 18));
    if (*op.segment_size == 0) fail(o.at("segment_size"), "must be at least 1");
  }
  op.hold = o.boolean("hold", false);
  if (o.has("fault")) op.fault = parse_op_fault(o.get("fault"), o.at("fault"));
  if (o.has("tcp_fault")) {
    const json& t = o.get("tcp_fault");
    if (t.is_array()) {
      for (std::size_t i = 0; i < t.size(); ++i)
        op.tcp_faults.push_back(
            parse_tcp_fault(t[i], o.at("tcp_fault") + "[" + std::to_string(i) + "]", index));
    } else {
      op.tcp_faults.push_back(parse_tcp_fault(t, o.at("tcp_fault"), index));
    }
  }
  o.finish();
  return op;
}

void parse(const json& j, Scenario& s) {
  Obj o(j, "scenario");
  s.name = o.str("name", "scenario");
  s.description = o.str("description", "");
  if (o.has("time")) {
    Obj t(o.get("time"), o.at("time"));
    s.start_ns =
        static_cast<std::int64_t>(t.u64("start_s", 1700000000, 4000000000ULL)) * 1000000000LL;
    s.step_ns = static_cast<std::int64_t>(t.u64("step_us", 20, 10000000)) * 1000;
    t.finish();
  }
  if (!o.has("connections")) {
    s.connections.push_back(parse_connection(json::object(), "scenario.connections[0]", 0));
  } else {
    const json& c = o.get("connections");
    if (!c.is_array() || c.empty()) fail(o.at("connections"), "expected a non-empty array");
    for (std::size_t i = 0; i < c.size(); ++i)
      s.connections.push_back(
          parse_connection(c[i], o.at("connections") + "[" + std::to_string(i) + "]", i));
  }
  if (o.has("regions")) {
    const json& r = o.get("regions");
    if (!r.is_array()) fail(o.at("regions"), "expected an array");
    for (std::size_t i = 0; i < r.size(); ++i) {
      Obj e(r[i], o.at("regions") + "[" + std::to_string(i) + "]");
      RegionFileEntry re;
      re.stag = static_cast<std::uint32_t>(e.u64("stag", 0, kU32));
      re.base = e.u64("base", 0);
      re.length = e.u64("length", 0);
      if (e.has("sink")) {
        auto a = net::Address::parse(e.str("sink", ""));
        if (!a) fail(e.at("sink"), "not an IP address");
        re.sink = *a;
      }
      e.finish();
      s.regions.push_back(re);
    }
  }
  if (o.has("operations")) {
    const json& ops = o.get("operations");
    if (!ops.is_array()) fail(o.at("operations"), "expected an array");
    for (std::size_t i = 0; i < ops.size(); ++i)
      s.ops.push_back(parse_op(ops[i], o.at("operations") + "[" + std::to_string(i) + "]",
                               static_cast<int>(i), s.connections.size()));
  }
  if (o.has("tcp_faults")) {
    const json& t = o.get("tcp_faults");
    if (!t.is_array()) fail(o.at("tcp_faults"), "expected an array");
    for (std::size_t i = 0; i < t.size(); ++i)
      s.tcp_faults.push_back(
          parse_tcp_fault(t[i], o.at("tcp_faults") + "[" + std::to_string(i) + "]", std::nullopt));
  }
  for (const auto& f : s.tcp_faults)
    if (f.op && static_cast<std::size_t>(*f.op) >= s.ops.size())
      fail(f.where, "no operation " + std::to_string(*f.op));
  if (o.has("expect")) {
    const json& e = o.get("expect");
    if (!e.is_array()) fail(o.at("expect"), "expected an array");
    for (std::size_t i = 0; i < e.size(); ++i) {
      Obj x(e[i], o.at("expect") + "[" + std::to_string(i) + "]");
      ManualExpectation m;
      m.code = x.str("code", "");
      m.op = static_cast<int>(x.u64("op", 0, 1u << 20));
      if (static_cast<std::size_t>(m.op) >= s.ops.size())
        fail(x.at("op"), "no operation " + std::to_string(m.op));
      m.segment = static_cast<int>(x.u64("segment", 0, 1u << 20));
      m.consequence = x.boolean("consequence", false);
      x.finish();
      s.expect.push_back(m);
    }
  }
  if (o.has("exhaustive")) s.exhaustive = o.boolean("exhaustive", true);
  if (o.has("esp")) s.esp = parse_esp(o.get("esp"), o.at("esp"), s.connections.size());
  // What makes a receiver drop a packet the capture holds is its ESP packet failing the ICV.
  if (!s.esp) {
    std::vector<const TcpFault*> all;
    for (const auto& f : s.tcp_faults)
      all.push_back(&f);
    for (const auto& op : s.ops)
      for (const auto& f : op.tcp_faults)
        all.push_back(&f);
    for (const TcpFault* f : all)
      if (f->kind == TcpFaultKind::receiver_drop)
        fail(f->where, "receiver_drop needs an esp block (the packet fails its ICV)");
  }
  const std::string llp = o.str("llp", "mpa");
  if (llp != "mpa" && llp != "sctp") fail(o.at("llp"), "expected \"mpa\" or \"sctp\"");
  bool any_sctp = false;
  for (auto& c : s.connections) {
    c.over_sctp = c.llp.value_or(llp) == "sctp";
    any_sctp = any_sctp || c.over_sctp;
  }
  if (any_sctp) s.sctp = parse_sctp(s, o);
  if (o.has("sctp") && !s.sctp) fail(o.at("sctp"), "needs \"llp\": \"sctp\"");
  {
    for (std::size_t i = 0; i < s.connections.size(); ++i) {
      if (s.connections[i].over_sctp) continue;
      const auto& x = s.connections[i].sctp;
      if (!x.adaptation || x.initiate_function_code || x.initiate_fragments != 1 || !x.terminate ||
          x.terminate_private_data || !x.early.empty())
        fail(o.at("connections") + "[" + std::to_string(i) + "].sctp", "needs \"llp\": \"sctp\"");
    }
    for (const OpSpec& op : s.ops)
      if (!s.connections[op.connection].over_sctp &&
          (!op.fault.ddp_ssn.empty() || op.fault.ordered || op.fault.fragments != 1 ||
           op.fault.reverse_tsn || op.fault.bad_checksum || op.fault.lost || op.fault.ppid))
        fail(op.where + ".fault", "SCTP faults need \"llp\": \"sctp\"");
  }
  o.finish();
}

}  // namespace

bool OpFault::any() const {
  return corrupt_crc || corrupt_marker || ulpdu_length || ddp_version || ddp_reserved ||
         rdmap_version || opcode || qn || !msn.empty() || mo_delta != 0 || to_delta != 0 ||
         segment_after_last || read_request_extra != 0 || tagged || response_sink_stag ||
         response_size_delta != 0 || response_request_id || !ddp_ssn.empty() || ordered ||
         fragments != 1 || reverse_tsn || bad_checksum || lost || ppid;
}

bool parse_scenario(const json& j, Scenario& out, std::string& error) {
  try {
    Scenario s;
    parse(j, s);
    out = std::move(s);
    return true;
  } catch (const ScenarioError& e) {
    error = e.what();
  } catch (const json::exception& e) {
    error = std::string("scenario: ") + e.what();
  }
  return false;
}

}  // namespace ddpscope::synth
