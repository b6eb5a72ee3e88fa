// SPDX-License-Identifier: GPL-2.0-or-later
// File › Capture: a live capture (capture::LiveSession, the engine `ddpscope live` runs) fed
// to core's Analyzer on the worker thread, publishing snapshots as a file analysis does.
#pragma once

#include <QList>
#include <QMetaType>
#include <QString>
#include <optional>

#include "ddpscope/analysis/regions_file.h"
#include "snapshot.h"

namespace ddpscope::gui {

// What the capture dialog (or --capture on the command line) asks for.
struct CaptureRequest {
  QString interface = QStringLiteral("lo");
  QString filter;     // BPF; empty: everything
  QString writePath;  // savefile; empty: not saved
  // Mid-stream hints, as `ddpscope analyze --port`: streams on these ports are analysed
  // without an MPA handshake, with CRC and markers as given (CRC: none finds it, as
  // `--mid-stream-crc auto`).
  QList<quint16> ports;
  std::optional<bool> crc;
  bool markers = false;
  // As for a file (`--stream IP:PORT`, `--regions FILE`): streams with this endpoint analysed
  // without a handshake (CRC as `crc`), and a regions file (loaded by the worker; a bad file
  // stops the capture before it starts).
  std::vector<net::Endpoint> streams;
  QString regionsPath;
  std::optional<SinkProfile> sinkProfile;  // as FileHints::sink_profile
};

// The filter's syntax for Ethernet-framed interfaces (Linux's "lo" included); empty when valid.
QString filterError(const QString& filter);

// Captures until *cb.cancel is set (or the capture fails), feeding the analysis; then
// finishes it as at the end of a file. Intermediate snapshots go to cb.snapshot (only when
// frames arrived), counters to cb.live_status. The final snapshot has `error` set when the
// capture could not start (frames_read 0), failed midway, or its savefile could not be written.
// `regions`: the request's regions file, loaded (its protection domains go to the Analyzer too).
SnapshotPtr analyze_live(const CaptureRequest& request, const AnalysisCallbacks& cb = {},
                         const std::optional<RegionsFile>& regions = std::nullopt);

}  // namespace ddpscope::gui

Q_DECLARE_METATYPE(ddpscope::gui::CaptureRequest)
Q_DECLARE_METATYPE(ddpscope::gui::LiveStatus)
