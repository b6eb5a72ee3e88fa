// SPDX-License-Identifier: GPL-2.0-or-later
// The endpoint's SCTP sockets (RFC 5043's LLP), one interface over two stacks: the Linux kernel's
// (libsctp, sctp_kernel.cpp) and the user-space usrsctp (sctp_user.cpp). Both are one-to-one
// style sockets (SOCK_STREAM, one association each) that send and receive whole user messages
// with their PPID and stream id and announce the Adaptation Layer Indication (RFC 5061) in
// INIT / INIT-ACK. Each gives the poll loop a file descriptor to wait on: the kernel socket
// itself, or an eventfd that usrsctp's upcall signals. Internal to endpoint/.
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <memory>
#include <string>

#include "ddpscope/common/bytes.h"

namespace ddpscope::endpoint::detail {

enum class Stack : std::uint8_t { kernel, user };

enum class Io : std::uint8_t { ok, would_block, eof, error };

struct Address {
  sockaddr_storage ss{};
  socklen_t len = 0;
};

class SctpSocket {
 public:
  virtual ~SctpSocket() = default;
  // The descriptor to poll and the events to ask for: the kernel socket (POLLOUT while
  // connecting or with output), or the eventfd (POLLIN only: the upcall wakes it for both).
  virtual int poll_fd() const = 0;
  virtual short poll_events(bool want_input, bool want_output, bool connecting) const = 0;
  // Before trying I/O after a wake-up (user: reads the eventfd).
  virtual void drain_wakeups() {}
  // A nonblocking connect: 1 established, 0 still in progress, -1 failed (`error` says why).
  virtual int connect_status(std::string& error) = 0;
  // One user message, or its next part when larger than `cap` (`eor` false then).
  // `unordered`: the message came in unordered chunks (U = 1).
  virtual Io recv(std::uint8_t* buf, std::size_t cap, std::size_t& n, std::uint32_t& ppid,
                  std::uint16_t& stream_id, bool& eor, bool& unordered, std::string& error) = 0;
  // One whole user message (PPID in host order).
  virtual Io send(ByteView message, std::uint32_t ppid, std::uint16_t stream_id,
                  std::string& error) = 0;
  virtual void shutdown_write() = 0;  // SCTP SHUTDOWN once the queued data is acknowledged
  virtual void abort() = 0;           // SCTP ABORT (SO_LINGER 0, then close)
  // Path MTU of the primary path (0 when unknown) and the local port.
  virtual std::uint32_t path_mtu() = 0;
  virtual std::uint16_t local_port() = 0;
  // The association runs over UDP (RFC 6951): 8 more octets of each packet are not SCTP's.
  virtual bool over_udp() = 0;
};

class SctpListener {
 public:
  virtual ~SctpListener() = default;
  virtual int poll_fd() const = 0;
  virtual void drain_wakeups() {}
  // The next accepted association (nullptr: none pending); `peer` its address.
  virtual std::unique_ptr<SctpSocket> accept(Address& peer) = 0;
  virtual std::uint16_t port() = 0;
};

// The adaptation code point our endpoints announce (RFC 5061 §4.2.8, RFC 5043).
std::uint32_t ddp_adaptation_indication();

// Kernel SCTP: false (with the reason) when socket(IPPROTO_SCTP) fails.
bool kernel_available(std::string& why);
std::unique_ptr<SctpListener> kernel_listen(const Address& at, std::string& error);
std::unique_ptr<SctpSocket> kernel_connect(const Address& to, const Address* from,
                                           std::string& error);

// usrsctp: started once per process, native SCTP over raw IPv4/IPv6 sockets (needs
// CAP_NET_RAW), or SCTP over UDP (RFC 6951) on `udp_port` when it is not 0.
bool user_start(std::uint16_t udp_port, std::string& error);
std::unique_ptr<SctpListener> user_listen(const Address& at, std::string& error);
// `remote_udp_port`: the peer's UDP encapsulation port (0: native SCTP).
std::unique_ptr<SctpSocket> user_connect(const Address& to, const Address* from,
                                         std::uint16_t remote_udp_port, std::string& error);

}  // namespace ddpscope::endpoint::detail
