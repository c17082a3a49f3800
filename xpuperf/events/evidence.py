"""Evidence that a framework-warning check is in play: a check is ``clean`` only when the log
shows the thing it checks in use (so the warning would have been printed had the fault been
there), else ``not_checked`` with what would be evidence.

:data:`SIGNS` holds one pattern per kind of evidence; :func:`find_signs` records the first line
of each kind per scan (its pattern joins the marker prefilter's RE2 pass over the 64 KiB blocks
of a chunk while kinds are missing; the matched blocks are searched again, then Python ``re``
inside the first block that holds a sign). The rules per check:

- DDP (XP701/XP702, printed by torch's DDP reducer): a DDP line, or torch.distributed in use with
  no other data-parallel engine (DeepSpeed, FSDP, Megatron-LM, Horovod wrap the model instead);
- DataLoader (XP703/XP704/XP711–XP713, printed by torch's DataLoader and Lightning): a PyTorch
  DataLoader line (torch.utils.data, Lightning, MMEngine, HF Trainer), or ``num_workers`` set
  in a PyTorch job;
- loss-scale overflow (XP705–XP707): a loss scaler that prints or counts its skipped steps
  (apex amp, apex fp16_utils, DeepSpeed fp16 or its ``skipped=`` counter, Megatron-LM's
  ``number of skipped iterations``, fairseq's ``loss_scale=``); torch.cuda.amp's GradScaler
  and Keras' LossScaleOptimizer skip silently, fp32 and bf16 skip nothing;
- NCCL watchdog (XP708, printed by torch's ProcessGroupNCCL): PyTorch's NCCL process group, or
  NCCL lines beside PyTorch lines (nccl-tests, TensorFlow, MXNet/Horovod and HCCL print no such
  watchdog line).

Sources of the texts: torch ``nn/parallel/distributed.py`` ("Reducer buckets have been rebuilt
in this iteration."), ``distributed_c10d.py`` (store_based_barrier_key logs, torch 1.8–2.0),
Lightning's ``distributed_backend=…`` / "Initializing distributed: GLOBAL_RANK" banners, apex
``amp/frontend.py`` ("Selected optimization level O1:", ``loss_scale : dynamic``), DeepSpeed's
config print (``fp16_enabled ..... True``) and "Initializing TorchBackend in DeepSpeed with
backend nccl".
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

_TORCH_DIST = (
    r"torch[./\\]distributed|torchrun|init_process_group|store_based_barrier_key|\[c10d\]|"
    r"ProcessGroup(?:NCCL|Gloo)|Initializing distributed: GLOBAL_RANK|"
    r"All distributed processes registered|^\s*\[(?:rank|default)\d+\]:"
)
SIGNS: dict[str, str] = {
    # torch DDP itself: the class, its reducer's INFO line, its C++ reducer, Lightning's ddp
    "ddp": (
        r"\bDistributedDataParallel\b|Reducer buckets have been rebuilt|reducer\.cpp|"
        r"initializing ddp: GLOBAL_RANK|(?:strategy|accelerator|distributed_backend)=['\"]?ddp|"
        r"\bDDPStrategy\b|\bDDPPlugin\b"
    ),
    # torch.distributed in use: launcher, c10d, Lightning's banner, per-rank prefixes
    "torch_dist": _TORCH_DIST,
    # a data-parallel engine that is not torch DDP
    "other_dp": (
        r"\[deepspeed\]|DeepSpeed info|DeepSpeedEngine|log_dist\]|in DeepSpeed with backend|"
        r"FullyShardedDataParallel|FSDPStrategy|[Hh]orovod|HOROVOD_\w*|"
        r"elapsed time per iteration \(ms\)"
    ),
    # PyTorch (any use): paths, launcher, the frameworks built on it
    "torch": (
        r"\btorch[./\\][\w./\\]*|torchrun|PyTorch|pytorch_lightning|lightning[./\\]pytorch|"
        r"- mmengine -|maskrcnn_benchmark|fairseq|[Mm]egatron|\[deepspeed\]|log_dist\]|"
        r"\[titan\]"
    ),
    # a PyTorch DataLoader: torch.utils.data, Lightning, MMEngine, HF Trainer
    "loader": (
        r"torch[./\\]utils[./\\]data|persistent_workers|DataLoader worker|pytorch_lightning|"
        r"lightning[./\\]pytorch|LOCAL_RANK: \d+ - CUDA_VISIBLE_DEVICES|"
        r"(?:Sanity Checking|Validation|Testing|Predicting) DataLoader \d|- mmengine -|"
        r"\*{5} Running training \*{5}|dataloader_num_workers|worker processes in total"
    ),
    # num_workers given a value (kwargs, YAML, dict, CLI); MXNet's ".../num_workers (" is not
    "workers_kw": (
        r"(?:num_workers|NUM_WORKERS|num-workers)['\"]?(?:\s*[=:,]\s*['\"]?\s*|\s+)\d+|"
        r"--workers[= ]\d+"
    ),
    # NCCL (or RCCL) in use
    "nccl": r"NCCL (?:INFO|WARN)|[NR]CCL version|NCCL_DEBUG",
    # PyTorch's NCCL process group (whose watchdog prints XP708's line)
    "pt_nccl": (
        r"ProcessGroupNCCL|WorkNCCL|(?:distributed_backend|dist_backend|backend)\s*[=:]\s*"
        r"['\"]?nccl|distributed_backend \.+ nccl|with backend nccl|TORCH_NCCL_|"
        r"NCCL_ASYNC_ERROR_HANDLING|NCCL_BLOCKING_WAIT"
    ),
    "hccl": r"HCCL\w*|hccl\w*",
    # a loss scaler that prints or counts its skipped steps
    "scaler": (
        r"Selected optimization level O[12]|loss_scale\s+: dynamic|Using dynamic loss scale|"
        r"number of skipped iterations|fp16_enabled \.+ True|"
        r"loss_scale=[0-9.eE+-]+, train_wall=|\"loss_scale\": \"[0-9]"
    ),
    # a loss scaler that skips steps without a word
    "silent_scaler": (
        r"Using 16bit (?:native )?Automatic Mixed Precision|GradScaler|torch\.cuda\.amp|"
        r"mixed_float16|LossScaleOptimizer"
    ),
}
"""Kind of evidence → pattern (valid for RE2 and Python ``re``, matched line by line)."""

_PY = {k: re.compile(v.encode(), re.M) for k, v in SIGNS.items()}
MAX_SIGN = 60
"""Characters of the matched text kept."""


@dataclass(frozen=True)
class Sign:
    """The first line showing one kind of evidence: file, 1-based line, matched text."""

    file: str
    line: int
    text: str

    def __str__(self) -> str:
        return f"'{self.text}' at {Path(self.file).name}:{self.line}"


def block_array(body: bytes, n: int, block: int) -> tuple[list[int], pa.Array]:
    """Line-aligned blocks of about ``block`` bytes of ``body[:n]``, as (bounds, zero-copy
    Arrow binary array): blocks end after a newline, so no line spans two."""
    bounds, pos = [0], block
    while pos < n:
        j = body.find(b"\n", pos, n)
        if j == -1:
            break
        bounds.append(j + 1)
        pos = j + 1 + block
    if bounds[-1] != n:
        bounds.append(n)
    off = pa.py_buffer(np.asarray(bounds, dtype=np.int64))
    arr = pa.LargeBinaryArray.from_buffers(
        pa.large_binary(), len(bounds) - 1, [None, off, pa.py_buffer(body)]
    )
    return bounds, arr


def pattern(signs: dict[str, Sign]) -> str | None:
    """One RE2 pattern for the kinds not in ``signs``, or None when every kind was seen."""
    missing = [k for k in SIGNS if k not in signs]
    return "(?m)" + "|".join(f"(?:{SIGNS[k]})" for k in missing) if missing else None


def find_signs(
    body: bytes,
    bounds: list[int],
    arr: pa.Array,
    cand: np.ndarray,
    base: int,
    name: str,
    signs: dict[str, Sign],
) -> None:
    """Add to ``signs`` the first line (after ``base`` lines) of each kind not yet seen, looking
    in the blocks ``cand`` of ``arr`` only (indices, ascending: the blocks a pass of
    :func:`pattern` — with other patterns — matched)."""
    while len(cand) and (rx := pattern(signs)) is not None:
        hit = pc.match_substring_regex(arr.take(pa.array(cand)), pattern=rx)
        idx = np.flatnonzero(hit.to_numpy(zero_copy_only=False))
        if len(idx) == 0:
            return
        k = int(cand[idx[0]])
        for kind in [k2 for k2 in SIGNS if k2 not in signs]:
            m = _PY[kind].search(body, bounds[k], bounds[k + 1])
            if m is not None:
                line = base + body.count(b"\n", 0, m.start()) + 1
                text = m.group(0).decode("utf-8", "replace").strip()[:MAX_SIGN]
                signs[kind] = Sign(name, line, text)
        cand = cand[idx[0] + 1 :]


DDP_WOULD_BE = (
    "evidence would be: DistributedDataParallel, DDP's 'Reducer buckets have been rebuilt', "
    "torchrun or torch.distributed lines, Lightning's 'Initializing distributed'"
)
LOADER_WOULD_BE = (
    "evidence would be: torch.utils.data in a warning or traceback, num_workers in a PyTorch "
    "job, Lightning, MMEngine or HF Trainer lines"
)
SCALER_WOULD_BE = (
    "evidence would be: apex amp's 'Selected optimization level O1/O2' or 'Gradient overflow', "
    "DeepSpeed 'fp16_enabled … True' or 'step=…, skipped=…', Megatron-LM's 'number of skipped "
    "iterations', fairseq's loss_scale=, 'Using dynamic loss scale'; fp32 and bf16 runs use no "
    "loss scaling"
)
NCCL_WOULD_BE = (
    "evidence would be: ProcessGroupNCCL lines, backend='nccl', TORCH_NCCL_* or "
    "NCCL_ASYNC_ERROR_HANDLING, or NCCL INFO lines / 'NCCL version' beside torch.distributed "
    "lines"
)


def ddp(signs: dict[str, Sign]) -> tuple[str | None, str | None]:
    """(evidence that PyTorch DDP runs, or None; why not checked, or None)."""
    if "ddp" in signs:
        return f"PyTorch DDP in use: {signs['ddp']}", None
    other = signs.get("other_dp")
    if "torch_dist" in signs and other is None:
        return f"torch.distributed in use ({signs['torch_dist']}), no other DP engine seen", None
    if other is not None:
        return None, (
            f"the job runs another data-parallel engine ({other}: DeepSpeed, FSDP, Megatron-LM "
            f"or Horovod), and no line shows PyTorch DDP; {DDP_WOULD_BE}"
        )
    return None, f"no evidence that the job uses PyTorch DDP; {DDP_WOULD_BE}"


def _torch(signs: dict[str, Sign]) -> Sign | None:
    return signs.get("torch_dist") or signs.get("ddp") or signs.get("torch")


def loader(signs: dict[str, Sign]) -> tuple[str | None, str | None]:
    """(evidence that a PyTorch DataLoader runs, or None; why not checked, or None)."""
    if "loader" in signs:
        return f"PyTorch DataLoader in use: {signs['loader']}", None
    torch = _torch(signs)
    if "workers_kw" in signs and torch is not None:
        return f"DataLoader workers set ({signs['workers_kw']}) in a PyTorch job ({torch})", None
    return None, f"no evidence that the job uses a PyTorch DataLoader; {LOADER_WOULD_BE}"


def scaler(signs: dict[str, Sign]) -> tuple[str | None, str | None]:
    """(evidence of a loss scaler that prints or counts skips, or None; why not checked)."""
    if "scaler" in signs:
        return f"loss scaling that reports its skips: {signs['scaler']}", None
    silent = signs.get("silent_scaler")
    if silent is not None:
        return None, (
            f"the loss scaler in use ({silent}: torch.cuda.amp GradScaler, Lightning 16-bit AMP, "
            "Keras LossScaleOptimizer) skips overflow steps without printing; log the scale "
            "(scaler.get_scale()) each step to count them"
        )
    return None, f"no evidence of a loss scaler that reports skipped steps; {SCALER_WOULD_BE}"


def nccl(signs: dict[str, Sign]) -> tuple[str | None, str | None]:
    """(evidence that PyTorch's NCCL process group runs, or None; why not checked)."""
    if "pt_nccl" in signs:
        return f"PyTorch's NCCL backend in use: {signs['pt_nccl']}", None
    torch, lib = _torch(signs), signs.get("nccl")
    if lib is not None and torch is not None:
        return f"NCCL ({lib}) in a PyTorch job ({torch})", None
    watchdog = "the timeout line this check reads is printed by PyTorch's ProcessGroupNCCL watchdog"
    if lib is not None:
        return None, (
            f"NCCL is in use ({lib}) but nothing shows PyTorch: {watchdog}; nccl-tests, "
            f"TensorFlow and Horovod report a hang otherwise; {NCCL_WOULD_BE}"
        )
    if "hccl" in signs:
        return None, f"the collectives run on HCCL ({signs['hccl']}): {watchdog} only"
    return None, f"no evidence that the job uses PyTorch's NCCL backend; {NCCL_WOULD_BE}"
