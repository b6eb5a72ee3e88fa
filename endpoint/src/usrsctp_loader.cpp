// SPDX-License-Identifier: GPL-2.0-or-later
// usrsctp (SCTP over UDP in user space, sctp_user.cpp), loaded the first time the endpoint calls
// it, not at every start of every program that links the endpoint (`ddpscope analyze` among
// them): ~0.3 M instructions of relocations a start (bench/RESULTS.md, issue 43) that only
// `--llp sctp --sctp-stack user` runs need. The functions below are the usrsctp API sctp_user.cpp
// calls, with usrsctp's own names and prototypes (common/lazy_library.h says how); the first
// of them to run loads DDPSCOPE_USRSCTP_SONAME, the SONAME CMake found.
#include <sys/socket.h>

#pragma GCC visibility push(hidden)
#include <usrsctp.h>
#pragma GCC visibility pop

#include "ddpscope/common/lazy_library.h"

#ifndef DDPSCOPE_USRSCTP_SONAME
#error "DDPSCOPE_USRSCTP_SONAME: set by endpoint/CMakeLists.txt"
#endif

DDPSCOPE_LAZY_LIBRARY(libusrsctp, DDPSCOPE_USRSCTP_SONAME)

#define DDPSCOPE_USRSCTP_CALL(ret, name, params, args) \
  DDPSCOPE_LAZY_CALL(libusrsctp, DDPSCOPE_USRSCTP_SONAME, ret, name, params, args)

DDPSCOPE_USRSCTP_CALL(struct socket*, usrsctp_accept,
                      (struct socket * so, struct sockaddr* aname, socklen_t* anamelen),
                      (so, aname, anamelen))
DDPSCOPE_USRSCTP_CALL(int, usrsctp_bind,
                      (struct socket * so, struct sockaddr* name, socklen_t namelen),
                      (so, name, namelen))
DDPSCOPE_USRSCTP_CALL(void, usrsctp_close, (struct socket * so), (so))
DDPSCOPE_USRSCTP_CALL(int, usrsctp_connect,
                      (struct socket * so, struct sockaddr* name, socklen_t namelen),
                      (so, name, namelen))
DDPSCOPE_USRSCTP_CALL(void, usrsctp_freeladdrs, (struct sockaddr * addrs), (addrs))
DDPSCOPE_USRSCTP_CALL(int, usrsctp_get_events, (struct socket * so), (so))
DDPSCOPE_USRSCTP_CALL(int, usrsctp_getladdrs,
                      (struct socket * so, sctp_assoc_t id, struct sockaddr** raddrs),
                      (so, id, raddrs))
DDPSCOPE_USRSCTP_CALL(int, usrsctp_getsockopt,
                      (struct socket * so, int level, int option_name, void* option_value,
                       socklen_t* option_len),
                      (so, level, option_name, option_value, option_len))
DDPSCOPE_USRSCTP_CALL(void, usrsctp_init,
                      (uint16_t port,
                       int (*conn_output)(void* addr, void* buffer, size_t length, uint8_t tos,
                                          uint8_t set_df),
                       void (*debug_printf)(const char* format, ...)),
                      (port, conn_output, debug_printf))
DDPSCOPE_USRSCTP_CALL(int, usrsctp_listen, (struct socket * so, int backlog), (so, backlog))
DDPSCOPE_USRSCTP_CALL(ssize_t, usrsctp_recvv,
                      (struct socket * so, void* dbuf, size_t len, struct sockaddr* from,
                       socklen_t* fromlen, void* info, socklen_t* infolen, unsigned int* infotype,
                       int* msg_flags),
                      (so, dbuf, len, from, fromlen, info, infolen, infotype, msg_flags))
DDPSCOPE_USRSCTP_CALL(ssize_t, usrsctp_sendv,
                      (struct socket * so, const void* data, size_t len, struct sockaddr* to,
                       int addrcnt, void* info, socklen_t infolen, unsigned int infotype,
                       int flags),
                      (so, data, len, to, addrcnt, info, infolen, infotype, flags))
DDPSCOPE_USRSCTP_CALL(int, usrsctp_set_non_blocking, (struct socket * so, int onoff), (so, onoff))
DDPSCOPE_USRSCTP_CALL(int, usrsctp_set_upcall,
                      (struct socket * so, void (*upcall)(struct socket*, void*, int), void* arg),
                      (so, upcall, arg))
DDPSCOPE_USRSCTP_CALL(int, usrsctp_setsockopt,
                      (struct socket * so, int level, int option_name, const void* option_value,
                       socklen_t option_len),
                      (so, level, option_name, option_value, option_len))
DDPSCOPE_USRSCTP_CALL(int, usrsctp_shutdown, (struct socket * so, int how), (so, how))
DDPSCOPE_USRSCTP_CALL(struct socket*, usrsctp_socket,
                      (int domain, int type, int protocol,
                       int (*receive_cb)(struct socket* sock, union sctp_sockstore addr, void* data,
                                         size_t datalen, struct sctp_rcvinfo, int flags,
                                         void* ulp_info),
                       int (*send_cb)(struct socket* sock, uint32_t sb_free, void* ulp_info),
                       uint32_t sb_threshold, void* ulp_info),
                      (domain, type, protocol, receive_cb, send_cb, sb_threshold, ulp_info))
DDPSCOPE_USRSCTP_CALL(int, usrsctp_sysctl_set_sctp_blackhole, (uint32_t value), (value))
DDPSCOPE_USRSCTP_CALL(int, usrsctp_sysctl_set_sctp_no_csum_on_loopback, (uint32_t value), (value))
