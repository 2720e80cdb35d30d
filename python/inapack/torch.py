"""The torch.distributed backend "inapack": all_reduce through the switch, every other collective
through a gloo group made on the same store. Importing this module registers it:

    import inapack.torch
    torch.distributed.init_process_group("inapack")   # under torchrun; RANK, WORLD_SIZE, INAPACK_*
    model = DistributedDataParallel(model)            # every gradient bucket goes through the switch

all_reduce with SUM or AVG of float32, float16 and bfloat16 tensors is summed in the switch in
fixed point (per-bucket scales, within inapack.fixedpoint.error_bound of the exact sum; float16
and bfloat16 travel as float32 and are rounded once on the way back), and of int32 tensors exactly.
CPU tensors are reduced in place; CUDA tensors are staged through pinned host memory. Other
reduce ops (MAX, MIN, PRODUCT, ...) and every other collective (broadcast, all_gather,
reduce_scatter, barrier, send/recv, ...) are gloo's, so DDP, FSDP's plumbing and the
torch.distributed utilities work unchanged. A tensor type the switch cannot sum (float64, int64,
...) is a TypeError at the call, on every rank alike, never a silent conversion.

The switch's all-reduces run in one background thread per process, in the order they were called
(the same on every rank, as the switch requires), so they overlap the caller: DDP's backward pass
goes on while a bucket is in the network. A failure (no switch entry for the job, a PS that never
answers, a peer that stopped) reaches the caller as inapack.NoProgressError from Work.wait()
within the worker's progress timeout (INAPACK_PROGRESS_TIMEOUT, default 5 s), and every later
all_reduce raises WorkerClosedError: the job must restart.

The INAPack job is the default process group. A later group made with this backend (a subgroup,
say) is a plain gloo group: the switch's entry and the PS serve the job's full set of workers.
"""

import logging
import queue
import threading
import weakref

import torch
import torch.distributed as dist
from torch._C._distributed_c10d import Backend as _C10dBackend

from . import _lib
from .worker import Worker

NAME = "inapack"
# What the switch sums: floats in fixed point (as float32), int32 exactly.
FLOATS = (torch.float32, torch.float16, torch.bfloat16)
SUMMED = FLOATS + (torch.int32,)

log = logging.getLogger("inapack.torch")

_job_lock = threading.Lock()
_job = None  # weakref to the process's ProcessGroupINA while it is open: one per process


class ReduceQueue:
    """One worker's all-reduces, run by one thread in the order submitted (the order is the
    switch's contract: chunk sequence numbers come from it). submit returns a torch Future of the
    tensors, reduced in place. Both the backend and the DDP communication hook (inapack.ddp) use it."""

    def __init__(self, worker):
        self.worker = worker
        self._q = queue.Queue()
        self._t = threading.Thread(target=self._run, name="inapack-allreduce", daemon=True)
        self._t.start()

    def submit(self, tensors, average=False):
        """Checks the tensors (a TypeError here, on the caller's thread) and queues their
        all-reduce; returns a Future that completes with the list of tensors."""
        staged = [_Staged(t, average) for t in tensors]
        fut = torch.futures.Future()
        self._q.put((tensors, staged, average, fut))
        return fut

    def close(self):
        self._q.put(None)

    def _run(self):
        while True:
            item = self._q.get()
            if item is None:
                return
            tensors, staged, average, fut = item
            try:
                bufs = [s.host() for s in staged]
                if len(bufs) == 1:
                    self.worker.allreduce(bufs[0], average=average)
                else:
                    self.worker.allreduce_many(bufs, average=average)
                for s in staged:
                    s.back()
                fut.set_result(tensors)
            except _lib.NoProgressError as e:
                fut.set_exception(_lib.NoProgressError(
                    "inapack: job %d rank %d: all_reduce of %d values made no progress for %gs: the switch has no "
                    "entry for the job, the PS does not answer, or a peer stopped (%s)"
                    % (self.worker.job, self.worker.rank, sum(s.numel for s in staged), self.worker.progress_timeout,
                       e)))
            except Exception as e:  # noqa: BLE001 - the caller's Work.wait() raises it
                fut.set_exception(e)


