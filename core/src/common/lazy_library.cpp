// SPDX-License-Identifier: GPL-2.0-or-later
#include "ddpscope/common/lazy_library.h"

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>

namespace ddpscope {

void* lazy_library_open(const char* soname) {
  void* h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    std::fprintf(stderr, "ddpscope: cannot load %s: %s\n", soname, dlerror());
    std::exit(2);
  }
  return h;
}

void* lazy_library_symbol(void* handle, const char* soname, const char* name) {
  void* sym = dlsym(handle, name);
  if (sym == nullptr) {
    std::fprintf(stderr, "ddpscope: %s has no %s\n", soname, name);
    std::exit(2);
  }
  return sym;
}

}  // namespace ddpscope
