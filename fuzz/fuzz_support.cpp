// SPDX-License-Identifier: GPL-2.0-or-later
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "fuzz_input.h"

namespace ddpscope::fuzz {

void invariant_failed(const char* what, const char* file, int line) {
  std::fprintf(stderr, "%s:%d: fuzz invariant failed: %s\n", file, line, what);
  std::abort();
}

int input_as_file(const char* name, const std::uint8_t* data, std::size_t size) {
  // One memfd per harness (a process runs one): created once, truncated for each input.
  static const int fd = memfd_create(name, 0);
  if (fd < 0 || ftruncate(fd, 0) != 0 || lseek(fd, 0, SEEK_SET) != 0) return -1;
  while (size > 0) {
    const ssize_t n = write(fd, data, size);
    if (n <= 0) return -1;
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  return fd;
}

}  // namespace ddpscope::fuzz
