#!/usr/bin/env python3
"""A stack-of-stars case in BART's layout for timing `radstream recon` on volumes (issue 56's V1 by default):
golden-angle spokes repeated in every kz partition, 2x readout oversampling, random complex k-space.

    python3 scripts/make_stack_case.py DIR [--matrix 192 --partitions 32 --spokes 96 --coils 32]

writes DIR/traj.{hdr,cfl} [3 2N spokes*P] and DIR/ksp.{hdr,cfl} [1 2N spokes*P coils]."""
import argparse
import os

import numpy as np


def writecfl(base, a):
    with open(base + ".hdr", "w") as h:
        h.write("# Dimensions\n" + " ".join(str(d) for d in a.shape) + "\n")
    np.asfortranarray(a, dtype=np.complex64).T.tofile(base + ".cfl")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--matrix", type=int, default=192)
    ap.add_argument("--partitions", type=int, default=32)
    ap.add_argument("--spokes", type=int, default=96)
    ap.add_argument("--coils", type=int, default=32)
    a = ap.parse_args()
    n, p, j, c = a.matrix, a.partitions, a.spokes, a.coils
    s = 2 * n
    os.makedirs(a.dir, exist_ok=True)
    golden = np.pi * (np.sqrt(5) - 1) / 2
    r = (np.arange(s) - s / 2) / 2.0  # BART units: +-N/2 over 2N samples
    ang = np.arange(j) * golden
    star = np.zeros((3, s, j), np.complex64)
    star[0] = r[:, None] * np.cos(ang)[None, :]
    star[1] = r[:, None] * np.sin(ang)[None, :]
    traj = np.concatenate([star + np.array([0, 0, q - p // 2])[:, None, None] for q in range(p)], axis=2)
    writecfl(os.path.join(a.dir, "traj"), traj)
    rng = np.random.default_rng(1)
    ksp = (rng.standard_normal((1, s, j * p, c), np.float32) +
           1j * rng.standard_normal((1, s, j * p, c), np.float32)).astype(np.complex64)
    writecfl(os.path.join(a.dir, "ksp"), ksp)


if __name__ == "__main__":
    main()
