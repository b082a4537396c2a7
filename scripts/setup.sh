#!/usr/bin/env bash
# radstream set-up: installs the missing Debian packages (once), builds, then runs the main job or the tests.
#   bash scripts/setup.sh demo [radstream demo options]   # the main job
#   bash scripts/setup.sh test                            # the whole test suite through ctest
# Environment: BUILD_DIR (default build), JOBS (default: all cores), RADSTREAM_CUDA=AUTO|ON|OFF (default AUTO).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

what=${1:-}
case "$what" in
  demo|test|build) shift ;;
  *) echo "usage: bash scripts/setup.sh demo|test|build [options]" >&2; exit 2 ;;
esac

packages=(build-essential cmake pkg-config libzmq3-dev cppzmq-dev libglfw3-dev libimgui-dev libgl-dev
          libfftw3-dev libismrmrd-dev libhdf5-dev libyaml-cpp-dev libcli11-dev libspdlog-dev libfmt-dev
          libgtest-dev libstb-dev libpng-dev xvfb xauth bart nlohmann-json3-dev openmpi-bin libopenmpi-dev
          time ismrmrd-schema libxml2-utils liblapack-dev libpugixml-dev pybind11-dev libdlpack-dev python3-dev python3-numpy python3-venv)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${#missing[@]} missing Debian packages: ${missing[*]}"
  sudo_cmd=()
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "setup: run as root (or install sudo) to install: ${missing[*]}" >&2; exit 1; }
    sudo_cmd=(sudo)
  fi
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -q
  "${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
else
  echo "setup: all Debian packages present"
fi

build=${BUILD_DIR:-build}
jobs=${JOBS:-$(nproc)}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DRADSTREAM_CUDA="${RADSTREAM_CUDA:-AUTO}"
if [ "$what" = demo ]; then  # the demo needs the program only; the tests are built by `setup.sh test`
  cmake --build "$build" -j"$jobs" --target radstream
else
  cmake --build "$build" -j"$jobs"
fi

case "$what" in
  demo) exec "$build/radstream" demo "$@" ;;
  test) cd "$build" && exec ctest --output-on-failure -j"$jobs" "$@" ;;
  build) echo "setup: built $build/radstream" ;;
esac
