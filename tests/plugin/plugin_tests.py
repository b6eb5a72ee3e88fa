#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""tshark tests of the ddpscope Wireshark plugin, run against the built .so.

tshark finds per-user plugins under $HOME/.local/lib/wireshark/plugins/4.0/epan/, so each run
gets a temporary HOME holding a copy of the plugin. Wireshark ignores personal plugins when it
runs with special privileges (root included), so as root tshark runs as user nobody.

Usage: plugin_tests.py --plugin SO [--analyzer BIN] TEST [CAPTURE]
"""
import argparse
import collections
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import golden as canon  # noqa: E402  (tests/golden.py)

TSHARK = shutil.which("tshark") or "tshark"
EDITCAP = shutil.which("editcap") or "editcap"

# Fields our plugin and Wireshark's built-in dissectors both decode: (ours, built-in).
SHARED_FIELDS = [
    ("iwarp.ddp.t", "iwarp_ddp.tagged_flag"),
    ("iwarp.ddp.l", "iwarp_ddp.last_flag"),
    ("iwarp.ddp.dv", "iwarp_ddp.dv"),
    ("iwarp.ddp.stag", "iwarp_ddp.stag"),
    ("iwarp.ddp.to", "iwarp_ddp.tagged_offset"),
    ("iwarp.ddp.qn", "iwarp_ddp.qn"),
    ("iwarp.ddp.msn", "iwarp_ddp.msn"),
    ("iwarp.ddp.mo", "iwarp_ddp.mo"),
    ("iwarp.rdmap.rv", "iwarp_rdma.version"),
    ("iwarp.rdmap.opcode", "iwarp_rdma.opcode"),
    ("iwarp.rdmap.sink_stag", "iwarp_rdma.sinkstag"),
    ("iwarp.rdmap.sink_to", "iwarp_rdma.sinkto"),
    ("iwarp.rdmap.read_size", "iwarp_rdma.rdmardsz"),
    ("iwarp.rdmap.source_stag", "iwarp_rdma.srcstag"),
    ("iwarp.rdmap.source_to", "iwarp_rdma.srcto"),
]

# Fields whose values must not depend on the number of passes: they come from the PDU itself
# or from what came before it.
STABLE_FIELDS = [
    "iwarp.mpa.key", "iwarp.mpa.rev", "iwarp.mpa.pd_length", "iwarp.mpa.ulpdu_length",
    "iwarp.mpa.crc", "iwarp.mpa.crc.status", "iwarp.ddp.stag", "iwarp.ddp.to", "iwarp.ddp.qn",
    "iwarp.ddp.msn", "iwarp.ddp.mo", "iwarp.rdmap.opcode", "iwarp.ddp.region",
    "iwarp.ddp.region.offset", "iwarp.ddp.region.placed", "iwarp.ddp.expected_msn",
    "iwarp.rdmap.request_in", "iwarp.rdmap.term.quoted_in", "iwarp.rdmap.term.code",
]

EXPERT_CODE = re.compile(r"^\[([a-z0-9.-]+)\] ")
# A row of `tshark -z expert`'s summary naming one of our findings: frequency, finding code.
EXPERT_SUMMARY_ROW = re.compile(r"^ +(\d+) +\S+ +\S+ +\[([a-z0-9.-]+)\] ", re.M)
# Wireshark's expert severities (epan/proto.h PI_NOTE, PI_WARN, PI_ERROR) by the analyzer's names.
EXPERT_SEVERITY = {0x00400000: "note", 0x00600000: "warning", 0x00800000: "error"}
# Suffix of findings raised after their frame was dissected (PDU completed later, or finish()).
REPORTED_LATE = re.compile(r"\(reported (in frame \d+|at the end of the capture)\)$")
REPORTED_AT_END = re.compile(r"\(reported at the end of the capture\)$")
# Suffix of such a finding as a one-pass run shows it, on the frame that made it known (the
# first visit of that frame): its own frame, printed before.
LEARNT_HERE = re.compile(r"\(on frame (\d+), learnt in this one\)$")


class Failure(Exception):
    pass


def check(cond, message):
    if not cond:
        raise Failure(message)


class Tshark:
    def __init__(self, plugin):
        self.tmp = tempfile.mkdtemp(prefix="ddpscope-plugin-test-")
        os.chmod(self.tmp, 0o755)
        plugdir = os.path.join(self.tmp, "home", ".local", "lib", "wireshark", "plugins", "4.0",
                               "epan")
        os.makedirs(plugdir)
        shutil.copy(plugin, plugdir)
        for root, dirs, files in os.walk(self.tmp):
            for d in dirs:
                os.chmod(os.path.join(root, d), 0o755)
            for f in files:
                os.chmod(os.path.join(root, f), 0o644)
        self.home = os.path.join(self.tmp, "home")
        self.as_nobody = os.geteuid() == 0

    def cleanup(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def stage(self, path):
        """Copies a capture where user nobody can read it."""
        dst = os.path.join(self.tmp, os.path.basename(path))
        if not os.path.exists(dst):
            shutil.copy(path, dst)
            os.chmod(dst, 0o644)
        return dst

    def run(self, args, check_rc=True):
        cmd = [TSHARK] + args
        if self.as_nobody:
            cmd = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] + cmd
        env = dict(os.environ, HOME=self.home)
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=self.tmp)
        if check_rc and p.returncode != 0:
            raise Failure(f"tshark {' '.join(args)} failed ({p.returncode}):\n{p.stderr}")
        # Our own protocols must never report a dissector bug; one in a protocol we hand Send
        # payloads to (SMB Direct, RPC-over-RDMA) is that protocol's, and only reported.
        bugs = re.findall(r"Dissector bug, protocol ([^:,]+)", p.stdout + p.stderr)
        ours = [b for b in bugs if b.startswith("iWARP-")]
        if ours:
            raise Failure(f"Dissector bug with tshark {' '.join(args)}:\n{p.stderr}")
        if bugs:
            print(f"note: dissector bug outside the plugin: {sorted(set(bugs))}", file=sys.stderr)
        return p

    def fields(self, capture, fields, extra=()):
        args = ["-r", capture, "-T", "fields", "-E", "occurrence=a", "-E", "aggregator=|",
                "-e", "frame.number"]
        for f in fields:
            args += ["-e", f]
        out = self.run(list(extra) + args).stdout
        rows = {}
        for line in out.splitlines():
            cols = line.split("\t")
            if not cols or not cols[0]:
                continue
            rows[int(cols[0])] = {f: (cols[i + 1] if i + 1 < len(cols) else "")
                                  for i, f in enumerate(fields)}
        return rows

    def experts(self, capture, extra=(), late_only=False, with_severity=False):
        """(frame, finding code) of every ddpscope expert info, as a multiset; with_severity:
        (frame, finding code, severity) with the severity named as the analyzer's JSON does."""
        return expert_counts(self.fields(capture, EXPERT_FIELDS, extra), late_only,
                             with_severity)


EXPERT_FIELDS = ["_ws.expert.message", "_ws.expert.severity"]


def expert_counts(rows, late_only=False, with_severity=False, at_end_only=False):
    """Tshark.experts() of rows Tshark.fields() read with EXPERT_FIELDS among its fields (so
    that one tshark run serves checks of fields and of expert infos). A finding a one-pass run
    shows on the frame that made it known (LEARNT_HERE) counts on its own frame."""
    found = collections.Counter()
    for frame, row in rows.items():
        msgs = row["_ws.expert.message"].split("|") if row["_ws.expert.message"] else []
        sevs = row["_ws.expert.severity"].split("|") if row["_ws.expert.severity"] else []
        check(len(msgs) == len(sevs), f"frame {frame}: expert messages and severities do "
              f"not pair up: {row}")
        for msg, sev in zip(msgs, sevs):
            m = EXPERT_CODE.match(msg)
            if at_end_only and not REPORTED_AT_END.search(msg):
                continue
            if m and (not late_only or REPORTED_LATE.search(msg)):
                learnt = LEARNT_HERE.search(msg)
                k = (int(learnt.group(1)) if learnt else frame, m.group(1))
                found[k + (EXPERT_SEVERITY.get(int(sev), sev),) if with_severity else k] += 1
    return found


def as_number(v):
    if v in ("True", "true"):
        return 1
    if v in ("False", "false"):
        return 0
    try:
        return int(v, 0)
    except ValueError:
        return v


# --- tests -------------------------------------------------------------------------------------

def test_loads(ts, args):
    out = ts.run(["-G", "plugins"]).stdout
    check("ddpscope.so" in out, f"plugin not listed by tshark -G plugins:\n{out}")
    protos = ts.run(["-G", "protocols"]).stdout
    for name in ("iwarp.mpa", "iwarp.ddp", "iwarp.rdmap"):
        check(re.search(rf"\t{re.escape(name)}$", protos, re.M), f"protocol {name} missing")
    heur = ts.run(["-G", "heuristic-decodes"]).stdout
    # Listed by protocol filter name: ours (ddpscope_mpa_tcp) on, the built-in one off.
    check(re.search(r"^tcp\tiwarp\.mpa\tT$", heur, re.M),
          f"heuristic ddpscope_mpa_tcp not enabled on tcp:\n{heur}")
    check(re.search(r"^tcp\tiwarp_mpa\tF$", heur, re.M),
          "built-in iwarp_mpa_tcp heuristic still enabled")


