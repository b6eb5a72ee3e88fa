// SPDX-License-Identifier: GPL-2.0-or-later
// The analysis engine: what every host (CLI, plugin, GUI, live endpoint) reads.
// Feed it TCP segments (or whole link-layer frames) in capture order; it reassembles each TCP
// direction, frames MPA, places DDP segments into shadow buffers, tracks delivery and RDMAP
// semantics, and records typed findings. Nothing here does I/O.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ddpscope/analysis/model.h"
#include "ddpscope/analysis/pdu_event.h"
#include "ddpscope/analysis/timing.h"
#include "ddpscope/common/bytes.h"
#include "ddpscope/common/limits.h"
#include "ddpscope/ddp/shadow.h"
#include "ddpscope/findings/sink_profile.h"
#include "ddpscope/net/packet.h"

namespace ddpscope {

// A user's hint to analyse a stream that starts mid-stream (no MPA handshake in the capture).
struct StreamHint {
  std::optional<std::uint16_t> port;      // either endpoint's port
  std::optional<net::Endpoint> endpoint;  // or one endpoint exactly (address and port)
  // CRC in use; none: find it (a matching CRC frames with CRC on; without one, CRC off is
  // taken only from several FPDUs chained by their lengths), reported as mpa.crc-detected.
  std::optional<bool> crc;
  bool markers = false;  // both directions
};

struct AnalyzerOptions {
  Limits limits;
  std::vector<StreamHint> hints;
  bool decode_advertisements = true;  // learn regions from ULP advertisements (rping, ...)
  bool check_crc = true;
  // Keep a MessageRecord per DDP message (Model::messages; PduEvent's message, completed and
  // delivered indices) for hosts that show them: the GUI's MSN chart, the plugin's "placed in" /
  // "delivered in". A host that shows none (`ddpscope analyze`'s reports) turns this off and
  // spares their memory (Limits::max_message_records of them, 96 octets each). Findings are the
  // same either way: engine.limit-reached for max_message_records still marks the message where
  // a host that keeps records stops keeping them.
  bool message_records = true;
  // Keep each shadow buffer's placements (ShadowBuffer::ranges(): which frame placed which
  // octets) for hosts that show them one by one: the GUI's placement trace and byte map. A host
  // that shows only their counts turns this off and spares their memory (up to
  // Limits::max_ranges_per_region of 56 octets per region: 3.5 MiB for each region written to
  // throughout a long capture). Findings and counts are the same either way.
  bool placement_ranges = true;
  // Size of the receive buffers posted for Sends (QN 0), when the user knows it.
  std::optional<std::uint32_t> send_buffer_size;
  // The protection domain each Data Sink puts its streams in, when the user knows it (the
  // regions file's "protection_domains"): with a region's PD, "STag of another PD" is checked.
  std::vector<ProtectionDomainSpec> protection_domains;
  // The Data Sink each finding's outcome is for (findings/sink_profile.h): the rules and the
  // findings are the same under every profile; the Terminate (or no Terminate) differs.
  // nullopt: RFC's, and the reports do not name a profile (Model::sink_profile).
  std::optional<SinkProfile> sink_profile;
  // Keep the timing model (analysis/timing.h): operation latencies, throughput, stalls. Off
  // (nullopt), the engine's hooks cost a null check and nothing is kept.
  std::optional<TimingOptions> timing;
  // The host keeps the octets of every frame it feeds as staying valid (feed_decoded's
  // `stays_valid`) readable and unchanged until finish() (`ddpscope analyze` keeps its reader,
  // whose mapped file they lie in, until the report is written). TCP reassembly then refers to
  // the octets its retransmission history keeps of them instead of copying them (about a third
  // of a large FPDU's cost). Off, every frame's octets are copied, whatever the feed says: the
  // plugin's and the live endpoint's frames live only while they are fed. Findings and reports
  // are the same either way.
  bool frames_stay_valid = false;
};

class Analyzer {
 public:
  explicit Analyzer(AnalyzerOptions options = {});
  // A sharded analysis (`ddpscope analyze --threads N`): `shards` engines, each analysing the
  // streams shard_of() gives it, merged by finish() into the model one engine builds from the
  // same input, byte for byte in every report. What is shared by the streams is kept so: stream
  // numbers, the order of findings and the findings cap (Limits::max_findings), frame counters,
  // the notes tied to no stream, the shadow buffers of every engine, the payload retention cap
  // (in capture order across the engines). What only one engine can decide in capture order is
  // checked after the fact, and when the merge cannot vouch for it, exact() is false and the
  // host analyses the capture again with one engine (the reasons: inexact_reason()): a shadow
  // buffer (owner host, STag) looked up by streams of two shards, a budget shared by all streams
  // (max_streams, max_regions, max_message_records, max_pending_total, max_history_total,
  // max_resync_total) that the shards' sum may pass, new content compared with a retained page
  // one engine would not have retained, a finding that names a stream renumbered by the merge,
  // findings dropped past max_findings that the merge would have needed. Not sharded (shards()
  // is 1, unsharded_reason() says why): with the timing model or message records on.
  //
  // Threads: a shard's calls (feed_shard, note_receiver_drop_shard) from one thread at a time,
  // the others (next_event, count_frame, the note_* below, finish, model) from one more; shards
  // run side by side. Fed from one thread, feed_decoded() and note_receiver_drop() do both.
  // Before finish(), model() holds only the frame counters and the notes tied to no stream.
  Analyzer(AnalyzerOptions options, unsigned shards);
  ~Analyzer();
  Analyzer(const Analyzer&) = delete;
  Analyzer& operator=(const Analyzer&) = delete;

