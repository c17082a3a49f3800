"""HuggingFace ``Trainer`` integration: ``callbacks=[ProbeCallback("probe_logs")]``.

``ProbeCallback`` subclasses ``transformers.TrainerCallback``; it is built on first access, so
importing this module does not import transformers (nor torch). :class:`ProbeCallbackBase` holds
all the logic and needs no framework.

One record per optimizer step (``state.global_step``), spanning from the end of the previous step
to the end of this one:

============================  ===============================================================
phase                         from → to
============================  ===============================================================
``data_s``                    previous ``on_step_end`` → ``on_step_begin`` (batch fetching)
``compute_s``                 ``on_step_begin`` → ``on_pre_optimizer_step``: forward and
                              backward of all micro-batches (the Trainer runs them fused; they
                              cannot be told apart from outside)
``comm_s``                    split out of that segment at the last parameter gradient when the
                              run is distributed (post-accumulate-grad hooks, see
                              :func:`xpuperf.probe.pytorch.attach_grad_ready`): DDP's wait
                              (gradient clipping, if any, runs in between and lands here)
``optimizer_s``               ``on_pre_optimizer_step`` → ``on_optimizer_step``
============================  ===============================================================

Scheduler and ``zero_grad`` fall in no phase ("other"). A transformers release without the
optimizer events puts everything from ``on_step_begin`` to ``on_step_end`` in ``compute_s``.
A step interrupted by evaluation, checkpoint saving or an epoch boundary is dropped (it is not a
training step). ``samples`` = ``per_device_train_batch_size × gradient_accumulation_steps``.
"""

from __future__ import annotations

from typing import Any

from xpuperf.probe.callback import FrameworkCallback


class ProbeCallbackBase(FrameworkCallback):
    """The callback logic, without a framework base class (see the module docstring).

    Args:
        out_dir: folder of the ``rank<R>.jsonl`` files (see :class:`StepProbe`).
        flush_every, sync, truncate: passed to :class:`StepProbe`.
        samples_per_step: override of the samples per step.
        split_comm: split DDP's wait out of compute when the run is distributed and torch is
            loaded.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._optimizer_seen = False

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        """Create the probe of this process and open the first step."""
        samples = self.samples_per_step
        if samples is None and getattr(args, "per_device_train_batch_size", None):
            samples = args.per_device_train_batch_size * getattr(
                args, "gradient_accumulation_steps", 1
            )
        self._open(
            rank=getattr(args, "process_index", None),
            local_rank=getattr(args, "local_process_index", None),
            world_size=getattr(args, "world_size", None),
            samples_per_step=samples,
            model=kwargs.get("model"),
        )
        self._restart(state)

    def _restart(self, state: Any) -> None:
        """Drop the open step (if any) and open the next one, numbered global_step + 1."""
        p = self.probe
        if p is None or p.closed:
            return  # before or after training (e.g. trainer.evaluate() on its own)
        p.abandon_step()
        p.begin_step(int(getattr(state, "global_step", 0)) + 1)
        self._optimizer_seen = False

    def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        """Batch fetched: the time since the previous step ended is data wait."""
        if self.probe is not None and self.probe.in_step:
            self.probe.mark("data")

    def on_pre_optimizer_step(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        """Forward and backward of all micro-batches done."""
        if self.probe is not None and self.probe.in_step:
            self.probe.mark("compute")

    def on_optimizer_step(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        """Optimizer step done."""
        if self.probe is not None and self.probe.in_step:
            self.probe.mark("optimizer")
            self._optimizer_seen = True

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        """Record the step and open the next one."""
        p = self.probe
        if p is None or not p.in_step:
            return
        if not self._optimizer_seen:
            p.mark("compute")  # a release without the optimizer events
        p.end_step()
        self._restart(state)

    def on_evaluate(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        """Evaluation ran between steps: drop the interrupted step."""
        self._restart(state)

    def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        """A checkpoint was saved between steps: drop the interrupted step."""
        self._restart(state)

    def on_epoch_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        """New epoch (a new data-loader iterator): drop the interrupted step."""
        self._restart(state)

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        """Write the remaining records and close the file."""
        self._close()


_CACHE: dict[str, type] = {}


def __getattr__(name: str) -> Any:
    """Build ``ProbeCallback`` (a ``transformers.TrainerCallback``) on first access."""
    if name != "ProbeCallback":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    if name not in _CACHE:
        try:
            from transformers import TrainerCallback
        except ImportError as exc:
            raise ImportError(
                "xpuperf.probe.hf.ProbeCallback needs transformers (pip install transformers)"
            ) from exc
        _CACHE[name] = type(
            "ProbeCallback",
            (ProbeCallbackBase, TrainerCallback),
            {"__doc__": ProbeCallbackBase.__doc__, "__module__": __name__},
        )
    return _CACHE[name]
