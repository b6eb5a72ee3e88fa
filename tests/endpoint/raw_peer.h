// SPDX-License-Identifier: GPL-2.0-or-later
// Helpers shared by the loopback endpoint tests: test patterns, regions with guard bytes, and a
// raw-socket peer whose octets a crafting Session builds (or the test writes by hand).
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <memory>
#include <span>

#include "ddpscope/endpoint/endpoint.h"

namespace ddpscope::testing_peer {

inline Bytes pattern(std::size_t n, std::uint8_t seed) {
  Bytes b(n);
  for (std::size_t i = 0; i < n; ++i)
    b[i] = static_cast<std::uint8_t>(seed + i * 13 + (i >> 9));
  return b;
}

inline std::uint64_t addr_of(const Bytes& b) {
  return reinterpret_cast<std::uintptr_t>(b.data());
}

// `size` octets with `guard` octets of 0xA5 on each side: anything placed outside the region
// shows in guards_intact().
class GuardedRegion {
 public:
  static constexpr std::uint8_t kGuard = 0xA5;
  explicit GuardedRegion(std::size_t size, std::size_t guard = 64, std::uint8_t fill = 0)
      : backing_(size + 2 * guard, kGuard), guard_(guard) {
    std::fill(region().begin(), region().end(), fill);
  }
  std::span<std::uint8_t> region() {
    return {backing_.data() + guard_, backing_.size() - 2 * guard_};
  }
  std::uint8_t* data() { return backing_.data() + guard_; }
  std::uint64_t base() const { return reinterpret_cast<std::uintptr_t>(backing_.data() + guard_); }
  bool guards_intact() const {
    const auto ok = [](std::uint8_t b) { return b == kGuard; };
    return std::all_of(backing_.begin(), backing_.begin() + static_cast<std::ptrdiff_t>(guard_),
                       ok) &&
           std::all_of(backing_.end() - static_cast<std::ptrdiff_t>(guard_), backing_.end(), ok);
  }

 private:
  Bytes backing_;
  std::size_t guard_;
};

// A plain TCP socket driven by the test; a crafting Session builds its handshake and FPDUs.
// Writes are queued and flushed without blocking, so that the test never waits on the
// endpoint it drives from the same thread.
class RawPeer {
 public:
  // rcvbuf > 0: a small receive buffer, set before connecting (a slow reader backs up sooner).
  RawPeer(std::uint16_t port, session::MemoryTable& mem, bool crc, int rcvbuf = 0) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    if (rcvbuf > 0) setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    int one = 1;
    setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    fcntl(fd_, F_SETFL, fcntl(fd_, F_GETFL, 0) | O_NONBLOCK);
    sockaddr_in self{};
    socklen_t len = sizeof self;
    getsockname(fd_, reinterpret_cast<sockaddr*>(&self), &len);
    local_port_ = ntohs(self.sin_port);
    session::SessionConfig c;
    c.pd = mem.alloc_pd();
    c.mpa.crc = crc;
    craft_ = std::make_unique<session::Session>(mem, c);
  }
  ~RawPeer() { close(); }
  RawPeer(const RawPeer&) = delete;
  RawPeer& operator=(const RawPeer&) = delete;

  bool connected() const { return connected_; }
  std::uint16_t local_port() const { return local_port_; }
  session::Session& craft() { return *craft_; }
  // Queues octets and sends what the socket takes now.
  void write_raw(ByteView b) {
    out_.insert(out_.end(), b.begin(), b.end());
    flush();
  }
  // Takes the crafting session's pending output without sending it (the test cuts it up).
  Bytes take_craft_output() {
    Bytes b(craft_->output().begin(), craft_->output().end());
    craft_->consume_output(b.size());
    return b;
  }
  void flush() {
    while (fd_ >= 0 && !out_.empty() && !error_) {
      const ssize_t n = ::send(fd_, out_.data(), out_.size(), MSG_NOSIGNAL);
      if (n > 0) {
        out_.erase(out_.begin(), out_.begin() + n);
        continue;
      }
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
      error_ = true;  // reset by the endpoint
    }
  }
  // Stop or resume reading the socket (a slow reader).
  void set_reading(bool on) { reading_ = on; }
  // Moves the crafting session's output to the socket and the socket's input to it, with one
  // poll round of `loop` each time.
  void pump(endpoint::Loop& loop, int rounds = 20) {
    for (int i = 0; i < rounds; ++i) {
      step();
      loop.poll_once(5);
      read_available();
      if (eof_) break;
    }
  }
  // One move without polling the loop.
  void step() {
    if (craft_->output_size()) write_raw(take_craft_output());
    flush();
  }
  void read_available() {
    if (!reading_ || fd_ < 0) return;
    pollfd pfd{fd_, POLLIN, 0};
    while (!eof_ && ::poll(&pfd, 1, 0) > 0 && (pfd.revents & (POLLIN | POLLHUP | POLLERR))) {
      std::uint8_t buf[65536];
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) break;
      if (n <= 0) {
        eof_ = true;
        reset_seen_ = n < 0;
        break;
      }
      bytes_in_ += static_cast<std::size_t>(n);
      craft_->receive(ByteView(buf, static_cast<std::size_t>(n)));
    }
  }
  bool eof() const { return eof_; }
  bool reset_seen() const { return reset_seen_; }
  bool write_failed() const { return error_; }
  std::size_t pending_out() const { return out_.size(); }
  std::size_t bytes_in() const { return bytes_in_; }
  // Abortive close: RST.
  void reset() {
    if (fd_ < 0) return;
    linger l{1, 0};
    setsockopt(fd_, SOL_SOCKET, SO_LINGER, &l, sizeof l);
    close();
  }
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
  std::uint16_t local_port_ = 0;
  bool connected_ = false;
  bool eof_ = false;
  bool reset_seen_ = false;
  bool error_ = false;
  bool reading_ = true;
  std::size_t bytes_in_ = 0;
  Bytes out_;
  std::unique_ptr<session::Session> craft_;
};

}  // namespace ddpscope::testing_peer
