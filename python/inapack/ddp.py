"""A PyTorch DistributedDataParallel communication hook that all-reduces every gradient bucket
through the switch instead of the process group:

    import inapack, inapack.ddp
    worker = inapack.init()                       # RANK, WORLD_SIZE, INAPACK_* from the environment
    model = DistributedDataParallel(model)        # torch.distributed still broadcasts the parameters
    model.register_comm_hook(inapack.ddp.HookState(worker), inapack.ddp.allreduce_hook)

Each bucket comes back averaged over the inapack job's world_size (float32 in fixed point with
per-bucket scales, within inapack.fixedpoint.error_bound of the exact average; other dtypes and
devices are converted to CPU float32 and back). The all-reduces run in one background thread, in
the order DDP hands the buckets over (the same on every rank, as the switch requires), so they
overlap the rest of the backward pass: ctypes releases the GIL while the Go worker waits.
"""

import queue
import threading

import torch


class HookState:
    """The hook's state: the inapack worker and the thread that feeds it buckets in order."""

    def __init__(self, worker):
        self.worker = worker
        self._q = queue.Queue()
        self._t = threading.Thread(target=self._run, name="inapack-ddp-hook", daemon=True)
        self._t.start()

    def _run(self):
        while True:
            tensor, fut = self._q.get()
            try:
                fut.set_result(_reduce(self.worker, tensor))
            except Exception as e:  # the training step fails with the worker's error
                fut.set_exception(e)


def _reduce(worker, tensor):
    flat = tensor.detach()
    buf = flat if flat.dtype == torch.float32 and flat.device.type == "cpu" and flat.is_contiguous() \
        else flat.to("cpu", torch.float32).contiguous()
    worker.allreduce(buf.numpy(), average=True)  # in place: numpy() shares the tensor's memory
    if buf is not flat:
        flat.copy_(buf)
    return tensor


def allreduce_hook(state, bucket):
    """register_comm_hook's hook: returns a future of the bucket averaged over the job's workers."""
    fut = torch.futures.Future()
    state._q.put((bucket.buffer(), fut))
    return fut
