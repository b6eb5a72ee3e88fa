// SPDX-License-Identifier: GPL-2.0-or-later
// `ddpscope replay CAPTURE --stream-index N --side client|server --peer HOST:PORT`: replays one
// side of a captured stream against a live peer over the userspace endpoint, on either LLP
// (--llp mpa|sctp, whichever the capture used: the DDP/RDMAP plan does not depend on it). The
// connection setup is repeated with the captured parameters (an MPA Request/Reply becomes SCTP's
// Session Initiate/Accept and back, replay_session_config); that side's messages are re-sent (Sends
// verbatim; RDMA Writes, Read Requests and atomics with the peer's STags and TOs remapped through
// its advertisements, compared with the captured peer's at the same message positions); the live
// peer's Read Requests are answered from regions registered under the captured STags and
// filled with the captured data. Each message the live peer sends is compared with the
// capture's, in order: sequence, sizes, data, Terminates. Several streams (a ULP session's
// connections) run side by side on one loop, their messages walked in captured order
// (Replayer).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <string_view>

#include "cmd_endpoint_options.h"
#include "ddpscope/analysis/analyzer.h"
#include "ddpscope/capture/feed.h"
#include "ddpscope/endpoint/endpoint.h"
#include "ddpscope/session/replay_plan.h"

namespace ddpscope::cli {
namespace {

using session::Event;
using session::EventKind;

struct ReplayArgs {
  std::string capture;
  std::vector<std::uint32_t> streams;
  bool all_streams = false;
  std::string side = "client";
  std::string peer;
  int wait_ms = 3000;
  int timeout_s = 60;
  int start_delay_ms = kDefaultStartDelayMs;  // as the client, before the first message
  bool verbose = false;
  bool json = false;
  std::vector<std::string> ignore;
  std::string fault;  // "KIND:N[:STREAM]" (Fault)
  LlpFlags llp;
  session::Llp target_llp() const {
    return llp.llp == "sctp" ? session::Llp::sctp : session::Llp::mpa;
  }
};

// Everything one stream's replay found, for the text lines and --json.
struct StreamResult {
  std::uint32_t stream = 0;
  std::string ulp;
  std::size_t messages = 0;
  std::size_t replayed = 0;  // of them, before the stream stopped (its connection ended)
  nlohmann::json differences = nlohmann::json::array();
  nlohmann::json timing = nlohmann::json::array();
  nlohmann::json skipped = nlohmann::json::array();
  nlohmann::json setup = nlohmann::json::array();  // what of the captured setup changed LLP
  std::optional<std::uint16_t> nvme_cntlid;        // what the live controller assigned
  bool connected = false;
};

class Reporter {
 public:
  explicit Reporter(bool json) : json_(json) {}
  // A line as `replay` prints it; kept for --json with its fields (and the captured message's
  // first frame, `frame`, for a host that shows the capture beside it).
  void diff(StreamResult& r, std::size_t index, const std::string& arrow, const std::string& what,
            const std::string& why, std::uint64_t frame = 0) {
    std::string line = index ? "DIFF #" + std::to_string(index) + " " + arrow : "DIFF " + arrow;
    if (!what.empty())
      line += ": expected " + what + ";";
    else
      line += ":";
    line += " " + why;
    print(line);
    nlohmann::json j = {{"direction", arrow}, {"expected", what}, {"difference", why}};
    if (index) j["message"] = index;
    if (frame) j["frame"] = frame;
    r.differences.push_back(std::move(j));
  }
  void print(const std::string& line) {
    if (!json_) std::printf("%s\n", line.c_str());
  }
  bool json() const { return json_; }

