"""The Python module against real references: `bart nufft` (run by the test) both ways, the adjoint identity,
`radstream recon` (the command, run by the test) for every method and on MRD files written and read from
Python, a running pipeline's published frames and a chained MRD session's images against the offline windows, the wheel in a fresh virtual
environment, and errors that name the bad argument.
Run by ctest with PYTHONPATH=build/python, RADSTREAM_BIN (the program) and BART on the PATH."""
import os
import subprocess
import sys
import tempfile
import time
import unittest

import numpy as np

import radstream

BIN = os.environ.get("RADSTREAM_BIN", "radstream")
HAVE_BART = subprocess.run(["sh", "-c", "command -v bart"], capture_output=True).returncode == 0
NEED_BART = os.environ.get("RADSTREAM_REQUIRE_BART") == "1"


def readcfl(base):
    """BART's cfl.readcfl: Fortran order, trailing singleton dimensions dropped."""
    with open(base + ".hdr") as h:
        h.readline()
        dims = [int(v) for v in h.readline().split()]
    n = int(np.prod(dims))
    dims = dims[:int(np.searchsorted(np.cumprod(dims), n)) + 1]
    data = np.fromfile(base + ".cfl", dtype=np.complex64, count=n)
    return data.reshape(dims, order="F")


def writecfl(base, a):
    with open(base + ".hdr", "w") as h:
        h.write("# Dimensions\n" + " ".join(str(d) for d in a.shape) + "\n")
    np.asfortranarray(a, dtype=np.complex64).T.tofile(base + ".cfl")  # column-major bytes


def run(cmd, cwd):
    r = subprocess.run(cmd, cwd=cwd, shell=True, capture_output=True, text=True)
    if r.returncode != 0:
        raise AssertionError(f"{cmd} failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")
    return r


def rel(a, b):
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


class RadialData:
    """BART's radial phantom: 8 coils, 2x readout oversampling, N x N."""

    def __init__(self, n=32, spokes=33, coils=8):
        self.dir = tempfile.TemporaryDirectory()
        d = self.dir.name
        self.n = n
        run(f"bart traj -r -x {2 * n} -y {spokes} traj_os && bart scale 0.5 traj_os traj && "
            f"bart phantom -k -s {coils} -t traj ksp", d)
        self.traj = readcfl(os.path.join(d, "traj"))
        self.ksp = readcfl(os.path.join(d, "ksp"))


