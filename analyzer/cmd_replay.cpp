// SPDX-License-Identifier: GPL-2.0-or-later
#include <CLI/CLI.hpp>
#include <iostream>

namespace ddpscope::cli {
void add_replay_command(CLI::App& app, std::function<int()>& run) {
  auto* sc = app.add_subcommand("replay", "Replay one side of a captured stream (not yet)");
  sc->callback([&run] {
    run = [] {
      std::cerr << "replay: not implemented\n";
      return 2;
    };
  });
}
}  // namespace ddpscope::cli
