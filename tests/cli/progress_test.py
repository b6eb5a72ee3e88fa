#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Progress on stderr (issue 16), on the real binary with stderr a real terminal (pty): shown
when stderr is a terminal, a percentage for a file and frames/octets for standard input; none
with --quiet; none when stderr is a pipe; the line cleared before the report, so a report on
the same terminal starts clean. Asserts on what was written, never on timing.

Usage: progress_test.py DDPSCOPE"""
import json
import os
import pty
import re
import subprocess
import sys
import tempfile


def run_on_pty(args, stdin=None, stdout_on_pty=False):
    """Runs `args` with stderr (and stdout, with stdout_on_pty) on a new pty; returns
    (exit code, what the pty received, stdout when not on the pty)."""
    master, slave = pty.openpty()
    out = tempfile.TemporaryFile()
    with open(stdin, "rb") if stdin else open(os.devnull, "rb") as inp:
        p = subprocess.Popen(args, stdin=inp, stdout=slave if stdout_on_pty else out,
                             stderr=slave)
    os.close(slave)
    data = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: every writer closed its end
            break
        if not chunk:
            break
        data += chunk
    os.close(master)
    rc = p.wait()
    out.seek(0)
    return rc, data, out.read()


def main():
    binary = sys.argv[1]
    failures = []

    def check(cond, what):
        if not cond:
            failures.append(what)

    with tempfile.TemporaryDirectory() as tmp:
        # A capture of a few thousand frames: progress is looked at every 1024 frames.
        scenario = os.path.join(tmp, "big.json")
        with open(scenario, "w") as f:
            json.dump({"name": "big", "operations": [
                {"op": "write", "from": "client", "stag": "0x100", "to": "0x1000",
                 "size": 3000000}]}, f)
        cap = os.path.join(tmp, "big.pcap")
        subprocess.run([binary, "synth", scenario, "-o", cap], check=True, capture_output=True)

        # stderr a terminal: a percentage, and the line erased at the end.
        rc, tty, out = run_on_pty([binary, "analyze", cap])
        check(rc == 0, f"exit {rc}")
        check(out.startswith(b"ddpscope report: big.pcap"), f"report on stdout: {out[:80]!r}")
        lines = re.findall(rb"\r(\[[# ]{25}\] +\d+%  \d+ frames) *", tty)
        check(lines, f"no progress line on the terminal: {tty!r}")
        m = re.search(rb"\r +\r$", tty)
        check(m is not None and lines and m.end() - m.start() - 2 >= len(lines[-1]),
              f"progress line not cleared at the end: {tty[-120:]!r}")

        # --quiet: nothing on the terminal.
        rc, tty, out = run_on_pty([binary, "analyze", "--quiet", cap])
        check(rc == 0 and tty == b"", f"--quiet: exit {rc}, terminal got {tty[:120]!r}")
        rc, tty, _ = run_on_pty([binary, "analyze", "-q", cap])
        check(tty == b"", f"-q: terminal got {tty[:120]!r}")

        # stderr a pipe: nothing on it.
        p = subprocess.run([binary, "analyze", cap], capture_output=True)
        check(p.returncode == 0 and p.stderr == b"", f"stderr a pipe: got {p.stderr[:120]!r}")

        # Standard input (size unknown): frames and octets read, no percentage.
        rc, tty, out = run_on_pty([binary, "analyze", "-"], stdin=cap)
        check(rc == 0 and out.startswith(b"ddpscope report:"), f"stdin: exit {rc}, {out[:80]!r}")
        check(re.search(rb"\r\d+ frames, \d+ MiB read", tty) and b"%" not in tty,
              f"stdin: progress without a size: {tty!r}")
        check(re.search(rb"\r +\r$", tty), f"stdin: not cleared: {tty[-80:]!r}")

        # Report on the same terminal: it starts where the erased progress line was.
        rc, tty, _ = run_on_pty([binary, "analyze", cap], stdout_on_pty=True)
        at = tty.find(b"ddpscope report:")
        check(at > 0, f"same terminal: no report: {tty[:200]!r}")
        before = tty[:at]
        check(re.search(rb"frames *\r +\r$", before) is not None,
              f"same terminal: the report does not start on a cleared line: {before[-120:]!r}")

    for f in failures:
        print("FAIL " + f)
    print(f"{len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