 private:
  bool json_;
};

struct StreamRun;

// A fault injected into our side (--fault KIND:N[:STREAM]), to see how the live peer takes
// it: our script message N (1-based, as DIFF numbers it; of every stream, or of STREAM) is not
// sent ("skip"), goes with its first octet flipped ("corrupt"), is an RDMA Write that carries
// 512 octets more than captured, past the end of the buffer it fills ("overrun"), or is a Send
// with Invalidate that names the STag with its key plus one ("invalidate-key").
struct Fault {
  std::string kind;
  std::size_t index = 0;
  std::optional<std::uint32_t> stream;
  bool at(const StreamRun& r, std::size_t n, std::string_view k) const;
};
constexpr std::string_view kFaultKinds[] = {"skip", "corrupt", "overrun", "invalidate-key"};
std::optional<Fault> parse_fault(const std::string& s) {
  Fault f;
  const auto c1 = s.find(':');
  if (c1 == std::string::npos) return std::nullopt;
  f.kind = s.substr(0, c1);
  if (std::find(std::begin(kFaultKinds), std::end(kFaultKinds), f.kind) == std::end(kFaultKinds))
    return std::nullopt;
  char* end = nullptr;
  f.index = std::strtoul(s.c_str() + c1 + 1, &end, 10);
  if (f.index == 0 || end == s.c_str() + c1 + 1) return std::nullopt;
  if (*end == ':') {
    const char* st = end + 1;
    f.stream = static_cast<std::uint32_t>(std::strtoul(st, &end, 10));
    if (end == st) return std::nullopt;
  }
  if (*end) return std::nullopt;
  return f;
}

// One stream's replay: its plan, its live connection and what it found.
struct StreamRun {
  std::uint32_t stream = 0;
  const StreamModel* sm = nullptr;
  std::size_t order = 0;  // its place among the streams replayed (captured order)
  session::SessionConfig cfg;
  std::vector<std::string> notes;  // what of the captured setup changed LLP
  std::optional<session::ReplayPlan> plan;
  std::map<std::uint32_t, std::uint32_t> registered;  // STag index -> STag
  std::vector<Bytes> recvs;
  std::deque<session::LiveMessage> live;  // the live peer's messages not matched yet
  // Read Requests we issued, by wr_id: where the data lands.
  struct PendingRead {
    std::uint32_t stag;
    std::uint64_t to;
    std::uint32_t size;
  };
  std::vector<PendingRead> reads;
  endpoint::Connection* conn = nullptr;
  bool started = false;         // its connection was set up (or failed to)
  bool closed = false;          // the live connection ended
  bool connect_failed = false;  // a later stream's connect, to be tried again
  bool stopped = false;         // nothing more of its script can be replayed
  std::size_t next = 0;         // its next script message
  int slow = 0;
  std::int64_t cap_prev = 0, live_prev = 0;
  StreamResult result;
  bool established() const {
    return closed || (conn && conn->session().state() == session::Session::State::established);
  }
};

bool Fault::at(const StreamRun& r, std::size_t n, std::string_view k) const {
  return kind == k && index == n && (!stream || *stream == r.stream);
}

// The streams of one replay, on one endpoint loop: each stream's connection is set up where its
// first message comes in the capture, and the messages of all streams are walked in captured
// order, so that a ULP session whose connections depend on each other (NVMe-oF's I/O queues
// name the controller its admin queue made, and the admin queue stays up meanwhile) runs as it
// was captured.
class Replayer {
 public:
  Replayer(const ReplayArgs& a, const Model& model, Fault fault, Reporter& out)
      : a_(a),
        model_(model),
        fault_(std::move(fault)),
        out_(out),
        mem_(endpoint::process_memory_limits()),
        loop_(mem_),
        client_(a.side == "client") {}

  // 2 when a stream cannot be replayed at all (its setup, its plan, the peer address).
  int prepare(const std::vector<std::uint32_t>& streams,
              std::map<std::uint32_t, std::vector<session::CapturedMessage>> messages) {
    const auto side = client_ ? session::ReplaySide::client : session::ReplaySide::server;
    const session::Llp llp = a_.target_llp();
    if (!endpoint::split_host_port(a_.peer, host_, port_)) {
      std::cerr << "replay: --peer wants HOST:PORT\n";
      return 2;
    }
    for (std::uint32_t i : streams) {
      auto run = std::make_unique<StreamRun>();
      run->stream = i;
      run->order = runs_.size();
      run->sm = &model_.streams[i];
      run->result.stream = i;
      auto cfg = session::replay_session_config(*run->sm, side, llp);
      if (!cfg) {
        const bool sctp = run->sm->llp == Llp::sctp;
        std::cerr << "replay: stream " << i << " has no "
                  << (sctp ? (client_ ? "Session Initiate" : "Session Accept")
                           : (client_ ? "MPA Request" : "MPA Reply"))
                  << " in the capture: no connection setup to repeat\n";
        return 2;
      }
      run->cfg = *cfg;
      run->cfg.pd = mem_.alloc_pd();
      run->notes = session::replay_setup_notes(*run->sm, side, llp);
      for (const std::string& note : run->notes)
        run->result.setup.push_back(note);
      // The plan: our regions under the captured STags, filled with the captured data, each
      // registered when the script first names it.
      std::string err;
      run->plan = session::make_replay_plan(*run->sm, side, std::move(messages[i]), err);
      if (!run->plan) {
        std::cerr << "replay: " << err << "\n";
        return 2;
      }
      for (const std::string& f : a_.ignore)
        run->plan->ignored.push_back(f);
      run->result.ulp = run->plan->ulp;
      run->result.messages = run->plan->script.size();
      run->recvs.assign(64, Bytes(run->plan->max_send));
      runs_.push_back(std::move(run));
    }
    return 0;
  }