class _Staged:
    """A tensor as the worker takes it: a CPU float32/int32 contiguous tensor is reduced in place
    through a numpy view of its memory; anything else through a float32 (int32) host buffer,
    pinned for a CUDA tensor, copied back once after the sum (one rounding for float16/bfloat16)."""

    def __init__(self, t, average):
        if t.dtype not in SUMMED:
            raise TypeError("inapack: the switch sums float32, float16, bfloat16 and int32 tensors, not %s; "
                            "convert it, or reduce it on a gloo group (dist.new_group(backend='gloo'))" % t.dtype)
        if average and t.dtype == torch.int32:
            raise TypeError("inapack: AVG of an int32 tensor: the average is not an integer; sum it, or convert")
        self.t, self.numel = t, t.numel()
        self.direct = t.device.type == "cpu" and t.dtype in (torch.float32, torch.int32) and t.is_contiguous()
        self.event = None
        if not self.direct and t.device.type == "cuda":
            # Ordered after the kernels that produced t on the caller's stream.
            self.buf = torch.empty(t.shape, dtype=self._wire(), pin_memory=True)
            self.buf.copy_(t.detach(), non_blocking=True)
            self.event = torch.cuda.Event()
            self.event.record()
        elif not self.direct:
            self.buf = t.detach().to("cpu", self._wire()).contiguous()

    def _wire(self):
        return torch.int32 if self.t.dtype == torch.int32 else torch.float32

    def host(self):
        if self.direct:
            return self.t.detach().view(-1).numpy()  # shares the tensor's memory: reduced in place
        if self.event is not None:
            self.event.synchronize()
        return self.buf.view(-1).numpy()

    def back(self):
        if self.direct:
            return
        if self.t.device.type == "cuda":
            with torch.cuda.device(self.t.device):
                self.t.copy_(self.buf, non_blocking=True)
                torch.cuda.current_stream().synchronize()
        else:
            with torch.no_grad():
                self.t.copy_(self.buf)


class _Work(dist.Work):
    """A queued all-reduce. wait() raises the worker's exception itself (NoProgressError, ...).
    get_future() hands C++ callers (DDP's reducer) a future chained through then(), whose failure
    torch turns into a RuntimeError naming the exception: a failed future made in Python and
    read by the reducer crashes the process (torch 2.15), a chained one raises in backward()."""

    def __init__(self, fut):
        super().__init__()
        self._fut = fut

    def wait(self, timeout=None):
        self._fut.wait()
        return True

    def is_completed(self):
        return self._fut.done()

    def get_future(self):
        return self._fut.then(lambda f: f.value())


def _op(opts):
    op = opts.reduceOp
    return getattr(op, "op", op)


