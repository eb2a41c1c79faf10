#!/bin/bash
# A/B on the GPU host: the tree as it is (side a) against the tree with PATCH applied (side b),
# or one build of the tree run under two environments, the headline fp16 benchmarks on both
# sides, on the same machine in the same command, alternating b then a in every round so that
# drift of the machine shows. From the checkout root, after ../shared/gpu-host/stage-deps.sh has
# filled .deps/:
#
#   tools/gpu-host/ab.sh [PATCH] [--env-a SETTINGS] [--env-b SETTINGS] [--rounds N]
#                        [--benches LIST] [--check]
#
#   PATCH     a `git diff` (or `git format-patch`) against the tree, applied with `patch -p1`;
#             it is reverted on every exit, so the tree is left as it was. Without PATCH (at
#             least one of --env-a and --env-b given) one build serves both sides, for
#             anything a process reads from its environment (DIT_GEMM_PLAN=off, or a switch
#             an exploration build adds for the run)
#   --env-a, --env-b  the environment of side a's, side b's benchmark processes: words
#             NAME=VALUE separated by spaces (no spaces inside a value)
#   --rounds  rounds of (b, a), default 1
#   --benches a comma list of forward (bench_forward fp16: 256 batch 2 and 64, 512 batch 2;
#             5 repetitions), e2e (bench_e2e fp16, one image at 256; 3 repetitions), vae
#             (bench_vae; 5 repetitions), kernels (bench_kernels, AB_KERNELS_FILTER, default the
#             flash attention forms and the residual LayerNorm at fp16); default forward,e2e
#   --check   only check the arguments and that PATCH applies (exit 0), build and run nothing
#
# Results under $OUT (default ./gpu-host-out): ab.tgz (every benchmark JSON as
# <side>_<bench>_<round>.json and the build logs), ab-table.md (tools/gpu-host/ab_table.py: each
# round's medians and b / a, below 1 where the patch is faster) and the table on stdout. The file
# names say which side a JSON is, sides.txt what each side was; a JSON's context names whatever
# commit the host's history has (lease.sh explains a stale .git there), "-dirty" on a patched
# side b.
# Exit codes: 0 done; 2 bad arguments, a patch that does not apply, no .deps/env.sh; 1 a build
# or a benchmark failed.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }
refuse() { echo "ab.sh: $1" >&2; exit 2; }

patch_file="" rounds=1 benches=forward,e2e check_only=0 env_a="" env_b="" env_given=0
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) [ $# -ge 2 ] || refuse "--rounds needs a value"; rounds="$2"; shift 2 ;;
    --env-a) [ $# -ge 2 ] || refuse "--env-a needs a value"; env_a="$2"; env_given=1; shift 2 ;;
    --env-b) [ $# -ge 2 ] || refuse "--env-b needs a value"; env_b="$2"; env_given=1; shift 2 ;;
    --benches) [ $# -ge 2 ] || refuse "--benches needs a value"; benches="$2"; shift 2 ;;
    --check) check_only=1; shift ;;
    -h|--help) usage; exit 0 ;;
    -*) refuse "unknown option $1" ;;
    *) [ -z "$patch_file" ] || refuse "one PATCH only (got $patch_file and $1)"; patch_file="$1"; shift ;;
  esac
done
[ -n "$patch_file" ] || [ "$env_given" = 1 ] || { usage >&2; refuse "no PATCH given (and no --env-a or --env-b)"; }
[ -z "$patch_file" ] || [ -f "$patch_file" ] || refuse "PATCH $patch_file is not a file"
for setting in $env_a $env_b; do
  [[ "$setting" =~ ^[A-Za-z_][A-Za-z0-9_]*=.*$ ]] || refuse "environment setting '$setting' is not NAME=VALUE"
done
case "$rounds" in ''|*[!0-9]*|0) refuse "--rounds must be a positive integer, got '$rounds'" ;; esac
IFS=, read -r -a bench_list <<<"$benches"
[ ${#bench_list[@]} -gt 0 ] || refuse "--benches is empty"
for bench in "${bench_list[@]}"; do
  case "$bench" in forward|e2e|vae|kernels) ;; *) refuse "unknown bench '$bench' (forward, e2e, vae, kernels)" ;; esac
