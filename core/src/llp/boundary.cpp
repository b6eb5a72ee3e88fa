// SPDX-License-Identifier: GPL-2.0-or-later
#include "ddpscope/llp/boundary.h"

namespace ddpscope::llp {

std::string_view to_string(RtrType t) {
  switch (t) {
    case RtrType::none:
      return "none";
    case RtrType::send:
      return "send";
    case RtrType::write:
      return "write";
    case RtrType::read:
      return "read";
  }
  return "?";
}

}  // namespace ddpscope::llp
