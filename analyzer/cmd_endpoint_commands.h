// SPDX-License-Identifier: GPL-2.0-or-later
// Registration of the endpoint-side subcommands (one file each). Each sets `run` when its
// subcommand is parsed; main() then returns run().
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string_view>

namespace ddpscope::cli {
void add_endpoint_command(CLI::App& app, std::function<int()>& run);
void add_rping_command(CLI::App& app, std::function<int()>& run);
void add_live_command(CLI::App& app, std::function<int()>& run);
void add_replay_command(CLI::App& app, std::function<int()>& run);

// Those of them `wants` (by name): main() builds only the command being run.
template <typename Wants>
void add_endpoint_commands(CLI::App& app, std::function<int()>& run, const Wants& wants) {
  if (wants("endpoint")) add_endpoint_command(app, run);
  if (wants("rping")) add_rping_command(app, run);
  if (wants("live")) add_live_command(app, run);
  if (wants("replay")) add_replay_command(app, run);
}
}  // namespace ddpscope::cli
