// SPDX-License-Identifier: GPL-2.0-or-later
#include "ddpscope/endpoint/endpoint.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <ctime>

namespace ddpscope::endpoint {

namespace {
std::atomic<std::size_t> g_open{0};
std::atomic<std::size_t> g_max{64};

bool set_nonblocking(int fd) {
  const int fl = fcntl(fd, F_GETFL, 0);
  return fl >= 0 && fcntl(fd, F_SETFL, fl | O_NONBLOCK) == 0;
}

void tune(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  // Socket buffers stay under the kernel's autotuning.
}

std::string peer_name(const sockaddr_storage& ss) {
  char host[INET6_ADDRSTRLEN] = "?";
  std::uint16_t port = 0;
  if (ss.ss_family == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&ss);
    inet_ntop(AF_INET, &a->sin_addr, host, sizeof host);
    port = ntohs(a->sin_port);
  } else if (ss.ss_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&ss);
    inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof host);
    port = ntohs(a->sin6_port);
  }
  return std::string(host) + ":" + std::to_string(port);
}

std::uint16_t local_port_of(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return 0;
  if (ss.ss_family == AF_INET) return ntohs(reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
  if (ss.ss_family == AF_INET6) return ntohs(reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port);
  return 0;
}

// Effective MSS of the connection (RFC 5044 §8 sizes MULPDU from it).
std::uint32_t emss_of(int fd) {
  int mss = 0;
  socklen_t len = sizeof mss;
  if (getsockopt(fd, IPPROTO_TCP, TCP_MAXSEG, &mss, &len) != 0 || mss <= 0) return 1460;
  return static_cast<std::uint32_t>(mss);
}

bool resolve(const std::string& host, std::uint16_t port, sockaddr_storage& ss, socklen_t& len,
             std::string& error) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  const int rc = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res);
  if (rc != 0 || !res) {
    error = "cannot resolve " + host + ": " + gai_strerror(rc);
    return false;
  }
  std::memcpy(&ss, res->ai_addr, res->ai_addrlen);
  len = res->ai_addrlen;
  freeaddrinfo(res);
  return true;
}
}  // namespace

std::int64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

session::MemoryLimits process_memory_limits() {
  session::MemoryLimits l;
  l.first_index = 1 + static_cast<std::uint32_t>((getpid() * 2654435761u) % 0xF00000u);
  return l;
}

void set_max_connections(std::size_t n) {
  g_max = n;
}
std::size_t max_connections() {
  return g_max;
}
std::size_t open_connections() {
  return g_open;
}

bool split_host_port(const std::string& s, std::string& host, std::uint16_t& port) {
  const auto colon = s.rfind(':');
  if (colon == std::string::npos || colon == 0) return false;
  host = s.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  const std::string p = s.substr(colon + 1);
  if (p.empty() || p.size() > 5 || !std::all_of(p.begin(), p.end(), ::isdigit)) return false;
  const unsigned long v = std::stoul(p);
  if (v > 65535) return false;
  port = static_cast<std::uint16_t>(v);
  return true;
}

Connection::~Connection() {
  if (fd_ >= 0) {
    ::close(fd_);
    --g_open;
  }
}

void Connection::abort() {
  if (session_) session_->abort();
  if (fd_ >= 0) {
    linger l{1, 0};
    setsockopt(fd_, SOL_SOCKET, SO_LINGER, &l, sizeof l);
  }
  finish();
}

void Connection::finish() {
  // The socket goes as soon as the connection is done: its slot under the per-process cap is
  // free again even if the application reaps later.
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
    --g_open;
  }
  done_ = true;
}

Loop::Loop(session::MemoryTable& memory) : memory_(memory), rbuf_(1u << 20) {}

Loop::~Loop() {
  stop_listening();
}

void Loop::stop_listening() {
  if (listen_fd_ >= 0) ::close(listen_fd_);
  listen_fd_ = -1;
}

bool Loop::listen(const std::string& addr, std::uint16_t port, const session::SessionConfig& config,
                  std::string& error) {
  sockaddr_storage ss{};
  socklen_t len = 0;
  if (!resolve(addr, port, ss, len, error)) return false;
  const int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    error = std::string("socket: ") + std::strerror(errno);
    return false;
  }
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (bind(fd, reinterpret_cast<sockaddr*>(&ss), len) != 0 || ::listen(fd, 16) != 0 ||
      !set_nonblocking(fd)) {
    error = "listen on " + addr + ":" + std::to_string(port) + ": " + std::strerror(errno);
    ::close(fd);
    return false;
  }
  listen_fd_ = fd;
  listen_port_ = local_port_of(fd);
  listen_config_ = config;
  listen_config_.role = session::Role::responder;
  return true;
}

