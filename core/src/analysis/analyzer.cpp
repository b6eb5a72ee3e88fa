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
Analyzer::~Analyzer() = default;

void Analyzer::set_observer(AnalysisObserver* observer) {
  impl_->observer = observer;
}

void Analyzer::add_regions(std::span<const RegionSpec> regions) {
  impl_->add_regions(regions);
}

[[gnu::always_inline]] inline void Analyzer::Impl::on_tcp_frame(std::uint64_t frame,
                                                                std::int64_t ts,
                                                                const net::TcpSegment& seg) {
  if (!user_regions.empty()) {
    ensure_ownerless_regions(seg.src.addr);
    ensure_ownerless_regions(seg.dst.addr);
  }
  feed_tcp(frame, ts, seg);
}

[[gnu::always_inline]] inline void Analyzer::Impl::on_frame(std::uint64_t frame, std::int64_t ts,
                                                            std::size_t captured,
                                                            const net::FrameDecode& d) {
  model.frames++;
  model.bytes += captured;
  switch (d.status) {
    case net::FrameStatus::tcp:
      on_tcp_frame(frame, ts, d.tcp);
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

void Analyzer::feed_frame(std::uint64_t frame, std::int64_t ts_ns, std::uint32_t link_type,
                          ByteView data, std::uint32_t wire_length) {
  impl_->on_frame(frame, ts_ns, data.size(), net::decode_frame(link_type, data, wire_length));
}

void Analyzer::feed_decoded(std::uint64_t frame, std::int64_t ts_ns, std::size_t captured,
                            const net::FrameDecode& d) {
  impl_->on_frame(frame, ts_ns, captured, d);
}

void Analyzer::feed_tcp(std::uint64_t frame, std::int64_t ts_ns, const net::TcpSegment& segment) {
  impl_->on_tcp_frame(frame, ts_ns, segment);
}

void Analyzer::note_truncated_file(std::uint64_t last_frame, const std::string& detail) {
  impl_->report(FindingId::capture_truncated_file, Impl::Ctx{UINT32_MAX, -1, last_frame, {}},
                detail);
}

void Analyzer::note_finding(FindingId id, std::uint64_t frame, std::string message,
                            std::uint32_t stream) {
  impl_->report(id, Impl::Ctx{stream, -1, frame, {}}, std::move(message));
}

void Analyzer::note_receiver_drop(const net::Endpoint& from, const net::Endpoint& to) {
  impl_->note_receiver_drop(from, to);
}

void Analyzer::note_esp(const net::Endpoint& from, const net::Endpoint& to,
                        const EspProtection& esp) {
  impl_->model.esp_analysed = true;
  for (StreamModel& s : impl_->model.streams)
    for (DirectionModel& d : s.dirs)
      if (d.from == from && d.to == to) d.esp = esp;
}

void Analyzer::note_esp_analysed() {
  impl_->model.esp_analysed = true;
}

void Analyzer::finish() {
  impl_->finish();
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