done
sides="side a with '$env_a', side b with '$env_b'"
if [ -n "$patch_file" ]; then
  patch_file=$(cd "$(dirname "$patch_file")" && pwd)/$(basename "$patch_file")
  patch -p1 --dry-run -s -f <"$patch_file" >/dev/null 2>&1 || refuse "PATCH $patch_file does not apply to this tree"
  if [ "$check_only" = 1 ]; then echo "ab.sh: $patch_file applies; $rounds round(s) of $benches"; exit 0; fi
elif [ "$check_only" = 1 ]; then
  echo "ab.sh: one build, $sides; $rounds round(s) of $benches"
  exit 0
fi
[ -f .deps/env.sh ] || refuse "no .deps/env.sh: run ../shared/gpu-host/stage-deps.sh in the checkout first"

OUT="${OUT:-$PWD/gpu-host-out}"
work=$(mktemp -d)
mkdir -p "$OUT" "$work/ab"
applied=0
restore() {
  if [ "$applied" = 1 ]; then patch -p1 -R -s -f <"$patch_file" >/dev/null && applied=0; fi
  rm -rf "$work"
}
trap restore EXIT
. .deps/env.sh
export CCACHE_DISABLE=1
build=build/a5500

build_side() {  # $1: a, b or ab (one build for both); the tree is already in that state
  { cmake --preset a5500 -G Ninja && cmake --build --preset a5500 -j "$(nproc)"; } >>"$work/ab/build_$1.log" 2>&1 \
    || { tail -40 "$work/ab/build_$1.log"; echo "ab.sh: the build of side $1 failed" >&2; exit 1; }
}

bench_side() {  # $1: side, $2: round
  local side=$1 round=$2 json settings
  if [ "$side" = a ]; then settings=$env_a; else settings=$env_b; fi
  for bench in "${bench_list[@]}"; do
    json="$work/ab/${side}_${bench}_${round}.json"
    # shellcheck disable=SC2086  # settings: NAME=VALUE words, split on purpose
    case "$bench" in
      forward) env $settings "$build/bench/bench_forward" --precision=fp16 \
                 '--benchmark_filter=^BM_Forward/image:(256/batch:(2|64)|512/batch:2)/' \
                 --benchmark_repetitions=5 --benchmark_out="$json" ;;
      e2e) env $settings "$build/bench/bench_e2e" --precision=fp16 '--benchmark_filter=^BM_E2E_Image/256' \
             --benchmark_repetitions=3 --benchmark_out="$json" ;;
      vae) env $settings "$build/bench/bench_vae" --benchmark_repetitions=5 --benchmark_out="$json" ;;
      kernels) env $settings "$build/bench/bench_kernels" \
                 "--benchmark_filter=${AB_KERNELS_FILTER:-^(attention_form|residual_layernorm_modulate)/.*fp16}" \
                 --benchmark_min_time=0.05s --benchmark_repetitions=3 --benchmark_report_aggregates_only=true \
                 --benchmark_out="$json" ;;
    esac >"$work/ab/${side}_${bench}_${round}.txt" 2>&1 \
      || { tail -20 "$work/ab/${side}_${bench}_${round}.txt"; echo "ab.sh: $bench failed on side $side" >&2; exit 1; }
  done
}

if [ -n "$patch_file" ]; then
  echo "ab.sh: side a is the tree, side b the tree with $(basename "$patch_file"); $sides; $rounds round(s) of $benches" \
    | tee "$work/ab/sides.txt"
else
  echo "ab.sh: one build of the tree, $sides; $rounds round(s) of $benches" | tee "$work/ab/sides.txt"
  build_side ab
fi
for round in $(seq 1 "$rounds"); do
  if [ -n "$patch_file" ]; then
    patch -p1 -s -f <"$patch_file" >/dev/null || { echo "ab.sh: the patch no longer applies" >&2; exit 1; }
    applied=1
    build_side b
  fi
  bench_side b "$round"
  if [ -n "$patch_file" ]; then
    patch -p1 -R -s -f <"$patch_file" >/dev/null || { echo "ab.sh: the patch does not revert" >&2; exit 1; }
    applied=0
    build_side a
  fi
  bench_side a "$round"
done
python3 tools/gpu-host/ab_table.py "$work/ab" --out "$OUT/ab-table.md" || exit 1
tar -czf "$OUT/ab.tgz" -C "$work" ab