  int run() {
    if (!apply_llp_flags(loop_, a_.llp, "replay")) return 2;
    wire_loop();
    if (!client_) {
      std::string err;
      if (!loop_.listen(host_, port_, runs_.front()->cfg, err)) {
        std::cerr << "replay: " << err << "\n";
        return 2;
      }
      if (!out_.json()) {
        std::printf("replay: waiting for the live client on %s:%u\n", host_.c_str(),
                    loop_.listen_port());
        std::fflush(stdout);
      }
    }
    // The walk: the next message is the earliest of every stream's next one (ties: the earlier
    // stream); a stream is set up just before its first message.
    for (;;) {
      StreamRun* r = nullptr;
      for (auto& run : runs_) {
        if (run->stopped || run->next >= run->plan->script.size()) continue;
        if (!r || run->plan->script[run->next].ts_ns < r->plan->script[r->next].ts_ns)
          r = run.get();
      }
      if (!r) break;
      if (!r->started && start(*r) == 2) return 2;
      if (r->stopped) continue;
      if (step(*r) == 2) return 2;
    }
    // Streams without a message after their setup are set up too; then each ends, in the order
    // its last message came.
    for (auto& run : runs_)
      if (!run->started && start(*run) == 2) return 2;
    std::vector<StreamRun*> ending;
    for (auto& run : runs_)
      ending.push_back(run.get());
    std::stable_sort(ending.begin(), ending.end(), [](const StreamRun* x, const StreamRun* y) {
      const auto last = [](const StreamRun* s) {
        return s->plan->script.empty() ? std::int64_t{0} : s->plan->script.back().ts_ns;
      };
      return last(x) < last(y);
    });
    for (StreamRun* run : ending)
      finish(*run);
    if (!client_) loop_.stop_listening();
    int rc = 0;
    for (auto& run : runs_)
      if (!run->result.differences.empty()) rc = 1;
    return rc;
  }

  const std::vector<std::unique_ptr<StreamRun>>& runs() const { return runs_; }

 private:
  // Lines of several streams interleave: a line of another stream than the last one printed is
  // headed by its stream's number.
  void head(const StreamRun& r) {
    if (runs_.size() > 1 && shown_ != &r) out_.print("== stream " + std::to_string(r.stream));
    shown_ = &r;
  }
  void print(const StreamRun& r, const std::string& line) {
    head(r);
    out_.print(line);
  }
  void diff(StreamRun& r, std::size_t index, const std::string& arrow, const std::string& what,
            const std::string& why, std::uint64_t frame = 0) {
    head(r);
    out_.diff(r.result, index, arrow, what, why, frame);
  }

  void wire_loop() {
    // Server: the k-th connection the live client makes is the k-th stream, with that stream's
    // captured setup; one more than the streams is refused.
    loop_.on_accept = [this](endpoint::Connection& c, session::SessionConfig& cfg) {
      if (accepted_ >= runs_.size()) return false;
      StreamRun& r = *runs_[accepted_++];
      cfg = r.cfg;
      c.user = &r;
      return true;
    };
    loop_.on_connection = [](endpoint::Connection& c) {
      auto* r = static_cast<StreamRun*>(c.user);
      if (!r || r->conn) {
        c.abort();
        return;
      }
      r->conn = &c;
      for (std::size_t i = 0; i < r->recvs.size(); ++i)
        c.session().post_recv(r->recvs[i], i);
    };
    loop_.on_event = [this](endpoint::Connection& c, const Event& e) {
      auto* r = static_cast<StreamRun*>(c.user);
      if (r && r->conn == &c) on_event(*r, c, e);
    };
  }