def test_rping_fields(ts, args):
    cap = ts.stage(args.capture)
    rows = ts.fields(cap, ["iwarp.mpa.key", "iwarp.mpa.rev", "iwarp.mpa.flags.c",
                           "iwarp.ddp.qn", "iwarp.ddp.msn", "iwarp.rdmap.opcode",
                           "iwarp.rdmap.sink_stag", "iwarp.rdmap.read_size",
                           "iwarp.mpa.crc.status", "iwarp.ddp.expected_msn", "_ws.col.Info",
                           "iwarp_mpa.rev", "iwarp_ddp.msn"])
    check(rows[4]["iwarp.mpa.key"] == "MPA ID Req Frame", f"frame 4: {rows[4]}")
    check(rows[6]["iwarp.mpa.key"] == "MPA ID Rep Frame", f"frame 6: {rows[6]}")
    check(rows[4]["iwarp.mpa.rev"] == "1", f"frame 4 rev: {rows[4]}")
    for frame, msn in ((8, 1), (9, 2), (12, 3), (13, 4)):
        r = rows[frame]
        check(as_number(r["iwarp.ddp.qn"]) == 0 and as_number(r["iwarp.ddp.msn"]) == msn,
              f"frame {frame}: {r}")
        check(as_number(r["iwarp.rdmap.opcode"]) == 3, f"frame {frame} opcode: {r}")
        check(as_number(r["iwarp.ddp.expected_msn"]) == msn, f"frame {frame} expected: {r}")
        check(r["_ws.col.Info"].startswith(f"Send MSN={msn}"), f"frame {frame} info: {r}")
    r = rows[10]
    check(as_number(r["iwarp.rdmap.opcode"]) == 1, f"frame 10: {r}")
    check(as_number(r["iwarp.rdmap.sink_stag"]) == 0x40CC4300, f"frame 10: {r}")
    check(as_number(r["iwarp.rdmap.read_size"]) == 64, f"frame 10: {r}")
    # Decoded once: the built-in dissectors stay quiet while the plugin is active.
    for frame, r in rows.items():
        check(r["iwarp_mpa.rev"] == "" and r["iwarp_ddp.msn"] == "",
              f"frame {frame} also decoded by the built-in dissectors: {r}")
    # And the "use built-in" preference brings them back.
    rows = ts.fields(cap, ["iwarp_ddp.msn", "iwarp.ddp.msn"], ["-o", "iwarp.mpa.use_builtin:TRUE"])
    check(rows[8]["iwarp_ddp.msn"] == "1" and rows[8]["iwarp.ddp.msn"] == "",
          f"use_builtin: {rows[8]}")


def test_nvmeof_fields(ts, args):
    """The real NVMe-oF capture (issue 14): every RDMA Write segment names the NVMe command whose
    buffer it lands in; the Read Responses name the command they serve. A segment is drawn in
    the frame that completes its FPDU (siw sends the CRC in a segment of its own)."""
    cap = ts.stage(args.capture)
    rows = ts.fields(cap, ["iwarp.rdmap.opcode", "iwarp.ddp.t", "iwarp.ddp.region.ulp",
                           "iwarp.ddp.region.command", "iwarp.ddp.region.bounds_known"])
    tagged = {f: r for f, r in rows.items() if r["iwarp.ddp.t"] in ("1", "True")}
    check(len(tagged) == 62, f"{len(tagged)} tagged segments")  # 54 Writes, 8 Read Responses
    for frame, r in tagged.items():
        check(r["iwarp.ddp.region.ulp"] == "nvme-rdma", f"frame {frame}: {r}")
        check(r["iwarp.ddp.region.command"], f"frame {frame}: {r}")
    check(tagged[149]["iwarp.ddp.region.command"] == "NVMe Read cid 97 nsid 1", tagged[149])
    check(tagged[149]["iwarp.ddp.region.bounds_known"] in ("1", "True"), tagged[149])
    check(tagged[212]["iwarp.ddp.region.command"] == "NVMe Write cid 100 nsid 1: the Read's sink",
          tagged[212])


def test_iser_fields(ts, args):
    """The synthetic iSER sample (issue 14): every tagged segment names the SCSI command whose
    buffer it lands in (region ULP "iser"); the Sends are still handed to the upper-layer
    heuristics on "iwarp_ddp_rdmap": Wireshark's own iSER dissector where it registers there
    (4.0 registers it on InfiniBand only), else they fall to the data dissector, never
    malformed."""
    cap = ts.stage(args.capture)
    rows = ts.fields(cap, ["iwarp.rdmap.opcode", "iwarp.ddp.t", "iwarp.ddp.region.ulp",
                           "iwarp.ddp.region.command", "iwarp.ddp.region.bounds_known",
                           "iser.flags", "data.len", "_ws.malformed"])
    tagged = {f: r for f, r in rows.items() if r["iwarp.ddp.t"] in ("1", "True")}
    check(len(tagged) == 17, f"{len(tagged)} tagged segments")  # 11 Writes, 6 Read Responses
    for frame, r in tagged.items():
        check(r["iwarp.ddp.region.ulp"] == "iser", f"frame {frame}: {r}")
        check(r["iwarp.ddp.region.command"].startswith("SCSI "), f"frame {frame}: {r}")
    check(tagged[16]["iwarp.ddp.region.command"] == "SCSI READ(10) ITT 0x1f LUN 0", tagged[16])
    check(tagged[16]["iwarp.ddp.region.bounds_known"] in ("1", "True"), tagged[16])
    check(tagged[24]["iwarp.ddp.region.command"] == "SCSI WRITE(10) ITT 0x20 LUN 0", tagged[24])
    sinks = [r for r in tagged.values() if as_number(r["iwarp.rdmap.opcode"]) == 2]
    check(sinks and all(r["iwarp.ddp.region.command"] ==
                        "SCSI WRITE(10) ITT 0x20 LUN 0: the Read's sink" for r in sinks), sinks)
    sends = {f: r for f, r in rows.items() if r["iwarp.rdmap.opcode"] and
             as_number(r["iwarp.rdmap.opcode"].split("|")[0]) in (3, 4, 5, 6)}
    check(len(sends) == 12, f"{len(sends)} Sends")
    heur = ts.run(["-G", "heuristic-decodes"]).stdout
    iser_on_iwarp = any(line.split("\t")[:2] == ["iwarp_ddp_rdmap", "iser"]
                        for line in heur.splitlines())
    for frame, r in sends.items():
        check(not r["_ws.malformed"], f"frame {frame} malformed: {r}")
        if iser_on_iwarp:
            check(r["iser.flags"], f"frame {frame}: Wireshark's iSER did not decode it: {r}")
        else:
            check(r["data.len"], f"frame {frame}: the Send's payload was not handed on: {r}")


def test_rpcrdma_fields(ts, args):
    """The synthetic NFSv3 over RPC-over-RDMA sample (issue 14): every tagged segment names the
    NFS Call whose chunk it lands in (region ULP "rpc-rdma"); Wireshark's own RPC-over-RDMA
    dissector still decodes every Send the plugin hands on (its XID), none malformed."""
    cap = ts.stage(args.capture)
    rows = ts.fields(cap, ["iwarp.rdmap.opcode", "iwarp.ddp.t", "iwarp.ddp.region.ulp",
                           "iwarp.ddp.region.command", "rpcordma.xid", "_ws.malformed"])
    tagged = {f: r for f, r in rows.items() if r["iwarp.ddp.t"] in ("1", "True")}
    check(len(tagged) == 17, f"{len(tagged)} tagged segments")  # 11 Writes, 6 Read Responses
    for frame, r in tagged.items():
        check(r["iwarp.ddp.region.ulp"] == "rpc-rdma", f"frame {frame}: {r}")
        check(r["iwarp.ddp.region.command"].startswith("NFSv3 "), f"frame {frame}: {r}")
    check(tagged[16]["iwarp.ddp.region.command"] == "NFSv3 READ xid 0x101", tagged[16])
    check(tagged[24]["iwarp.ddp.region.command"] == "NFSv3 WRITE xid 0x102", tagged[24])
    sends = {f: r for f, r in rows.items() if r["iwarp.rdmap.opcode"] and
             as_number(r["iwarp.rdmap.opcode"].split("|")[0]) in (3, 4, 5, 6)}
    check(len(sends) == 12, f"{len(sends)} Sends")
    for frame, r in sends.items():
        check(not r["_ws.malformed"], f"frame {frame} malformed: {r}")
        check(as_number(r["rpcordma.xid"]) in range(0x100, 0x106),
              f"frame {frame}: Wireshark's RPC-over-RDMA did not decode it: {r}")


def test_siw_nfs_fields(ts, args):
    """The real NFSv3-over-RDMA capture from the siw lab (issue 14): every tagged segment names
    the RPC Call whose chunk it lands in; Wireshark's RPC-over-RDMA dissector decodes every Send
    the plugin hands on, and the NFS dissector the calls in them, none malformed."""
    cap = ts.stage(args.capture)
    rows = ts.fields(cap, ["iwarp.rdmap.opcode", "iwarp.ddp.t", "iwarp.ddp.region.ulp",
                           "iwarp.ddp.region.command", "rpcordma.xid", "nfs.procedure_v3",
                           "_ws.malformed"], ["-2"])
    tagged = {f: r for f, r in rows.items() if r["iwarp.ddp.t"] in ("1", "True")}
    check(len(tagged) > 400, f"{len(tagged)} tagged segments")
    for frame, r in tagged.items():
        check(r["iwarp.ddp.region.ulp"] == "rpc-rdma", f"frame {frame}: {r}")
        check(r["iwarp.ddp.region.command"] != "", f"frame {frame}: {r}")
    commands = {r["iwarp.ddp.region.command"].split(" xid ")[0] for r in tagged.values()}
    check({"NFSv3 READ", "NFSv3 WRITE"} <= commands, commands)
    sends = {f: r for f, r in rows.items() if r["iwarp.rdmap.opcode"] and
             as_number(r["iwarp.rdmap.opcode"].split("|")[0]) in (3, 4, 5, 6)}
    check(len(sends) > 50, f"{len(sends)} Sends")
    for frame, r in sends.items():
        check(not r["_ws.malformed"], f"frame {frame} malformed: {r}")
        check(r["rpcordma.xid"] != "", f"frame {frame}: Wireshark's RPC-over-RDMA did not "
              f"decode it: {r}")
    # Wireshark 4.0 decodes the inline calls (READ among them); it does not show the WRITE calls,
    # whose data is in read chunks, as procedure 7 on this capture (why not: not investigated).
    procs = {r["nfs.procedure_v3"] for r in sends.values()} - {""}
    check({"1", "6"} <= procs, f"NFS GETATTR (1) and READ (6) calls not decoded: {procs}")


