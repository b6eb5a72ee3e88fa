// SPDX-License-Identifier: GPL-2.0-or-later
// `ddpscope endpoint listen|connect`: a scripted iWARP responder or initiator over the
// userspace endpoint. Operations come from a small JSON script (docs in the README) or flags;
// every session event is printed as it happens.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "cmd_endpoint_options.h"
#include "ddpscope/endpoint/endpoint.h"
#include "ddpscope/ulp/rping.h"

namespace ddpscope::cli {
namespace {

using nlohmann::json;
using session::Event;
using session::EventKind;
using session::PostStatus;

struct EndpointArgs {
  bool listen = false;
  std::string addr = "127.0.0.1";
  std::uint16_t port = 0;
  std::string script;
  std::vector<std::string> sends;
  bool echo = false;
  bool forever = false;
  int timeout_s = 30;
  std::string port_file;
  MpaFlags mpa;
  LlpFlags llp;
  bool reject = false;
  bool quiet = false;
  std::size_t max_connections = 0;  // 0: the process default (endpoint::max_connections())
};

struct LocalRegion {
  std::vector<std::uint8_t> mem;
  std::uint32_t stag = 0;
};

std::uint8_t parse_access(const std::string& s) {
  std::uint8_t a = session::access::local_write;
  if (s.find('r') != std::string::npos) a |= session::access::remote_read;
  if (s.find('w') != std::string::npos) a |= session::access::remote_write;
  if (s.find('a') != std::string::npos) a |= session::access::remote_atomic;
  return a;
}

Bytes pattern(std::size_t n, std::uint32_t seed) {
  Bytes b(n);
  for (std::size_t i = 0; i < n; ++i)
    b[i] = static_cast<std::uint8_t>(seed * 31 + i * 7 + (i >> 8));
  return b;
}

// Runs one connection's script: a list of operations executed in order, each waiting for
// what it needs (a received Send, a Read's completion).
class ScriptRunner {
 public:
  ScriptRunner(session::MemoryTable& mem, std::uint32_t pd, const json& script, bool echo,
               bool quiet)
      : mem_(mem), pd_(pd), ops_(script.value("ops", json::array())), echo_(echo), quiet_(quiet) {
    for (const auto& r : script.value("regions", json::array())) {
      LocalRegion lr;
      lr.mem.assign(r.value("size", 4096u), 0);
      const std::string fill = r.value("fill", "zero");
      if (fill == "pattern") lr.mem = pattern(lr.mem.size(), r.value("seed", 1u));
      if (fill.rfind("text:", 0) == 0)
        std::copy_n(fill.begin() + 5, std::min(fill.size() - 5, lr.mem.size()), lr.mem.begin());
      regions_[r.value("name", "buf")] = std::move(lr);
    }
    for (auto& [name, lr] : regions_) {
      const auto& spec =
          *std::find_if(script["regions"].begin(), script["regions"].end(),
                        [&n = name](const json& j) { return j.value("name", "buf") == n; });
      lr.stag = mem_.register_region(pd_, lr.mem, reinterpret_cast<std::uintptr_t>(lr.mem.data()),
                                     parse_access(spec.value("access", "rw")))
                    .value_or(0);
    }
    recv_size_ = script.value("recv_size", 65536u);
    recv_count_ = script.value("recv_buffers", 16u);
  }

  void on_connection(endpoint::Connection& c) {
    recvs_.assign(recv_count_, Bytes(recv_size_));
    for (std::size_t i = 0; i < recvs_.size(); ++i)
      c.session().post_recv(recvs_[i], i);
  }

  void on_event(endpoint::Connection& c, const Event& e) {
    log(e);
    switch (e.kind) {
      case EventKind::connected:
        connected_ = true;
        break;
      case EventKind::recv_completed: {
        Bytes& b = recvs_[e.wr_id];
        Bytes msg(b.begin(), b.begin() + e.length);
        c.session().post_recv(b, e.wr_id);
        // Every message of rping's size is taken as an advertisement, plausible or not: the
        // script tests the peer with what it names.
        if (const auto adv = ulp::decode_rping_info(msg)) advs_.push_back(*adv);
        if (echo_) c.session().send(msg);
        ++recvs_seen_;
        break;
      }
      case EventKind::write_placed:
        ++writes_seen_;
        break;
      case EventKind::read_completed:
      case EventKind::atomic_completed:
        waiting_completion_ = false;
        break;
      case EventKind::terminate_received:
      case EventKind::terminate_sent:
      case EventKind::violation_closed:
      case EventKind::violation_waiting:
      case EventKind::error:
      case EventKind::rejected:
        failed_ = true;
        break;
      case EventKind::closed:
        closed_ = true;
        break;
      default:
        break;
    }
  }

