// SPDX-License-Identifier: GPL-2.0-or-later
// SCTP sockets on the Linux kernel's SCTP (libsctp's sctp_sendmsg / sctp_recvmsg): one-to-one
// style sockets, pollable like TCP ones.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/sctp.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "sctp_socket.h"

namespace ddpscope::endpoint::detail {

namespace {

std::string last_error(const char* what) {
  return std::string(what) + ": " + std::strerror(errno);
}

std::uint16_t port_of(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return 0;
  if (ss.ss_family == AF_INET) return ntohs(reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
  if (ss.ss_family == AF_INET6) return ntohs(reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port);
  return 0;
}

// Nonblocking, no Nagle, the sndrcvinfo with each message, and the Adaptation Layer Indication
// in INIT / INIT-ACK (the kernel sends it when set, RFC 5061 §4.2.8).
bool prepare(int fd, std::string& error) {
  const int fl = fcntl(fd, F_GETFL, 0);
  if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) != 0) {
    error = last_error("fcntl");
    return false;
  }
  const int on = 1;
  setsockopt(fd, IPPROTO_SCTP, SCTP_NODELAY, &on, sizeof on);
  sctp_event_subscribe ev{};
  ev.sctp_data_io_event = 1;
  setsockopt(fd, IPPROTO_SCTP, SCTP_EVENTS, &ev, sizeof ev);
  sctp_setadaptation ad{};
  ad.ssb_adaptation_ind = ddp_adaptation_indication();
  if (setsockopt(fd, IPPROTO_SCTP, SCTP_ADAPTATION_LAYER, &ad, sizeof ad) != 0) {
    error = last_error("SCTP_ADAPTATION_LAYER");
    return false;
  }
  return true;
}

class KernelSocket final : public SctpSocket {
 public:
  explicit KernelSocket(int fd) : fd_(fd) {}
  ~KernelSocket() override {
    if (fd_ >= 0) ::close(fd_);
  }
  int poll_fd() const override { return fd_; }
  short poll_events(bool want_input, bool want_output, bool connecting) const override {
    if (connecting) return POLLOUT;
    return static_cast<short>((want_input ? POLLIN : 0) | (want_output ? POLLOUT : 0));
  }
  int connect_status(std::string& error) override {
    int err = 0;
    socklen_t len = sizeof err;
    getsockopt(fd_, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) {
      error = std::strerror(err);
      return -1;
    }
    sctp_status st{};
    len = sizeof st;
    if (getsockopt(fd_, IPPROTO_SCTP, SCTP_STATUS, &st, &len) == 0 &&
        st.sstat_state != SCTP_ESTABLISHED)
      return 0;
    return 1;
  }
  Io recv(std::uint8_t* buf, std::size_t cap, std::size_t& n, std::uint32_t& ppid,
          std::uint16_t& stream_id, bool& eor, bool& unordered, std::string& error) override {
    sctp_sndrcvinfo info{};
    int flags = 0;
    const int r = sctp_recvmsg(fd_, buf, cap, nullptr, nullptr, &info, &flags);
    if (r < 0) {
      if (errno == EWOULDBLOCK || errno == EAGAIN || errno == EINTR) return Io::would_block;
      error = last_error("sctp_recvmsg");
      return Io::error;
    }
    if (r == 0) return Io::eof;
    n = static_cast<std::size_t>(r);
    eor = (flags & MSG_EOR) != 0;
    ppid = ntohl(info.sinfo_ppid);
    stream_id = info.sinfo_stream;
    unordered = (info.sinfo_flags & SCTP_UNORDERED) != 0;
    return Io::ok;
  }
  Io send(ByteView m, std::uint32_t ppid, std::uint16_t stream_id, std::string& error) override {
    // RFC 5043 §4, §10: every chunk of the DDP adaptation is sent unordered (U = 1); the
    // DDP-SSN at the start of the message is the order.
    const int r = sctp_sendmsg(fd_, m.data(), m.size(), nullptr, 0, htonl(ppid), SCTP_UNORDERED,
                               stream_id, 0, 0);
    if (r < 0) {
      if (errno == EWOULDBLOCK || errno == EAGAIN || errno == EINTR) return Io::would_block;
      error = last_error("sctp_sendmsg");
      return Io::error;
    }
    return Io::ok;
  }
  void shutdown_write() override { ::shutdown(fd_, SHUT_WR); }
  void abort() override {
    linger l{1, 0};
    setsockopt(fd_, SOL_SOCKET, SO_LINGER, &l, sizeof l);
    ::close(fd_);
    fd_ = -1;
  }
  std::uint32_t path_mtu() override {
    sctp_status st{};
    socklen_t len = sizeof st;
    if (getsockopt(fd_, IPPROTO_SCTP, SCTP_STATUS, &st, &len) != 0) return 0;
    return st.sstat_primary.spinfo_mtu;
  }
  std::uint16_t local_port() override { return port_of(fd_); }
  // Linux 5.11+ encapsulates in UDP when the namespace's net.sctp.encap_port is set (the lab
  // does this); the path MTU it reports does not take the UDP header off.
  bool over_udp() override {
    std::FILE* f = std::fopen("/proc/sys/net/sctp/encap_port", "r");
    if (f == nullptr) return false;
    unsigned port = 0;
    const bool read = std::fscanf(f, "%u", &port) == 1;
    std::fclose(f);
    return read && port != 0;
  }

