#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The Debian packages as a user gets them (issue 18): install the .debs `./build.sh package`
wrote with apt, use every program from the system paths only, purge them and check nothing of
theirs is left.

This changes the machine (system packages, and while they are installed every tshark on it
loads the system plugin), so it runs only as root and only when DDPSCOPE_PACKAGE_TEST=1 asks
for it (`./build.sh package-test`); otherwise it is skipped (exit 77). Packages of the same
names already installed make it fail rather than replace them.

usage: package_test.py DEB_DIR SAMPLES_DIR
"""
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile

PACKAGES = ["ddpscope", "ddpscope-gui", "wireshark-plugin-ddpscope"]
SKIP = 77
# Only the system's programs: nothing from a build tree.
SYSTEM_ENV = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL": "C.UTF-8",
              "DEBIAN_FRONTEND": "noninteractive"}

failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL:", msg, flush=True)


def run(cmd, env=None, timeout=300, quiet=False, **kw):
    if not quiet:
        print("$", " ".join(cmd), flush=True)
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                          env=env or SYSTEM_ENV, **kw)


def installed(pkg):
    p = run(["dpkg-query", "-W", "-f=${Status}", pkg])
    return p.returncode == 0 and "install ok installed" in p.stdout


def check_programs(samples, home):
    env = dict(SYSTEM_ENV, HOME=home, XDG_CONFIG_HOME=os.path.join(home, ".config"))
    synth = os.path.join(samples, "synthetic")
    bounds = os.path.join(synth, "fault-bounds.pcap")
    regions = os.path.join(synth, "fault-bounds.regions.json")

    for prog in ["/usr/bin/ddpscope", "/usr/bin/ddpscope-gui"]:
        if not os.access(prog, os.X_OK):
            fail(f"{prog} is not installed")
    p = run(["ddpscope", "--version"], env=env)
    if p.returncode != 0 or not p.stdout.startswith("ddpscope "):
        fail(f"ddpscope --version: exit {p.returncode}, {p.stdout!r} {p.stderr!r}")

    # analyze: a clean sample exits 0, the bounds fault 1 with the finding at frame 14.
    p = run(["ddpscope", "analyze", os.path.join(synth, "clean-rping.pcap")], env=env)
    if p.returncode != 0 or "0 errors" not in p.stdout:
        fail(f"ddpscope analyze clean-rping.pcap: exit {p.returncode}\n{p.stdout[-800:]}")
    p = run(["ddpscope", "analyze", bounds, "--regions", regions, "--json"], env=env)
    try:
        report = json.loads(p.stdout)
        hits = [f["frame"] for f in report["findings"] if f["code"] == "ddp.tagged.bounds"]
    except (ValueError, KeyError) as e:
        hits = []
        fail(f"ddpscope analyze --json: not a report ({e}): {p.stdout[:300]!r} {p.stderr!r}")
    if p.returncode != 1 or 14 not in hits:
        fail(f"ddpscope analyze fault-bounds: exit {p.returncode}, ddp.tagged.bounds at {hits}")

    # The manual pages and the completion where man and bash-completion look.
    for page in ["ddpscope", "ddpscope-gui"]:
        p = run(["man", "-w", page], env=env)
        if p.returncode != 0 or "/usr/share/man/man1/" not in p.stdout:
            fail(f"man -w {page}: {p.stdout!r} {p.stderr!r}")
    comp = "/usr/share/bash-completion/completions/ddpscope"
    p = run(["bash", "--norc", "-c",
             f"source {comp} && COMP_WORDS=(ddpscope list-findings ddp.tagged.bo) && "
             "COMP_CWORD=2 && _ddpscope && echo \"${COMPREPLY[*]}\""], env=env)
    if p.stdout.strip() != "ddp.tagged.bounds":
        fail(f"installed completion: {p.stdout!r} {p.stderr!r}")

    # The desktop entry offers the GUI for pcap and pcapng files.
    desktop = "/usr/share/applications/ddpscope-gui.desktop"
    text = open(desktop).read() if os.path.exists(desktop) else ""
    for mime in ["application/vnd.tcpdump.pcap", "application/x-pcapng"]:
        if mime not in text:
            fail(f"{desktop} does not register {mime}")
    if not os.path.exists("/usr/share/icons/hicolor/scalable/apps/ddpscope-gui.svg"):
        fail("the GUI's icon is not installed")

    # Wireshark: the plugin from the system folder (HOME is empty, so there is no personal
    # plugin folder), decoding; the extcap interface listed.
    p = run(["tshark", "-G", "plugins"], env=env)
    lines = [l for l in p.stdout.splitlines() if l.startswith("ddpscope.so")]
    if not lines or "/usr/lib/" not in lines[0] or "/wireshark/plugins/" not in lines[0]:
        fail(f"tshark -G plugins does not list the system ddpscope.so: {lines} {p.stderr[-300:]}")
    else:
        print("  ", lines[0])
    p = run(["tshark", "-r", bounds, "-o", f"iwarp.mpa.regions_file:{regions}",
             "-Y", "iwarp.ddp.tagged.bounds", "-T", "fields", "-e", "frame.number",
             "-e", "iwarp.ddp.stag"], env=env)
    if p.returncode != 0 or not p.stdout.startswith("14\t"):
        fail(f"tshark with the system plugin: exit {p.returncode}, {p.stdout!r} {p.stderr[-300:]}")
    p = run(["tshark", "-D"], env=env)
    if "ddpscope-replay" not in p.stdout:
        fail(f"tshark -D does not list the extcap ddpscope-replay: {p.stdout!r}")

    # The GUI renders a sample offscreen.
    shot = os.path.join(home, "main.png")
    p = run(["ddpscope-gui", "--screenshot", shot, bounds],
            env=dict(env, QT_QPA_PLATFORM="offscreen"), timeout=120)
    ok = p.returncode == 0 and os.path.exists(shot)
    if ok:
        with open(shot, "rb") as f:
            data = f.read()
        ok = data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) > 20000
    if not ok:
        fail(f"ddpscope-gui --screenshot: exit {p.returncode} {p.stderr[-300:]}")


def check_depends():
    p = run(["dpkg-query", "-W", "-f=${Depends}", "wireshark-plugin-ddpscope"])
    deps = p.stdout
    lib = [d.strip() for d in deps.split(",") if d.strip().startswith("libwireshark")]
    if not any("(>=" in d for d in lib) or not any("(<<" in d for d in lib):
        fail(f"wireshark-plugin-ddpscope does not pin its libwireshark: Depends: {deps}")
    else:
        print("   plugin depends on", ", ".join(d for d in lib if "<<" in d or ">=" in d))


def left_behind(paths):
    """What of the purged packages' files is still there: every file, and every directory no
    installed package owns."""
    left = []
    for path in paths:
        if not os.path.lexists(path):
            continue
        if os.path.isdir(path) and not os.path.islink(path):
            if run(["dpkg-query", "-S", path], quiet=True).returncode == 0:
                continue  # shared with another package (/usr/bin, the plugin folder)
        left.append(path)
    return left


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    deb_dir, samples = (os.path.abspath(a) for a in sys.argv[1:])
    if os.environ.get("DDPSCOPE_PACKAGE_TEST") != "1":
        print("skipped: installs and purges system packages; DDPSCOPE_PACKAGE_TEST=1 (as root) "
              "or ./build.sh package-test runs it")
        return SKIP
    if os.geteuid() != 0:
        print("FAIL: DDPSCOPE_PACKAGE_TEST=1 needs root (apt install)")
        return 1
    debs = []
    for pkg in PACKAGES:
        found = sorted(glob.glob(os.path.join(deb_dir, f"{pkg}_*.deb")))
        if not found:
            print(f"FAIL: no {pkg}_*.deb in {deb_dir}; ./build.sh package writes them")
            return 1
        debs.append(found[-1])
    already = [p for p in PACKAGES if installed(p)]
    if already:
        print(f"FAIL: already installed, not replacing: {already} (apt purge them first)")
        return 1

    home = tempfile.mkdtemp(prefix="ddpscope-package-test-")
    files = {}
    try:
        p = run(["apt-get", "install", "-y", "--no-install-recommends", *debs], timeout=900)
        if p.returncode != 0:
            print(p.stdout[-2000:], p.stderr[-2000:])
            fail("apt-get install of the packages failed")
            return 1
        for pkg in PACKAGES:
            files[pkg] = run(["dpkg-query", "-L", pkg]).stdout.split("\n")
        check_depends()
        check_programs(samples, home)
    finally:
        p = run(["apt-get", "purge", "-y", *PACKAGES], timeout=600)
        if p.returncode != 0:
            fail(f"apt-get purge failed: {p.stderr[-1000:]}")
        shutil.rmtree(home, ignore_errors=True)
    for pkg in PACKAGES:
        if installed(pkg):
            fail(f"{pkg} still installed after purge")
        if run(["dpkg-query", "-W", pkg]).returncode == 0 and \
                run(["dpkg-query", "-W", "-f=${Status}", pkg]).stdout.strip() != "":
            status = run(["dpkg-query", "-W", "-f=${Status}", pkg]).stdout
            if "not-installed" not in status:
                fail(f"{pkg} left in dpkg's database: {status}")
        paths = [f for f in files.get(pkg, []) if f.startswith("/") and f != "/."]
        if len(paths) < 3:
            fail(f"dpkg -L {pkg} listed only {paths}")
        left = left_behind(paths)
        if left:
            fail(f"{pkg} left behind: {left}")
        else:
            print(f"   {pkg}: {len(paths)} paths installed, none left after purge")
    print("FAILED" if failures else "package test passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
