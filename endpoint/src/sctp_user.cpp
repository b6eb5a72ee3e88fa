// SPDX-License-Identifier: GPL-2.0-or-later
// SCTP sockets on usrsctp (libusrsctp): its own threads run the protocol; an upcall per socket
// writes to an eventfd the poll loop waits on. Native SCTP over raw sockets (root), or SCTP over
// UDP (RFC 6951) when given a port.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include <usrsctp.h>

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <mutex>

#include "sctp_socket.h"

namespace ddpscope::endpoint::detail {

namespace {

std::once_flag g_once;
bool g_started = false;
std::string g_start_error;
std::uint16_t g_udp_port = 0;

void on_upcall(struct socket* /*so*/, void* arg, int /*flags*/) {
  const int efd = static_cast<int>(reinterpret_cast<std::intptr_t>(arg));
  const std::uint64_t one = 1;
  [[maybe_unused]] const ssize_t n = ::write(efd, &one, sizeof one);
}

void drain(int efd) {
  std::uint64_t v;
  while (::read(efd, &v, sizeof v) > 0) {
  }
}

int new_eventfd() {
  return eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
}

std::string last_error(const char* what) {
  return std::string(what) + ": " + std::strerror(errno);
}

// The options every socket gets: nonblocking, rcvinfo with each message, no Nagle, and the
// Adaptation Layer Indication in its INIT / INIT-ACK.
bool prepare(struct socket* so, std::string& error) {
  if (usrsctp_set_non_blocking(so, 1) != 0) {
    error = last_error("usrsctp nonblocking");
    return false;
  }
  const int on = 1;
  usrsctp_setsockopt(so, IPPROTO_SCTP, SCTP_RECVRCVINFO, &on, sizeof on);
  usrsctp_setsockopt(so, IPPROTO_SCTP, SCTP_NODELAY, &on, sizeof on);
  sctp_setadaptation ad{};
  ad.ssb_adaptation_ind = ddp_adaptation_indication();
  if (usrsctp_setsockopt(so, IPPROTO_SCTP, SCTP_ADAPTATION_LAYER, &ad, sizeof ad) != 0) {
    error = last_error("usrsctp SCTP_ADAPTATION_LAYER");
    return false;
  }
  return true;
}

class UserSocket final : public SctpSocket {
 public:
  UserSocket(struct socket* so, int efd) : so_(so), efd_(efd) {}
  ~UserSocket() override {
    if (so_) {
      usrsctp_set_upcall(so_, nullptr, nullptr);
      usrsctp_close(so_);
    }
    if (efd_ >= 0) ::close(efd_);
  }
  int poll_fd() const override { return efd_; }
  short poll_events(bool, bool, bool) const override { return POLLIN; }
  void drain_wakeups() override { drain(efd_); }
  int connect_status(std::string& error) override {
    int err = 0;
    socklen_t len = sizeof err;
    if (usrsctp_getsockopt(so_, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err != 0) {
      error = std::strerror(err);
      return -1;
    }
    sctp_status st{};
    len = sizeof st;
    if (usrsctp_getsockopt(so_, IPPROTO_SCTP, SCTP_STATUS, &st, &len) != 0) return 0;
    if (st.sstat_state == SCTP_ESTABLISHED) return 1;
    if (st.sstat_state == SCTP_CLOSED && (usrsctp_get_events(so_) & SCTP_EVENT_ERROR)) {
      error = "association failed";
      return -1;
    }
    return 0;
  }
  Io recv(std::uint8_t* buf, std::size_t cap, std::size_t& n, std::uint32_t& ppid,
          std::uint16_t& stream_id, bool& eor, bool& unordered, std::string& error) override {
    sctp_rcvinfo info{};
    socklen_t infolen = sizeof info;
    unsigned int infotype = 0;
    int flags = 0;
    const ssize_t r =
        usrsctp_recvv(so_, buf, cap, nullptr, nullptr, &info, &infolen, &infotype, &flags);
    if (r < 0) {
      if (errno == EWOULDBLOCK || errno == EAGAIN || errno == EINTR) return Io::would_block;
      error = last_error("usrsctp_recvv");
      return Io::error;
    }
    if (r == 0) return Io::eof;
    n = static_cast<std::size_t>(r);
    eor = (flags & MSG_EOR) != 0;
    if (infotype == SCTP_RECVV_RCVINFO) {
      ppid = ntohl(info.rcv_ppid);
      stream_id = info.rcv_sid;
      unordered = (info.rcv_flags & SCTP_UNORDERED) != 0;
    }
    return Io::ok;
  }
  Io send(ByteView m, std::uint32_t ppid, std::uint16_t stream_id, std::string& error) override {
    sctp_sndinfo info{};
    info.snd_sid = stream_id;
    info.snd_ppid = htonl(ppid);
    info.snd_flags = SCTP_UNORDERED;  // RFC 5043 §4, §10: U = 1; the DDP-SSN is the order
    const ssize_t r = usrsctp_sendv(so_, m.data(), m.size(), nullptr, 0, &info, sizeof info,
                                    SCTP_SENDV_SNDINFO, 0);
    if (r < 0) {
      if (errno == EWOULDBLOCK || errno == EAGAIN || errno == EINTR) return Io::would_block;
      error = last_error("usrsctp_sendv");
      return Io::error;
    }
    return Io::ok;  // one-to-one, no partial sends: the whole message is queued
  }
  void shutdown_write() override { usrsctp_shutdown(so_, SHUT_WR); }
  void abort() override {
    linger l{1, 0};
    usrsctp_setsockopt(so_, SOL_SOCKET, SO_LINGER, &l, sizeof l);
    usrsctp_set_upcall(so_, nullptr, nullptr);
    usrsctp_close(so_);
    so_ = nullptr;
  }
  std::uint32_t path_mtu() override {
    sctp_status st{};
    socklen_t len = sizeof st;
    if (usrsctp_getsockopt(so_, IPPROTO_SCTP, SCTP_STATUS, &st, &len) != 0) return 0;
    return st.sstat_primary.spinfo_mtu;
  }
  bool over_udp() override { return g_udp_port != 0; }
  std::uint16_t local_port() override {
    struct sockaddr* addrs = nullptr;
    const int n = usrsctp_getladdrs(so_, 0, &addrs);
    std::uint16_t port = 0;
    if (n > 0 && addrs) {
      if (addrs->sa_family == AF_INET)
        port = ntohs(reinterpret_cast<sockaddr_in*>(addrs)->sin_port);
      else if (addrs->sa_family == AF_INET6)
        port = ntohs(reinterpret_cast<sockaddr_in6*>(addrs)->sin6_port);
    }
    if (addrs) usrsctp_freeladdrs(addrs);
    return port;
  }

 private:
  struct socket* so_;
  int efd_;
};

class UserListener final : public SctpListener {
 public:
  UserListener(struct socket* so, int efd, std::uint16_t port) : so_(so), efd_(efd), port_(port) {}
  ~UserListener() override {
    usrsctp_set_upcall(so_, nullptr, nullptr);
    usrsctp_close(so_);
    ::close(efd_);
  }
  int poll_fd() const override { return efd_; }
  void drain_wakeups() override { drain(efd_); }
  std::unique_ptr<SctpSocket> accept(Address& peer) override {
    peer.len = sizeof peer.ss;
    struct socket* so = usrsctp_accept(so_, reinterpret_cast<sockaddr*>(&peer.ss), &peer.len);
    if (!so) return nullptr;
    const int efd = new_eventfd();
    std::string error;
    if (efd < 0 || !prepare(so, error)) {
      if (efd >= 0) ::close(efd);
      usrsctp_close(so);
      return nullptr;
    }
    usrsctp_set_upcall(so, on_upcall, reinterpret_cast<void*>(static_cast<std::intptr_t>(efd)));
    on_upcall(so, reinterpret_cast<void*>(static_cast<std::intptr_t>(efd)), 0);  // data may wait
    return std::make_unique<UserSocket>(so, efd);
  }
  std::uint16_t port() override { return port_; }