  // Advances the script as far as it can; true when it finished.
  bool step(endpoint::Connection& c) {
    while (connected_ && !failed_ && pc_ < ops_.size()) {
      if (waiting_completion_) return false;
      const json& op = ops_[pc_];
      const std::string name = op.value("op", "");
      auto& s = c.session();
      PostStatus st = PostStatus::ok;
      if (name == "wait_recv") {
        if (recvs_seen_ <= recvs_consumed_) return false;
        ++recvs_consumed_;
      } else if (name == "wait_write") {
        if (writes_seen_ <= writes_consumed_) return false;
        ++writes_consumed_;
      } else if (name == "sleep") {
        if (!sleep_until_) {
          sleep_until_ = endpoint::now_ns() + op.value("ms", 0LL) * 1'000'000;
          return false;
        }
        if (endpoint::now_ns() < *sleep_until_) return false;
        sleep_until_.reset();
      } else if (name == "advertise") {
        const LocalRegion& r = regions_[op.value("region", "buf")];
        st = s.send(ulp::encode_rping_info({reinterpret_cast<std::uintptr_t>(r.mem.data()), r.stag,
                                            static_cast<std::uint32_t>(r.mem.size())}));
      } else if (name == "send") {
        Bytes data;
        if (op.contains("text")) {
          const std::string t = op["text"];
          data.assign(t.begin(), t.end());
        } else {
          data = pattern(op.value("size", 0u), op.value("seed", 0u));
        }
        session::Session::SendOptions so;
        so.solicited = op.value("se", false);
        if (op.contains("invalidate")) {
          const auto k = op["invalidate"].get<std::size_t>();
          if (k < advs_.size()) so.invalidate_stag = advs_[k].rkey;
        }
        st = s.send(data, so);
      } else if (name == "write" || name == "read" || name == "fetch_add" || name == "cswap") {
        const std::size_t k = op.value("remote", 0u);
        if (k >= advs_.size()) return false;  // wait for the advertisement
        const ulp::RpingInfo& adv = advs_[k];
        const std::uint64_t to = adv.buf + op.value("offset", 0ULL);
        if (name == "write") {
          Bytes data = pattern(op.value("size", 0u), op.value("seed", 0u));
          st = s.rdma_write(data, adv.rkey, to);
        } else if (name == "read") {
          const LocalRegion& r = regions_[op.value("into", "buf")];
          const std::uint64_t lto =
              reinterpret_cast<std::uintptr_t>(r.mem.data()) + op.value("into_offset", 0ULL);
          st = s.rdma_read(r.stag, lto, op.value("size", 0u), adv.rkey, to);
          waiting_completion_ = st == PostStatus::ok;
        } else if (name == "fetch_add") {
          st = s.atomic_fetch_add(adv.rkey, to, op.value("add", 1ULL));
          waiting_completion_ = st == PostStatus::ok;
        } else {
          st = s.atomic_compare_swap(adv.rkey, to, op.value("compare", 0ULL),
                                     op.value("swap", 0ULL));
          waiting_completion_ = st == PostStatus::ok;
        }
      } else if (name == "immediate") {
        st = s.send_immediate(op.value("value", 0ULL), op.value("se", false));
      } else if (name == "terminate") {
        s.terminate(TerminateError{0, rdmap_etype::remote_operation, rdmap_code::unspecified});
      } else if (name == "close") {
        s.close();
      } else {
        std::fprintf(stderr, "endpoint: unknown op '%s'\n", name.c_str());
        failed_ = true;
        return true;
      }
      if (st == PostStatus::would_block) return false;
      if (st != PostStatus::ok) {
        std::fprintf(stderr, "endpoint: op %zu (%s): %s\n", pc_, name.c_str(),
                     std::string(to_string(st)).c_str());
        failed_ = true;
        return true;
      }
      ++pc_;
    }
    return pc_ >= ops_.size() || failed_;
  }

  bool failed() const { return failed_; }
  bool closed() const { return closed_; }

