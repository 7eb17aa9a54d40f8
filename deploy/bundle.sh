#!/usr/bin/env bash
# Makes a relocatable bundle of a build: OUT_DIR/gnnd-<version>-<arch>.tar.gz holding
#   bin/     gnnd, gnnctl
#   lib/     libgnnd_client.so and every shared library the programs need, except the C/C++ runtime
#            (libc, libm, libstdc++, libgcc_s, the loader) and the NVIDIA driver, which the target provides
#   python/  the gnnd Python package (pure Python), and its wheel with the client library inside
#   env.sh   source it: sets PATH, LD_LIBRARY_PATH, PYTHONPATH and GNND_CLIENT_LIBRARY to the unpacked bundle
# Usage: bash deploy/bundle.sh BUILD_DIR OUT_DIR [PROGRAM...]   (prints the archive's path)
# Extra programs (e.g. BUILD_DIR/tests/gpu_tests for tests/gpu/run_on_gpu.sh) go into bin/ with their libraries.
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 BUILD_DIR OUT_DIR [PROGRAM...]" >&2; exit 2; }
repo=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "$1" && pwd)
mkdir -p "$2"
out=$(cd "$2" && pwd)
version=$(sed -n 's/^project(gnnd VERSION \([0-9.]*\).*/\1/p' "$repo/CMakeLists.txt")
name="gnnd-${version}-$(uname -m)"
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
root="$stage/$name"
mkdir -p "$root/bin" "$root/lib" "$root/python"
runtime='^(linux-vdso|libc\.so|libm\.so|libdl\.so|librt\.so|libpthread\.so|ld-linux|libstdc\+\+\.so|libgcc_s\.so|libcuda\.so|libnvidia)'
files=("$build/server/gnnd" "$build/tools/gnnctl" "$build/client/libgnnd_client.so" "${@:3}")
for f in "${files[@]}"; do
  [ -e "$f" ] || { echo "$f: missing (build first: cmake --build $1)" >&2; exit 1; }
  case "$f" in *.so) dest="$root/lib" ;; *) dest="$root/bin" ;; esac
  cp -L "$f" "$dest/" && strip --strip-debug "$dest/$(basename "$f")"
  ldd "$f" | awk '/=>/ && $3 ~ /^\// {print $1, $3}' | while read -r lib path; do
    [[ $lib =~ $runtime ]] || [ -e "$root/lib/$lib" ] || cp -L "$path" "$root/lib/$lib"
  done
done
# UCX loads its transports beyond TCP and shared memory (cma; InfiniBand, RDMA CM) from the directory "ucx" beside
# libucs: the peers of a partitioned dataset use them where the target has the hardware.
if [ -e "$root/lib/libucs.so.0" ]; then
  ucx_modules=$(dirname "$(readlink -f "$(ldd "$build/server/gnnd" | awk '/libucs.so/ {print $3}')")")/ucx
  if [ -d "$ucx_modules" ]; then
    mkdir -p "$root/lib/ucx"
    for module in "$ucx_modules"/*.so.0; do
      cp -L "$module" "$root/lib/ucx/"
      ldd "$module" | awk '/=>/ && $3 ~ /^\// {print $1, $3}' | while read -r lib path; do
        [[ $lib =~ $runtime ]] || [ -e "$root/lib/$lib" ] || cp -L "$path" "$root/lib/$lib"
      done
    done
  fi
fi
cp -r "$repo/client/python/gnnd" "$root/python/"
find "$root/python" -name __pycache__ -prune -exec rm -rf {} +
# The wheel too, where the build made one: pip install --no-index --find-links python gnnd
cp "$build"/python/gnnd-*.whl "$root/python/" 2>/dev/null || true
cat >"$root/env.sh" <<'EOT'
# Source this file (bash) to run gnnd, gnnctl and Python trainers from this bundle.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export PATH="$here/bin:$PATH"
export LD_LIBRARY_PATH="$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PYTHONPATH="$here/python${PYTHONPATH:+:$PYTHONPATH}"
export GNND_CLIENT_LIBRARY="$here/lib/libgnnd_client.so"
EOT
tar -C "$stage" -czf "$out/$name.tar.gz" "$name"
echo "$out/$name.tar.gz"
