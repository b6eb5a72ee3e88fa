#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Every tracked C and C++ file is as clang-format (the repository's .clang-format) writes it.
# Usage: check_format.sh SOURCE_DIR [CLANG_FORMAT]
set -euo pipefail
cd "$1"
clang_format="${2:-clang-format}"
mapfile -t files < <(git ls-files '*.c' '*.cc' '*.cpp' '*.h' '*.hpp')
[ ${#files[@]} -gt 0 ] || { echo "no C/C++ files found under $1 (not a git checkout?)" >&2; exit 1; }
if ! "$clang_format" --dry-run -Werror "${files[@]}"; then
  echo "run: clang-format -i \$(git ls-files '*.c' '*.cc' '*.cpp' '*.h' '*.hpp')" >&2
  exit 1
fi
echo "${#files[@]} files clang-format clean"
