#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Checks the siw Data Sink profile against the oracle's observations (issue 40).

  check_oracle.py DDPSCOPE OUT [--observed-only] [--docs FILE] [--source TEXT]

OUT is what `lab.sh oracle DDPSCOPE OUT` left: cases.json and cases/NN-NAME.pcap; or a cases.json
file with --captures DIR (the committed run: tests/interop/oracle/siw-6.1-cases.json with
--captures samples/siw/oracle). Per case the capture is analysed
with `DDPSCOPE analyze --sink-profile siw --json`; the finding with the case's code on the peer's
direction (client-to-server: the crafting peer is rping's client) must exist, and its
`sink_outcome` (and `terminate`, when siw answered with a Terminate) must equal what siw did. An
observed RST counts as "close" and an MPA reject as "close" (kept apart in cases.json and the
docs). siw's own Terminate must be reported as `rdmap.terminate` with "siw" in its `matches`.
Cases marked vm-died or setup-failed are listed, not judged.

--findings-only analyses without a sink profile and checks only that each violation draws its
finding. --observed-only prints the table of siw's answers (no analysis). --docs FILE writes the markdown
table (case, rule, RFC outcome, siw outcome, source). Exit status: 1 on any mismatch or on a
violation that drew no finding (not with --observed-only); 77 (skip) when DDPSCOPE's analyze has
no --sink-profile and neither --findings-only nor --observed-only is given."""
import argparse
import json
import os
import re
import subprocess
import tempfile
import sys

LAYERS = {0: "RDMAP", 1: "DDP", 2: "LLP"}


def triple_text(t):
    if not t:
        return ""
    return f"{LAYERS.get(t['layer'], t['layer'])} {t['layer']}/{t['etype']}/{t['code']:#04x}"


def observed_text(r):
    a = r["answer"]
    if a == "terminate":
        t = r["terminate"]["triple"]
        then = {"close": ", FIN", "reset": ", RST"}.get(r.get("then"), "")
        name = NAMES.get((t["layer"], t["etype"], t["code"]), triple_text(t))
        return f"Terminate {name} ({t['layer']}/{t['etype']}/{t['code']:#04x}){then}"
    if a == "close":
        return "FIN (no Terminate)"
    if a == "reset":
        return "RST (no Terminate)"
    if a == "reject":
        return "MPA Reply R=1" + {"close": ", FIN", "reset": ", RST"}.get(r.get("then"), "")
    if a == "accept":
        names = sorted({f.get("name", "?") for f in r.get("fpdus", [])})
        return "accepted (answered: " + ", ".join(names) + ")"
    if a == "wait":
        return "silence (waits)"
    if a == "vm-died":
        before = r.get("answer_before_death")
        if before:
            first = observed_text(dict(r, answer=before, then=None))
            return f"{first}, then the guest kernel died (iwcm BUG; rebooted)"
        return "the guest kernel died (rebooted)"
    return a


def comparable(kind):
    return {"reset": "close"}.get(kind, kind)


# The rule a case breaks at siw, where it is another than at an RFC sink: siw has no RFC 7306,
# so every RFC 7306 opcode is an unexpected opcode there (rdmap.opcode-invalid).
def siw_code(r):
    if r["name"].startswith("rfc7306-"):
        return "rdmap.opcode-invalid"
    return r.get("code")


# Cases whose violation no finding of ddpscope's names yet: listed, not judged (say why).
UNJUDGED = {
    "mpa-fpdu-before-reply": "analyzer gap: siw resets before any MPA Reply; no finding names an "
                             "FPDU before the Reply when no Reply ever comes",
}


def catalog_terminates(ddpscope):
    """The RFC Terminate of each finding code, from `list-findings` (its [Terminate ...])."""
    out = {}
    try:
        text = subprocess.run([ddpscope, "list-findings"], capture_output=True, text=True,
                              timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return out
    for line in text.splitlines():
        m = re.match(r"(\S+)\s.*\[Terminate ([^\]]*)\]", line)
        if m:
            out[m.group(1)] = "Terminate " + m.group(2)
    return out


def regions_file(r, tmpdir):
    """What the oracle knows of siw's registrations: rping's server registers its rdma_buf
    (-S 64 octets) with local write, remote read and remote write; its Read Request names it as
    the sink (STag, TO = base). Each connection has its own PD; a regions file can give PDs only
    per Data Sink endpoint (all streams here end at siw's 10.0.2.15:7174), so for the case that
    uses another connection's STag, that region gets a PD of its own. The file is given for
    every case (empty when no STag is known): rping's rdma_buf is siw's only remotely accessible
    registration, so an STag outside the file is invalid at siw."""
    doc = {"regions": []}
    if r.get("sink_stag"):
        doc["regions"].append(region_of(r))
    if r.get("phase") == "other-stream":
        doc["protection_domains"] = [{"endpoint": "10.0.2.15:7174", "pd": 2}]
    path = os.path.join(tmpdir, f"{r['index']:02d}-regions.json")
    with open(path, "w") as f:
        json.dump(doc, f)
    return path


def region_of(r):
    region = {"stag": r["sink_stag"], "base": r.get("sink_to", "0x0"), "length": 64,
              "sink": "10.0.2.15", "access": ["local_write", "remote_read", "remote_write"]}
    if r.get("phase") == "other-stream":
        region["pd"] = 1
    return region


def analyze(ddpscope, pcap, regions=None, profile=True):
    # rping's server posts 16-octet receives (its struct rping_rdma_info)
    cmd = [ddpscope, "analyze", "--json", "--send-buffer", "16", pcap]
    cmd += ["--sink-profile", "siw"] if profile else []
    if regions:
        cmd += ["--regions", regions]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if p.returncode not in (0, 1) or not p.stdout.strip():
        return None, (p.stderr.strip().splitlines() or ["no output"])[-1]
    return json.loads(p.stdout), None


def judge(r, rep, profile=True):
    """Problems of one case against its analysis; the finding used and its RFC outcome."""
    problems = []
    if profile and rep.get("sink_profile") != "siw":
        problems.append(f"sink_profile is {rep.get('sink_profile')!r}")
    ports = r.get("ports") or []
    peer_port = ports[-1] if ports else None
    code = siw_code(r) if profile else r["code"]
    fs = [f for f in rep["findings"] if f["code"] == code
          and f.get("direction") == "client-to-server"
          and (peer_port is None or f.get("from", "").endswith(f":{peer_port}"))]
    if not fs and r.get("phase") == "handshake":  # mpa.rejected is the responder's Reply
        fs = [f for f in rep["findings"] if f["code"] == code]
    if not fs:
        problems.append(f"no {code} finding from the peer (findings: "
                        f"{sorted({f['code'] for f in rep['findings']})})")
        return problems, None
    f = fs[-1] if code in ("ddp.untagged.msn-duplicate",) else fs[0]
    if not profile:
        return problems, f
    want = comparable(r["answer"])
    # A finding that names no Terminate (a note such as reserved bits) asks nothing of a sink.
    got = f.get("sink_outcome", "accept" if f.get("terminate") is None else None)
    if got != want:
        problems.append(f"sink_outcome {got!r}, siw did {r['answer']!r}")
    if r["answer"] == "terminate":
        obs = r["terminate"]["triple"]
        pred = f.get("terminate")
        if not pred or (pred["layer"], pred["etype"], pred["code"]) != (
                obs["layer"], obs["etype"], obs["code"]):
            problems.append(f"predicted Terminate {triple_text(pred)}, siw sent {triple_text(obs)}")
        terms = [t for t in rep["findings"] if t["code"] == "rdmap.terminate"
                 and t.get("direction") == "server-to-client"]
        if not any("siw" in (t.get("matches") or []) for t in terms):
            problems.append("siw's Terminate is not reported as matching the siw profile")
    return problems, f


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("ddpscope")
    ap.add_argument("out", help="lab.sh oracle's OUT, or a directory or file holding cases.json")
    ap.add_argument("--observed-only", action="store_true")
    ap.add_argument("--captures", help="directory of the per-case captures (default: next to "
                    "cases.json, as cases/NN-NAME.pcap; samples/siw/oracle for the committed run)")
    ap.add_argument("--findings-only", action="store_true",
                    help="analyse without --sink-profile: check only that each violation draws its "
                         "finding (for a ddpscope without sink profiles)")
    ap.add_argument("--docs", help="write the markdown table here")
    ap.add_argument("--source", help="the Source column (default: lab DATE, siw 6.1 KERNEL)")
    a = ap.parse_args()
    path = a.out if a.out.endswith(".json") else os.path.join(a.out, "cases.json")
    base = os.path.dirname(path)
    doc = json.load(open(path))
    source = a.source or f"lab {doc.get('generated', '?')}, siw 6.1 (Debian kernel {doc.get('kernel', '?')})"
    catalog = catalog_terminates(a.ddpscope)
    if not (a.observed_only or a.findings_only):
        helptext = subprocess.run([a.ddpscope, "analyze", "--help"], capture_output=True,
                                  text=True).stdout
        if "--sink-profile" not in helptext:
            print(f"{a.ddpscope} analyze has no --sink-profile: skipped (exit 77); "
                  "--findings-only checks the findings alone", file=sys.stderr)
            return 77
    rows, failures, judged = [], 0, 0
    tmpdir = tempfile.mkdtemp(prefix="check_oracle.")
    for r in doc["cases"]:
        rfc = catalog.get(r.get("rule") or r.get("code"), "no Terminate")
        status = ""
        if r["name"] in UNJUDGED and not a.observed_only:
            status = "not judged: " + UNJUDGED[r["name"]]
        elif not (siw_code(r) if not a.findings_only else r.get("code")):
            status = "informative (no finding to judge)" if not a.observed_only else ""
        elif not a.observed_only and r["answer"] not in ("vm-died", "setup-failed") and r.get("capture"):
            cap = os.path.join(a.captures, os.path.basename(r["capture"])) if a.captures \
                else os.path.join(base, r["capture"])
            rep, err = analyze(a.ddpscope, cap,
                               regions_file(r, tmpdir), not a.findings_only)
            if rep is None:
                problems, f = [f"analysis failed: {err}"], None
            else:
                problems, f = judge(r, rep, not a.findings_only)
                if f is not None:
                    t = f.get("rfc_terminate") or f.get("terminate")
                    if t:
                        rfc = "Terminate " + (t.get("name") or triple_text(t))
            judged += 1
            status = "ok" if not problems else "MISMATCH: " + "; ".join(problems)
            failures += bool(problems)
        rows.append((r, rfc, status))
        print(f"{r['index']:2d} {r['name']:36s} {r.get('code') or '-':34s} {observed_text(r)}"
              + (f"  [{status}]" if status else ""))
    if a.docs:
        write_docs(a.docs, doc, rows, source)
    if a.observed_only:
        return 0
    print(f"{judged} cases judged, {failures} mismatched", file=sys.stderr)
    return 1 if failures else 0


def write_docs(path, doc, rows, source):
    lines = [
        "# Linux siw as a Data Sink: the oracle's observations",
        "",
        "Generated by `tests/interop/check_oracle.py DDPSCOPE OUT --docs docs/siw-sink-oracle.md`",
        "from the records of `LAB=... tests/interop/lab.sh oracle DDPSCOPE OUT` (the siw lab, issue",
        "40; ctest `interop.siw-oracle`, label `vm`). The committed records are",
        "`tests/interop/oracle/siw-6.1-cases.json`; the per-case captures are `samples/siw/oracle/`.",
        "",
        "Each case is one TCP connection from a crafting peer (`tests/interop/siw_oracle.py`) to",
        "siw's `rping -s -P -S 64` in the lab VM: MPA revision 2 with the RFC 6581 enhanced word",
        "(IRD 1, ORD 1, no peer-to-peer), 0.3 s of rest after the Reply, a correct rping client up",
        "to the case's phase (`est`: nothing sent yet; `read`: the start buffer advertised and siw's",
        "Read Request received; `go`: the Read answered and the go-ahead received), then ONE",
        "violation. siw's answer is read for 3 s: a Terminate (its control word read in siw's",
        "little-endian bit-field layout: layer/etype/code), FIN, RST, an MPA reject, a normal answer",
        "(accepted) or silence (waits).",
        "",
        "The RFC outcome is the Terminate RFC 5040/5041/5044 prescribe for the violation: the",
        "analyzer's RFC triple for the finding at that frame (`rfc_terminate`, else `terminate`",
        "of an analysis without a sink profile), or the catalog's (`ddpscope list-findings`) for a",
        "case not analysed. Rows marked **differs** are where siw's answer is not that Terminate.",
        "Informative cases (no finding code) are listed but not judged by the checker.",
        "",
        "| # | case | rule (finding) | RFC outcome | siw outcome (observed) | | source |",
        "|---|---|---|---|---|---|---|",
    ]
    for r, rfc, _ in rows:
        obs = observed_text(r)
        differs = ""
        if r["answer"] == "terminate":
            if not same_triple(rfc, r["terminate"]["triple"]):
                differs = "**differs**"
        elif rfc.startswith("Terminate"):
            differs = "**differs**"
        lines.append(f"| {r['index']} | `{r['name']}` | " + rule_cell(r) + f" | {rfc} | {obs} | "
                     f"{differs} | {source} |")
    lines += ["", "Behaviours each case exercises:", ""]
    for r, _, _ in rows:
        lines.append(f"* `{r['name']}` ({r.get('phase', '?')}): " + "; ".join(r.get("behaviours", []))
                     + (f" — {r['note']}" if r.get("note") else ""))
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


NAMES = {
    (0, 0, 0x00): "RDMAP / Local Catastrophic",
    (0, 1, 0x00): "RDMAP / Remote Protection / Invalid STag",
    (0, 1, 0x01): "RDMAP / Remote Protection / Base or bounds violation",
    (0, 1, 0x02): "RDMAP / Remote Protection / Access rights violation",
    (0, 1, 0x03): "RDMAP / Remote Protection / STag not associated with RDMAP stream",
    (0, 1, 0x04): "RDMAP / Remote Protection / TO wrap",
    (0, 1, 0x09): "RDMAP / Remote Protection / STag cannot be invalidated",
    (0, 2, 0x05): "RDMAP / Remote Operation / Invalid RDMAP version",
    (0, 2, 0x06): "RDMAP / Remote Operation / Unexpected OpCode",
    (0, 2, 0x07): "RDMAP / Remote Operation / Catastrophic, localized to RDMAP stream",
    (0, 2, 0x09): "RDMAP / Remote Operation / STag cannot be invalidated",
    (0, 2, 0xFF): "RDMAP / Remote Operation / Unspecified",
    (1, 0, 0x00): "DDP / Local Catastrophic",
    (1, 1, 0x00): "DDP / Tagged Buffer / Invalid STag",
    (1, 1, 0x01): "DDP / Tagged Buffer / Base or bounds violation",
    (1, 1, 0x02): "DDP / Tagged Buffer / STag not associated with DDP stream",
    (1, 1, 0x03): "DDP / Tagged Buffer / TO wrap",
    (1, 1, 0x04): "DDP / Tagged Buffer / Invalid DDP version",
    (1, 2, 0x01): "DDP / Untagged Buffer / Invalid QN",
    (1, 2, 0x02): "DDP / Untagged Buffer / Invalid MSN - no buffer available",
    (1, 2, 0x03): "DDP / Untagged Buffer / Invalid MSN - MSN range not valid",
    (1, 2, 0x04): "DDP / Untagged Buffer / Invalid MO",
    (1, 2, 0x05): "DDP / Untagged Buffer / DDP message too long for available buffer",
    (1, 2, 0x06): "DDP / Untagged Buffer / Invalid DDP version",
    (2, 0, 0x01): "LLP / MPA / TCP connection closed, terminated or lost",
    (2, 0, 0x02): "LLP / MPA / MPA CRC error",
    (2, 0, 0x03): "LLP / MPA / MPA Marker and ULPDU Length field mismatch",
    (2, 0, 0x04): "LLP / MPA / Invalid MPA Request/Reply frame",
    (2, 0, 0x05): "LLP / MPA / Local catastrophic error",
    (2, 0, 0x06): "LLP / MPA / Insufficient IRD resources",
    (2, 0, 0x07): "LLP / MPA / No matching RTR option",
}


def rule_cell(r):
    if r.get("code"):
        return f"`{r['code']}`"
    return f"(`{r['rule']}`, not judged)" if r.get("rule") else "(none)"


def same_triple(rfc_text, t):
    name = NAMES.get((t["layer"], t["etype"], t["code"]))
    return bool(name) and name in rfc_text


if __name__ == "__main__":
    sys.exit(main())
