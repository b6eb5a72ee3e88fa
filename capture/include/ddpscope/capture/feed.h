// SPDX-License-Identifier: GPL-2.0-or-later
// The one loop "capture file -> analysis" every host runs (`ddpscope analyze` and `replay`, the
// GUI's file analysis, fuzz_capture): frames in file order into core's Analyzer, a progress
// hook that may stop the loop, and the end of the file as the end of the input, a damaged file
// included. A live capture's loop is LiveSession::run (live_capture.h); its frames go in through
// feed_frame() below, as a file's do.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "ddpscope/analysis/analyzer.h"
#include "ddpscope/capture/file_reader.h"
#include "ddpscope/capture/frame.h"

namespace ddpscope::capture {

// One captured frame (from a file or a live capture) into the analysis.
inline void feed_frame(Analyzer& analyzer, const Frame& frame) {
  analyzer.feed_frame(frame.number, frame.ts_ns, frame.link_type, frame.data, frame.wire_length);
}

// What a FrameLayer reports while it replaces frames: Analyzer::note_finding's findings, at a
// frame, tied to no stream; Analyzer::note_receiver_drop's packets of a TCP direction it dropped
// as their receiver does.
class LayerNotes {
 public:
  virtual void note_finding(FindingId id, std::uint64_t frame, std::string message) = 0;
  virtual void note_receiver_drop(const net::Endpoint& from, const net::Endpoint& to) = 0;

 protected:
  ~LayerNotes() = default;
};

// Notes straight into the analysis.
class AnalyzerNotes final : public LayerNotes {
 public:
  explicit AnalyzerNotes(Analyzer& analyzer) : analyzer_(analyzer) {}
  void note_finding(FindingId id, std::uint64_t frame, std::string message) override {
    analyzer_.note_finding(id, frame, std::move(message));
  }
  void note_receiver_drop(const net::Endpoint& from, const net::Endpoint& to) override {
    analyzer_.note_receiver_drop(from, to);
  }

 private:
  Analyzer& analyzer_;
};

// A layer under the analysis that may put another frame in place of a captured one: ESP
// decryption (esp/) hands the analysis the inner packet of an ESP packet, under the outer frame's
// number. Called for every frame in frame order, before the analysis sees it; what it notes
// reaches the analysis before the frame it was noted with, after the frames before it. With one
// thread replace() runs on the analysis thread; with two (FeedOptions::threads) on the reader
// thread, so it must not look at the analysis.
class FrameLayer {
 public:
  virtual ~FrameLayer() = default;
  // The frame to analyse in place of `frame` (its data valid until the next call), or nullptr
  // to analyse `frame` itself.
  virtual const Frame* replace(const Frame& frame, LayerNotes& notes) = 0;
  // Whether replace() must see a frame that net::decode_frame decoded as `decoded`. The feed
  // decodes every frame first and calls replace() only for those a layer wants: ESP's are
  // neither TCP nor SCTP, so the ESP layer is not asked about the frames the analysis takes as
  // they are (most of a capture). The default: every frame.
  virtual bool wants(const net::FrameDecode& decoded) const {
    (void)decoded;
    return true;
  }
  // After the last frame, before Analyzer::finish() (not after a stop by the progress hook), on
  // the analysis thread.
  virtual void finish(Analyzer& analyzer) = 0;
};

// Where a feed is, for a progress bar.
struct FeedProgress {
  std::uint64_t frames = 0;      // frames fed so far
  std::uint64_t last_frame = 0;  // number of the last frame fed
  std::uint64_t bytes_read = 0;  // approximate position in the file (CaptureReader::bytes_read)
  std::uint64_t file_size = 0;
};

struct FeedOptions {
  // Called after every `progress_every` frames (0 is taken as 1), not at the end. Returning
  // false stops the feed: the result is then `cancelled` and the analysis is left unfinished.
  std::function<bool(const FeedProgress&)> progress;
  std::uint64_t progress_every = 64;
  // Called with each frame just before it is fed (a host that needs the frame's time while its
  // observer runs, as replay does).
  std::function<void(const Frame&)> on_frame;
  // 1: one thread, the loop above. 2 or more: a pipeline of two threads, a reader (libpcap,
  // gzip, the filter, the layer below and net::decode_frame of each frame) and the engine (the
  // analysis, the hooks above: on the calling thread), with a bounded queue of decoded frames
  // between them (pipeline_frames frames or about pipeline_octets captured octets at most). The
  // frames reach the analysis in the same order and the result is the same, bit for bit. One
  // difference: after a stop by `progress` the reader (and the layer) have read ahead (up to the
  // queue's frames), so the reader's next frame is not the one after the last fed.
  // An analyzer with shards (Analyzer::shards() > 1) is fed by 1 + shards() threads whatever
  // this says: this one reads, decodes, runs the layer and numbers the events (the hooks above
  // run here), each shard's thread analyses its streams, with a queue of batches per shard
  // (together within the caps below); finish() merges on this thread.
  unsigned threads = 1;
  // Runs on every frame before the analysis does (see FrameLayer); not owned. With threads >= 2
  // it runs on the reader thread (ESP decryption, the costliest part of an ESP capture, then
  // beside the analysis rather than before it), and the reader decodes the frame it gives.
  FrameLayer* layer = nullptr;
  std::size_t pipeline_frames = 8192;
  // 4 MiB: as fast as 8 on every benchmark shape (a little faster on write and reuse) and 5 MiB
  // less resident (bench/RESULTS.md, 2026-12-05).
  std::size_t pipeline_octets = 4u << 20;
};

struct FeedResult {
  std::uint64_t frames = 0;      // frames fed
  std::uint64_t last_frame = 0;  // number of the last complete frame fed; 0 when none was
  std::string error;             // the reader's error when the file did not end cleanly
  bool cancelled = false;        // stopped by FeedOptions::progress
  // A sharded feed: the CPU seconds of the reading thread (reader, decode, layer, routing) and
  // of each shard's thread, for the scaling figures (bench/RESULTS.md, issue 43).
  double reader_cpu_s = 0;
  std::vector<double> shard_cpu_s;
};

// Feeds the frames `reader` has left to `analyzer` until the end of the file, a read error or
// a stop by the progress hook. Unless stopped, the end of the file is the end of the input:
// a read error (a record cut short, a damaged block) is reported once, as
// capture.truncated-file at the last complete frame (Analyzer::note_truncated_file; every frame
// before the damage stays analysed), then Analyzer::finish() runs. After a stop neither runs:
// the model holds what was fed so far.
// A frame fed where the reader keeps it valid (CaptureReader::frames_stay_valid: the mapped,
// uncompressed file's, one thread or two) is fed as staying valid (Analyzer::feed_decoded); an
// analyzer that takes that at its word (AnalyzerOptions::frames_stay_valid) needs `reader` kept
// until its finish(). Frames a layer put in their place, read by libpcap after a hand-over
// mid-file, or copied into a shard's batch are not.
FeedResult feed(CaptureReader& reader, Analyzer& analyzer, const FeedOptions& options = {});

}  // namespace ddpscope::capture
