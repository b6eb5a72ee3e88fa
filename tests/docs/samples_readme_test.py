#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The sample folders' READMEs against their golden reports (issue 39): a finding code a README
names is one some golden report in that folder holds, so a document does not promise what the
data does not show. A sentence that begins "No golden file holds" names codes that must be in
none of them. Codes are the catalog's (`ddpscope list-findings --json`); other dotted names
(ctest names, Wireshark preferences) are not codes and are left alone."""
import glob
import json
import os
import re
import subprocess
import sys
import unittest

DDPSCOPE = sys.argv.pop(1)
SAMPLES = sys.argv.pop(1)
NEGATION = "No golden file holds"


def catalog():
    p = subprocess.run([DDPSCOPE, "list-findings", "--json"], capture_output=True, text=True,
                       timeout=60, check=True)
    return {f["code"] for f in json.loads(p.stdout)}


def held_in(folder):
    """The finding codes the golden reports under `folder` hold, with the files holding each."""
    held = {}
    for g in sorted(glob.glob(os.path.join(folder, "**", "*.golden.json"), recursive=True)):
        with open(g) as f:
            for finding in json.load(f).get("findings", []):
                held.setdefault(finding["code"], []).append(os.path.basename(g))
    return held


def sentences(text):
    # Markdown prose joined across line breaks; a sentence ends at ". " before a capital or a
    # backtick, or at a blank line.
    for para in re.split(r"\n\s*\n", text):
        yield from re.split(r"(?<=\.)\s+(?=[A-Z`])", " ".join(para.split()))


class SamplesReadme(unittest.TestCase):
    def test_named_codes_are_what_the_goldens_hold(self):
        codes = catalog()
        self.assertIn("ddp.tagged.conflicting-placement", codes)
        readmes = sorted(glob.glob(os.path.join(SAMPLES, "README.md")) +
                         glob.glob(os.path.join(SAMPLES, "*", "README.md")))
        self.assertGreaterEqual(len(readmes), 3, readmes)
        checked = 0
        for readme in readmes:
            folder = os.path.dirname(readme)
            held = held_in(folder)
            with open(readme) as f:
                text = f.read()
            for sentence in sentences(text):
                named = [c for c in re.findall(r"`([a-z0-9_-]+(?:\.[a-z0-9_-]+)+)`", sentence)
                         if c in codes]
                for code in named:
                    checked += 1
                    where = f"{os.path.relpath(readme, SAMPLES)}: {sentence[:160]}"
                    if sentence.startswith(NEGATION):
                        self.assertFalse(code in held,
                                         f"{where}\n  says no golden holds {code}, but "
                                         f"{', '.join(held.get(code, []))} do")
                    else:
                        self.assertTrue(code in held,
                                        f"{where}\n  names {code}, which no golden report under "
                                        f"{os.path.relpath(folder, SAMPLES) or '.'} holds")
        self.assertGreater(checked, 40, "the READMEs name the samples' findings")


if __name__ == "__main__":
    unittest.main(verbosity=2)
