"""radstream from Python: the NUFFT, gridding, FBP, CG-SENSE and NLINV of the radstream program on numpy
arrays in BART's dimension order (as BART's cfl.readcfl returns them: Fortran order, trailing singleton
dimensions dropped).

    import radstream
    img = radstream.nufft(traj, ksp, adjoint=True)          # as `bart nufft -a`
    plan = radstream.NufftPlan(traj, dims=(256, 256))       # forward / adjoint / normal, many times
    x = radstream.recon(traj, ksp, matrix=256, method="cg-sense", iterations=10, lambda_=0.01)
    d = radstream.read_mrd("scan.h5")                       # {'traj', 'kspace', 'matrix', 'header'}
    for image, meta in radstream.Stream("tcp://127.0.0.1:5556"):   # run --publish tcp://127.0.0.1:5556
        ...
    for image, meta in radstream.Stream("images.mrd"):   # MRD: run --mrd-stdin's output, "-" or "fd:N"
        ...

Errors are radstream.ConfigError / InputError (ValueError), IoError (OSError), NumericError
(ArithmeticError); each names the bad argument or value.
"""
import numpy as np

from ._core import (ConfigError, CudaError, InputError, IoError, MrdStream, NumericError,  # noqa: F401
                    __version__, nufft, read_mrd, recon, set_log_level, write_mrd)
from ._core import NufftPlan as _NufftPlan
from ._core import Stream as ZmqStream


def _is_tensor(x):
    return type(x).__module__.startswith("torch") and hasattr(x, "__dlpack__")


class NufftPlan(_NufftPlan):
    """A NUFFT plan for one trajectory (BART's layout and units), applied many times: forward(image) ->
    kspace, adjoint(kspace) -> image, normal(image); both directions scaled by 1/sqrt(prod dims) as bart nufft.

    numpy arrays are in BART's order (image (X, Y[, Z], batch...), k-space (1, samples, spokes, batch...),
    Fortran). PyTorch tensors are in the reverse order, C-contiguous, as torch lays out BART's memory: image
    (batch..., [Z,] Y, X), k-space (batch..., spokes, samples), complex64 (other complex or real types are
    converted, the result given back in the input's dtype). A CUDA tensor goes in and out through DLPack with
    no host copy, on the caller's current CUDA stream (the plan must have the CUDA backend); a CPU tensor
    shares its memory with numpy. NufftForward / NufftAdjoint make the transforms differentiable."""

    def forward(self, image):
        return self._torch(image, True) if _is_tensor(image) else super().forward(image)

    def adjoint(self, kspace):
        return self._torch(kspace, False) if _is_tensor(kspace) else super().adjoint(kspace)

    def normal(self, image):
        return self.adjoint(self.forward(image))

    def _torch(self, x, forward):
        import torch
        dtype = x.dtype
        if dtype != torch.complex64:
            x = x.to(torch.complex64)
        if not x.is_contiguous():
            x = x.contiguous()
        if not hasattr(self, "_shapes"):  # (image, k-space) in torch's order, made once
            self._shapes = (tuple(reversed(self.dims)), tuple(reversed(self.kspace_dims)))
        inner, outer = self._shapes if forward else self._shapes[::-1]
        if tuple(x.shape[len(x.shape) - len(inner):]) != inner:
            raise InputError(f"{'image' if forward else 'kspace'}: torch shape {tuple(x.shape)} must end in "
                             f"{inner} (BART's dims reversed)")
        batch = tuple(x.shape[:len(x.shape) - len(inner)])
        if x.is_cuda:
            out = torch.empty(batch + outer, dtype=torch.complex64, device=x.device)
            stream = torch.cuda.current_stream(x.device).cuda_stream
            # DLPack names the legacy default stream 1 (its handle is 0, which the protocol refuses).
            dl = stream if stream != 0 else 1
            if x.device.index == torch.cuda.current_device():
                self._apply_dlpack(forward, x.__dlpack__(stream=dl), out.__dlpack__(stream=dl), stream)
            else:
                with torch.cuda.device(x.device):
                    self._apply_dlpack(forward, x.__dlpack__(stream=dl), out.__dlpack__(stream=dl), stream)
        else:
            a = x.detach().numpy().T  # BART's order, Fortran: the same memory
            if not forward:  # k-space is (1, samples, spokes, batch...) in BART's order
                a = a.reshape((1,) + a.shape, order="F")
            elif len(self.dims) == 2:  # a 2D image's batch starts at BART's fourth dimension
                a = a.reshape(a.shape[:2] + (1,) + a.shape[2:], order="F")
            y = super().forward(a) if forward else super().adjoint(a)
            out = torch.from_numpy(np.ascontiguousarray(y.T)).reshape(batch + outer)
        return out if dtype == torch.complex64 else out.to(dtype if dtype.is_complex else torch.complex64)


def __getattr__(name):
    # The autograd Functions are made at first use, so that importing radstream never imports torch.
    if name in ("NufftForward", "NufftAdjoint"):
        import torch

        class NufftForward(torch.autograd.Function):
            """y = NufftForward.apply(image, plan): plan.forward, its gradient plan.adjoint."""

            @staticmethod
            def forward(ctx, image, plan):
                ctx.plan = plan
                return plan.forward(image)

            @staticmethod
            def backward(ctx, grad):
                return ctx.plan.adjoint(grad), None

        class NufftAdjoint(torch.autograd.Function):
            """x = NufftAdjoint.apply(kspace, plan): plan.adjoint, its gradient plan.forward."""

            @staticmethod
            def forward(ctx, kspace, plan):
                ctx.plan = plan
                return plan.adjoint(kspace)

            @staticmethod
            def backward(ctx, grad):
                return ctx.plan.forward(grad), None

        globals().update(NufftForward=NufftForward, NufftAdjoint=NufftAdjoint)
        return globals()[name]
    raise AttributeError(f"module 'radstream' has no attribute '{name}'")


def Stream(source, idle_timeout=10.0, frames=-1):
    """The frames of a live stream, as (image, meta) pairs: an endpoint with "://" is a running pipeline's
    ZeroMQ image publisher (radstream run --publish E); anything else is an MRD v1 message stream (a path or
    FIFO, "-" for stdin, "fd:N"), e.g. the output of `radstream run --mrd-stdin` (radstream.MrdStream)."""
    if "://" in source:
        return ZmqStream(source, idle_timeout, frames)
    return MrdStream(source, idle_timeout, frames)
