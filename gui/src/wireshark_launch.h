// SPDX-License-Identifier: GPL-2.0-or-later
// "Open in Wireshark at this frame": where the installed Wireshark is, and the command line
// that opens the capture at a frame with what the user chose here (the regions file, the
// mid-stream ports of a capture) as the ddpscope plugin's preferences (`-o iwarp.mpa.*`) and
// Decode As (`-d tcp.port==P,iwarp.mpa`), so Wireshark analyses it as the GUI did.
#pragma once

#include <QList>
#include <QString>
#include <QStringList>
#include <cstdint>
#include <optional>

#include "ddpscope/findings/sink_profile.h"

namespace ddpscope::gui {

struct WiresharkRequest {
  QString capture;
  std::uint64_t frame = 0;  // 0: none selected
  QString regions_file;     // empty: none
  // Mid-stream hints of the capture (as CaptureRequest): Decode As for each port.
  QList<quint16> ports;
  std::optional<bool> crc;  // none: auto
  bool markers = false;
  // The Data Sink profile the analysis used (Model::sink_profile): -o iwarp.mpa.sink_profile.
  std::optional<SinkProfile> sink_profile;
};

// The arguments after the program name.
QStringList wiresharkArguments(const WiresharkRequest& request);

// The wireshark program: $DDPSCOPE_WIRESHARK when set (empty when that is not an executable),
// else in PATH, else where Debian and a source install put it (/usr/bin, /usr/local/bin);
// empty when none is installed.
QString findWireshark();

}  // namespace ddpscope::gui
