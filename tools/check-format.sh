#!/bin/sh
# Fails, naming the files, when a tracked C++ or CUDA source differs from what clang-format makes
# of it under .clang-format (Debian 12's clang-format 14). tools/test.sh, and so CI, runs it first.
#   tools/check-format.sh          check
#   tools/check-format.sh --fix    rewrite the files in place
set -eu
cd "$(dirname "$0")/.."
command -v clang-format >/dev/null 2>&1 || { echo "check-format: clang-format is not installed" >&2; exit 2; }
files=$(git ls-files '*.cpp' '*.h' '*.hpp' '*.cu' '*.cuh' | grep -v '^results/' || true)
[ -n "$files" ] || { echo "check-format: no tracked sources found" >&2; exit 2; }
if [ "${1:-}" = "--fix" ]; then
  echo "$files" | xargs clang-format -i
  exit 0
fi
bad=""
for f in $files; do
  clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || bad="$bad $f"
done
if [ -n "$bad" ]; then
  echo "check-format: not formatted as .clang-format says (fix with tools/check-format.sh --fix):" >&2
  for f in $bad; do echo "  $f" >&2; done
  exit 1
fi
echo "check-format: $(echo "$files" | wc -l) files formatted"
