// SPDX-License-Identifier: GPL-2.0-or-later
// The manual page and the bash completion of `ddpscope`, written from the same CLI11 App tree
// that parses the command line and prints --help (and from core's finding catalog and caps),
// so neither can drift from the options the binary accepts. The build runs the hidden
// `ddpscope help --man` and `ddpscope help --bash-completion` (analyzer/CMakeLists.txt).
#pragma once

#include <CLI/CLI.hpp>
#include <ostream>
#include <string_view>

namespace ddpscope::cli {

// ddpscope(1) in man(7) troff: every visible command, subcommand, option and positional, the
// caps (`--limit` names) and the finding codes. `skip` (the help command) is listed with its
// visible options only.
void write_man_page(std::ostream& out, const CLI::App& app, std::string_view version);

// A bash completion script defining `_ddpscope` (complete -F) for commands, subcommands,
// options, the values of options that take a fixed set (`--limit` names, `--side`, ...) and
// finding codes (`ddpscope list-findings CODE`).
void write_bash_completion(std::ostream& out, const CLI::App& app);

}  // namespace ddpscope::cli