 private:
  int fd_;
};

class KernelListener final : public SctpListener {
 public:
  explicit KernelListener(int fd) : fd_(fd) {}
  ~KernelListener() override { ::close(fd_); }
  int poll_fd() const override { return fd_; }
  std::unique_ptr<SctpSocket> accept(Address& peer) override {
    peer.len = sizeof peer.ss;
    const int fd = accept4(fd_, reinterpret_cast<sockaddr*>(&peer.ss), &peer.len, SOCK_CLOEXEC);
    if (fd < 0) return nullptr;
    std::string error;
    if (!prepare(fd, error)) {
      ::close(fd);
      return nullptr;
    }
    return std::make_unique<KernelSocket>(fd);
  }
  std::uint16_t port() override { return port_of(fd_); }

 private:
  int fd_;
};

}  // namespace

bool kernel_available(std::string& why) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, IPPROTO_SCTP);
  if (fd < 0) {
    why = "this kernel has no SCTP (socket(AF_INET, SOCK_STREAM, IPPROTO_SCTP): " +
          std::string(std::strerror(errno)) + "; modprobe sctp, or use --sctp-stack user)";
    return false;
  }
  ::close(fd);
  return true;
}

std::unique_ptr<SctpListener> kernel_listen(const Address& at, std::string& error) {
  const int fd = ::socket(at.ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, IPPROTO_SCTP);
  if (fd < 0) {
    error = last_error("socket(IPPROTO_SCTP)");
    return nullptr;
  }
  const int on = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
  if (!prepare(fd, error)) {
    ::close(fd);
    return nullptr;
  }
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&at.ss), at.len) != 0 || ::listen(fd, 16) != 0) {
    error = last_error("SCTP listen");
    ::close(fd);
    return nullptr;
  }
  return std::make_unique<KernelListener>(fd);
}

std::unique_ptr<SctpSocket> kernel_connect(const Address& to, const Address* from,
                                           std::string& error) {
  const int fd = ::socket(to.ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, IPPROTO_SCTP);
  if (fd < 0) {
    error = last_error("socket(IPPROTO_SCTP)");
    return nullptr;
  }
  auto sock = std::make_unique<KernelSocket>(fd);
  if (!prepare(fd, error)) return nullptr;
  if (from && ::bind(fd, reinterpret_cast<const sockaddr*>(&from->ss), from->len) != 0) {
    error = last_error("bind");
    return nullptr;
  }
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&to.ss), to.len) != 0 &&
      errno != EINPROGRESS) {
    error = last_error("SCTP connect");
    return nullptr;
  }
  return sock;
}

}  // namespace ddpscope::endpoint::detail
