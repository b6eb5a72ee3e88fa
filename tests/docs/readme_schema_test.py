#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The README's JSON schema block and `analyze --json` stay in step (issue 16): every key the
analyzer writes on the bundled samples (with their regions files, and with a findings cap) is in
the README's block, and every key the block names is written on at least one of them."""
import glob
import json
import os
import re
import subprocess
import sys

DDPSCOPE, SAMPLES, README = sys.argv[1:4]


def readme_keys():
    text = open(README, encoding="utf-8").read()
    block = re.search(r"### JSON report schema.*?```text\n(.*?)```", text, re.S)
    assert block, "README has no JSON report schema block"
    return set(re.findall(r'"([a-z][a-z0-9_]*)"\s*:', block.group(1)))


def output_keys(node, out, opcode_names):
    if isinstance(node, dict):
        for k, v in node.items():
            out.add(k)
            if k == "opcodes":
                # Keys are opcode names (the README shows one, "rdma_write"); their values are
                # objects of the documented shape.
                for name, counts in v.items():
                    opcode_names.add(name)
                    output_keys(counts, out, opcode_names)
            else:
                output_keys(v, out, opcode_names)
    elif isinstance(node, list):
        for v in node:
            output_keys(v, out, opcode_names)


def main():
    seen, opcodes = set(), set()
    runs = 0
    for pcap in sorted(glob.glob(os.path.join(SAMPLES, "*", "*.pcap"))):
        regions = pcap[: -len(".pcap")] + ".regions.json"
        variants = [[], ["--timing"]]
        if os.path.exists(regions):
            variants.append(["--regions", regions])
        variants.append(["--limit", "max_findings=1"])
        variants.append(["--sink-profile", "siw"])  # the profile's keys (issue 40)
        # An IPsec sample with its SA file (samples/ipsec: the file its expected.json names).
        expected = pcap[: -len(".pcap")] + ".expected.json"
        if os.path.exists(pcap[: -len(".pcap")] + ".esp_sa") and os.path.exists(expected):
            with open(expected) as f:
                exp = json.load(f)
            for key, opt in (("esp_sa_file", "--esp-sa"), ("xfrm_file", "--xfrm")):
                if exp.get(key):
                    variants.append([opt, os.path.join(os.path.dirname(pcap), exp[key])])
        for extra in variants:
            p = subprocess.run([DDPSCOPE, "analyze", pcap, "--json", *extra],
                               capture_output=True, text=True, timeout=120)
            if p.returncode not in (0, 1):
                print(f"FAIL analyze {pcap} {extra}: exit {p.returncode}: {p.stderr}")
                return 1
            output_keys(json.loads(p.stdout), seen, opcodes)
            runs += 1
    # The siw oracle's captures (issue 40) under the siw profile: peers' Terminates it predicts.
    for pcap in sorted(glob.glob(os.path.join(SAMPLES, "siw", "oracle", "*.pcap"))):
        p = subprocess.run([DDPSCOPE, "analyze", pcap, "--json", "--sink-profile", "siw"],
                           capture_output=True, text=True, timeout=120)
        if p.returncode not in (0, 1):
            print(f"FAIL analyze {pcap} --sink-profile siw: exit {p.returncode}: {p.stderr}")
            return 1
        output_keys(json.loads(p.stdout), seen, opcodes)
        runs += 1
    documented = readme_keys()
    undocumented = sorted(seen - documented - opcodes)
    stale = sorted(documented - seen - {"rdma_write"})
    status = 0
    if undocumented:
        print(f"FAIL keys the analyzer writes that the README's schema lacks: {undocumented}")
        status = 1
    if stale:
        print(f"FAIL keys the README's schema names that no sample's report has: {stale}")
        status = 1
    if "rdma_write" not in opcodes:
        print("FAIL the README's example opcode key rdma_write is not an opcode name")
        status = 1
    if status == 0:
        print(f"PASS {len(documented)} documented keys, {runs} reports")
    return status


if __name__ == "__main__":
    sys.exit(main())
