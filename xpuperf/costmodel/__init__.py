"""Analytic cost model: allreduce algorithms on the topology, workloads, bucketing and overlap.

Library entry points (no CLI, readers or renderers are imported here):

- :func:`~xpuperf.costmodel.collectives.allreduce_s` — allreduce time of an algorithm on N ranks
  of a cluster described by :class:`~xpuperf.costmodel.levels.LinkLevels`; the single-α/β
  formulas of formulas.md §1 live beside it in :mod:`~xpuperf.costmodel.collectives`.
- :func:`~xpuperf.costmodel.levels.from_cluster` — α/β per link level from a topology
  :class:`~xpuperf.topology.model.Cluster` (or NCCL latency defaults).
- :mod:`~xpuperf.costmodel.ringorder` — cross-node ring steps of a rank order; node-contiguous
  order.
- :mod:`~xpuperf.costmodel.contention` — flow collisions of halving-doubling on a fat-tree.
- :func:`~xpuperf.costmodel.nccl.nccl_choice` / :func:`~xpuperf.costmodel.nccl.model_choice` —
  NCCL's own algorithm/protocol choice and ours.
- :func:`~xpuperf.costmodel.workloads.model` — parameter tensors of model presets.
- :mod:`~xpuperf.costmodel.overlap` — DDP / Horovod / DeepSpeed buckets and the FIFO overlap.

Units: bytes, seconds, GB/s = 1e9 bytes/s, µs where named ``*_us``. Bad inputs raise
:class:`~xpuperf.costmodel.checks.CostModelError` (exit code 2, also a ``ValueError``).
"""

from xpuperf.costmodel.checks import CostModelError
from xpuperf.costmodel.collectives import ALGORITHMS, allreduce_s
from xpuperf.costmodel.levels import LinkLevels, from_cluster, uniform
from xpuperf.costmodel.nccl import model_choice, nccl_choice, nccl_table
from xpuperf.costmodel.overlap import ddp_buckets, deepspeed_buckets, horovod_buckets
from xpuperf.costmodel.workloads import MODEL_PRESETS, Workload, even_split, model

__all__ = [
    "ALGORITHMS",
    "MODEL_PRESETS",
    "CostModelError",
    "LinkLevels",
    "Workload",
    "allreduce_s",
    "ddp_buckets",
    "deepspeed_buckets",
    "even_split",
    "from_cluster",
    "horovod_buckets",
    "model",
    "model_choice",
    "nccl_choice",
    "nccl_table",
    "uniform",
]
