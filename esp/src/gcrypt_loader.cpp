// SPDX-License-Identifier: GPL-2.0-or-later
// libgcrypt (the ESP transforms, crypto.cpp), loaded the first time a security association is
// set up, not at every start of every program that links the ESP layer (`ddpscope analyze`
// among them): ~0.2 M instructions of relocations a start, for libgcrypt and libgpg-error
// (bench/RESULTS.md, issue 43), that only runs given --esp-sa or --xfrm need. The functions
// below are the libgcrypt API crypto.cpp calls, with libgcrypt's own names and prototypes
// (common/lazy_library.h says how); the first of them to run loads DDPSCOPE_GCRYPT_SONAME, the
// SONAME CMake found.
#pragma GCC visibility push(hidden)
#include <gcrypt.h>
#pragma GCC visibility pop

#include "ddpscope/common/lazy_library.h"

#ifndef DDPSCOPE_GCRYPT_SONAME
#error "DDPSCOPE_GCRYPT_SONAME: set by esp/CMakeLists.txt"
#endif

DDPSCOPE_LAZY_LIBRARY(libgcrypt, DDPSCOPE_GCRYPT_SONAME)

#define DDPSCOPE_GCRYPT_CALL(ret, name, params, args) \
  DDPSCOPE_LAZY_CALL(libgcrypt, DDPSCOPE_GCRYPT_SONAME, ret, name, params, args)

DDPSCOPE_GCRYPT_CALL(const char*, gcry_check_version, (const char* req_version), (req_version))
DDPSCOPE_GCRYPT_CALL(gcry_error_t, gcry_cipher_authenticate,
                     (gcry_cipher_hd_t hd, const void* abuf, size_t abuflen), (hd, abuf, abuflen))
DDPSCOPE_GCRYPT_CALL(gcry_error_t, gcry_cipher_checktag,
                     (gcry_cipher_hd_t hd, const void* intag, size_t taglen), (hd, intag, taglen))
DDPSCOPE_GCRYPT_CALL(void, gcry_cipher_close, (gcry_cipher_hd_t h), (h))
DDPSCOPE_GCRYPT_CALL(gcry_error_t, gcry_cipher_decrypt,
                     (gcry_cipher_hd_t h, void* out, size_t outsize, const void* in, size_t inlen),
                     (h, out, outsize, in, inlen))
DDPSCOPE_GCRYPT_CALL(gcry_error_t, gcry_cipher_encrypt,
                     (gcry_cipher_hd_t h, void* out, size_t outsize, const void* in, size_t inlen),
                     (h, out, outsize, in, inlen))
DDPSCOPE_GCRYPT_CALL(gcry_error_t, gcry_cipher_gettag,
                     (gcry_cipher_hd_t hd, void* outtag, size_t taglen), (hd, outtag, taglen))
DDPSCOPE_GCRYPT_CALL(gcry_error_t, gcry_cipher_open,
                     (gcry_cipher_hd_t * handle, int algo, int mode, unsigned int flags),
                     (handle, algo, mode, flags))
DDPSCOPE_GCRYPT_CALL(gpg_error_t, gcry_cipher_setctr,
                     (gcry_cipher_hd_t hd, const void* ctr, size_t ctrlen), (hd, ctr, ctrlen))
DDPSCOPE_GCRYPT_CALL(gcry_error_t, gcry_cipher_setiv,
                     (gcry_cipher_hd_t hd, const void* iv, size_t ivlen), (hd, iv, ivlen))
DDPSCOPE_GCRYPT_CALL(gcry_error_t, gcry_cipher_setkey,
                     (gcry_cipher_hd_t hd, const void* key, size_t keylen), (hd, key, keylen))
DDPSCOPE_GCRYPT_CALL(void, gcry_mac_close, (gcry_mac_hd_t h), (h))
DDPSCOPE_GCRYPT_CALL(gcry_error_t, gcry_mac_ctl,
                     (gcry_mac_hd_t h, int cmd, void* buffer, size_t buflen),
                     (h, cmd, buffer, buflen))
DDPSCOPE_GCRYPT_CALL(gcry_error_t, gcry_mac_open,
                     (gcry_mac_hd_t * handle, int algo, unsigned int flags, gcry_ctx_t ctx),
                     (handle, algo, flags, ctx))
DDPSCOPE_GCRYPT_CALL(gcry_error_t, gcry_mac_read, (gcry_mac_hd_t hd, void* buffer, size_t* buflen),
                     (hd, buffer, buflen))
DDPSCOPE_GCRYPT_CALL(gcry_error_t, gcry_mac_setkey,
                     (gcry_mac_hd_t hd, const void* key, size_t keylen), (hd, key, keylen))
DDPSCOPE_GCRYPT_CALL(gcry_error_t, gcry_mac_write,
                     (gcry_mac_hd_t hd, const void* buffer, size_t length), (hd, buffer, length))

// gcry_control is variadic: what follows CMD depends on CMD. A wrapper with its prototype would
// need va_start after an enum parameter, which the language leaves undefined (the enum is
// promoted when passed; Clang's -Wvarargs), so crypto.cpp calls this one instead, with the one
// int each command it uses takes (GCRYCTL_DISABLE_SECMEM, GCRYCTL_INITIALIZATION_FINISHED: 0).
// A call of gcry_control itself fails to link: the library is not linked, only loaded.
extern "C" __attribute__((visibility("hidden"))) gcry_error_t ddpscope_gcry_control(
    enum gcry_ctl_cmds cmd, int arg) {
  static const auto real = reinterpret_cast<gcry_error_t (*)(enum gcry_ctl_cmds, ...)>(
      ddpscope::lazy_library_symbol(libgcrypt(), DDPSCOPE_GCRYPT_SONAME, "gcry_control"));
  return real(cmd, arg);
}
