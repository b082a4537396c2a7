#!/usr/bin/env bash
# Regenerates the README's key table (between the config-keys markers) from `radstream config-keys
# --markdown`; the test Cli.ReadmeKeyTableIsTheGeneratedOne fails until it is run after a key changes.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/radstream}
python3 - "$bin" <<'PY'
import subprocess, sys
out = subprocess.run([sys.argv[1], 'config-keys', '--markdown'], capture_output=True, text=True, check=True).stdout
s = open('README.md').read()
begin, end = '<!-- config-keys:begin -->\n', '<!-- config-keys:end -->'
a = s.index(begin) + len(begin)
b = s.index(end)
open('README.md', 'w').write(s[:a] + out + s[b:])
PY
