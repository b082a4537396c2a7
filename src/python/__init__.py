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
from ._core import (ConfigError, CudaError, InputError, IoError, MrdStream, NufftPlan, NumericError,  # noqa: F401
                    __version__, nufft, read_mrd, recon, set_log_level, write_mrd)
from ._core import Stream as ZmqStream


def Stream(source, idle_timeout=10.0, frames=-1):
    """The frames of a live stream, as (image, meta) pairs: an endpoint with "://" is a running pipeline's
    ZeroMQ image publisher (radstream run --publish E); anything else is an MRD v1 message stream (a path or
    FIFO, "-" for stdin, "fd:N"), e.g. the output of `radstream run --mrd-stdin` (radstream.MrdStream)."""
    if "://" in source:
        return ZmqStream(source, idle_timeout, frames)
    return MrdStream(source, idle_timeout, frames)
