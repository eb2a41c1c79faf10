#!/bin/bash
# tools/campaign-audit.sh on scratch repositories, with the built dit-ar: a repository without
# the loop's notes is refused (2) and told how to fetch them; an engine commit that says
# Loop-exempt passes (0); an engine commit that is neither kept nor exempt fails (5) and is
# named; an unknown base and a missing driver are refused (2); the driver is asked for KEEP
# records of the fp16 lanes only, each with an A5500-effect trailer. With --notes-in-tree, the
# KEEP records committed as knowledge/sessions/**/keep-note-<commit>.json are audited in a
# scratch copy: a record that matches passes, one that names another parent fails, none is
# refused (2), and the checkout's own refs are left as they were.
#   campaign_audit_test.sh SCRIPT DIT_AR
set -u
script=$1 dit_ar=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
repo=$work/repo  # the checkout expect audits
expect() {  # expect CODE PATTERN -- ARGS...: exit code CODE, output matching PATTERN
  local code=$1 pattern=$2 out status
  shift 3
  out=$(bash "$script" --dit-ar "$dit_ar" --repo "$repo" "$@" 2>&1)
  status=$?
  if [ "$status" -ne "$code" ] || ! grep -qE "$pattern" <<<"$out"; then
    echo "FAIL: campaign-audit.sh $* exited $status (expected $code), output:"; echo "$out"
    failures=$((failures + 1))
  else
    echo "ok: $* -> $status"
  fi
}
g() { git -C "$work/repo" -c user.name=test -c user.email=test@localhost "$@" >/dev/null; }

git init -q "$work/repo"
echo base >"$work/repo/README"
g add README && g commit -q -m base
base=$(git -C "$work/repo" rev-parse HEAD)
mkdir -p "$work/repo/model" "$work/repo/kernels"
echo fix >"$work/repo/model/engine.cpp"
g add model && g commit -q -m "engine: a fix" -m "Loop-exempt: a correctness fix, no speed claimed"

expect 2 "refs/notes/autoresearch" -- --base "$base"
g notes --ref=autoresearch add -m "not a record" "$base"
expect 0 "1 exempt, 0 outside the mutable paths, 0 failed" -- --base "$base"
echo faster >"$work/repo/kernels/gemm.cu"
g add kernels && g commit -q -m "kernels: faster, outside the loop"
expect 5 "FAILED .*kernels: faster, outside the loop" -- --base "$base"
expect 2 "names no commit" -- --base 0000000000000000000000000000000000000000
out=$(bash "$script" --dit-ar "$work/no-such-dit-ar" --repo "$work/repo" --base "$base" 2>&1)
status=$?
if [ "$status" -eq 2 ] && grep -q "no dit-ar" <<<"$out"; then echo "ok: missing driver -> 2"; else
  echo "FAIL: a missing driver exited $status: $out"; failures=$((failures + 1)); fi
# The campaign's policy as the driver receives it: fp16 lanes only, the A5500-effect trailer.
printf '#!/bin/sh\necho "$@"\n' >"$work/args-dit-ar" && chmod +x "$work/args-dit-ar"
out=$(bash "$script" --dit-ar "$work/args-dit-ar" --repo "$work/repo" --base "$base" 2>&1)
if grep -q -- "--require-trailer A5500-effect" <<<"$out" && grep -q -- "--lane a5500-fp16-batch-256" <<<"$out" &&
  ! grep -qE -- "--lane (a5500-e2e-256|a5500-session-256|a5500-bf16-session-256|cpu-smoke)" <<<"$out"; then
  echo "ok: fp16 lanes and the trailer passed to the driver"
else
  echo "FAIL: the driver was called with: $out"; failures=$((failures + 1))
fi

# Notes that did not travel with the branch: the tree's copies.
git init -q "$work/tree"
repo=$work/tree
t() { git -C "$work/tree" -c user.name=test -c user.email=test@localhost "$@" >/dev/null; }
echo base >"$work/tree/README"
t add README && t commit -q -m base
tree_base=$(git -C "$work/tree" rev-parse HEAD)
expect 2 "no keep-note-<commit>.json" -- --notes-in-tree --base "$tree_base"
mkdir -p "$work/tree/kernels"
echo faster >"$work/tree/kernels/gemm.cu"
t add kernels && t commit -q -m "kernels: faster" -m "A5500-effect: fewer bytes"
kept=$(git -C "$work/tree" rev-parse HEAD)
record() {  # record PARENT: a KEEP record of $kept judged on top of PARENT
  printf '{"kind": "experiment", "status": "KEEP", "commit": "%s", "parent": "%s", "best_before": "%s",
 "lane": "a5500-fp16-batch-256", "run_dir": "runs/0001-%s"}\n' "$kept" "$1" "$1" "${kept:0:8}"
}
mkdir -p "$work/tree/knowledge/sessions/s1"
record "$tree_base" >"$work/tree/knowledge/sessions/s1/keep-note-${kept:0:7}.json"
t add knowledge && t commit -q -m "the session's records"
expect 0 "1 kept by the loop, 0 exempt, 1 outside the mutable paths, 0 failed" -- --notes-in-tree --base "$tree_base"
if git -C "$work/tree" rev-parse -q --verify refs/notes/autoresearch >/dev/null; then
  echo "FAIL: --notes-in-tree wrote notes into the audited checkout"; failures=$((failures + 1))
fi
record "$kept" >"$work/tree/knowledge/sessions/s1/keep-note-${kept:0:7}.json"
t commit -q -a -m "a record on the wrong parent"
expect 5 "FAILED .*kernels: faster" -- --notes-in-tree --base "$tree_base"
echo '{}' >"$work/tree/knowledge/sessions/s1/keep-note-0123456.json"
t add knowledge && t commit -q -m "a record of no commit"
expect 2 "names no single commit" -- --notes-in-tree --base "$tree_base"
[ "$failures" -eq 0 ]
