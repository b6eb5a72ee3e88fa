// SPDX-License-Identifier: GPL-2.0-or-later
// The Analyzer facade: what every host calls. The engine behind it is in engine.h, in three
// files that follow the pipeline (TCP, the MPA LLP, the Data Sink).
#include "ddpscope/analysis/analyzer.h"

#include "engine.h"

namespace ddpscope {

std::string_view to_string(StreamState s) {
  switch (s) {
    case StreamState::unknown:
      return "unknown";
    case StreamState::handshake:
      return "handshake";
    case StreamState::full:
      return "full-operation";
    case StreamState::rejected:
      return "rejected";
    case StreamState::failed:
      return "failed";
    case StreamState::not_iwarp:
      return "not-iwarp";
  }
  return "?";
}

Analyzer::Analyzer(AnalyzerOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}
Analyzer::Analyzer(AnalyzerOptions options, unsigned shards)
    : impl_(std::make_unique<Impl>(std::move(options))) {
  impl_->make_shards(shards);
}
Analyzer::~Analyzer() = default;

void Analyzer::set_observer(AnalysisObserver* observer) {
  impl_->observer = observer;
}

void Analyzer::add_regions(std::span<const RegionSpec> regions) {
  impl_->add_regions(regions);
  for (auto& s : impl_->shards)
    s->add_regions(regions);
}

[[gnu::always_inline]] inline void Analyzer::Impl::on_tcp_frame(std::uint64_t frame,
                                                                std::int64_t ts,
                                                                const net::TcpSegment& seg,
                                                                bool stays_valid) {
  if (!user_regions.empty()) {
    ensure_ownerless_regions(seg.src.addr);
    ensure_ownerless_regions(seg.dst.addr);
  }
  feed_tcp(frame, ts, seg, stays_valid);
}

[[gnu::always_inline]] inline void Analyzer::Impl::on_frame(std::uint64_t frame, std::int64_t ts,
                                                            std::size_t captured,
                                                            const net::FrameDecode& d,
                                                            bool stays_valid) {
  model.frames++;
  model.bytes += captured;
  switch (d.status) {
    case net::FrameStatus::tcp:
      on_tcp_frame(frame, ts, d.tcp, stays_valid);
      break;
    case net::FrameStatus::sctp:
      if (!user_regions.empty()) {
        ensure_ownerless_regions(d.sctp.src);
        ensure_ownerless_regions(d.sctp.dst);
      }
      feed_sctp(frame, ts, d.sctp);
      break;
    case net::FrameStatus::not_tcp:
      model.frames_not_tcp++;
      break;
    case net::FrameStatus::unsupported:
      model.frames_unsupported++;
      break;
    case net::FrameStatus::malformed:
      model.frames_malformed++;
      break;
  }
}

[[gnu::always_inline]] inline void Analyzer::Impl::on_stream_frame(std::uint64_t frame,
                                                                   std::int64_t ts,
                                                                   const net::FrameDecode& d) {
  if (d.status == net::FrameStatus::tcp) {
    on_tcp_frame(frame, ts, d.tcp, false);  // from a shard's batch: a copy reused for the next
  } else if (d.status == net::FrameStatus::sctp) {
    if (!user_regions.empty()) {
      ensure_ownerless_regions(d.sctp.src);
      ensure_ownerless_regions(d.sctp.dst);
    }
    feed_sctp(frame, ts, d.sctp);
  }
}

void Analyzer::feed_frame(std::uint64_t frame, std::int64_t ts_ns, std::uint32_t link_type,
                          ByteView data, std::uint32_t wire_length) {
  feed_decoded(frame, ts_ns, data.size(), net::decode_frame(link_type, data, wire_length));
}

void Analyzer::feed_decoded(std::uint64_t frame, std::int64_t ts_ns, std::size_t captured,
                            const net::FrameDecode& d, bool stays_valid) {
  Impl& e = *impl_;
  // The common frame, a TCP segment for an analysis in one piece without regions: what on_frame
  // does with it, first and with nothing else in the way, so that it is a jump to feed_tcp (no
  // registers saved for the rest: ~15 instructions a frame).
  if (d.status == net::FrameStatus::tcp && e.shards.empty() && e.user_regions.empty()) [[likely]] {
    e.model.frames++;
    e.model.bytes += captured;
    e.feed_tcp(frame, ts_ns, d.tcp, stays_valid);
    return;
  }
  // Everything else, out of line: the registers its calls need saved are not the common frame's.
  const auto rest = [ this, frame, ts_ns, captured, &d, stays_valid ]() __attribute__((noinline)) {
    if (impl_->shards.empty()) {
      impl_->on_frame(frame, ts_ns, captured, d, stays_valid);
      return;
    }
    const std::uint64_t event = next_event();
    count_frame(captured, d);
    const unsigned s = shard_of(d, shards());
    if (s != kNoShard) feed_shard(s, event, frame, ts_ns, d);
  };
  rest();
}

void Analyzer::feed_tcp(std::uint64_t frame, std::int64_t ts_ns, const net::TcpSegment& segment) {
  if (impl_->shards.empty()) {
    impl_->on_tcp_frame(frame, ts_ns, segment, false);
    return;
  }
  net::FrameDecode d;
  d.status = net::FrameStatus::tcp;
  d.tcp = segment;
  feed_shard(shard_of(segment.src, segment.dst, shards()), next_event(), frame, ts_ns, d);
}

unsigned Analyzer::shards() const {
  return impl_->shards.empty() ? 1 : static_cast<unsigned>(impl_->shards.size());
}
const std::string& Analyzer::unsharded_reason() const {
  return impl_->unsharded_reason;
}
std::uint64_t Analyzer::next_event() {
  return ++impl_->seq;
}

void Analyzer::count_frame(std::size_t captured, const net::FrameDecode& d) {
  Model& m = impl_->model;
  m.frames++;
  m.bytes += captured;
  if (d.status == net::FrameStatus::not_tcp) m.frames_not_tcp++;
  if (d.status == net::FrameStatus::unsupported) m.frames_unsupported++;
  if (d.status == net::FrameStatus::malformed) m.frames_malformed++;
}

void Analyzer::feed_shard(unsigned shard, std::uint64_t event, std::uint64_t frame,
                          std::int64_t ts_ns, const net::FrameDecode& d) {
  Impl& e = *impl_->shards[shard];
  e.shard->stamp = Stamp{event, 0};
  e.shard->last_seq = event;
  e.on_stream_frame(frame, ts_ns, d);
}

void Analyzer::note_receiver_drop_shard(unsigned shard, std::uint64_t event,
                                        const net::Endpoint& from, const net::Endpoint& to) {
  Impl& e = *impl_->shards[shard];
  e.shard->stamp = Stamp{event, 0};
  e.note_receiver_drop(from, to);
}

bool Analyzer::exact() const {
  return impl_->exact;
}
const std::string& Analyzer::inexact_reason() const {
  return impl_->inexact_reason;
}

void Analyzer::note_truncated_file(std::uint64_t last_frame, const std::string& detail) {
  if (impl_->shard) impl_->shard->stamp = Stamp{next_event(), 0};
  impl_->report(FindingId::capture_truncated_file, Impl::Ctx{UINT32_MAX, -1, last_frame, {}},
                detail);
}

void Analyzer::note_finding(FindingId id, std::uint64_t frame, std::string message,
                            std::uint32_t stream) {
  // Sharded: tied to no stream (a stream's number is the merge's to give).
  if (impl_->shard) impl_->shard->stamp = Stamp{next_event(), 0};
  impl_->report(id, Impl::Ctx{stream, -1, frame, {}}, std::move(message));
}

void Analyzer::note_receiver_drop(const net::Endpoint& from, const net::Endpoint& to) {
  if (impl_->shards.empty()) {
    impl_->note_receiver_drop(from, to);
    return;
  }
  note_receiver_drop_shard(shard_of(from, to, shards()), next_event(), from, to);
}

void Analyzer::note_esp(const net::Endpoint& from, const net::Endpoint& to,
                        const EspProtection& esp) {
  impl_->model.esp_analysed = true;
  // Sharded: the streams with that direction are all of one shard (shard_of).
  Impl& e = impl_->shards.empty() ? *impl_ : *impl_->shards[shard_of(from, to, shards())];
  for (StreamModel& s : e.model.streams)
    for (DirectionModel& d : s.dirs)
      if (d.from == from && d.to == to) d.esp = esp;
}

void Analyzer::note_esp_analysed() {
  impl_->model.esp_analysed = true;
}

void Analyzer::finish() {
  if (impl_->shards.empty())
    impl_->finish();
  else
    impl_->finish_shards();
}
const Model& Analyzer::model() const {
  impl_->refresh_ulp_details();  // cheap when nothing changed: a check of an empty list
  return impl_->model;
}
const AnalyzerOptions& Analyzer::options() const {
  return impl_->options;
}
const Timing* Analyzer::timing() const {
  return impl_->timing;
}

}  // namespace ddpscope