def test_smbdirect_fields(ts, args):
    """The synthetic SMB Direct sample (issue 14): every tagged segment names the SMB2 request
    whose buffer it lands in (region ULP "smb-direct"), a fragmented WRITE's included;
    Wireshark's own SMB Direct dissector still decodes every Send the plugin hands on (the
    negotiate messages, and SMB2 in the data transfer messages), none malformed."""
    cap = ts.stage(args.capture)
    rows = ts.fields(cap, ["iwarp.rdmap.opcode", "iwarp.ddp.t", "iwarp.ddp.region.ulp",
                           "iwarp.ddp.region.command", "smb_direct.version.min",
                           "smb_direct.data_length", "smb2.msg_id", "_ws.malformed"])
    tagged = {f: r for f, r in rows.items() if r["iwarp.ddp.t"] in ("1", "True")}
    check(len(tagged) == 17, f"{len(tagged)} tagged segments")  # 11 Writes, 6 Read Responses
    for frame, r in tagged.items():
        check(r["iwarp.ddp.region.ulp"] == "smb-direct", f"frame {frame}: {r}")
        check(r["iwarp.ddp.region.command"].startswith("SMB2 "), f"frame {frame}: {r}")
    check(tagged[14]["iwarp.ddp.region.command"] == "SMB2 READ mid 1", tagged[14])
    check(tagged[26]["iwarp.ddp.region.command"] == "SMB2 WRITE mid 2", tagged[26])
    sends = {f: r for f, r in rows.items() if r["iwarp.rdmap.opcode"] and
             as_number(r["iwarp.rdmap.opcode"].split("|")[0]) in (3, 4, 5, 6)}
    check(len(sends) == 14, f"{len(sends)} Sends")
    for frame, r in sends.items():
        check(not r["_ws.malformed"], f"frame {frame} malformed: {r}")
        check(r["smb_direct.version.min"] or r["smb_direct.data_length"],
              f"frame {frame}: Wireshark's SMB Direct did not decode it: {r}")
    # Every unfragmented data message, and the WRITE's last fragment, carries SMB2 to Wireshark.
    smb2 = [f for f, r in sends.items() if r["smb2.msg_id"]]
    check(len(smb2) == 11, f"SMB2 decoded in frames {smb2}")


def test_builtin_equal(ts, args):
    cap = ts.stage(args.capture)
    ours = ts.fields(cap, [o for o, _ in SHARED_FIELDS])
    theirs = ts.fields(cap, [b for _, b in SHARED_FIELDS], ["--disable-protocol", "iwarp.mpa"])
    common = 0
    for frame in sorted(ours):
        o, b = ours[frame], theirs.get(frame, {})
        # Compare frames where each side decoded exactly one DDP segment.
        if not o["iwarp.ddp.dv"] or not b.get("iwarp_ddp.dv") or "|" in o["iwarp.ddp.dv"] \
                or "|" in b["iwarp_ddp.dv"]:
            continue
        common += 1
        for of, bf in SHARED_FIELDS:
            ov, bv = o[of], b[bf]
            if ov == "" or bv == "":
                continue
            check(as_number(ov) == as_number(bv),
                  f"frame {frame}: {of}={ov} but built-in {bf}={bv}")
    ours_any = any(r["iwarp.ddp.dv"] for r in ours.values())
    theirs_any = any(r["iwarp_ddp.dv"] for r in theirs.values())
    check(common > 0 or not (ours_any and theirs_any),
          "no frame decoded by both the plugin and the built-in dissectors")
    print(f"{common} frames compared")


def analyzer_findings(analyzer, capture, extra=(), with_severity=False):
    """Like Tshark.experts(): the analyzer's findings as a multiset of (frame, code) or, with
    with_severity, (frame, code, severity as shown: a consequence of capture loss is a note)."""
    p = subprocess.run([analyzer, "analyze", capture, "--json"] + list(extra), capture_output=True,
                       text=True)
    check(p.returncode in (0, 1, 2), f"analyzer failed: {p.stderr}")
    doc = json.loads(p.stdout)
    return collections.Counter(
        (int(f["frame"]), f["code"]) + ((canon.effective_severity(f),) if with_severity else ())
        for f in doc["findings"])


def esp_keys(ts, capture):
    """An IPsec sample (samples/ipsec, issue 17): its keys for both sides, the analyzer's SA file
    and Wireshark's own ESP decryption (the esp_sa table in the profile). None for other
    captures. ESN samples get no keys on either side (a Wireshark 4.0 table cannot say ESN)."""
    base = re.sub(r"\.pcap$", "", capture)
    if not os.path.exists(base + ".esp_sa"):
        return None

    def wireshark_table():
        conf = os.path.join(ts.home, ".config", "wireshark")
        os.makedirs(conf, exist_ok=True)
        for d in (os.path.join(ts.home, ".config"), conf):
            os.chmod(d, 0o755)
        shutil.copy(base + ".esp_sa", os.path.join(conf, "esp_sa"))
        os.chmod(os.path.join(conf, "esp_sa"), 0o644)
        return ["-o", "esp.enable_encryption_decode:TRUE",
                "-o", "esp.enable_authentication_check:TRUE"]

    if not os.path.exists(base + ".expected.json"):
        # A real capture with its keys (samples/ipsec/lab-esp-*): the kernel's SAs as
        # `ip -s xfrm state` printed them for the analyzer, the same keys in Wireshark's table.
        if not os.path.exists(base + ".xfrm"):
            return None
        return ["--xfrm", base + ".xfrm"], wireshark_table()
    exp = json.load(open(base + ".expected.json"))
    scen = json.load(open(base + ".json"))
    if scen["esp"].get("esn"):
        return [], []
    analyzer = canon.esp_args(exp, os.path.dirname(capture))
    tshark = []
    if exp.get("esp_sa_file") or exp.get("xfrm_file"):
        tshark = wireshark_table()
    return analyzer, tshark


def test_findings_match(ts, args):
    check(args.analyzer, "--analyzer is required")
    cap = ts.stage(args.capture)
    # A sample may come with the regions its scenario knows: both sides get them.
    regions = re.sub(r"\.pcap$", ".regions.json", args.capture)
    extra, tshark_extra = [], ["-2"]
    if os.path.exists(regions):
        extra = ["--regions", regions]
        tshark_extra += ["-o", f"iwarp.mpa.regions_file:{ts.stage(regions)}"]
    keys = esp_keys(ts, args.capture)
    if keys:
        extra += keys[0]
        tshark_extra += keys[1]
    # Frame, code and severity (consequence flag included); the messages are free text.
    expected = analyzer_findings(args.analyzer, args.capture, extra, with_severity=True)
    if keys is not None:
        # esp.* come from the analyzer's ESP layer; under tshark, Wireshark's ESP dissector
        # checks the ESP packets and hands the plugin their TCP.
        expected = collections.Counter({k: n for k, n in expected.items()
                                        if not k[1].startswith("esp.")})
    got = ts.experts(cap, tshark_extra, with_severity=True)
    check(got == expected,
          f"expert infos differ from the analyzer's findings:\n  missing: "
          f"{sorted((expected - got).elements())}\n  extra: {sorted((got - expected).elements())}")
    print(f"{sum(expected.values())} findings matched")
    # `tshark -q -z expert` builds no protocol tree (the plugin asks for no field): the plugin
    # then learns each TCP header from its ip.proto wrapper alone, and must report the same.
    by_code = collections.Counter()
    for (_frame, code, _severity), n in got.items():
        by_code[code] += n
    summary = ts.run(["-r", cap, "-q", "-z", "expert"] + tshark_extra).stdout
    treeless = collections.Counter()
    for m in EXPERT_SUMMARY_ROW.finditer(summary):
        treeless[m.group(2)] += int(m.group(1))
    check(treeless == by_code,
          f"without a protocol tree (-q -z expert) the findings differ:\n  missing: "
          f"{sorted((by_code - treeless).elements())}\n  extra: "
          f"{sorted((treeless - by_code).elements())}")


def test_passes_agree(ts, args):
    cap = ts.stage(args.capture)
    # One tshark run per pass gives both the fields and the expert infos (CI time: two runs
    # where five gave the same output).
    one = ts.fields(cap, STABLE_FIELDS + EXPERT_FIELDS)
    late_pdu = ["iwarp.mpa.end_of_capture", "iwarp.mpa.released_in"]
    two = ts.fields(cap, STABLE_FIELDS + late_pdu + EXPERT_FIELDS, ["-2"])
    e1 = expert_counts(one)
    e2 = expert_counts(two)
    late = expert_counts(two, late_only=True)
    at_end = expert_counts(two, at_end_only=True)
    for rows in (one, two):
        for row in rows.values():
            for f in EXPERT_FIELDS:
                del row[f]
    for frame in sorted(set(one) | set(two)):
        # PDUs flushed at the end of the capture, or held behind capture loss that a later frame
        # declared, exist only for a second pass.
        if [two.get(frame, {}).pop(f, "") for f in late_pdu] != ["", ""]:
            continue
        check(one.get(frame) == two.get(frame),
              f"frame {frame}: one pass {one.get(frame)} vs two passes {two.get(frame)}")
    check(not (e1 - e2), f"one-pass expert infos missing in two passes: {sorted(e1 - e2)}")
    # A one-pass run shows a finding raised after its frame was printed (a PDU that completes
    # in a later frame, a hole declared capture loss later) on the frame that raised it, and
    # cannot show those of the end of the capture; everything else must agree.
    check(not ((e2 - e1) - late),
          f"two-pass-only expert infos not marked as reported late: {sorted((e2 - e1) - late)}")
    check(e2 - e1 == at_end, f"one pass lacks {sorted((e2 - e1).elements())}, of which only "
          f"{sorted(at_end.elements())} are reported at the end of the capture")


