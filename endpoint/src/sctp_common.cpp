// SPDX-License-Identifier: GPL-2.0-or-later
// What the two SCTP stacks share.
#include "ddpscope/wire/sctp.h"
#include "sctp_socket.h"

namespace ddpscope::endpoint::detail {

std::uint32_t ddp_adaptation_indication() {
  return wire::kAdaptationCodePointDdp;
}

}  // namespace ddpscope::endpoint::detail
