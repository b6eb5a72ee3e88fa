// SPDX-License-Identifier: GPL-2.0-or-later
// The I/O-free iWARP endpoint engine: one RDMAP/DDP stream (RFC 5040, 5041, 6581, 7306) over
// one of DDP's two LLPs (RFC 5041 §2.4): MPA over TCP (RFC 5044), a byte stream in and out, or
// SCTP (RFC 5043), one DDP segment per user message. It consumes what was received and produces
// what to send, events and a deadline; a host (the socket layer in endpoint/, or a test in
// memory) moves them. See docs/session.md.
//
//   idle ─start─▶ mpa_wait_request / mpa_wait_reply ─Req/Rep─▶ [wait_rtr] ─▶ established
//                      │ bad frame, reject                                    │ close()
//                      ▼                                                      ▼
//                   failed            terminated ◀──violation / Terminate── closing ─▶ closed
//
// Every incoming DDP segment goes through the Data Sink model (rdmap/data_sink.h) before one
// octet is placed; a violation queues the Terminate the rule layer names (RFC 5040 §4.8) — the
// same one the analyzer reports for the same segment — and the stream stops processing input
// (RFC 5040 §5.4: after a fatal error the stream stays until the local side aborts it).
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ddpscope/common/bytes.h"
#include "ddpscope/llp/boundary.h"
#include "ddpscope/mpa/negotiate.h"
#include "ddpscope/rdmap/data_sink.h"
#include "ddpscope/sctp/ddp_session.h"
#include "ddpscope/session/memory.h"
#include "ddpscope/wire/mpa.h"
#include "ddpscope/wire/rdmap.h"
#include "ddpscope/wire/terminate_error.h"

