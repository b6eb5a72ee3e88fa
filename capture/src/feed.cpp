// SPDX-License-Identifier: GPL-2.0-or-later
#include "ddpscope/capture/feed.h"

#include <time.h>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <thread>
#include <vector>

namespace ddpscope::capture {

namespace {

// What `layer` puts in place of `frame` (decoded as `decoded`), or nullptr: the frame itself.
const Frame* layer_replace(FrameLayer* layer, const Frame& frame, const net::FrameDecode& decoded,
                           LayerNotes& notes) {
  if (layer == nullptr || !layer->wants(decoded)) return nullptr;
  return layer->replace(frame, notes);
}

// Calls options.progress after every `progress_every` frames fed (0 taken as 1); false when
// it asked to stop.
class ProgressTicker {
 public:
  explicit ProgressTicker(const FeedOptions& options)
      : options_(options),
        every_(std::max<std::uint64_t>(options.progress_every, 1)),
        left_(every_) {}
  bool tick(const FeedResult& result, std::uint64_t bytes_read, std::uint64_t file_size) {
    if (!options_.progress || --left_ != 0) return true;
    left_ = every_;
    return options_.progress(FeedProgress{result.frames, result.last_frame, bytes_read, file_size});
  }

 private:
  const FeedOptions& options_;
  const std::uint64_t every_;
  std::uint64_t left_;
};

FeedResult feed_one_thread(CaptureReader& reader, Analyzer& analyzer, const FeedOptions& options) {
  FeedResult result;
  ProgressTicker ticker(options);
  Frame frame;
  AnalyzerNotes notes(analyzer);
  net::FrameDecode decoded;  // each frame's, written over the last's (decode_frame_into)
  while (reader.next(frame)) {
    if (options.on_frame) options.on_frame(frame);
    net::decode_frame_into(decoded, frame.link_type, frame.data, frame.wire_length);
    const Frame* replaced = layer_replace(options.layer, frame, decoded, notes);
    if (replaced)
      feed_frame(analyzer, *replaced);  // the layer's: valid until its next replace()
    else
      // Asked frame by frame: after a hand-over to libpcap mid-file, frames are in libpcap's
      // buffer for one record.
      analyzer.feed_decoded(frame.number, frame.ts_ns, frame.data.size(), decoded,
                            reader.frames_stay_valid());
    ++result.frames;
    result.last_frame = frame.number;
    if (!ticker.tick(result, reader.bytes_read(), reader.file_size())) {
      result.cancelled = true;
      return result;
    }
  }
  result.error = reader.error();
  if (!result.error.empty()) analyzer.note_truncated_file(result.last_frame, result.error);
  if (options.layer) options.layer->finish(analyzer);
  analyzer.finish();
  return result;
}

// Empties a batch handed back for reuse (Batch, ShardBatch): its octets get room for `octets`
// in one block, reallocated only when the old block is too small or more than four times too
// big, so that the views into it stay valid while the batch is filled.
template <class B>
void reuse_batch(B& b, std::size_t octets, std::size_t frames) {
  b.clear_items();
  b.octets.clear();
  if (b.octets.capacity() < octets || b.octets.capacity() > 4 * octets) {
    std::vector<std::uint8_t>().swap(b.octets);
    b.octets.reserve(octets);
  }
  b.items.reserve(frames);
}

// Frames read and decoded by the reader thread, in file order. `octets` holds the captured
// bytes of those the reader does not keep valid (CaptureReader::frames_stay_valid: a mapped
// file's frames are used where they lie) and of the frames a layer put in their place; it is
// reserved once and never grows past its capacity, so the views into it (`data`, `decoded`'s)
// stay valid while the batch travels. Its items are kept when it comes back for reuse, each
// frame decoded into the FrameDecode of an item that held an earlier one (decode_frame_into):
// building and destroying a decode of ~200 octets with a string was ~30 instructions a frame.
struct Batch {
  struct Item {
    Item() = default;
    std::uint64_t number;
    std::int64_t ts_ns;
    std::uint32_t link_type;
    std::uint32_t wire_length;
    ByteView data;  // the frame's captured octets: in the mapped file or in `octets`
    // What is decoded and fed: the frame itself, or the one the layer put in its place
    // (FrameLayer::replace, its octets after the frame's), under its own number and time.
    std::uint64_t fed_number;
    std::int64_t fed_ts_ns;
    std::size_t fed_size;
    std::size_t notes_end;  // the layer's notes of the items up to this one: notes[0, end)
    // What is fed lies in the mapped file (Analyzer::feed_decoded's `stays_valid`), not in
    // `octets`, which the batch's next use overwrites.
    bool stays_valid;
    net::FrameDecode decoded;
    Item(const Frame& own, const Frame& fed, ByteView own_data, std::size_t fed_size,
         std::size_t notes_end, net::FrameDecode&& decoded)
        : number(own.number),
          ts_ns(own.ts_ns),
          link_type(own.link_type),
          wire_length(own.wire_length),
          data(own_data),
          fed_number(fed.number),
          fed_ts_ns(fed.ts_ns),
          fed_size(fed_size),
          notes_end(notes_end),
          stays_valid(false),
          decoded(std::move(decoded)) {}
    // A frame used where it lies: decoded into the item itself (the decode is ~200 octets with
    // a string, a move each frame is measurable).
    void set(const Frame& frame, std::size_t end) {
      number = frame.number;
      ts_ns = frame.ts_ns;
      link_type = frame.link_type;
      wire_length = frame.wire_length;
      data = frame.data;
      fed_number = frame.number;
      fed_ts_ns = frame.ts_ns;
      fed_size = frame.data.size();
      notes_end = end;
      stays_valid = true;
      net::decode_frame_into(decoded, frame.link_type, frame.data, frame.wire_length);
    }
  };
  struct Note {
    FindingId id;
    std::uint64_t frame;
    std::string message;
    // A note_receiver_drop (id and message unused) when set.
    std::optional<std::pair<net::Endpoint, net::Endpoint>> receiver_drop;
  };
  std::vector<std::uint8_t> octets;
  std::vector<Item> items;  // [0, count) are the batch's; the rest wait for reuse
  std::size_t count = 0;
  std::vector<Note> notes;
  // The next item, one kept from an earlier use when there is one.
  Item& add() {
    if (count == items.size()) items.emplace_back();
    return items[count++];
  }
  Item& back() { return items[count - 1]; }
  std::span<const Item> used() const { return {items.data(), count}; }
  void clear_items() { count = 0; }
  std::uint64_t bytes_read = 0;  // the reader's position when the batch was closed
  // Captured octets of the frames used where they lie (frames_stay_valid): they count against
  // the batch's share of pipeline_octets as copied ones do, so that the mapped file's pages the
  // batches hold are as bounded as copies.
  std::size_t held_octets = 0;
};

// The layer's notes of one frame, on the reader thread, until its batch is known.
class HeldNotes final : public LayerNotes {
 public:
  void note_finding(FindingId id, std::uint64_t frame, std::string message) override {
    held.push_back({id, frame, std::move(message), std::nullopt});
  }
  void note_receiver_drop(const net::Endpoint& from, const net::Endpoint& to) override {
    held.push_back({FindingId{}, 0, {}, std::make_pair(from, to)});
  }
  std::vector<Batch::Note> held;
};

// A closable FIFO of at most `cap` entries between one producer and one consumer.
template <typename T>
class BoundedQueue {
 public:
  explicit BoundedQueue(std::size_t cap) : cap_(cap) {}
  // False when the queue was closed (the entry is dropped).
  bool push(T v) {
    std::unique_lock lock(mu_);
    not_full_.wait(lock, [&] { return closed_ || q_.size() < cap_; });
    if (closed_) return false;
    q_.push_back(std::move(v));
    not_empty_.notify_one();
    return true;
  }
  // False once the queue is closed and empty.
  bool pop(T& v) {
    std::unique_lock lock(mu_);
    not_empty_.wait(lock, [&] { return closed_ || !q_.empty(); });
    if (q_.empty()) return false;
    v = std::move(q_.front());
    q_.pop_front();
    not_full_.notify_one();
    return true;
  }
  // Non-blocking: false when full or closed (the entry is dropped).
  bool try_push(T v) {
    std::lock_guard lock(mu_);
    if (closed_ || q_.size() >= cap_) return false;
    q_.push_back(std::move(v));
    not_empty_.notify_one();
    return true;
  }
  // Non-blocking pop.
  bool try_pop(T& v) {
    std::lock_guard lock(mu_);
    if (q_.empty()) return false;
    v = std::move(q_.front());
    q_.pop_front();
    not_full_.notify_one();
    return true;
  }
  void close() {
    std::lock_guard lock(mu_);
    closed_ = true;
    not_full_.notify_all();
    not_empty_.notify_all();
  }

