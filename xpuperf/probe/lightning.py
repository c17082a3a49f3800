"""PyTorch Lightning integration: ``Trainer(callbacks=[ProbeCallback("probe_logs")])``.

``ProbeCallback`` subclasses ``lightning.pytorch.Callback`` (or ``pytorch_lightning.Callback``
when only the older package is installed); it is built on first access, so importing this module
imports neither. :class:`ProbeCallbackBase` holds all the logic and needs no framework.

One record per training batch, spanning from the end of the previous batch to the end of this
one:

===================  ========================================================================
phase                from → to
===================  ========================================================================
``data_s``           previous ``on_train_batch_end`` → ``on_train_batch_start`` (fetch, transfer)
``forward_s``        ``on_train_batch_start`` → ``on_before_backward`` (``training_step``)
``backward_s``       ``on_before_backward`` → last parameter gradient ready
``comm_s``           last parameter gradient ready → ``on_after_backward``: DDP's wait for the
                     allreduce (post-accumulate-grad hooks, distributed runs only; see
                     :func:`xpuperf.probe.pytorch.attach_grad_ready`)
``optimizer_s``      ``on_after_backward`` → ``on_train_batch_end`` (optimizer step)
===================  ========================================================================

A batch interrupted by validation or an epoch boundary is dropped. ``samples`` is the length of
the batch (first dimension of its first tensor) unless ``samples_per_step`` is given.
"""

from __future__ import annotations

from typing import Any

from xpuperf.probe.callback import FrameworkCallback


def batch_len(batch: Any) -> int | None:
    """Samples in a batch: first dimension of a tensor/array, of the first element of a list or
    tuple, or of the first value of a dict; None when none of these applies."""
    for _ in range(8):
        shape = getattr(batch, "shape", None)
        if shape is not None:
            return int(shape[0]) if len(shape) else None
        if isinstance(batch, (list, tuple)) and batch:
            batch = batch[0]
        elif isinstance(batch, dict) and batch:
            batch = next(iter(batch.values()))
        else:
            return None
    return None


class ProbeCallbackBase(FrameworkCallback):
    """The callback logic, without a framework base class (see the module docstring).

    Args:
        out_dir: folder of the ``rank<R>.jsonl`` files (see :class:`StepProbe`).
        flush_every, sync, truncate: passed to :class:`StepProbe`.
        samples_per_step: samples per batch; None = measure each batch (:func:`batch_len`).
        split_comm: split DDP's wait out of backward in distributed runs.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._samples: float | None = None

    def on_train_start(self, trainer: Any, pl_module: Any) -> None:
        """Create the probe of this process and open the first step."""
        self._open(
            rank=getattr(trainer, "global_rank", None),
            local_rank=getattr(trainer, "local_rank", None),
            world_size=getattr(trainer, "world_size", None),
            samples_per_step=self.samples_per_step,
            model=pl_module,
        )
        self._restart()

    def _restart(self) -> None:
        if self.probe is not None and not self.probe.closed:
            self.probe.abandon_step()
            self.probe.begin_step()

    def _mark(self, phase: str) -> None:
        if self.probe is not None and self.probe.in_step:
            self.probe.mark(phase)

    def on_train_batch_start(self, trainer: Any, pl_module: Any, batch: Any, *args: Any) -> None:
        """The batch is here: the time since the previous batch ended is data wait."""
        self._mark("data")
        self._samples = None if self.samples_per_step is not None else batch_len(batch)

    def on_before_backward(self, trainer: Any, pl_module: Any, loss: Any) -> None:
        """Forward (``training_step``) done."""
        self._mark("forward")

    def on_after_backward(self, trainer: Any, pl_module: Any) -> None:
        """Backward done (split into backward and comm in distributed runs)."""
        self._mark("backward")

    def on_train_batch_end(self, trainer: Any, pl_module: Any, *args: Any) -> None:
        """Record the batch and open the next step."""
        p = self.probe
        if p is None or not p.in_step:
            return
        p.mark("optimizer")
        p.end_step(self._samples)
        p.begin_step()

    def on_validation_end(self, trainer: Any, pl_module: Any) -> None:
        """Validation ran between batches: drop the interrupted step."""
        self._restart()

    def on_train_epoch_start(self, trainer: Any, pl_module: Any) -> None:
        """New epoch (a new data-loader iterator): drop the interrupted step."""
        self._restart()

    def on_train_end(self, trainer: Any, pl_module: Any) -> None:
        """Write the remaining records and close the file."""
        self._close()


_CACHE: dict[str, type] = {}


def _callback_base() -> type:
    try:
        from lightning.pytorch import Callback
    except ImportError:
        try:
            from pytorch_lightning import Callback
        except ImportError as exc:
            raise ImportError(
                "xpuperf.probe.lightning.ProbeCallback needs Lightning "
                "(pip install lightning, or pytorch-lightning)"
            ) from exc
    return Callback


def __getattr__(name: str) -> Any:
    """Build ``ProbeCallback`` (a Lightning ``Callback``) on first access."""
    if name != "ProbeCallback":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    if name not in _CACHE:
        _CACHE[name] = type(
            "ProbeCallback",
            (ProbeCallbackBase, _callback_base()),
            {"__doc__": ProbeCallbackBase.__doc__, "__module__": __name__},
        )
    return _CACHE[name]