def fuzz_seeds(ts, args, seeds):
    cap = ts.stage(args.capture)
    # Light, medium and heavy corruption (probability per octet) for each seed.
    runs = [(rate, seed) for rate in ("0.005", "0.02", "0.1") for seed in seeds]
    for rate, seed in runs:
        out = os.path.join(ts.tmp, f"fuzz-{rate}-{seed}-{os.path.basename(cap)}")
        subprocess.run([EDITCAP, "-E", rate, "--seed", str(seed), cap, out], check=True,
                       capture_output=True)
        os.chmod(out, 0o644)
        # One pass and two; the second also runs the statistics tap over what it drew (one
        # tshark run fewer per rate than a run of its own, the same tap code).
        for extra in ([], ["-2", "-z", "ddpscope,stat"]):
            p = ts.run(extra + ["-r", out, "-V"])
            check("Malformed Packet: iWARP" not in p.stdout,
                  f"rate {rate} seed {seed}: the plugin threw while drawing")
        check("ddpscope iWARP statistics" in p.stdout,
              f"rate {rate} seed {seed}: no statistics after the two-pass run")


def test_fuzz(ts, args):
    """The suite's slice (<sample>.fuzz): seed 1 at the three rates."""
    fuzz_seeds(ts, args, (1,))


def test_fuzz_more(ts, args):
    """The slow tier's (<sample>.fuzz_more, label slow): seeds 2 and 3 at the three rates."""
    fuzz_seeds(ts, args, (2, 3))


def test_stats(ts, args):
    cap = ts.stage(args.capture)
    out = ts.run(["-r", cap, "-q", "-z", "ddpscope,stat"]).stdout
    check("ddpscope iWARP statistics" in out, out)
    # The segments the plugin analysed (was "Frames fed: 0": the plugin feeds TCP segments).
    m = re.search(r"TCP segments analysed: (\d+) \(up to frame (\d+)\)", out)
    check(m and int(m.group(1)) > 0 and int(m.group(2)) >= int(m.group(1)), out)
    check(re.search(r"findings: \d+ errors, \d+ warnings, \d+ notes", out), out)
    check(re.search(r"Stream 0: 10\.10\.1\.1:42742 <-> 10\.10\.1\.2:9999", out), out)
    check(re.search(r"Send\s+segments=4\s+messages=4", out), out)
    check(re.search(r"QN 0\s+MSN 1\.\.4", out), out)
    check(re.search(r"RDMA Read Request\s+segments=1", out), out)


def test_decode_as(ts, args):
    cap = ts.stage(args.capture)
    mid = os.path.join(ts.tmp, "midstream.pcap")
    subprocess.run([EDITCAP, "-r", cap, mid, "8-15"], check=True, capture_output=True)
    os.chmod(mid, 0o644)
    rows = ts.fields(mid, ["iwarp.ddp.msn", "iwarp.rdmap.opcode"],
                     ["-d", "tcp.port==9999,iwarp.mpa", "-o", "iwarp.mpa.midstream_crc:FALSE"])
    check(as_number(rows[1]["iwarp.ddp.msn"]) == 1 and as_number(rows[3]["iwarp.rdmap.opcode"]) == 1,
          f"mid-stream decode: {rows}")
    # Without the preference (auto) the CRC-off stream is framed all the same.
    auto = ts.fields(mid, ["iwarp.ddp.msn", "iwarp.rdmap.opcode"],
                     ["-d", "tcp.port==9999,iwarp.mpa"])
    check(auto == rows, f"mid-stream decode, CRC auto: {auto} vs {rows}")
    rows = ts.fields(mid, ["iwarp.ddp.msn"])
    check(all(r["iwarp.ddp.msn"] == "" for r in rows.values()),
          "mid-stream capture decoded without Decode As")


def rewrite_port(src, dst, old, new):
    """Copies a classic pcap (Ethernet/IPv4/TCP) with TCP port `old` replaced by `new`."""
    with open(src, "rb") as f:
        data = bytearray(f.read())
    endian = "<" if data[:4] == b"\xd4\xc3\xb2\xa1" else ">"
    pos = 24
    while pos + 16 <= len(data):
        caplen = struct.unpack_from(endian + "I", data, pos + 8)[0]
        frame = pos + 16
        if caplen >= 14 + 20 + 4 and data[frame + 12:frame + 14] == b"\x08\x00":
            ihl = (data[frame + 14] & 0x0F) * 4
            if data[frame + 14 + 9] == 6:
                tcp = frame + 14 + ihl
                for off in (0, 2):
                    if struct.unpack_from(">H", data, tcp + off)[0] == old:
                        struct.pack_into(">H", data, tcp + off, new)
        pos = frame + caplen
    with open(dst, "wb") as f:
        f.write(data)


def test_wins_over_port(ts, args):
    cap = ts.stage(args.capture)
    moved = os.path.join(ts.tmp, "port4420.pcap")
    rewrite_port(cap, moved, 9999, 4420)
    os.chmod(moved, 0o644)
    for extra in ([], ["-2"]):
        rows = ts.fields(moved, ["iwarp.mpa.key", "iwarp.ddp.msn", "nvme-tcp.type"], extra)
        check(rows[4]["iwarp.mpa.key"] == "MPA ID Req Frame", f"{extra} frame 4: {rows[4]}")
        check(as_number(rows[8]["iwarp.ddp.msn"]) == 1, f"{extra} frame 8: {rows[8]}")
        check(all(r["nvme-tcp.type"] == "" for r in rows.values()),
              f"NVMe/TCP still decodes the iWARP stream: {rows}")


def test_limit_pref(ts, args):
    """An engine cap set as a preference (-o iwarp.mpa.NAME:N) raises engine.limit-reached at
    the frame the analyzer's --limit NAME=N reports, and the analysis goes on."""
    check(args.analyzer, "--analyzer is required")
    cap = ts.stage(args.capture)
    listed = ts.run(["-G", "defaultprefs"]).stdout
    for name in ("max_streams", "max_regions", "reassembly_window", "max_message_records"):
        check(re.search(rf"^#iwarp\.mpa\.{name}: \d+$", listed, re.M),
              f"preference iwarp.mpa.{name} not registered")
    plain = ts.experts(cap, ["-2"])
    check(not any(code == "engine.limit-reached" for _, code in plain),
          "engine.limit-reached without a small cap")
    got = ts.experts(cap, ["-2", "-o", "iwarp.mpa.max_message_records:2"])
    expected = analyzer_findings(args.analyzer, args.capture,
                                 ["--limit", "max_message_records=2"])
    hits = [frame for frame, code in expected if code == "engine.limit-reached"]
    check(len(hits) == 1, f"the analyzer should hit the cap once: {expected}")
    check(got[(hits[0], "engine.limit-reached")] == 1,
          f"no engine.limit-reached expert info in frame {hits[0]}: {sorted(got)}")
    check(got == expected, f"expert infos differ from the analyzer's under the same cap:\n"
          f"  missing: {sorted((expected - got).elements())}\n"
          f"  extra: {sorted((got - expected).elements())}")
    check(any(frame > hits[0] for frame, code in got if code != "engine.limit-reached"),
          "no finding after the cap was hit")
    print(f"engine.limit-reached in frame {hits[0]}, {sum(got.values())} expert infos")



def finding_verdicts(ts, capture, extra=()):
    """(frame, code, verdict, RFC's verdict, matching profiles) of every finding a two-pass run
    draws, from -T json in tree order: each iwarp.mpa.finding field opens one, the verdict fields
    that follow it belong to it (plugin/README.md, "Data Sink profile")."""
    out = ts.run(list(extra) + ["-2", "-r", capture, "-T", "json"]).stdout
    found = []

    class Obj(list):
        """A JSON object as its (key, value) pairs: a tree repeats keys."""

    slot = {"iwarp.mpa.finding.verdict": 2, "iwarp.mpa.finding.rfc_verdict": 3,
            "iwarp.mpa.finding.matching_profiles": 4}

    def walk(node, frame):
        items = node if isinstance(node, Obj) else [(None, v) for v in node]
        for key, value in items:
            if key == "frame.number" and isinstance(value, str):
                frame = int(value)
            if key == "iwarp.mpa.finding" and isinstance(value, str):
                found.append([frame, value, "", "", ""])
            elif key in slot and isinstance(value, str):
                check(found and found[-1][0] == frame, f"frame {frame}: {key} without a finding")
                found[-1][slot[key]] = value
            elif isinstance(value, list):
                frame = walk(value, frame)
        return frame

    for packet in json.loads(out, object_pairs_hook=Obj):
        walk(packet, None)
    return collections.Counter(tuple(f) for f in found)