namespace ddpscope::session {

// ---------------------------------------------------------------------------------------------
// Configuration
// ---------------------------------------------------------------------------------------------

enum class Role : std::uint8_t { initiator, responder };
// The LLP under DDP (RFC 5041 §2.4). Only connection setup and framing differ: the Data Sink
// model and the operations are the same for both.
enum class Llp : std::uint8_t { mpa, sctp };
std::string_view to_string(Llp l);
using RtrType = llp::RtrType;
using llp::to_string;
namespace rtr_offer = mpa::rtr_offer;

struct MpaConfig {
  std::uint8_t revision = 2;  // 1 = RFC 5044, 2 = RFC 6581
  bool enhanced = true;       // rev 2: send the IRD/ORD word (Enhanced bit, as siw)
  bool peer_to_peer = true;   // A: RTR exchange after the Reply
  // Initiator: RTR types offered. Responder: types acceptable (preferred write, read, send).
  std::uint8_t rtr_types = rtr_offer::write | rtr_offer::read;
  bool crc = true;             // ask for CRC (used when either side asks, RFC 5044 §7.1)
  bool markers = false;        // M: ask the peer to put markers in what we receive
  bool accept_markers = true;  // false: refuse a peer asking for markers (as siw)
  std::uint16_t ird = 16;      // inbound Read Requests we accept at once
  std::uint16_t ord = 16;      // outbound Read Requests we want to have outstanding
  Bytes private_data;          // the ULP's private data
  bool reject = false;         // responder: refuse with R=1 (private data still sent)
  std::size_t max_private_data = wire::kMpaMaxPrivateDataRfc;
};

struct SessionLimits {
  std::size_t max_recv_buffers = 1024;       // posted receive buffers (QN 0)
  std::size_t max_tx_bytes = 16u << 20;      // octets queued for the socket; posts fail beyond
  std::size_t tx_low_water = 256u << 10;     // read responses are produced below this
  std::size_t max_queued_reads = 1024;       // Read Requests waiting for an ORD slot
  std::size_t max_outstanding_atomics = 16;  // RFC 7306 requests in flight
  std::size_t max_message = 1u << 30;        // largest single operation
  // Events not yet polled: beyond this, framing pauses (input_paused()) until the host polls, so a
  // flood of tiny FPDUs holds at most this many events whatever the size of one receive().
  std::size_t max_pending_events = 4096;
  std::int64_t handshake_timeout_ns = 10'000'000'000;
  // A partial FPDU or a message whose L segment has not come, with no complete FPDU received for
  // this long: the peer is taken as gone; the half message is dropped and want_abort() is set.
  std::int64_t stall_timeout_ns = 30'000'000'000;
  // After a Terminate (sent or received) or a finished close, the host has this long to tear the
  // transport down itself; then want_abort() asks it to reset (RFC 5040 §5.4).
  std::int64_t teardown_timeout_ns = 5'000'000'000;
};

// What one session holds, for hostile-peer tests and benchmarks (SessionLimits bounds each).
struct SessionUsage {
  std::size_t rx_bytes = 0;        // received octets buffered (a partial FPDU, or paused input)
  std::size_t tx_bytes = 0;        // octets queued for the transport
  std::size_t events = 0;          // events not yet polled
  std::size_t inbound_reads = 0;   // IRQ: the peer's Read Requests we still answer
  std::size_t outbound_reads = 0;  // ORQ + Read Requests queued beyond ORD
  std::size_t posted_recvs = 0;
  std::size_t held_bytes = 0;  // heap held by all of the above (buffer capacities included)
};

struct SessionConfig {
  Role role = Role::initiator;
  MpaConfig mpa;
  SessionLimits limits;
  std::uint32_t pd = 0;       // protection domain of this stream (MemoryTable::alloc_pd)
  std::uint32_t emss = 1460;  // effective MSS: MULPDU follows from it (RFC 5044 §8)
  // SCTP (RFC 5043): no MPA framing, markers or CRC; each DDP segment is one user message on
  // PPID 16 and the stream is set up by DDP Stream Session Control messages (PPID 17) carrying
  // `mpa`'s private data, IRD/ORD and RTR choice (revision, crc and markers do not apply).
  Llp llp = Llp::mpa;
  std::uint16_t sctp_stream = 0;  // the SCTP stream this DDP Stream maps to (RFC 5041 §2.4)
  bool rfc7306 = true;            // accept atomics and immediate data (siw does not)
  // The Terminate layout to send (siw's little-endian bit fields, for interop tests only).
  wire::TerminateLayout terminate_layout = wire::TerminateLayout::rfc;
  // The Data Sink we behave as when the peer breaks a rule (findings/sink_profile.h): its
  // Terminate, or a close without one, a wait, or going on. siw also refuses RFC 7306.
  SinkProfile sink_profile = SinkProfile::rfc;
};

// ---------------------------------------------------------------------------------------------
// Events
// ---------------------------------------------------------------------------------------------

enum class EventKind : std::uint8_t {
  connected,           // Full Operation Phase (responder: after the RTR)
  rejected,            // the peer refused (R=1) or we did
  recv_completed,      // a Send (any variant) filled a posted buffer
  immediate_received,  // RFC 7306 Immediate Data
  write_placed,        // an RDMA Write message (L=1) placed into a local region
  read_completed,      // our RDMA Read got all its data
  read_requested,      // the peer's RDMA Read Request passed the checks (answered by us)
  atomic_completed,    // our atomic got its response
  send_completed,      // a posted Send/Write went out to the transport (local completion)
  terminate_received,
  terminate_sent,
  // SCTP: we ended the DDP stream with a Session Terminate for an SCTP-level rule (RFC 5043
  // §11.3; `message` names the finding, `terminate` is unused)
  session_terminate_sent,
  // The peer broke a rule our sink profile answers with no Terminate (findings/sink_profile.h):
  // we closed the connection (FIN) or stopped reading (a wait). `message` names the rule.
  violation_closed,
  violation_waiting,
  error,   // local failure (handshake timeout, malformed Request/Reply, peer closed early)
  closed,  // graceful close finished or the transport ended
};
std::string_view to_string(EventKind k);

struct Event {
  EventKind kind = EventKind::error;
  std::uint64_t wr_id = 0;
  std::uint8_t opcode = 0;
  std::uint32_t length = 0;
  bool solicited = false;
  std::optional<std::uint32_t> invalidated_stag;
  std::uint32_t stag = 0;
  std::uint64_t to = 0;
  std::uint64_t value = 0;  // atomic original value, immediate data
  TerminateError terminate{};
  std::string message;
  Bytes private_data;  // connected / rejected: the peer's ULP private data
};

enum class PostStatus : std::uint8_t {
  ok,
  would_block,    // transmit queue full: drain output and retry
  not_connected,  // before Full Operation Phase, or after close/terminate
  no_resources,   // a cap was reached (receive buffers, queued reads, atomics)
  invalid,        // bad arguments (size, unknown local STag, ...)
};
std::string_view to_string(PostStatus s);

// Negotiated parameters, valid once connected.
struct Negotiated {
  std::uint8_t revision = 1;
  bool enhanced = false;
  bool crc = false;
  bool tx_markers = false;  // we insert markers (the peer asked)
  bool rx_markers = false;  // the peer inserts markers (we asked)
  bool peer_to_peer = false;
  RtrType rtr = RtrType::none;
  std::uint16_t ird = 0;  // Read Requests we accept at once
  std::uint16_t ord = 0;  // Read Requests we may have outstanding
  std::uint32_t mulpdu = 0;
  std::optional<wire::MpaEnhancedPd> peer_enhanced;
};

// SCTP: one user message of output() (RFC 5043: PPID 16 for a DDP segment, 17 for session
// control), to be sent whole on `stream_id`.
struct OutMessage {
  ByteView data;
  std::uint32_t ppid = 0;
  std::uint16_t stream_id = 0;
};

// ---------------------------------------------------------------------------------------------
// The session
// ---------------------------------------------------------------------------------------------

class Session {
 public:
  enum class State : std::uint8_t {
    idle,
    mpa_wait_request,  // responder
    mpa_wait_reply,    // initiator
    wait_rtr,          // responder, P2P: nothing may be sent until the RTR arrived
    established,
    closing,     // close(): pending operations finish, new ones fail
    terminated,  // a Terminate was sent or received: input ignored until abort()
    failed,      // the handshake failed or was rejected
    closed,
  };
  static std::string_view state_name(State s);

