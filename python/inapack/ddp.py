"""A PyTorch DistributedDataParallel communication hook that all-reduces every gradient bucket
through the switch while the process group stays another backend's (gloo, say):

    import inapack, inapack.ddp
    worker = inapack.init()                       # RANK, WORLD_SIZE, INAPACK_* from the environment
    model = DistributedDataParallel(model)        # torch.distributed still broadcasts the parameters
    model.register_comm_hook(inapack.ddp.HookState(worker), inapack.ddp.allreduce_hook)

With the process group's backend "inapack" (inapack.torch) DDP needs no hook: its buckets reach the
backend's all_reduce. The hook is a thin layer over the backend's ReduceQueue: the same types
(float32, float16, bfloat16; CUDA staged through pinned memory), the same single thread taking
buckets in the order DDP hands them over, and each bucket comes back averaged over the worker's
world_size, within inapack.fixedpoint.error_bound of the exact average.
"""

from .torch import ReduceQueue


class HookState:
    """The hook's state: the worker and the queue that feeds it buckets in order."""

    def __init__(self, worker):
        self.worker = worker
        self.queue = ReduceQueue(worker)


def allreduce_hook(state, bucket):
    """register_comm_hook's hook: returns a future of the bucket averaged over the job's workers."""
    return state.queue.submit([bucket.buffer()], average=True).then(lambda f: f.value()[0])
