// SPDX-License-Identifier: GPL-2.0-or-later
#include "manual.h"

#include <string>
#include <vector>

#include "ddpscope/common/limits.h"
#include "ddpscope/findings/catalog.h"

namespace ddpscope::cli {
namespace {

// A command and where it sits: "analyze", "endpoint listen".
struct Command {
  std::string path;  // words after "ddpscope"
  const CLI::App* app;
};

void collect(const CLI::App* app, const std::string& prefix, std::vector<Command>& out) {
  for (const CLI::App* sub : app->get_subcommands([](const CLI::App*) { return true; })) {
    if (sub->get_group().empty()) continue;  // hidden
    const std::string path = prefix.empty() ? sub->get_name() : prefix + " " + sub->get_name();
    out.push_back({path, sub});
    collect(sub, path, out);
  }
}

std::vector<Command> commands(const CLI::App& app) {
  std::vector<Command> out;
  collect(&app, "", out);
  return out;
}

// Options as --help lists them: hidden ones (empty group) left out.
std::vector<const CLI::Option*> visible_options(const CLI::App* app) {
  return app->get_options([](const CLI::Option* o) { return !o->get_group().empty(); });
}

std::vector<std::string> option_names(const CLI::Option* o) {
  std::vector<std::string> names;
  for (const auto& s : o->get_snames())
    names.push_back("-" + s);
  for (const auto& l : o->get_lnames())
    names.push_back("--" + l);
  return names;
}

// Flags expect no value (CLI11: expected(0)).
bool takes_value(const CLI::Option* o) {
  return o->get_expected_max() != 0 && o->get_type_size() != 0;
}

// The fixed values an option's validator names: IsMember's "{a,b}", or "a|b|c" (ours).
std::vector<std::string> choices(const CLI::Option* o) {
  std::vector<std::string> out;
  const std::string type = o->get_type_name();
  const auto colon = type.find(':');
  if (colon == std::string::npos) return out;
  std::string set = type.substr(colon + 1);
  char sep = '|';
  if (set.size() > 2 && set.front() == '{' && set.back() == '}') {
    set = set.substr(1, set.size() - 2);
    sep = ',';
  } else if (set.find('|') == std::string::npos) {
    return out;
  }
  std::string word;
  for (char c : set + sep) {
    if (c == sep) {
      if (!word.empty()) out.push_back(word);
      word.clear();
    } else if (c == ' ' || c == '=') {
      return {};  // prose, not a set of words
    } else {
      word += c;
    }
  }
  return out;
}

// troff text: backslashes escaped, hyphens as \- (so they render and search as ASCII '-'),
// no control character at the start of a line.
std::string roff(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '\\')
      out += "\\e";
    else if (c == '-')
      out += "\\-";
    else
      out += c;
  }
  if (!out.empty() && (out.front() == '.' || out.front() == '\'')) out.insert(0, "\\&");
  return out;
}

std::string value_label(const CLI::Option* o) {
  std::string type = o->get_type_name();
  if (const auto colon = type.find(':'); colon != std::string::npos) type.resize(colon);
  return type;
}

void write_option(std::ostream& out, const CLI::Option* o) {
  out << ".TP\n";
  std::string label;
  for (const auto& n : option_names(o)) {
    if (!label.empty()) label += ", ";
    label += "\\fB" + roff(n) + "\\fR";
  }
  if (o->get_positional()) {  // -r FILE, FILE: the option's value may also come bare
    const std::string name = "\\fI" + roff(o->get_name(true, false)) + "\\fR";
    label += label.empty() ? name : " " + name + ", " + name;
  } else if (takes_value(o)) {
    label += " \\fI" + roff(value_label(o)) + "\\fR";
  }
  if (o->get_expected_max() >= CLI::detail::expected_max_vector_size ||
      o->get_items_expected_max() > 1)
    label += " ...";
  out << label << "\n";
  std::string text(o->get_description());
  const auto set = choices(o);
  if (!set.empty()) {
    text += " (";
    for (std::size_t i = 0; i < set.size(); ++i)
      text += (i ? ", " : "") + set[i];
    text += ")";
  }
  if (o->get_required()) text += "; required";
  if (!o->get_default_str().empty()) text += "; default " + o->get_default_str();
  out << roff(text) << "\n";
}

