// SPDX-License-Identifier: GPL-2.0-or-later
// The regions file (core's format, ddpscope/analysis/regions_file.h) for the GUI: Qt strings, and a
// capture's sidecar NAME.regions.json picked up automatically.
#pragma once

#include <QString>
#include <vector>

#include "ddpscope/analysis/regions_file.h"

namespace ddpscope::gui {

// Regions and protection domains (the latter go into AnalyzerOptions::protection_domains).
bool loadRegionsFile(const QString& path, RegionsFile& out, QString* error);
// "dir/NAME.regions.json" for "dir/NAME.pcap", when it exists; else empty.
QString sidecarRegionsFile(const QString& capture);

}  // namespace ddpscope::gui
