// SPDX-License-Identifier: GPL-2.0-or-later
// The scenario model of the synthetic capture generator, parsed from JSON. Every field is
// resolved at parse time (payload bytes generated, defaults applied where they do not depend
// on the MPA negotiation), so the generator never sees JSON. docs/synth-scenarios.md is the
// format's reference.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "ddpscope/common/bytes.h"
#include "ddpscope/esp/sa.h"
#include "ddpscope/net/packet.h"
#include "ddpscope/wire/mpa.h"
#include "ddpscope/wire/rdmap.h"

namespace ddpscope::synth {

// Direction index = side: 0 client (sends the MPA Request), 1 server.
enum class Side : std::uint8_t { client = 0, server = 1 };
inline int dir_of(Side s) {
  return static_cast<int>(s);
}
inline int peer_of(Side s) {
  return 1 - static_cast<int>(s);
}

struct ConnectionSpec {
  net::Endpoint client;
  net::Endpoint server;
  std::uint16_t client_mss = 1460;
  std::uint16_t server_mss = 1460;
  std::uint32_t client_isn = 0x1000;
  std::uint32_t server_isn = 0x8000;
  // MPA (RFC 5044 §7.1, RFC 6581)
  std::uint8_t request_revision = 2;
  std::uint8_t reply_revision = 2;
  bool enhanced = true;  // RFC 6581 enhanced bit and IRD/ORD word (revision 2 only)
  bool peer_to_peer = false;
  std::string rtr;  // "", "write", "read", "send": the RTR the initiator sends (p2p)
  std::uint16_t client_ird = 16, client_ord = 16, server_ird = 16, server_ord = 16;
  bool client_crc = false;                 // C flag in the Request
  bool server_crc = false;                 // C flag in the Reply
  bool client_requests_markers = false;    // M in the Request: server sends markers
  bool server_requests_markers = false;    // M in the Reply: client sends markers
  std::uint8_t client_reserved_flags = 0;  // extra flag bits (0x0F mask), e.g. 0x08
  std::uint8_t server_reserved_flags = 0;
  Bytes client_private_data;
  Bytes server_private_data;
  bool reject = false;
  // Segmentation: DDP payload octets per segment (default MULPDU minus the DDP header),
  // TCP payload octets per segment (default the peer's MSS), and 0 = cut the byte stream
  // regardless of FPDU boundaries / N = put N whole FPDUs in each TCP segment.
  std::optional<std::uint32_t> segment_size;
  std::optional<std::uint32_t> tcp_segment_size;
  std::uint32_t fpdus_per_segment = 0;
  bool fin = true;
  std::optional<std::uint16_t> vlan;
  // The LLP: the connection's "llp", else the scenario's ("mpa" or "sctp").
  std::optional<std::string> llp;
  bool over_sctp = false;
  // "llp": "sctp" only: faults and legal oddities of the DDP session (the connection's "sctp").
  struct Sctp {
    bool adaptation = true;  // false: INIT and INIT ACK lack the DDP adaptation indication
    std::optional<std::uint16_t> initiate_function_code;  // instead of (Enhanced) Initiate
    std::uint32_t initiate_fragments = 1;                 // the Initiate in N DATA chunks
    bool terminate = true;                     // false: SHUTDOWN with no Session Terminate
    std::uint32_t terminate_private_data = 0;  // octets of PD in the client's Terminate
    // "": the Accept before any operation; "unacked": the first operation's segments before the
    // Initiate was SACKed or answered; "after_sack": after its SACK, before the Accept (legal).
    std::string early;
  } sctp;
};

// Faults applied to the DDP segments of one operation.
struct OpFault {
  int segment = 0;  // which DDP segment of the operation's message, -1 = the last one
  bool corrupt_crc = false;
  bool corrupt_marker = false;
  std::optional<std::uint16_t> ulpdu_length;
  std::optional<std::uint8_t> ddp_version;
  std::optional<std::uint8_t> ddp_reserved;
  std::optional<std::uint8_t> rdmap_version;
  std::optional<std::uint8_t> opcode;
  std::optional<std::uint32_t> qn;
  std::string msn;  // "", "skip", "duplicate"
  std::int64_t mo_delta = 0;
  std::int64_t to_delta = 0;  // tagged: the selected segment's TO moved by N
  bool segment_after_last = false;
  std::uint32_t read_request_extra = 0;  // octets appended to a Read Request body
  bool tagged = false;                   // send an untagged opcode as a tagged segment
  // Read: the peer's responses
  std::optional<std::uint32_t> response_sink_stag;
  std::int64_t response_size_delta = 0;
  // Atomic: the peer's response
  std::optional<std::uint32_t> response_request_id;
  // "llp": "sctp" only, on the selected segment: its DDP-SSN "skip"ped (one left out) or
  // "reuse"d (the previous one again), its chunk ordered (U = 0), the segment in N DATA chunks;
  // and, for the whole operation, its messages bundled with their TSNs in reverse order (legal).
  std::string ddp_ssn;
  bool ordered = false;
  std::uint32_t fragments = 1;
  bool reverse_tsn = false;
  // The packet holding the selected segment: sent with a wrong CRC32c and retransmitted, or
  // lost (missing from the capture); the segment's PPID set to N.
  bool bad_checksum = false;
  bool lost = false;
  std::optional<std::uint32_t> ppid;
  bool any() const;
};

enum class TcpFaultKind : std::uint8_t { drop, duplicate, reorder, conflict, receiver_drop };
struct TcpFault {
  TcpFaultKind kind = TcpFaultKind::drop;
  std::optional<int> index;  // data segment index in the capture (0-based, payload-bearing)
  std::optional<int> op;     // or: the op_segment-th TCP segment holding op `op`'s octets
  int op_segment = 0;
  int after = 2;      // duplicate / conflict / receiver_drop: packets of the connection between the
                      // original and the copy (receiver_drop: its retransmission)
  std::string where;  // JSON path, for errors
};

enum class OpType : std::uint8_t {
  send,
  write,
  read,
  read_response,  // unsolicited Read Response (fault scenarios)
  atomic,
  atomic_response,  // unsolicited Atomic Response (fault scenarios)
  immediate,
  terminate,
  advertise_rping,
};

struct OpSpec {
  OpType type = OpType::send;
  int connection = 0;
  Side side = Side::client;
  std::string label;
  std::string where;  // JSON path
  Bytes data;         // send / write / read source / read_response payload
  // send
  bool solicited = false;
  std::optional<std::uint32_t> invalidate_stag;
  // write / read_response
  std::uint32_t stag = 0;
  std::uint64_t to = 0;
  // read
  wire::ReadRequest read;
  int count = 1;        // Read Requests sent back to back before the peer answers them
  bool respond = true;  // false: the peer never answers (e.g. it terminates instead)
  // atomic
  wire::AtomicRequest atomic;
  std::uint64_t original_value = 0;
  std::uint32_t request_id = 0;  // atomic_response
  // immediate
  std::uint64_t immediate = 0;
  // terminate
  wire::TerminateControl term;
  bool siw_layout = false;
  // advertise_rping
  std::uint64_t adv_base = 0;
  std::uint32_t adv_stag = 0;
  std::uint32_t adv_length = 0;

