// SPDX-License-Identifier: GPL-2.0-or-later
// The endpoint's socket layer: nonblocking sockets and a poll(2) loop that moves what the
// session engine sends and receives between the transport and core's session engine, fires its
// timers and hands its events to the application. The transport is TCP (MPA, the default) or
// SCTP (RFC 5043) on the kernel's stack or on usrsctp. Single-threaded (usrsctp runs its own
// threads behind its sockets); listens on 127.0.0.1 unless told otherwise.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ddpscope/session/session.h"

namespace ddpscope::endpoint {

std::int64_t now_ns();  // CLOCK_MONOTONIC

// Memory limits for one process: STag indexes start at a per-process value so that two
// endpoint processes on one host (loopback) never use the same STags.
session::MemoryLimits process_memory_limits();

// Per-process cap on open endpoint connections (accepted or connected).
void set_max_connections(std::size_t n);
std::size_t max_connections();
std::size_t open_connections();

class Loop;
namespace detail {
class SctpSocket;
class SctpListener;
}  // namespace detail

// The LLP under the sessions of one Loop.
enum class SctpStack : std::uint8_t { kernel, user, automatic };
std::string_view to_string(SctpStack s);
struct Transport {
  session::Llp llp = session::Llp::mpa;
  SctpStack stack = SctpStack::automatic;  // automatic: the kernel's when it has SCTP, else user
  // usrsctp only: SCTP over UDP (RFC 6951) from this local UDP port (0: native SCTP over raw
  // IP, which needs root), and the peer's UDP port to send to (a client; 0: native).
  std::uint16_t udp_port = 0;
  std::uint16_t remote_udp_port = 0;
};

class Connection {
 public:
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  session::Session& session() { return *session_; }
  const session::Session& session() const { return *session_; }
  int fd() const { return fd_; }
  const std::string& peer() const { return peer_; }
  std::uint16_t local_port() const { return local_port_; }
  // The socket is gone (closed by both sides, reset, or aborted).
  bool done() const { return done_; }
  // Abortive teardown: RST (SO_LINGER 0), as RFC 5040 §5.4 asks after a fatal error.
  void abort();
  std::uint64_t bytes_in() const { return bytes_in_; }
  std::uint64_t bytes_out() const { return bytes_out_; }
  void* user = nullptr;  // the application's per-connection state

 private:
  friend class Loop;
  Connection() = default;
  void finish();  // closes the socket (if still open) and marks the connection done
  std::unique_ptr<session::Session> session_;
  int fd_ = -1;
  bool connecting_ = false;
  bool started_ = false;
  bool shut_wr_ = false;
  bool eof_ = false;
  bool done_ = false;
  std::string peer_;
  std::uint16_t local_port_ = 0;
  std::uint64_t bytes_in_ = 0;
  std::uint64_t bytes_out_ = 0;
  std::unique_ptr<detail::SctpSocket> sctp_;  // SCTP: the association (fd_ is its poll fd)
  Bytes rx_message_;                          // SCTP: a user message larger than one read
};

class Loop {
 public:
  explicit Loop(session::MemoryTable& memory);
  ~Loop();
  Loop(const Loop&) = delete;
  Loop& operator=(const Loop&) = delete;

  // Before listen()/connect(): the LLP of every session of this loop (default MPA over TCP).
  // SCTP picks its stack (automatic: the kernel's when socket(IPPROTO_SCTP) works, else
  // usrsctp); false with the reason when the stack asked for cannot run here.
  bool set_transport(const Transport& transport, std::string& error);
  const Transport& transport() const { return transport_; }
  // "tcp", "sctp (kernel)", "sctp (usrsctp)", "sctp (usrsctp over UDP)".
  std::string transport_name() const;

  // Listens on addr:port (port 0: the kernel picks; see listen_port()). Each accepted
  // connection gets a responder session with `config` (its pd as given).
  bool listen(const std::string& addr, std::uint16_t port, const session::SessionConfig& config,
              std::string& error);
  std::uint16_t listen_port() const { return listen_port_; }
  void stop_listening();
  // Starts a nonblocking connect; the initiator session starts once TCP is up. `source`, when
  // given, is the local address to connect from (rping's -I).
  Connection* connect(const std::string& host, std::uint16_t port,
                      const session::SessionConfig& config, std::string& error,
                      const std::string& source = {});

  // Called for an accepted connection before its session is made, with listen()'s config: may
  // change that config for this connection (and set its `user`), or refuse it (false: reset).
  std::function<bool(Connection&, session::SessionConfig&)> on_accept;
  // Called for a new connection before its session starts (post receive buffers here).
  std::function<void(Connection&)> on_connection;
  // Called for every session event.
  std::function<void(Connection&, const session::Event&)> on_event;

  // One poll round: waits up to timeout_ms (less when a session timer is due).
  void poll_once(int timeout_ms);
  // Busy polling: for up to `us` microseconds after the loop last had something to do, a poll
  // round checks its sockets without sleeping before it blocks. A request/response exchange
  // then skips the sleep and wake-up of an idle core (on an idle VM that was two thirds of a
  // 64-octet RDMA Read's round trip); an idle loop spins at most `us` after its last event.
  // 0 turns it off. Default kDefaultBusyPollUs.
  static constexpr unsigned kDefaultBusyPollUs = 50;
  void set_busy_poll_us(unsigned us) { busy_poll_ns_ = static_cast<std::int64_t>(us) * 1000; }
  // Runs poll rounds until `done()` or timeout; returns done().
  bool run_until(const std::function<bool()>& done, int timeout_ms);
  // Writes pending output of every connection without waiting (after posting operations).
  void flush();

  std::vector<std::unique_ptr<Connection>>& connections() { return conns_; }
  // Drops connections that are done (their sockets are closed as soon as they are done).
  void reap();
  // Connections refused over the per-process cap, and reset by a session timeout (stall, or
  // teardown left to the application too long).
  std::uint64_t refused() const { return refused_; }
  std::uint64_t timed_out() const { return timed_out_; }

 private:
  void accept_all();
  bool make_responder(Connection& c);  // its session, or refused by on_accept
  void service(Connection& c, short revents);
  void read_from(Connection& c);
  void write_to(Connection& c);
  void dispatch(Connection& c);
  void finish_connect(Connection& c);
  void start_session(Connection& c);
  bool wants_input(const Connection& c) const;
  void read_messages(Connection& c);
  void write_messages(Connection& c);
  bool sctp() const { return transport_.llp == session::Llp::sctp; }

  session::MemoryTable& memory_;
  Transport transport_;
  std::unique_ptr<detail::SctpListener> sctp_listener_;
  int listen_fd_ = -1;
  std::uint16_t listen_port_ = 0;
  session::SessionConfig listen_config_;
  std::vector<std::unique_ptr<Connection>> conns_;
  std::vector<std::uint8_t> rbuf_;
  std::uint64_t refused_ = 0;
  std::uint64_t timed_out_ = 0;
  std::int64_t busy_poll_ns_ = static_cast<std::int64_t>(kDefaultBusyPollUs) * 1000;
  std::int64_t last_activity_ns_ = 0;
};

// "HOST:PORT" -> host, port; false when malformed.
bool split_host_port(const std::string& s, std::string& host, std::uint16_t& port);

}  // namespace ddpscope::endpoint