 private:
  struct socket* so_;
  int efd_;
  std::uint16_t port_;
};

struct socket* new_socket(int family, int& efd, std::string& error) {
  struct socket* so =
      usrsctp_socket(family, SOCK_STREAM, IPPROTO_SCTP, nullptr, nullptr, 0, nullptr);
  if (!so) {
    error = last_error("usrsctp_socket");
    return nullptr;
  }
  efd = new_eventfd();
  if (efd < 0 || !prepare(so, error)) {
    if (efd < 0) error = last_error("eventfd");
    if (efd >= 0) ::close(efd);
    usrsctp_close(so);
    return nullptr;
  }
  usrsctp_set_upcall(so, on_upcall, reinterpret_cast<void*>(static_cast<std::intptr_t>(efd)));
  return so;
}

}  // namespace

bool user_start(std::uint16_t udp_port, std::string& error) {
  std::call_once(g_once, [udp_port] {
    if (udp_port == 0) {
      // Native SCTP needs raw sockets: check we may open one (usrsctp would only log it).
      const int fd = ::socket(AF_INET, SOCK_RAW, IPPROTO_SCTP);
      if (fd < 0) {
        g_start_error = last_error(
            "usrsctp needs a raw IPPROTO_SCTP socket (root or "
            "CAP_NET_RAW; or use SCTP over UDP)");
        return;
      }
      ::close(fd);
    }
    usrsctp_init(udp_port, nullptr, nullptr);
    // Every usrsctp process on this host sees every SCTP packet on its raw socket: a stack must
    // not ABORT the associations of another (RFC 4960 §8.4's out-of-the-blue answer), so it
    // stays silent on packets it has no association for.
    usrsctp_sysctl_set_sctp_blackhole(2);
    // Checksums on loopback too: captures of 127.0.0.1 verify (usrsctp skips them by default).
    usrsctp_sysctl_set_sctp_no_csum_on_loopback(0);
    g_udp_port = udp_port;
    g_started = true;
  });
  if (!g_started) error = g_start_error;
  if (g_started && g_udp_port != udp_port) {
    error = "usrsctp already started with UDP port " + std::to_string(g_udp_port);
    return false;
  }
  return g_started;
}

std::unique_ptr<SctpListener> user_listen(const Address& at, std::string& error) {
  int efd = -1;
  struct socket* so = new_socket(at.ss.ss_family, efd, error);
  if (!so) return nullptr;
  const int on = 1;
  usrsctp_setsockopt(so, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
  if (usrsctp_bind(so, const_cast<sockaddr*>(reinterpret_cast<const sockaddr*>(&at.ss)), at.len) !=
          0 ||
      usrsctp_listen(so, 16) != 0) {
    error = last_error("usrsctp listen");
    usrsctp_close(so);
    ::close(efd);
    return nullptr;
  }
  std::uint16_t port = 0;
  if (at.ss.ss_family == AF_INET)
    port = ntohs(reinterpret_cast<const sockaddr_in*>(&at.ss)->sin_port);
  else
    port = ntohs(reinterpret_cast<const sockaddr_in6*>(&at.ss)->sin6_port);
  if (port == 0) {
    struct sockaddr* addrs = nullptr;
    if (usrsctp_getladdrs(so, 0, &addrs) > 0 && addrs)
      port = ntohs(addrs->sa_family == AF_INET ? reinterpret_cast<sockaddr_in*>(addrs)->sin_port
                                               : reinterpret_cast<sockaddr_in6*>(addrs)->sin6_port);
    if (addrs) usrsctp_freeladdrs(addrs);
  }
  return std::make_unique<UserListener>(so, efd, port);
}

std::unique_ptr<SctpSocket> user_connect(const Address& to, const Address* from,
                                         std::uint16_t remote_udp_port, std::string& error) {
  int efd = -1;
  struct socket* so = new_socket(to.ss.ss_family, efd, error);
  if (!so) return nullptr;
  auto sock = std::make_unique<UserSocket>(so, efd);
  if (remote_udp_port != 0) {
    sctp_udpencaps enc{};
    std::memcpy(&enc.sue_address, &to.ss, to.len);
    enc.sue_port = htons(remote_udp_port);
    if (usrsctp_setsockopt(so, IPPROTO_SCTP, SCTP_REMOTE_UDP_ENCAPS_PORT, &enc, sizeof enc) != 0) {
      error = last_error("usrsctp SCTP_REMOTE_UDP_ENCAPS_PORT");
      return nullptr;
    }
  }
  if (from && usrsctp_bind(so, const_cast<sockaddr*>(reinterpret_cast<const sockaddr*>(&from->ss)),
                           from->len) != 0) {
    error = last_error("usrsctp bind");
    return nullptr;
  }
  if (usrsctp_connect(so, const_cast<sockaddr*>(reinterpret_cast<const sockaddr*>(&to.ss)),
                      to.len) != 0 &&
      errno != EINPROGRESS) {
    error = last_error("usrsctp_connect");
    return nullptr;
  }
  return sock;
}

}  // namespace ddpscope::endpoint::detail