  void on_event(StreamRun& r, endpoint::Connection& c, const Event& e) {
    session::ReplayPlan& plan = *r.plan;
    session::LiveMessage m;
    m.at_ns = endpoint::now_ns();
    m.opcode = e.opcode;
    m.length = e.length;
    switch (e.kind) {
      case EventKind::recv_completed:
        m.data.assign(r.recvs[e.wr_id].begin(), r.recvs[e.wr_id].begin() + e.length);
        c.session().post_recv(r.recvs[e.wr_id], e.wr_id);
        break;
      case EventKind::write_placed:
        m.stag = e.stag;
        m.to = e.to;
        m.data = plan.region_bytes(e.stag, e.to, e.length);
        break;
      case EventKind::read_requested:
        m.stag = e.stag;
        m.to = e.to;
        break;
      case EventKind::read_completed: {
        const StreamRun::PendingRead& pr = r.reads[e.wr_id];
        m.opcode = static_cast<std::uint8_t>(wire::Opcode::read_response);
        m.data = plan.region_bytes(pr.stag, pr.to, pr.size);
        break;
      }
      case EventKind::immediate_received:
      case EventKind::atomic_completed:
        m.value = e.value;
        break;
      case EventKind::terminate_received:
        m.opcode = static_cast<std::uint8_t>(wire::Opcode::terminate);
        m.terminate = e.terminate;
        break;
      case EventKind::closed:
      case EventKind::error:
      case EventKind::rejected:
        if (e.kind != EventKind::closed) {
          if (client_ && r.order > 0 && e.kind == EventKind::error &&
              c.session().state() != session::Session::State::established) {
            r.connect_failed = true;  // a later stream: the live server may still go to listen
          } else {
            print(r, "live: " + std::string(to_string(e.kind)) + ": " + e.message);
          }
        }
        r.closed = true;
        return;
      case EventKind::terminate_sent:
        print(r, "live: we sent Terminate " + e.message);
        r.closed = true;
        return;
      default:
        return;
    }
    plan.observe_live(m);
    r.live.push_back(std::move(m));
    // A Terminate ends the stream (RFC 5040 §5.4): nothing after it is waited for.
    if (e.kind == EventKind::terminate_received) r.closed = true;
  }

  // Sets up the stream's connection: 2 when it cannot be tried, else 0 (a stream whose live
  // peer did not reach Full Operation is a difference and is stopped).
  int start(StreamRun& r) {
    r.started = true;
    session::ReplayPlan& plan = *r.plan;
    // The controller ID the live controller assigned at the admin queue's Connect goes into
    // the later Connects (NVMe-oF 1.1 §3.3).
    for (auto& other : runs_)
      if (other.get() != &r && other->started && other->plan->learned_cntlid)
        cntlid_ = other->plan->learned_cntlid;
    plan.nvme_cntlid = r.order > 0 ? cntlid_ : std::nullopt;
    if (plan.nvme_cntlid && plan.ulp == "nvme-rdma")
      print(r, "NVMe-oF controller ID " + hex_number(*plan.nvme_cntlid) +
                   " (the live controller's) goes into this stream's Connect");
    std::string err;
    if (client_) {
      for (int attempt = 0;; ++attempt) {
        endpoint::Connection* c = loop_.connect(host_, port_, r.cfg, err);
        if (!c) {
          std::cerr << "replay: " << err << "\n";
          return 2;
        }
        c->user = &r;  // its session starts (on_connection) once TCP is up
        loop_.run_until([&] { return r.established(); }, a_.timeout_s * 1000);
        if (!r.connect_failed || attempt >= 50) break;
        r.conn = nullptr;
        r.closed = r.connect_failed = false;
        loop_.run_until([] { return false; }, 100);
      }
    } else {
      loop_.run_until([&] { return r.established(); }, a_.timeout_s * 1000);
      // One connection per stream: once every stream has its own, none more is let in (TCP
      // resets it; usrsctp would leave such an association hanging).
      if (accepted_ >= runs_.size()) loop_.stop_listening();
    }
    const session::Llp llp = a_.target_llp();
    if (!r.established() || r.closed) {
      diff(r, 0, "handshake", "",
           llp == session::Llp::sctp
               ? "the live peer did not accept the DDP Stream session (RFC 5043 §6)"
               : "the live peer did not reach Full Operation Phase");
      r.stopped = true;
      return 0;
    }
    r.result.connected = true;
    const auto& neg = r.conn->session().negotiated();
    char line[160];
    if (llp == session::Llp::sctp)
      std::snprintf(line, sizeof line, "connected over %s: peer-to-peer %s, RTR %s",
                    loop_.transport_name().c_str(), neg.peer_to_peer ? "yes" : "no",
                    std::string(session::to_string(neg.rtr)).c_str());
    else
      std::snprintf(line, sizeof line, "connected: rev %u, CRC %s, peer-to-peer %s, RTR %s",
                    neg.revision, neg.crc ? "on" : "off", neg.peer_to_peer ? "yes" : "no",
                    std::string(session::to_string(neg.rtr)).c_str());
    print(r, line);
    for (const std::string& note : r.notes)
      print(r, "setup: " + note);
    if (!plan.ulp.empty())
      print(r, "ULP: " + plan.ulp + " (stream " + std::to_string(r.stream) + ")");
    if (llp == session::Llp::mpa && r.sm->revision && neg.revision != *r.sm->revision)
      diff(r, 0, "handshake", "",
           "revision " + std::to_string(neg.revision) + ", captured " +
               std::to_string(*r.sm->revision));
    if (client_) loop_.run_until([&] { return r.closed; }, a_.start_delay_ms);
    r.cap_prev = plan.script.empty() ? 0 : plan.script.front().ts_ns;
    r.live_prev = endpoint::now_ns();
    return 0;
  }

