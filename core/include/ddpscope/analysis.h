// SPDX-License-Identifier: GPL-2.0-or-later
// The analysis engine: what every host (CLI, plugin, GUI, live endpoint) reads.
// Feed it TCP segments (or whole link-layer frames) in capture order; it reassembles each TCP
// direction, frames MPA, places DDP segments into shadow buffers, tracks delivery and RDMAP
// semantics, and records typed findings. Nothing here does I/O.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ddpscope/bytes.h"
#include "ddpscope/findings.h"
#include "ddpscope/limits.h"
#include "ddpscope/mpa_framer.h"
#include "ddpscope/net.h"
#include "ddpscope/shadow.h"
#include "ddpscope/wire.h"

namespace ddpscope {

enum class PduKind : std::uint8_t {
  mpa_request,
  mpa_reply,
  fpdu,
  unframed,  // octets skipped while framing was lost, or after a failed handshake
};

// MPA parameters of one direction (what its sender does).
struct MpaDirectionParams {
  bool markers = false;  // this direction's sender inserts markers (the peer asked with M)
  bool crc = false;      // CRC in use on the connection
  std::uint64_t s0 = 0;  // stream offset of the first octet after this side's Request/Reply
  std::optional<wire::MarkerConvention> convention;  // as detected from the sender
};

// The analysis of one FPDU's DDP segment, for the hosts to show.
struct SegmentAnalysis {
  bool placed = false;  // payload went into a shadow buffer or an untagged message
  // Tagged:
  std::optional<RegionKey> region;
  RegionSource region_source = RegionSource::observed;
  bool region_bounds_known = false;
  std::uint64_t offset_in_region = 0;     // TO - base (or TO when base unknown)
  std::uint64_t region_bytes_placed = 0;  // after this segment
  // Untagged:
  std::optional<std::uint32_t> expected_msn;
  // Message this segment belongs to (index into Model::messages), when recorded.
  std::optional<std::size_t> message;
  // Read Request <-> Read Response / atomics: the frame of the other side, if known.
  std::optional<std::uint64_t> request_frame;
  std::optional<std::int64_t> response_time_ns;
  // Terminate: the frame of the segment it quotes.
  std::optional<std::uint64_t> quoted_frame;
  // Messages completed (placed) and delivered when this segment was processed.
  std::vector<std::size_t> messages_completed;
  std::vector<std::size_t> messages_delivered;
};

// One PDU as the engine framed it, handed to observers (the plugin keeps these per frame).
struct PduEvent {
  std::uint32_t stream = 0;
  int direction = 0;
  PduKind kind = PduKind::fpdu;
  std::uint64_t stream_offset = 0;  // of raw[0] in the direction's byte stream
  ByteView raw;                     // octets as on the wire (markers included); valid in callback
  std::vector<FrameSlice> slices;   // where raw came from, in order
  // MPA Request/Reply
  const wire::MpaReqRep* reqrep = nullptr;
  // FPDU (markers removed): length, ULPDU, pad, CRC field
  std::uint16_t ulpdu_length = 0;
  ByteView ulpdu;  // demarkered ULPDU, valid in callback
  std::uint32_t crc_field = 0;
  std::optional<std::uint32_t> crc_expected;  // computed CRC when CRC is in use
  bool crc_ok = true;
  std::vector<wire::Marker> markers;        // markers inside raw (stream_pos relative to S0)
  std::vector<std::size_t> marker_offsets;  // offset of each marker in raw
  bool leading_marker = false;              // raw starts with a marker in front of the header
  // DDP / RDMAP decode
  std::optional<wire::DdpSegment> ddp;  // payload view valid in callback
  std::optional<wire::ReadRequest> read_request;
  std::optional<wire::Terminate> terminate;
  std::optional<wire::AtomicRequest> atomic_request;
  std::optional<wire::AtomicResponse> atomic_response;
  std::optional<std::uint64_t> immediate_data;
  SegmentAnalysis analysis;
  std::vector<std::size_t> findings;  // indices into Model::findings raised by this PDU
};

class AnalysisObserver {
 public:
  virtual ~AnalysisObserver() = default;
  virtual void on_pdu(const PduEvent& pdu) = 0;
  // A finding not tied to one PDU (gaps, end-of-capture incompleteness, limits).
  virtual void on_finding(std::size_t /*finding_index*/) {}
};

struct OpcodeCounters {
  std::uint64_t segments = 0;
  std::uint64_t messages = 0;
  std::uint64_t bytes = 0;  // DDP payload octets
};

struct QueueStats {
  std::uint32_t qn = 0;
  std::uint32_t first_msn = 0;
  std::uint32_t last_msn = 0;
  std::uint64_t messages = 0;  // completed messages
  std::uint64_t segments = 0;
};

struct DirectionModel {
  net::Endpoint from;
  net::Endpoint to;
  std::optional<wire::MpaReqRep> mpa_frame;  // this side's Request or Reply
  std::uint64_t mpa_frame_number = 0;
  MpaDirectionParams mpa;
  std::optional<std::uint16_t> mss;  // MSS option in this side's SYN
  std::uint64_t tcp_bytes = 0;       // TCP payload octets seen (captured)
  std::uint64_t fpdus = 0;
  std::uint64_t crc_errors = 0;
  std::uint64_t bytes_lost = 0;      // capture loss
  std::uint64_t bytes_unframed = 0;  // skipped while resynchronising
  std::array<OpcodeCounters, wire::kOpcodeCount> opcodes{};
  std::map<std::uint32_t, QueueStats> queues;
  std::uint64_t bytes_placed = 0;  // tagged octets placed at the peer
};

enum class StreamState : std::uint8_t {
  unknown,    // no payload yet: not known to be iWARP
  handshake,  // MPA Request seen, waiting for the Reply
  full,       // Full Operation Phase: FPDUs
  rejected,   // MPA Reply with R
  failed,     // handshake broken: no framing
  not_iwarp,  // payload that is not MPA: ignored
};
std::string_view to_string(StreamState s);

struct StreamModel {
  std::uint32_t id = 0;
  net::Endpoint client;  // initiator (sent the MPA Request, or the SYN)
  net::Endpoint server;
  StreamState state = StreamState::unknown;
  bool mid_stream = false;  // analysed from a hint, no handshake seen
  std::uint64_t first_frame = 0;
  std::uint64_t last_frame = 0;
  std::int64_t first_ts_ns = 0;
  std::int64_t last_ts_ns = 0;
  std::array<DirectionModel, 2> dirs;  // 0: client->server, 1: server->client
  // RFC 6581 negotiation (when both frames had the enhanced word)
  std::optional<std::uint8_t> revision;
  bool enhanced = false;
  bool peer_to_peer = false;
  std::string rtr;      // "write", "read", "send", or empty
  bool closed = false;  // FIN or RST seen
};

// One DDP message (tagged or untagged), for MSN charts and delivery views.
struct MessageRecord {
  std::uint32_t stream = 0;
  int direction = 0;
  std::uint8_t opcode = 0;
  bool tagged = false;
  std::uint32_t qn = 0;
  std::uint32_t msn = 0;
  std::uint32_t stag = 0;
  std::uint64_t to = 0;
  std::uint64_t length = 0;
  std::uint32_t segments = 0;
  std::uint64_t first_frame = 0;
  std::int64_t first_ts_ns = 0;
  std::uint64_t placed_frame = 0;  // frame where the last missing octet was placed; 0 = never
  std::int64_t placed_ts_ns = 0;
  std::uint64_t delivered_frame = 0;  // frame where it was delivered; 0 = never
  std::int64_t delivered_ts_ns = 0;
  bool complete = false;  // L=1 seen and every segment present
  bool damaged_by_gap = false;
};

struct Model {
  std::vector<StreamModel> streams;
  std::vector<Finding> findings;
  std::uint64_t findings_dropped = 0;  // beyond Limits::max_findings
  std::array<std::uint64_t, kFindingCount> finding_counts{};
  ShadowMemory memory;  // shadow buffers keyed by (owner host, STag)
  std::vector<MessageRecord> messages;
  std::uint64_t frames = 0;
  std::uint64_t frames_not_tcp = 0;
  std::uint64_t frames_unsupported = 0;
  std::uint64_t frames_malformed = 0;
  std::uint64_t bytes = 0;  // captured octets fed
};

// A user's hint to analyse a stream that starts mid-stream (no MPA handshake in the capture).
struct StreamHint {
  std::optional<std::uint16_t> port;      // either endpoint's port
  std::optional<net::Endpoint> endpoint;  // or one endpoint exactly (address and port)
  bool crc = true;
  bool markers = false;  // both directions
};

struct AnalyzerOptions {
  Limits limits;
  std::vector<StreamHint> hints;
  bool decode_advertisements = true;  // learn regions from ULP advertisements (rping, ...)
  bool check_crc = true;
  // Size of the receive buffers posted for Sends (QN 0), when the user knows it.
  std::optional<std::uint32_t> send_buffer_size;
};

class Analyzer {
 public:
  explicit Analyzer(AnalyzerOptions options = {});
  ~Analyzer();
  Analyzer(const Analyzer&) = delete;
  Analyzer& operator=(const Analyzer&) = delete;

  void set_observer(AnalysisObserver* observer);
  // A region the user knows (e.g. from --regions FILE).
  void add_region(const RegionSpec& region);

  // Feed a whole captured frame (link-layer bytes).
  void feed_frame(std::uint64_t frame, std::int64_t ts_ns, std::uint32_t link_type, ByteView data,
                  std::uint32_t wire_length);
  // Feed a decoded TCP segment (the plugin does this from Wireshark's TCP layer).
  void feed_tcp(std::uint64_t frame, std::int64_t ts_ns, const net::TcpSegment& segment);
  // The capture file ended in the middle of a record.
  void note_truncated_file(std::uint64_t last_frame, const std::string& detail);
  // End of input: flush reassembly, report what was left incomplete.
  void finish();

  const Model& model() const;
  const AnalyzerOptions& options() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ddpscope
