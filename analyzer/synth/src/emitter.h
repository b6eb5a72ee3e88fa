// SPDX-License-Identifier: GPL-2.0-or-later
// Segment emission of the synthetic capture generator: the byte stream of each connection
// direction (MPA Request/Reply, then FPDUs with the direction's markers and CRC), RDMAP messages
// cut into DDP segments with the scenario's header and FPDU faults, the stream cut into TCP
// segments, the TCP faults applied to them, and the capture's frames.
//
// What it emits is recorded for the oracle (oracle.h): every DDP segment with its stream octets
// and what became of its FPDU. What it injects below the Data Sink (CRC, markers, ULPDU_Length,
// MULPDU, DDP reserved bits, TCP loss and conflicts) it expects itself, by the stream offset of
// the offending PDU's first octet (or by packet), resolved to a frame once faults are applied.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "ddpscope/findings/catalog.h"
#include "ddpscope/mpa/negotiate.h"
#include "ddpscope/wire/ddp.h"
#include "ddpscope/wire/rdmap.h"
#include "generator.h"
#include "scenario.h"

namespace ddpscope::synth {

// A scenario that is well-formed JSON but cannot be generated (e.g. a fault that needs CRC on
// a connection without CRC). Caught in generate().
struct GenerateError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// What the generator injected into a DDP segment, in its own words, and the finding it aims at.
// When the oracle's rule layer reports that finding for the segment, the words are its detail.
struct Intent {
  FindingId id = FindingId::count_;
  std::string detail;
};

// One DDP segment as emitted, in the order emitted.
struct EmittedSegment {
  enum class Fate : std::uint8_t {
    framed,       // a well-formed FPDU: the analyzer hands the segment to its Data Sink
    crc_dropped,  // CRC altered: a Data Sink drops the FPDU (RFC 5044 §4.2)
    unframed,     // ULPDU_Length altered: the stream cannot be framed from here on
  };
  int conn = 0;
  int dir = 0;
  int op = -1;              // scenario operation, -1 for the connection's RTR
  std::uint64_t begin = 0;  // stream octets of the FPDU, markers included
  std::uint64_t end = 0;
  Bytes ulpdu;  // the DDP header and payload as sent
  Fate fate = Fate::framed;
  bool scenario_data = false;  // tagged data the scenario wrote (reported in regions_written)
  std::vector<Intent> intents;
};

// An expected finding before frames are known.
struct Expect {
  std::string code;
  int conn = 0;
  int dir = 0;
  std::uint64_t offset = 0;   // first octet of the offending PDU
  std::optional<int> packet;  // or: this packet (gap, conflict)
  int op = -1;
  bool consequence = false;
  std::string detail;
};

// Octets appended to one direction's stream: an MPA Request/Reply or one FPDU.
struct Unit {
  Bytes wire;
  std::uint64_t offset = 0;  // stream offset (0 = first payload octet after the SYN)
  // SCTP: the user message's PPID (16 a DDP segment, 17 session control); `wire` is the whole
  // user message, DDP-SSN first.
  std::uint32_t ppid = 16;
  bool ordered = false;         // U = 0 (fault)
  std::uint32_t fragments = 1;  // DATA chunks the message is cut into (in one packet)
  bool reverse = false;         // bundled with the rest of the flush, TSNs in reverse order
  bool bad_checksum = false;    // its packet sent with a wrong CRC32c, then again intact
  bool lost = false;            // its packet missing from the capture
};

// One direction of a connection, named by its sender.
struct Dir {
  std::uint32_t isn = 0;
  std::uint64_t len = 0;      // octets produced so far: the offset of the next unit
  std::uint64_t flushed = 0;  // octets already cut into packets
  std::vector<Unit> pending;
  std::uint64_t s0 = 0;  // offset of the first octet after this side's Request/Reply
  bool markers = false;  // this side inserts markers (the peer asked with M)
  bool crc = false;
  std::uint32_t peer_mss = 0;
  std::uint32_t mulpdu = 0;
  std::uint32_t tcp_segment = 0;
  bool mulpdu_reported = false;
  std::map<std::uint32_t, std::uint32_t> next_msn;  // per QN, starting at 1 (RFC 5041 §5.1)
  int outstanding_reads = 0;                        // Read Requests this side awaits answers to
  // The last DDP segment this side sent, for a Terminate from the peer to quote.
  std::optional<wire::DdpHeader> last_header;
  std::uint16_t last_ulpdu_length = 0;
  Bytes last_rdmap_body;
  // SCTP (RFC 5043): this side's Initiate Tag, next TSN and next DDP-SSN.
  std::uint32_t tag = 0;
  std::uint32_t tsn = 0;
  std::uint16_t ddp_ssn = 0;
  std::uint32_t msn(std::uint32_t qn) const {
    auto it = next_msn.find(qn);
    return it == next_msn.end() ? 1 : it->second;
  }
};

struct Conn {
  const ConnectionSpec* spec = nullptr;
  std::array<Dir, 2> dirs;
  std::array<net::Endpoint, 2> ep;  // by side
  bool rejected = false;
  // What the MPA Request and Reply settled (mpa::settle), once FPDUs may flow.
  std::optional<mpa::Parameters> params;
};

struct Packet {
  int id = 0;
  int conn = 0;
  int dir = 0;
  std::uint32_t seq = 0;
  std::uint32_t ack = 0;
  std::uint8_t flags = 0;
  std::optional<std::uint16_t> mss;
  Bytes payload;
  std::uint64_t offset = 0;  // stream offset of payload[0] (of the FIN for a FIN)
  bool dropped = false;
  // In the capture, but its receiver never took it (its ESP packet fails the ICV: esp_wrap).
  bool receiver_dropped = false;
  // SCTP: the packet's chunks; `payload` then holds the user messages of its DATA chunks (the
  // stream octets frame_at() looks up) and `ack` is unused.
  std::optional<Bytes> chunks;
  bool bad_checksum = false;
};

class Emitter {
 public:
  explicit Emitter(const Scenario& s);

