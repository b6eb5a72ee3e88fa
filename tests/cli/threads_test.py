#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""`ddpscope analyze --threads 2` (reader thread + engine thread, issue 19) against
`--threads 1` (the one-thread loop), on the real binary: the JSON report, the text report, the
messages on stderr and the exit code must be the same bytes, on every capture under samples/
and ../shared/captures/, on a gzip-compressed capture, on a capture cut in the middle of a record (the truncated-file finding
and the partial report), on standard input, with a BPF filter and a findings limit, and on a
generated capture large enough that the queue between the threads fills (with a queue of a few
frames too, through the same option the default uses). A mismatch prints the first differing
line.

--big-mib N sets the generated capture's size (default 64; the sanitizer build's suite uses 16,
where each run costs ten times as much: the run with a 16-frame queue still fills the queue).
--slice (the sanitizer build's suite too) compares the text report of every fifth capture only;
the JSON report, built from the same model, of every capture (cli.threads.all, slow: all).

Usage: threads_test.py [--big-mib N] [--slice] DDPSCOPE SAMPLES_DIR SHARED_CAPTURES_DIR
                       MAKE_CAPTURE_SH"""
import glob
import gzip
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_util import first_diff  # noqa: E402  (tests/cli/compare_util.py)

argv = sys.argv[1:]
big_mib = 64
text_slice = False
while argv[:1] in (["--big-mib"], ["--slice"]):
    if argv[0] == "--slice":
        text_slice = True
        argv = argv[1:]
    else:
        big_mib = int(argv[1])
        argv = argv[2:]
ddpscope, samples, shared, make_capture = argv[:4]
failures = 0
compared = 0
keyed = 0


def run(args, stdin=None):
    with open(stdin, "rb") if stdin else open(os.devnull, "rb") as inp:
        p = subprocess.run([ddpscope, "analyze", *args], stdin=inp, capture_output=True,
                           timeout=600)
    return p.returncode, p.stdout, p.stderr


def compare(label, args, stdin=None, threads=("2",)):
    global failures, compared
    base = run(["--threads", "1", *args], stdin)
    for t in threads:
        got = run(["--threads", t, *args], stdin)
        compared += 1
        for what, x, y in (("exit code", base[0], got[0]), ("stdout", base[1], got[1]),
                           ("stderr", base[2], got[2])):
            if x != y:
                failures += 1
                detail = first_diff(x, y) if isinstance(x, bytes) else f"{x} vs {y}"
                print(f"FAIL {label} --threads {t}: {what} differs: {detail}")
    return base


captures = sorted(glob.glob(os.path.join(samples, "**", "*.pcap*"), recursive=True) +
                  glob.glob(os.path.join(shared, "**", "*.pcap*"), recursive=True))
if len(captures) < 10:
    sys.exit(f"only {len(captures)} captures found under {samples} and {shared}")
for i, f in enumerate(captures):
    name = os.path.relpath(f)
    rc, out, _ = compare(name + " --json", ["--json", "-q", f])
    if rc not in (0, 1) or not out:
        failures += 1
        print(f"FAIL {name}: no report (exit {rc})")
    if not text_slice or i % 5 == 0:
        compare(name + " text", ["-q", f])
    # With its ESP keys the ESP layer decrypts on the reader thread: its findings must reach
    # the report in the same places.
    stem = f[: -len(".pcap")] if f.endswith(".pcap") else None
    for sidecar, flag in ((".esp_sa", "--esp-sa"), (".xfrm", "--xfrm")):
        if stem and os.path.exists(stem + sidecar):
            compare(f"{name} {flag}", ["--json", "-q", flag, stem + sidecar, f])
            keyed += 1

with tempfile.TemporaryDirectory() as tmp:
    # The biggest sample cut in the middle of a record: truncated-file finding, partial report.
    biggest = max(captures, key=os.path.getsize)
    cut = os.path.join(tmp, "cut.pcap")
    with open(biggest, "rb") as src, open(cut, "wb") as dst:
        dst.write(src.read()[: os.path.getsize(biggest) * 2 // 3 + 7])
    rc, out, _ = compare("cut --json", ["--json", "-q", cut])
    if b"capture.truncated-file" not in out:
        failures += 1
        print("FAIL cut capture: no capture.truncated-file finding")
    compare("cut text", ["-q", cut])
    compare("stdin --json", ["--json", "-q", "-"], stdin=biggest)
    gz = os.path.join(tmp, "big.pcap.gz")
    with open(biggest, "rb") as src, gzip.open(gz, "wb") as dst:
        dst.write(src.read())
    compare("gzip --json", ["--json", "-q", gz])
    compare("filter", ["--json", "-q", "-Y", "tcp port 4791", biggest])
    compare("max_findings", ["--json", "-q", "--limit", "max_findings=3", biggest])

    # A generated capture of 64 MiB of RDMA Writes (about 47,000 frames): more than the queue
    # holds, so the reader waits on the engine; also with a queue of 16 frames.
    big = os.path.join(tmp, "big.pcap")
    subprocess.run(["bash", make_capture, ddpscope, str(big_mib), big], check=True, timeout=600)
    compare("generated --json", ["--json", "-q", big], threads=("2", "4"))
    compare("generated text", ["-q", big])
    env_cut = os.path.join(tmp, "bigcut.pcap")
    with open(big, "rb") as src, open(env_cut, "wb") as dst:
        dst.write(src.read()[: os.path.getsize(big) // 2 + 3])
    compare("generated cut --json", ["--json", "-q", env_cut])
    os.environ["DDPSCOPE_PIPELINE_FRAMES"] = "16"
    compare("generated, 16-frame queue", ["--json", "-q", big])
    del os.environ["DDPSCOPE_PIPELINE_FRAMES"]

if keyed < 10:
    failures += 1
    print(f"FAIL only {keyed} captures with ESP keys (.esp_sa / .xfrm beside them)")
print(f"{compared} comparisons over {len(captures)} captures ({keyed} with ESP keys), "
      f"{failures} failures")
sys.exit(1 if failures else 0)
