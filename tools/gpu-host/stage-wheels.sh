#!/bin/sh
# Stages the Python wheels of bench/checkpoint_oracle.py's diffusers side into .deps/wheels/ for a
# GPU host without a package registry (run from the checkout root, after stage-deps.sh, on a
# machine that reaches PyPI). diffusers 0.30.3: it has DiTTransformer2DModel and asks for
# huggingface_hub >= 0.23.2, which the host's timm brings (diffusers 0.42 asks for >= 1.32); the
# rest of its requirements (torch, safetensors, numpy, Pillow, requests) come with the host's
# PyTorch environment, and the small ones it may lack are staged beside it: importlib_metadata,
# zipp, packaging, filelock, and regex once per CPython 3.10 to 3.13. tools/gpu-host/oracle.sh
# installs, with --no-deps into a folder of its own, only those the host cannot import.
set -eu
root=$(git rev-parse --show-toplevel)
dest="$root/.deps/wheels"
[ -d "$root/.deps" ] || { echo "stage-wheels: run ../shared/gpu-host/stage-deps.sh first" >&2; exit 2; }
rm -rf "$dest" && mkdir -p "$dest"
python3 -m pip download -q --no-deps -d "$dest" diffusers==0.30.3 "importlib_metadata>=4" "zipp>=3" "packaging>=20" "filelock>=3"
for version in 3.10 3.11 3.12 3.13; do
  python3 -m pip download -q --no-deps --only-binary=:all: --platform manylinux2014_x86_64 \
    --python-version "$version" -d "$dest" regex
done
ls "$dest"
du -sh "$dest"