def analyzer_verdicts(doc):
    """finding_verdicts() as the analyzer's --sink-profile JSON says them."""
    found = collections.Counter()
    for f in doc["findings"]:
        verdict, rfc, matching = "", "", ""
        if f["code"] == "rdmap.terminate":
            if f.get("matches") is not None:
                matching = ",".join(f["matches"]) or "none"
        elif f.get("sink_outcome"):
            verdict = ("Terminate " + f["terminate"]["name"]
                       if f["sink_outcome"] == "terminate" and f.get("terminate")
                       else "no Terminate: " + f["sink_outcome"])
        elif f.get("terminate"):
            verdict = "Terminate " + f["terminate"]["name"]
        if f.get("rfc_terminate"):
            rfc = "Terminate " + f["rfc_terminate"]["name"]
        found[(int(f["frame"]), f["code"], verdict, rfc, matching)] += 1
    return found


def test_sink_profile(ts, args):
    """Preference iwarp.mpa.sink_profile (issue 40): every finding's verdict (and RFC's where it
    differs, and for a peer's Terminate the profiles that predicted it) is the one `ddpscope
    analyze --sink-profile P --json` reports; siw changes the verdicts of these captures, the
    default (rfc) does not."""
    check(args.analyzer, "--analyzer is required")
    check(args.captures, "captures are required")
    listed = ts.run(["-G", "defaultprefs"]).stdout
    check(re.search(r"^#iwarp\.mpa\.sink_profile: RFC ", listed, re.M),
          "preference iwarp.mpa.sink_profile (default rfc) not registered")
    for capture in args.captures:
        cap = ts.stage(capture)
        extra, tshark_extra = regions_args(ts, capture)
        shown = {}
        for name, prefs in (("default", []), ("rfc", ["-o", "iwarp.mpa.sink_profile:rfc"]),
                            ("siw", ["-o", "iwarp.mpa.sink_profile:siw"])):
            profile = "rfc" if name == "default" else name
            doc = analyzer_report(args.analyzer, capture, extra + ["--sink-profile", profile])
            check(doc.get("sink_profile") == profile, f"{capture}: analyzer report {doc.keys()}")
            expected = analyzer_verdicts(doc)
            got = finding_verdicts(ts, cap, tshark_extra + prefs)
            check(got == expected, f"{capture} ({name}): verdicts differ from the analyzer's:\n"
                  f"  missing: {sorted((expected - got).elements())}\n"
                  f"  extra: {sorted((got - expected).elements())}")
            experts = ts.fields(cap, ["_ws.expert.message"], ["-2"] + tshark_extra + prefs)
            tails = " ".join(r["_ws.expert.message"] for r in experts.values())
            check(f"[{profile} sink: " in tails or f"[{profile} sink predicted" in tails,
                  f"{capture} ({name}): no expert info names the {profile} sink's verdict")
            shown[name] = got
        check(shown["default"] == shown["rfc"], f"{capture}: the default is not the rfc profile")
        differ = shown["siw"] - shown["rfc"]
        check(differ, f"{capture}: -o iwarp.mpa.sink_profile:siw changed no verdict")
        check(any(rfc for _, _, _, rfc, _ in differ) or any(m for *_, m in differ),
              f"{capture}: siw's differing verdicts show neither RFC's nor a prediction: {differ}")
        print(f"{os.path.basename(capture)}: siw changes {sum(differ.values())} verdicts, e.g. "
              f"{sorted(differ)[0]}")


# --- issue 16: the plugin on faults ------------------------------------------------------------

# Expert twin suffix by the analyzer's JSON `consequence_of` (plugin/README.md, "expert infos").
TWIN_SUFFIX = {None: "", "gap": ".after-gap", "crc": ".after-crc"}


def analyzer_report(analyzer, capture, extra=()):
    p = subprocess.run([analyzer, "analyze", capture, "--json"] + list(extra), capture_output=True,
                       text=True)
    check(p.returncode in (0, 1), f"analyzer failed on {capture}: {p.stderr}")
    return json.loads(p.stdout)


def regions_args(ts, capture):
    """The regions a sample's scenario knows, for the analyzer and for tshark."""
    regions = re.sub(r"\.pcap$", ".regions.json", capture)
    if not os.path.exists(regions):
        return [], []
    return ["--regions", regions], ["-o", f"iwarp.mpa.regions_file:{ts.stage(regions)}"]


def expert_names(ts, capture, extra=(), late=None, at_end=None):
    """(frame, finding code, expert info name) of every ddpscope expert info, from -T json (the
    only output that names the expert field), on the frame that shows it. `late`, a Counter,
    also gets the (frame, finding code) of those reported after their frame, as
    Tshark.experts(late_only=True) from the same run; `at_end` those of the end of the
    capture."""
    out = ts.run(list(extra) + ["-r", capture, "-T", "json"]).stdout
    found = collections.Counter()

    class Obj(list):
        """A JSON object as its (key, value) pairs: a tree repeats keys such as _ws.expert."""

    def walk(node, frame):
        items = node if isinstance(node, Obj) else [(None, v) for v in node]
        for key, value in items:
            if key == "frame.number" and isinstance(value, str):
                frame = int(value)
            if key == "_ws.expert" and isinstance(value, Obj):
                d = dict(value)
                m = EXPERT_CODE.match(d.get("_ws.expert.message", ""))
                names = [k for k, _ in value if k.startswith("iwarp.")]
                if m:
                    check(len(names) == 1, f"frame {frame}: expert info without one name: {d}")
                    found[(frame, m.group(1), names[0])] += 1
                    if late is not None and REPORTED_LATE.search(d["_ws.expert.message"]):
                        late[(frame, m.group(1))] += 1
                    if at_end is not None and REPORTED_AT_END.search(d["_ws.expert.message"]):
                        at_end[(frame, m.group(1))] += 1
            elif isinstance(value, list):
                frame = walk(value, frame)
        return frame

    for packet in json.loads(out, object_pairs_hook=Obj):
        walk(packet, None)
    return found


def test_frames_agree(ts, args):
    """Every finding's expert info lies on the frame the analyzer's JSON names (Finding::frame),
    under the name of its cause, for every sample given: a two-pass run shows exactly the
    analyzer's (frame, code) multiset; a one-pass run shows the same, those reported in a later
    frame on that frame (LEARNT_HERE), and lacks only those of the end of the capture
    (plugin/README.md, "One pass, two passes")."""
    check(args.analyzer, "--analyzer is required")
    check(args.captures, "captures are required")
    compared = 0
    for capture in args.captures:
        cap = ts.stage(capture)
        extra, tshark_extra = regions_args(ts, capture)
        doc = analyzer_report(args.analyzer, capture, extra)
        expected = collections.Counter(
            (int(f["frame"]), f["code"],
             f"iwarp.{f['code']}{TWIN_SUFFIX[f.get('consequence_of')]}")
            for f in doc["findings"])
        late, at_end = collections.Counter(), collections.Counter()
        two = expert_names(ts, cap, ["-2"] + tshark_extra, late, at_end)
        check(two == expected,
              f"{capture}: two-pass expert infos differ from the analyzer's findings:\n"
              f"  missing: {sorted((expected - two).elements())}\n"
              f"  extra: {sorted((two - expected).elements())}")
        codes = collections.Counter({(fr, c): n for (fr, c, _), n in expected.items()})
        one = ts.experts(cap, tshark_extra)
        check(not (one - codes), f"{capture}: one-pass expert infos on other frames than the "
              f"analyzer names: {sorted((one - codes).elements())}")
        check(codes - one == at_end, f"{capture}: one-pass run lacks "
              f"{sorted((codes - one).elements())}, of which only {sorted(at_end.elements())} "
              f"are reported at the end of the capture")
        compared += sum(expected.values())
    print(f"{len(args.captures)} captures, {compared} findings on their frames")


def scenario_of(capture):
    path = re.sub(r"\.pcap$", ".json", capture)
    with open(path) as f:
        return json.load(f)


SEND_OPS = ("send", "advertise_rping", "send_invalidate", "send_se", "send_se_invalidate")


