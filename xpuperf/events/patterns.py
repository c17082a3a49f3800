"""Line patterns for framework and runtime warnings printed in training logs.

Each pattern was written against the text the framework prints (several versions); the source
is named next to it. A raw-byte prefilter (:data:`MARKERS`) selects candidate lines before any
regular expression runs: a line holding none of the markers is never decoded.

Prefixes seen in front of these texts and handled by :func:`prefix_rank`: ``[rank3]:``
(torch >= 2.2 per-rank log prefix), ``[default3]:`` (torchrun ``--tee``, local rank),
``[1,3]<stderr>:`` (Open MPI ``--tag-output``), ``3: `` (Slurm ``srun -l``); timestamps and
``path.py:NN: UserWarning:`` heads are left in place (patterns search, they do not anchor);
ANSI colour codes are stripped (:data:`ANSI`).
"""

from __future__ import annotations

import re

MARKERS: tuple[bytes, ...] = (
    b"find_unused_parameters",
    b"did not receive grad",
    b"Expected to have finished reduction",
    b"ddp_spawn",
    b"persistent_workers=True` in",
    b"does not have many workers",
    b"overflow",
    b"OVERFLOW",
    b"skipped iterations",
    b"skipped=",
    b"loss scale already at minimum",
    b"Minimum loss scale reached",
    b"collective operation timeout",
    b"OMP_NUM_THREADS",
    b"CPU(s):",
    b"nproc",
    b"ntasks-per-node",
    b"DataLoader worker",
    b"bus error encountered in worker",
    b"worker processes in total",
)
"""Fixed byte strings; a line is looked at only when it holds one of them."""

PREFILTER: dict[bytes, str] = {b"skipped iterations": r"skipped iterations: *[1-9]"}
"""RE2 pattern used in the block prefilter instead of the marker itself: Megatron prints the
count on every logged iteration (``{:3d}``), so only its non-zero counts are worth a look."""

EPOCH_MARKER = b"Epoch"
"""Looked for only until one epoch length was read (tqdm lines repeat it on every refresh)."""

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")

# --- prefixes --------------------------------------------------------------------------------
_PREFIX_RANK = re.compile(
    r"\[rank(\d+)\]:|\[default(\d+)\]:|\[\d+,(\d+)\]<std(?:out|err)>:|^\s*(\d{1,5}): "
)


def prefix_rank(seg: str) -> int | None:
    """Rank named by a launcher prefix in the first 80 characters of ``seg``, else None."""
    m = _PREFIX_RANK.search(seg[:80])
    if m is None:
        return None
    return int(next(g for g in m.groups() if g is not None))


# --- DDP (torch/csrc/distributed/c10d/reducer.cpp) ------------------------------------------
# torch >= 1.9: "... but did not find any unused parameters in the forward pass. This flag results
# in an extra traversal of the autograd graph every iteration ..."; torch 1.8 lacks "in the forward
# pass". Printed as "[W reducer.cpp:NNNN] Warning: ..." on every rank.
DDP_NO_UNUSED = re.compile(
    r"find_unused_parameters=True was specified in DDP constructor, but did not find any "
    r"unused parameters"
)
# RuntimeError raised when a parameter got no gradient and find_unused_parameters=False.
DDP_UNUSED_ERROR = re.compile(r"Expected to have finished reduction in the prior iteration")
# torch >= 1.9 appends the parameter indices (and names with TORCH_DISTRIBUTED_DEBUG=INFO).
DDP_UNUSED_INDICES = re.compile(r"Parameter indices which did not receive grad for rank (\d+):")

