#!/bin/sh
# Installs the Debian 12 packages the project builds and tests with. Run as root (or with sudo).
# The CUDA toolkit (nvcc, cuBLAS, cuDNN, NCCL) is not a Debian package: without it the CPU
# backend, the driver and every CPU test still build.
set -eu
packages="cmake ninja-build ccache g++ clang libclang-rt-14-dev pkg-config
  libgtest-dev libgmock-dev libbenchmark-dev nlohmann-json3-dev libcli11-dev libpng-dev libssl-dev
  libgit2-dev libsqlite3-dev libpugixml-dev git python3 chromium clang-format bubblewrap
  python3-pip python3-torch slurm-wlm munge"
missing=""
for p in $packages; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; else sudo=""; fi
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -q
  # shellcheck disable=SC2086
  $sudo apt-get install -y -q --no-install-recommends $missing
fi

# tools/convert_checkpoint.py (and its test) needs safetensors beside Debian's torch: Debian 12
# has no package of it, and its system python3 refuses pip without --break-system-packages
# (PEP 668). /usr/bin/python3 by name, where python3-torch is, not whichever python3 leads PATH.
if ! /usr/bin/python3 -c "import safetensors" >/dev/null 2>&1; then
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; else sudo=""; fi
  $sudo /usr/bin/python3 -m pip install -q --break-system-packages "safetensors>=0.3.1"
fi

# The sm_86 resource check reads cuobjdump's report; a toolkit without cuobjdump (some CUDA
# installs ship nvcc alone) gets it from NVIDIA's PyPI wheel.
if { command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; } \
   && ! command -v cuobjdump >/dev/null 2>&1 && [ ! -x /usr/local/cuda/bin/cuobjdump ]; then
  python3 -m pip install -q nvidia-cuda-cuobjdump==13.2.51
fi

# CUTLASS's C++ headers (cmake/FindCUTLASS.cmake), from NVIDIA's nvidia-cutlass wheel at the version
# the project tests (tools/gpu-host/stage-cutlass.sh stages the same). Into a folder of its own
# with --target: pip then leaves the system Python alone, so PEP 668 does not apply and
# --break-system-packages is not needed, and CMake finds the headers at that fixed path without
# asking a Python. --no-deps: the wheel's requirements (cuda-python, numpy, scipy, ...) serve its
# Python DSL, which the build never runs.
cutlass=/opt/nvidia-cutlass
if { command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; } \
   && [ ! -d "$cutlass/nvidia_cutlass-4.2.0.0.dist-info" ]; then
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; else sudo=""; fi
  $sudo rm -rf "$cutlass"
  $sudo python3 -m pip install -q --no-deps --target "$cutlass" nvidia-cutlass==4.2.0.0
fi

# cudnn-frontend's C++ headers (cmake/FindCudnnFrontend.cmake), the include/ folder of NVIDIA's
# nvidia-cudnn-frontend wheel at the version the project tests (tools/gpu-host/stage-cudnn-frontend.sh
# stages the same), without the wheel's Python bindings (90 MB the build never uses): downloaded,
# and its headers alone unpacked into /opt/nvidia-cudnn-frontend/include, the marker last.
cudnn_frontend=/opt/nvidia-cudnn-frontend
if { command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; } \
   && [ ! -f "$cudnn_frontend/nvidia-cudnn-frontend-1.32.0" ]; then
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; else sudo=""; fi
  wheels=$(mktemp -d)
  python3 -m pip download -q --no-deps -d "$wheels" nvidia-cudnn-frontend==1.32.0
  $sudo rm -rf "$cudnn_frontend"
  $sudo python3 - "$wheels"/nvidia_cudnn_frontend-1.32.0-*.whl "$cudnn_frontend" <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as wheel:
    headers = [name for name in wheel.namelist() if name.startswith("include/") and not name.endswith("/")]
    assert "include/cudnn_frontend.h" in headers, f"{sys.argv[1]} holds no include/cudnn_frontend.h"
    for name in headers:
        wheel.extract(name, sys.argv[2])
PY
  $sudo touch "$cudnn_frontend/nvidia-cudnn-frontend-1.32.0"
  rm -rf "$wheels"
fi
