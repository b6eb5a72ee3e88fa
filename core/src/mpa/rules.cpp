// SPDX-License-Identifier: GPL-2.0-or-later
#include "ddpscope/mpa/rules.h"

#include "ddpscope/common/bytes.h"

namespace ddpscope::mpa {

Violation crc_mismatch(std::uint32_t field, std::uint32_t computed) {
  return Violation{FindingId::mpa_crc_mismatch, term::mpa(mpa_code::crc_error),
                   TerminateQuote::none,
                   "CRC field " + hex_word(field) + ", computed " + hex_word(computed)};
}

Violation marker_mismatch(std::string detail) {
  return Violation{FindingId::mpa_marker_invalid, term::mpa(mpa_code::marker_mismatch),
                   TerminateQuote::none, std::move(detail)};
}

}  // namespace ddpscope::mpa
