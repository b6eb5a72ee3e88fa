#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The bash completion of ddpscope (issue 18), in a real bash: the generated script is sourced
and `_ddpscope` is driven through COMP_WORDS/COMP_CWORD as readline would, for commands,
subcommands, options, option values (limit names, fixed choices, files) and finding codes.
What it offers is compared with what the binary lists (help, list-findings, list-limits).

usage: completion_test.py DDPSCOPE COMPLETION_SCRIPT
"""
import os
import re
import shlex
import subprocess
import sys
import tempfile

FAILURES = []


def fail(msg):
    FAILURES.append(msg)
    print("FAIL:", msg)


def complete(script, words, cwd):
    """COMPREPLY for the command line `words` (the last word is the one being completed)."""
    body = (f"source {shlex.quote(script)} || exit 3\n"
            f"COMP_WORDS=({' '.join(shlex.quote(w) for w in words)})\n"
            f"COMP_CWORD={len(words) - 1}\n"
            "COMPREPLY=()\n_ddpscope\nprintf '%s\\n' \"${COMPREPLY[@]}\"\n")
    p = subprocess.run(["bash", "--norc", "--noprofile", "-c", body], capture_output=True,
                       text=True, timeout=30, cwd=cwd)
    if p.returncode != 0:
        fail(f"bash completing {words}: exit {p.returncode}: {p.stderr}")
    return [l for l in p.stdout.splitlines() if l]


def expect(script, words, cwd, want, exact=False):
    got = complete(script, words, cwd)
    missing = [w for w in want if w not in got]
    if missing or (exact and sorted(got) != sorted(want)):
        fail(f"completing {' '.join(words)!r}: got {got}, want {'exactly ' if exact else ''}{want}")
    return got


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    ddpscope, script = sys.argv[1], os.path.abspath(sys.argv[2])
    run = lambda *a: subprocess.run([ddpscope, *a], capture_output=True, text=True,
                                    timeout=60).stdout
    commands = [l.split()[0] for l in run("help").split("Subcommands:")[1].splitlines()
                if l.strip()]
    # The names at the start of each row of analyze's Options (-Y,--filter TEXT ...).
    analyze_opts = [n for row in run("help", "analyze").split("Options:")[1].splitlines()
                    if row.strip().startswith("-") for n in row.split()[0].split(",")]
    findings = [l.split()[0] for l in run("list-findings").splitlines()]
    limits = [l.split()[0] for l in run("list-limits").splitlines()[1:]]

    with tempfile.TemporaryDirectory() as tmp:
        open(os.path.join(tmp, "trace.pcapng"), "w").close()
        os.mkdir(os.path.join(tmp, "traces"))
        # Commands: every one the help lists, and a prefix narrows them.
        expect(script, ["ddpscope", ""], tmp, commands, exact=True)
        expect(script, ["ddpscope", "li"], tmp, ["list-findings", "list-limits", "live"],
               exact=True)
        expect(script, ["ddpscope", "endpoint", ""], tmp, ["listen", "connect"], exact=True)
        expect(script, ["ddpscope", "help", "end"], tmp, ["endpoint"], exact=True)
        expect(script, ["ddpscope", "help", "endpoint", "l"], tmp, ["listen"], exact=True)
        # Options of a subcommand: all of analyze's, and a prefix.
        expect(script, ["ddpscope", "analyze", "-"], tmp, analyze_opts, exact=True)
        expect(script, ["ddpscope", "analyze", "trace.pcapng", "--exp"], tmp, ["--export-dir"],
               exact=True)
        expect(script, ["ddpscope", "endpoint", "listen", "--port-"], tmp, ["--port-file"],
               exact=True)
        # Option values: fixed choices, limit names (NAME=), files.
        expect(script, ["ddpscope", "analyze", "--mid-stream-crc", ""], tmp,
               ["auto", "true", "false"], exact=True)
        expect(script, ["ddpscope", "replay", "--side", "s"], tmp, ["server"], exact=True)
        expect(script, ["ddpscope", "analyze", "--limit", ""], tmp, [n + "=" for n in limits],
               exact=True)
        expect(script, ["ddpscope", "live", "--limit", "max_str"], tmp, ["max_streams="],
               exact=True)
        expect(script, ["ddpscope", "analyze", "--limit", "=", "reas"], tmp,
               ["reassembly_window="], exact=True)
        expect(script, ["ddpscope", "analyze", "--regions", "tr"], tmp,
               ["trace.pcapng", "traces"], exact=True)
        expect(script, ["ddpscope", "analyze", "tr"], tmp, ["trace.pcapng", "traces"], exact=True)
        # A value-less flag does not swallow the next word's completion.
        expect(script, ["ddpscope", "analyze", "--json", "--no-"], tmp,
               ["--no-advertisements", "--no-crc-check"], exact=True)
        # Finding codes: every one the binary knows, and a prefix.
        expect(script, ["ddpscope", "list-findings", ""], tmp, findings, exact=True)
        expect(script, ["ddpscope", "list-findings", "ddp.tagged.bo"], tmp, ["ddp.tagged.bounds"],
               exact=True)
        # Nothing for an option whose value is a number.
        expect(script, ["ddpscope", "analyze", "--send-buffer", ""], tmp, [], exact=True)
    print(f"completion: {len(commands)} commands, {len(analyze_opts)} analyze options, "
          f"{len(findings)} findings, {len(limits)} limits offered")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