 private:
  std::size_t cap_;
  std::mutex mu_;
  std::condition_variable not_full_, not_empty_;
  std::deque<T> q_;
  bool closed_ = false;
};

FeedResult feed_pipelined(CaptureReader& reader, Analyzer& analyzer, const FeedOptions& options) {
  // A few batches in the queue, one more filled by the reader and one worked through by the
  // engine: kBatches + 2 batches at most hold the caps (a frame larger than a batch's share of
  // pipeline_octets travels alone in a batch of its size).
  constexpr std::size_t kBatches = 4;
  const std::size_t frames_per_batch =
      std::max<std::size_t>(options.pipeline_frames / (kBatches + 2), 1);
  const std::size_t octets_per_batch =
      std::max<std::size_t>(options.pipeline_octets / (kBatches + 2), 1);
  using BatchPtr = std::unique_ptr<Batch>;
  BoundedQueue<BatchPtr> full(kBatches);
  BoundedQueue<BatchPtr> empty(kBatches + 2);  // batches handed back for reuse
  std::exception_ptr reader_failure;

  std::thread producer([&] {
    try {
      BatchPtr b;
      // Frames used where they lie in a mapped file stay in use until their batch comes back.
      const bool held = reader.frames_stay_valid();
      if (held) reader.hold_frames();
      auto start = [&](std::size_t at_least) {
        if (!empty.try_pop(b) || !b) b = std::make_unique<Batch>();
        // A batch handed back was worked through, and every batch shipped before it.
        if (held && b->count != 0) reader.frames_done(b->back().data);
        b->notes.clear();
        b->held_octets = 0;
        reuse_batch(*b, std::max(octets_per_batch, at_least), frames_per_batch);
      };
      auto ship = [&] {
        b->bytes_read = reader.bytes_read();
        return full.push(std::move(b));
      };
      start(0);
      Frame frame;
      HeldNotes notes;
      while (reader.next(frame)) {
        if (reader.frames_stay_valid()) {
          // Used where it lies: decoded into its item, nothing copied or rebased unless a layer
          // puts another frame in its place.
          if (b->count >= frames_per_batch || b->held_octets >= octets_per_batch) {
            if (!ship()) return;  // the engine stopped
            start(0);
          }
          b->held_octets += frame.data.size();
          Batch::Item* it = &b->add();
          it->set(frame, b->notes.size());
          const Frame* replaced = layer_replace(options.layer, frame, it->decoded, notes);
          if (replaced == nullptr && notes.held.empty()) continue;
          const std::size_t m = replaced ? replaced->data.size() : 0;
          if (b->octets.size() + m > b->octets.capacity()) {
            Batch::Item moved = std::move(b->back());
            --b->count;
            if (!ship()) return;
            start(m);
            b->held_octets += moved.data.size();
            it = &b->add();
            *it = std::move(moved);
          }
          for (Batch::Note& note : notes.held)
            b->notes.push_back(std::move(note));
          notes.held.clear();
          it->notes_end = b->notes.size();
          if (replaced) {
            // The replacing frame is the layer's: copied, and decoded in the copy.
            const std::size_t offset = b->octets.size();
            b->octets.insert(b->octets.end(), replaced->data.begin(), replaced->data.end());
            const ByteView data(b->octets.data() + offset, m);
            it->fed_number = replaced->number;
            it->fed_ts_ns = replaced->ts_ns;
            it->fed_size = m;
            it->stays_valid = false;
            it->decoded = net::decode_frame(replaced->link_type, data, replaced->wire_length);
          }
          continue;
        }
        net::FrameDecode decoded =
            net::decode_frame(frame.link_type, frame.data, frame.wire_length);
        const Frame* replaced = layer_replace(options.layer, frame, decoded, notes);
        const bool in_place = reader.frames_stay_valid();
        const std::size_t n = in_place ? 0 : frame.data.size();
        const std::size_t m = replaced ? replaced->data.size() : 0;
        if (b->count >= frames_per_batch || b->octets.size() + n + m > b->octets.capacity()) {
          if (!ship()) return;  // the engine stopped
          start(n + m);
        }
        ByteView own = frame.data;
        if (!in_place) {
          const std::size_t offset = b->octets.size();
          b->octets.insert(b->octets.end(), frame.data.begin(), frame.data.end());
          own = ByteView(b->octets.data() + offset, n);
        }
        for (Batch::Note& note : notes.held)
          b->notes.push_back(std::move(note));
        notes.held.clear();
        const Frame& fed = replaced ? *replaced : frame;
        ByteView data = own;
        if (replaced) {
          // The replacing frame is the layer's: copied, and decoded in the copy.
          const std::size_t replaced_offset = b->octets.size();
          b->octets.insert(b->octets.end(), replaced->data.begin(), replaced->data.end());
          data = ByteView(b->octets.data() + replaced_offset, m);
          decoded = net::decode_frame(fed.link_type, data, fed.wire_length);
        } else if (!in_place) {
          net::rebase(decoded, frame.data.data(), data.data());  // views to the batch's copy
        }
        b->add() = Batch::Item(frame, fed, own, data.size(), b->notes.size(), std::move(decoded));
      }
      if (b->count != 0) ship();
    } catch (...) {
      reader_failure = std::current_exception();
    }
    full.close();
  });

  FeedResult result;
  ProgressTicker ticker(options);
  auto stop_reader = [&] {
    full.close();
    empty.close();
    producer.join();
  };
  try {
    BatchPtr b;
    while (!result.cancelled && full.pop(b)) {
      std::size_t note = 0;
      for (const Batch::Item& it : b->used()) {
        if (options.on_frame)
          options.on_frame(Frame{it.number, it.ts_ns, it.link_type, it.data, it.wire_length, 0});
        for (; note < it.notes_end; ++note) {
          Batch::Note& n = b->notes[note];
          if (n.receiver_drop)
            analyzer.note_receiver_drop(n.receiver_drop->first, n.receiver_drop->second);
          else
            analyzer.note_finding(n.id, n.frame, std::move(n.message));
        }
        analyzer.feed_decoded(it.fed_number, it.fed_ts_ns, it.fed_size, it.decoded, it.stays_valid);
        ++result.frames;
        result.last_frame = it.number;
        if (!ticker.tick(result, b->bytes_read, reader.file_size())) {
          result.cancelled = true;
          break;
        }
      }
      empty.try_push(std::move(b));
    }
  } catch (...) {
    stop_reader();
    throw;
  }
  // Stopped early: the reader's next push fails and it ends.
  stop_reader();
  if (reader_failure) std::rethrow_exception(reader_failure);
  if (result.cancelled) return result;
  result.error = reader.error();
  if (!result.error.empty()) analyzer.note_truncated_file(result.last_frame, result.error);
  if (options.layer) options.layer->finish(analyzer);
  analyzer.finish();
  return result;
}

// A sharded analysis (Analyzer with shards(), `analyze --threads N` for N >= 3): this thread
// reads, decodes, runs the layer and numbers every frame and note in capture order (the frame
// counters and the notes tied to no stream go to the analyzer's facade here); each frame of a
// stream, and each receiver drop, goes to its shard's thread through that shard's queue of
// batches. After the last frame the shards' threads end, and finish() merges on this thread.
double thread_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

struct ShardBatch {
  struct Item {
    std::uint64_t event;
    std::uint64_t number;  // the fed frame's (FrameLayer::replace: its own)
    std::int64_t ts_ns;
    net::FrameDecode decoded;  // views into `octets`
    // A receiver drop (FrameLayer notes) in place of a frame, when set.
    std::optional<std::pair<net::Endpoint, net::Endpoint>> receiver_drop;
  };
  std::vector<std::uint8_t> octets;  // reserved once, never grows past its capacity
  std::vector<Item> items;
  void clear_items() { items.clear(); }
};

FeedResult feed_sharded(CaptureReader& reader, Analyzer& analyzer, const FeedOptions& options) {
  const unsigned n = analyzer.shards();
  constexpr std::size_t kBatches = 4;
  // The queues' caps are shared by the shards: as much in flight as with one engine.
  const std::size_t frames_per_batch =
      std::max<std::size_t>(options.pipeline_frames / (kBatches + 2) / n, 16);
  const std::size_t octets_per_batch =
      std::max<std::size_t>(options.pipeline_octets / (kBatches + 2) / n, 64u << 10);
  using BatchPtr = std::unique_ptr<ShardBatch>;
  struct Lane {
    Lane() : full(kBatches), empty(kBatches + 2) {}
    BoundedQueue<BatchPtr> full, empty;
    BatchPtr filling;
    std::exception_ptr failure;
    std::thread thread;
    double cpu_s = 0;
  };
  std::vector<std::unique_ptr<Lane>> lanes;
  for (unsigned i = 0; i < n; ++i)
    lanes.push_back(std::make_unique<Lane>());
  for (unsigned i = 0; i < n; ++i) {
    Lane& lane = *lanes[i];
    lane.thread = std::thread([&analyzer, &lane, i] {
      try {
        BatchPtr b;
        while (lane.full.pop(b)) {
          for (const ShardBatch::Item& it : b->items) {
            if (it.receiver_drop)
              analyzer.note_receiver_drop_shard(i, it.event, it.receiver_drop->first,
                                                it.receiver_drop->second);
            else
              analyzer.feed_shard(i, it.event, it.number, it.ts_ns, it.decoded);
          }
          lane.empty.try_push(std::move(b));
        }
        lane.cpu_s = thread_cpu_seconds();
      } catch (...) {
        lane.failure = std::current_exception();
        lane.full.close();
        lane.empty.close();
      }
    });
  }
  auto start = [&](Lane& lane, std::size_t at_least) {
    BatchPtr& b = lane.filling;
    if (!lane.empty.try_pop(b) || !b) b = std::make_unique<ShardBatch>();
    reuse_batch(*b, std::max(octets_per_batch, at_least), frames_per_batch);
  };
  // False when the shard's thread has stopped (it failed).
  auto ship = [&](Lane& lane) {
    if (!lane.filling || lane.filling->items.empty()) return true;
    return lane.full.push(std::move(lane.filling));
  };
  auto stop_all = [&] {
    for (auto& l : lanes) {
      if (l->thread.joinable()) {
        l->full.close();
        l->empty.close();
        l->thread.join();
      }
    }
  };
  auto room = [&](Lane& lane, std::size_t octets) {
    if (!lane.filling) {
      start(lane, octets);
      return true;
    }
    ShardBatch& b = *lane.filling;
    if (b.items.size() < frames_per_batch && b.octets.size() + octets <= b.octets.capacity())
      return true;
    if (!ship(lane)) return false;
    start(lane, octets);
    return true;
  };

  FeedResult result;
  bool stopped = false;  // a shard's thread failed
  try {
    ProgressTicker ticker(options);
    Frame frame;
    HeldNotes notes;
    while (!stopped && reader.next(frame)) {
      if (options.on_frame) options.on_frame(frame);
      net::FrameDecode decoded = net::decode_frame(frame.link_type, frame.data, frame.wire_length);
      const Frame* replaced = layer_replace(options.layer, frame, decoded, notes);
      // The layer's notes of this frame, before it.
      for (Batch::Note& note : notes.held) {
        if (!note.receiver_drop) {
          analyzer.note_finding(note.id, note.frame, std::move(note.message));
          continue;
        }
        const auto& [from, to] = *note.receiver_drop;
        const std::uint64_t event = analyzer.next_event();
        Lane& lane = *lanes[Analyzer::shard_of(from, to, n)];
        if (!room(lane, 0)) {
          stopped = true;
          break;
        }
        lane.filling->items.push_back({event, 0, 0, {}, std::make_pair(from, to)});
      }
      notes.held.clear();
      if (stopped) break;
      const Frame& fed = replaced ? *replaced : frame;
      if (replaced) decoded = net::decode_frame(fed.link_type, fed.data, fed.wire_length);
      const std::uint64_t event = analyzer.next_event();
      analyzer.count_frame(fed.data.size(), decoded);
      const unsigned s = Analyzer::shard_of(decoded, n);
      if (s != Analyzer::kNoShard) {
        Lane& lane = *lanes[s];
        if (!room(lane, fed.data.size())) {
          stopped = true;
          break;
        }
        ShardBatch& b = *lane.filling;
        const std::size_t offset = b.octets.size();
        b.octets.insert(b.octets.end(), fed.data.begin(), fed.data.end());
        net::rebase(decoded, fed.data.data(), b.octets.data() + offset);
        b.items.push_back({event, fed.number, fed.ts_ns, std::move(decoded), std::nullopt});
      }
      ++result.frames;
      result.last_frame = frame.number;
      if (!ticker.tick(result, reader.bytes_read(), reader.file_size())) {
        result.cancelled = true;
        break;
      }
    }
    if (!result.cancelled)
      for (auto& l : lanes)
        if (!ship(*l)) stopped = true;
  } catch (...) {
    stop_all();
    throw;
  }
  stop_all();
  for (auto& l : lanes) {
    if (l->failure) std::rethrow_exception(l->failure);
    result.shard_cpu_s.push_back(l->cpu_s);
  }
  result.reader_cpu_s = thread_cpu_seconds();
  if (result.cancelled) return result;
  result.error = reader.error();
  if (!result.error.empty()) analyzer.note_truncated_file(result.last_frame, result.error);
  if (options.layer) options.layer->finish(analyzer);
  analyzer.finish();
  return result;
}

}  // namespace

FeedResult feed(CaptureReader& reader, Analyzer& analyzer, const FeedOptions& options) {
  if (analyzer.shards() > 1) return feed_sharded(reader, analyzer, options);
  if (options.threads <= 1) return feed_one_thread(reader, analyzer, options);
  return feed_pipelined(reader, analyzer, options);
}

}  // namespace ddpscope::capture