 private:
  void log(const Event& e) const {
    if (quiet_) return;
    std::printf("%s", std::string(to_string(e.kind)).c_str());
    if (e.length) std::printf(" length=%u", e.length);
    if (e.kind == EventKind::write_placed || e.kind == EventKind::read_requested)
      std::printf(" stag=0x%08x to=0x%llx", e.stag, static_cast<unsigned long long>(e.to));
    if (e.invalidated_stag) std::printf(" invalidated=0x%08x", *e.invalidated_stag);
    if (e.kind == EventKind::terminate_sent || e.kind == EventKind::terminate_received) {
      // (layer, type, code) as `analyze --json` gives a finding's "terminate".
      std::printf(" terminate=%u/%u/0x%02x", e.terminate.layer, e.terminate.etype,
                  e.terminate.code);
    }
    if (e.kind == EventKind::atomic_completed || e.kind == EventKind::immediate_received)
      std::printf(" value=%llu", static_cast<unsigned long long>(e.value));
    if (!e.message.empty()) std::printf(" (%s)", e.message.c_str());
    std::printf("\n");
    std::fflush(stdout);
  }

  session::MemoryTable& mem_;
  std::uint32_t pd_;
  json ops_;
  bool echo_;
  bool quiet_;
  std::map<std::string, LocalRegion> regions_;
  std::size_t recv_size_ = 65536;
  std::size_t recv_count_ = 16;
  std::vector<Bytes> recvs_;
  std::vector<ulp::RpingInfo> advs_;  // the peer's, in arrival order
  std::size_t pc_ = 0;
  std::size_t recvs_seen_ = 0, recvs_consumed_ = 0;
  std::size_t writes_seen_ = 0, writes_consumed_ = 0;
  bool waiting_completion_ = false;
  std::optional<std::int64_t> sleep_until_;
  bool connected_ = false;
  bool failed_ = false;
  bool closed_ = false;
};

// What ScriptRunner understands; empty when the script is well formed, else the first fault.
std::string check_script(const json& script) {
  static const std::set<std::string> kOps = {"wait_recv", "wait_write", "sleep",     "advertise",
                                             "send",      "write",      "read",      "fetch_add",
                                             "cswap",     "immediate",  "terminate", "close"};
  static const std::set<std::string> kTop = {"ops", "regions", "recv_size", "recv_buffers"};
  for (const auto& [key, value] : script.items()) {
    if (!kTop.count(key)) return "unknown key \"" + key + "\"";
  }
  if (script.contains("ops") && !script["ops"].is_array()) return "\"ops\" must be an array";
  if (script.contains("regions") && !script["regions"].is_array())
    return "\"regions\" must be an array";
  std::set<std::string> names;
  std::size_t i = 0;
  for (const auto& r : script.value("regions", json::array())) {
    const std::string where = "region " + std::to_string(i++) + ": ";
    if (!r.is_object()) return where + "not an object";
    if (r.contains("size") && !r["size"].is_number_unsigned())
      return where + "\"size\" must be a number of octets";
    names.insert(r.value("name", "buf"));
  }
  i = 0;
  for (const auto& op : script.value("ops", json::array())) {
    const std::string where = "op " + std::to_string(i++) + ": ";
    if (!op.is_object() || !op.contains("op") || !op["op"].is_string())
      return where + "not an object with an \"op\" name";
    const std::string name = op["op"];
    if (!kOps.count(name)) return where + "unknown op \"" + name + "\"";
    // "advertise" takes "region", "read" takes "into"; both default to "buf".
    const char* key = name == "advertise" ? "region" : name == "read" ? "into" : nullptr;
    if (key && (!op.value(key, json("buf")).is_string() ||
                !names.count(op.value(key, json("buf")).get<std::string>())))
      return where + "\"" + key + "\" names no region of the script";
  }
  return {};
}

int run_endpoint(const EndpointArgs& a) {
  json script = json::object();
  if (!a.script.empty()) {
    std::ifstream in(a.script);
    if (!in) {
      std::cerr << "endpoint: cannot read " << a.script << "\n";
      return 2;
    }
    script = json::parse(in, nullptr, false);
    if (script.is_discarded() || !script.is_object()) {
      std::cerr << "endpoint: " << a.script << " is not a JSON object\n";
      return 2;
    }
    // Checked at start-up, not when a peer connects and the script reaches the bad step.
    if (const std::string bad = check_script(script); !bad.empty()) {
      std::cerr << "endpoint: " << a.script << ": " << bad << "\n";
      return 2;
    }
  }
  if (!a.sends.empty()) {
    json ops = json::array();
    for (const auto& t : a.sends)
      ops.push_back({{"op", "send"}, {"text", t}});
    if (!a.listen) ops.push_back({{"op", "close"}});
    script["ops"] = ops;
  }
  session::MemoryTable mem(endpoint::process_memory_limits());
  session::SessionConfig cfg = make_session_config(a.mpa);
  cfg.pd = mem.alloc_pd();
  cfg.mpa.reject = a.reject;
  endpoint::Loop loop(mem);
  if (!apply_llp_flags(loop, a.llp, "endpoint")) return 1;
  std::map<endpoint::Connection*, std::unique_ptr<ScriptRunner>> runners;
  int finished = 0;
  bool any_failed = false;
  loop.on_connection = [&](endpoint::Connection& c) {
    auto r = std::make_unique<ScriptRunner>(mem, cfg.pd, script, a.echo, a.quiet);
    r->on_connection(c);
    runners[&c] = std::move(r);
  };
  loop.on_event = [&](endpoint::Connection& c, const Event& e) {
    auto it = runners.find(&c);
    if (it == runners.end()) return;
    it->second->on_event(c, e);
  };
  std::string err;
  if (a.listen) {
    if (a.max_connections) endpoint::set_max_connections(a.max_connections);
    if (!loop.listen(a.addr, a.port, cfg, err)) {
      std::cerr << "endpoint: " << err << "\n";
      return 1;
    }
    if (!a.quiet) std::printf("listening on %s:%u\n", a.addr.c_str(), loop.listen_port());
    std::fflush(stdout);
    if (!a.port_file.empty()) std::ofstream(a.port_file) << loop.listen_port() << "\n";
  } else if (!loop.connect(a.addr, a.port, cfg, err)) {
    std::cerr << "endpoint: " << err << "\n";
    return 1;
  }
  const std::int64_t end = endpoint::now_ns() + std::int64_t{a.timeout_s} * 1'000'000'000;
  while (endpoint::now_ns() < end) {
    loop.poll_once(20);
    for (auto& c : loop.connections()) {
      auto it = runners.find(c.get());
      if (it == runners.end()) continue;
      // An initiator whose script ran out closes gracefully (pending operations finish).
      if (it->second->step(*c) && !a.listen &&
          c->session().state() == session::Session::State::established)
        c->session().close();
    }
    for (auto& c : loop.connections()) {
      if (!c->done()) continue;
      auto it = runners.find(c.get());
      if (it != runners.end()) {
        any_failed |= it->second->failed();
        runners.erase(it);
        ++finished;
      }
    }
    loop.reap();
    const bool all_idle = loop.connections().empty();
    if (finished > 0 && all_idle && !a.forever) break;
    if (!a.listen && all_idle) break;
    // A connection that failed or terminated stays until we abort it (RFC 5040 §5.4).
    for (auto& c : loop.connections()) {
      auto it = runners.find(c.get());
      if (it != runners.end() && it->second->failed() &&
          (c->session().state() == session::Session::State::terminated ||
           c->session().state() == session::Session::State::failed) &&
          c->session().output_size() == 0) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        c->abort();
      }
    }
  }
  if (finished == 0) {
    std::cerr << "endpoint: timed out\n";
    return 1;
  }
  return any_failed ? 1 : 0;
}

}  // namespace

