#!/bin/sh
# Stages cudnn-frontend's C++ headers (include/ of NVIDIA's nvidia-cudnn-frontend wheel, the
# version tools/install-deps.sh pins) into .deps/ for a GPU host without a package registry, as
# one archive: .deps/root/usr/share/cudnn-frontend/include.tar.xz (3.2 MB unpacked). cuDNN itself
# comes with stage-deps.sh. cmake/FindCudnnFrontend.cmake finds the archive there (through
# CMAKE_PREFIX_PATH, which `. .deps/env.sh` sets, or in the tree's own .deps/) and unpacks it once
# into the build tree.
#
#   tools/gpu-host/stage-cudnn-frontend.sh [WHEEL]   # from the checkout root, after stage-deps.sh
#
# WHEEL: a downloaded nvidia_cudnn_frontend-1.32.0-*.whl (any Python or platform tag: the headers
# are the same); without it, pip downloads the one for this Python (on a machine that reaches
# PyPI). Prints the archive's size and what the device tool would carry.
set -eu
version=1.32.0
# shellcheck source=tools/gpu-host/stage-common.sh
. "$(dirname "$0")/stage-common.sh"
stage_begin stage-cudnn-frontend
dest="$root/.deps/root/usr/share/cudnn-frontend"
if [ $# -ge 1 ]; then
  wheel=$1
else
  python3 -m pip download -q --no-deps -d "$work" "nvidia-cudnn-frontend==$version"
  wheel=$(ls "$work"/nvidia_cudnn_frontend-"$version"-*.whl)
fi
case "$(basename "$wheel")" in
  "nvidia_cudnn_frontend-$version-"*.whl) ;;
  *) echo "stage-cudnn-frontend: $wheel is not nvidia-cudnn-frontend $version" >&2; exit 2 ;;
esac
python3 - "$wheel" "$work/unpacked" <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as wheel:
    for name in wheel.namelist():
        if name.startswith("include/") and not name.endswith("/"):
            wheel.extract(name, sys.argv[2])
PY
grep -q "#define CUDNN_FRONTEND_MINOR_VERSION" "$work/unpacked/include/cudnn_frontend_version.h"
mkdir -p "$dest"
# The same bytes for the same wheel (sorted, no owners or times), so that a build tree that
# unpacked it once does not unpack it again after a fresh staging.
tar -C "$work/unpacked" --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -cf - include |
  xz -9e >"$dest/include.tar.xz"
du -sh "$dest/include.tar.xz" "$root/.deps" "$root/.bundle" 2>/dev/null || true
stage_check_carry "$dest/include.tar.xz"
