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

#include "sctp_socket.h"

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
  hints.ai_flags = AI_NUMERICSERV;
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

detail::Address address_of(const sockaddr_storage& ss, socklen_t len) {
  detail::Address a;
  a.ss = ss;
  a.len = len;
  return a;
}
}  // namespace

std::string_view to_string(SctpStack s) {
  switch (s) {
    case SctpStack::kernel:
      return "kernel";
    case SctpStack::user:
      return "user";
    case SctpStack::automatic:
      return "auto";
  }
  return "?";
}

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
    if (!sctp_) ::close(fd_);  // an SCTP socket closes its own descriptors
    --g_open;
  }
}

void Connection::abort() {
  if (session_) session_->abort();
  if (sctp_ && fd_ >= 0) {
    sctp_->abort();  // SCTP ABORT (RFC 5040 §5.4's reset)
  } else if (fd_ >= 0) {
    linger l{1, 0};
    setsockopt(fd_, SOL_SOCKET, SO_LINGER, &l, sizeof l);
  }
  finish();
}

void Connection::finish() {
  // The socket goes as soon as the connection is done: its slot under the per-process cap is
  // free again even if the application reaps later.
  if (fd_ >= 0) {
    if (sctp_)
      sctp_.reset();
    else
      ::close(fd_);
    fd_ = -1;
    --g_open;
  }
  done_ = true;
}

Loop::Loop(session::MemoryTable& memory) : memory_(memory), rbuf_(1u << 20) {}

Loop::~Loop() {
  conns_.clear();  // before the SCTP stack they use
  stop_listening();
}

void Loop::stop_listening() {
  if (sctp_listener_)
    sctp_listener_.reset();
  else if (listen_fd_ >= 0)
    ::close(listen_fd_);
  listen_fd_ = -1;
}

bool Loop::set_transport(const Transport& transport, std::string& error) {
  Transport t = transport;
  if (t.llp == session::Llp::sctp) {
    std::string why;
    if (t.stack == SctpStack::automatic)
      t.stack = detail::kernel_available(why) ? SctpStack::kernel : SctpStack::user;
    if (t.stack == SctpStack::kernel) {
      if (!detail::kernel_available(why)) {
        error = "--sctp-stack kernel: " + why;
        return false;
      }
    } else if (!detail::user_start(t.udp_port, error)) {
      return false;
    }
  }
  transport_ = t;
  return true;
}

std::string Loop::transport_name() const {
  if (!sctp()) return "tcp";
  if (transport_.stack == SctpStack::kernel) return "sctp (kernel)";
  return transport_.udp_port ? "sctp (usrsctp over UDP)" : "sctp (usrsctp)";
}

bool Loop::listen(const std::string& addr, std::uint16_t port, const session::SessionConfig& config,
                  std::string& error) {
  sockaddr_storage ss{};
  socklen_t len = 0;
  if (!resolve(addr, port, ss, len, error)) return false;
  listen_config_ = config;
  listen_config_.role = session::Role::responder;
  listen_config_.llp = transport_.llp;
  if (sctp()) {
    const detail::Address at = address_of(ss, len);
    sctp_listener_ = transport_.stack == SctpStack::kernel ? detail::kernel_listen(at, error)
                                                           : detail::user_listen(at, error);
    if (!sctp_listener_) {
      error = "listen on " + addr + ":" + std::to_string(port) + ": " + error;
      return false;
    }
    listen_fd_ = sctp_listener_->poll_fd();
    listen_port_ = sctp_listener_->port();
    return true;
  }
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
  if (sctp()) {
    detail::Address src;
    if (!source.empty()) {
      if (!resolve(source, 0, src.ss, src.len, error)) return nullptr;
      if (src.ss.ss_family != ss.ss_family) {
        error = "source address " + source + " is not of the peer's address family";
        return nullptr;
      }
    }
    const detail::Address to = address_of(ss, len);
    const detail::Address* from = source.empty() ? nullptr : &src;
    auto sock = transport_.stack == SctpStack::kernel
                    ? detail::kernel_connect(to, from, error)
                    : detail::user_connect(to, from, transport_.remote_udp_port, error);
    if (!sock) {
      error = "connect to " + peer_name(ss) + ": " + error;
      return nullptr;
    }
    auto c = std::unique_ptr<Connection>(new Connection());
    c->fd_ = sock->poll_fd();
    c->sctp_ = std::move(sock);
    ++g_open;
    c->peer_ = peer_name(ss);
    session::SessionConfig cfg = config;
    cfg.role = session::Role::initiator;
    cfg.llp = transport_.llp;
    c->session_ = std::make_unique<session::Session>(memory_, cfg);
    c->connecting_ = true;
    Connection* raw = c.get();
    conns_.push_back(std::move(c));
    return raw;
  }
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
  if (c.sctp_) {
    c.local_port_ = c.sctp_->local_port();
    // RFC 5043 §9: MULPDU from the association's path MTU (the lab caught 8 octets too many over
    // UDP: every full-sized segment then needed two chunks, sctp.segment-too-large).
    if (const std::uint32_t mtu = c.sctp_->path_mtu())
      c.session_->set_path_mtu(mtu, c.peer_.find('.') == std::string::npos, c.sctp_->over_udp());
  } else {
    c.local_port_ = local_port_of(c.fd_);
    c.session_->set_emss(emss_of(c.fd_));
  }
  if (on_connection) on_connection(c);
  c.session_->start(now_ns());
  c.started_ = true;
}

