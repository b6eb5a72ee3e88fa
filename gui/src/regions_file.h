// SPDX-License-Identifier: GPL-2.0-or-later
// The analyzer's --regions file (a JSON array of {"stag", "base", "length", "sink"}; numbers
// as JSON numbers or "0x…"/decimal strings), read with Qt's JSON so the GUI stays off the
// analyzer's libraries. A capture's sidecar NAME.regions.json is picked up automatically.
#pragma once

#include <QString>
#include <vector>

#include "ddpscope/shadow.h"

namespace ddpscope::gui {

bool loadRegionsFile(const QString& path, std::vector<RegionSpec>& out, QString* error);
// "dir/NAME.regions.json" for "dir/NAME.pcap", when it exists; else empty.
QString sidecarRegionsFile(const QString& capture);

}  // namespace ddpscope::gui