Connection* Loop::connect(const std::string& host, std::uint16_t port,
                          const session::SessionConfig& config, std::string& error,
                          const std::string& source) {
  if (g_open >= g_max) {
    error = "connection limit reached (" + std::to_string(g_max.load()) + ")";
    return nullptr;
  }
  sockaddr_storage ss{};
  socklen_t len = 0;
  if (!resolve(host, port, ss, len, error)) return nullptr;
  const int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    error = std::string("socket: ") + std::strerror(errno);
    return nullptr;
  }
  tune(fd);
  set_nonblocking(fd);
  auto c = std::unique_ptr<Connection>(new Connection());
  c->fd_ = fd;
  ++g_open;
  if (!source.empty()) {
    sockaddr_storage src{};
    socklen_t slen = 0;
    if (!resolve(source, 0, src, slen, error)) return nullptr;
    if (src.ss_family != ss.ss_family) {
      error = "source address " + source + " is not of the peer's address family";
      return nullptr;
    }
    if (::bind(fd, reinterpret_cast<sockaddr*>(&src), slen) != 0) {
      error = "bind to " + source + ": " + std::strerror(errno);
      return nullptr;
    }
  }
  c->peer_ = peer_name(ss);
  session::SessionConfig cfg = config;
  cfg.role = session::Role::initiator;
  c->session_ = std::make_unique<session::Session>(memory_, cfg);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&ss), len) != 0) {
    if (errno != EINPROGRESS) {
      error = "connect to " + c->peer_ + ": " + std::strerror(errno);
      return nullptr;
    }
    c->connecting_ = true;
  }
  Connection* raw = c.get();
  conns_.push_back(std::move(c));
  if (!raw->connecting_) start_session(*raw);
  return raw;
}

void Loop::start_session(Connection& c) {
  c.local_port_ = local_port_of(c.fd_);
  c.session_->set_emss(emss_of(c.fd_));
  if (on_connection) on_connection(c);
  c.session_->start(now_ns());
  c.started_ = true;
}

void Loop::finish_connect(Connection& c) {
  int err = 0;
  socklen_t len = sizeof err;
  getsockopt(c.fd_, SOL_SOCKET, SO_ERROR, &err, &len);
  c.connecting_ = false;
  if (err != 0) {
    session::Event e;
    e.kind = session::EventKind::error;
    e.message = "connect to " + c.peer_ + ": " + std::strerror(err);
    c.finish();
    if (on_event) on_event(c, e);
    return;
  }
  start_session(c);
}

void Loop::accept_all() {
  while (listen_fd_ >= 0) {
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    const int fd = accept4(listen_fd_, reinterpret_cast<sockaddr*>(&ss), &len, SOCK_CLOEXEC);
    if (fd < 0) return;
    if (g_open >= g_max) {
      // Over the per-process cap: refuse with a reset, so that a flood leaves no TIME_WAIT.
      linger l{1, 0};
      setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
      ::close(fd);
      ++refused_;
      continue;
    }
    tune(fd);
    set_nonblocking(fd);
    auto c = std::unique_ptr<Connection>(new Connection());
    c->fd_ = fd;
    ++g_open;
    c->peer_ = peer_name(ss);
    c->session_ = std::make_unique<session::Session>(memory_, listen_config_);
    Connection* raw = c.get();
    conns_.push_back(std::move(c));
    start_session(*raw);
  }
}

bool Loop::wants_input(const Connection& c) const {
  // What the peer makes us send is bounded by the session itself (Read Responses are produced
  // only below tx_low_water; atomic responses beyond max_tx_bytes draw a Terminate), so input
  // is read even while output waits: two endpoints posting large messages to each other must
  // not deadlock.
  return !c.eof_ && !c.session_->input_paused();
}

void Loop::read_from(Connection& c) {
  for (int i = 0; i < 64 && c.fd_ >= 0 && wants_input(c); ++i) {
    const ssize_t n = ::recv(c.fd_, rbuf_.data(), rbuf_.size(), 0);
    if (n > 0) {
      c.bytes_in_ += static_cast<std::uint64_t>(n);
      c.session_->receive(ByteView(rbuf_.data(), static_cast<std::size_t>(n)), now_ns());
      dispatch(c);
      // A flood of tiny FPDUs: the session frames at most max_pending_events at a time.
      while (c.session_->input_paused()) {
        c.session_->resume_input();
        dispatch(c);
      }
      write_to(c);
      if (static_cast<std::size_t>(n) < rbuf_.size()) return;
      continue;
    }
    if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
      c.eof_ = true;
      c.session_->receive_eof();
      dispatch(c);
    }
    return;
  }
}

