# SPDX-License-Identifier: GPL-2.0-or-later
"""What the CLI tests that compare two runs of the same command byte for byte share
(reader_test.py, threads_test.py, shards_test.py)."""


def first_diff(a, b):
    """The first line where two outputs differ, shortened, or their lengths in lines."""
    la, lb = a.splitlines(), b.splitlines()
    for i, (x, y) in enumerate(zip(la, lb)):
        if x != y:
            return f"line {i + 1}: {x[:120]!r} vs {y[:120]!r}"
    return f"lengths {len(la)} vs {len(lb)} lines"
