"""What the framework callbacks (:mod:`xpuperf.probe.hf`, :mod:`xpuperf.probe.lightning`) share:
their options, opening the probe of this process, and closing it. Imports no framework."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

from xpuperf.probe.recorder import StepProbe


class FrameworkCallback:
    """Probe state of a framework callback.

    Args:
        out_dir: folder of the ``rank<R>.jsonl`` files (see :class:`StepProbe`).
        flush_every, sync, truncate: passed to :class:`StepProbe`.
        samples_per_step: override of the samples per step.
        split_comm: split DDP's wait out of compute when the run is distributed and torch is
            loaded.
    """

    def __init__(
        self,
        out_dir: str | os.PathLike[str] | None = None,
        *,
        flush_every: int = 50,
        sync: Callable[[], Any] | None = None,
        truncate: bool = False,
        samples_per_step: float | None = None,
        split_comm: bool = True,
    ) -> None:
        self.out_dir = out_dir
        self.options: dict[str, Any] = {
            "flush_every": flush_every,
            "sync": sync,
            "truncate": truncate,
        }
        self.samples_per_step = samples_per_step
        self.split_comm = split_comm
        self.probe: StepProbe | None = None
        self.handles: list[Any] = []

    def _open(
        self,
        *,
        rank: Any,
        local_rank: Any,
        world_size: Any,
        samples_per_step: float | None,
        model: Any,
    ) -> None:
        """Close a previous probe, open this process's one, hook DDP when asked and possible."""
        if self.probe is not None:
            self.probe.close()
        self.probe = StepProbe(
            self.out_dir,
            rank=rank,
            local_rank=local_rank,
            world_size=world_size,
            samples_per_step=samples_per_step,
            **self.options,
        )
        if self.split_comm and model is not None and "torch" in sys.modules:
            from xpuperf.probe.pytorch import attach_if_distributed

            self.handles = attach_if_distributed(self.probe, model)

    def _close(self) -> None:
        """Remove the hooks, write the remaining records and close the file."""
        for h in self.handles:
            h.remove()
        self.handles = []
        if self.probe is not None:
            self.probe.close()
