// SPDX-License-Identifier: GPL-2.0-or-later
// Replay's planner (session/replay_plan.h) on hostile captures: a pcap or pcapng file fed as
// `ddpscope replay` feeds it, every stream's messages assembled, a plan made for each side, and
// the plan driven as the host drives it with the peer's captured messages standing in for the
// live ones (some cut short, some with an octet changed, some left out): labels, ULP identity,
// picks, comparisons, the rewritten Sends. Beyond "no crash, no hang": the regions stay within
// the cap asked for and every pick names a live message there is.
#include <unistd.h>

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>

#include "ddpscope/analysis/analyzer.h"
#include "ddpscope/capture/feed.h"
#include "ddpscope/session/replay_plan.h"
#include "fuzz_input.h"

namespace {

using namespace ddpscope;

constexpr std::uint64_t kMaxRegionOctets = std::uint64_t{16} << 20;  // per plan, here
constexpr std::size_t kMaxStreams = 8;

void touch_text(const std::string& s) {
  fuzz::touch(ByteView(reinterpret_cast<const std::uint8_t*>(s.data()), s.size()));
}

struct Assemblers final : AnalysisObserver {
  std::map<std::uint32_t, std::unique_ptr<session::MessageAssembler>> by_stream;
  void on_pdu(const PduEvent& p) override {
    auto it = by_stream.find(p.stream);
    if (it == by_stream.end()) {
      if (by_stream.size() >= kMaxStreams) return;
      it = by_stream.emplace(p.stream, std::make_unique<session::MessageAssembler>(p.stream)).first;
    }
    it->second->on_pdu(p);
  }
};

void drive(const StreamModel& sm, session::ReplaySide side,
           std::vector<session::CapturedMessage> messages, std::uint32_t salt) {
  std::string error;
  auto plan = session::make_replay_plan(sm, side, std::move(messages), error, kMaxRegionOctets);
  if (!plan) {
    DDPSCOPE_FUZZ_CHECK(!error.empty());
    return;
  }
  std::uint64_t total = 0;
  for (const auto& [stag, r] : plan->regions) {
    total += r.mem.size();
    DDPSCOPE_FUZZ_CHECK(r.first_use <= plan->script.size());
  }
  DDPSCOPE_FUZZ_CHECK(total <= kMaxRegionOctets);
  DDPSCOPE_FUZZ_CHECK(plan->ulp_info.size() == plan->script.size());
  plan->ignored.emplace_back("nvme.sqhd");
  plan->nvme_cntlid = static_cast<std::uint16_t>(salt);
  std::deque<session::LiveMessage> live;
  for (std::size_t i = 0; i < plan->script.size(); ++i) {
    const session::CapturedMessage& m = plan->script[i];
    touch_text(plan->label(i));
    if (plan->ours_to_send(m)) plan->apply_fills(i + 1);
    if (m.direction == plan->us()) {
      touch_text(plan->blocked_by(i));
      plan->observe_sent(i);
      if (wire::opcode_is_send_family(m.opcode)) fuzz::touch(plan->outgoing(i));
      continue;
    }
    // The live peer: the captured message, now and then changed, cut or left out.
    const std::uint32_t r = (salt = salt * 1103515245u + 12345u) >> 16;
    if (r % 7 != 0) {
      session::LiveMessage l;
      l.opcode = m.opcode;
      l.stag = m.read_request ? m.read_request->source_stag : m.stag;
      l.to = m.to;
      l.data = m.data;
      if (r % 5 == 1 && !l.data.empty()) l.data[r % l.data.size()] ^= 0x5A;
      if (r % 5 == 2) l.data.resize(l.data.size() / 2);
      l.length = static_cast<std::uint32_t>(l.data.size());
      plan->observe_live(l);
      live.push_back(std::move(l));
    }
    const auto k = plan->pick(i, live);
    if (!k) {
      touch_text(plan->missing(i));
      continue;
    }
    DDPSCOPE_FUZZ_CHECK(*k < live.size());
    touch_text(plan->compare(i, live[*k]));
    live.erase(live.begin() + static_cast<std::ptrdiff_t>(*k));
  }
  for (const auto& l : live)
    touch_text(plan->extra(l));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const int fd = fuzz::input_as_file("ddpscope-fuzz-replay-plan", data, size);
  DDPSCOPE_FUZZ_CHECK(fd >= 0);
  std::string error;
  auto reader = capture::CaptureReader::open("/proc/self/fd/" + std::to_string(fd), error);
  if (!reader) return 0;
  AnalyzerOptions o;
  o.limits.max_findings = 1000;
  Analyzer an(o);
  Assemblers assemblers;
  an.set_observer(&assemblers);
  capture::feed(*reader, an, {});
  const Model& model = an.model();
  for (auto& [stream, a] : assemblers.by_stream) {
    if (stream >= model.streams.size()) continue;
    const auto messages = a->take_messages();
    for (const auto side : {session::ReplaySide::client, session::ReplaySide::server}) {
      const StreamModel& sm = model.streams[stream];
      DDPSCOPE_FUZZ_CHECK(session::replay_session_config(sm, side) ||
                          !sm.dirs[static_cast<int>(side)].mpa_frame);
      // Either LLP's replay of either LLP's capture: a config exactly when the setup is there.
      for (const auto llp : {session::Llp::mpa, session::Llp::sctp}) {
        const bool has = session::captured_setup(sm, side).has_value();
        DDPSCOPE_FUZZ_CHECK(session::replay_session_config(sm, side, llp).has_value() == has);
        (void)session::replay_setup_notes(sm, side, llp);
      }
      drive(model.streams[stream], side, messages, static_cast<std::uint32_t>(size) + stream);
    }
  }
  return 0;
}
