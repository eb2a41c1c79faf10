#!/bin/sh
# The main job on the embedded default: installs what is needed, builds the CPU backend, and
# samples images from a small DiT with seeded random weights into out/quickstart/.
set -eu
cd "$(dirname "$0")/.."
sh tools/install-deps.sh
cmake --preset cpu
cmake --build --preset cpu --target dit-sample
./build/cpu/model/cli/dit-sample --model DiT-S/8 --image-size 256 --random-weights --seed 1 \
  --class 207 --class 360 --steps 20 --cfg-scale 4.0 --sampler ddim --backend cpu \
  --vae tiny --out out/quickstart