  bool register_from(StreamRun& r, std::size_t i) {
    for (auto& [stag, region] : r.plan->regions) {
      if (region.first_use != i) continue;
      // The same index under a new key: the upper layer registered the buffer again.
      if (auto it = r.registered.find(stag >> 8); it != r.registered.end())
        mem_.deregister(it->second);
      if (!mem_.register_region_at(stag, r.cfg.pd, region.mem, region.base, session::access::all)) {
        std::cerr << "replay: cannot register STag " << hex_number(stag) << "\n";
        return false;
      }
      r.registered[stag >> 8] = stag;
    }
    return true;
  }

  // The stream's next captured message: ours is sent, the peer's is waited for and compared.
  int step(StreamRun& r) {
    session::ReplayPlan& plan = *r.plan;
    const std::size_t at = r.next++;
    const std::size_t index = r.next;  // 1-based, as DIFF lines number the messages
    const session::CapturedMessage& m = plan.script[at];
    if (!register_from(r, at)) return 2;
    if (plan.ours_to_send(m)) plan.apply_fills(index);
    const char* arrow = m.direction == 0 ? "client->server" : "server->client";
    auto& s = r.conn->session();
    if (m.direction == plan.us()) {
      if (!plan.ours_to_send(m)) return 0;  // our session answers the live peer's requests
      // A transfer for a command the live peer never sent has no live buffer to go to.
      if (const std::string cmd = plan.blocked_by(at); !cmd.empty()) {
        print(r, "SKIP #" + std::to_string(index) + " " + arrow + " " + plan.label(at) + ": " +
                     cmd + " was not sent by the live peer");
        r.result.skipped.push_back({{"message", index}, {"label", plan.label(at)}});
        return 0;
      }
      plan.observe_sent(at);
      if (fault_.at(r, index, "skip")) return 0;
      Bytes data = wire::opcode_is_send_family(m.opcode) ? plan.outgoing(at) : m.data;
      if (fault_.at(r, index, "corrupt") && !data.empty()) data[0] ^= 0xFF;
      const auto is = [&](wire::Opcode o) { return m.opcode == static_cast<std::uint8_t>(o); };
      session::PostStatus st = session::PostStatus::ok;
      if (wire::opcode_is_send_family(m.opcode)) {
        session::Session::SendOptions so;
        so.solicited = is(wire::Opcode::send_se) || is(wire::Opcode::send_se_invalidate);
        if (wire::opcode_invalidates(m.opcode)) {
          so.invalidate_stag = plan.live_stag_to(m.rsvd_ulp1, 0).first;
          if (fault_.at(r, index, "invalidate-key") && so.invalidate_stag) {
            const std::uint32_t stag = *so.invalidate_stag;
            so.invalidate_stag = (stag & ~0xFFu) | ((stag + 1) & 0xFFu);
          }
        }
        st = s.send(data, so);
      } else if (is(wire::Opcode::rdma_write)) {
        auto [stag, to] = plan.live_stag_to(m.stag, m.to);
        if (fault_.at(r, index, "overrun")) data.resize(data.size() + 512, 0xEE);
        st = s.rdma_write(data, stag, to);
      } else if (m.read_request) {
        const wire::ReadRequest& rr = *m.read_request;
        auto [stag, to] = plan.live_stag_to(rr.source_stag, rr.source_to);
        r.reads.push_back({rr.sink_stag, rr.sink_to, rr.size});
        st = s.rdma_read(rr.sink_stag, rr.sink_to, rr.size, stag, to, r.reads.size() - 1);
      } else if (m.immediate) {
        st = s.send_immediate(*m.immediate, is(wire::Opcode::immediate_data_se));
      } else if (m.atomic_request) {
        const wire::AtomicRequest& ar = *m.atomic_request;
        auto [stag, to] = plan.live_stag_to(ar.remote_stag, ar.remote_to);
        st = ar.atomic_opcode == static_cast<std::uint8_t>(wire::AtomicOp::fetch_add)
                 ? s.atomic_fetch_add(stag, to, ar.add_swap_data)
                 : s.atomic_compare_swap(stag, to, ar.compare_data, ar.add_swap_data);
      } else if (m.terminate) {
        s.terminate(*m.terminate);
      }
      if (a_.verbose || st != session::PostStatus::ok)
        print(r,
              "#" + std::to_string(index) + " " + arrow + " " + plan.label(at) + ": sent" +
                  (st == session::PostStatus::ok ? ""
                                                 : " FAILED (" + std::string(to_string(st)) + ")"));
      loop_.flush();
      r.cap_prev = m.ts_ns;
      r.live_prev = endpoint::now_ns();
      return 0;
    }
    // A message of the peer: wait for the live one that stands for it (by the ULP's identity
    // where it has one) and compare.
    std::optional<std::size_t> k;
    loop_.run_until([&] { return (k = plan.pick(at, r.live)) || r.closed; }, a_.wait_ms);
    if (!k) k = plan.pick(at, r.live);
    if (!k) {
      // The connection ended: what the live peer sent last (its Terminate) is told first, and
      // nothing after this message can happen on the stream.
      if (r.closed) report_extras(r);
      const std::string lost =
          plan.ulp_info[at].key ? plan.missing(at) : "the live peer sent nothing";
      diff(r, index, arrow, plan.label(at), lost + (r.closed ? " (connection ended)" : ""),
           m.frame);
      if (r.closed) r.stopped = true;
      return 0;
    }
    session::LiveMessage l = std::move(r.live[*k]);
    r.live.erase(r.live.begin() + static_cast<std::ptrdiff_t>(*k));
    const std::int64_t cap_delay = m.ts_ns - r.cap_prev;
    const std::int64_t live_delay = l.at_ns - r.live_prev;
    r.cap_prev = m.ts_ns;
    r.live_prev = l.at_ns;
    if (live_delay > 10 * cap_delay + 200'000'000) {
      char line[256];
      std::snprintf(line, sizeof line, "TIMING #%zu %s: %s after %.1f ms, captured after %.1f ms",
                    index, arrow, plan.label(at).c_str(), static_cast<double>(live_delay) / 1e6,
                    static_cast<double>(cap_delay) / 1e6);
      print(r, line);
      r.result.timing.push_back({{"message", index},
                                 {"live_ms", static_cast<double>(live_delay) / 1e6},
                                 {"captured_ms", static_cast<double>(cap_delay) / 1e6}});
      ++r.slow;
    }
    const std::string why = plan.compare(at, l);
    if (why.empty()) {
      if (a_.verbose)
        print(r, "#" + std::to_string(index) + " " + arrow + " " + plan.label(at) + ": same");
    } else {
      diff(r, index, arrow, plan.label(at), why, m.frame);
    }
    return 0;
  }

