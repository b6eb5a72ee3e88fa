// SPDX-License-Identifier: GPL-2.0-or-later
// Endpoint benchmark (label bench): RDMA WRITE of 64 KiB messages endpoint <-> endpoint over
// loopback with CRC off and on, against a plain TCP stream of the same bytes in the same run;
// then the round-trip latency of 64-octet RDMA READs. Prints one Markdown table row per case.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "ddpscope/endpoint/endpoint.h"

using namespace ddpscope;

namespace {

constexpr std::size_t kMsg = 64 << 10;

double seconds_since(std::int64_t t0) {
  return static_cast<double>(endpoint::now_ns() - t0) / 1e9;
}

// Plain TCP: one thread writes `total` octets in 64 KiB send() calls, the other reads them.
double tcp_stream(std::size_t total) {
  const int lfd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(lfd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  listen(lfd, 1);
  socklen_t len = sizeof a;
  getsockname(lfd, reinterpret_cast<sockaddr*>(&a), &len);
  std::thread reader([&] {
    const int fd = accept(lfd, nullptr, nullptr);
    std::vector<std::uint8_t> buf(256 << 10);
    std::size_t got = 0;
    while (got < total) {
      const ssize_t n = recv(fd, buf.data(), buf.size(), 0);
      if (n <= 0) break;
      got += static_cast<std::size_t>(n);
    }
    close(fd);
  });
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  std::vector<std::uint8_t> msg(kMsg, 0x5A);
  const std::int64_t t0 = endpoint::now_ns();
  for (std::size_t sent = 0; sent < total;) {
    const ssize_t n = send(fd, msg.data(), std::min(msg.size(), total - sent), 0);
    if (n <= 0) break;
    sent += static_cast<std::size_t>(n);
  }
  reader.join();
  const double s = seconds_since(t0);
  close(fd);
  close(lfd);
  return static_cast<double>(total) / s;
}

struct Server {
  session::MemoryTable mem;
  std::unique_ptr<endpoint::Loop> loop;
  std::vector<std::uint8_t> region = std::vector<std::uint8_t>(kMsg * 4);
  std::uint32_t stag = 0;
  std::atomic<std::uint16_t> port{0};
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> placed{0};
  unsigned busy_us = endpoint::Loop::kDefaultBusyPollUs;
};

void serve(Server& s, bool crc) {
  session::SessionConfig cfg;
  cfg.pd = s.mem.alloc_pd();
  cfg.mpa.crc = crc;
  s.stag = *s.mem.register_region(cfg.pd, s.region, 0, session::access::all);
  s.loop = std::make_unique<endpoint::Loop>(s.mem);
  s.loop->set_busy_poll_us(s.busy_us);
  s.loop->on_event = [&](endpoint::Connection&, const session::Event& e) {
    if (e.kind == session::EventKind::write_placed) s.placed += e.length;
  };
  std::string err;
  if (!s.loop->listen("127.0.0.1", 0, cfg, err)) std::abort();
  s.port = s.loop->listen_port();
  while (!s.stop)
    s.loop->poll_once(5);
}

// Client: RDMA Writes of 64 KiB into the server's region until `total` octets are placed.
double rdma_write_stream(std::size_t total, bool crc) {
  Server s;
  std::thread t([&] { serve(s, crc); });
  while (!s.port)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  session::MemoryTable mem;
  endpoint::Loop loop(mem);
  session::SessionConfig cfg;
  cfg.pd = mem.alloc_pd();
  cfg.mpa.crc = crc;
  std::string err;
  endpoint::Connection* c = loop.connect("127.0.0.1", s.port, cfg, err);
  loop.run_until([&] { return c->session().state() == session::Session::State::established; },
                 3000);
  std::vector<std::uint8_t> msg(kMsg, 0xA5);
  const std::int64_t t0 = endpoint::now_ns();
  std::size_t posted = 0;
  std::uint64_t to = 0;
  while (s.placed < total) {
    while (posted < total && c->session().output_size() < (4u << 20)) {
      c->session().rdma_write(msg, s.stag, to);
      to = (to + kMsg) % (kMsg * 4);
      posted += kMsg;
    }
    loop.poll_once(1);
    session::Event e;
    while (c->session().poll_event(e)) {
    }
  }
  const double secs = seconds_since(t0);
  s.stop = true;
  t.join();
  return static_cast<double>(total) / secs;
}

// 64-octet RDMA READ round trips, one at a time; both loops busy-poll for `busy_us` after
// their last event (Loop::set_busy_poll_us; 0 = block in poll() at once).
std::vector<double> read_latency(int n, unsigned busy_us) {
  Server s;
  s.busy_us = busy_us;
  std::thread t([&] { serve(s, false); });
  while (!s.port)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  session::MemoryTable mem;
  endpoint::Loop loop(mem);
  loop.set_busy_poll_us(busy_us);
  session::SessionConfig cfg;
  cfg.pd = mem.alloc_pd();
  std::vector<std::uint8_t> sink(64);
  const std::uint32_t sstag = *mem.register_region(cfg.pd, sink, 0, session::access::all);
  std::string err;
  endpoint::Connection* c = loop.connect("127.0.0.1", s.port, cfg, err);
  loop.run_until([&] { return c->session().state() == session::Session::State::established; },
                 3000);
  bool done = false;
  loop.on_event = [&](endpoint::Connection&, const session::Event& e) {
    if (e.kind == session::EventKind::read_completed) done = true;
  };
  std::vector<double> us;
  for (int i = 0; i < n; ++i) {
    done = false;
    const std::int64_t t0 = endpoint::now_ns();
    c->session().rdma_read(sstag, 0, 64, s.stag, 128);
    loop.flush();
    while (!done)
      loop.poll_once(10);
    us.push_back(static_cast<double>(endpoint::now_ns() - t0) / 1e3);
  }
  s.stop = true;
  t.join();
  std::sort(us.begin(), us.end());
  return us;
}

}  // namespace

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int main(int argc, char** argv) {
  const std::size_t mib = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 2048;
  const int reps = argc > 2 ? std::atoi(argv[2]) : 5;
  const std::size_t total = (mib << 20) / kMsg * kMsg;
  // Interleaved repetitions, medians reported: loopback throughput on a shared VM is noisy.
  std::vector<double> tcp, off, on;
  for (int r = 0; r < reps; ++r) {
    tcp.push_back(tcp_stream(total));
    off.push_back(rdma_write_stream(total, false));
    on.push_back(rdma_write_stream(total, true));
  }
  const double t = median(tcp), f = median(off), n = median(on);
  const auto lat = read_latency(20000, endpoint::Loop::kDefaultBusyPollUs);
  const auto lat0 = read_latency(20000, 0);
  std::printf("%zu MiB per run, median of %d interleaved runs\n\n", mib, reps);
  std::printf("| case | MB/s | vs TCP |\n|---|---|---|\n");
  std::printf("| plain TCP stream, 64 KiB send()s | %.0f | 100 %% |\n", t / 1e6);
  std::printf("| RDMA WRITE 64 KiB, CRC off | %.0f | %.0f %% |\n", f / 1e6, 100 * f / t);
  std::printf("| RDMA WRITE 64 KiB, CRC on | %.0f | %.0f %% |\n", n / 1e6, 100 * n / t);
  const auto row = [](const char* what, const std::vector<double>& l) {
    std::printf(
        "\n64-octet RDMA READ round trip over %zu reads, %s: median %.1f us, p99 %.1f us, "
        "min %.1f us\n",
        l.size(), what, l[l.size() / 2], l[l.size() * 99 / 100], l.front());
  };
  row("busy poll on (the default window)", lat);
  row("busy poll off", lat0);
  return 0;
}
