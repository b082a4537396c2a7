"""Summarises an ncu --csv kernel-duration profile: count and median time per kernel, largest total first."""
import collections
import csv
import sys

rows = list(csv.reader(open(sys.argv[1])))
start = next(i for i, r in enumerate(rows) if r and r[0] == "ID")
hdr = rows[start]
k, v = hdr.index("Kernel Name"), hdr.index("Metric Value")
t = collections.defaultdict(list)
for r in rows[start + 1:]:
    if len(r) == len(hdr):
        t[r[k][:100]].append(float(r[v].replace(",", "")))
for name, xs in sorted(t.items(), key=lambda kv: -sum(kv[1])):
    xs.sort()
    print(f"{len(xs):4d} x median {xs[len(xs) // 2] / 1000:9.2f} us  {name}")
