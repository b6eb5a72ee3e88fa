// SPDX-License-Identifier: GPL-2.0-or-later
#include "ddpscope/capture/feed.h"

#include <algorithm>

namespace ddpscope::capture {

FeedResult feed(CaptureReader& reader, Analyzer& analyzer, const FeedOptions& options) {
  FeedResult result;
  const std::uint64_t every = std::max<std::uint64_t>(options.progress_every, 1);
  std::uint64_t until_progress = every;
  Frame frame;
  while (reader.next(frame)) {
    if (options.on_frame) options.on_frame(frame);
    feed_frame(analyzer, frame);
    ++result.frames;
    result.last_frame = frame.number;
    if (!options.progress || --until_progress != 0) continue;
    until_progress = every;
    const FeedProgress at{result.frames, result.last_frame, reader.bytes_read(),
                          reader.file_size()};
    if (!options.progress(at)) {
      result.cancelled = true;
      return result;
    }
  }
  result.error = reader.error();
  if (!result.error.empty()) analyzer.note_truncated_file(result.last_frame, result.error);
  analyzer.finish();
  return result;
}

}  // namespace ddpscope::capture