void Loop::finish_connect(Connection& c) {
  if (c.sctp_) {
    std::string why;
    const int st = c.sctp_->connect_status(why);
    if (st == 0) return;  // INIT / COOKIE still on their way
    c.connecting_ = false;
    if (st < 0) {
      session::Event e;
      e.kind = session::EventKind::error;
      e.message = "connect to " + c.peer_ + ": " + why;
      c.finish();
      if (on_event) on_event(c, e);
      return;
    }
    start_session(c);
    return;
  }
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

bool Loop::make_responder(Connection& c) {
  session::SessionConfig config = listen_config_;
  if (on_accept && !on_accept(c, config)) {
    c.abort();
    ++refused_;
    return false;
  }
  config.role = session::Role::responder;
  config.llp = transport_.llp;
  c.session_ = std::make_unique<session::Session>(memory_, config);
  return true;
}

void Loop::accept_all() {
  if (sctp_listener_) {
    sctp_listener_->drain_wakeups();
    for (;;) {
      detail::Address peer;
      auto sock = sctp_listener_->accept(peer);
      if (!sock) return;
      if (g_open >= g_max) {
        sock->abort();  // over the per-process cap: an ABORT, as TCP's reset
        ++refused_;
        continue;
      }
      auto c = std::unique_ptr<Connection>(new Connection());
      c->fd_ = sock->poll_fd();
      c->sctp_ = std::move(sock);
      ++g_open;
      c->peer_ = peer_name(peer.ss);
      if (!make_responder(*c)) continue;  // refused: its association is aborted
      Connection* raw = c.get();
      conns_.push_back(std::move(c));
      start_session(*raw);
    }
  }
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
    if (!make_responder(*c)) continue;  // refused: reset
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

// SCTP: whole user messages with their PPID and stream id into the session (RFC 5043).
void Loop::read_messages(Connection& c) {
  constexpr std::size_t kMaxMessage = 16u << 20;  // far above any MULPDU: a hostile peer
  for (int i = 0; i < 256 && c.fd_ >= 0 && wants_input(c); ++i) {
    std::size_t n = 0;
    std::uint32_t ppid = 0;
    std::uint16_t sid = 0;
    bool eor = true;
    bool unordered = true;
    std::string why;
    const detail::Io io =
        c.sctp_->recv(rbuf_.data(), rbuf_.size(), n, ppid, sid, eor, unordered, why);
    if (io == detail::Io::would_block) return;
    if (io != detail::Io::ok) {
      c.eof_ = true;
      c.session_->receive_eof();
      dispatch(c);
      return;
    }
    c.bytes_in_ += n;
    ByteView msg(rbuf_.data(), n);
    if (!eor || !c.rx_message_.empty()) {
      if (c.rx_message_.size() + n > kMaxMessage) {
        c.abort();
        return;
      }
      c.rx_message_.insert(c.rx_message_.end(), msg.begin(), msg.end());
      if (!eor) continue;
      msg = c.rx_message_;
    }
    c.session_->receive_message(ppid, sid, msg, now_ns(), unordered);
    c.rx_message_.clear();
    dispatch(c);
    while (c.session_->input_paused()) {
      c.session_->resume_input();
      dispatch(c);
    }
    write_to(c);
  }
}

void Loop::write_messages(Connection& c) {
  while (auto m = c.session_->next_message()) {
    std::string why;
    const detail::Io io = c.sctp_->send(m->data, m->ppid, m->stream_id, why);
    if (io == detail::Io::would_block) return;
    if (io != detail::Io::ok) {
      c.eof_ = true;
      c.session_->receive_eof();
      dispatch(c);
      c.finish();
      return;
    }
    c.bytes_out_ += m->data.size();
    c.session_->consume_output(m->data.size());
    dispatch(c);
    if (c.fd_ < 0) return;
  }
  if (c.session_->want_shutdown() && !c.shut_wr_ && c.session_->output_size() == 0) {
    c.sctp_->shutdown_write();
    c.shut_wr_ = true;
  }
}

void Loop::read_from(Connection& c) {
  if (c.sctp_) {
    read_messages(c);
    return;
  }
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
  if (c.sctp_) {
    write_messages(c);
    return;
  }
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
  if (c.sctp_) {
    // Whatever woke us (the upcall signals reads, writes and state changes alike): try both.
    c.sctp_->drain_wakeups();
    if (c.connecting_) {
      finish_connect(c);
      if (c.connecting_ || c.done_) return;
    }
    read_from(c);
    if (c.fd_ >= 0) write_to(c);
    return;
  }
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
    if (c->sctp_) {
      ev = c->sctp_->poll_events(wants_input(*c), c->session_->output_size() > 0, c->connecting_);
      if (!c->connecting_) {
        if (auto d = c->session_->deadline()) {
          const std::int64_t ms = std::max<std::int64_t>(0, (*d - now) / 1'000'000 + 1);
          timeout_ms = static_cast<int>(std::min<std::int64_t>(timeout_ms, ms));
        }
      }
    } else if (c->connecting_) {
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
  int rc = 0;
  if (timeout_ms > 0 && busy_poll_ns_ > 0 && now - last_activity_ns_ < busy_poll_ns_) {
    const std::int64_t until = last_activity_ns_ + busy_poll_ns_;
    do {
      rc = ::poll(fds.data(), fds.size(), 0);
    } while (rc == 0 && now_ns() < until);
  }
  if (rc == 0) rc = ::poll(fds.data(), fds.size(), timeout_ms);
  if (rc > 0) {
    last_activity_ns_ = now_ns();
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
