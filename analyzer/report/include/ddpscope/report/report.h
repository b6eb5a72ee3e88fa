// SPDX-License-Identifier: GPL-2.0-or-later
// Turns core's analysis Model into the analyzer's outputs: the JSON report (schema in the
// README), the human report, the regions file format, and shadow-buffer export.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ddpscope/analysis/analyzer.h"

namespace ddpscope::report {

inline constexpr int kSchemaVersion = 1;

// The JSON report, written as it is made (a finding at a time: memory does not grow with the
// findings), byte for byte what dumping it as one document with dump(2) gives. No newline after.
// With `timing` (`analyze --timing`), a "timing" member (timing_json) and a text section.
void write_json(std::ostream& out, const Model& model, const std::string& capture_name,
                const Timing* timing = nullptr);
void write_text(std::ostream& out, const Model& model, const std::string& capture_name,
                const Timing* timing = nullptr);

// ---- timing (timing_report.cpp) ----
// The report's "timing" object (schema in the README).
nlohmann::json timing_json(const Timing& timing);
// The text report's timing section.
void write_timing_text(std::ostream& out, const Model& model, const Timing& timing);
// `ddpscope timing`: operations by stream (kind and direction), by ULP (operation kind over
// every stream), or placed octets by STag; aligned text or CSV.
enum class TimingBy { stream, ulp, stag };
void write_timing_tables(std::ostream& out, const Model& model, const Timing& timing, TimingBy by,
                         bool csv);
// One finding as the text report's findings list shows it ("  frame N  severity  code stream S
// from -> to: message  [sink would send Terminate ...]"), with its newline; `ddpscope live`
// prints the same line as each finding is raised.
void write_finding_line(std::ostream& out, const Model& model, const Finding& finding);

// Writes one file per shadow buffer (placed octets at their offsets from the lowest placed
// TO, unplaced octets zero) and index.json naming each file with its sink, STag, base TO and
// placed ranges. Returns false with a message on I/O errors.
// The export directory exists (or is created) and takes a file; checked before analysing.
bool check_export_dir(const std::string& dir, std::string& error);
bool export_shadow_buffers(const Model& model, const std::string& dir, std::string& error);

// "0x1a2b"
std::string hex(std::uint64_t v);

}  // namespace ddpscope::report