def test_crc_not_placed(ts, args):
    """fault-crc: each FPDU whose CRC the scenario corrupted shows its DDP/RDMAP header with the
    values the scenario sent, marked not placed, with no placement analysis, its
    mpa.crc-mismatch on its own frame in one pass too; the analyzer's detail names it."""
    check(args.analyzer, "--analyzer is required")
    cap = ts.stage(args.capture)
    scenario = scenario_of(args.capture)
    conn = scenario["connections"][0]
    # What the scenario sent in each corrupted FPDU (the sender, and the header fields).
    wanted = []
    msn = {"client": 0, "server": 0}
    for op in scenario["operations"]:
        who = op["from"]
        if op["op"] in SEND_OPS:
            msn[who] += 1
        if not op.get("fault", {}).get("corrupt_crc"):
            continue
        port = str(conn[who]["port"])
        if op["op"] in SEND_OPS:
            wanted.append((port, {"iwarp.ddp.t": 0, "iwarp.ddp.qn": 0, "iwarp.ddp.msn": msn[who],
                                  "iwarp.ddp.mo": 0, "iwarp.rdmap.opcode": 3}, None))
        elif op["op"] == "write":
            wanted.append((port, {"iwarp.ddp.t": 1, "iwarp.ddp.stag": int(op["stag"], 0),
                                  "iwarp.rdmap.opcode": 0},
                           (int(op["to"], 0), op.get("fault", {}).get("segment", 0))))
    check(len(wanted) == 2, f"scenario {args.capture}: expected a Send and a Write corrupted")
    doc = analyzer_report(args.analyzer, args.capture)
    crc = [f for f in doc["findings"] if f["code"] == "mpa.crc-mismatch"]
    check(len(crc) == len(wanted), f"analyzer: {crc}")
    fields = ["tcp.srcport", "iwarp.ddp.t", "iwarp.ddp.stag", "iwarp.ddp.to", "iwarp.ddp.qn",
              "iwarp.ddp.msn", "iwarp.ddp.mo", "iwarp.rdmap.opcode", "iwarp.ddp.not_placed",
              "iwarp.ddp.placed", "iwarp.ddp.region", "iwarp.ddp.message",
              "iwarp.ddp.payload_length", "iwarp.mpa.crc.status", "_ws.col.Info"]
    builtin = ts.fields(cap, [b for _, b in SHARED_FIELDS], ["--disable-protocol", "iwarp.mpa"])
    one_pass = ts.experts(cap)
    for extra in ([], ["-2"]):
        rows = ts.fields(cap, fields, extra)
        for (port, header, tagged), finding in zip(wanted, crc):
            frame = finding["frame"]
            r = rows[frame]
            check(r["tcp.srcport"] == port, f"frame {frame} is not from port {port}: {r}")
            for name, value in header.items():
                check(as_number(r[name]) == value, f"{extra} frame {frame}: {name}={r[name]}, "
                      f"the scenario sent {value}: {r}")
            if tagged:
                # The corrupted segment's TO: the Write's base TO plus the segments before it,
                # as long as the first segment (the one frame before, same sender).
                base, segment = tagged
                first = next(rows[f] for f in sorted(rows) if f < frame
                             and as_number(rows[f]["iwarp.ddp.to"]) == base)
                seg_len = as_number(first["iwarp.ddp.payload_length"])
                check(as_number(r["iwarp.ddp.to"]) == base + segment * seg_len,
                      f"frame {frame}: TO {r['iwarp.ddp.to']}, the scenario's segment {segment} "
                      f"of a Write at {base:#x} starts at {base + segment * seg_len:#x}")
            check(r["iwarp.ddp.not_placed"].startswith("MPA CRC mismatch"),
                  f"{extra} frame {frame}: no not-placed marker: {r}")
            check(r["iwarp.ddp.placed"] in ("False", "0"), f"frame {frame} placed: {r}")
            check(r["iwarp.ddp.region"] == "" and r["iwarp.ddp.message"] == "",
                  f"frame {frame}: placement analysis claimed for a dropped FPDU: {r}")
            check("[CRC error: not placed]" in r["_ws.col.Info"], f"frame {frame} info: {r}")
            check(as_number(r["iwarp.mpa.crc.status"]) == 0, f"frame {frame} CRC status: {r}")
            # The built-in dissectors decode the same header there.
            for ours, theirs in SHARED_FIELDS:
                if r.get(ours, "") and builtin[frame].get(theirs, ""):
                    check(as_number(r[ours]) == as_number(builtin[frame][theirs]),
                          f"frame {frame}: {ours}={r[ours]}, built-in {theirs}="
                          f"{builtin[frame][theirs]}")
            check(one_pass[(frame, "mpa.crc-mismatch")] == 1,
                  f"one pass: no mpa.crc-mismatch on frame {frame}: {sorted(one_pass)}")
    # The analyzer's detail names the dropped FPDU's header too.
    check("Send QN 0 MSN" in crc[0]["message"], crc[0]["message"])
    check(f"STag 0x{wanted[1][1]['iwarp.ddp.stag']:08x}" in crc[1]["message"], crc[1]["message"])
    print(f"frames {[f['frame'] for f in crc]}: dropped FPDUs decoded and marked")


def test_gap_first_fpdu(ts, args):
    """After octets missing from the capture (tcp.gap), the first FPDU the built-in dissectors
    decode in that direction is decoded by the plugin too, with the same header, and marked as
    the FPDU with which framing resumed after capture loss."""
    check(args.analyzer, "--analyzer is required")
    cap = ts.stage(args.capture)
    doc = analyzer_report(args.analyzer, args.capture)
    gaps = [f for f in doc["findings"] if f["code"] == "tcp.gap"]
    check(len(gaps) == 1, f"expected one tcp.gap: {doc['findings']}")
    gap_frame, port = gaps[0]["frame"], gaps[0]["from"].rsplit(":", 1)[1]
    ours = ts.fields(cap, ["tcp.srcport", "iwarp.mpa.framing_resumed", "iwarp.mpa.resync_skipped",
                           "iwarp.mpa.released_in", "tcp.ack", "tcp.len"]
                     + [o for o, _ in SHARED_FIELDS], ["-2"])
    theirs = ts.fields(cap, ["tcp.srcport"] + [b for _, b in SHARED_FIELDS],
                       ["--disable-protocol", "iwarp.mpa"])
    first = next((f for f in sorted(theirs) if f >= gap_frame and theirs[f]["tcp.srcport"] == port
                  and theirs[f]["iwarp_ddp.dv"]), None)
    check(first is not None, "the built-in dissectors decode nothing after the gap")
    r = ours[first]
    check(r["iwarp.ddp.dv"] != "", f"frame {first} (first FPDU after the gap in frame "
          f"{gap_frame}) not decoded by the plugin: {r}")
    for o, b in SHARED_FIELDS:
        if theirs[first][b] and "|" not in r[o]:
            check(as_number(r[o]) == as_number(theirs[first][b]),
                  f"frame {first}: {o}={r[o]}, built-in {b}={theirs[first][b]}")
    check(r["iwarp.mpa.framing_resumed"] in ("True", "1"),
          f"frame {first}: not marked as where framing resumed: {r}")
    resumed = [f for f in sorted(ours) if ours[f]["iwarp.mpa.framing_resumed"]]
    check(resumed == [first], f"framing_resumed on {resumed}, expected only {first}")
    # The FPDU was held behind the hole until the receiver's ACK past it showed the hole is
    # capture loss (the peer has those octets): released by the first ACK from the other side.
    acks = [f for f in sorted(ours) if f > first and ours[f]["tcp.srcport"] != port
            and ours[f]["tcp.len"] == "0"]
    check(acks and r["iwarp.mpa.released_in"] == str(acks[0]),
          f"frame {first}: released_in={r['iwarp.mpa.released_in']!r}, expected the first ACK "
          f"after it ({acks[:1]})")
    detail = ts.run(["-2", "-r", cap, "-V", "-Y", f"frame.number=={first}"]).stdout
    check("framing resumed after capture loss" in detail,
          f"frame {first}: the tree does not say framing resumed after capture loss")
    print(f"gap in frame {gap_frame}; first FPDU after it in frame {first}, "
          f"{r['iwarp.mpa.resync_skipped']} octets skipped")


def test_one_pass_held(ts, args):
    """Issue 39: in one pass (tshark without -2, Wireshark's first pass) a segment TCP holds
    behind a hole (capture loss not yet declared, or reordering) shows its DDP/RDMAP header where
    it arrives, as the built-in dissectors do, marked iwarp.mpa.held_behind; two passes draw
    core's own PDU there instead (released_in), with the same header."""
    cap = ts.stage(args.capture)
    fields = [o for o, _ in SHARED_FIELDS]
    one = ts.fields(cap, fields + ["iwarp.mpa.held_behind"])
    two = ts.fields(cap, fields + ["iwarp.mpa.held_behind", "iwarp.mpa.released_in"], ["-2"])
    theirs = ts.fields(cap, [b for _, b in SHARED_FIELDS], ["--disable-protocol", "iwarp.mpa"])
    held = [f for f in sorted(one) if one[f]["iwarp.mpa.held_behind"]]
    released = [f for f in sorted(two) if two[f]["iwarp.mpa.released_in"]]
    check(held and held == released,
          f"one pass marks frames {held} held; two passes release PDUs in frames {released}")
    for f in sorted(theirs):
        b = theirs[f]
        if not b["iwarp_ddp.dv"] or "|" in b["iwarp_ddp.dv"]:
            continue
        r = one.get(f, {})
        check(r.get("iwarp.ddp.dv"), f"frame {f}: the built-in decodes a DDP header, one pass "
              f"shows none: {r}")
        for o, bf in SHARED_FIELDS:
            if b[bf] and r.get(o) and "|" not in r[o]:
                check(as_number(r[o]) == as_number(b[bf]),
                      f"frame {f}: one pass {o}={r[o]}, built-in {bf}={b[bf]}")
    for f in held:
        check(not two[f]["iwarp.mpa.held_behind"],
              f"frame {f}: two passes still draw the held decode: {two[f]}")
        for o in fields:
            check(one[f][o] == two[f][o], f"frame {f}: held {o}={one[f][o]}, core's {two[f][o]}")
    print(f"frames held in one pass: {held}, decoded as the built-in and as core's PDUs")