std::string synopsis(const Command& c) {
  std::string s = "\\fBddpscope " + roff(c.path) + "\\fR";
  bool any_option = false;
  std::string positionals;
  for (const CLI::Option* o : visible_options(c.app)) {
    if (o->get_positional()) {
      const std::string name = "\\fI" + roff(o->get_name(true, false)) + "\\fR";
      const bool many = o->get_expected_max() >= CLI::detail::expected_max_vector_size;
      positionals += " " + (o->get_required() ? name : "[" + name + (many ? " ..." : "") + "]");
    } else {
      any_option = true;
    }
  }
  if (any_option) s += " [\\fIOPTIONS\\fR]";
  s += positionals;
  const auto subs =
      c.app->get_subcommands([](const CLI::App* a) { return !a->get_group().empty(); });
  if (!subs.empty()) s += " \\fISUBCOMMAND\\fR";
  return s;
}

}  // namespace

void write_man_page(std::ostream& out, const CLI::App& app, std::string_view version) {
  const auto cmds = commands(app);
  out << ".\\\" SPDX-License-Identifier: GPL-2.0-or-later\n"
      << ".\\\" Generated by `ddpscope help --man` from the option definitions; do not edit.\n"
      << ".TH DDPSCOPE 1 \"\" \"ddpscope " << roff(version) << "\" \"User Commands\"\n"
      << ".nh\n.ad l\n"
      << ".SH NAME\nddpscope \\- see and debug iWARP (MPA/DDP/RDMAP) traffic\n"
      << ".SH SYNOPSIS\n";
  for (const auto& c : cmds) {
    if (!c.app->get_subcommands({}).empty()) continue;  // its subcommands are listed
    out << synopsis(c) << "\n.br\n";
  }
  out << "\\fBddpscope \\-\\-version\\fR\n"
      << ".SH DESCRIPTION\n"
      << roff(
             "ddpscope decodes and validates iWARP traffic in capture files and live: MPA framing "
             "over TCP (RFC 5044, RFC 6581), DDP placement and delivery (RFC 5041) and RDMAP "
             "operations (RFC 5040, RFC 7306). Every rule broken is a typed finding with a "
             "stable code (see FINDINGS). It also runs a userspace iWARP endpoint over TCP "
             "or SCTP (rping, endpoint), replays a captured side against a live peer over either "
             "LLP (replay) and "
             "generates synthetic captures (synth).")
      << "\n"
      << ".SH OPTIONS\n";
  for (const CLI::Option* o : visible_options(&app))
    write_option(out, o);
  out << ".SH COMMANDS\n";
  for (const auto& c : cmds) {
    out << ".SS \"ddpscope " << roff(c.path) << "\"\n"
        << synopsis(c) << "\n.PP\n"
        << roff(c.app->get_description()) << ".\n";
    for (const CLI::Option* o : visible_options(c.app))
      write_option(out, o);
  }
  out << ".SH LIMITS\n"
      << roff(
             "Every per-connection collection of the engine has a cap; hitting one is the "
             "finding engine.limit-reached and the analysis goes on degraded. "
             "--limit NAME=VALUE sets one (sizes in octets take K, M, G = 2^10, 2^20, 2^30):")
      << "\n";
  const Limits defaults;
  for (const auto& f : limit_fields())
    out << ".TP\n\\fB" << roff(f.name) << "\\fR (default "
        << roff(format_limit_value(f, defaults.*(f.member))) << ")\n"
        << roff(f.meaning) << "\n";
  out << ".SH FINDINGS\n"
      << roff(
             "Codes as they appear in reports, in the plugin's expert infos (iwarp.CODE) and in "
             "ddpscope list-findings; severity and the rule's home in brackets:")
      << "\n";
  for (const auto& s : finding_catalog())
    out << ".TP\n\\fB" << roff(s.code) << "\\fR (" << roff(to_string(s.severity)) << ", "
        << roff(s.rfc) << ")\n"
        << roff(s.summary) << "\n";
  out << ".SH EXIT STATUS\n"
      << roff(
             "analyze and live: 0 when no finding has severity error, 1 when one has, 2 for "
             "usage errors, an unreadable capture or a report that could not be written. "
             "rping, endpoint and replay: 0 when the exchange ran as asked (replay: no "
             "difference), else non-zero.")
      << "\n.SH FILES\n"
      << ".TP\n\\fI/usr/share/doc/ddpscope/README.md.gz\\fR\n"
      << roff(
             "The full documentation: regions file format, JSON report schema, live endpoint "
             "scripts.")
      << "\n.SH SEE ALSO\n"
      << "\\fBddpscope\\-gui\\fR(1), \\fBtshark\\fR(1), \\fBwireshark\\fR(1), "
         "\\fBpcap\\-filter\\fR(7), \\fBrping\\fR(1)\n";
}