class ProcessGroupINA(_C10dBackend):
    """The backend: all_reduce (SUM, AVG) through an INAPack worker, the rest through gloo."""

    def __init__(self, store, rank, size, timeout, worker=None):
        super().__init__(rank, size)
        self.gloo = dist.ProcessGroupGloo(dist.PrefixStore("inapack-gloo/", store), rank, size, timeout)
        self.worker = worker if worker is not None else Worker(rank, size)
        if (self.worker.rank, self.worker.world_size) != (rank, size):
            raise _lib.ConfigError("inapack: the worker is rank %d of %d, the group rank %d of %d"
                                   % (self.worker.rank, self.worker.world_size, rank, size))
        _agree(store, rank, size, self.worker)
        self.queue = ReduceQueue(self.worker)
        self._closed = False
        weakref.finalize(self, _finish, self.queue, self.worker)

    def getBackendName(self):
        return NAME

    def _get_backend_name(self):
        return NAME

    def allreduce(self, tensors, opts=None):
        opts = opts or dist.AllreduceOptions()
        op = _op(opts)
        if op not in (dist.ReduceOp.SUM, dist.ReduceOp.AVG):
            return self.gloo.allreduce(tensors, opts)
        return self._ina(tensors, op == dist.ReduceOp.AVG)

    def allreduce_coalesced(self, tensors, opts=None):
        opts = opts or dist.AllreduceCoalescedOptions()
        op = _op(opts)
        if op not in (dist.ReduceOp.SUM, dist.ReduceOp.AVG):
            return self.gloo.allreduce_coalesced(tensors, opts)
        return self._ina(tensors, op == dist.ReduceOp.AVG)

    def _ina(self, tensors, average):
        if self._closed:
            raise _lib.WorkerClosedError("inapack: the process group was shut down")
        return _Work(self.queue.submit(list(tensors), average))

    def shutdown(self):
        if not self._closed:
            self._closed = True
            _finish(self.queue, self.worker)

    # Everything else is gloo's.
    def broadcast(self, *a):
        return self.gloo.broadcast(*a)

    def reduce(self, *a):
        return self.gloo.reduce(*a)

    def allgather(self, *a):
        return self.gloo.allgather(*a)

    def _allgather_base(self, *a):
        return self.gloo._allgather_base(*a)

    def allgather_coalesced(self, *a):
        return self.gloo.allgather_coalesced(*a)

    def allgather_into_tensor_coalesced(self, *a):
        return self.gloo.allgather_into_tensor_coalesced(*a)

    def gather(self, *a):
        return self.gloo.gather(*a)

    def scatter(self, *a):
        return self.gloo.scatter(*a)

    def reduce_scatter(self, *a):
        return self.gloo.reduce_scatter(*a)

    def _reduce_scatter_base(self, *a):
        return self.gloo._reduce_scatter_base(*a)

    def reduce_scatter_tensor_coalesced(self, *a):
        return self.gloo.reduce_scatter_tensor_coalesced(*a)

    def alltoall(self, *a):
        return self.gloo.alltoall(*a)

    def alltoall_base(self, *a):
        return self.gloo.alltoall_base(*a)

    def barrier(self, *a):
        return self.gloo.barrier(*a)

    def monitored_barrier(self, *a):
        return self.gloo.monitored_barrier(*a)

    def send(self, *a):
        return self.gloo.send(*a)

    def recv(self, *a):
        return self.gloo.recv(*a)

    def recv_anysource(self, *a):
        return self.gloo.recv_anysource(*a)


def _finish(q, worker):
    q.close()
    try:
        worker.close()
    except _lib.InaError:
        pass


def _agree(store, rank, size, worker):
    """Every rank must be configured for the same job: a mismatch (one rank's INAPACK_JOB, say)
    would otherwise only show as a PS that never completes a chunk."""
    mine = "job=%d world_size=%d integrity=%s scale_bucket=%d" % (worker.job, size, worker.integrity,
                                                                  worker.scale_bucket)
    store.set("inapack/config/%d" % rank, mine)
    first = store.get("inapack/config/0").decode()
    if first != mine:
        raise _lib.ConfigError("inapack: rank %d is configured %s, rank 0 %s (INAPACK_* must agree)"
                               % (rank, mine, first))


def create(store, rank, size, timeout):
    """register_backend's constructor: the process's first group is the INAPack job (a worker
    configured from INAPACK_*, rank and size from torch.distributed); a later one is gloo."""
    global _job
    with _job_lock:
        live = _job() if _job is not None else None
        if live is not None and not live._closed:
            log.warning("inapack: a second group (rank %d of %d) in this process is served by gloo: "
                        "the switch serves the job's default group", rank, size)
            return dist.ProcessGroupGloo(store, rank, size, timeout)
        pg = ProcessGroupINA(store, rank, size, timeout)
        _job = weakref.ref(pg)
        return pg


dist.Backend.register_backend(NAME, create, devices=["cpu", "cuda"])
