#!/bin/sh
# Stages CUTLASS's C++ headers (include/cutlass and include/cute of NVIDIA's nvidia-cutlass wheel,
# the version tools/install-deps.sh pins) into .deps/ for a GPU host without a package registry,
# as one archive: .deps/root/usr/share/cutlass/include.tar.xz. Unpacked they are 26 MB, more than
# the device tool's 64 MiB leaves beside the tracked tree, .deps/ and .bundle/; packed, 0.9 MB.
# cmake/FindCUTLASS.cmake finds the archive there (through CMAKE_PREFIX_PATH, which `. .deps/env.sh`
# sets, or in the tree's own .deps/) and unpacks it once into the build tree.
#
#   tools/gpu-host/stage-cutlass.sh [WHEEL]   # from the checkout root, after stage-deps.sh
#
# WHEEL: a downloaded nvidia_cutlass-4.2.0.0-py3-none-any.whl; without it, pip downloads it (on a
# machine that reaches PyPI). Prints the archive's size and what the device tool would carry.
set -eu
version=4.2.0.0
# shellcheck source=tools/gpu-host/stage-common.sh
. "$(dirname "$0")/stage-common.sh"
stage_begin stage-cutlass
dest="$root/.deps/root/usr/share/cutlass"
if [ $# -ge 1 ]; then
  wheel=$1
else
  python3 -m pip download -q --no-deps -d "$work" "nvidia-cutlass==$version"
  wheel="$work/nvidia_cutlass-$version-py3-none-any.whl"
fi
case "$(basename "$wheel")" in
  "nvidia_cutlass-$version-"*.whl) ;;
  *) echo "stage-cutlass: $wheel is not nvidia-cutlass $version" >&2; exit 2 ;;
esac
python3 - "$wheel" "$work/unpacked" <<'EOF'
import sys, zipfile
prefix = "cutlass_library/source/"
with zipfile.ZipFile(sys.argv[1]) as wheel:
    for name in wheel.namelist():
        if name.startswith((prefix + "include/cutlass/", prefix + "include/cute/")):
            wheel.extract(name, sys.argv[2])
EOF
mkdir -p "$dest"
# The same bytes for the same wheel (sorted, no owners or times), so that a build tree that
# unpacked it once does not unpack it again after a fresh staging.
tar -C "$work/unpacked/cutlass_library/source" --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner \
  -cf - include/cutlass include/cute | xz -9e >"$dest/include.tar.xz"
grep -q '#define CUTLASS_MAJOR' "$work/unpacked/cutlass_library/source/include/cutlass/version.h"
du -sh "$dest/include.tar.xz" "$root/.deps" "$root/.bundle" 2>/dev/null || true
stage_check_carry "$dest/include.tar.xz"