  Session(MemoryTable& memory, SessionConfig config);

  // Initiator: queues the MPA Request. Responder: starts waiting for it. `now_ns` starts the
  // handshake timer.
  void start(std::int64_t now_ns = 0);
  // The transport's MSS may change before the handshake ends (RFC 5044 §8).
  void set_emss(std::uint32_t emss);
  // SCTP: MULPDU from the association's path MTU, so that a DDP segment fills one DATA chunk of
  // one packet (RFC 5043 §9): the IP (and UDP, RFC 6951), SCTP common and DATA chunk headers and
  // the DDP-SSN taken off (sctp::mulpdu_for_path).
  void set_path_mtu(std::uint32_t pmtu, bool ipv6 = false, bool over_udp = false);

  // Octets received from the transport, in order. Never throws; hostile input is expected.
  void receive(ByteView data);
  // The same, telling the session the time (stall and teardown timers count from it).
  void receive(ByteView data, std::int64_t now_ns);
  // Framing stopped at max_pending_events with complete FPDUs still buffered: poll the events,
  // then call resume_input() (and read no more from the transport meanwhile).
  bool input_paused() const { return input_paused_; }
  void resume_input();
  // SCTP: one whole user message as the association delivered it (its PPID, stream id, and
  // whether it came unordered: RFC 5043 §4 sends every chunk so). Input pauses
  // (input_paused()) at max_pending_events as for MPA.
  void receive_message(std::uint32_t ppid, std::uint16_t stream_id, ByteView data,
                       std::int64_t now_ns, bool unordered = true);
  // The peer closed its sending side (FIN, SCTP SHUTDOWN) or the transport failed.
  void receive_eof();

