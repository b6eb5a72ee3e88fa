// SPDX-License-Identifier: GPL-2.0-or-later
// MPA options shared by the endpoint commands (endpoint, rping, replay): flag names and the
// SessionConfig they make. Defaults follow Linux siw: rev 2 with the RFC 6581 IRD/ORD word,
// peer-to-peer with a zero-length Write RTR, no CRC unless asked, no markers.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>

#include "cmd_limits.h"
#include "ddpscope/endpoint/endpoint.h"
#include "ddpscope/session/session.h"

namespace ddpscope::cli {

struct MpaFlags {
  int revision = 2;
  bool no_enhanced = false;
  bool crc = false;
  bool markers = false;
  bool no_p2p = false;
  std::string rtr = "write,read";
  int ird = 16;
  int ord = 16;
  std::string private_data;
  bool rfc_terminate = true;
  std::string sink_profile;  // --sink-profile: the Data Sink we behave as (default rfc)
  // Timers against peers that stall (SessionLimits; milliseconds).
  std::int64_t handshake_timeout_ms = session::SessionLimits{}.handshake_timeout_ns / 1'000'000;
  std::int64_t stall_timeout_ms = session::SessionLimits{}.stall_timeout_ns / 1'000'000;
  std::int64_t teardown_timeout_ms = session::SessionLimits{}.teardown_timeout_ns / 1'000'000;
};

inline void add_mpa_flags(CLI::App* app, MpaFlags& f) {
  app->add_option("--mpa-rev", f.revision, "MPA revision: 1 (RFC 5044) or 2 (RFC 6581)")
      ->check(CLI::IsMember({1, 2}));
  app->add_flag("--no-enhanced", f.no_enhanced, "rev 2 without the RFC 6581 IRD/ORD word");
  app->add_flag("--crc", f.crc, "ask for MPA CRC (used when either side asks)");
  app->add_flag("--markers", f.markers, "ask the peer to insert MPA markers toward us");
  app->add_flag("--no-p2p", f.no_p2p, "no RFC 6581 peer-to-peer RTR exchange");
  app->add_option("--rtr", f.rtr, "RTR types offered/accepted: write,read,send");
  app->add_option("--ird", f.ird, "inbound RDMA Read Requests accepted at once")
      ->check(CLI::Range(0, 0x3FFF));
  app->add_option("--ord", f.ord, "outbound RDMA Read Requests outstanding at once")
      ->check(CLI::Range(0, 0x3FFF));
  app->add_option("--private-data", f.private_data, "ULP private data (text)");
  add_sink_profile_option(app, f.sink_profile,
                          "the Data Sink we behave as when the peer breaks a rule: rfc (a "
                          "Terminate as the RFCs say; default) or siw (Linux siw 6.1: its "
                          "Terminate in its bit layout, or a close, a wait, or going on)");
  app->add_option("--handshake-timeout-ms", f.handshake_timeout_ms,
                  "fail a connection whose MPA handshake has not finished by then")
      ->check(CLI::Range(1, 3'600'000));
  app->add_option("--stall-timeout-ms", f.stall_timeout_ms,
                  "reset a peer that sends no complete FPDU for this long in the middle of an "
                  "FPDU or message")
      ->check(CLI::Range(1, 3'600'000));
  app->add_option("--teardown-timeout-ms", f.teardown_timeout_ms,
                  "reset a terminated, failed or closed connection still open after this long")
      ->check(CLI::Range(1, 3'600'000));
}

// An initiator's pause between the MPA Reply and its first message (rping -c, replay --side
// client). Linux siw 6.1 sends its Reply before it attaches the socket to the QP (siw_accept);
// FPDUs arriving in that window stay unread until more data comes, and a ULP waiting for an
// answer sends none. Linux's own initiators are slowed down by rdma_cm's event path.
constexpr int kDefaultStartDelayMs = 20;
inline void add_start_delay_flag(CLI::App* app, int& ms) {
  app->add_option("--start-delay-ms", ms,
                  "as initiator, wait this long after the MPA Reply before the first message "
                  "(default 20; Linux siw 6.1 may miss FPDUs that follow its Reply at once)")
      ->check(CLI::Range(0, 60000));
}

inline session::SessionConfig make_session_config(const MpaFlags& f) {
  session::SessionConfig c;
  c.mpa.revision = static_cast<std::uint8_t>(f.revision);
  c.mpa.enhanced = !f.no_enhanced;
  c.mpa.crc = f.crc;
  c.mpa.markers = f.markers;
  c.mpa.peer_to_peer = !f.no_p2p;
  c.mpa.rtr_types = 0;
  if (f.rtr.find("write") != std::string::npos) c.mpa.rtr_types |= session::rtr_offer::write;
  if (f.rtr.find("read") != std::string::npos) c.mpa.rtr_types |= session::rtr_offer::read;
  if (f.rtr.find("send") != std::string::npos) c.mpa.rtr_types |= session::rtr_offer::send;
  c.mpa.ird = static_cast<std::uint16_t>(f.ird);
  c.mpa.ord = static_cast<std::uint16_t>(f.ord);
  c.mpa.private_data.assign(f.private_data.begin(), f.private_data.end());
  c.limits.handshake_timeout_ns = f.handshake_timeout_ms * 1'000'000;
  c.limits.stall_timeout_ns = f.stall_timeout_ms * 1'000'000;
  c.limits.teardown_timeout_ns = f.teardown_timeout_ms * 1'000'000;
  if (f.sink_profile == "siw") {
    c.sink_profile = SinkProfile::siw;
    c.terminate_layout = wire::TerminateLayout::siw_bitfield;  // as siw sends it
  }
  return c;
}

// The LLP under the session (RFC 5041 §2.4): MPA over TCP, or SCTP (RFC 5043) on the kernel's
// stack or on usrsctp; and how the loop over its sockets waits.
struct LlpFlags {
  std::string llp = "mpa";
  std::string stack = "auto";
  std::uint16_t udp_port = 0;
  std::uint16_t peer_udp_port = 0;
  unsigned busy_poll_us = endpoint::Loop::kDefaultBusyPollUs;
};

inline void add_llp_flags(CLI::App* app, LlpFlags& f) {
  app->add_option("--llp", f.llp, "lower layer protocol: mpa (MPA over TCP, default) or sctp")
      ->check(CLI::IsMember({"mpa", "sctp"}));
  app->add_option("--sctp-stack", f.stack,
                  "SCTP stack: kernel (Linux SCTP), user (usrsctp) or auto (default: kernel when "
                  "this kernel has SCTP, else user)")
      ->check(CLI::IsMember({"kernel", "user", "auto"}));
  app->add_option("--sctp-udp-port", f.udp_port,
                  "usrsctp: SCTP over UDP (RFC 6951) from this local UDP port instead of native "
                  "SCTP over raw IP (which needs root)");
  app->add_option("--sctp-peer-udp-port", f.peer_udp_port,
                  "usrsctp client over UDP: the peer's UDP port (default 9899, RFC 6951)");
  app->add_option("--busy-poll-us", f.busy_poll_us,
                  "after each socket event, check the sockets without sleeping for this many "
                  "microseconds before blocking (lower request/response latency for some CPU; "
                  "0: off; default " +
                      std::to_string(endpoint::Loop::kDefaultBusyPollUs) + ")")
      ->check(CLI::Range(0u, 1'000'000u));
}

// Sets the loop's transport; false (with the message printed as `who: ...`) when it cannot run.
inline bool apply_llp_flags(endpoint::Loop& loop, const LlpFlags& f, const char* who) {
  endpoint::Transport t;
  t.llp = f.llp == "sctp" ? session::Llp::sctp : session::Llp::mpa;
  t.stack = f.stack == "kernel" ? endpoint::SctpStack::kernel
            : f.stack == "user" ? endpoint::SctpStack::user
                                : endpoint::SctpStack::automatic;
  t.udp_port = f.udp_port;
  t.remote_udp_port = f.udp_port ? (f.peer_udp_port ? f.peer_udp_port : 9899) : 0;
  loop.set_busy_poll_us(f.busy_poll_us);
  std::string err;
  if (!loop.set_transport(t, err)) {
    std::fprintf(stderr, "%s: %s\n", who, err.c_str());
    return false;
  }
  return true;
}

}  // namespace ddpscope::cli
