# shellcheck shell=sh
# Sourced by the tools/gpu-host/stage-*.sh scripts that add to what
# ../shared/gpu-host/stage-deps.sh staged under .deps/ (POSIX sh).
#
# stage_begin NAME: root (the checkout), work (a temporary folder, removed at exit); exits 2,
# naming NAME, when stage-deps.sh has not run.
stage_begin() {
  stage_name=$1
  root=$(git rev-parse --show-toplevel)
  [ -d "$root/.deps/root" ] || { echo "$stage_name: run ../shared/gpu-host/stage-deps.sh first" >&2; exit 2; }
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
}

# stage_check_carry PART [UNDO]: prints what the device tool carries with
# `carry [".deps", ".bundle"]` (the tracked and the untracked, not ignored files, and those two
# folders; PART, what this script staged, named beside them) and exits 1 above 63 MiB, printing
# UNDO (how to take PART back out) when given. The tool's limit is 64 MiB, but it counts more
# than this sum: on 2026-12-06 it refused what this sum put at 63.8 MiB and took 62.9.
stage_check_carry() {
  (
    cd "$root" || exit 1
    tree_bytes=$( { git ls-files -z; git ls-files -z -o --exclude-standard; } | xargs -0 -r stat -c %s -- 2>/dev/null \
      | awk '{ s += $1 } END { print s + 0 }')
    staged_bytes=$(du -sb .deps .bundle 2>/dev/null | awk '{ s += $1 } END { print s + 0 }')
    part_bytes=$(du -sb "$1" | awk '{ print $1 }')
    awk -v t="$tree_bytes" -v s="$staged_bytes" -v p="$part_bytes" -v name="${1#"$root"/}" 'BEGIN {
      total = (t + s) / 1048576
      printf "carried with .deps and .bundle: %.1f MiB of 63 (tree %.1f, .deps and .bundle %.1f, of which %s %.1f)\n",
        total, t / 1048576, s / 1048576, name, p / 1048576
      exit total > 63 }'
  ) || { echo "$stage_name: over 63 MiB, the device tool's 64 less a margin${2:+ ($2)}" >&2; exit 1; }
}