  // Octets to send: a view valid until the next call on the session. SCTP: the user messages
  // one after the other; next_message() names the first, and the host consumes whole messages.
  ByteView output() const { return ByteView(tx_).subspan(tx_head_); }
  std::size_t output_size() const { return tx_.size() - tx_head_; }
  void consume_output(std::size_t n);
  std::optional<OutMessage> next_message() const;
  // True when the transport should send FIN after output() is drained (graceful close done).
  bool want_shutdown() const { return want_shutdown_; }
  // What we did about the first rule the peer broke (nullopt: none broken, or accepted).
  std::optional<SinkOutcome> violation_outcome() const { return violation_outcome_; }

  bool poll_event(Event& e);
  bool has_events() const { return !events_.empty(); }

  // The earliest time on_timer must be called, if any. on_timer may be called at any time (it
  // also tells the session the time).
  std::optional<std::int64_t> deadline() const;
  void on_timer(std::int64_t now_ns);
  // The host should reset the transport now (stall or teardown timeout).
  bool want_abort() const { return want_abort_; }

  // --- operations (RFC 5040 §5) ---
  PostStatus post_recv(std::span<std::uint8_t> buffer, std::uint64_t wr_id);
  struct SendOptions {
    bool solicited = false;
    std::optional<std::uint32_t> invalidate_stag;
    std::uint64_t wr_id = 0;
  };
  PostStatus send(ByteView data, const SendOptions& options);
  PostStatus send(ByteView data) { return send(data, SendOptions{}); }
  PostStatus rdma_write(ByteView data, std::uint32_t remote_stag, std::uint64_t remote_to,
                        std::uint64_t wr_id = 0);
  // Reads `size` octets of the peer's (remote_stag, remote_to) into our (local_stag, local_to).
  // Queued while ORD Read Requests are outstanding.
  PostStatus rdma_read(std::uint32_t local_stag, std::uint64_t local_to, std::uint32_t size,
                       std::uint32_t remote_stag, std::uint64_t remote_to, std::uint64_t wr_id = 0);
  // RFC 7306.
  PostStatus send_immediate(std::uint64_t data, bool solicited = false, std::uint64_t wr_id = 0);
  PostStatus atomic_fetch_add(std::uint32_t remote_stag, std::uint64_t remote_to, std::uint64_t add,
                              std::uint64_t wr_id = 0);
  PostStatus atomic_compare_swap(std::uint32_t remote_stag, std::uint64_t remote_to,
                                 std::uint64_t compare, std::uint64_t swap,
                                 std::uint64_t wr_id = 0);
  // Sends a Terminate with this error (no header quoted) and stops.
  void terminate(const TerminateError& error);
  // Graceful: pending operations complete, new ones fail, then want_shutdown().
  void close();
  // Abortive teardown (the host resets the transport).
  void abort();

  // --- raw access, for hostile-peer tests and replay ---
  // Queues a ULPDU as one FPDU (our CRC and markers settings), bypassing every check.
  void send_raw_ulpdu(ByteView ulpdu);

  State state() const { return state_; }
  Role role() const { return config_.role; }
  const Negotiated& negotiated() const { return neg_; }
  std::uint64_t stream_id() const { return stream_id_; }
  std::uint32_t pd() const { return config_.pd; }
  const SessionConfig& config() const { return config_; }
  // The peer's Request or Reply, once received (MPA).
  const std::optional<wire::MpaReqRep>& peer_frame() const { return peer_frame_; }
  Llp llp() const { return config_.llp; }
  std::size_t outstanding_reads() const { return sink_.orq().size(); }
  std::size_t posted_recvs() const { return recvs_.size(); }
  bool idle() const;  // nothing queued or outstanding
  std::uint64_t bytes_placed() const { return bytes_placed_; }
  SessionUsage usage() const;
  // Field-wise maxima of usage(), sampled whenever input, output or events grow.
  const SessionUsage& peak_usage() const { return peak_; }
  // The last Terminate sent or received.
  std::optional<TerminateError> terminate_sent() const { return term_sent_; }
  std::optional<TerminateError> terminate_received() const { return term_received_; }
  // SCTP: the rule for which we ended the DDP stream with a Session Terminate (RFC 5043 has no
  // LLP Terminate codes: catalog.h, LlpAction).
  std::optional<FindingId> session_terminate_sent() const { return session_terminate_sent_; }

