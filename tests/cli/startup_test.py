#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""What ddpscope loads at start (issue 43: start-up was 7.9 M instructions, a tenth of a 10 MB
analysis), on the real binary and the real dynamic loader (LD_DEBUG=libs lists every library
the process initialises, dlopen'ed ones included):
- libpcap (and libdbus, libsystemd, ... under it), libgcrypt and usrsctp are not loaded by
  `analyze` of an uncompressed pcap or pcapng file (read mapped), nor by help or list-findings;
- libpcap is loaded when a run needs it (a BPF filter, --reader libpcap, writing a capture with
  synth), and that run's report is the same as without the filter where the filter keeps
  every frame; libgcrypt when ESP is decrypted (--esp-sa), and the report then equals the
  sample's golden one (the payload was decrypted);
- libstdc++ is not a shared library the binary loads (linked in) unless the build was
  configured otherwise (ddpscope -> DDPSCOPE_STATIC_LIBSTDCXX, sanitizer builds): then that
  check is skipped, said on stdout.

Usage: startup_test.py DDPSCOPE SAMPLES"""
import json
import os
import subprocess
import sys
import tempfile


def libraries(args):
    """Runs ddpscope ARGS under LD_DEBUG=libs; returns (exit code, stdout, names of the shared
    objects initialised)."""
    env = dict(os.environ, LD_DEBUG="libs")
    p = subprocess.run(args, capture_output=True, env=env, timeout=300)
    names = set()
    for line in p.stderr.decode(errors="replace").splitlines():
        if "calling init:" in line:
            names.add(os.path.basename(line.split("calling init:", 1)[1].strip()))
    return p.returncode, p.stdout, names


def has(names, prefix):
    return any(n.startswith(prefix) for n in names)


def main():
    ddpscope, samples = sys.argv[1], sys.argv[2]
    failures = []
    pcap = os.path.join(samples, "synthetic", "clean-rping.pcap")
    pcapng = None
    for root, _, files in os.walk(samples):
        for f in sorted(files):
            if f.endswith(".pcapng"):
                pcapng = os.path.join(root, f)
                break
        if pcapng:
            break

    # libpcap's own dependencies (libsystemd) load libgcrypt: not checked where libpcap is.
    def expect(args, want_pcap, what, want_gcrypt=False):
        if want_pcap:
            want_gcrypt = None
        rc, out, names = libraries([ddpscope] + args)
        if rc not in (0, 1):
            failures.append(f"{what}: exit {rc}")
        for lib, want in (("libpcap.so", want_pcap), ("libgcrypt.so", want_gcrypt),
                          ("libusrsctp.so", False)):
            if want is not None and has(names, lib) != want:
                failures.append(f"{what}: {lib} {'not ' if want else ''}loaded "
                                f"(initialised: {sorted(names)})")
        return out, names

    plain, names = expect(["analyze", pcap, "--json", "-q"], False, "analyze of a pcap file")
    if pcapng:
        expect(["analyze", pcapng, "--json", "-q"], False, f"analyze of {pcapng}")
    expect(["--help"], False, "--help")
    expect(["list-findings"], False, "list-findings")
    filtered, _ = expect(["analyze", pcap, "--json", "-q", "-Y", "tcp"], True,
                         "analyze with a BPF filter")
    if filtered != plain:
        failures.append("analyze -Y tcp (every frame of the sample is TCP) differs from analyze")
    via_libpcap, _ = expect(["analyze", pcap, "--json", "-q", "--reader", "libpcap"], True,
                            "analyze --reader libpcap")
    if via_libpcap != plain:
        failures.append("analyze --reader libpcap differs from the mapped reader's report")
    esp = os.path.join(samples, "ipsec", "esp-cbc-sha256-transport")
    decrypted, _ = expect(["analyze", esp + ".pcap", "--json", "-q", "--esp-sa", esp + ".esp_sa"],
                          False, "analyze --esp-sa", want_gcrypt=True)
    with open(esp + ".golden.json", "rb") as f:
        golden = json.load(f)
    if json.loads(decrypted).get("streams") != golden.get("streams"):
        failures.append("analyze --esp-sa: streams differ from the sample's golden report")
    with tempfile.TemporaryDirectory() as tmp:
        scenario = os.path.join(tmp, "s.json")
        with open(scenario, "w") as f:
            f.write('{"operations": [{"op": "send", "from": "client", "size": 64}]}')
        out = os.path.join(tmp, "s.pcap")
        rc, _, names = libraries([ddpscope, "synth", scenario, "-o", out])
        if rc == 0:
            if not has(names, "libpcap.so"):
                failures.append("synth wrote a capture without loading libpcap?")
            if not os.path.getsize(out):
                failures.append("synth wrote an empty capture")
        else:
            print(f"synth exit {rc} (no generator in this build?): its check skipped")

    if has(names, "libstdc++.so"):
        print("libstdc++ is a shared library of this build (sanitizers, or "
              "DDPSCOPE_STATIC_LIBSTDCXX off): not checked")
    for f in failures:
        print("FAIL:", f)
    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
