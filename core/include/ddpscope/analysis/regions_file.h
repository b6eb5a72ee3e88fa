// SPDX-License-Identifier: GPL-2.0-or-later
// The regions file every host reads (CLI --regions, plugin preference, GUI sidecar): a JSON
// array of regions, or an object {"regions": [...], "protection_domains": [...]}.
//   region: {"stag": "0x…", "base": "0x…", "length": N,           (required)
//            "sink": "IP", "origin": "…",                          (optional)
//            "pd": N, "access": ["local_write", "remote_read", "remote_write", "remote_atomic"],
//            "valid": bool, "invalidatable": bool}                 (optional, RFC 5040 §5.3)
//   protection domain: {"endpoint": "IP:PORT" | "[IPv6]:PORT" | "IP", "pd": N}
// Numbers are JSON numbers or "0x…"/decimal strings. A key left out is a fact left unknown
// (never a failed check), except valid and invalidatable, which default to true.
#pragma once

#include <string>
#include <vector>

#include "ddpscope/ddp/shadow.h"

namespace ddpscope {

struct RegionsFile {
  std::vector<RegionSpec> regions;
  std::vector<ProtectionDomainSpec> protection_domains;
};

// On error `out` is unchanged and `error` names the entry and field at fault.
bool parse_regions_file(const std::string& text, RegionsFile& out, std::string& error);
bool load_regions_file(const std::string& path, RegionsFile& out, std::string& error);
// The regions only (appended to `out`).
bool parse_regions(const std::string& text, std::vector<RegionSpec>& out, std::string& error);
bool load_regions_file(const std::string& path, std::vector<RegionSpec>& out, std::string& error);

}  // namespace ddpscope