def test_one_pass_gap(ts, args):
    """Issue 39: a one-pass run (tshark without -2, a live capture) shows a hole's tcp.gap. It
    is known only when a later frame declares the hole capture loss (fault-gap: the receiver's
    ACK past it; until then a retransmission or a reordered segment may fill it, as on
    fault-reorder, which holds the same hole when its frame is printed), so the one-pass run
    shows it on that frame, under the same expert name, naming the finding's own frame
    (iwarp.mpa.finding.frame), where two passes show it. On fault-reorder, whose hole a
    reordered segment fills, both runs show the same on the frame held behind it: no tcp.gap."""
    check(args.analyzer, "--analyzer is required")
    for capture in args.captures:
        cap = ts.stage(capture)
        doc = analyzer_report(args.analyzer, capture)
        gaps = [f for f in doc["findings"] if f["code"] == "tcp.gap"]
        two = expert_names(ts, cap, ["-2"])
        one = expert_names(ts, cap)
        fields = ["iwarp.mpa.finding", "iwarp.mpa.finding.reported_in", "iwarp.mpa.held_behind"]
        rows1 = ts.fields(cap, fields)
        rows2 = ts.fields(cap, fields, ["-2"])
        name = os.path.basename(capture)
        if not gaps:
            # fault-reorder: the frame one pass shows held behind the hole shows what two
            # passes show there.
            held = [f for f in sorted(rows1) if rows1[f]["iwarp.mpa.held_behind"]]
            check(held, f"{name}: no frame held behind a hole in one pass")
            for f in held:
                here1 = sorted(k for k in one.elements() if k[0] == f)
                here2 = sorted(k for k in two.elements() if k[0] == f)
                check(here1 == here2, f"{name} frame {f}: one pass {here1}, two passes {here2}")
            check(not [k for k in one if k[1] == "tcp.gap"] and
                  not [k for k in two if k[1] == "tcp.gap"],
                  f"{name}: a tcp.gap where a reordered segment filled the hole: {one} {two}")
            print(f"{name}: frames {held} held behind a hole; the same in one and two passes")
            continue
        for g in gaps:
            own = g["frame"]
            check(two[(own, "tcp.gap", "iwarp.tcp.gap")] == 1,
                  f"{name}: two passes show no tcp.gap on frame {own}: {sorted(two)}")
            learnt = int(rows2[own]["iwarp.mpa.finding.reported_in"].split("|")[0])
            check(learnt > own, f"{name}: tcp.gap of frame {own} reported in frame {learnt}")
            check(one[(learnt, "tcp.gap", "iwarp.tcp.gap")] == 1,
                  f"{name}: one pass shows no tcp.gap on frame {learnt}, which declared the "
                  f"hole of frame {own} capture loss: {sorted(one)}")
            r = ts.fields(cap, ["iwarp.mpa.finding", "iwarp.mpa.finding.frame"])[learnt]
            check("tcp.gap" in r["iwarp.mpa.finding"].split("|") and
                  str(own) in r["iwarp.mpa.finding.frame"].split("|"),
                  f"{name} frame {learnt}: one pass does not name frame {own}: {r}")
            print(f"{name}: tcp.gap of frame {own} in one pass on frame {learnt} (two passes: "
                  f"on {own}, reported in {learnt})")


def test_mpa_probes(ts, args):
    """MPA probes against a listener (issue 39; tests/plugin/mpa_probes.py), plain and as a real
    prober's capture may differ (mpa_probes.VARIANTS): in one pass and in two, every MPA
    Request and Reply is decoded (iwarp.mpa.key and .rev as sent, the C flag of
    the CRC probe), the invalid Request carries the analyzer's finding on the analyzer's frame,
    and the foreign-key probe is not claimed (neither the analyzer nor the built-in take it)."""
    check(args.analyzer, "--analyzer is required")
    import mpa_probes
    runs = [(False, ()), (True, ())] + [(False, (v,)) for v in mpa_probes.VARIANTS]
    for one_port, variants in runs:
        suffix = "".join(f"-{v}" for v in variants) + ("-one-port" if one_port else "")
        cap = os.path.join(ts.tmp, f"mpa-probes{suffix}.pcap")
        where = mpa_probes.write(cap, one_port, variants)
        os.chmod(cap, 0o644)
        mpa_probes_check(ts, args, cap, where)


def mpa_probes_check(ts, args, cap, where):
    """test_mpa_probes on one capture (`where`: mpa_probes.write's answer)."""
    import mpa_probes
    doc = analyzer_report(args.analyzer, cap)
    want = sorted((f["frame"], f["code"]) for f in doc["findings"])
    check(("mpa.handshake-invalid", where[1][1]) in [(c, f) for f, c in want],
          f"the analyzer does not flag the wrong revision: {want}")
    builtin = ts.fields(cap, ["iwarp_mpa.key.req"], ["-o", "iwarp.mpa.use_builtin:TRUE",
                                                 "--disable-protocol", "iwarp.mpa"])
    for extra in ([], ["-2"]):
        rows = ts.fields(cap, ["iwarp.mpa.key", "iwarp.mpa.rev", "iwarp.mpa.flags.c",
                               "iwarp.mpa.finding"], extra)
        passes = "two passes" if extra else "one pass"
        for (name, rev, crc, answered), (port, req, rep) in zip(mpa_probes.PROBES, where):
            if rev is None:
                check(not rows[req]["iwarp.mpa.key"] and not builtin[req]["iwarp_mpa.key.req"],
                      f"{passes}: probe {name!r} (frame {req}) decoded as MPA: {rows[req]}")
                continue
            for frame, key in ((req, "Req"), (rep, "Rep")):
                if frame is None:
                    continue
                r = rows[frame]
                check(f"MPA ID {key} Frame" in r["iwarp.mpa.key"] and as_number(r["iwarp.mpa.rev"])
                      == rev, f"{passes}: probe {name!r} frame {frame} not decoded: {r}")
                check((r["iwarp.mpa.flags.c"] in ("True", "1")) == crc,
                      f"{passes}: probe {name!r} frame {frame}: C flag {r['iwarp.mpa.flags.c']!r}")
            check(answered == (rep is not None), f"probe {name!r}: reply frame {rep}")
        got = sorted((f, c) for f, r in rows.items() for c in r["iwarp.mpa.finding"].split("|")
                     if c)
        check(got == want, f"{passes}: findings {got}, the analyzer's {want}")
    print(f"{os.path.basename(cap)}: {len(where)} probes, Requests and Replies decoded in one "
          f"and two passes; findings {want}")


def test_twin_names(ts, args):
    """Expert twins are named after their cause: both registered per finding; on fault-crc the
    notes the dropped FPDUs caused are .after-crc (not .after-gap), on fault-gap the note capture
    loss caused is .after-gap. Display filters select by these names."""
    check(args.analyzer, "--analyzer is required")
    listed = ts.run(["-G", "fields"]).stdout
    for name in ("iwarp.ddp.message-incomplete", "iwarp.ddp.message-incomplete.after-gap",
                 "iwarp.ddp.message-incomplete.after-crc"):
        check(re.search(rf"\t{re.escape(name)}\t", listed), f"expert field {name} not registered")
    by_cause = collections.Counter()
    for capture in args.captures:
        cap = ts.stage(capture)
        doc = analyzer_report(args.analyzer, capture)
        names = expert_names(ts, cap, ["-2"])
        for f in doc["findings"]:
            cause = f.get("consequence_of")
            if cause is None:
                continue
            by_cause[cause] += 1
            want = f"iwarp.{f['code']}{TWIN_SUFFIX[cause]}"
            check(names[(f["frame"], f["code"], want)] >= 1,
                  f"{capture} frame {f['frame']}: {f['code']} caused by {cause} is not {want}: "
                  f"{sorted(names)}")
            # A display filter on the name finds the frame; the other twin's does not.
            other = ".after-gap" if cause == "crc" else ".after-crc"
            hits = ts.fields(cap, [], ["-2", "-Y", want])
            check(f["frame"] in hits, f"{capture}: -Y {want} does not select frame {f['frame']}")
            miss = ts.fields(cap, [], ["-2", "-Y", f"iwarp.{f['code']}{other}"])
            check(f["frame"] not in miss, f"{capture}: -Y iwarp.{f['code']}{other} selects "
                  f"frame {f['frame']}")
    check(by_cause["crc"] > 0 and by_cause["gap"] > 0,
          f"the captures should hold findings of both causes: {dict(by_cause)}")
    print(f"twins checked: {dict(by_cause)}")

PPID_DDP_SEGMENT = "16"
PPID_SESSION_CONTROL = "17"


def sctp_counts(ts, cap):
    """Per frame: PPID 16 and 17 user messages, DDP segments and session control messages drawn,
    and whether the frame is Malformed."""
    rows = ts.fields(cap, ["sctp.data_payload_proto_id", "iwarp.ddp.dv",
                           "iwarp.sctp.function", "iwarp.rdmap.opcode", "_ws.malformed",
                           "iwarp.ddp.placed", "iwarp.ddp.region", "iwarp.sctp.ddp_ssn"])
    out = {}
    for frame, r in rows.items():
        ppids = r["sctp.data_payload_proto_id"].split("|") if r["sctp.data_payload_proto_id"] \
            else []
        out[frame] = {
            "ddp_messages": ppids.count(PPID_DDP_SEGMENT),
            "session_messages": ppids.count(PPID_SESSION_CONTROL),
            "ddp": len(r["iwarp.ddp.dv"].split("|")) if r["iwarp.ddp.dv"] else 0,
            "opcodes": len(r["iwarp.rdmap.opcode"].split("|")) if r["iwarp.rdmap.opcode"] else 0,
            "sessions": r["iwarp.sctp.function"].split("|")
            if r["iwarp.sctp.function"] else [],
            "malformed": bool(r["_ws.malformed"]),
            "analysed": len(r["iwarp.ddp.placed"].split("|")) if r["iwarp.ddp.placed"] else 0,
            "regions": len(r["iwarp.ddp.region"].split("|")) if r["iwarp.ddp.region"] else 0,
            "ssns": len(r["iwarp.sctp.ddp_ssn"].split("|")) if r["iwarp.sctp.ddp_ssn"] else 0,
        }
    return out


