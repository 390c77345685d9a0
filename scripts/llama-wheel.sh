#!/usr/bin/env bash
# Builds llama-cpp-python once per machine for every x86-64 CPU, and installs it into a virtualenv.
#
#   scripts/llama-wheel.sh PYTHON        build (or reuse) the portable wheel, install it into PYTHON's env
#   scripts/llama-wheel.sh --print-key   the build's cache key (version, flags, removed variants, arch)
#
# Why not plain `pip install llama-cpp-python`: its default build is -march=native, so the wheel runs only
# on CPUs with the build machine's instruction set, and on Intel CPUs with AMX it repacks the weights for
# an AMX matmul that segfaults (issue 20). This build compiles the CPU backend once per instruction-set
# level (GGML_CPU_ALL_VARIANTS, loaded as modules: GGML_BACKEND_DL) and the app loads the best one the
# CPU supports at run time (core/models/runtimes/llama_backend.py); the AMX variant is removed.
#
# pip's own wheel cache keys a wheel by the sdist alone, not by CMAKE_ARGS, so a native wheel cached
# there would be reused for a portable build: this script keeps its wheels in its own cache, keyed by
# everything that changes the build, and builds with --no-cache-dir.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
version="$(sed -n 's/^llama-cpp-python==\([^ ]*\).*/\1/p' "$here/requirements/constraints.txt")"
[ -n "$version" ] || { echo "llama-wheel: no llama-cpp-python pin in requirements/constraints.txt" >&2; exit 1; }

cmake_args=(
  -DGGML_NATIVE=OFF          # never the build machine's -march=native
  -DGGML_BACKEND_DL=ON       # CPU backends as loadable modules ...
  -DGGML_CPU_ALL_VARIANTS=ON # ... one per x86-64 level (x64, sse42, sandybridge, haswell, skylakex, icelake, zen4 ...)
  -DCMAKE_INSTALL_BINDIR=llama_cpp/lib  # the modules go beside libllama.so, where the app loads them from
  -DLLAVA_BUILD=OFF          # the app asks text models only; mtmd (images) is a third of the compile
)
# Variants whose CPU backend would use Intel AMX (llama.cpp's AMX matmul segfaults; issue 20).
removed_variants=(sapphirerapids)

# Only what changes the wheel goes into the key (bump build_revision when the steps below change it), so
# editing a message or a comment here never costs a 17-minute rebuild.
build_revision=1
key="$(printf '%s\n' "$version" "${cmake_args[*]}" "${removed_variants[*]}" "$(uname -m)" \
       "$build_revision" | sha256sum | cut -c1-16)"
if [ "${1:-}" = "--print-key" ]; then echo "$key"; exit 0; fi
python="${1:?usage: scripts/llama-wheel.sh PYTHON}"

cache="${GALLERY_APP_WHEEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gallery-app/llama-wheels}/$version-$key"
marker="$("$python" -c 'import sys; print(sys.prefix)')/.llama-cpp-build"

if [ "$(cat "$marker" 2>/dev/null)" = "$key" ] && "$python" -c 'import llama_cpp' 2>/dev/null; then
  exit 0  # this virtualenv already has this build
fi

wheel="$(ls "$cache"/llama_cpp_python-*.whl 2>/dev/null | head -n1 || true)"
if [ -z "$wheel" ]; then
  echo "Building llama-cpp-python $version for every x86-64 CPU (once per machine; 12–18 minutes on 2 cores) ..."
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' EXIT
  start=$SECONDS
  CMAKE_ARGS="${cmake_args[*]}" CMAKE_BUILD_PARALLEL_LEVEL="${JOBS:-$(nproc 2>/dev/null || echo 2)}" \
    "$python" -m pip wheel --quiet --no-deps --no-cache-dir --no-binary llama-cpp-python \
    "llama-cpp-python==$version" -w "$work/built"
  built="$(ls "$work"/built/llama_cpp_python-*.whl)"
  # Remove the AMX variants from the wheel; `wheel pack` rewrites its RECORD.
  "$python" -m wheel unpack --dest "$work/unpacked" "$built" >/dev/null
  for variant in "${removed_variants[@]}"; do
    find "$work/unpacked" -name "libggml-cpu-$variant.so*" -delete
  done
  if ! ls "$work"/unpacked/*/llama_cpp/lib/libggml-cpu-x64.so >/dev/null 2>&1; then
    echo "llama-wheel: the build has no CPU backend modules in llama_cpp/lib; refusing to install it" >&2
    exit 1
  fi
  mkdir -p "$work/packed" "$(dirname "$cache")"
  "$python" -m wheel pack --dest-dir "$work/packed" "$work"/unpacked/* >/dev/null
  rm -rf "$cache.tmp" && mkdir -p "$cache.tmp" && mv "$work"/packed/*.whl "$cache.tmp/"
  rm -rf "$cache" && mv "$cache.tmp" "$cache"   # a build cut short never leaves a wheel behind
  wheel="$(ls "$cache"/llama_cpp_python-*.whl | head -n1)"
  echo "Built in $((SECONDS - start)) s: $wheel"
fi
"$python" -m pip install --quiet --force-reinstall --no-deps "$wheel"
echo "$key" > "$marker"