# --- Lightning (pytorch_lightning/trainer/data_loading.py 0.7-1.5, then trainer/connectors/
# data_connector.py; read at every release tag) -----------------------------------------------
# ddp_spawn with workers, not persistent: 1.3-2.0 "num_workers>0, persistent_workers=False, and
# accelerator=ddp_spawn" (1.5+: strategy=); 0.8-1.2 "Dataloader(num_workers>0) and ddp_spawn do
# not mix well!", 1.3-1.5 on torch < 1.7 "num_workers>0 and accelerator=ddp_spawn do not mix well".
# 2.1+: any spawn start method (ddp_spawn, multiprocessing_context="spawn", macOS/Windows default)
# with num_workers > 0 and persistent_workers=False: "Consider setting `persistent_workers=True`
# in 'train_dataloader' to speed up the dataloader worker initialization."
SPAWN_NOT_PERSISTENT = re.compile(
    r"num_workers>0, persistent_workers=False, and (?:strategy|accelerator)=ddp_spawn"
)
SPAWN_DO_NOT_MIX = re.compile(
    r"num_workers>0 and (?:strategy|accelerator)=ddp_spawn do not mix|"
    r"Dataloader\(num_workers>0\) and ddp_spawn do not mix"
)
SPAWN_METHOD_NOT_PERSISTENT = re.compile(
    r"Consider setting `persistent_workers=True` in '(?P<name>[^']+)' to speed up the "
    r"dataloader worker initialization"
)
# ddp_spawn with num_workers=0: 1.3-2.0 "accelerator=ddp_spawn and num_workers=0 may result"
# (1.5+: strategy=); 0.8-1.2 "You are using `distributed_backend=ddp_spawn` with num_workers=0"
# (1.1+: accelerator=).
SPAWN_NO_WORKERS = re.compile(
    r"(?:strategy|accelerator)=ddp_spawn and num_workers=0 may result|"
    r"You are using `(?:distributed_backend|accelerator)=ddp_spawn` with num_workers=0"
)
# Too few workers. Lightning <= 2.0 (0.7-2.0): "The dataloader, train_dataloader, does not have
# many workers which may be a bottleneck." when num_workers <= 2 (0.9-2.0: and the machine has
# more than 2 CPUs; "(try N which is the number of cpus on this machine)" from 0.8). Lightning
# >= 2.1: "The 'train_dataloader' does not have many workers …  to `num_workers=N`" when
# num_workers < 2 (2.2+: and N > 1; N = CPUs / devices - 1). Not printed with spawn (a spawn
# warning is printed instead).
FEW_WORKERS = re.compile(
    r"The (?:dataloader, (?P<a>[^,]+),|'(?P<b>[^']+)') does not have many workers which may be "
    r"a bottleneck"
)
FEW_WORKERS_CPUS = re.compile(r"\(try (\d+) which is the number of cpus on this machine\)")
FEW_WORKERS_SUGGEST = re.compile(r"to `num_workers=(\d+)`")

# --- too many DataLoader workers (torch/utils/data/dataloader.py, _check_worker_number_rationality,
# torch >= 1.7; 2.5+ check_worker_number_rationality): "This DataLoader will create 16 worker
# processes in total. Our suggested max number of worker in current system is 8, which is smaller
# than what this DataLoader is going to create. Please be aware …"; " (`cpuset` is not taken into
# account)" follows the number when os.sched_getaffinity is missing (Windows, macOS); "DataLoader
# is not able to compute a suggested max number of worker in current system." replaces the
# sentence when the CPU count is unknown (then printed for any num_workers > 0). The number
# created is the DataLoader's num_workers (one process); the suggested max is the CPUs the process
# may run on (sched_getaffinity, else os.cpu_count()), not divided by the processes per node.
LOADER_TOO_MANY = re.compile(
    r"This DataLoader will create (\d+) worker processes in total\. (?:Our suggested max number "
    r"of worker in current system is (\d+)( \(`cpuset` is not taken into account\))?|"
    r"DataLoader is not able to compute a suggested max)"
)

# --- DataLoader worker crash (torch/utils/data/_utils/signal_handling.py, dataloader.py) -----
WORKER_KILLED = re.compile(
    r"DataLoader worker \(pids?\(?s?\)? ?([\d, ]+)\) (?:is killed by signal: ([A-Za-z ]+)|"
    r"exited unexpectedly)"
)
WORKER_BUS_ERROR = re.compile(r"Unexpected bus error encountered in worker")

# --- loss-scale overflow ---------------------------------------------------------------------
# apex amp (apex/amp/handle.py, printed by every rank): "Gradient overflow.  Skipping step, loss
# scaler 0 reducing loss scale to 32768.0"
APEX_OVERFLOW = re.compile(
    r"Gradient overflow\.\s+Skipping step, loss scaler (\d+) reducing loss scale to "
    r"([0-9.eE+-]+|inf)"
)
# DeepSpeed (runtime/fp16/loss_scaler.py, zero/stage*.py; '[deepscale]' before ~0.5): "[deepspeed]
# OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 65536, reducing to 32768" or ", but
# hysteresis is 2. Reducing hysteresis to 1"; apex FP16_Optimizer / old DeepSpeed: "OVERFLOW!
# Skipping step. Attempted loss scale: …" and "fp16 dynamic loss scale overflow! Skipping step."
DS_OVERFLOW = re.compile(
    r"(?:OVERFLOW! (?:Rank (?P<rank>\d+) )?|loss scale overflow! )Skipping step\.\s*"
    r"Attempted loss scale: (?P<scale>[0-9.eE+]+)"
)
# DeepSpeed engine progress line (log_dist every steps_per_print): "step=10, skipped=6, lr=[…]"
DS_STEP_SKIPPED = re.compile(r"\bstep=(\d+), skipped=(\d+)")
# maskrcnn-benchmark / apex.fp16_utils DynamicLossScaler: "Grad overflow on iteration 3"
GRAD_OVERFLOW_ITER = re.compile(r"Grad overflow on iteration(?:\s+(\d+)\s*$)?")
# fairseq trainer: "NOTE: overflow detected, setting loss scale to: 64.0", newer "NOTE: gradient
# overflow detected, ignoring gradient, setting loss scale to: 64.0"; 2019: "| WARNING: overflow …"
FAIRSEQ_OVERFLOW = re.compile(
    r"(?:NOTE|WARNING): (?:gradient )?overflow detected, (?:ignoring gradient, )?setting loss "
    r"scale to: ([0-9.eE+-]+)"
)
# Megatron-LM training.py log line: " iteration  100/ 500000 | … | number of skipped iterations:
# 3 | number of nan iterations:   0 |" (counts over the log interval)
MEGATRON_SKIPPED = re.compile(
    r"iteration\s+(\d+)/\s*\d+\s*\|.*?number of skipped iterations:\s*(\d+)"
    r"(?:.*?number of nan iterations:\s*(\d+))?"
)
MIN_LOSS_SCALE = re.compile(
    r"Current loss scale already at minimum|Minimum loss scale reached \(([0-9.eE+-]+)\)"
)

