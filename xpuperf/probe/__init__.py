"""A step probe for training scripts: per-rank phase timings in xpuperf's canonical format.

Standard library only: importing it never imports torch, numpy or pandas. A few lines in a
training loop write ``<out_dir>/rank<R>.jsonl`` with the columns of :mod:`xpuperf.steps`
(``rank, step, step_time_s, t_end_s, samples, node, data_s, forward_s, backward_s, comm_s,
optimizer_s, compute_s``), which ``xpuperf analyze <out_dir>`` reads as is::

    from xpuperf.probe import StepProbe

    probe = StepProbe("probe_logs", samples_per_step=batch_size)  # rank from RANK / LOCAL_RANK
    for x, y in probe.iterate(loader):  # one step per batch; fetching it is `data`
        with probe.phase("forward"):
            loss = loss_fn(model(x), y)
        with probe.phase("backward"):
            loss.backward()
        with probe.phase("optimizer"):
            opt.step()
            opt.zero_grad()
    probe.close()

Integrations, each importing its framework only when used: :mod:`xpuperf.probe.pytorch` (a DDP
communication hook that splits exposed communication out of backward; opt-in CUDA
synchronisation), :mod:`xpuperf.probe.hf` (a HuggingFace ``TrainerCallback``) and
:mod:`xpuperf.probe.lightning` (a Lightning ``Callback``). See ``docs/probe.md``.
"""

from __future__ import annotations

from xpuperf.probe.env import ProbeError, RankInfo, detect_rank
from xpuperf.probe.recorder import COMPUTE_PARTS, PHASES, StepProbe

__all__ = ["COMPUTE_PARTS", "PHASES", "ProbeError", "RankInfo", "StepProbe", "detect_rank"]
