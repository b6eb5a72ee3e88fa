// SPDX-License-Identifier: GPL-2.0-or-later
// Replaying one side of a captured stream against a live peer: the half without I/O. From the
// analyzer's view of a capture it builds
//  - the stream's RDMAP messages, assembled from their DDP segments (MessageAssembler);
//  - the SessionConfig that repeats the side's captured MPA Request or Reply
//    (replay_session_config);
//  - the plan the host walks (make_replay_plan): the messages to send and to expect, in capture
//    order, the regions to register under the captured STags with the contents the live peer
//    must find there, and the comparison of each live message with the captured one.
// The host (`ddpscope replay`) reads the capture, feeds the Analyzer and drives the socket.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ddpscope/analysis/model.h"
#include "ddpscope/analysis/pdu_event.h"
#include "ddpscope/common/bytes.h"
#include "ddpscope/session/session.h"
#include "ddpscope/wire/rdmap.h"
#include "ddpscope/wire/terminate_error.h"

namespace ddpscope::session {

// The side replayed; its value is the direction it sends (0: client -> server).
enum class ReplaySide : std::uint8_t { client = 0, server = 1 };

// One captured RDMAP message: every DDP segment up to and including the one with L set.
struct CapturedMessage {
  int direction = 0;
  std::uint8_t opcode = 0;
  bool tagged = false;
  // From the first segment's header.
  std::uint32_t qn = 0, msn = 0, rsvd_ulp1 = 0;
  std::uint32_t stag = 0;
  std::uint64_t to = 0;
  Bytes data;  // the payload, at MO (untagged) or TO - first TO (tagged)
  std::optional<wire::ReadRequest> read_request;
  std::optional<wire::AtomicRequest> atomic_request;
  std::optional<wire::AtomicResponse> atomic_response;
  std::optional<std::uint64_t> immediate;
  std::optional<TerminateError> terminate;
  std::uint64_t frame = 0;  // frame of the first segment
  std::int64_t ts_ns = 0;   // when the last segment was captured
};
std::string describe(const CapturedMessage& m);  // "Send, 16 octets"

// Assembles the messages of one stream from the PDUs the Analyzer reports. Only FPDUs whose CRC
// held count. Untagged segments join the open message of their queue (RFC 5041 §5.3, at MO);
// tagged ones the direction's open tagged message (RFC 5041 §5.2, at TO). Payload beyond 64 MiB
// into a message is dropped, so a hostile capture cannot grow one without bound.
class MessageAssembler final : public AnalysisObserver {
 public:
  explicit MessageAssembler(std::uint32_t stream) : stream_(stream) {}
  // Time of the frame about to be fed (a PduEvent names its frames, not their times).
  void set_frame_time(std::int64_t ts_ns) { now_ns_ = ts_ns; }
  void on_pdu(const PduEvent& p) override;
  // The complete messages of both directions, in the order their last segments arrived.
  const std::vector<CapturedMessage>& messages() const { return messages_; }
  std::vector<CapturedMessage> take_messages() { return std::move(messages_); }

  static constexpr std::uint64_t kMaxMessageOctets = std::uint64_t{64} << 20;

 private:
  static constexpr std::uint32_t kTaggedKey = 0xFFFFFFFFu;  // not a QN a message can use here
  std::uint32_t stream_;
  std::int64_t now_ns_ = 0;
  std::map<std::uint32_t, CapturedMessage> open_[2];  // by QN, or kTaggedKey
  std::vector<CapturedMessage> messages_;
};

// The connection parameters of `side` as its captured MPA Request (client) or Reply (server)
// gave them (RFC 5044 §7.1, RFC 6581 §5): revision, CRC, markers, the ULP's private data and,
// with the enhanced word, IRD, ORD, peer-to-peer and the RTR types. A replayed responder whose
// word names no RTR type accepts a zero-length Write. nullopt when the capture has no such frame.
// `pd` is left 0: the host allocates it.
std::optional<SessionConfig> replay_session_config(const StreamModel& stream, ReplaySide side);

// Live message as the host's session reported it.
struct LiveMessage {
  std::int64_t at_ns = 0;
  std::uint8_t opcode = 0;
  Bytes data;  // a Send's payload, or the octets a Write or Read Response placed
  std::uint32_t stag = 0;
  std::uint64_t to = 0;
  std::uint32_t length = 0;
  std::uint64_t value = 0;  // Immediate Data, or an Atomic's original value
  TerminateError terminate{};
};
std::string describe(const LiveMessage& m);

// A region registered under a captured STag: the octets [base, base + mem.size()).
struct ReplayRegion {
  std::uint64_t base = 0;
  Bytes mem;
};

class ReplayPlan {
 public:
  ReplaySide side = ReplaySide::client;
  int us() const { return static_cast<int>(side); }
  // The captured messages after the handshake's RTR (and the Read Response to a Read RTR).
  std::vector<CapturedMessage> script;
  // Our side's memory the live peer may reach, by captured STag: what our side advertised,
  // the sinks of our Read Requests, and whatever the peer wrote, read or used atomically.
  std::map<std::uint32_t, ReplayRegion> regions;
  // Largest Send the peer sent (at least 4096): the size of the receive buffers to post.
  std::size_t max_send = 4096;

  // A message the host posts itself (not a response, which our session produces).
  bool ours_to_send(const CapturedMessage& m) const;
  // Writes into `regions` what our side's Read Responses carried, for each Read Request of the
  // peer in script[from, next message ours to send): the data as it was when the peer read it.
  void apply_fills(std::size_t from);
  // The octets of a region, or empty when [to, to + len) is not wholly inside one.
  Bytes region_bytes(std::uint32_t stag, std::uint64_t to, std::size_t len) const;

  // The live STag and TO for the captured peer's (stag, to), once the live peer's advertisement
  // in the same position was seen; unchanged before.
  std::pair<std::uint32_t, std::uint64_t> live_stag_to(std::uint32_t stag, std::uint64_t to) const;
  // How the live message differs from the captured one; empty when it does not. A pair of
  // rping advertisements (ulp/rping.h) teaches live_stag_to() the live peer's buffers.
  std::string compare(const CapturedMessage& captured, const LiveMessage& live);

 private:
  friend std::optional<ReplayPlan> make_replay_plan(const StreamModel&, ReplaySide,
                                                    std::vector<CapturedMessage>, std::string&);
  struct Fill {
    std::size_t at;        // script index of the peer's Read Request
    std::uint32_t stag;    // our region it read
    std::uint64_t to;      // where
    std::size_t response;  // script index of our Read Response
  };
  std::vector<Fill> fills_;
  std::array<std::uint16_t, 2> ports_{};  // by direction: the captured sender's TCP port
  struct LiveBuffer {
    std::uint32_t stag;
    std::uint64_t captured_base, live_base;
  };
  std::map<std::uint32_t, LiveBuffer> live_;  // by the captured peer's STag
};

// Region caps: one region at most kMaxRegion octets, all of them together kMaxRegions.
inline constexpr std::uint64_t kReplayMaxRegion = std::uint64_t{256} << 20;
inline constexpr std::uint64_t kReplayMaxRegions = std::uint64_t{1} << 30;

// The plan for `side` of `stream` from its assembled messages. nullopt with `error` set when a
// region would be empty or exceed the caps.
std::optional<ReplayPlan> make_replay_plan(const StreamModel& stream, ReplaySide side,
                                           std::vector<CapturedMessage> messages,
                                           std::string& error);

}  // namespace ddpscope::session
