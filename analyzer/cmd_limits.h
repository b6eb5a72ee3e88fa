// SPDX-License-Identifier: GPL-2.0-or-later
// The engine's caps (core's Limits) as CLI flags, shared by `analyze` and `live`:
// `--limit NAME=VALUE`, repeatable; `ddpscope list-limits` names them. A bad one is a usage
// error (exit 2) caught while parsing.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "ddpscope/common/limits.h"
#include "ddpscope/findings/sink_profile.h"

namespace ddpscope::cli {

inline CLI::Option* add_limit_option(CLI::App* app, std::vector<std::string>& into) {
  const CLI::Validator valid(
      [](std::string& text) {
        Limits scratch;
        std::string err;
        return set_limit(scratch, text, err) ? std::string() : err;
      },
      "NAME=VALUE");
  return app
      ->add_option("--limit", into,
                   "set an engine cap, NAME=VALUE (repeatable; sizes take K, M or G; "
                   "`ddpscope list-limits` shows the names and defaults)")
      ->check(valid);
}

// `--mid-stream-crc auto|true|false` for --port/--stream hints (StreamHint::crc): auto (the
// default) lets the framer find the setting. Also accepts on/off, yes/no, 1/0.
inline std::optional<bool> parse_mid_stream_crc(const std::string& text, bool* ok) {
  *ok = true;
  if (text == "auto") return std::nullopt;
  if (text == "true" || text == "on" || text == "yes" || text == "1") return true;
  if (text == "false" || text == "off" || text == "no" || text == "0") return false;
  *ok = false;
  return std::nullopt;
}

inline CLI::Option* add_mid_stream_crc_option(CLI::App* app, std::string& into) {
  const CLI::Validator valid(
      [](std::string& text) {
        bool ok = false;
        parse_mid_stream_crc(text, &ok);
        return ok ? std::string() : "--mid-stream-crc wants auto, true or false, not " + text;
      },
      "auto|true|false");
  return app
      ->add_option("--mid-stream-crc", into,
                   "for --port/--stream streams: CRC in use (default auto: CRC on if a CRC "
                   "matches, else off when FPDUs chain by their lengths; reported as "
                   "mpa.crc-detected)")
      ->check(valid);
}

// `--sink-profile rfc|siw` (findings/sink_profile.h): the Data Sink whose answer to each rule
// broken the report gives (and, at the endpoint, the one we behave as).
inline CLI::Option* add_sink_profile_option(CLI::App* app, std::string& into,
                                            const char* what = nullptr) {
  return app
      ->add_option("--sink-profile", into,
                   what ? what
                        : "the Data Sink whose answer each finding gives: rfc (the RFCs') or siw "
                          "(Linux siw 6.1 as observed); named in the report, with RFC's Terminate "
                          "where siw's differs (default: rfc, not named)")
      ->check(CLI::IsMember({"rfc", "siw"}));
}

inline std::optional<bool> mid_stream_crc(const std::string& text) {
  bool ok = false;
  return parse_mid_stream_crc(text, &ok);
}

// `assignments` passed add_limit_option's check; later ones win.
inline void apply_limits(const std::vector<std::string>& assignments, Limits& limits) {
  std::string err;
  for (const auto& a : assignments)
    set_limit(limits, a, err);
}

inline int list_limits() {
  const Limits defaults;
  std::printf("%-24s %-8s %s\n", "NAME", "DEFAULT", "MEANING");
  for (const auto& f : limit_fields())
    std::printf("%-24s %-8s %s\n", std::string(f.name).c_str(),
                format_limit_value(f, defaults.*(f.member)).c_str(),
                std::string(f.meaning).c_str());
  return 0;
}

}  // namespace ddpscope::cli
