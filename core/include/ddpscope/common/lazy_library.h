// SPDX-License-Identifier: GPL-2.0-or-later
// A C library loaded on its first use (dlopen), not at every start of every program that links
// it: what capture/ does for libpcap, endpoint/ for usrsctp and esp/ for libgcrypt. Loading
// those and what they pull in (libdbus, libsystemd, libgpg-error, ...) cost ~2 M instructions
// of relocations at every start (bench/RESULTS.md, issue 43), while most runs never call them:
// `analyze` of a pcap file reads it mapped, needs no SCTP stack and decrypts nothing.
//
// A loader file (capture/src/pcap_loader.cpp, ...) defines each function its folder calls with
// the library's own name and prototype (the compiler checks them against the library's
// header), hidden, with DDPSCOPE_LAZY_CALL: callers are written against the real API, and the
// first call resolves the real function in the library by the SONAME the build linked against
// before. If the library cannot be loaded or lacks the function, the program says which and
// exits with status 2 (the CLI's status for what it cannot read): the packages depend on these
// libraries (debian/control names them: dpkg-shlibdeps does not see a dlopen), so that is a
// broken installation, not input.
#pragma once

namespace ddpscope {

// The handle of `soname`, opened once (RTLD_NOW | RTLD_LOCAL) by the caller's static.
void* lazy_library_open(const char* soname);
// `name` in `handle` (opened from `soname`, for the message).
void* lazy_library_symbol(void* handle, const char* soname, const char* name);

}  // namespace ddpscope

// Defines `void* LIBRARY()` in the loader file: the handle of SONAME, opened on its first call.
#define DDPSCOPE_LAZY_LIBRARY(library, soname)                         \
  namespace {                                                          \
  void* library() {                                                    \
    static void* const handle = ::ddpscope::lazy_library_open(soname); \
    return handle;                                                     \
  }                                                                    \
  }

// Defines RET NAME(PARAMS) as a call of the real NAME in the library LIBRARY() returns (see
// DDPSCOPE_LAZY_LIBRARY), resolved on the first call.
#define DDPSCOPE_LAZY_CALL(library, soname, ret, name, params, args) \
  extern "C" __attribute__((visibility("hidden"))) ret name params { \
    static const auto real = reinterpret_cast<decltype(&name)>(      \
        ::ddpscope::lazy_library_symbol(library(), soname, #name));  \
    return real args;                                                \
  }
