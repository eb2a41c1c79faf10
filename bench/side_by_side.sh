#!/usr/bin/env bash
# Fixed during a session (the performance harness).
# The side-by-side table on one GPU, in one run: the engine's forward pass (DiT-XL/2 at 256 with
# batch 2 and 64, at 512 with batch 2) and one whole image's sampling loop (250 DDPM steps,
# guidance 4, no decode), all fp16, against PyTorch eager, torch.compile and torch.compile with
# CUDA graphs, and beside the library floor (the pass's matrix products and attention calls alone
# on cuBLAS, cuDNN and PyTorch's SDPA, graph-captured: the `floor` column); torch_reference.py
# first proves itself on the reference vectors and checks the engine's output against its own on
# one checkpoint. Builds nothing: give a build directory with the bench targets built. About 5
# minutes on an H200 (torch.compile takes ~30 s per shape).
#
#   bench/side_by_side.sh BUILD_DIR [OUT_DIR]      (OUT_DIR default: BUILD_DIR/side-by-side)
#
# OUT_DIR receives bench_forward.json, bench_e2e.json, torch_reference.json and table.md.
# PYTHON picks the interpreter (default python3; it needs torch, safetensors and numpy); MODES
# the PyTorch columns (default eager,compile,compile+graphs,floor; eager alone takes a minute).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
if [ $# -lt 1 ] || [ ! -d "$1" ]; then
  echo "usage: bench/side_by_side.sh BUILD_DIR [OUT_DIR]" >&2
  exit 2
fi
build=$(cd "$1" && pwd)
out=${2:-$build/side-by-side}
python=${PYTHON:-python3}
for binary in bench_forward bench_e2e; do
  if [ ! -x "$build/bench/$binary" ]; then
    echo "side_by_side.sh: $build/bench/$binary is missing; build it first (cmake --build $build --target $binary)" >&2
    exit 2
  fi
done
mkdir -p "$out"

echo "== engine: one forward pass, fp16"
"$build/bench/bench_forward" --precision=fp16 \
  --benchmark_filter='^BM_Forward/image:(256/batch:(2|64)|512/batch:2)/' \
  --benchmark_out="$out/bench_forward.json" --benchmark_out_format=json

echo "== engine: one image's sampling loop (250 DDPM steps, guidance 4, no decode), fp16"
"$build/bench/bench_e2e" --precision=fp16 --benchmark_filter='^BM_E2E_SampleLatents/256/' \
  --benchmark_out="$out/bench_e2e.json" --benchmark_out_format=json

echo "== PyTorch, and the table"
"$python" "$here/torch_reference.py" --engine-build "$build" \
  --engine-json "$out/bench_forward.json" --engine-json "$out/bench_e2e.json" \
  --work-dir "$out" --out "$out/torch_reference.json" --modes "${MODES:-eager,compile,compile+graphs,floor}" \
  | tee "$out/table.md"
