// SPDX-License-Identifier: GPL-2.0-or-later
#include "ddpscope/analysis/regions_file.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace ddpscope {

using nlohmann::json;

namespace {
bool parse_number(const json& v, std::uint64_t& out) {
  try {
    if (v.is_number_unsigned() || v.is_number_integer()) {
      out = v.get<std::uint64_t>();
      return true;
    }
    if (v.is_string()) {
      const std::string s = v.get<std::string>();
      std::size_t pos = 0;
      out = std::stoull(s, &pos, 0);
      return pos == s.size();
    }
  } catch (...) {
  }
  return false;
}
}  // namespace

bool parse_regions(const std::string& text, std::vector<RegionSpec>& out, std::string& error) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded()) {
    error = "regions file is not valid JSON";
    return false;
  }
  // Also accepted: {"regions": [...]} (the plugin's preference always took both).
  if (j.is_object() && j.contains("regions")) j = json(j["regions"]);
  if (!j.is_array()) {
    error = "regions file must be a JSON array of {stag, base, length, sink}";
    return false;
  }
  std::vector<RegionSpec> parsed;
  std::size_t i = 0;
  for (const auto& e : j) {
    const std::string where = "region " + std::to_string(i++) + ": ";
    if (!e.is_object()) {
      error = where + "not an object";
      return false;
    }
    RegionSpec r;
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
      error = where + "missing or invalid \"length\"";
      return false;
    }
    if (e.contains("sink")) {
      if (!e["sink"].is_string() ||
          !(r.owner = net::Address::parse(e["sink"].get<std::string>()))) {
        error = where + "invalid \"sink\" address";
        return false;
      }
    }
    r.origin = e.contains("origin") && e["origin"].is_string() ? e["origin"].get<std::string>()
                                                               : std::string("regions file");
    parsed.push_back(r);
  }
  out.insert(out.end(), parsed.begin(), parsed.end());
  return true;
}

bool load_regions_file(const std::string& path, std::vector<RegionSpec>& out, std::string& error) {
  std::ifstream in(path);
  if (!in) {
    error = "cannot read regions file " + path;
    return false;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  if (!parse_regions(ss.str(), out, error)) {
    error = path + ": " + error;
    return false;
  }
  return true;
}

}  // namespace ddpscope