 private:
  struct RecvBuffer {
    std::span<std::uint8_t> mem;
    std::uint64_t wr_id;
  };
  struct QueuedRead {
    wire::ReadRequest req;
    std::uint64_t wr_id;
  };
  // What the Data Sink model asks of our memory: registered regions and posted buffers.
  class SinkView final : public rdmap::SinkMemory {
   public:
    explicit SinkView(Session& s) : s_(s) {}
    const ddp::RegionFacts* region(std::uint32_t stag) override;
    bool regions_known() const override { return true; }
    ddp::UntaggedBuffer send_buffer() override;

   private:
    Session& s_;
    ddp::RegionFacts facts_;
  };

  void queue_reqrep(bool reject);
  void handle_handshake();
  // SCTP connection setup (session_sctp.cpp): the DDP Stream Session Control messages.
  void queue_session_control(bool reject);
  void handle_session_control(ByteView msg);
  void receive_in_order(std::uint32_t ppid, ByteView msg);
  // Queues our DDP Stream Session Terminate (RFC 5043 §6.1), once.
  void queue_session_terminate();
  // An SCTP-level rule broken (sctp/ddp_session.h): the Session Terminate, then stop.
  void end_stream(const Violation& v);
  int own_side() const { return config_.role == Role::initiator ? 0 : 1; }
  void note_tx_message(std::size_t start, std::uint32_t ppid);
  bool handle_request(const wire::MpaReqRep& req);
  bool handle_reply(const wire::MpaReqRep& rep);
  mpa::Policy frame_policy(std::uint8_t max_revision) const;
  void settle_as_responder(const std::optional<wire::MpaEnhancedPd>& peer);
  void reject_locally(ByteView peer_private_data);
  void rejected_by_peer(ByteView peer_private_data);
  void accept_peer();
  void enter_full_operation();
  void send_rtr();
  void process_fpdus();
  // Returns the ULPDU of the next complete FPDU (markers stripped), or empty with `need_more`.
  bool next_fpdu(ByteView& ulpdu, std::size_t& raw_len, bool& fatal);
  void handle_ulpdu(ByteView ulpdu);
  // An accepted segment: placement into our memory, completions and events.
  void place_tagged(const wire::DdpSegment& seg, const rdmap::SegmentStep& step);
  void place_untagged(const wire::DdpSegment& seg, const rdmap::SegmentStep& step);
  void handle_terminate(const wire::DdpSegment& seg);
  // RFC 5040 §4.8 / §5.4: the Terminate for `v` (quoting `seg` as it says), then stop.
  void fatal(const Violation& v, const wire::DdpSegment* seg, ByteView ulpdu);
  void enter_terminated();  // after our Terminate: state, timers, inbound reads dropped
  // A local failure: a Terminate with `error`, no header quoted.
  void fatal(const TerminateError& error);
  void receive_framed(ByteView data);
  bool receiving() const;
  bool partial_input() const;  // a partial FPDU or an unfinished message
  void drop_partial_input();
  void update_stall_timer(bool progress);
  void start_teardown_timer();
  void note_usage();
  void fail(std::string message);
  void push(Event e);

  // Transmit
  void emit_fpdu_header_and(ByteView hdr, ByteView payload);
  void emit_untagged(std::uint8_t opcode, std::uint32_t qn, std::uint32_t rsvd_ulp1, ByteView body,
                     ByteView payload, bool last_only = false);
  void emit_tagged(std::uint8_t opcode, std::uint32_t stag, std::uint64_t to, ByteView payload);
  // Segments of one tagged message; L on the last one only when `final`.
  void emit_tagged_part(std::uint8_t opcode, std::uint32_t stag, std::uint64_t to, ByteView payload,
                        bool final);
  void pump_reads();             // issue queued Read Requests within ORD
  void pump_read_responses();    // produce IRQ responses while the transmit queue is short
  void retire_answered_reads();  // IRQ entries whose response the transport took
  void drop_inbound_reads();     // after a Terminate, abort or stall: none is answered
  bool can_post() const;
  void maybe_finish_close();
  std::uint32_t payload_room(bool tagged) const;

