#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
# Before/after timing of two or more builds on one capture (bench/RESULTS.md, issue 12).
# Each round runs, for every build in turn: `ddpscope analyze --json --retain-mib 0`, the
# default `ddpscope analyze --json` (payload retention on), and the floor
# (`ddpscope_read_floor FILE` and `... crc`), so the builds see the same machine state.
# Reports per build and case the minimum and median of wall clock and of CPU time (user +
# system of the child from wait4, as bench/run_bench.sh), and the load average around the runs.
#   bench/compare_builds.py CAPTURE ROUNDS NAME=BUILD_DIR [NAME=BUILD_DIR...] [--cases r0,default,...]
import os
import sys
import time

args = sys.argv[1:]
cases_wanted = None
if "--cases" in args:
    i = args.index("--cases")
    cases_wanted = args[i + 1].split(",")
    del args[i:i + 2]
if len(args) < 3:
    sys.exit("usage: compare_builds.py CAPTURE ROUNDS NAME=BUILD_DIR... [--cases r0,default,floor,floor_crc]")
cap, rounds = args[0], int(args[1])
builds = [a.split("=", 1) for a in args[2:]]

null = [(os.POSIX_SPAWN_OPEN, fd, "/dev/null", os.O_WRONLY, 0) for fd in (1, 2)]


def run(argv):
    t0 = time.perf_counter()
    pid = os.posix_spawnp(argv[0], argv, os.environ, file_actions=null)
    _, status, ru = os.wait4(pid, 0)
    wall = time.perf_counter() - t0
    if status != 0:
        sys.exit(f"{argv}: exit status {status}")
    return wall, ru.ru_utime + ru.ru_stime, ru.ru_utime, ru.ru_stime


cases = []
for name, d in builds:
    ddpscope = os.path.join(d, "analyzer", "ddpscope")
    floor = os.path.join(d, "bench", "ddpscope_read_floor")
    cases += [(name, "r0", [ddpscope, "analyze", cap, "--json", "--retain-mib", "0"]),
              (name, "default", [ddpscope, "analyze", cap, "--json"]),
              (name, "floor", [floor, cap]),
              (name, "floor_crc", [floor, cap, "crc"])]
cases = [c for c in cases if cases_wanted is None or c[1] in cases_wanted]

size = os.path.getsize(cap)
with open(cap, "rb") as f:  # every run reads it from the page cache
    while f.read(1 << 20):
        pass
print("load average before:", " ".join(open("/proc/loadavg").read().split()[:3]))
results = {}
for _ in range(rounds):
    for name, case, argv in cases:
        results.setdefault((name, case), []).append(run(argv))
print("load average after: ", " ".join(open("/proc/loadavg").read().split()[:3]))
print(f"capture {size} octets, {rounds} rounds interleaved")
for (name, case), runs in results.items():
    wall = sorted(r[0] for r in runs)
    cpu = sorted(r[1] for r in runs)
    best = min(runs, key=lambda r: r[1])
    print(f"{name:8s} {case:10s} wall min {wall[0]:.4f} s ({size / wall[0] / 1e9:.2f} GB/s) "
          f"median {wall[len(wall) // 2]:.4f}  CPU min {cpu[0]:.4f} s (user {best[2]:.3f} + "
          f"sys {best[3]:.3f}) median {cpu[len(cpu) // 2]:.4f}")
