#!/usr/bin/env bash
# Builds the Python module (src/python/) again for another CPython than Debian's, e.g. a GPU machine's
# Python 3.12 with PyTorch, from the libraries the build already made (they do not depend on Python): the
# binding sources are compiled with that Python's headers and linked as CMake links the module, into
# .devcarry/python/radstream/. Usage: bash scripts/make_devcarry_python.sh /path/to/python3.12 (a Python
# with its headers, e.g. a pyenv one). Run after scripts/make_devcarry.sh (which empties .devcarry).
set -euo pipefail
cd "$(dirname "$0")/.."
py=${1:?usage: make_devcarry_python.sh PYTHON}
inc=$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
suffix=$("$py" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
dir=build/CMakeFiles/radstream_python.dir
flags=$(sed -n 's/^CXX_\(DEFINES\|INCLUDES\|FLAGS\) = //p' "$dir/flags.make" | tr '\n' ' ' |
        sed "s|-isystem /usr/include/python3[.0-9]*|-isystem $inc|")
out=.devcarry/python/radstream
mkdir -p "$out" .devcarry/python/obj
objs=()
for src in src/python/*.cpp; do
  o=.devcarry/python/obj/$(basename "$src" .cpp).o
  # shellcheck disable=SC2086
  c++ $flags -c "$src" -o "$o"
  objs+=("$o")
done
# CMake's link line without its compiler, output and objects: the libraries, in their order.
link=$(tr ' ' '\n' < "$dir/link.txt" | grep -v -e '^/usr/bin/c++$' -e '_core.*\.so$' -e '^-o$' -e '^-shared$' \
       -e '^CMakeFiles/radstream_python.dir/' | tr '\n' ' ')
(cd build && c++ -fPIC -O3 -shared -o "../$out/_core$suffix" "${objs[@]/#/../}" $link)
cp src/python/__init__.py "$out/"
strip --strip-unneeded "$out/_core$suffix"
rm -rf .devcarry/python/obj
ls -la "$out"
