// SPDX-License-Identifier: GPL-2.0-or-later
// libpcap, loaded the first time the capture library calls it (dlopen), not at every start.
//
// Why: loading libpcap with what it needs (libdbus, libsystemd, liblzma, libzstd, liblz4,
// libcap) takes ~1.4 M instructions of relocations and symbol lookups at every start of every
// program that links it (bench/RESULTS.md), while most runs never call it: `analyze` of an
// uncompressed pcap or pcapng file reads it mapped (mapped_reader.cpp), and a CLI run of 10 MB
// is ~40 M instructions. libpcap is still what reads live interfaces, BPF filters, compressed
// and unusual files, and what writes captures; those calls land here.
//
// The functions below are the libpcap API capture/ calls (common/lazy_library.h says how); the
// first of them to run loads DDPSCOPE_LIBPCAP_SONAME, the SONAME CMake found. Hidden: a program
// linking this library neither exports them nor has them preempt another libpcap in the process
// (a host such as Wireshark loads its own; dlopen of the same SONAME then returns that one).
#pragma GCC visibility push(hidden)
#include <pcap/pcap.h>
#pragma GCC visibility pop

#include "ddpscope/common/lazy_library.h"

#ifndef DDPSCOPE_LIBPCAP_SONAME
#error "DDPSCOPE_LIBPCAP_SONAME: set by capture/CMakeLists.txt"
#endif

DDPSCOPE_LAZY_LIBRARY(libpcap, DDPSCOPE_LIBPCAP_SONAME)

#define DDPSCOPE_PCAP_CALL(ret, name, params, args) \
  DDPSCOPE_LAZY_CALL(libpcap, DDPSCOPE_LIBPCAP_SONAME, ret, name, params, args)

DDPSCOPE_PCAP_CALL(int, pcap_activate, (pcap_t * p), (p))
DDPSCOPE_PCAP_CALL(void, pcap_close, (pcap_t * p), (p))
DDPSCOPE_PCAP_CALL(int, pcap_compile,
                   (pcap_t * p, struct bpf_program* fp, const char* str, int optimize,
                    bpf_u_int32 netmask),
                   (p, fp, str, optimize, netmask))
DDPSCOPE_PCAP_CALL(pcap_t*, pcap_create, (const char* source, char* errbuf), (source, errbuf))
DDPSCOPE_PCAP_CALL(int, pcap_datalink, (pcap_t * p), (p))
DDPSCOPE_PCAP_CALL(const char*, pcap_datalink_val_to_description, (int dlt), (dlt))
DDPSCOPE_PCAP_CALL(const char*, pcap_datalink_val_to_name, (int dlt), (dlt))
DDPSCOPE_PCAP_CALL(void, pcap_dump, (u_char * user, const struct pcap_pkthdr* h, const u_char* sp),
                   (user, h, sp))
DDPSCOPE_PCAP_CALL(void, pcap_dump_close, (pcap_dumper_t * d), (d))
DDPSCOPE_PCAP_CALL(FILE*, pcap_dump_file, (pcap_dumper_t * d), (d))
DDPSCOPE_PCAP_CALL(int, pcap_dump_flush, (pcap_dumper_t * d), (d))
DDPSCOPE_PCAP_CALL(pcap_dumper_t*, pcap_dump_open, (pcap_t * p, const char* fname), (p, fname))
DDPSCOPE_PCAP_CALL(FILE*, pcap_file, (pcap_t * p), (p))
DDPSCOPE_PCAP_CALL(int, pcap_findalldevs, (pcap_if_t * *devs, char* errbuf), (devs, errbuf))
DDPSCOPE_PCAP_CALL(pcap_t*, pcap_fopen_offline_with_tstamp_precision,
                   (FILE * f, u_int precision, char* errbuf), (f, precision, errbuf))
DDPSCOPE_PCAP_CALL(void, pcap_freealldevs, (pcap_if_t * devs), (devs))
DDPSCOPE_PCAP_CALL(void, pcap_freecode, (struct bpf_program * fp), (fp))
DDPSCOPE_PCAP_CALL(int, pcap_get_selectable_fd, (pcap_t * p), (p))
DDPSCOPE_PCAP_CALL(int, pcap_get_tstamp_precision, (pcap_t * p), (p))
DDPSCOPE_PCAP_CALL(char*, pcap_geterr, (pcap_t * p), (p))
DDPSCOPE_PCAP_CALL(int, pcap_next_ex,
                   (pcap_t * p, struct pcap_pkthdr** header, const u_char** data),
                   (p, header, data))
DDPSCOPE_PCAP_CALL(int, pcap_offline_filter,
                   (const struct bpf_program* fp, const struct pcap_pkthdr* h, const u_char* pkt),
                   (fp, h, pkt))
DDPSCOPE_PCAP_CALL(pcap_t*, pcap_open_dead, (int linktype, int snaplen), (linktype, snaplen))
DDPSCOPE_PCAP_CALL(pcap_t*, pcap_open_dead_with_tstamp_precision,
                   (int linktype, int snaplen, u_int precision), (linktype, snaplen, precision))
DDPSCOPE_PCAP_CALL(pcap_t*, pcap_open_offline_with_tstamp_precision,
                   (const char* fname, u_int precision, char* errbuf), (fname, precision, errbuf))
DDPSCOPE_PCAP_CALL(int, pcap_set_buffer_size, (pcap_t * p, int size), (p, size))
DDPSCOPE_PCAP_CALL(int, pcap_set_immediate_mode, (pcap_t * p, int on), (p, on))
DDPSCOPE_PCAP_CALL(int, pcap_set_promisc, (pcap_t * p, int on), (p, on))
DDPSCOPE_PCAP_CALL(int, pcap_set_snaplen, (pcap_t * p, int snaplen), (p, snaplen))
DDPSCOPE_PCAP_CALL(int, pcap_set_timeout, (pcap_t * p, int ms), (p, ms))
DDPSCOPE_PCAP_CALL(int, pcap_set_tstamp_precision, (pcap_t * p, int precision), (p, precision))
DDPSCOPE_PCAP_CALL(int, pcap_setfilter, (pcap_t * p, struct bpf_program* fp), (p, fp))
DDPSCOPE_PCAP_CALL(int, pcap_setnonblock, (pcap_t * p, int nonblock, char* errbuf),
                   (p, nonblock, errbuf))
DDPSCOPE_PCAP_CALL(int, pcap_snapshot, (pcap_t * p), (p))
DDPSCOPE_PCAP_CALL(int, pcap_stats, (pcap_t * p, struct pcap_stat* ps), (p, ps))
DDPSCOPE_PCAP_CALL(const char*, pcap_statustostr, (int error), (error))
