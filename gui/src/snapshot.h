// SPDX-License-Identifier: GPL-2.0-or-later
// An immutable view of the analysis at one moment: a copy of core's Model plus the indexes
// the views need (region list, MSN series, frame lookups). Built on the worker thread, then
// shared read-only with the GUI thread; a live capture (live_analysis.h) feeds them the same way.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ddpscope/analysis/analyzer.h"

namespace ddpscope::gui {

// One row of the MSN chart: a message (every record seen with that MSN: more than one is a
// duplicate), or a run of MSNs never seen between two that were (missing).
struct MsnRow {
  std::uint32_t msn = 0;    // the row's MSN (missing: the first one of the run)
  std::uint32_t count = 1;  // missing: how many MSNs in the run; else 1
  bool missing = false;
  // Records with this MSN: MsnSeries::by_msn[begin, end) in record order (empty when missing).
  std::uint32_t begin = 0, end = 0;
  // Missing: the frame where the next MSN arrived instead (where the gap shows).
  std::uint64_t frame = 0;
  std::uint32_t copies() const { return end - begin; }
};

// One MSN chart series: untagged messages of one queue in one direction.
struct MsnSeries {
  std::uint32_t stream = 0;
  int direction = 0;
  std::uint32_t qn = 0;
  std::vector<std::size_t> messages;  // indices into Model::messages, in record order
  // The chart's rows in MSN order (serial order from the first record's MSN, RFC 5041 §5.1
  // MSNs wrap at 2^32), and the message indices grouped by MSN they point into.
  std::vector<MsnRow> rows;
  std::vector<std::size_t> by_msn;
  std::uint64_t first_frame = 0, last_frame = 0;  // over every record's frames
  std::uint64_t missing = 0;                      // MSNs missing between the first and last seen
  std::uint64_t duplicates = 0;                   // records beyond the first of their MSN
};

struct RegionInfo {
  const ShadowBuffer* buffer = nullptr;  // into Snapshot::model
  std::optional<std::uint32_t> stream;   // buffer's stream, else the first range's
  int direction = -1;                    // direction whose receiver owns the region, if found
  std::uint64_t overlaps = 0;   // placed over octets placed before (reuse or the same content)
  std::uint64_t conflicts = 0;  // ... with other content while their message was in flight
  std::uint64_t violations = 0;
  std::uint64_t overwrites = 0;     // buffer reuse after delivery: normal (ddp/shadow.h)
  std::uint64_t reused_octets = 0;  // octets those rewrote
  std::uint64_t first_frame = 0;    // of the first placed range
};

// Counters of a live capture (File › Capture), as LiveSession reports them.
struct LiveStatus {
  std::uint64_t frames = 0;  // frames captured, analysed and saved
  std::uint64_t bytes = 0;   // their captured octets
  bool have_kernel_stats = false;
  std::uint64_t kernel_received = 0;
  std::uint64_t kernel_dropped = 0;     // no room in the capture buffer
  std::uint64_t interface_dropped = 0;  // dropped by the interface or its driver
};

struct Snapshot {
  std::string path;  // the capture file; for a live capture its savefile, if any
  std::shared_ptr<const Model> model;
  // core's timing model (analysis/timing.h) at the same moment; null when the analysis kept
  // none (the GUI asks for one: gui_timing_options()).
  std::shared_ptr<const Timing> timing;
  bool final = false;
  bool cancelled = false;
  std::string error;         // open or read error (a truncated file is also a finding)
  std::string regions_file;  // the regions file applied, if any
  std::uint64_t bytes_read = 0;
  std::uint64_t file_size = 0;
  std::uint64_t frames_read = 0;
  double elapsed_s = 0;
  // A live capture: the interface (empty when reading a file) and its counters.
  std::string live_interface;
  LiveStatus live;

  std::vector<RegionInfo> regions;
  std::vector<MsnSeries> series;
  // Sorted (frame, region index) for every placed range.
  std::vector<std::pair<std::uint64_t, std::uint32_t>> frame_regions;
  // Per Model::findings entry: the STag of the tagged segment in the finding's frame (a range
  // it placed or tried to place, or a tagged message starting there), when there is one.
  std::vector<std::optional<std::uint32_t>> finding_stags;

  // Builds the indexes from `model`.
  void build_index();
  // Fills s.rows, s.by_msn and the counts from s.messages.
  void build_rows(MsnSeries& s) const;
  std::optional<std::size_t> region_of_frame(std::uint64_t frame) const;
  // The series holding a message that starts at, is placed or delivered at `frame`; else the
  // series of (stream, direction) whose messages span `frame`.
  std::optional<std::size_t> series_of_frame(std::uint64_t frame,
                                             std::optional<std::uint32_t> stream = {},
                                             int direction = -1) const;
};
using SnapshotPtr = std::shared_ptr<const Snapshot>;

// The command line's --port / --stream / --mid-stream-crc for a file, as `ddpscope analyze`
// takes them: streams analysed without an MPA handshake (AnalyzerOptions::hints).
struct FileHints {
  std::vector<StreamHint> hints;
  std::vector<std::uint16_t> ports;  // the --port values (for Wireshark's decode-as)
  std::optional<bool> crc;           // --mid-stream-crc; none: auto
  // --sink-profile / Tools › Data Sink Profile (AnalyzerOptions::sink_profile): whose Data Sink
  // the findings' Terminate column shows; none: RFC's, as the CLI without --sink-profile.
  std::optional<SinkProfile> sink_profile;
};

struct AnalysisCallbacks {
  const std::atomic<bool>* cancel = nullptr;
  // (bytes read, file size, frames), called about every 50 ms.
  std::function<void(std::uint64_t, std::uint64_t, std::uint64_t)> progress;
  // Intermediate snapshots, at most every `snapshot_interval_ms` (stretched when copying the
  // model gets expensive, so the copies stay below ~20% of the time).
  std::function<void(SnapshotPtr)> snapshot;
  int snapshot_interval_ms = 100;
  // Live capture only: the counters, about every 100 ms.
  std::function<void(const LiveStatus&)> live_status;
};

// The timing model the GUI keeps (AnalyzerOptions::timing): core's defaults, with more of the
// slowest operations per kind than the CLI prints, so that more histogram bars name one.
TimingOptions gui_timing_options();

// Reads the capture with ddpscope::capture and feeds core's Analyzer; returns the final
// snapshot (final = true; cancelled or error set when it stopped early).
// `regions`: the regions file's regions, when the user gave one (Analyzer::add_regions).
SnapshotPtr analyze_capture(const std::string& path, const AnalysisCallbacks& cb = {},
                            const AnalyzerOptions& options = {},
                            const std::optional<std::vector<RegionSpec>>& regions = std::nullopt);

}  // namespace ddpscope::gui
