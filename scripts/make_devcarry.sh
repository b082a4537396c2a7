#!/usr/bin/env bash
# Packs build/radstream and build/radstream_tests with every shared library they load (and this machine's
# glibc) into .devcarry/, for scripts/gpu_run.sh on a GPU machine that lacks the Debian packages.
set -euo pipefail
cd "$(dirname "$0")/.."
rm -rf .devcarry
mkdir -p .devcarry/lib .devcarry/glibc
cp build/radstream build/radstream_tests .devcarry/
strip --strip-unneeded .devcarry/radstream .devcarry/radstream_tests .devcarry/lib/* 2>/dev/null || true  # the carry has 64 MiB
for lib in $(ldd build/radstream build/radstream_tests | awk '/=> \//{print $3}' | sort -u); do
  case "$(basename "$lib")" in
    libc.so.*|libm.so.*|libdl.so.*|libpthread.so.*|librt.so.*|libresolv.so.*) cp -L "$lib" .devcarry/glibc/ ;;
    libcuda.so.*|libcufft.so.*|libcusparse.so.*|libnvJitLink.so.*) ;;  # the driver, cuFFT and cuSPARSE (too large
                                                                      # to carry) come from the GPU machine
    *) cp -L "$lib" .devcarry/lib/ ;;
  esac
done
cp -L /lib64/ld-linux-x86-64.so.2 .devcarry/glibc/
du -sh .devcarry