  [[noreturn]] void fail(int op, const std::string& what) const;

  // ---- expectations of what it injects below the Data Sink ----
  void expect(const std::string& code, int ci, int dir, std::uint64_t offset, int op,
              std::string detail, bool consequence = false);
  void expect_packet(const std::string& code, int ci, int dir, int packet, int op,
                     std::string detail);
  // A fault whose follow-on findings depend on engine policy (resynchronisation, what a broken
  // segment leaves of the Data Sink's state): the expected list becomes a lower bound.
  void cascading() { exhaustive_ = false; }
  bool exhaustive() const { return exhaustive_; }

  // ---- TCP and the byte streams ----
  Conn& conn(int ci) { return conns_[ci]; }
  const Conn& conn(int ci) const { return conns_[ci]; }
  std::size_t connections() const { return conns_.size(); }
  // The TCP three-way handshake with MSS options.
  void open_tcp(int ci);
  // Appends a unit (Request/Reply or FPDU) to a direction; returns its stream offset.
  std::uint64_t append(int ci, int dir, Bytes wire, int op);
  // Cuts the pending octets of a direction into TCP segments; the peer then ACKs them.
  void flush(int ci, int dir, bool ack = true);
  // FINs from both sides and the last ACK.
  void close(int ci);
  // After the MPA Reply: framing (markers, CRC, MULPDU) as the two frames settled it.
  void start_fpdus(int ci, const mpa::Parameters& p);

  // ---- SCTP (the scenario's "llp": "sctp", RFC 5043) ----
  bool sctp(int ci) const { return conns_[ci].spec->over_sctp; }
  // A DDP session control message (its DDP-SSN the direction's next) as a PPID 17 unit.
  std::uint64_t session_control(int ci, int dir, std::uint16_t function_code, Bytes private_data,
                                std::optional<wire::MpaEnhancedPd> enhanced, int op);
  // The last unit appended to a direction (to mark SCTP options on it).
  Unit& last_unit(int ci, int dir) { return conns_[ci].dirs[dir].pending.back(); }