  MemoryTable& memory_;
  SessionConfig config_;
  State state_ = State::idle;
  std::uint64_t stream_id_ = 0;
  Negotiated neg_;
  std::optional<wire::MpaReqRep> peer_frame_;
  Bytes peer_private_data_;  // SCTP: the ULP private data of the peer's Initiate / Accept
  std::optional<std::int64_t> deadline_;           // handshake
  std::optional<std::int64_t> stall_deadline_;     // partial FPDU / message
  std::optional<std::int64_t> teardown_deadline_;  // after Terminate or close
  std::int64_t now_ = 0;
  bool want_abort_ = false;
  SessionUsage peak_;

  // Receive
  Bytes rx_;
  std::size_t rx_head_ = 0;
  std::uint64_t rx_pos_ = 0;  // stream position (from the peer's S0) of rx_[rx_head_]
  bool rx_full_ = false;      // past the peer's Request/Reply
  Bytes scratch_;
  ByteView direct_;  // receive(): the caller's octets, framed without copying
  bool direct_mode_ = false;
  bool input_paused_ = false;
  std::uint64_t fpdus_in_ = 0;  // complete FPDUs framed (progress for the stall timer)
  // Until the peer's first FPDU: the transmit position just past the frame that allows it (our
  // Reply, or our RTR in peer-to-peer mode), checked by mpa::check_setup_order.
  std::optional<std::uint64_t> setup_gate_;
  rdmap::DataSink sink_;  // our Data Sink: MSNs, the tagged message, ORQ, IRQ, atomics, RTR
  std::deque<RecvBuffer> recvs_;
  std::deque<QueuedRead> read_queue_;
  // The IRQ (sink_.irq()) from its head: entries whose Read Response is queued in full but not
  // yet taken by the transport (each with the transmit position just past its last octet), then
  // the entry being answered (irq_sent_ octets so far). An entry stays in progress, against IRD,
  // until the transport took its last octet (RFC 5040 §5.2: the requester may not send another
  // Read Request for its slot before the response reached it).
  std::size_t irq_queued_ = 0;
  std::deque<std::uint64_t> irq_queued_end_;
  std::uint32_t irq_sent_ = 0;
  std::uint32_t next_atomic_id_ = 1;
  wire::MpaReqRep own_frame_;  // the Request or Reply we sent

  // Transmit
  Bytes tx_;
  std::size_t tx_head_ = 0;
  std::uint64_t tx_pos_ = 0;    // our stream position from S0 (markers)
  std::uint64_t tx_taken_ = 0;  // octets the transport took (consume_output), in all
  bool tx_full_ = false;        // S0 passed
  // SCTP: the user messages queued in tx_ from tx_head_, in order (length, PPID).
  struct TxMessage {
    std::size_t length;
    std::uint32_t ppid;
  };
  std::deque<TxMessage> tx_msgs_;
  std::size_t tx_msg_taken_ = 0;  // octets of tx_msgs_.front() already consumed
  std::uint32_t tx_msn_[5] = {1, 1, 1, 1, 1};
  bool want_shutdown_ = false;
  std::optional<SinkOutcome> violation_outcome_;
  bool waiting_forever_ = false;  // a wait outcome: nothing more is read
  std::uint64_t bytes_placed_ = 0;

  // SCTP (RFC 5043): our next DDP-SSN; the peer's messages in DDP-SSN order; the DDP Stream
  // Session's rules, fed with both sides' session control.
  struct HeldMessage {
    std::uint32_t ppid = 0;
    Bytes data;
  };
  static constexpr std::size_t kMaxHeldMessages = 1024;
  std::uint16_t tx_ssn_ = 0;
  bool session_terminate_queued_ = false;
  sctp::SsnOrder<HeldMessage> rx_order_;
  sctp::StreamSession sctp_rules_;
  std::optional<FindingId> session_terminate_sent_;

  std::deque<Event> events_;
  std::optional<TerminateError> term_sent_;
  std::optional<TerminateError> term_received_;
};

}  // namespace ddpscope::session