void Loop::write_to(Connection& c) {
  if (c.fd_ < 0 || c.connecting_) return;
  while (c.session_->output_size() > 0) {
    const ByteView out = c.session_->output();
    const ssize_t n = ::send(c.fd_, out.data(), out.size(), MSG_NOSIGNAL);
    if (n <= 0) {
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
      c.eof_ = true;
      c.session_->receive_eof();
      dispatch(c);
      c.finish();
      return;
    }
    c.bytes_out_ += static_cast<std::uint64_t>(n);
    c.session_->consume_output(static_cast<std::size_t>(n));
    dispatch(c);
  }
  if (c.session_->want_shutdown() && !c.shut_wr_) {
    ::shutdown(c.fd_, SHUT_WR);
    c.shut_wr_ = true;
  }
}

void Loop::dispatch(Connection& c) {
  session::Event e;
  while (c.session_->poll_event(e))
    if (on_event) on_event(c, e);
}

void Loop::service(Connection& c, short revents) {
  if (c.fd_ < 0 || c.done_) return;  // finished earlier in this round
  if (c.connecting_) {
    if (revents & (POLLOUT | POLLERR | POLLHUP)) finish_connect(c);
    if (c.connecting_ || c.done_) return;
  }
  if (revents & (POLLIN | POLLHUP | POLLERR)) read_from(c);
  if (c.fd_ >= 0) write_to(c);
}

void Loop::flush() {
  // By index: an event handler may open connections.
  for (std::size_t i = 0; i < conns_.size(); ++i) {
    Connection* c = conns_[i].get();
    if (c->done_ || c->fd_ < 0) continue;
    dispatch(*c);
    write_to(*c);
    dispatch(*c);
  }
}

void Loop::poll_once(int timeout_ms) {
  flush();
  std::vector<pollfd> fds;
  std::vector<Connection*> who;
  if (listen_fd_ >= 0) {
    fds.push_back(pollfd{listen_fd_, POLLIN, 0});
    who.push_back(nullptr);
  }
  const std::int64_t now = now_ns();
  for (auto& c : conns_) {
    if (c->done_ || c->fd_ < 0) continue;
    short ev = 0;
    if (c->connecting_) {
      ev = POLLOUT;
    } else {
      if (wants_input(*c)) ev |= POLLIN;
      if (c->session_->output_size() > 0) ev |= POLLOUT;
      if (auto d = c->session_->deadline()) {
        const std::int64_t ms = std::max<std::int64_t>(0, (*d - now) / 1'000'000 + 1);
        timeout_ms = static_cast<int>(std::min<std::int64_t>(timeout_ms, ms));
      }
    }
    fds.push_back(pollfd{c->fd_, ev, 0});
    who.push_back(c.get());
  }
  const int rc = ::poll(fds.data(), fds.size(), timeout_ms);
  if (rc > 0) {
    for (std::size_t i = 0; i < fds.size(); ++i) {
      if (!fds[i].revents) continue;
      if (!who[i])
        accept_all();
      else
        service(*who[i], fds[i].revents);
    }
  }
  const std::int64_t after = now_ns();
  for (std::size_t i = 0; i < conns_.size(); ++i) {
    Connection* c = conns_[i].get();
    if (c->done_ || c->fd_ < 0 || !c->started_) continue;
    c->session_->on_timer(after);  // also keeps the session's clock for its timers
    if (c->session_->has_events()) dispatch(*c);
    if (c->done_ || c->fd_ < 0) continue;
    // Stalled peer, or a Terminate / failed handshake / close the application left standing
    // past the teardown timeout: reset (RFC 5040 §5.4).
    if (c->session_->want_abort()) {
      c->abort();
      ++timed_out_;
      continue;
    }
    write_to(*c);
    // Both directions finished: the socket is done.
    if (c->fd_ >= 0 && c->eof_ && c->shut_wr_ && c->session_->output_size() == 0) c->finish();
  }
}

bool Loop::run_until(const std::function<bool()>& done, int timeout_ms) {
  const std::int64_t end = now_ns() + static_cast<std::int64_t>(timeout_ms) * 1'000'000;
  while (!done()) {
    const std::int64_t left = (end - now_ns()) / 1'000'000;
    if (left <= 0) return done();
    poll_once(static_cast<int>(std::min<std::int64_t>(left, 50)));
  }
  return true;
}

void Loop::reap() {
  conns_.erase(std::remove_if(conns_.begin(), conns_.end(), [](const auto& c) { return c->done_; }),
               conns_.end());
}

}  // namespace ddpscope::endpoint
