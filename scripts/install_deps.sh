#!/usr/bin/env bash
# Installs the Debian 12 packages featmatch needs to build, test and run (idempotent).
# CUDA (nvcc, cuBLAS) is optional: when /usr/local/cuda/bin/nvcc exists the GPU module is built.
# Package names given as arguments are installed with them (scripts/gpu_bundle.sh's).
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache pkg-config git
  libopencv-dev libopencv-contrib-dev opencv-doc
  qt6-base-dev qt6-charts-dev libgl1-mesa-dev xvfb xauth
  libopenblas-dev libfaiss-dev
  libsqlite3-dev sqlite3 nlohmann-json3-dev libcli11-dev
  libgtest-dev libbenchmark-dev
  "$@"
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  echo "install_deps: all packages present"
  exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "install_deps: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
