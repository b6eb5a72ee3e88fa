// SPDX-License-Identifier: GPL-2.0-or-later
// The analysis model every host reads: streams and their directions, messages, findings and
// the shadow memory. The Analyzer (analyzer.h) builds it; hosts only read it.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>
#include "ddpscope/common/bytes.h"
#include "ddpscope/common/limits.h"
#include "ddpscope/common/mapped_array.h"
#include "ddpscope/ddp/shadow.h"
#include "ddpscope/findings/catalog.h"
#include "ddpscope/findings/sink_profile.h"
#include "ddpscope/mpa/framer.h"
#include "ddpscope/net/packet.h"
#include "ddpscope/wire/mpa.h"
#include "ddpscope/wire/rdmap.h"
#include "ddpscope/wire/sctp.h"

namespace ddpscope {

// The Lower Layer Protocol a DDP stream runs over (RFC 5041 §1): MPA over TCP (RFC 5044), or
// one SCTP stream of an association (RFC 5043).
enum class Llp : std::uint8_t { mpa, sctp };
std::string_view to_string(Llp llp);  // "mpa", "sctp"

// MPA parameters of one direction (what its sender does).
struct MpaDirectionParams {
  bool markers = false;  // this direction's sender inserts markers (the peer asked with M)
  bool crc = false;      // CRC in use on the connection
  std::uint64_t s0 = 0;  // stream offset of the first octet after this side's Request/Reply
  std::optional<wire::MarkerConvention> convention;  // as detected from the sender
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

// The IPsec ESP SA that carried a direction's segments (RFC 4303), as the capture layer that
// decrypted them reports it (Analyzer::note_esp): core itself decrypts nothing.
struct EspProtection {
  std::uint32_t spi = 0;
  std::string mode;          // "tunnel" or "transport"
  std::string encryption;    // e.g. "AES-GCM-16 (128-bit key)", "NULL"
  std::string integrity;     // e.g. "HMAC-SHA-256-128", "AES-GCM ICV", "NULL"
  bool esn = false;          // 64-bit Extended Sequence Numbers
  bool udp_encap = false;    // RFC 3948 UDP encapsulation
  std::uint64_t frames = 0;  // ESP packets of the direction decrypted and analysed
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
  std::uint64_t bytes_placed = 0;    // tagged octets placed at the peer
  std::optional<EspProtection> esp;  // when its segments came in ESP packets
  // SCTP (llp sctp): DATA chunks of this stream's user messages, and the user messages (PPID
  // 16: DDP segments, PPID 17: session control).
  std::uint64_t sctp_chunks = 0;
  std::uint64_t sctp_messages = 0;
};

// One DDP Stream Session Control message (PPID 17, RFC 5043 §5) seen on an SCTP stream.
struct SctpSessionRecord {
  std::uint64_t frame = 0;  // the frame of its first DATA chunk
  int direction = 0;        // of the stream (0: client->server)
  wire::DdpSessionControl message;
};

// What an SCTP DDP stream is: one SCTP stream of an association (RFC 5043 §4).
struct SctpStreamInfo {
  std::uint16_t stream_id = 0;
  // Both INIT and INIT ACK carried the DDP Adaptation Code Point (RFC 5043 §5.1). False when
  // the association's setup was not in the capture.
  bool adaptation = false;
  std::array<std::uint16_t, 2> ports{};  // the client's, the server's
  // The verification tag of packets client->server and server->client (0: none seen).
  std::array<std::uint32_t, 2> vtags{};
  bool over_udp = false;                   // RFC 6951 encapsulation
  std::vector<SctpSessionRecord> session;  // session control messages, in order (first 16)
  static constexpr std::size_t kMaxSessionRecords = 16;
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
  Llp llp = Llp::mpa;
  std::optional<SctpStreamInfo> sctp;  // llp sctp
  net::Endpoint client;                // initiator (sent the MPA Request, or the SYN)
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
  // The upper layer a decoder recognised on the stream ("nvme-rdma"), and what it was told by
  // ("by RDMA CM private data; qid 1 ...").
  std::string ulp;
  std::string ulp_detail;
};

// One DDP message (tagged or untagged), for MSN charts and delivery views. Kept per message up
// to Limits::max_message_records: the fields are ordered so that none pads (96 octets).
struct MessageRecord {
  std::uint32_t stream = 0;
  int direction = 0;
  std::uint32_t qn = 0;
  std::uint32_t msn = 0;
  std::uint32_t stag = 0;
  std::uint32_t segments = 0;
  std::uint8_t opcode = 0;
  bool tagged = false;
  bool complete = false;  // L=1 seen and every segment present
  bool damaged_by_gap = false;
  // What an upper-layer decoder named the message (an untagged message's command or
  // completion, ulp::ulp_message_name): 1 + its offset in Model::message_names; 0: none.
  std::uint32_t ulp_name = 0;
  std::uint64_t to = 0;
  std::uint64_t length = 0;
  std::uint64_t first_frame = 0;
  std::int64_t first_ts_ns = 0;
  std::uint64_t placed_frame = 0;  // frame where the last missing octet was placed; 0 = never
  std::int64_t placed_ts_ns = 0;
  std::uint64_t delivered_frame = 0;  // frame where it was delivered; 0 = never
  std::int64_t delivered_ts_ns = 0;
};
static_assert(sizeof(MessageRecord) <= 96, "a message record is kept per message: keep it packed");

struct Model {
  // The Data Sink profile the user chose (AnalyzerOptions::sink_profile); nullopt: RFC's, not
  // named in the reports.
  std::optional<SinkProfile> sink_profile;
  std::vector<StreamModel> streams;
  std::vector<Finding> findings;
  std::uint64_t findings_dropped = 0;  // beyond Limits::max_findings
  std::array<std::uint64_t, kFindingCount> finding_counts{};
  // Every finding reported, kept or past Limits::max_findings, by Severity (note, warning,
  // error): what summaries and exit codes count.
  std::array<std::uint64_t, 3> severity_counts{};
  ShadowMemory memory;  // shadow buffers keyed by (owner host, STag)
  // In the order the messages began; a record keeps its index (PduEvent's indices name it).
  MappedArray<MessageRecord> messages;
  // The ULP names of message records, each ended by a NUL (MessageRecord::ulp_name points in):
  // one string, so that a copy of the model copies them at once. At most kMaxMessageName + 1
  // octets a record; names stop once it would pass 4 GiB.
  std::string message_names;
  // The name MessageRecord::ulp_name points to ("NVMe Read cid 97 nsid 1"), or empty.
  std::string_view ulp_name(const MessageRecord& m) const {
    if (m.ulp_name == 0 || m.ulp_name > message_names.size()) return {};
    return std::string_view(message_names.c_str() + (m.ulp_name - 1));
  }
  // DDP messages begun (tagged and untagged, all streams), whether recorded in `messages` or not
  // (past Limits::max_message_records, or AnalyzerOptions::message_records off).
  std::uint64_t message_count = 0;
  std::uint64_t frames = 0;
  std::uint64_t frames_not_tcp = 0;
  std::uint64_t frames_sctp = 0;  // SCTP packets fed (over IP or UDP)
  std::uint64_t frames_unsupported = 0;
  std::uint64_t frames_malformed = 0;
  std::uint64_t bytes = 0;  // captured octets fed
  // A capture layer decrypted ESP (the user gave keys): reports say for every stream whether
  // it was protected.
  bool esp_analysed = false;
};

}  // namespace ddpscope