# --- NCCL watchdog (torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp) ------------------------
# 1.x: "[E ProcessGroupNCCL.cpp:566] [Rank 3] Watchdog caught collective operation timeout:
# WorkNCCL(OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 1800450 milliseconds before timing out."
# >= 1.10 adds SeqNum=, >= 2.0 NumelIn=/NumelOut=; 2.2+ prefixes "[rank3]:[E321 02:07:08.4 …]";
# the same text is repeated in "NCCL watchdog thread terminated with exception: …" lines.
NCCL_TIMEOUT = re.compile(
    r"Rank (\d+)\] Watchdog caught collective operation timeout: WorkNCCL\("
    r"((?:[^()]|\([^()]*\))*)\) ran for (\d+) milliseconds"
)
NCCL_WORK_FIELD = re.compile(r"(\w+(?:\(ms\))?)=([^,]+)")

# --- threads ---------------------------------------------------------------------------------
# torch.distributed.run / launch (run.py): "Setting OMP_NUM_THREADS environment variable for each
# process to be 1 in default, to avoid your system being overloaded, …"
OMP_DEFAULT = re.compile(
    r"Setting OMP_NUM_THREADS environment variable for each process to be (\d+) in default"
)
OMP_VALUE = re.compile(r"\bOMP_NUM_THREADS\s*[=:]\s*['\"]?(\d+)")
NPROC = re.compile(r"--(?:nproc[_-]per[_-]node|ntasks-per-node)[= ](\d+)")
LSCPU_CPUS = re.compile(r"^\s*CPU\(s\):\s+(\d+)\s*$")

# --- NCCL's own output (files that hold nothing else are not the job's stdout/stderr) ---------
# NCCL_DEBUG lines "host:pid:tid [dev] NCCL INFO|WARN …", NCCL's "NCCL version 2.18.6+cuda12.1"
# banner (rank 0, printed without INFO), RCCL's banner ("RCCL version : …", "HIP version  : …",
# "ROCm version : …", "Hostname     : …", "Librccl path : …") and blank lines, each possibly behind
# a launcher prefix. OTHER_LINE finds the first line that is none of these.
_LAUNCH = rb"(?:\[\d+,\d+\]<std(?:out|err)>:|\[default\d+\]:|\[rank\d+\]:|[ \t]*\d{1,5}: )?"
OTHER_LINE = re.compile(
    rb"(?m)^(?!"
    + _LAUNCH
    + rb"[ \t\r]*$)(?![^\n]*NCCL (?:INFO|WARN))(?!"
    + _LAUNCH
    + rb"[ \t]*(?:(?:[NR]CCL|HIP|ROCm) version|Hostname\s+:|Librccl path\s*:))"
)

# --- epoch length (for the inter-epoch stall) ------------------------------------------------
# MMEngine "Epoch(train)  [1][  24/1051]"; timm/DeiT/maskrcnn "Epoch: [0]  [ 10/1251]"; Lightning
# tqdm "Epoch 3:  45%|████▌     | 450/1000 [01:02<…" (Lightning 1.x counts validation batches too).
EPOCH_LEN = re.compile(
    r"Epoch(?:\(train\)\s*|: )\[\s*\d+\s*\]\s*\[\s*\d+\s*/\s*(\d+)\s*\]"
    r"|Epoch \d+:\s+\d+%\|[^|]*\|\s*\d+/(\d+)\s*\["
)
