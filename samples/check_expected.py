#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Checks every synthetic sample (see docs/synth-scenarios.md) two ways:
  - `ddpscope synth NAME.json` still writes the committed NAME.pcap (octet for octet),
    NAME.expected.json and NAME.regions.json, compared in tests/golden.py's canonical form (the
    free-text `detail` by the numbers it quotes); with DDPSCOPE_UPDATE_GOLDEN=1 the committed
    files are replaced by the new ones (as samples/regenerate.sh does);
  - `ddpscope analyze --json` on NAME.pcap reports every expected finding with its code, frame
    and severity and, for exhaustive samples, no other warning or error finding (the rule is
    tests/golden.py's expected_mismatch, shared with tests/capture/check_capture.py).

Usage: samples/check_expected.py path/to/ddpscope [NAME ...]
Exit 0 when every sample passes both; 1 otherwise.
"""
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
import golden as canon  # noqa: E402  (tests/golden.py)


def regenerated(binary, here, name, tmp):
    """Differences between the committed files of scenario `name` and what the generator
    writes now (replacing the committed ones in update mode)."""
    run = subprocess.run([binary, "synth", os.path.join(here, name + ".json"), "-o",
                          os.path.join(tmp, name + ".pcap")], capture_output=True, text=True)
    if run.returncode != 0:
        return [f"ddpscope synth exited {run.returncode}: {run.stderr.strip()}"]
    diffs = []
    for suffix in (".pcap", ".expected.json", ".regions.json", ".esp_sa", ".xfrm"):
        new, old = os.path.join(tmp, name + suffix), os.path.join(here, name + suffix)
        if not os.path.exists(new) and not os.path.exists(old):
            continue
        if not os.path.exists(new) or not os.path.exists(old):
            diffs.append(f"{name + suffix}: {'not written now' if os.path.exists(old) else 'new'}")
        elif suffix in (".pcap", ".esp_sa", ".xfrm"):
            with open(new, "rb") as a, open(old, "rb") as b:
                if a.read() != b.read():
                    diffs.append(f"{name}{suffix}: not the file the scenario generates now")
        else:
            with open(new) as a, open(old) as b:
                diffs += [f"{name + suffix}: {d}" for d in
                          canon.differences(json.load(b), json.load(a), limit=10)]
        if canon.update_requested() and os.path.exists(new):
            shutil.copyfile(new, old)
    return diffs


def main() -> int:
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    binary = os.path.abspath(sys.argv[1])
    root = os.path.dirname(os.path.abspath(__file__))
    # Synthetic samples (synthetic/) and the synthetic IPsec ones (ipsec/, with their SA files).
    dirs = {}
    for sub in ("synthetic", "ipsec"):
        for p in glob.glob(os.path.join(root, sub, "*.expected.json")):
            dirs[os.path.basename(p)[: -len(".expected.json")]] = os.path.join(root, sub)
    names = sys.argv[2:] or sorted(dirs)
    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            here = dirs[name]
            diffs = regenerated(binary, here, name, tmp)
            if diffs and not canon.update_requested():
                failed += 1
                print(f"FAIL {name}: the generator's output changed ({canon.UPDATE_ENV}=1 or "
                      "samples/regenerate.sh to accept):\n     " + "\n     ".join(diffs))
            elif diffs:
                print(f"updated {name}: " + "; ".join(diffs))
    for name in names:
        here = dirs[name]
        exp = json.load(open(os.path.join(here, name + ".expected.json")))
        args = [binary, "analyze", "--json", os.path.join(here, exp["pcap"])]
        if exp.get("regions_file"):
            args += ["--regions", os.path.join(here, exp["regions_file"])]
        args += canon.esp_args(exp, here)
        run = subprocess.run(args, capture_output=True, text=True)
        if run.returncode not in (0, 1):
            print(f"FAIL {name}: ddpscope exited {run.returncode}: {run.stderr.strip()}")
            failed += 1
            continue
        missing, extra = canon.expected_mismatch(exp, json.loads(run.stdout))
        if missing or extra:
            failed += 1
            print(f"FAIL {name}: missing {missing} unexpected {extra}")
        else:
            at_least = "" if exp["exhaustive"] else ", at least"
            print(f"ok   {name} ({len(exp['expected'])} expected{at_least})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
