#!/usr/bin/env bash
# Installs gnnd's build and test dependencies from Debian's archive (bookworm or newer). Idempotent:
# does nothing when every package is already present. CUDA's nvcc is optional and not installed here
# (the CPU backend builds without it; CUDA code is compiled whenever /usr/local/cuda/bin/nvcc exists).
# --build: only what building gnnd and reading batches with numpy need (deploy/quickstart.sh): no torch, no
# test tools, no clang, which are most of the download.
set -euo pipefail
packages=(
  build-essential cmake ninja-build pkg-config
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libabsl-dev libboost-dev zlib1g-dev libzip-dev libyaml-cpp-dev liburing-dev
  libdlpack-dev libgtest-dev libgmock-dev libbenchmark-dev libsystemd-dev libmetis-dev libucx-dev
  python3 python3-numpy
)
if [ "${1:-}" != "--build" ]; then
  packages+=(git clang libclang-rt-14-dev systemd python3-pytest python3-torch python3-yaml python3-pip
             python3-setuptools python3-venv python3-wheel ucx-utils)
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "installing: ${missing[*]}" >&2
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
