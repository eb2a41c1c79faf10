#!/bin/bash
# The checkpoint oracle on the GPU host: bench/checkpoint_oracle.py with DiT-XL/2 at 256 on the
# cuda backend (fp32, fp16 and bf16), diffusers included. Run from a tree whose BUILD holds
# model/cli/dit-sample; .wheels/ (tools/gpu-host/stage-wheels.sh) supplies what the host's
# Python lacks, installed with --no-deps into WORK/pylib. The checkpoints (about 8 GB) go to
# WORK and are removed at the end (ORACLE_KEEP=PATH keeps the converted one there: the checkpoint
# of tools/gpu-host/weights-gate.sh); the JSON and the log go to OUT.
#   tools/gpu-host/oracle.sh BUILD WORK OUT
set -uo pipefail
[ $# -eq 3 ] || { echo "usage: oracle.sh BUILD WORK OUT" >&2; exit 2; }
build=$1 work=$2 out=$3
sample=$build/model/cli/dit-sample
[ -x "$sample" ] || { echo "oracle: no $sample (build first)" >&2; exit 2; }
mkdir -p "$work/pylib" "$out" || exit 2
export PYTHONPATH="$work/pylib${PYTHONPATH:+:$PYTHONPATH}"
wheels=${ORACLE_WHEELS:-$PWD/.wheels}
python=${PYTHON:-python3}
tag=$("$python" -c 'import sys; print(f"cp{sys.version_info[0]}{sys.version_info[1]}")')
for pair in importlib_metadata:importlib_metadata zipp:zipp packaging:packaging filelock:filelock regex:regex diffusers:diffusers; do
  module=${pair%%:*} wheel=${pair##*:}
  "$python" -c "import $module" 2>/dev/null && continue
  file=$(ls "$wheels"/"$wheel"-*-py3-none-any.whl "$wheels"/"$wheel"-*-"$tag"-*.whl 2>/dev/null | head -n 1)
  [ -n "$file" ] || { echo "oracle: $module is not importable and $wheels has no wheel of it" >&2; exit 2; }
  "$python" -m pip install -q --no-deps --no-index --target "$work/pylib" "$file" || exit 2
done
"$python" -c "import diffusers; print('oracle: diffusers', diffusers.__version__)" || exit 2
"$python" bench/checkpoint_oracle.py --dit-sample "$sample" --backend cuda --model xl2 \
  --precisions fp32,fp16,bf16 --diffusers on --steps 50 --work-dir "$work/run" --out "$out/oracle.json" \
  2>&1 | tee "$out/oracle.log"
status=${PIPESTATUS[0]}
if [ -n "${ORACLE_KEEP:-}" ] && [ -f "$work/run/dit-converted.safetensors" ]; then
  mv "$work/run/dit-converted.safetensors" "$ORACLE_KEEP" && echo "oracle: kept the converted checkpoint as $ORACLE_KEEP"
fi
rm -rf "$work/run"
exit "$status"