  // After the walk: anything more the live peer sent on the stream is a difference too; then
  // the stream closes.
  void report_extras(StreamRun& r) {
    for (const auto& l : r.live)
      diff(r, 0, "extra", "", r.plan->extra(l));
    r.live.clear();
  }

  void finish(StreamRun& r) {
    if (r.conn) {
      loop_.run_until([&] { return !r.live.empty() || r.closed; }, 300);
      report_extras(r);
      if (!r.closed) {
        r.conn->session().close();
        loop_.run_until([&] { return r.conn->done() || r.closed; }, 1000);
      }
    }
    r.result.nvme_cntlid = r.plan->learned_cntlid;
    r.result.replayed = r.next;
    if (!r.result.connected) return;
    const std::size_t diffs = r.result.differences.size();
    const std::size_t n = r.plan->script.size();
    std::string tail = r.next < n ? std::to_string(r.next) + " of " + std::to_string(n) +
                                        " captured messages replayed (the connection ended), "
                                  : std::to_string(n) + " captured messages replayed, ";
    tail += std::to_string(diffs) + " difference" + (diffs == 1 ? "" : "s");
    if (r.slow) tail += ", " + std::to_string(r.slow) + " much slower than captured";
    print(r, tail);
  }

  const ReplayArgs& a_;
  const Model& model_;
  Fault fault_;
  Reporter& out_;
  session::MemoryTable mem_;
  endpoint::Loop loop_;
  bool client_;
  std::string host_;
  std::uint16_t port_ = 0;
  std::vector<std::unique_ptr<StreamRun>> runs_;
  std::size_t accepted_ = 0;             // server: connections let in
  const StreamRun* shown_ = nullptr;     // whose line was printed last
  std::optional<std::uint16_t> cntlid_;  // NVMe-oF: the live controller's, once learned
};

int run_replay(const ReplayArgs& a) {
  // 1. The capture, once: every stream's messages are assembled in the one pass.
  std::string err;
  auto reader = capture::CaptureReader::open(a.capture, err);
  if (!reader) {
    std::cerr << "replay: " << err << "\n";
    return 2;
  }
  Fault fault;
  if (!a.fault.empty()) {
    auto f = parse_fault(a.fault);
    if (!f) {
      std::cerr << "replay: --fault wants KIND:N[:STREAM], KIND one of skip, corrupt, overrun, "
                   "invalidate-key\n";
      return 2;
    }
    fault = *f;
  }
  Analyzer analyzer;
  // The assemblers watch every stream asked for; --all-streams: all, found after the pass.
  std::vector<std::uint32_t> wanted = a.streams;
  if (wanted.empty() && !a.all_streams) wanted.push_back(0);
  struct Assemblers final : AnalysisObserver {
    std::map<std::uint32_t, std::unique_ptr<session::MessageAssembler>> by_stream;
    bool all = false;
    void on_pdu(const PduEvent& p) override {
      auto it = by_stream.find(p.stream);
      if (it == by_stream.end()) {
        if (!all) return;
        it = by_stream.emplace(p.stream, std::make_unique<session::MessageAssembler>(p.stream))
                 .first;
        it->second->set_frame_time(now);
      }
      it->second->on_pdu(p);
    }
    std::int64_t now = 0;
  } assemblers;
  assemblers.all = a.all_streams;
  for (std::uint32_t i : wanted)
    assemblers.by_stream.emplace(i, std::make_unique<session::MessageAssembler>(i));
  analyzer.set_observer(&assemblers);
  capture::FeedOptions feed_options;
  feed_options.on_frame = [&assemblers](const capture::Frame& f) {
    assemblers.now = f.ts_ns;
    for (auto& [i, asm_] : assemblers.by_stream)
      asm_->set_frame_time(f.ts_ns);
  };
  const capture::FeedResult fed = capture::feed(*reader, analyzer, feed_options);
  if (!fed.error.empty())
    std::cerr << "replay: " << fed.error << ": replaying the " << fed.last_frame
              << " frames before it\n";
  const Model& model = analyzer.model();
  if (a.all_streams) {
    wanted.clear();
    for (const StreamModel& sm : model.streams)
      if (session::captured_setup(sm, session::ReplaySide::client) ||
          session::captured_setup(sm, session::ReplaySide::server))
        wanted.push_back(sm.id);
  }
  for (std::uint32_t i : wanted) {
    if (i >= model.streams.size()) {
      std::cerr << "replay: the capture has " << model.streams.size() << " streams\n";
      return 2;
    }
  }
  // A whole session goes in captured order: by the stream's first frame.
  std::sort(wanted.begin(), wanted.end(), [&](std::uint32_t x, std::uint32_t y) {
    return model.streams[x].first_frame < model.streams[y].first_frame;
  });
  wanted.erase(std::unique(wanted.begin(), wanted.end()), wanted.end());
  Reporter out(a.json);
  std::map<std::uint32_t, std::vector<session::CapturedMessage>> messages;
  for (std::uint32_t i : wanted)
    if (auto it = assemblers.by_stream.find(i); it != assemblers.by_stream.end())
      messages[i] = it->second->take_messages();
  Replayer replayer(a, model, fault, out);
  int rc = replayer.prepare(wanted, std::move(messages));
  if (rc == 0) rc = replayer.run();
  nlohmann::json streams = nlohmann::json::array();
  std::size_t total = 0;
  for (const auto& run : replayer.runs()) {
    const StreamResult& result = run->result;
    total += result.differences.size();
    streams.push_back({{"stream", result.stream},
                       {"ulp", result.ulp},
                       {"messages", result.messages},
                       {"replayed", result.replayed},
                       {"connected", result.connected},
                       {"nvme_cntlid", result.nvme_cntlid ? nlohmann::json(*result.nvme_cntlid)
                                                          : nlohmann::json()},
                       {"differences", result.differences},
                       {"skipped", result.skipped},
                       {"setup", result.setup},
                       {"timing", result.timing}});
  }
  if (a.json) {
    nlohmann::json j = {{"capture", a.capture},
                        {"side", a.side},
                        {"llp", a.llp.llp},
                        {"streams", streams},
                        {"differences", total}};
    std::cout << j.dump(2) << "\n";
  }
  return rc;
}

}  // namespace

void add_replay_command(CLI::App& app, std::function<int()>& run) {
  auto a = std::make_shared<ReplayArgs>();
  auto* sc = app.add_subcommand("replay",
                                "Replay one side of a captured stream against a live "
                                "peer and report where it differs");
  sc->add_option("CAPTURE", a->capture, "pcap/pcapng file")->required();
  sc->add_option("--stream-index", a->streams,
                 "the stream's number in the analyzer's report (\"stream\": N; default 0); "
                 "repeated: those streams, one after another in captured order");
  sc->add_flag("--all-streams", a->all_streams,
               "replay every stream with an MPA handshake or SCTP session setup, in captured "
               "order");
  // One meaning per option name across commands: --stream is an endpoint (IP:PORT) in analyze
  // and the GUI. Here the old spelling of the number is refused by name, before other checks.
  sc->add_option_function<std::string>(
        "--stream",
        [](const std::string&) {
          throw CLI::ValidationError(
              "replay: the stream's number is --stream-index N (--stream, in analyze, is an "
              "endpoint IP:PORT)");
        },
        "")
      ->group("");
  sc->add_option("--side", a->side, "the side to replay: client or server")
      ->check(CLI::IsMember({"client", "server"}));
  sc->add_option("--peer", a->peer,
                 "HOST:PORT of the live peer (client side), or to listen on (server side)")
      ->required();
  sc->add_option("--wait-ms", a->wait_ms, "how long to wait for each peer message (3000)");
  sc->add_option("--timeout", a->timeout_s, "connection timeout in seconds (60)");
  add_start_delay_flag(sc, a->start_delay_ms);
  sc->add_flag("-v", a->verbose, "print every message, not only differences");
  sc->add_flag("--json", a->json, "print the result as JSON (the same information)");
  std::string fields;
  std::vector<std::string> names;
  for (const auto& f : session::replay_varying_fields()) {
    fields += std::string(f.name) + (f.by_default ? " (default)" : "") + ", ";
    names.emplace_back(f.name);
  }
  sc->add_option(
        "--ignore", a->ignore,
        "a ULP field not to compare, besides the defaults: " + fields.substr(0, fields.size() - 2))
      ->check(CLI::IsMember(names));
  add_llp_flags(sc, a->llp);
  sc->add_option("--fault", a->fault,
                 "KIND:N[:STREAM]: inject a fault into our message N (as DIFF lines number "
                 "them) of every stream or of STREAM: skip (not sent), corrupt (first octet "
                 "flipped), overrun (an RDMA Write 512 octets past its captured end), "
                 "invalidate-key (a Send with Invalidate naming the STag's key plus one)");
  sc->callback([a, &run] { run = [a] { return run_replay(*a); }; });
}

}  // namespace ddpscope::cli