  std::optional<std::uint32_t> segment_size;
  bool hold = false;  // keep the octets for the next operation's TCP segments
  OpFault fault;
  std::vector<TcpFault> tcp_faults;
};

struct RegionFileEntry {
  std::uint32_t stag = 0;
  std::uint64_t base = 0;
  std::uint64_t length = 0;
  std::optional<net::Address> sink;
};

struct ManualExpectation {
  std::string code;
  int op = -1;
  int segment = 0;
  bool consequence = false;
};

// IPsec ESP around the capture's frames (esp_wrap.h): every frame of the protected connections
// becomes an ESP packet of its direction's SA; faults add ESP packets at known frames.
struct EspFault {
  enum class Kind : std::uint8_t { replay, icv, bad_padding } kind = Kind::replay;
  std::uint64_t frame = 0;  // the frame (of the capture without ESP faults, 1-based) it copies
  std::uint64_t after = 1;  // replay: frames between the original and the copy
  std::string where;
};
struct EspSpec {
  std::string mode = "tunnel";  // or "transport"
  esp::Cipher cipher = esp::Cipher::aes_gcm_16;
  esp::Integrity integrity = esp::Integrity::null;
  Bytes enc_key;  // with GCM/CTR's 4-octet salt
  Bytes auth_key;
  std::uint32_t spi_client = 0x00001001;  // SA of the client's direction
  std::uint32_t spi_server = 0x00002001;
  bool esn = false;
  std::uint64_t first_seq = 1;  // of both SAs (64-bit with ESN)
  bool udp_encap = false;
  std::optional<net::Address> tunnel_client, tunnel_server;  // outer addresses (tunnel mode)
  std::vector<int> connections;                              // protected connections; empty: all
  std::uint32_t replay_window = 64;
  std::vector<EspFault> faults;
  bool require_esp = false;  // recorded in expected.json for the analysis
  bool keys_given = true;    // false: expected.json names no SA file (esp.unknown-spi per SA)
  bool require_confidentiality = false;  // --esp-policy confidentiality
};

// "llp": "sctp" (RFC 5043): every connection is one SCTP association instead of a TCP
// connection; the MPA Request/Reply become a (Enhanced) DDP Session Initiate/Accept and each DDP
// segment one PPID 16 user message. The "sctp" block's options apply to every association.
struct SctpSpec {
  bool over_udp = false;        // RFC 6951: SCTP in UDP, port 9899 both ways
  std::uint16_t stream_id = 1;  // the SCTP stream the DDP stream uses, both directions
};

struct Scenario {
  std::string name;
  std::string description;
  std::int64_t start_ns = 1700000000LL * 1000000000LL;
  std::int64_t step_ns = 20000;
  std::vector<ConnectionSpec> connections;
  std::vector<RegionFileEntry> regions;
  std::vector<OpSpec> ops;
  std::vector<TcpFault> tcp_faults;
  std::vector<ManualExpectation> expect;
  std::optional<bool> exhaustive;
  std::optional<EspSpec> esp;
  std::optional<SctpSpec> sctp;  // present when a connection's LLP is SCTP
};

// Throws nothing: false and a one-line error naming the JSON path on a bad scenario.
bool parse_scenario(const nlohmann::json& j, Scenario& out, std::string& error);

}  // namespace ddpscope::synth
