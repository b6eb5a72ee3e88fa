// SPDX-License-Identifier: GPL-2.0-or-later
// `ddpscope rping`: an rping-compatible client and server (rdma-core
// librdmacm/examples/rping.c) over the userspace endpoint. Per iteration the client SENDs its
// start buffer advertisement { be64 buf; be32 rkey; be32 size }, the server RDMA READs it and
// SENDs a go-ahead, the client SENDs its RDMA buffer advertisement, the server RDMA WRITEs the
// data back and SENDs a go-ahead; the client compares both buffers. Exit 0 only when every
// iteration completed with verified data.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <optional>

#include "cmd_endpoint_options.h"
#include "ddpscope/endpoint/endpoint.h"
#include "ddpscope/ulp/rping.h"

namespace ddpscope::cli {
namespace {

using session::Event;
using session::EventKind;

struct RpingArgs {
  bool server = false;
  bool client = false;
  std::optional<std::string> addr;  // server default: every address (rping's INADDR_ANY)
  std::string source;               // client: -I, the local address to connect from
  bool persistent = false;          // server: -P, one client after another
  bool debug = false;               // -d: every session event on stderr
  std::uint16_t port = 7174;
  int count = 0;  // 0: forever, as rping
  std::uint32_t size = 64;
  bool verbose = false;
  bool validate = false;  // rping's -V: always on here
  // rping's -q: it creates the QP itself (ibv_create_qp) instead of through rdma_cm. The
  // endpoint's QP is its session, so there is nothing to choose; accepted so that rping
  // command lines run unchanged.
  bool self_created_qp = false;
  int timeout_s = 60;
  int start_delay_ms = kDefaultStartDelayMs;  // client: before the first SEND
  MpaFlags mpa;
  LlpFlags llp;
};

constexpr std::size_t kAdvSize = ulp::RpingInfo::kSize;

// -d: one line per session event.
void debug_event(const Event& e) {
  std::fprintf(stderr, "rping: %s", std::string(session::to_string(e.kind)).c_str());
  if (e.length) std::fprintf(stderr, " length=%u", e.length);
  if (!e.message.empty()) std::fprintf(stderr, " (%s)", e.message.c_str());
  std::fprintf(stderr, "\n");
}
constexpr std::uint32_t kMinSize = 26;  // sizeof "rdma-ping-%d: " with INT_MAX

// rping's buffer text for iteration `ping` (start character carried across iterations).
void fill_pattern(std::vector<std::uint8_t>& buf, int ping) {
  const int start = 65 + ping % 58;  // rping: start++ per ping, wraps 122 -> 65
  const int cc =
      std::snprintf(reinterpret_cast<char*>(buf.data()), buf.size(), "rdma-ping-%d: ", ping);
  int c = start;
  for (std::size_t i = static_cast<std::size_t>(cc); i < buf.size(); ++i) {
    buf[i] = static_cast<std::uint8_t>(c);
    if (++c > 122) c = 65;
  }
  buf[buf.size() - 1] = 0;
}

std::uint64_t addr_of(const std::vector<std::uint8_t>& b) {
  return reinterpret_cast<std::uintptr_t>(b.data());
}

int run_client(const RpingArgs& a) {
  session::MemoryTable mem(endpoint::process_memory_limits());
  session::SessionConfig cfg = make_session_config(a.mpa);
  cfg.pd = mem.alloc_pd();
  std::vector<std::uint8_t> start_buf(a.size), rdma_buf(a.size);
  std::vector<std::uint8_t> recv_buf(kAdvSize);
  const auto start_stag =
      mem.register_region(cfg.pd, start_buf, addr_of(start_buf), session::access::remote_read);
  const auto rdma_stag =
      mem.register_region(cfg.pd, rdma_buf, addr_of(rdma_buf),
                          session::access::remote_write | session::access::local_write);
  endpoint::Loop loop(mem);
  if (!apply_llp_flags(loop, a.llp, "rping")) return 1;
  enum class St {
    connecting,
    starting,  // established, waiting start_delay_ms before the first SEND
    wait_read_go,
    wait_write_go,
    done,
    failed
  } st = St::connecting;
  std::int64_t start_at_ns = 0;
  int ping = 0;
  std::string failure;
  auto next_iteration = [&](endpoint::Connection& c) {
    fill_pattern(start_buf, ping);
    std::fill(rdma_buf.begin(), rdma_buf.end(), 0);
    c.session().send(ulp::encode_rping_info({addr_of(start_buf), *start_stag, a.size}));
    st = St::wait_read_go;
  };
  loop.on_connection = [&](endpoint::Connection& c) { c.session().post_recv(recv_buf, 1); };
  loop.on_event = [&](endpoint::Connection& c, const Event& e) {
    if (a.debug) debug_event(e);
    switch (e.kind) {
      case EventKind::connected:
        st = St::starting;
        start_at_ns = endpoint::now_ns() + std::int64_t{a.start_delay_ms} * 1'000'000;
        break;
      case EventKind::recv_completed:
        c.session().post_recv(recv_buf, 1);
        if (st == St::wait_read_go) {
          c.session().send(ulp::encode_rping_info({addr_of(rdma_buf), *rdma_stag, a.size}));
          st = St::wait_write_go;
        } else if (st == St::wait_write_go) {
          if (std::memcmp(start_buf.data(), rdma_buf.data(), a.size) != 0) {
            failure = "data mismatch in iteration " + std::to_string(ping);
            st = St::failed;
            c.session().close();
            break;
          }
          if (a.verbose)
            std::printf("ping data: %s\n", reinterpret_cast<const char*>(rdma_buf.data()));
          ++ping;
          if (a.count && ping >= a.count) {
            st = St::done;
            c.session().close();
          } else {
            next_iteration(c);
          }
        }
        break;
      case EventKind::rejected:
      case EventKind::error:
      case EventKind::terminate_received:
      case EventKind::terminate_sent:
        if (st != St::done) {
          failure = std::string(to_string(e.kind)) + ": " + e.message;
          st = St::failed;
        }
        break;
      case EventKind::closed:
        if (st != St::done && st != St::failed) {
          failure = "connection closed in iteration " + std::to_string(ping);
          st = St::failed;
        }
        break;
      default:
        break;
    }
  };
  std::string err;
  endpoint::Connection* conn =
      loop.connect(a.addr.value_or("127.0.0.1"), a.port, cfg, err, a.source);
  if (!conn) {
    std::cerr << "rping: " << err << "\n";
    return 1;
  }
  const bool finished = loop.run_until(
      [&] {
        if (st == St::starting && endpoint::now_ns() >= start_at_ns) {
          next_iteration(*conn);
          loop.flush();
        }
        return (st == St::done && conn->session().idle()) || st == St::failed || conn->done();
      },
      a.timeout_s * 1000);
  // Let the close (FIN) go out.
  loop.run_until([&] { return conn->done(); }, 500);
  if (st == St::done) {
    if (a.verbose) std::printf("rping: %d iterations verified\n", ping);
    return 0;
  }
  std::cerr << "rping client: " << (failure.empty() ? (finished ? "failed" : "timed out") : failure)
            << "\n";
  return 1;
}

int run_server(const RpingArgs& a) {
  session::MemoryTable mem(endpoint::process_memory_limits());
  session::SessionConfig cfg = make_session_config(a.mpa);
  cfg.pd = mem.alloc_pd();
  // Room for a client buffer larger than our -S (rping's server reads what is advertised).
  std::vector<std::uint8_t> rdma_buf(std::max<std::uint32_t>(a.size, 1u << 20)), expect;
  std::vector<std::uint8_t> recv_buf(kAdvSize), go(kAdvSize, 0);
  const auto rdma_stag =
      mem.register_region(cfg.pd, rdma_buf, addr_of(rdma_buf),
                          session::access::local_write | session::access::remote_read);
  endpoint::Loop loop(mem);
  if (!apply_llp_flags(loop, a.llp, "rping")) return 1;
  enum class St {
    wait_conn,
    wait_read_adv,
    reading,
    wait_write_adv,
    done,
    failed
  } st = St::wait_conn;
  int ping = 0;
  std::uint32_t read_len = 0;
  std::string failure;
  bool served = false;
  loop.on_connection = [&](endpoint::Connection& c) {
    if (served) {
      c.abort();  // one client at a time, as rping without -P
      return;
    }
    served = true;
    c.session().post_recv(recv_buf, 1);
  };
  loop.on_event = [&](endpoint::Connection& c, const Event& e) {
    if (a.debug) debug_event(e);
    switch (e.kind) {
      case EventKind::connected:
        st = St::wait_read_adv;
        break;
      case EventKind::recv_completed: {
        c.session().post_recv(recv_buf, 1);
        const auto adv = e.length <= recv_buf.size()
                             ? ulp::decode_rping_info(ByteView(recv_buf.data(), e.length))
                             : std::nullopt;
        if (!adv) {
          failure = "advertisement of " + std::to_string(e.length) + " octets";
          st = St::failed;
          c.session().close();
          break;
        }
        if (st == St::wait_read_adv) {
          if (adv->size > rdma_buf.size()) {
            failure = "client buffer larger than ours";
            st = St::failed;
            c.session().close();
            break;
          }
          read_len = adv->size;
          c.session().rdma_read(*rdma_stag, addr_of(rdma_buf), adv->size, adv->rkey, adv->buf);
          st = St::reading;
        } else if (st == St::wait_write_adv) {
          c.session().rdma_write(ByteView(rdma_buf.data(), std::min(adv->size, read_len)),
                                 adv->rkey, adv->buf);
          c.session().send(go);
          ++ping;
          st = (a.count && ping >= a.count) ? St::done : St::wait_read_adv;
        }
        break;
      }
      case EventKind::read_completed: {
        expect.assign(read_len, 0);
        if (read_len >= kMinSize) fill_pattern(expect, ping);
        if (read_len < kMinSize || std::memcmp(expect.data(), rdma_buf.data(), read_len) != 0) {
          failure = "read data of iteration " + std::to_string(ping) + " is not rping's";
          st = St::failed;
          c.session().close();
          break;
        }
        if (a.verbose)
          std::printf("server ping data: %s\n", reinterpret_cast<const char*>(rdma_buf.data()));
        c.session().send(go);
        st = St::wait_write_adv;
        break;
      }
      case EventKind::closed:
        if (st == St::wait_read_adv && ping > 0 && !a.count) st = St::done;
        if (st != St::done && st != St::failed) {
          failure = "client left in iteration " + std::to_string(ping);
          st = St::failed;
        }
        break;
      case EventKind::rejected:
      case EventKind::error:
      case EventKind::terminate_received:
      case EventKind::terminate_sent:
        failure = std::string(to_string(e.kind)) + ": " + e.message;
        st = St::failed;
        break;
      default:
        break;
    }
  };
  std::string err;
  if (!loop.listen(a.addr.value_or("0.0.0.0"), a.port, cfg, err)) {
    std::cerr << "rping: " << err << "\n";
    return 1;
  }
  // Wait for the client to finish and close.
  loop.run_until(
      [&] {
        if (st == St::failed) return true;
        for (auto& c : loop.connections())
          if (c->done() || c->session().state() == session::Session::State::closed) return true;
        return false;
      },
      a.timeout_s * 1000);
  loop.run_until([&] { return loop.connections().empty() || loop.connections()[0]->done(); }, 500);
  if (st == St::done) {
    if (a.verbose) std::printf("rping server: %d iterations verified\n", ping);
    return 0;
  }
  std::cerr << "rping server: " << (failure.empty() ? "timed out" : failure) << "\n";
  return 1;
}

}  // namespace

void add_rping_command(CLI::App& app, std::function<int()>& run) {
  auto a = std::make_shared<RpingArgs>();
  auto* sc = app.add_subcommand("rping", "rping-compatible client/server over the endpoint");
  sc->add_flag("-s", a->server, "server");
  sc->add_flag("-c", a->client, "client");
  sc->add_option("-a", a->addr,
                 "address to listen on (server; default every address, as rping) or connect to "
                 "(client; default 127.0.0.1)");
  sc->add_option("-I", a->source, "client: the local address to connect from");
  sc->add_flag("-P", a->persistent, "server: persistent, serve one client after another");
  sc->add_flag("-d", a->debug, "debug: print every session event on stderr");
  sc->add_option("-p", a->port, "port (default 7174)")
      ->check(CLI::Range(1, 65535).description("a TCP port, 1 to 65535"));
  sc->add_option("-C", a->count, "iterations (default: until interrupted)");
  sc->add_option("-S", a->size, "buffer size (default 64)")->check(CLI::Range(kMinSize, 1u << 30));
  sc->add_flag("-v", a->verbose, "print the ping data");
  sc->add_flag("-V", a->validate, "validate the data (always done)");
  sc->add_flag("-q", a->self_created_qp,
               "accepted, no effect: rping's self-created QP (this endpoint has no verbs QP)");
  sc->add_option("--timeout", a->timeout_s, "give up after this many seconds (default 60)");
  add_start_delay_flag(sc, a->start_delay_ms);
  add_mpa_flags(sc, a->mpa);
  add_llp_flags(sc, a->llp);
  sc->callback([a, &run] {
    run = [a] {
      if (a->server == a->client) {
        std::cerr << "rping: give exactly one of -s and -c\n";
        return 2;
      }
      if (!a->client && !a->source.empty()) {
        std::cerr << "rping: -I is the client's source address\n";
        return 2;
      }
      if (a->client && a->persistent) {
        std::cerr << "rping: -P is a server option\n";
        return 2;
      }
      if (a->self_created_qp)
        std::cerr << "rping: -q has no effect here (rping's self-created QP; this endpoint has "
                     "no verbs QP)\n";
      if (a->client) return run_client(*a);
      // -P: the next client after each one (until interrupted), as rping's persistent server.
      int rc = 0;
      do {
        rc = run_server(*a);
      } while (a->persistent);
      return rc;
    };
  });
}

}  // namespace ddpscope::cli
