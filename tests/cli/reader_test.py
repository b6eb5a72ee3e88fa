#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""`ddpscope analyze --reader mapped` (the file mapped, records read where they lie, issue 43)
against `--reader libpcap`, on the real binary: the JSON report, the messages on stderr and the
exit code must be the same bytes on every capture under samples/ and ../shared/captures/ (with
its ESP keys where it has them), each also rewritten as pcapng (editcap) and gzip-compressed, on
captures cut inside a record, with a BPF filter, and through `ddpscope timing`. DDPSCOPE_READER
picks the reader as the option does. A mismatch prints the first differing line.

With --slice (the sanitizer build's suite, where each run costs ten times as much): every
capture as it is, but the gzip and pcapng rewrites only of every fifth capture and of the
biggest; its slow tier (cli.reader.all) and the dev build's suite rewrite all.

Usage: reader_test.py [--slice] DDPSCOPE SAMPLES_DIR SHARED_CAPTURES_DIR"""
import glob
import gzip
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_util import first_diff  # noqa: E402  (tests/cli/compare_util.py)

argv = sys.argv[1:]
slice_only = argv[:1] == ["--slice"]
if slice_only:
    argv = argv[1:]
ddpscope, samples, shared = argv[:3]
failures = 0
compared = 0


def run(args, env=None):
    p = subprocess.run([ddpscope, *args], stdin=subprocess.DEVNULL, capture_output=True,
                       timeout=600, env=env)
    return p.returncode, p.stdout, p.stderr


def compare(label, args, command="analyze"):
    global failures, compared
    base = run([command, "--reader", "libpcap", *args])
    got = run([command, "--reader", "mapped", *args])
    compared += 1
    for what, x, y in (("exit code", base[0], got[0]), ("stdout", base[1], got[1]),
                       ("stderr", base[2], got[2])):
        if x != y:
            failures += 1
            detail = first_diff(x, y) if isinstance(x, bytes) else f"{x} vs {y}"
            print(f"FAIL {label}: {what} differs: {detail}")
    return base


captures = sorted(glob.glob(os.path.join(samples, "**", "*.pcap*"), recursive=True) +
                  glob.glob(os.path.join(shared, "**", "*.pcap*"), recursive=True))
if len(captures) < 10:
    sys.exit(f"only {len(captures)} captures found under {samples} and {shared}")
biggest = max(captures, key=os.path.getsize)
editcap = shutil.which("editcap")
with tempfile.TemporaryDirectory() as tmp:
    for i, f in enumerate(captures):
        name = os.path.relpath(f)
        args = []
        stem = f[: -len(".pcap")] if f.endswith(".pcap") else None
        for sidecar, flag in ((".esp_sa", "--esp-sa"), (".xfrm", "--xfrm")):
            if stem and os.path.exists(stem + sidecar):
                args += [flag, stem + sidecar]
        rc, out, _ = compare(name, ["--json", "-q", *args, f])
        if rc not in (0, 1) or not out:
            failures += 1
            print(f"FAIL {name}: no report (exit {rc})")
        if slice_only and i % 5 and f != biggest:
            continue
        gz = os.path.join(tmp, f"{i}.pcap.gz")
        with open(f, "rb") as src, gzip.open(gz, "wb") as dst:
            dst.write(src.read())
        compare(name + " gzip", ["--json", "-q", *args, gz])
        if editcap:
            ng = os.path.join(tmp, f"{i}.pcapng")
            subprocess.run([editcap, "-F", "pcapng", f, ng], check=True, timeout=60)
            compare(name + " pcapng", ["--json", "-q", *args, ng])

    for frac in (3, 2):
        cut = os.path.join(tmp, f"cut{frac}.pcap")
        with open(biggest, "rb") as src, open(cut, "wb") as dst:
            dst.write(src.read()[: os.path.getsize(biggest) * (frac - 1) // frac + 7])
        rc, out, _ = compare(f"cut {frac}", ["--json", "-q", cut])
        if b"capture.truncated-file" not in out:
            failures += 1
            print("FAIL cut capture: no capture.truncated-file finding")
        compare(f"cut {frac} text", ["-q", cut])
    compare("filter", ["--json", "-q", "-Y", "tcp port 4791", biggest])
    compare("bad filter", ["--json", "-q", "-Y", "not a filter ((", biggest])
    compare("timing", ["-q", biggest], command="timing")
    compare("missing file", ["--json", "-q", os.path.join(tmp, "missing.pcap")])
    text = os.path.join(tmp, "text.pcap")
    with open(text, "w") as t:
        t.write("not a capture file at all, but long enough to have a header\n")
    compare("not a capture", ["--json", "-q", text])

    # The environment variable picks the reader as the option does.
    env = dict(os.environ, DDPSCOPE_READER="libpcap")
    a = run(["analyze", "--json", "-q", biggest], env)
    b = run(["analyze", "--json", "-q", "--reader", "libpcap", biggest])
    if a != b:
        failures += 1
        print("FAIL DDPSCOPE_READER=libpcap differs from --reader libpcap")
    env = dict(os.environ, DDPSCOPE_READER="bogus")
    rc, _, err = run(["analyze", "--json", "-q", biggest], env)
    if rc == 0 or b"DDPSCOPE_READER" not in err:
        failures += 1
        print(f"FAIL DDPSCOPE_READER=bogus: exit {rc}, {err!r}")

print(f"{compared} comparisons over {len(captures)} captures, {failures} failures")
sys.exit(1 if failures else 0)
