"""The Python module on a GPU with PyTorch: CUDA tensors in and out through DLPack with no host copy (the
profiler's count of host<->device copies is 0), equal to the CPU plan on numpy arrays; the caller's CUDA
stream respected; torch.autograd.gradcheck of NufftForward and NufftAdjoint in double (CUDA and CPU tensors).
Skipped where torch or a GPU is absent, failed instead when RADSTREAM_REQUIRE_GPU=1 (the GPU machine).
With RADSTREAM_BENCH_OUT=FILE it also times R1's frame (256 spokes x 512 samples x 32 coils -> 256^2, kernel
width 4, 2x grid: F1's adjoint) through NufftPlan.adjoint on torch tensors and writes the JSON there."""
import json
import os
import time
import unittest

import numpy as np

import radstream

try:
    import torch
    HAVE_GPU = torch.cuda.is_available()
except ImportError:
    torch = None
    HAVE_GPU = False
REQUIRE = os.environ.get("RADSTREAM_REQUIRE_GPU") == "1"


def golden_traj(n, spokes, samples):
    """Golden-angle radial trajectory in BART's layout and units: (3, samples, spokes), +-n/2."""
    golden = np.pi / ((1 + 5 ** 0.5) / 2)
    r = (np.arange(samples) - samples / 2) / samples * n
    a = np.arange(spokes) * golden
    t = np.zeros((3, samples, spokes), np.complex64)
    t[0] = r[:, None] * np.cos(a)[None, :]
    t[1] = r[:, None] * np.sin(a)[None, :]
    return t


def rel(a, b):
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


def crandn(*shape, rng):
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(np.complex64)


