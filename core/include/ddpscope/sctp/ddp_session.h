// SPDX-License-Identifier: GPL-2.0-or-later
// The DDP adaptation's rules over SCTP (RFC 5043), written once for the analyzer and the endpoint,
// as mpa/negotiate.h and mpa/rules.h are for MPA:
//   - SsnOrder: one direction of one DDP stream put in DDP-SSN order (§5.2.1, §10). Chunks travel
//     unordered, so a later message may carry a lower TSN; the DDP-SSN is the order the session's
//     rules are judged in.
//   - StreamSession: the DDP Stream Session's legal sequences (§6.1-§6.4), the ordering rules of
//     §6.6, and the session control message's own rules (§5.2.3).
//   - The per-message rules: U = 1 (§4, §10), the DDP adaptation indication (§5.1, §11.1), the
//     MULPDU (§9).
// Each rule returns a Violation naming a catalog finding (sctp.*). RFC 5043 defines no LLP
// Terminate codes: the catalog's LlpAction says what the receiver does (a Session Terminate or an
// ABORT, §11.3); the analyzer reports the finding, the endpoint does that.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ddpscope/findings/violation.h"
#include "ddpscope/wire/sctp.h"

namespace ddpscope::sctp {

// A Violation of one of the sctp.* rules (no RDMAP Terminate: see LlpAction).
Violation violation(FindingId id, std::string detail);

// ---------------------------------------------------------------------------------------------
// DDP-SSN order
// ---------------------------------------------------------------------------------------------

// One direction of one DDP stream: messages are taken in the order they arrive (TSN order) and
// handed on in DDP-SSN order. `M` is what the host keeps with a message. Bounded by its caller:
// held() and held_messages() say what waits behind a hole.
template <class M>
class SsnOrder {
 public:
  enum class Verdict : std::uint8_t {
    delivered,  // it was next: handed on, with every held message that followed it
    held,       // ahead of a hole: kept until the hole is filled or given up
    behind,     // its DDP-SSN was already handed on or given up: not handed on
    duplicate,  // a held message has the same DDP-SSN: not kept
  };
  // Before the first message the order starts at `first` (0 at a session's start, §5.2.1), or,
  // unset, at the first message's DDP-SSN (a capture that starts mid-stream).
  void start_at(std::uint16_t first) {
    next_ = first;
    started_ = true;
  }
  bool started() const { return started_; }
  std::uint16_t next() const { return next_; }
  bool holding() const { return !held_.empty(); }
  std::size_t held_messages() const { return held_.size(); }
  // The DDP-SSN of the first held message, and the message (valid while holding()).
  std::uint16_t first_held() const { return lowest()->first; }
  const M* first_held_message() const { return held_.empty() ? nullptr : &lowest()->second; }

  // The in-order fast path for a host that would rather not copy a message to push() it: true,
  // with the order moved past it, when `ssn` is the one expected, so that the caller judges the
  // message where it lies and then calls release() for the held ones it let through.
  bool take_if_next(std::uint16_t ssn) {
    if (!started_) start_at(ssn);
    if (ssn != next_) return false;
    ++next_;
    return true;
  }
  template <class Deliver>
  void release(Deliver&& deliver) {
    drain(deliver);
  }
  template <class Deliver>
  Verdict push(std::uint16_t ssn, M&& m, Deliver&& deliver) {
    if (!started_) start_at(ssn);
    if (ssn == next_) {
      ++next_;
      deliver(ssn, std::move(m));
      drain(deliver);
      return Verdict::delivered;
    }
    if (wire::ddp_ssn_before(ssn, next_)) return Verdict::behind;
    if (!held_.try_emplace(ssn, std::move(m)).second) return Verdict::duplicate;
    return Verdict::held;
  }
  // Gives the hole up: the order moves to the first held message and hands it and its followers
  // on. Returns the DDP-SSNs given up, [from, to).
  template <class Deliver>
  std::pair<std::uint16_t, std::uint16_t> skip_hole(Deliver&& deliver) {
    if (held_.empty()) return {next_, next_};
    const std::uint16_t from = next_;
    next_ = lowest()->first;
    const std::uint16_t to = next_;
    drain(deliver);
    return {from, to};
  }
  // Drops everything held (a stream that ended, or the analysis giving it up).
  void clear() { held_.clear(); }

