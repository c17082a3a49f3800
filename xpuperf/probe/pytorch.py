"""PyTorch helpers for the step probe: a DDP communication hook and opt-in CUDA synchronisation.

Imports torch when this module is imported (``import xpuperf.probe`` alone never does).

What ``comm_s`` means with :func:`attach_ddp`
---------------------------------------------
DDP launches one allreduce per gradient bucket *during* backward, as soon as the bucket's
gradients are ready, and at the end of ``loss.backward()`` waits until every bucket is reduced.
The hook (:class:`ProbeCommHook`) performs the same averaging allreduce as DDP's default and, each
time it hands a bucket to the collective, calls :meth:`StepProbe.note_comm_start`. The last call of
a step marks the end of this rank's backward compute, so the backward segment is split there:

- ``backward_s`` = backward start → last bucket handed to the collective (compute);
- ``comm_s`` = last bucket handed over → ``backward()`` returns: time *blocked* in the
  collective, i.e. the part of the allreduce that backward compute did not hide, plus the time
  spent waiting for slower ranks to contribute their gradients.

Allreduces of earlier buckets that finish while backward is still computing are hidden and not
counted: ``comm_s`` is exposed communication, which is what costs throughput. The hook's future
completes asynchronously (on CPU with gloo, in gloo's worker thread), so the completion time of a
bucket is not a blocking time; it is kept on the hook (``last_done_s``) for inspection only.

On CUDA, without synchronisation DDP's final wait only makes the compute stream wait for the
communication stream; the host does not block, so ``comm_s`` would read near zero and the wait
would appear wherever the host next synchronises. Pass ``sync=cuda_sync()`` to the probe for
device-true phase times (each timestamp then costs a device synchronisation).
"""

# No ``from __future__ import annotations`` here: DDP's register_comm_hook compares the hook's
# annotations with dist.GradBucket and torch.futures.Future[torch.Tensor] as objects.
import time
from collections.abc import Callable
from typing import Any

import torch
import torch.distributed as dist
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

from xpuperf.probe.env import ProbeError
from xpuperf.probe.recorder import StepProbe

HookFn = Callable[[Any, dist.GradBucket], torch.futures.Future[torch.Tensor]]


class ProbeCommHook:
    """DDP communication hook that notes when each gradient bucket goes to the collective.

    Register its :meth:`hook` method: ``ddp_model.register_comm_hook(process_group, h.hook)``
    (what :func:`attach_ddp` does), or Lightning's ``DDPStrategy(ddp_comm_hook=h.hook)``.

    Args:
        probe: the probe to notify.
        inner: the hook doing the communication, default DDP's averaging allreduce
            (``default_hooks.allreduce_hook``); any hook of the same signature can be wrapped
            (e.g. ``default_hooks.fp16_compress_hook``).

    Attributes:
        buckets: buckets handed over since creation.
        last_launch_s: ``time.perf_counter()`` when the last bucket was handed over.
        last_done_s: ``time.perf_counter()`` when the last bucket's future completed.
    """

    def __init__(self, probe: StepProbe, inner: HookFn | None = None) -> None:
        self.probe = probe
        self.inner: HookFn = inner if inner is not None else default_hooks.allreduce_hook
        self.buckets = 0
        self.last_launch_s: float | None = None
        self.last_done_s: float | None = None

    def _done(self, fut: torch.futures.Future[torch.Tensor]) -> torch.Tensor:
        self.last_done_s = time.perf_counter()
        return fut.value()

    def hook(self, state: Any, bucket: dist.GradBucket) -> torch.futures.Future[torch.Tensor]:
        """The communication hook proper (a bound method: DDP reads its name and signature)."""
        self.probe.note_comm_start()
        self.buckets += 1
        self.last_launch_s = time.perf_counter()
        return self.inner(state, bucket).then(self._done)


def attach_ddp(
    probe: StepProbe,
    ddp_model: torch.nn.parallel.DistributedDataParallel,
    *,
    process_group: Any = None,
    inner: HookFn | None = None,
) -> ProbeCommHook:
    """Register a :class:`ProbeCommHook` on a DDP model (once, before the first backward).

    Then time backward with ``probe.phase("backward")`` or ``probe.mark("backward")``: the
    probe splits it into ``backward_s`` and ``comm_s`` (see the module docstring).

    Args:
        probe: the step probe of this rank.
        ddp_model: the ``DistributedDataParallel`` model.
        process_group: group the allreduce runs on; None = the default group.
        inner: the communication hook to wrap (default: DDP's averaging allreduce).

    Raises:
        ProbeError: ``ddp_model`` is not a ``DistributedDataParallel``.
    """
    if not isinstance(ddp_model, torch.nn.parallel.DistributedDataParallel):
        raise ProbeError(
            f"attach_ddp needs a DistributedDataParallel model, got {type(ddp_model).__name__}"
        )
    hook = ProbeCommHook(probe, inner)
    ddp_model.register_comm_hook(process_group, hook.hook)
    return hook


def cuda_sync(device: int | str | torch.device | None = None) -> Callable[[], None]:
    """A ``sync`` callable for :class:`StepProbe`: ``torch.cuda.synchronize(device)``.

    Opt-in: each probe timestamp then waits for the device, which makes phase times true device
    times but costs throughput (no host/device overlap across phase boundaries).

    Raises:
        ProbeError: CUDA is not available.
    """
    if not torch.cuda.is_available():
        raise ProbeError("cuda_sync: CUDA is not available in this process")

    def sync() -> None:
        torch.cuda.synchronize(device)

    return sync


def attach_grad_ready(probe: StepProbe, module: torch.nn.Module) -> list[Any]:
    """Note the end of backward compute from each parameter's post-accumulate-grad hook.

    For wrappers whose DDP model is out of reach (HF Trainer, Lightning): every parameter that
    receives its gradient calls :meth:`StepProbe.note_comm_start`; the last call of a backward
    marks the end of gradient compute, and the rest of the timed segment (DDP's wait for the
    allreduce) goes to ``comm_s``. One Python call per parameter per backward (about 1 µs
    each); prefer :func:`attach_ddp` when the DDP model is at hand (one call per bucket).

    Returns the hook handles (``handle.remove()`` detaches them).
    """
    note = probe.note_comm_start

    def hook(_param: torch.Tensor) -> None:
        note()

    return [
        p.register_post_accumulate_grad_hook(hook) for p in module.parameters() if p.requires_grad
    ]


def attach_if_distributed(probe: StepProbe, module: Any) -> list[Any]:
    """:func:`attach_grad_ready` when ``module`` is a torch module and a process group of more
    than one rank is initialised; else nothing (returns ``[]``)."""
    if not isinstance(module, torch.nn.Module):
        return []
    if not (dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1):
        return []
    return attach_grad_ready(probe, module)
