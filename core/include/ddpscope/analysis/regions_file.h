// SPDX-License-Identifier: GPL-2.0-or-later
// The regions file every host reads (CLI --regions, plugin preference, GUI sidecar): a JSON
// array of {"stag": "0x…", "base": "0x…", "length": N, "sink": "IP", "origin": "…"} (sink and
// origin optional; numbers as JSON numbers or "0x…"/decimal strings), or {"regions": [...]}.
#pragma once

#include <string>
#include <vector>

#include "ddpscope/ddp/shadow.h"

namespace ddpscope {

// On error `out` is unchanged and `error` names the entry and field at fault.
bool parse_regions(const std::string& text, std::vector<RegionSpec>& out, std::string& error);
bool load_regions_file(const std::string& path, std::vector<RegionSpec>& out, std::string& error);

}  // namespace ddpscope