  void set_observer(AnalysisObserver* observer);
  // The regions the user knows (a regions file, --regions FILE). Giving them, even none, says
  // the list is complete: an STag the Data Sinks have not registered, advertised or named in a
  // Read Request is then invalid (RFC 5041 §7.2).
  void add_regions(std::span<const RegionSpec> regions);

  // Feed a whole captured frame (link-layer bytes).
  void feed_frame(std::uint64_t frame, std::int64_t ts_ns, std::uint32_t link_type, ByteView data,
                  std::uint32_t wire_length);
  // The same, for a frame a host already decoded (on another thread: `ddpscope analyze
  // --threads`): `decoded` is net::decode_frame(link_type, data, wire_length) of the frame's
  // `captured` octets, its views still valid. feed_frame() is exactly this.
  // `stays_valid`: the frame's octets lie where the host keeps them as options().
  // frames_stay_valid promises (a mapped capture file, not a copy the next frame overwrites);
  // ignored unless that option is on, and by a sharded analyzer.
  void feed_decoded(std::uint64_t frame, std::int64_t ts_ns, std::size_t captured,
                    const net::FrameDecode& decoded, bool stays_valid = false);
  // Feed a decoded TCP segment (the plugin does this from Wireshark's TCP layer).
  void feed_tcp(std::uint64_t frame, std::int64_t ts_ns, const net::TcpSegment& segment);
  // A finding a layer under the analysis reports (the ESP layer, esp/: esp.*), at `frame`, tied
  // to `stream` (a StreamModel id) or to none.
  void note_finding(FindingId id, std::uint64_t frame, std::string message,
                    std::uint32_t stream = UINT32_MAX);
  // A packet of the TCP direction `from` -> `to` is in the capture but never reached its
  // receiver's TCP: the layer under the analysis dropped it as the receiver does (ESP: the ICV
  // failed, or it did not decrypt; RFC 4303 §3.4.4), before its segment could be read. Its
  // octets were not received, so the sender will retransmit them: until that direction's holes
  // fill again, an ACK past them is not taken as proof that the capture lacks them (a receiver
  // cannot acknowledge what it dropped). They still become capture loss when the window fills,
  // at a FIN or at the end of input. Call between frames, where the dropped packet lay.
  void note_receiver_drop(const net::Endpoint& from, const net::Endpoint& to);
  // The ESP SA that carried the segments from `from` to `to` (every stream with that
  // direction); marks the model as ESP-analysed (Model::esp_analysed). Call before finish().
  void note_esp(const net::Endpoint& from, const net::Endpoint& to, const EspProtection& esp);
  // The model is ESP-analysed even when no stream was protected.
  void note_esp_analysed();
  // The capture file ended in the middle of a record.
  void note_truncated_file(std::uint64_t last_frame, const std::string& detail);
  // End of input: flush reassembly, report what was left incomplete.
  void finish();

  const Model& model() const;
  const AnalyzerOptions& options() const;

  // ---- sharded (see the constructor) ----
  unsigned shards() const;
  const std::string& unsharded_reason() const;
  static constexpr unsigned kNoShard = UINT32_MAX;
  // The shard of a decoded frame's stream: both directions of a TCP connection, every stream of
  // an SCTP association (and a new connection on a reused 4-tuple) go to one shard. kNoShard:
  // a frame of no stream (not TCP or SCTP, malformed, unsupported), only counted.
  static unsigned shard_of(const net::FrameDecode& decoded, unsigned shards);
  static unsigned shard_of(const net::Endpoint& a, const net::Endpoint& b, unsigned shards);
  // Numbers the next event in capture order (a frame or a note): its number for feed_shard() and
  // note_receiver_drop_shard(). The note_* calls above number their own.
  std::uint64_t next_event();
  // A frame's captured octets and decode status in the model's counters (every frame, once).
  void count_frame(std::size_t captured, const net::FrameDecode& decoded);
  // Event `event`, a TCP or SCTP frame of shard `shard`'s streams (the analysis feed_decoded()
  // does past the counters).
  void feed_shard(unsigned shard, std::uint64_t event, std::uint64_t frame, std::int64_t ts_ns,
                  const net::FrameDecode& decoded);
  void note_receiver_drop_shard(unsigned shard, std::uint64_t event, const net::Endpoint& from,
                                const net::Endpoint& to);
  // After finish(): whether the merged model is the one engine's (always, unsharded).
  bool exact() const;
  const std::string& inexact_reason() const;
  // The timing model, when AnalyzerOptions::timing asked for one (else nullptr).
  const Timing* timing() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ddpscope