 private:
  // Held DDP-SSNs are ahead of next_ by less than 2^15: the lowest in serial order is the first
  // at or after next_ in the map's numeric order, else the numerically lowest (a wrap).
  typename std::map<std::uint16_t, M>::iterator lowest() {
    auto it = held_.lower_bound(next_);
    return it != held_.end() ? it : held_.begin();
  }
  typename std::map<std::uint16_t, M>::const_iterator lowest() const {
    auto it = held_.lower_bound(next_);
    return it != held_.end() ? it : held_.begin();
  }
  template <class Deliver>
  void drain(Deliver& deliver) {
    for (auto it = held_.find(next_); it != held_.end(); it = held_.find(next_)) {
      M m = std::move(it->second);
      const std::uint16_t ssn = it->first;
      held_.erase(it);
      ++next_;
      deliver(ssn, std::move(m));
    }
  }
  std::map<std::uint16_t, M> held_;
  std::uint16_t next_ = 0;
  bool started_ = false;
};

// ---------------------------------------------------------------------------------------------
// The DDP Stream Session (RFC 5043 §6)
// ---------------------------------------------------------------------------------------------

// Side 0 is the active side (it sends the Initiate), side 1 the passive side. Messages are given
// in each side's DDP-SSN order.
class StreamSession {
 public:
  enum class Phase : std::uint8_t {
    unknown,    // the capture began after the session was set up: nothing is judged by phase
    idle,       // nothing yet
    initiated,  // the Initiate was sent
    accepted,   // Accept: Full Operation (DDP segments both ways)
    rejected,   // Reject, or a Terminate in answer to the Initiate (the non-ULP reject, §6.3)
  };
  explicit StreamSession(Phase start = Phase::idle) : phase_(start) {}

  // One session control message from `side`. The violations of §5.2.3 (function code, private
  // data) and of §6.1-§6.4 (sequence), in that order; empty when the message is legal.
  std::vector<Violation> on_control(int side, const wire::DdpSessionControl& m);
  // One DDP segment from `side`. `allowed_early`: for the active side, whether its Initiate had
  // been acknowledged (SCTP SACK) or answered when the segment was sent (§6.6).
  std::optional<Violation> on_segment(int side, bool allowed_early);
  // The association shut down gracefully: an accepted session that neither side terminated.
  std::optional<Violation> on_association_shutdown() const;

  Phase phase() const { return phase_; }
  bool terminated(int side) const { return terminated_[side & 1]; }
  bool ended() const { return terminated_[0] || terminated_[1] || phase_ == Phase::rejected; }
  bool enhanced() const { return enhanced_; }

 private:
  Phase phase_;
  bool terminated_[2] = {false, false};
  bool enhanced_ = false;
};

// ---------------------------------------------------------------------------------------------
// Per-message rules
// ---------------------------------------------------------------------------------------------

// A DATA chunk (or, to a socket host, a user message) of PPID 16 or 17 sent ordered (U = 0;
// RFC 5043 §4, §10). `what` names it in the detail ("DATA chunk TSN 7, stream 1").
std::optional<Violation> check_unordered(bool unordered, std::uint32_t ppid, std::string_view what);
// DDP messages on an association whose setup did not settle on DDP (RFC 5043 §5.1, §11.1): both
// INIT and INIT ACK must carry the adaptation indication with value 1. `init` and `init_ack` are
// the code points each carried (nullopt: the parameter was absent).
std::optional<Violation> check_adaptation(std::optional<std::uint32_t> init,
                                          std::optional<std::uint32_t> init_ack);
// A DDP segment that SCTP fragmented over `chunks` DATA chunks (RFC 5043 §9): DDP sizes its
// segments to the MULPDU, the largest that needs no fragmentation, so one that needed it was
// larger than the path allows. Null for a segment in one chunk.
std::optional<Violation> check_fragmented(std::size_t segment_octets, std::uint32_t chunks);
// A DDP segment (after its DDP-SSN) longer than the MULPDU the path allows (RFC 5043 §9).
std::optional<Violation> check_segment_size(std::size_t segment_octets, std::uint32_t mulpdu,
                                            std::string_view why);
// RFC 5043 §9: the largest DDP segment a path of `pmtu` octets carries in one DATA chunk of one
// packet: the IP header, the SCTP common header, the DATA chunk header and the DDP-SSN taken off
// (UDP's 8 octets too over RFC 6951 encapsulation), capped at 65535 (a DDP segment's length).
std::uint32_t mulpdu_for_path(std::uint32_t pmtu, bool ipv6, bool over_udp);

}  // namespace ddpscope::sctp
