// SPDX-License-Identifier: GPL-2.0-or-later
#include "ddpscope/analysis/regions_file.h"

#include <algorithm>
#include <fstream>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string_view>

#include "ddpscope/ddp/rules.h"

namespace ddpscope {

using nlohmann::json;

namespace {

bool parse_number(const json& v, std::uint64_t& out) {
  try {
    if (v.is_number_unsigned() || v.is_number_integer()) {
      if (v.is_number_integer() && v.get<std::int64_t>() < 0) return false;
      out = v.get<std::uint64_t>();
      return true;
    }
    if (v.is_string()) {
      const std::string s = v.get<std::string>();
      if (s.empty() || s[0] == '-' || s[0] == '+' || s[0] == ' ') return false;
      std::size_t pos = 0;
      out = std::stoull(s, &pos, 0);
      return pos == s.size();
    }
  } catch (...) {
  }
  return false;
}

bool parse_u32(const json& v, std::uint32_t& out) {
  std::uint64_t n = 0;
  if (!parse_number(v, n) || n > 0xFFFFFFFFu) return false;
  out = static_cast<std::uint32_t>(n);
  return true;
}

// The rights a region grants (RFC 5040 §5.3; RFC 7306 for atomics), by name.
bool parse_access(const json& v, std::uint8_t& out, std::string& bad) {
  if (!v.is_array()) return false;
  std::uint8_t a = 0;
  for (const auto& e : v) {
    const std::string name = e.is_string() ? e.get<std::string>() : e.dump();
    if (name == "local_write")
      a |= ddp::access::local_write;
    else if (name == "remote_read")
      a |= ddp::access::remote_read;
    else if (name == "remote_write")
      a |= ddp::access::remote_write;
    else if (name == "remote_atomic")
      a |= ddp::access::remote_atomic;
    else {
      bad = name;
      return false;
    }
  }
  out = a;
  return true;
}

// "IP:PORT", "[IPv6]:PORT", or an address alone (any port).
bool parse_endpoint(const std::string& text, ProtectionDomainSpec& out) {
  if (auto a = net::Address::parse(text)) {
    out.endpoint = net::Endpoint{*a, 0};
    out.any_port = true;
    return true;
  }
  std::string host, port;
  if (!text.empty() && text[0] == '[') {
    const auto close = text.find("]:");
    if (close == std::string::npos) return false;
    host = text.substr(1, close - 1);
    port = text.substr(close + 2);
  } else {
    const auto colon = text.rfind(':');
    if (colon == std::string::npos || text.find(':') != colon) return false;
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
  }
  const auto a = net::Address::parse(host);
  if (!a || port.empty() || port.size() > 5 ||
      port.find_first_not_of("0123456789") != std::string::npos)
    return false;
  const unsigned long p = std::stoul(port);
  if (p == 0 || p > 65535) return false;
  out.endpoint = net::Endpoint{*a, static_cast<std::uint16_t>(p)};
  out.any_port = false;
  return true;
}

// A key the format does not have is an error, not ignored: a typo ("sinkk") would otherwise
// leave the region valid at every host.
bool known_keys(const json& e, std::initializer_list<std::string_view> keys,
                const std::string& where, std::string& error) {
  for (const auto& [key, value] : e.items()) {
    if (std::find(keys.begin(), keys.end(), key) != keys.end()) continue;
    std::string list;
    for (const std::string_view k : keys) {
      if (!list.empty()) list += ", ";
      list += k;
    }
    error = where + "unknown key \"" + key + "\" (known: " + list + ")";
    return false;
  }
  return true;
}

bool parse_region(const json& e, const std::string& where, RegionSpec& r, std::string& error) {
  if (!e.is_object()) {
    error = where + "not an object";
    return false;
  }
  if (!known_keys(
          e, {"stag", "base", "length", "sink", "origin", "pd", "access", "valid", "invalidatable"},
          where, error))
    return false;
  std::uint64_t v = 0;
  if (!e.contains("stag") || !parse_number(e["stag"], v) || v > 0xFFFFFFFFu) {
    error = where + "missing or invalid \"stag\"";
    return false;
  }
  r.stag = static_cast<std::uint32_t>(v);
  if (!e.contains("base") || !parse_number(e["base"], r.base)) {
    error = where + "missing or invalid \"base\"";
    return false;
  }
  if (!e.contains("length") || !parse_number(e["length"], r.length)) {
    error = where + "missing or invalid \"length\" (a number from 0 to 2^64 - 1)";
    return false;
  }
  // The region's last octet is base + length - 1 (RFC 5041 §7.2's bounds): it must exist.
  if (r.length > 0 && r.length - 1 > ~r.base) {
    error =
        where + "base " + e["base"].dump() + " + length " + e["length"].dump() + " runs past 2^64";
    return false;
  }
  if (e.contains("sink")) {
    if (!e["sink"].is_string() || !(r.owner = net::Address::parse(e["sink"].get<std::string>()))) {
      error = where + "invalid \"sink\" address";
      return false;
    }
  }
  r.origin = e.contains("origin") && e["origin"].is_string() ? e["origin"].get<std::string>()
                                                             : std::string("regions file");
  if (e.contains("pd")) {
    std::uint32_t pd = 0;
    if (!parse_u32(e["pd"], pd)) {
      error = where + "invalid \"pd\" (a number up to 2^32 - 1)";
      return false;
    }
    r.pd = pd;
  }
  if (e.contains("access")) {
    std::uint8_t a = 0;
    std::string bad;
    if (!parse_access(e["access"], a, bad)) {
      error = where +
              (bad.empty() ? std::string("\"access\" must be a list of rights")
                           : "unknown access right \"" + bad + "\"") +
              " (local_write, remote_read, remote_write, remote_atomic)";
      return false;
    }
    r.access = a;
  }
  for (const char* key : {"valid", "invalidatable"}) {
    if (!e.contains(key)) continue;
    if (!e[key].is_boolean()) {
      error = where + "\"" + key + "\" must be true or false";
      return false;
    }
    (std::string(key) == "valid" ? r.valid : r.invalidatable) = e[key].get<bool>();
  }
  return true;
}

bool parse_protection_domain(const json& e, const std::string& where, ProtectionDomainSpec& p,
                             std::string& error) {
  if (!e.is_object()) {
    error = where + "not an object";
    return false;
  }
  if (!known_keys(e, {"endpoint", "pd"}, where, error)) return false;
  if (!e.contains("endpoint") || !e["endpoint"].is_string() ||
      !parse_endpoint(e["endpoint"].get<std::string>(), p)) {
    error = where + "missing or invalid \"endpoint\" (IP:PORT, [IPv6]:PORT or IP)";
    return false;
  }
  if (!e.contains("pd") || !parse_u32(e["pd"], p.pd)) {
    error = where + "missing or invalid \"pd\" (a number up to 2^32 - 1)";
    return false;
  }
  return true;
}

bool read_file(const std::string& path, std::string& text, std::string& error) {
  std::ifstream in(path);
  if (!in) {
    error = "cannot read regions file " + path;
    return false;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  text = ss.str();
  return true;
}

}  // namespace

bool parse_regions_file(const std::string& text, RegionsFile& out, std::string& error) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded()) {
    error = "regions file is not valid JSON";
    return false;
  }
  RegionsFile parsed;
  json regions = j;
  if (j.is_object()) {
    if (!known_keys(j, {"regions", "protection_domains"}, "regions file: ", error)) return false;
    if (!j.contains("regions")) {
      error = "regions file object needs a \"regions\" array";
      return false;
    }
    regions = j["regions"];
    if (j.contains("protection_domains")) {
      const json& pds = j["protection_domains"];
      if (!pds.is_array()) {
        error = "\"protection_domains\" must be an array of {endpoint, pd}";
        return false;
      }
      std::size_t i = 0;
      for (const auto& e : pds) {
        ProtectionDomainSpec p;
        if (!parse_protection_domain(e, "protection domain " + std::to_string(i++) + ": ", p,
                                     error))
          return false;
        parsed.protection_domains.push_back(p);
      }
    }
  }
  if (!regions.is_array()) {
    error = "regions file must be a JSON array of {stag, base, length, sink}";
    return false;
  }
  std::size_t i = 0;
  for (const auto& e : regions) {
    RegionSpec r;
    const std::string where = "region " + std::to_string(i++) + ": ";
    if (!parse_region(e, where, r, error)) return false;
    // One registration per STag and Data Sink: two would leave which bounds hold to the order
    // of the file. A region without "sink" stands for every host, so it clashes with any.
    for (std::size_t k = 0; k < parsed.regions.size(); ++k) {
      const RegionSpec& o = parsed.regions[k];
      if (o.stag == r.stag && (!o.owner || !r.owner || *o.owner == *r.owner)) {
        error = where + "STag " + e["stag"].dump() + " is already region " + std::to_string(k) +
                "'s" + (r.owner ? " for sink " + r.owner->to_string() : std::string());
        return false;
      }
    }
    parsed.regions.push_back(r);
  }
  out.regions.insert(out.regions.end(), parsed.regions.begin(), parsed.regions.end());
  out.protection_domains.insert(out.protection_domains.end(), parsed.protection_domains.begin(),
                                parsed.protection_domains.end());
  return true;
}

bool load_regions_file(const std::string& path, RegionsFile& out, std::string& error) {
  std::string text;
  if (!read_file(path, text, error)) return false;
  if (!parse_regions_file(text, out, error)) {
    error = path + ": " + error;
    return false;
  }
  return true;
}

bool parse_regions(const std::string& text, std::vector<RegionSpec>& out, std::string& error) {
  RegionsFile f;
  if (!parse_regions_file(text, f, error)) return false;
  out.insert(out.end(), f.regions.begin(), f.regions.end());
  return true;
}

bool load_regions_file(const std::string& path, std::vector<RegionSpec>& out, std::string& error) {
  RegionsFile f;
  if (!load_regions_file(path, f, error)) return false;
  out.insert(out.end(), f.regions.begin(), f.regions.end());
  return true;
}

}  // namespace ddpscope
