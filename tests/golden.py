# SPDX-License-Identifier: GPL-2.0-or-later
"""The one golden comparison: a report (`ddpscope analyze --json`), an expected-findings file
(NAME.expected.json) or any JSON document the tests keep as a golden is compared in a canonical
form, so that rewording a free-text string does not fail a test while every structural change
does.

Canonical form:
  - every field is compared exactly (code, severity, frame, frames, stream, direction, the
    Terminate triple and its name, consequence_of_gap, counts, STag/TO/offset numbers, MSN
    ranges, stream and region tables, ...), lists in order;
  - the free-text fields named in FREE_TEXT are reduced to what is structural in them: the
    numbers they quote (decimal or hex, compared as values, in any order; RFC and section
    citations excluded) and the snake_case identifiers they quote (e.g. a limit's name). A
    message reworded around the same numbers compares equal; one whose numbers changed does not.

Update mode: DDPSCOPE_UPDATE_GOLDEN=1 in the environment makes the checkers rewrite their
goldens (the full report, messages included) instead of comparing.
"""
import json
import os
import re

# Keys whose string values are prose for people: a finding's `message`, an expected finding's
# `detail`, a shadow buffer's `origin` (its structure is `source`), a scenario's `description`.
FREE_TEXT = frozenset({"message", "detail", "origin", "description"})

UPDATE_ENV = "DDPSCOPE_UPDATE_GOLDEN"

_CITATION = re.compile(r"RFC\s*\d+|§\s*\d+(?:\.\d+)*(?:\s*-\s*\d+(?:\.\d+)*)?")
_NUMBER = re.compile(r"(?<![\w.])(0[xX][0-9a-fA-F]+|\d+(?:\.\d+)*)(?!\w)")
_IDENTIFIER = re.compile(r"(?<!\w)[a-z][a-z0-9]*(?:_[a-z0-9]+)+(?!\w)")


def update_requested():
    return os.environ.get(UPDATE_ENV) == "1"


def canonical_text(text):
    """What a free-text string is compared by: its numbers (as values; dotted groups such as
    addresses as written) and snake_case identifiers, sorted."""
    bare = _CITATION.sub(" ", text)
    numbers = []
    for tok in _NUMBER.findall(bare):
        numbers.append(int(tok, 16) if tok[:2] in ("0x", "0X") else int(tok) if "." not in tok
                       else tok)
    numbers.sort(key=lambda n: (isinstance(n, str), n))
    return {"numbers": numbers, "identifiers": sorted(_IDENTIFIER.findall(bare))}


def differences(want, got, path="$", limit=40):
    """Where `want` and `got` differ in canonical form, as "path: golden X, now Y" lines (at
    most `limit`; a free-text string is shown as written). Empty when they compare equal."""
    out = []
    _diff(want, got, path, None, out, limit)
    return out


def _show(v):
    s = json.dumps(v, sort_keys=True)
    return s if len(s) <= 160 else s[:157] + "..."


def _diff(a, b, path, key, out, limit):
    if len(out) >= limit:
        return
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if k not in b:
                out.append(f"{path}.{k}: golden {_show(a[k])}, now absent")
            elif k not in a:
                out.append(f"{path}.{k}: absent in golden, now {_show(b[k])}")
            else:
                _diff(a[k], b[k], f"{path}.{k}", k, out, limit)
            if len(out) >= limit:
                return
    elif isinstance(a, list) and isinstance(b, list):
        for i in range(min(len(a), len(b))):
            _diff(a[i], b[i], f"{path}[{i}]", None, out, limit)
            if len(out) >= limit:
                return
        if len(a) != len(b):
            out.append(f"{path}: golden has {len(a)} entries, now {len(b)}"
                       + (f"; first extra {_show(b[len(a)])}" if len(b) > len(a) else
                          f"; first missing {_show(a[len(b)])}"))
    elif key in FREE_TEXT and isinstance(a, str) and isinstance(b, str):
        ca, cb = canonical_text(a), canonical_text(b)
        if ca != cb:
            out.append(f"{path}: golden {_show(a)}, now {_show(b)} (quotes {_show(ca)} vs "
                       f"{_show(cb)})")
    elif a != b or type(a) is not type(b):
        out.append(f"{path}: golden {_show(a)}, now {_show(b)}")


def write_golden(path, doc):
    with open(path, "w") as f:
        json.dump(doc, f, indent=2, sort_keys=True)
        f.write("\n")


def effective_severity(finding):
    """The severity a finding is shown with: a consequence of capture loss or of a dropped FPDU
    is a note (the plugin's `.after-gap` / `.after-crc` expert infos)."""
    return "note" if finding.get("consequence_of_gap") else finding["severity"]


def terminate_triple(finding):
    t = finding.get("terminate")
    return (t["layer"], t["etype"], t["code"]) if t else None


def esp_args(expected, here):
    """The `ddpscope analyze` options an IPsec sample's expected.json names (its SA file, the
    policy it is analysed under)."""
    args = []
    if not expected:
        return args
    if expected.get("esp_sa_file"):
        args += ["--esp-sa", os.path.join(here, expected["esp_sa_file"])]
    if expected.get("xfrm_file"):
        args += ["--xfrm", os.path.join(here, expected["xfrm_file"])]
    if expected.get("require_esp"):
        args += ["--require-esp"]
    if expected.get("esp_policy"):
        args += ["--esp-policy", expected["esp_policy"]]
    return args


def expected_mismatch(expected, report):
    """Checks a report against NAME.expected.json: every expected finding reported with its
    code, frame and severity; for an exhaustive file, no other warning or error. Returns
    (missing, unexpected) lists of (code, frame, severity)."""
    got = [(f["code"], f["frame"], f["severity"]) for f in report["findings"]]
    want = [(e["code"], e["frame"], e["severity"]) for e in expected["expected"]]
    missing = sorted(set(want) - set(got))
    extra = []
    if expected.get("exhaustive", True):
        extra = sorted({g for g in got if g[2] != "note" and g not in want})
    return missing, extra
