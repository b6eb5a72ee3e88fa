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
};

class Analyzer {
 public:
  explicit Analyzer(AnalyzerOptions options = {});
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
  void feed_decoded(std::uint64_t frame, std::int64_t ts_ns, std::size_t captured,
                    const net::FrameDecode& decoded);
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
  // The timing model, when AnalyzerOptions::timing asked for one (else nullptr).
  const Timing* timing() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ddpscope
