// SPDX-License-Identifier: GPL-2.0-or-later
// Text and colours shared by the views. Names come from core (opcode_info, to_string,
// terminate_error_name); colours are semantic (severity, opcode hue, issue kinds).
#pragma once

#include <QColor>
#include <QString>
#include <cstdint>
#include <optional>

#include "ddpscope/analysis/analyzer.h"
#include "region_geometry.h"

namespace ddpscope::gui {

QString qstr(std::string_view s);
QString endpointText(const net::Endpoint& e);
QString opcodeName(int opcode);  // "RDMA Write"; "-" for -1
QString severityText(Severity s);
QString directionText(const StreamModel& s, int direction);     // "a:1 → b:2"
QString terminateText(const std::optional<TerminateError>& t);  // "1/2/03  DDP / ..."
QString terminateLongText(const TerminateError& t);  // "layer 1, error type 0x2, ... (name)"
QString stagText(std::uint32_t stag);                // 0x0000abcd
QString regionLabel(const ShadowBuffer& buf);        // "STag 0x.. @ 10.0.0.2"
QString bytesText(std::uint64_t n);                  // "1.5 KiB (1536 B)"
// A message as the views name it: its ULP command when a decoder named one ("NVMe Read cid 97
// nsid 1 — Send, 64 B in 1 seg."), else its opcode and size ("Send, 64 B in 1 seg.").
QString messageText(const Model& m, const MessageRecord& r);

// Columns sized to contents measure at most this many rows (Qt's default is 1000): measuring
// thousands of findings or regions stalled the event loop for > 100 ms (bench/gui_load_bench).
inline constexpr int kResizeContentsRows = 200;

QColor severityColor(Severity s);
// A distinct hue per opcode (same everywhere); dark-mode friendly saturation.
QColor opcodeColor(int opcode);
QColor spanColor(SpanKind kind);  // issue colours (warning family); rewritten: teal

}  // namespace ddpscope::gui
