// SPDX-License-Identifier: GPL-2.0-or-later
// The MPA framing rules a receiver acts on (RFC 5044 §4.2, §4.3, §8), written once for the
// analyzer and the endpoint: a CRC that does not match (LLP/MPA 0x02) and a marker whose FPDUPTR
// does not point at its FPDU (0x03). Connection setup is in negotiate.h.
#pragma once

#include <cstdint>
#include <string>

#include "ddpscope/findings/violation.h"

namespace ddpscope::mpa {

Violation crc_mismatch(std::uint32_t field, std::uint32_t computed);
Violation marker_mismatch(std::string detail);

}  // namespace ddpscope::mpa
