#!/usr/bin/env bash
# A device check of the Python module on the GPU with the machine's PyTorch: tests/python/test_radstream_gpu.py
# (CUDA tensors through DLPack with no host copy, the caller's stream, gradcheck; RADSTREAM_REQUIRE_GPU=1), the
# R1 frame through NufftPlan.adjoint on torch tensors, and the native F1/R1 cases in the same call. Carry:
#   bash scripts/make_devcarry.sh && bash scripts/make_devcarry_python.sh /path/to/python3.12 &&
#   mkdir -p .dcpack && tar cJf .dcpack/dc.tar.xz .devcarry
set -u
tar xJf .dcpack/dc.tar.xz
cp src/python/__init__.py .devcarry/python/radstream/  # the package's Python part as it is in the tree
source scripts/gpu_env.sh > /dev/null
mkdir -p "$OUT" /tmp/pylib
# The carried libraries for the module, less the C++ runtime: the machine's own (newer) one serves PyTorch too.
for f in .devcarry/lib/*; do
  case "$(basename "$f")" in libstdc++*|libgcc_s*) ;; *) cp "$f" /tmp/pylib/ ;; esac
done
export LD_LIBRARY_PATH="/tmp/pylib:$(dirname "$cufft"):${cusparse:+$(dirname "$cusparse"):}${jitlink:+$(dirname "$jitlink"):}/usr/local/nvidia/lib64:/usr/local/cuda/lib64"
export PYTHONPATH=$PWD/.devcarry/python PYTHONUNBUFFERED=1
python3 -c 'import sys, torch, numpy; print(sys.version.split()[0], "torch", torch.__version__, "numpy", numpy.__version__, torch.cuda.get_device_name())'
(cd tests/python && RADSTREAM_REQUIRE_GPU=1 RADSTREAM_BENCH_OUT="$OUT/python-nufft-r1.json" \
  python3 test_radstream_gpu.py) 2>&1 | tee "$OUT/python-gpu.log"
unset PYTHONPATH
run .devcarry/radstream bench --case F1 R1 --frames 200 --warmup 20 --out "$OUT/native-f1-r1.json" \
  > "$OUT/native-bench.log" 2>&1
grep -vE '^\[' "$OUT/native-bench.log" | tail -30
