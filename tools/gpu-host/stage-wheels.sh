#!/bin/sh
# Stages the Python wheels of bench/checkpoint_oracle.py's diffusers side into .wheels/ (git-ignored)
# for a GPU host without a package registry (run from the checkout root, on a machine that reaches
# PyPI). A folder of its own, carried only by the leases that run the oracle: the device tool
# carries at most 64 MiB with the tracked tree, and .deps/ with .bundle/ are most of it. diffusers 0.30.3: it has DiTTransformer2DModel and asks for
# huggingface_hub >= 0.23.2, which the host's timm brings (diffusers 0.42 asks for >= 1.32); the
# rest of its requirements (torch, safetensors, numpy, Pillow, requests) come with the host's
# PyTorch environment, and the small ones it may lack are staged beside it: importlib_metadata,
# zipp, packaging, filelock, and regex once per CPython 3.10 to 3.13. tools/gpu-host/oracle.sh
# installs, with --no-deps into a folder of its own, only those the host cannot import.
set -eu
root=$(git rev-parse --show-toplevel)
dest="$root/.wheels"
rm -rf "$dest" && mkdir -p "$dest"
python3 -m pip download -q --no-deps -d "$dest" diffusers==0.30.3 "importlib_metadata>=4" "zipp>=3" "packaging>=20" "filelock>=3"
for version in 3.10 3.11 3.12 3.13; do
  python3 -m pip download -q --no-deps --only-binary=:all: --platform manylinux2014_x86_64 \
    --python-version "$version" -d "$dest" regex
done
ls "$dest"
du -sh "$dest"
