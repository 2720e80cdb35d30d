"""inapack: all-reduce numpy arrays and PyTorch gradients through an INAPack in-network
aggregation switch, backed by the Go worker (worker/, loaded as libinapack.so through ctypes).

    import inapack
    inapack.init()                      # RANK, WORLD_SIZE, INAPACK_IFACE, INAPACK_IP, ... from the environment
    grads = inapack.allreduce(grads)    # float32: fixed point with per-bucket scales; int32: exact

PyTorch: inapack.ddp.allreduce_hook (a DistributedDataParallel communication hook).
"""

from ._lib import (ConfigError, InaError, NoProgressError, SumOverflowError,  # noqa: F401
                   WorkerClosedError)
from .worker import ENV, LocalFabric, Worker, allreduce, allreduce_many, init  # noqa: F401

__all__ = ["Worker", "LocalFabric", "init", "allreduce", "allreduce_many", "ENV", "InaError", "ConfigError",
           "NoProgressError", "SumOverflowError", "WorkerClosedError"]
