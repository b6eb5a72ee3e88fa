// SPDX-License-Identifier: GPL-2.0-or-later
// MPA connection setup (RFC 5044 §7.1, RFC 6581 §9), written once: the checks on a Request or
// Reply frame and the parameters the two settle. The analyzer runs them on the frames a capture
// shows; the endpoint on the frame its peer sends (refusing a bad Request with R=1, answering a
// bad Reply with the Terminate the Violation names).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ddpscope/findings/violation.h"
#include "ddpscope/llp/boundary.h"
#include "ddpscope/wire/ddp.h"
#include "ddpscope/wire/mpa.h"

namespace ddpscope::mpa {

// RTR types an initiator offers (RFC 6581 §9.2).
namespace rtr_offer {
inline constexpr std::uint8_t send = 0x1;
inline constexpr std::uint8_t write = 0x2;
inline constexpr std::uint8_t read = 0x4;
}  // namespace rtr_offer

// What the side checking a frame accepts. An analysis accepts all the RFCs allow (and revision
// 0, which siw accepts); the endpoint narrows it to its configuration.
struct Policy {
  std::uint8_t min_revision = 0;
  std::uint8_t max_revision = 2;
  std::size_t max_private_data = wire::kMpaMaxPrivateDataRfc;
  bool accept_markers = true;
};

// A frame that is no acceptable Request/Reply at all (no MPA key, undecodable, the wrong kind,
// too long): LLP/MPA 0x04.
Violation frame_invalid(std::string detail);

// Checks one Request or Reply on its own: revision, R in a Request, reserved flag bits (a note),
// private data length (over 256 a note: siw and cxgb4 refuse it), the RFC 6581 word. Every
// violation found, in that order; those with a Terminate make the frame unacceptable.
std::vector<Violation> check_frame(const wire::MpaReqRep& frame, const Policy& policy);

// The parameters a Request and its Reply settle.
struct Parameters {
  std::uint8_t revision = 1;
  bool enhanced = false;              // both frames carry the RFC 6581 word
  bool crc = false;                   // either side's C (RFC 5044 §7.1)
  bool markers_to_responder = false;  // the Reply's M: the initiator inserts markers
  bool markers_to_initiator = false;  // the Request's M: the responder inserts markers
  bool peer_to_peer = false;
  llp::RtrType rtr = llp::RtrType::none;  // the RTR the Reply picked (peer-to-peer only)
  // Read Requests each side accepts in progress (its IRD word), when enhanced and given.
  std::optional<std::uint16_t> initiator_ird;
  std::optional<std::uint16_t> responder_ird;
};

// The RTR type an RFC 6581 word picks (write, read, send in that order), none when it picks none.
llp::RtrType picked_rtr(const wire::MpaEnhancedPd& pd);
std::uint8_t rtr_bit(llp::RtrType t);

// The Reply against the Request (RFC 5044 §7.1, RFC 6581 §9): its revision is not above the
// Request's (LLP/MPA 0x04); with peer-to-peer asked, it echoes A and picks exactly one RTR type
// the Request offered (0x07); the responder's ORD fits the initiator's IRD (0x06). `violations`
// is empty when the initiator may go on; a rejected Reply (R) is not a violation.
struct Settlement {
  Parameters parameters;
  std::vector<Violation> violations;
};
Settlement settle(const wire::MpaReqRep& request, const wire::MpaReqRep& reply);

// The first violation a side must act on (one with a Terminate), if any.
const Violation* first_fatal(const std::vector<Violation>& violations);

// The connection setup order, checked on the first FPDU a side receives: the initiator sends
// none before the MPA Reply reached it (RFC 5044 §7.1); in peer-to-peer mode the responder sends
// none before the initiator's RTR reached it (RFC 6581 §9.2). `allowed`: the frame that allows
// it (the Reply, the RTR) had left the receiving side when the FPDU arrived (an analysis: the
// capture shows it first). An FPDU that came earlier is Invalid MPA Request/Reply (LLP/MPA 0x04);
// a Terminate is always let in (the stream is ending, RFC 5040 §5.4). `where` ends the detail.
// siw, as responder, closes without a Reply when octets follow the Request (siw_recv_mpa_rr,
// -EPROTO): no Terminate is sent there.
enum class Sender : std::uint8_t { initiator, responder };
std::optional<Violation> check_setup_order(Sender from, bool allowed, const wire::DdpHeader& first,
                                           std::string_view where = {});

}  // namespace ddpscope::mpa
