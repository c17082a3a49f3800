"""How to apply a lever in the user's framework: the exact setting to write.

Units are the frameworks' own: PyTorch DDP ``bucket_cap_mb`` in MiB; Horovod
``HOROVOD_FUSION_THRESHOLD`` in BYTES; DeepSpeed ``reduce_bucket_size`` in ELEMENTS (formulas.md §4:
5e8 elements by default, not bytes); NCCL ``NCCL_ALGO=Ring|Tree``.
"""

from __future__ import annotations

from xpuperf.costmodel.overlap import MiB
from xpuperf.costmodel.workloads import dtype_bytes


def bucket_setting(framework: str, bucket_mb: float, dtype: str) -> str:
    """The bucket/fusion size ``bucket_mb`` MiB written for ``framework``."""
    if framework == "ddp":
        return f"DistributedDataParallel(..., bucket_cap_mb={bucket_mb:g})"
    if framework == "horovod":
        return f"HOROVOD_FUSION_THRESHOLD={round(bucket_mb * MiB)}"
    if framework == "deepspeed":
        elements = round(bucket_mb * MiB / dtype_bytes(dtype))
        return f'"zero_optimization": {{"reduce_bucket_size": {elements}}}  (elements, {dtype})'
    return (
        f"fuse gradients into {bucket_mb:g} MiB buckets (e.g. DDP bucket_cap_mb={bucket_mb:g}, "
        f"HOROVOD_FUSION_THRESHOLD={round(bucket_mb * MiB)})"
    )


_ALGO_SETTINGS = {
    "ring": "NCCL_ALGO=Ring",
    "tree": "NCCL_ALGO=Tree",
    "2d-ring": (
        "hierarchical allreduce, reduce-scatter/allreduce/all-gather form "
        "(Horovod: HOROVOD_HIERARCHICAL_ALLREDUCE=1; PyTorch DDP: a comm hook over an "
        "intra-node and an inter-node process group; NCCL has no such algorithm)"
    ),
    "2d-ring-bcast": (
        "hierarchical allreduce with a leader per node (intra allreduce, leader ring, intra "
        "broadcast; e.g. a two-level communicator in a DDP comm hook)"
    ),
    "hd": (
        "recursive halving-doubling — NCCL has none: needs a library that runs it (Open MPI: "
        "--mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_allreduce_algorithm 6)"
    ),
    "hdrm": (
        "halving-doubling with rank mapping on the BiGraph network — needs a library that runs "
        "it (EFLOPS' collective library, HPCA 2020); NCCL has none"
    ),
    "recursive-doubling": (
        "recursive doubling — NCCL has none (Open MPI: --mca coll_tuned_use_dynamic_rules 1 "
        "--mca coll_tuned_allreduce_algorithm 3)"
    ),
}


def algorithm_setting(algorithm: str) -> str:
    """How to select ``algorithm`` (a :data:`~xpuperf.costmodel.comm.ALGORITHMS` name)."""
    return _ALGO_SETTINGS.get(algorithm, algorithm)


def ring_order_setting() -> str:
    """How to get a node-contiguous ring."""
    return (
        "number ranks node by node (torchrun/mpirun --map-by node:PE=… places consecutive ranks "
        "on one node); NCCL then builds node-contiguous rings"
    )


def nic_setting(cards_per_node: int) -> str:
    """The hardware change of the NIC-per-card what-if."""
    return f"hardware: one NIC per card ({cards_per_node} NICs per node, each at today's speed)"


def fp16_setting(framework: str) -> str:
    """How to allreduce gradients in fp16 (changes the numerics)."""
    if framework == "horovod":
        return "hvd.DistributedOptimizer(..., compression=hvd.Compression.fp16)"
    if framework == "deepspeed":
        return '"communication_data_type": "fp16"'
    return "ddp_model.register_comm_hook(None, torch.distributed.algorithms.ddp_comm_hooks.default_hooks.fp16_compress_hook)"  # noqa: E501
