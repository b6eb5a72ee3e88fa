// SPDX-License-Identifier: GPL-2.0-or-later
#include <cstdio>
#include <cstdlib>

#include "fuzz_input.h"

namespace ddpscope::fuzz {

void invariant_failed(const char* what, const char* file, int line) {
  std::fprintf(stderr, "%s:%d: fuzz invariant failed: %s\n", file, line, what);
  std::abort();
}

}  // namespace ddpscope::fuzz