@unittest.skipUnless(HAVE_GPU or REQUIRE, "needs PyTorch and a CUDA GPU")
class TorchOnTheGpu(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.n, cls.spokes, cls.samples, cls.batch = 64, 55, 128, 4
        cls.traj = golden_traj(cls.n, cls.spokes, cls.samples)
        cls.gpu = radstream.NufftPlan(cls.traj, dims=[cls.n, cls.n], backend="cuda")
        cls.cpu = radstream.NufftPlan(cls.traj, dims=[cls.n, cls.n], backend="cpu")
        rng = np.random.default_rng(7)
        cls.ksp = crandn(cls.batch, cls.spokes, cls.samples, rng=rng)  # torch's layout: (batch, spokes, samples)
        cls.img = crandn(cls.batch, cls.n, cls.n, rng=rng)             # (batch, Y, X)

    def cpu_adjoint(self):  # the CPU plan on numpy arrays in BART's order, back in torch's layout
        y = self.cpu.adjoint(self.ksp.T.reshape((1, self.samples, self.spokes, self.batch), order="F"))
        return np.ascontiguousarray(y.T).reshape(self.batch, self.n, self.n)

    def cpu_forward(self):
        y = self.cpu.forward(self.img.T.reshape((self.n, self.n, 1, self.batch), order="F"))
        return np.ascontiguousarray(y.T).reshape(self.batch, self.spokes, self.samples)

    def test_cuda_tensors_go_in_and_out_without_a_host_copy_and_equal_the_cpu_plan(self):
        self.assertEqual(self.gpu.backend, "cuda")
        k = torch.from_numpy(self.ksp).cuda()
        x = torch.from_numpy(self.img).cuda()
        self.gpu.adjoint(k), self.gpu.forward(x)  # the engine's first use makes its plans
        torch.cuda.synchronize()
        before = torch.cuda.memory_allocated()
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            img = self.gpu.adjoint(k)
            ksp = self.gpu.forward(x)
            torch.cuda.synchronize()
        copies = [e.name for e in prof.events() if "Memcpy" in e.name and ("HtoD" in e.name or "DtoH" in e.name)]
        kernels = [e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
        self.assertGreater(len(kernels), 0)  # the profiler saw the GPU work
        self.assertEqual(copies, [])
        self.assertEqual(torch.cuda.memory_allocated() - before, img.numel() * 8 + ksp.numel() * 8)
        self.assertEqual((img.device, img.dtype, tuple(img.shape)), (k.device, torch.complex64, (4, 64, 64)))
        self.assertLessEqual(rel(img.cpu().numpy(), self.cpu_adjoint()), 1e-5)
        self.assertEqual(tuple(ksp.shape), (4, 55, 128))
        self.assertLessEqual(rel(ksp.cpu().numpy(), self.cpu_forward()), 1e-5)

    def test_the_callers_stream_orders_the_work(self):
        k = torch.from_numpy(self.ksp).cuda()
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            t = k.clone()
            for _ in range(200):  # a long producer on the caller's stream: the NUFFT must wait for it
                t.mul_(1.01)
            img = self.gpu.adjoint(t)
            img2 = img * 1  # a consumer right after, on the same stream
        side.synchronize()
        want = self.cpu_adjoint() * np.float32(1.01 ** 200)
        self.assertLessEqual(rel(img2.cpu().numpy(), want), 1e-4)

    def test_gradcheck_in_double(self):
        n, spokes, samples = 16, 13, 32
        traj = golden_traj(n, spokes, samples)
        for device, backend in (("cuda", "cuda"), ("cpu", "cpu")):
            plan = radstream.NufftPlan(traj, dims=[n, n], backend=backend)
            g = torch.Generator(device="cpu").manual_seed(3)
            x = torch.randn(n, n, dtype=torch.complex128, generator=g).to(device).requires_grad_()
            k = torch.randn(spokes, samples, dtype=torch.complex128, generator=g).to(device).requires_grad_()
            # The plan computes in float32, so the finite differences take a step far above its rounding
            # (the transforms are linear: any step is exact but for that rounding).
            opts = dict(eps=1e-2, atol=1e-3, rtol=1e-3)
            self.assertTrue(torch.autograd.gradcheck(lambda v: radstream.NufftForward.apply(v, plan), (x,), **opts))
            self.assertTrue(torch.autograd.gradcheck(lambda v: radstream.NufftAdjoint.apply(v, plan), (k,), **opts))


def bench(path):
    """R1's frame through NufftPlan.adjoint on torch CUDA tensors: F1's operator (W4, 2x grid, 32 coils)."""
    traj = golden_traj(256, 256, 512)
    plan = radstream.NufftPlan(traj, dims=[256, 256], width=4, oversampling=2.0, backend="cuda")
    rng = np.random.default_rng(1)
    k = torch.from_numpy(crandn(32, 256, 512, rng=rng)).cuda()
    for _ in range(20):
        plan.adjoint(k)
    torch.cuda.synchronize()
    ms = []
    for _ in range(200):  # each call timed on the GPU by events on the caller's stream
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        plan.adjoint(k)
        b.record()
        b.synchronize()
        ms.append(a.elapsed_time(b))
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record()
    for _ in range(200):  # back to back, as a model would call it
        plan.adjoint(k)
    b.record()
    b.synchronize()
    enqueue = []
    for _ in range(200):  # the host's time to enqueue one call (the GPU kept busy by the calls before)
        t0 = time.perf_counter()
        plan.adjoint(k)
        enqueue.append((time.perf_counter() - t0) * 1e3)
    torch.cuda.synchronize()
    ms = np.array(ms)
    out = {"case": "R1 frame through radstream.NufftPlan.adjoint (torch CUDA tensors, W4, sigma 2)",
           "calls": 200, "median_ms": float(np.median(ms)), "p90_ms": float(np.percentile(ms, 90)),
           "p99_ms": float(np.percentile(ms, 99)), "max_ms": float(ms.max()),
           "back_to_back_ms_per_call": a.elapsed_time(b) / 200,
           "host_enqueue_median_ms": float(np.median(enqueue)),
           "torch": torch.__version__, "gpu": torch.cuda.get_device_name()}
    with open(path, "w") as f:
        json.dump(out, f, indent=1)
    print(json.dumps(out))


if __name__ == "__main__":
    if os.environ.get("RADSTREAM_BENCH_OUT"):
        bench(os.environ["RADSTREAM_BENCH_OUT"])
    unittest.main(verbosity=2)