@unittest.skipUnless(HAVE_BART or NEED_BART, "BART is not installed")
class AgainstBart(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.data = RadialData()

    def test_nufft_equals_bart_nufft_both_ways(self):
        d, n = self.data.dir.name, self.data.n
        ours_adj = radstream.nufft(self.data.traj, self.data.ksp, adjoint=True, dims=(n, n), backend="cpu")
        run(f"bart nufft -a -d {n}:{n}:1 traj ksp bart_adj", d)
        bart_adj = readcfl(os.path.join(d, "bart_adj"))
        self.assertEqual(ours_adj.shape, bart_adj.shape)  # (n, n, 1, 8), as readcfl gives it
        # BART's own kernel is the larger error (the command's test holds it to 1e-2 as well); the command
        # itself is matched to rounding.
        self.assertLess(rel(ours_adj, bart_adj), 1e-2)
        run(f"{BIN} nufft -a -d {n}:{n} -t traj --backend cpu ksp cmd_adj", d)
        self.assertLess(rel(ours_adj, readcfl(os.path.join(d, "cmd_adj"))), 1e-6)
        img = np.asfortranarray(bart_adj[:, :, 0, 0].astype(np.complex64))
        writecfl(os.path.join(d, "img"), img)
        run("bart nufft traj img bart_fwd", d)
        bart_fwd = readcfl(os.path.join(d, "bart_fwd"))
        ours_fwd = radstream.nufft(self.data.traj, img, backend="cpu")
        self.assertEqual(ours_fwd.shape, bart_fwd.shape)
        self.assertLess(rel(ours_fwd, bart_fwd), 1e-2)

    def test_the_plan_is_its_own_adjoint_and_its_normal(self):
        n = self.data.n
        plan = radstream.NufftPlan(self.data.traj, dims=(n, n), backend="cpu")
        self.assertEqual(plan.dims, [n, n])
        rng = np.random.default_rng(7)
        x = (rng.standard_normal((n, n)) + 1j * rng.standard_normal((n, n))).astype(np.complex64)
        y = (rng.standard_normal(self.data.ksp.shape[:3]) +
             1j * rng.standard_normal(self.data.ksp.shape[:3])).astype(np.complex64)
        lhs = np.vdot(plan.forward(x).astype(np.complex128), y.astype(np.complex128))
        rhs = np.vdot(x.astype(np.complex128), plan.adjoint(y).astype(np.complex128))
        self.assertLess(abs(lhs - rhs) / abs(lhs), 1e-5)
        self.assertLess(rel(plan.normal(x), plan.adjoint(plan.forward(x))), 1e-7)
        # A C-ordered float64 input is converted, the result the same.
        self.assertLess(rel(plan.forward(np.ascontiguousarray(x.astype(np.complex128))), plan.forward(x)), 1e-7)

    def test_recon_equals_the_command_for_every_method(self):
        d, n = self.data.dir.name, self.data.n
        for method, keys, flags in [
            ("gridding", {}, ""),
            ("fbp", {}, ""),
            ("cg-sense", {"iterations": 6, "lambda_": 0.01}, "--iterations 6 --lambda 0.01"),
            ("nlinv", {"newton": 5}, "--newton 5"),
        ]:
            with self.subTest(method=method):
                run(f"{BIN} recon --traj traj.cfl --kspace ksp.cfl --matrix {n} --method {method} "
                    f"--backend cpu {flags} --out cmd_{method}.cfl", d)
                cmd = readcfl(os.path.join(d, f"cmd_{method}"))
                ours = radstream.recon(self.data.traj, self.data.ksp, matrix=n, method=method, backend="cpu",
                                       **keys)
                self.assertEqual(ours.shape, cmd.shape)
                self.assertGreater(np.abs(cmd).max(), 0)
                self.assertLessEqual(rel(ours, cmd), 1e-5, method)


    def test_cg_sense_with_given_coil_maps_equals_the_command(self):
        d, n = self.data.dir.name, self.data.n
        run(f"bart phantom -S {self.data.ksp.shape[3]} -x {n} sens", d)
        sens = readcfl(os.path.join(d, "sens"))
        run(f"{BIN} recon --traj traj.cfl --kspace ksp.cfl --matrix {n} --method cg-sense --sens sens.cfl "
            "--iterations 8 --backend cpu --out cmd_sens.cfl", d)
        ours = radstream.recon(self.data.traj, self.data.ksp, matrix=n, method="cg-sense", sens=sens,
                               iterations=8, backend="cpu")
        cmd = readcfl(os.path.join(d, "cmd_sens"))
        self.assertGreater(np.abs(cmd).max(), 0)
        self.assertLessEqual(rel(ours, cmd), 1e-5)
        with self.assertRaisesRegex(radstream.ConfigError, "sens: coil maps go with method='cg-sense'"):
            radstream.recon(self.data.traj, self.data.ksp, matrix=n, method="gridding", sens=sens)

    def test_a_stack_of_stars_gives_the_volume_of_the_command(self):
        d, n, parts = self.data.dir.name, self.data.n, 8
        star = self.data.traj  # (3, samples, spokes), kz 0
        traj = np.concatenate([star + np.array([0, 0, p - parts // 2])[:, None, None] for p in range(parts)], axis=2)
        writecfl(os.path.join(d, "sos_traj"), traj)
        run(f"bart phantom -3 -x {n} -s 4 -k -t sos_traj sos_ksp && bart phantom -3 -x {n} -S 4 sbig && "
            f"bart resize -c 2 {parts} sbig sos_sens", d)
        ksp, sens = readcfl(os.path.join(d, "sos_ksp")), readcfl(os.path.join(d, "sos_sens"))
        for method, keys, flags in [("gridding", {}, ""),
                                    ("cg-sense", {"sens": sens, "iterations": 5}, "--sens sos_sens.cfl --iterations 5")]:
            with self.subTest(method=method):
                run(f"{BIN} recon --traj sos_traj.cfl --kspace sos_ksp.cfl --matrix {n} --method {method} "
                    f"--backend cpu {flags} --out cmd_sos.cfl", d)
                cmd = readcfl(os.path.join(d, "cmd_sos"))
                ours = radstream.recon(traj, ksp, matrix=n, method=method, backend="cpu", **keys)
                self.assertEqual(ours.shape, (n, n, parts))
                self.assertEqual(cmd.shape, (n, n, parts))
                self.assertGreater(np.abs(cmd).max(), 0)
                self.assertLessEqual(rel(ours, cmd), 1e-5, method)
        deeper = radstream.recon(traj, ksp, matrix=n, backend="cpu", partitions=parts + 2)
        self.assertEqual(deeper.shape, (n, n, parts + 2))
        with self.assertRaisesRegex(radstream.ConfigError, "lies outside the 4 partitions"):
            radstream.recon(traj, ksp, matrix=n, partitions=4)

    def test_mrd_files_round_trip_and_reconstruct_as_the_command(self):
        d, n = self.data.dir.name, self.data.n
        for ext in ("h5", "mrd"):
            with self.subTest(format=ext):
                path = os.path.join(d, f"scan.{ext}")
                count = radstream.write_mrd(path, self.data.traj, self.data.ksp, matrix=n, rate=50, overwrite=True)
                self.assertEqual(count, self.data.ksp.shape[2])
                back = radstream.read_mrd(path)
                self.assertEqual(back["matrix"], n)
                self.assertEqual(back["header"]["coils"], self.data.ksp.shape[3])
                self.assertEqual(back["kspace"].shape, self.data.ksp.shape)
                self.assertEqual(back["traj"].shape, self.data.traj.shape)
                self.assertEqual(np.abs(back["kspace"] - self.data.ksp).max(), 0)  # byte for byte
                self.assertLess(np.abs(back["traj"].real - self.data.traj.real).max(), 1e-5 * n)
                run(f"{BIN} recon --input scan.{ext} --backend cpu --out cmd_{ext}.cfl", d)
                ours = radstream.recon(back["traj"], back["kspace"], matrix=back["matrix"], backend="cpu")
                self.assertLessEqual(rel(ours, readcfl(os.path.join(d, f"cmd_{ext}"))), 1e-5)
                part = radstream.read_mrd(path, start=3, count=10)
                self.assertEqual(part["kspace"].shape[2], 10)
                self.assertEqual(np.abs(part["kspace"] - self.data.ksp[:, :, 3:13]).max(), 0)
        with self.assertRaisesRegex(radstream.ConfigError, "path"):
            radstream.write_mrd(os.path.join(d, "scan.h5"), self.data.traj, self.data.ksp, matrix=n)
        with self.assertRaisesRegex(OSError, "nowhere.h5"):
            radstream.read_mrd(os.path.join(d, "nowhere.h5"))


def published_frames(d, recording, ports):
    """Replays `recording` into a headless run (window 32, stride 16, every frame) publishing on ports[1], and
    returns what a subscriber that joined before the replay received, with the run's log."""
    server = subprocess.Popen(
        f"exec {BIN} run --headless --endpoint tcp://127.0.0.1:{ports[0]} --publish tcp://127.0.0.1:{ports[1]} "
        "--window 32 --stride 16 --no-skip --until-close --duration 30 --images ''",
        cwd=d, shell=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    log = []
    try:
        for line in server.stderr:  # the publisher is bound once the run says it listens
            log.append(line)
            if "run: listening on" in line:
                break
        stream = radstream.Stream(f"tcp://127.0.0.1:{ports[1]}", idle_timeout=4.0)
        time.sleep(0.5)  # a subscriber hears only what is published after it has joined
        run(f"{BIN} replay {recording} --endpoint tcp://127.0.0.1:{ports[0]} --speed max --wait-s 10", d)
        frames = list(stream)
    finally:
        log.append(server.communicate(timeout=60)[1])
    return frames, log


class LiveStream(unittest.TestCase):
    def test_the_frames_of_a_running_pipeline_equal_the_offline_windows(self):
        with tempfile.TemporaryDirectory() as d:
            run(f"{BIN} simulate --out rec.h5 --spokes 160 --matrix 32 --coils 3 --snr 30", d)
            frames, log = published_frames(d, "rec.h5", (27183, 27184))
            # (160 - 32) / 16 + 1 = 9 frames, every one of them (--no-skip: the run's sinks wait rather than drop;
            # they once dropped frame 1 of such a burst in about one run of eight).
            numbers = [m["number"] for _, m in frames]
            self.assertEqual(numbers, list(range(1, 10)), "".join(log))
            image, meta = frames[0]
            self.assertEqual((meta["matrix"], meta["window"], image.shape), (32, 32, (32, 32)))
            self.assertEqual(meta["last_spoke"] - meta["first_spoke"], 31)
            run(f"{BIN} recon --input rec.h5 --start {meta['first_spoke']} --count 32 --out offline.cfl", d)
            offline = np.abs(readcfl(os.path.join(d, "offline")))
            self.assertGreater(offline.max(), 0)
            self.assertLessEqual(rel(image, offline), 1e-4)


    def test_a_volume_stream_arrives_as_volumes(self):
        # A stack of stars (4 kz partitions, centre-out): each published frame is a volume (N, N, P) in BART's
        # order, its depth in the metadata; the z positions differ. (Values: the C++ StackStream tests hold the
        # same volumes against the offline route.)
        with tempfile.TemporaryDirectory() as d:
            run(f"{BIN} simulate --out stack.h5 --spokes 256 --matrix 32 --coils 2 --snr 30 --partitions 4 "
                "--partition-order centre-out", d)
            frames, log = published_frames(d, "stack.h5", (27185, 27186))
            # 256 spokes = 64 of each partition: (64 - 32) / 16 + 1 = 3 volumes.
            self.assertEqual(len(frames), 3, "".join(log))
            image, meta = frames[-1]
            self.assertEqual((image.shape, meta["depth"], meta["matrix"], meta["window"]), ((32, 32, 4), 4, 32, 32))
            self.assertEqual((meta["first_spoke"], meta["last_spoke"]), (32, 63))
            self.assertTrue(np.all(np.isfinite(image)))
            self.assertGreater(rel(image[:, :, 0], image[:, :, 2]), 0.2)


class MrdStreamIteration(unittest.TestCase):
    def test_the_images_of_a_chained_mrd_session_read_live_equal_the_offline_windows(self):
        with tempfile.TemporaryDirectory() as d:
            run(f"{BIN} simulate --out rec.h5 --spokes 160 --matrix 32 --coils 3 --snr 30", d)
            chain = subprocess.Popen(
                f"{BIN} replay rec.h5 --mrd - --config gridding --speed max 2> replay.err | {BIN} run --mrd-stdin "
                f"--mrd-config-dir {os.environ['RADSTREAM_CONFIG_DIR']} --window 32 --stride 16 --no-skip "
                "--images '' --mrd-pixels float 2> run.err", cwd=d, shell=True, stdout=subprocess.PIPE)
            stream = radstream.Stream(f"fd:{chain.stdout.fileno()}", idle_timeout=30)
            frames = list(stream)  # read while the chain runs
            self.assertEqual(chain.wait(timeout=60), 0)
            self.assertTrue(stream.closed)
            self.assertEqual(len(frames), 9)  # (160 - 32) / 16 + 1
            self.assertEqual([m["image_index"] for _, m in frames], list(range(9)))
            self.assertTrue(any("9 frames due, 9 made, 9 sent" in t for t in stream.texts), stream.texts)
            image, meta = frames[0]
            self.assertEqual((image.shape, image.dtype, meta["matrix"]), ((32, 32), np.float32, (32, 32, 1)))
            self.assertEqual(meta["attributes"]["DataRole"], ["Image"])
            run(f"{BIN} recon --input rec.h5 --start 0 --count 32 --out offline.cfl", d)
            self.assertLessEqual(rel(image, np.abs(readcfl(os.path.join(d, "offline")))), 1e-5)
            # The same images stored in a file read the same; a missing file names itself.
            run(f"{BIN} replay rec.h5 --mrd - --config gridding --speed max 2>/dev/null | {BIN} run "
                f"--mrd-stdin --mrd-config-dir {os.environ['RADSTREAM_CONFIG_DIR']} --window 32 --stride 16 "
                "--no-skip --images '' --mrd-pixels float > images.mrd", d)
            again = list(radstream.Stream(os.path.join(d, "images.mrd")))
            self.assertEqual(len(again), 9)
            # (a second run of the chain: equal to float rounding, the CPU's threads add in their own order)
            self.assertLessEqual(rel(again[0][0], image), 1e-6)
            with self.assertRaisesRegex(OSError, "nowhere.mrd"):
                radstream.Stream(os.path.join(d, "nowhere.mrd"))


class Wheel(unittest.TestCase):
    def test_the_wheel_installs_into_a_virtual_environment_without_a_registry(self):
        build = os.path.dirname(os.path.dirname(radstream.__file__))
        wheels = [f for f in os.listdir(build) if f.endswith(".whl")]
        self.assertEqual(len(wheels), 1, wheels)
        with tempfile.TemporaryDirectory() as d:
            env = os.path.join(d, "env")
            # Debian's numpy seen from the environment; the wheel from the build, no index.
            run(f"{sys.executable} -m venv --system-site-packages {env}", d)
            run(f"{env}/bin/python -m pip install --no-index --no-deps {os.path.join(build, wheels[0])}", d)
            probe = ("import radstream, numpy as np; t = np.zeros((3, 4, 2), np.complex64); "
                     "print(radstream.__file__, radstream.nufft(t, np.ones((1, 4, 2), np.complex64), "
                     "adjoint=True, dims=(4, 4), backend='cpu').shape)")
            r = subprocess.run([f"{env}/bin/python", "-c", probe], cwd=d, capture_output=True, text=True,
                               env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn(env, r.stdout)
            self.assertIn("(4, 4)", r.stdout)


class Errors(unittest.TestCase):
    def test_bad_arguments_are_exceptions_that_name_them(self):
        traj = np.zeros((2, 8, 4), dtype=np.complex64)
        with self.assertRaisesRegex(ValueError, "traj: a trajectory has 3 coordinates"):
            radstream.NufftPlan(traj, dims=(8, 8))
        good = np.zeros((3, 8, 4), dtype=np.complex64)
        with self.assertRaisesRegex(radstream.ConfigError, "extent 7 must be even"):
            radstream.NufftPlan(good, dims=(7, 8))
        with self.assertRaisesRegex(ValueError, r"kspace: shape \(1, 8, 5\) must be \(1, 8, 4, ...\)"):
            radstream.NufftPlan(good, dims=(8, 8)).adjoint(np.zeros((1, 8, 5), dtype=np.complex64))
        with self.assertRaisesRegex(TypeError, "kspace"):
            radstream.recon(good, None, matrix=8)
        # DLPack takes only what the GPU path can use: a host (numpy) array is named as not CUDA.
        plan = radstream.NufftPlan(good, dims=(8, 8))
        k, out = np.zeros((4, 8), np.complex64), np.zeros((8, 8), np.complex64)
        with self.assertRaisesRegex(radstream.ConfigError, "kspace: DLPack device type 1 is not CUDA"):
            plan._apply_dlpack(False, k.__dlpack__(), out.__dlpack__(), 0)
        ksp = np.zeros((1, 8, 4, 2), dtype=np.complex64)
        with self.assertRaisesRegex(radstream.ConfigError, "iterations"):
            radstream.recon(good, ksp, matrix=8, method="cg-sense", iterations=-3)
        with self.assertRaisesRegex(radstream.ConfigError, "no_such_key"):
            radstream.recon(good, ksp, matrix=8, no_such_key=1)
        with self.assertRaisesRegex(radstream.ConfigError, "nonsense"):
            radstream.recon(good, ksp, matrix=8, method="nonsense")
        bad = good.copy()
        bad[0, 0, 0] = np.nan
        with self.assertRaisesRegex(radstream.InputError, "point 0 has coordinate nan"):
            radstream.NufftPlan(bad, dims=(8, 8))


if __name__ == "__main__":
    unittest.main(verbosity=2)