  // ---- RDMAP messages as DDP segments ----
  // An untagged message (RFC 5041 §4.3) in segments of at most the direction's payload size;
  // `rsvd1` is RDMAP's second RsvdULP word (Invalidate STag). `intents` apply to every segment.
  // Returns the stream offsets of the segments' FPDUs.
  std::vector<std::uint64_t> untagged(int ci, int dir, int op, wire::Opcode opcode,
                                      std::uint32_t qn, std::uint32_t rsvd1, const Bytes& payload,
                                      const OpFault* f, const std::vector<Intent>& intents = {});
  // A tagged message (RFC 5041 §4.2): consecutive segments, TO advancing by length.
  std::vector<std::uint64_t> tagged(int ci, int dir, int op, wire::Opcode opcode,
                                    std::uint32_t stag, std::uint64_t to, const Bytes& payload,
                                    const OpFault* f, const std::vector<Intent>& intents = {},
                                    bool scenario_data = false);

  // ---- TCP faults and the capture ----
  void apply_tcp_fault(const TcpFault& f);
  // Numbers the frames of the capture (dropped packets have none) and writes them out.
  void finalize(std::vector<GeneratedFrame>& frames);
  // The frame (1-based) of the first packet in capture order that holds the stream octet at
  // `offset` of (conn, dir); 0 when only dropped packets held it. After finalize().
  std::uint64_t frame_at(int conn, int dir, std::uint64_t offset) const;
  // The expectations of what it injected, at their frames (after finalize()). One whose PDU
  // the capture does not show makes the list a lower bound.
  std::vector<ExpectedFinding> expected();

  const std::vector<Packet>& packets() const { return packets_; }
  const std::vector<int>& order() const { return order_; }  // capture order of packet ids
  const std::vector<EmittedSegment>& segments() const { return segments_; }
  // FPDU offsets of one operation, for scenario expectations naming its n-th FPDU.
  const std::vector<std::uint64_t>& op_units(int op) const { return op_units_[op]; }
  std::pair<int, int> op_direction(int op) const {
    return {op_ranges_[op].conn, op_ranges_[op].dir};
  }

 private:
  // Where one operation's own octets went, for TCP faults naming the operation.
  struct OpRange {
    int conn = -1;
    int dir = 0;
    std::uint64_t begin = 0;
    std::uint64_t end = 0;
  };
  // The FPDU-level view of a DDP segment being built, before encoding.
  struct SegmentDraft {
    wire::DdpHeader header;
    Bytes body;  // after the DDP header
    std::vector<Intent> intents;
  };

  int add_packet(int ci, int dir, std::uint8_t flags, Bytes payload, std::uint64_t offset,
                 std::optional<std::uint16_t> mss = std::nullopt);
  void pure_ack(int ci, int dir);
  int add_sctp_packet(int ci, int dir, Bytes chunks, Bytes payload = {}, std::uint64_t offset = 0);
  void open_sctp(int ci);
  void flush_sctp(int ci, int dir, bool ack);
  void data_chunks(Dir& d, const Unit& u, Bytes& chunks) const;
  void close_sctp(int ci);
  void sack(int ci, int dir);
  std::uint32_t max_payload(int ci, int dir, int op, bool tagged) const;
  // Encodes one DDP segment as an FPDU, applies the FPDU-level faults of `f` when `selected`,
  // appends and records it; returns its stream offset.
  std::uint64_t emit_fpdu(int ci, int dir, int op, SegmentDraft seg, const OpFault* f,
                          bool selected, bool scenario_data);
  void apply_header_faults(int op, SegmentDraft& seg, const OpFault& f);
  int selected_segment(int op, const OpFault* f, std::size_t n) const;
  void ensure_order();
  std::size_t locate(const TcpFault& f) const;
  std::size_t later(std::size_t pos, int conn, int after) const;

  const Scenario& s_;
  std::vector<Conn> conns_;
  std::vector<Packet> packets_;
  std::vector<int> order_;                 // capture order of packet ids, built when faults apply
  std::map<int, std::uint64_t> frame_of_;  // packet id -> frame number, after finalize()
  std::vector<Expect> expects_;
  std::vector<EmittedSegment> segments_;
  std::vector<OpRange> op_ranges_;
  std::vector<std::vector<std::uint64_t>> op_units_;
  bool exhaustive_ = true;
  std::vector<std::pair<int, int>> lost_;  // SCTP: dropped packet id, op (sctp.gap after it)
};

}  // namespace ddpscope::synth
