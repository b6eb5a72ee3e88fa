#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""`ddpscope analyze --threads N` for N = 1..8 (issue 43: N >= 3 runs N - 1 engine shards whose
models are merged) against `--threads 1`, on the real binary: the JSON report, the text report,
the messages on stderr and the exit code must be the same bytes, on every capture under
samples/ and ../shared/captures/ and on a generated capture of 16 connections (each with its own
STags, so that nothing makes the merge fall back to one engine). With DDPSCOPE_SHARD_TRACE the
binary says on stderr how many engines ran and whether the merge was exact: the 16-connection
capture must merge exactly at every N >= 3 (else this test would compare one engine with
itself); how many samples were analysed again by one engine is printed. A mismatch prints the
first differing line.

--threads-list 1,3,8 compares those thread counts only (the sanitizer build's suite, where
each run costs ten times as much; its slow tier runs 1..8).

Usage: shards_test.py [--threads-list N,N,...] DDPSCOPE SAMPLES_DIR SHARED_CAPTURES_DIR
                      MAKE_CAPTURE_SH"""
import concurrent.futures
import glob
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_util import first_diff  # noqa: E402  (tests/cli/compare_util.py)

argv = sys.argv[1:]
THREADS = [str(n) for n in range(1, 9)]
if argv[:1] == ["--threads-list"]:
    THREADS = argv[1].split(",")
    argv = argv[2:]
    if THREADS[0] != "1" or len(THREADS) < 2:
        sys.exit("--threads-list starts with 1 (the reference) and names at least one more")
ddpscope, samples, shared, make_capture = argv[:4]


def run(args, env=None):
    p = subprocess.run([ddpscope, "analyze", *args], stdin=subprocess.DEVNULL,
                       capture_output=True, timeout=300, env=env)
    return p.returncode, p.stdout, p.stderr


def check(label, args):
    """Every --threads against --threads 1; returns (comparisons, failure lines)."""
    out = []
    base = run(["--threads", "1", *args])
    if base[0] not in (0, 1) or not base[1]:
        out.append(f"FAIL {label}: no report (exit {base[0]})")
    n = 0
    for t in THREADS[1:]:
        got = run(["--threads", t, *args])
        n += 1
        for what, x, y in (("exit code", base[0], got[0]), ("stdout", base[1], got[1]),
                           ("stderr", base[2], got[2])):
            if x != y:
                detail = first_diff(x, y) if isinstance(x, bytes) else f"{x} vs {y}"
                out.append(f"FAIL {label} --threads {t}: {what} differs: {detail}")
    return n, out


trace_env = dict(os.environ, DDPSCOPE_SHARD_TRACE="1")


def traced(args, threads):
    """The engines that ran and whether they merged exactly, from the trace line."""
    _, _, err = run(["--threads", threads, *args], env=trace_env)
    lines = [ln for ln in err.decode(errors="replace").splitlines() if "engine(s)" in ln]
    return lines


captures = sorted(glob.glob(os.path.join(samples, "**", "*.pcap*"), recursive=True) +
                  glob.glob(os.path.join(shared, "**", "*.pcap*"), recursive=True))
if len(captures) < 10:
    sys.exit(f"only {len(captures)} captures found under {samples} and {shared}")

failures = []
compared = 0
jobs = []
with concurrent.futures.ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
    for f in captures:
        name = os.path.relpath(f)
        jobs.append(pool.submit(check, name + " --json", ["--json", "-q", f]))
        jobs.append(pool.submit(check, name + " text", ["-q", f]))
    again = {f: pool.submit(traced, ["--json", "-q", f], "4") for f in captures}
    for j in jobs:
        n, out = j.result()
        compared += n
        failures += out
    fell_back = [os.path.relpath(f) for f, j in again.items()
                 if any("analysed again" in ln for ln in j.result())]

with tempfile.TemporaryDirectory() as tmp:
    # 16 connections of RDMA Writes, Sends and Reads (the reuse shape), 2 MiB in all.
    sixteen = os.path.join(tmp, "sixteen.pcap")
    subprocess.run(["bash", make_capture, ddpscope, "2", sixteen, "reuse", "16"], check=True,
                   timeout=300)
    for fmt in (["--json"], []):
        n, out = check("16 connections " + (fmt[0] if fmt else "text"), [*fmt, "-q", sixteen])
        compared += n
        failures += out
    for t in [t for t in THREADS if int(t) >= 3]:
        lines = traced(["--json", "-q", sixteen], t)
        want = f"ddpscope: {int(t) - 1} engine(s)"
        if lines != [want]:
            failures.append(f"FAIL 16 connections --threads {t}: trace {lines!r}, wanted {want!r}")
    # 16 connections with findings on most (CRC, MSN, TO faults, capture loss, a connection
    # the capture ends in), taking turns: their order in the merged report is capture order.
    faults = [{"fault": {"corrupt_crc": True}}, {"fault": {"msn": "skip"}},
              {"fault": {"to_delta": 4096}}, {"tcp_fault": {"kind": "drop"}},
              {"fault": {"ddp_reserved": 1}}, {}, {"tcp_fault": {"kind": "conflict"}}]
    ops = [{"op": "advertise_rping", "from": "client", "buf": "0x10000000",
            "rkey": hex(0x100 + 0x1000 * c), "size": 1 << 20, "connection": c}
           for c in range(16)]
    for i in range(96):
        c = i % 16
        op = ({"op": "write", "from": "server", "stag": hex(0x100 + 0x1000 * c),
               "to": hex(0x10000000 + (i // 16) * 8192), "size": 6000, "seed": i}
              if i % 3 else {"op": "send", "from": "client", "size": 300, "seed": i})
        op["connection"] = c
        if i % 5 == 0:
            fault = faults[(i // 5) % len(faults)]
            if op["op"] == "send" and "to_delta" in fault.get("fault", {}):
                fault = faults[1]
            op.update(fault)
        ops.append(op)
    doc = {"name": "sixteen-faults", "description": "16 connections with faults",
           "connections": [{"client": {"ip": "10.0.0.1", "port": 41000 + c, "mss": 1460},
                            "server": {"ip": "10.0.0.2", "port": 4791, "mss": 1460},
                            "mpa": {"revision": 2, "crc": True}, "fin": c % 4 != 3}
                           for c in range(16)],
           "operations": ops}
    scenario = os.path.join(tmp, "faults.json")
    with open(scenario, "w") as f:
        json.dump(doc, f)
    faulty = os.path.join(tmp, "faults.pcap")
    subprocess.run([ddpscope, "synth", scenario, "-o", faulty], check=True, timeout=300,
                   capture_output=True)
    rc, out, _ = run(["--threads", "1", "--json", "-q", faulty])
    if out.count(b'"code"') < 16:
        failures.append("FAIL 16 connections with faults: fewer than 16 findings")
    for args in (["--json"], [], ["--json", "--limit", "max_findings=20"]):
        n, out = check("16 connections with faults " + " ".join(args), [*args, "-q", faulty])
        compared += n
        failures += out
    for t in ("3", "8"):
        lines = traced(["--json", "-q", faulty], t)
        if lines != [f"ddpscope: {int(t) - 1} engine(s)"]:
            failures.append(f"FAIL 16 connections with faults --threads {t}: trace {lines!r}")
    # Streams of the 16 in JSON: every shard had some (the hash spreads them).
    rc, out, _ = run(["--threads", "8", "--json", "-q", sixteen])
    if out.count(b'"client"') < 16:
        failures.append("FAIL 16 connections: fewer than 16 streams in the report")

for line in failures:
    print(line)
print(f"{compared} comparisons over {len(captures)} captures and a 16-connection capture; "
      f"{len(fell_back)} captures analysed again by one engine at --threads 4"
      + (f" ({', '.join(fell_back[:8])}{', ...' if len(fell_back) > 8 else ''})"
         if fell_back else "") + f"; {len(failures)} failures")
sys.exit(1 if failures else 0)