def test_sctp_ddp(ts, args):
    """DDP over SCTP (RFC 5043, issue 13): every PPID 16 user message is drawn as one DDP segment
    with its RDMAP opcode (iwarp.ddp.* / iwarp.rdmap.*, the fields of MPA's segments) and core's
    analysis of it (the SCTP LLP fed from the frames), every PPID 17 message as
    iwarp.sctp, each with its DDP-SSN (iwarp.sctp.ddp_ssn, RFC 5043 §5.2.1: the DDP header starts
    at octet 2), and no frame is Malformed. The setup is one Session Initiate, then one Accept,
    and a Session Terminate ends it; tagged segments land in regions rping advertised."""
    cap = ts.stage(args.capture)
    counts = sctp_counts(ts, cap)
    ddp_messages = sum(c["ddp_messages"] for c in counts.values())
    check(ddp_messages > 0, "no PPID 16 user message in the capture")
    sessions = []
    for frame, c in sorted(counts.items()):
        check(not c["malformed"], f"frame {frame}: Malformed")
        check(c["ddp"] == c["ddp_messages"],
              f"frame {frame}: {c['ddp_messages']} PPID 16 messages, {c['ddp']} DDP segments drawn")
        check(c["opcodes"] == c["ddp_messages"],
              f"frame {frame}: {c['ddp_messages']} PPID 16 messages, {c['opcodes']} RDMAP opcodes")
        check(c["analysed"] == c["ddp_messages"],
              f"frame {frame}: {c['ddp_messages']} PPID 16 messages, {c['analysed']} analysed")
        check(len(c["sessions"]) == c["session_messages"],
              f"frame {frame}: {c['session_messages']} PPID 17 messages, "
              f"{len(c['sessions'])} session control messages drawn")
        check(c["ssns"] == c["ddp_messages"] + c["session_messages"],
              f"frame {frame}: {c['ddp_messages'] + c['session_messages']} PPID 16/17 messages, "
              f"{c['ssns']} DDP-SSNs drawn")
        sessions += c["sessions"]
    names = ts.fields(cap, ["iwarp.sctp.function"], ["-Y", "iwarp.sctp.function"])
    regions = sum(c["regions"] for c in counts.values())
    check(regions > 0, "no tagged segment placed in a known region")
    check(len(sessions) in (3, 4),
          f"expected Initiate, Accept and one or two Terminates, got function codes {sessions}")
    out = ts.run(["-r", cap, "-Y", "iwarp.sctp.function", "-T", "fields", "-e", "_ws.col.Info"])
    infos = out.stdout.splitlines()
    check(len(infos) in (3, 4) and "Initiate" in infos[0] and "Accept" in infos[1]
          and all("Terminate" in i for i in infos[2:]),
          f"session control in order Initiate, Accept, Terminate: {infos}")
    print(f"{ddp_messages} DDP segments over SCTP ({regions} in regions), {len(names)} session "
          "control messages")


def rewrite_udp_port(src, dst, old, new):
    """Copies a classic pcap (microsecond or nanosecond; Ethernet, IPv4 or IPv6, UDP) with UDP
    port `old` replaced by `new`,
    the UDP checksum adjusted (RFC 1624) where there is one."""
    with open(src, "rb") as f:
        data = bytearray(f.read())
    endian = "<" if data[:4] in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
    pos = 24
    while pos + 16 <= len(data):
        caplen = struct.unpack_from(endian + "I", data, pos + 8)[0]
        frame = pos + 16
        ethertype = data[frame + 12:frame + 14]
        udp = None
        if ethertype == b"\x08\x00" and data[frame + 14 + 9] == 17:
            udp = frame + 14 + (data[frame + 14] & 0x0F) * 4
        elif ethertype == b"\x86\xdd" and data[frame + 14 + 6] == 17:
            udp = frame + 14 + 40
        if udp is not None and udp + 8 <= frame + caplen:
            csum = struct.unpack_from(">H", data, udp + 6)[0]
            for off in (0, 2):
                if struct.unpack_from(">H", data, udp + off)[0] == old:
                    struct.pack_into(">H", data, udp + off, new)
                    if csum:
                        total = (~csum & 0xFFFF) + (~old & 0xFFFF) + new
                        while total >> 16:
                            total = (total & 0xFFFF) + (total >> 16)
                        csum = ~total & 0xFFFF or 0xFFFF
            struct.pack_into(">H", data, udp + 6, csum)
        pos = frame + caplen
    with open(dst, "wb") as f:
        f.write(data)


def test_sctp_udp_other_port(ts, args):
    """SCTP in UDP on a port other than 9899 (RFC 6951 §5.1 lets it be configured; issue 41):
    the plugin's UDP heuristic takes a datagram whose SCTP checksum is right to SCTP, and every
    DDP segment is drawn and analysed as on port 9899; with the heuristic disabled, none is.
    The analyzer (core's frame decode, by the same checksum) finds the same stream."""
    cap = ts.stage(args.capture)
    moved = os.path.join(ts.tmp, "udp5801.pcap")
    rewrite_udp_port(cap, moved, 9899, 5801)
    os.chmod(moved, 0o644)
    want, got = sctp_counts(ts, cap), sctp_counts(ts, moved)
    segments = sum(c["ddp"] for c in want.values())
    check(segments > 0, "no DDP segment over SCTP in the capture")
    check(got == want, f"on UDP port 5801: {got} vs on 9899: {want}")
    rows = ts.fields(moved, ["iwarp.ddp.dv"], ["--disable-heuristic", "ddpscope_sctp_udp_any"])
    check(all(r["iwarp.ddp.dv"] == "" for r in rows.values()),
          "DDP drawn with the heuristic disabled")
    if args.analyzer:
        a, b = analyzer_report(args.analyzer, cap), analyzer_report(args.analyzer, moved)
        llps = [s["llp"] for s in a["streams"]]
        check(llps and set(llps) == {"sctp"}, f"analyzer streams on 9899: {llps}")
        check([s["llp"] for s in b["streams"]] == llps,
              f"analyzer streams on 5801: {[s['llp'] for s in b['streams']]}, on 9899: {llps}")
        check(b["findings"] == a["findings"], f"findings differ: {b['findings']} vs {a['findings']}")
    print(f"{segments} DDP segments over SCTP in UDP on port 5801")


def test_both_llps(ts, args):
    """A capture holding both LLPs (an MPA capture merged with an SCTP one): each LLP's DDP
    segments are drawn as in its own capture."""
    mpa, sctp = (ts.stage(c) for c in args.captures[:2])
    merged = os.path.join(ts.tmp, "both-llps.pcapng")
    mergecap = shutil.which("mergecap") or "mergecap"
    subprocess.run([mergecap, "-w", merged, mpa, sctp], check=True)
    os.chmod(merged, 0o644)

    def ddp_total(cap):
        rows = ts.fields(cap, ["iwarp.ddp.dv", "iwarp.mpa.ulpdu_length", "_ws.malformed"])
        check(not any(r["_ws.malformed"] for r in rows.values()), f"{cap}: Malformed frames")
        return (sum(len(r["iwarp.ddp.dv"].split("|")) for r in rows.values() if r["iwarp.ddp.dv"]),
                sum(len(r["iwarp.mpa.ulpdu_length"].split("|"))
                    for r in rows.values() if r["iwarp.mpa.ulpdu_length"]))
    mpa_ddp, mpa_fpdus = ddp_total(mpa)
    sctp_ddp, sctp_fpdus = ddp_total(sctp)
    both_ddp, both_fpdus = ddp_total(merged)
    check(mpa_ddp > 0 and sctp_ddp > 0, f"DDP segments: MPA {mpa_ddp}, SCTP {sctp_ddp}")
    check(sctp_fpdus == 0, f"{sctp_fpdus} MPA FPDUs in the SCTP capture")
    check(both_ddp == mpa_ddp + sctp_ddp,
          f"merged: {both_ddp} DDP segments, alone {mpa_ddp} + {sctp_ddp}")
    check(both_fpdus == mpa_fpdus, f"merged: {both_fpdus} FPDUs, alone {mpa_fpdus}")
    print(f"merged: {mpa_ddp} DDP segments over MPA + {sctp_ddp} over SCTP")


TESTS = {
    "limit_pref": test_limit_pref,
    "sink_profile": test_sink_profile,
    "loads": test_loads,
    "rping_fields": test_rping_fields,
    "builtin_equal": test_builtin_equal,
    "findings_match": test_findings_match,
    "passes_agree": test_passes_agree,
    "fuzz": test_fuzz,
    "fuzz_more": test_fuzz_more,
    "stats": test_stats,
    "decode_as": test_decode_as,
    "wins_over_port": test_wins_over_port,
    "frames_agree": test_frames_agree,
    "crc_not_placed": test_crc_not_placed,
    "gap_first_fpdu": test_gap_first_fpdu,
    "twin_names": test_twin_names,
    "mpa_probes": test_mpa_probes,
    "one_pass_held": test_one_pass_held,
    "one_pass_gap": test_one_pass_gap,
    "nvmeof_fields": test_nvmeof_fields,
    "iser_fields": test_iser_fields,
    "rpcrdma_fields": test_rpcrdma_fields,
    "siw_nfs_fields": test_siw_nfs_fields,
    "smbdirect_fields": test_smbdirect_fields,
    "sctp_ddp": test_sctp_ddp,
    "both_llps": test_both_llps,
    "sctp_udp_other_port": test_sctp_udp_other_port,
}


def run_test(tests, args):
    """Runs tests[args.test] with a Tshark loading args.plugin; prints PASS/FAIL, returns the exit code."""
    ts = Tshark(args.plugin)
    try:
        tests[args.test](ts, args)
    except Failure as e:
        print(f"FAIL {args.test}: {e}", file=sys.stderr)
        return 1
    finally:
        ts.cleanup()
    print(f"PASS {args.test}")
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--plugin", required=True)
    ap.add_argument("--analyzer")
    ap.add_argument("test", choices=sorted(TESTS))
    ap.add_argument("capture", nargs="?")
    ap.add_argument("more", nargs="*", help="further captures, for tests over several")
    args = ap.parse_args()
    args.captures = ([args.capture] if args.capture else []) + args.more
    return run_test(TESTS, args)


if __name__ == "__main__":
    sys.exit(main())