void add_endpoint_command(CLI::App& app, std::function<int()>& run) {
  auto a = std::make_shared<EndpointArgs>();
  auto* ep = app.add_subcommand("endpoint",
                                "A scripted iWARP endpoint over TCP (responder or "
                                "initiator)");
  ep->require_subcommand(1);
  for (const bool listen : {true, false}) {
    auto* sc = listen ? ep->add_subcommand("listen", "accept connections as the MPA responder")
                      : ep->add_subcommand("connect", "connect as the MPA initiator");
    sc->add_option("-a,--addr", a->addr,
                   listen ? "address to listen on (default 127.0.0.1)" : "peer address");
    sc->add_option("-p,--port", a->port, "TCP port")
        ->required(!listen)
        ->check(CLI::Range(0, 65535).description("a TCP port, 0 to 65535 (0: any free one)"));
    sc->add_option("--script", a->script, "JSON script of operations");
    sc->add_option("--send", a->sends, "send this text (repeatable; instead of a script)");
    sc->add_option("--timeout", a->timeout_s, "give up after this many seconds (default 30)");
    sc->add_flag("-q,--quiet", a->quiet, "do not print events");
    if (listen) {
      sc->add_flag("--echo", a->echo, "send every received Send back");
      sc->add_flag("--forever", a->forever, "keep accepting connections");
      sc->add_flag("--reject", a->reject, "refuse connections (MPA Reply with R=1)");
      sc->add_option("--port-file", a->port_file, "write the listening port here");
      sc->add_option("--max-connections", a->max_connections,
                     "connections open at once; more are reset at accept (default 64)")
          ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 20));
    }
    add_mpa_flags(sc, a->mpa);
    add_llp_flags(sc, a->llp);
    sc->callback([a, listen, &run] {
      a->listen = listen;
      run = [a] { return run_endpoint(*a); };
    });
  }
}

}  // namespace ddpscope::cli
