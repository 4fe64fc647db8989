#!/usr/bin/env bash
# Installs what the project needs (Debian packages; the PyTorch frontend's
# virtual environment, .venv) and configures the build in build/.
# Idempotent: a second run installs nothing and only re-runs CMake where the
# build directory does not exist yet.
#
# DTENSOR_NO_PYTHON=1 skips the environment (and configures the build with
# the frontend's tests UNSUPPORTED).
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools
          cmake ninja-build ccache g++ libgtest-dev
          libopenmpi-dev openmpi-bin python3 python3-venv)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" \
    || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# The frontend's environment: torch (CPU wheel where PyTorch's index is
# reachable, else PyPI's), numpy, transformers, pinned in
# python/requirements.txt, and the package itself (pip install -e python).
# A stamp of the requirements makes a second run a no-op.
VENV=${DTENSOR_VENV:-.venv}
PYTHON_FRONTEND=ON
if [ "${DTENSOR_NO_PYTHON:-0}" = 1 ]; then
  PYTHON_FRONTEND=OFF
else
  stamp="$VENV/.dtensor-requirements"
  if ! cmp -s python/requirements.txt "$stamp" 2>/dev/null ||
     ! "$VENV/bin/python" -c "import torch, transformers, dtensor" 2>/dev/null; then
    echo "setup: creating the Python environment $VENV (torch, transformers)"
    start=$(date +%s)
    python3 -m venv "$VENV"
    torch_pin=$(grep '^torch==' python/requirements.txt)
    if python3 -c "import urllib.request; urllib.request.urlopen('https://download.pytorch.org/whl/cpu/torch/', timeout=10)" 2>/dev/null; then
      "$VENV/bin/pip" install -q --index-url https://download.pytorch.org/whl/cpu "$torch_pin"
    else
      echo "setup: download.pytorch.org unreachable, torch from PyPI (CUDA wheel, larger)"
    fi
    "$VENV/bin/pip" install -q -r python/requirements.txt
    "$VENV/bin/pip" install -q --no-deps -e python
    cp python/requirements.txt "$stamp"
    echo "setup: environment ready in $(( $(date +%s) - start )) s, $(du -sh "$VENV" | cut -f1)"
  fi
fi

BUILD_DIR=${BUILD_DIR:-build}
if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  cmake -G Ninja -S . -B "$BUILD_DIR" \
    -DCMAKE_BUILD_TYPE=Release \
    -DDTENSOR_ENABLE_PYTHON_FRONTEND=$PYTHON_FRONTEND \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
    -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit
fi