void write_bash_completion(std::ostream& out, const CLI::App& app) {
  const auto cmds = commands(app);
  out << "# SPDX-License-Identifier: GPL-2.0-or-later\n"
      << "# bash completion for ddpscope. Generated by `ddpscope help --bash-completion` from the\n"
      << "# option definitions, the finding catalog and the engine's caps; do not edit.\n\n";
  out << "_ddpscope_findings='";
  for (std::size_t i = 0; i < finding_catalog().size(); ++i)
    out << (i ? " " : "") << finding_catalog()[i].code;
  out << "'\n_ddpscope_limits='";
  for (std::size_t i = 0; i < limit_fields().size(); ++i)
    out << (i ? " " : "") << limit_fields()[i].name;
  out << "'\n\n";

  // _ddpscope_words PATH: the subcommands and options after `ddpscope PATH`.
  auto words_of = [](const CLI::App* a) {
    std::string w;
    for (const CLI::App* s :
         a->get_subcommands([](const CLI::App* x) { return !x->get_group().empty(); }))
      w += (w.empty() ? "" : " ") + s->get_name();
    for (const CLI::Option* o : visible_options(a))
      for (const auto& n : option_names(o))
        w += (w.empty() ? "" : " ") + n;
    return w;
  };
  out << "_ddpscope_words() {\n  case \"$1\" in\n";
  out << "    '') echo '" << words_of(&app) << "' ;;\n";
  for (const auto& c : cmds)
    out << "    '" << c.path << "') echo '" << words_of(c.app) << "' ;;\n";
  out << "  esac\n}\n\n";

  // _ddpscope_value PATH OPTION: how the option's value completes; nothing when it takes none.
  out << "_ddpscope_value() {\n  case \"$1 $2\" in\n";
  auto value_cases = [&out](const std::string& path, const CLI::App* a) {
    for (const CLI::Option* o : visible_options(a)) {
      if (o->get_positional() && option_names(o).empty()) continue;
      if (!takes_value(o)) continue;
      std::string kind;
      const auto set = choices(o);
      const std::string type = value_label(o);
      if (o->get_lnames().size() && o->get_lnames().front() == "limit") {
        kind = "limits";
      } else if (!set.empty()) {
        kind = "words";
        for (const auto& s : set)
          kind += " " + s;
      } else if (type == "TEXT") {
        kind = "files";
      } else {
        kind = "none";
      }
      std::string pattern;
      for (const auto& n : option_names(o))
        pattern += (pattern.empty() ? "" : "|") + std::string("'") + path + " " + n + "'";
      out << "    " << pattern << ") echo '" << kind << "' ;;\n";
    }
  };
  value_cases("", &app);
  for (const auto& c : cmds)
    value_cases(c.path, c.app);
  out << "    *) echo '' ;;\n  esac\n}\n\n";

  // _ddpscope_positional PATH: what a word that is not an option completes to.
  out << "_ddpscope_positional() {\n  case \"$1\" in\n";
  for (const auto& c : cmds) {
    std::string kind;
    for (const CLI::Option* o : visible_options(c.app)) {
      if (!o->get_positional()) continue;
      const std::string name = o->get_name(true, false);
      if (c.path == "help")
        kind = "commands";
      else if (name == "CODE")
        kind = "findings";
      else
        kind = "files";
    }
    if (!kind.empty()) out << "    '" << c.path << "') echo '" << kind << "' ;;\n";
  }
  out << "    *) echo '' ;;\n  esac\n}\n\n";

  out << R"SH(_ddpscope_reply() {  # KIND CUR
  local kind=$1 cur=$2
  case "$kind" in
    files)
      compopt -o filenames 2>/dev/null
      COMPREPLY=($(compgen -f -- "$cur")) ;;
    limits)
      compopt -o nospace 2>/dev/null
      COMPREPLY=($(compgen -W "$_ddpscope_limits" -S = -- "$cur")) ;;
    findings)
      COMPREPLY=($(compgen -W "$_ddpscope_findings" -- "$cur")) ;;
    commands)  # the subcommands of the help topic so far
      local w subs=''
      for w in $(_ddpscope_words "$topic"); do [[ $w != -* && $w != help ]] && subs="$subs $w"; done
      COMPREPLY=($(compgen -W "$subs" -- "$cur")) ;;
    words\ *)
      COMPREPLY=($(compgen -W "${kind#words }" -- "$cur")) ;;
    *) COMPREPLY=() ;;
  esac
}

