#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Capture-driven test: run `ddpscope analyze --json` on one capture and check it against
   - its golden report, in tests/golden.py's canonical form (every field exactly, free-text
     messages by the numbers they quote); DDPSCOPE_UPDATE_GOLDEN=1 rewrites it,
   - the expected findings (NAME.expected.json: code, frame and severity, exhaustive or not),
   - the bytes the scenario wrote (regions_written) against the exported shadow buffers,
   - the exit code contract (1 iff an error finding)."""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import golden as canon  # noqa: E402  (tests/golden.py)


def crc32c(data: bytes) -> int:
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def main():
    ddpscope, pcap, golden = sys.argv[1], sys.argv[2], sys.argv[3]
    base = pcap[:-5] if pcap.endswith(".pcap") else pcap
    expected = None
    if os.path.exists(base + ".expected.json"):
        with open(base + ".expected.json") as f:
            expected = json.load(f)
    args = [ddpscope, "analyze", pcap, "--json"]
    if expected and expected.get("regions_file"):
        args += ["--regions", os.path.join(os.path.dirname(pcap), expected["regions_file"])]
    args += canon.esp_args(expected, os.path.dirname(pcap))
    with tempfile.TemporaryDirectory() as tmp:
        args += ["--export-dir", tmp]
        proc = subprocess.run(args, capture_output=True, text=True)
        if proc.returncode not in (0, 1):
            fail(f"exit code {proc.returncode}: {proc.stderr}")
        report = json.loads(proc.stdout)
        errors = [f for f in report["findings"] if f["severity"] == "error"]
        if (proc.returncode == 1) != bool(errors):
            fail(f"exit code {proc.returncode} but {len(errors)} error findings")

        # Shadow buffers hold exactly what the scenario wrote (unless the capture lost some).
        lossy = expected and any(e["code"] == "tcp.gap" for e in expected["expected"])
        if expected and not lossy:
            with open(os.path.join(tmp, "index.json")) as f:
                index = json.load(f)
            for r in expected.get("regions_written", []):
                stag = int(r["stag"], 16)
                entry = next((e for e in index if e["sink"] == r["owner"] and int(e["stag"], 16) == stag), None)
                if entry is None:
                    fail(f"no exported shadow buffer for {r['owner']} STag {r['stag']}")
                with open(os.path.join(tmp, entry["file"]), "rb") as f:
                    content = f.read()
                off = int(r["base"], 16) - int(entry["base_to"], 16)
                chunk = content[off:off + r["length"]] if off >= 0 else b""
                chunk = chunk + b"\0" * (r["length"] - len(chunk))
                if crc32c(chunk) != int(r["crc32c"], 16):
                    fail(f"shadow buffer {r['owner']} STag {r['stag']} differs from what the scenario wrote")

    # Expected findings, at their frames.
    if expected:
        missing, extra = canon.expected_mismatch(expected, report)
        if missing:
            found = [(f["code"], f["frame"], f["severity"]) for f in report["findings"]]
            fail(f"expected (code, frame, severity) {missing}; got {found}")
        if extra:
            fail(f"unexpected findings {extra}")

    # Golden report.
    if canon.update_requested():
        canon.write_golden(golden, report)
        print(f"updated {golden}")
        return
    if not os.path.exists(golden):
        fail(f"no golden report {golden} (run with {canon.UPDATE_ENV}=1 to create it)")
    with open(golden) as f:
        want = json.load(f)
    diffs = canon.differences(want, report)
    if diffs:
        print("\n".join(diffs))
        fail(f"report differs from {golden} ({canon.UPDATE_ENV}=1 to accept)")
    print(f"ok: {os.path.basename(pcap)}: {len(report['findings'])} findings match")


if __name__ == "__main__":
    main()