_ddpscope() {
  local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
  local path='' topic='' i w kind words
  # The command path: the words before the cursor that name (sub)commands; after `help`, the
  # command whose help is asked for (topic).
  for ((i = 1; i < COMP_CWORD; i++)); do
    w=${COMP_WORDS[i]}
    [[ $w == -* ]] && continue
    if [[ $path == help ]]; then
      case " $(_ddpscope_words "$topic") " in
        *" $w "*) topic=${topic:+$topic }$w ;;
      esac
    else
      case " $(_ddpscope_words "$path") " in
        *" $w "*) path=${path:+$path }$w ;;
      esac
    fi
  done
  # --opt=VALUE splits at '=' (COMP_WORDBREAKS): the option is two words back.
  if [[ $prev == = && $COMP_CWORD -ge 2 ]]; then
    prev=${COMP_WORDS[COMP_CWORD-2]}
  elif [[ $cur == --*=* ]]; then
    prev=${cur%%=*}
    cur=${cur#*=}
  fi
  if [[ $prev == -* ]]; then
    kind=$(_ddpscope_value "$path" "$prev")
    if [[ -n $kind ]]; then
      _ddpscope_reply "$kind" "$cur"
      return 0
    fi
  fi
  if [[ $cur == -* ]]; then
    words=$(_ddpscope_words "$path")
    COMPREPLY=($(compgen -W "$words" -- "$cur"))
    COMPREPLY=($(for w in "${COMPREPLY[@]}"; do [[ $w == -* ]] && echo "$w"; done))
    return 0
  fi
  words=$(_ddpscope_words "$path")
  local subs=''
  for w in $words; do [[ $w != -* ]] && subs="$subs $w"; done
  if [[ -n $subs && $path != help ]]; then
    COMPREPLY=($(compgen -W "$subs" -- "$cur"))
    return 0
  fi
  _ddpscope_reply "$(_ddpscope_positional "$path")" "$cur"
  return 0
}
complete -F _ddpscope ddpscope
)SH";
}

}  // namespace ddpscope::cli
