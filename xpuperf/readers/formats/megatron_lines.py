"""Megatron step lines, field by field: the patterns, the ``|``-separated fields, the prefixes
logging frameworks put in front (AMD Primus, Python ``logging``, loguru, NeMo) and the run facts
(world size, sequence length) that turn per-GPU token rates into the job's tokens per step.

Step lines recognised by :func:`step_match` (the line path of :mod:`.megatron`):

- ``iteration N/ M |`` at the start of the line, after one ``[…]`` group, or after a ``|``
  (upstream Megatron-LM, Megatron-DeepSpeed, GPT-NeoX's ``samples/sec: X | iteration …``);
- the same behind ANY logger prefix that ends with a separator (``]``, ``:``, ``-``, ``|``,
  ``>``) when the line also holds ``elapsed time per iteration``: AMD Primus
  ``[20251121 12:10:29][rank-31/32][INFO ] [--------trainer.py:2488] :  iteration …``,
  ``2024-05-01 10:00:00,123 - megatron.training - INFO - iteration …``, loguru
  ``… | INFO     | megatron.training:train:123 - iteration …``. A line where ``iteration`` follows
  free words (``saving checkpoint at iteration …``) is not a step line.

AMD Primus (``primus/modules/trainer/megatron/trainer.py``) prints two numbers where upstream prints
one: ``elapsed time per iteration (ms): 2701.3/2712.7`` is the log interval's mean / the mean of
the recent log lines; the first is used. Its per-GPU rates come in three spellings (Primus
versions 2025–2026):

- ``throughput per GPU (TFLOP/s/GPU): 210.5/217.3 | tokens per GPU (tokens/s/GPU): 12130.4/12525.5``
- ``throughput per GPU (TFLOP/s/GPU): 346.3/340.8 | tokens/s/GPU inst/harmonic mean: 20502.6/…``
- ``compute per GPU (TFLOP/s/GPU): 615.5 (avg 615.5) | tokens/s/GPU inst/harmonic mean: …``

The first tokens number is ``seq_length × global batch / step time / world size``. TFLOP/s/GPU is
not MFU (the peak is not in the log) and is not used.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

LINE = re.compile(r"(?:^|\|)\s*(?:\[[^\]]{0,256}\]\s*)?iteration\s+(\d+)\s*/\s*(\d+)\s*\|")
"""Any iteration line. The ``[…]`` group before ``iteration`` is at most 256 characters: an
unbounded one was retried from every ``|`` to the end of the line (160 KB of ``|[``: 7.7 s)."""
PREFIXED = re.compile(r"(?<=[\]:>|\-])\s*iteration\s+(\d+)\s*/\s*(\d+)\s*\|")
"""An iteration line behind a logger prefix (anything ending with a separator); searched."""
ELAPSED = "elapsed time per iteration"
FAST = re.compile(
    r"^\s*iteration\s+(\d+)\s*/\s*\d+\s*\|[^|]*\|\s*elapsed time per iteration \(ms\):\s*([\d.]+)"
    r"\s*\|[^|]*\|\s*global batch size:\s*(\d+)\s*\|"
)
"""The fast path: the standard Megatron-LM line, matched in one go (anchored)."""
LOG_PREFIX = re.compile(r"^\s*(?:\[[^\]]*\]\s*)+")
"""``[date time] [Rank 0] `` logging groups in front of a NeoX ``samples/sec: X |`` field."""
RANK_OF = re.compile(r"\[rank-(\d{1,7})/(\d{1,7})\]")
"""Primus' ``[rank-31/32]`` logger field: the printing rank and the world size."""
TPS = "tokens_per_gpu_per_s"
"""Working column of the parser: Primus' tokens/s/GPU, turned into ``tokens`` by
:func:`job_tokens`."""
TOKENS_KEYS = ("tokens per GPU (tokens/s/GPU)", "tokens/s/GPU inst/harmonic mean")
"""Primus' per-GPU token rate, old and new spelling."""
_FACTS = (
    ("world_size", b"world size:", re.compile(rb"using world size:\s*(\d+)")),
    ("world_size", b"world_size .", re.compile(rb"(?m)[\s:\]]world_size \.{2,} (\d+)\s*$")),
    ("seq_length", b"seq_length .", re.compile(rb"(?m)[\s:\]]seq_length \.{2,} (\d+)\s*$")),
)
"""Megatron's start-up facts: ``using world size: 32, data-parallel size: 4, …`` and the
``-------- arguments --------`` dump (``  world_size ........ 32``, ``  seq_length ....... 4096``,
also behind a logger prefix); the literal is looked for first (one C scan per block), the pattern
only where it occurs."""


def step_match(text: str) -> re.Match[str] | None:
    """The ``iteration N/ M |`` match of a step line (see the module docstring), else None."""
    m = LINE.search(text)
    if m is None and ELAPSED in text:
        m = PREFIXED.search(text)
    return m


def fields(text: str) -> dict[str, str]:
    """``key: value`` pairs of the ``|``-separated fields, both stripped (a field without a colon
    is ignored; leading colons are skipped). Split, not a regex: the former key/value pattern
    ``\\s*([^:|]+?)\\s*:\\s*([^|]*?)\\s*`` (same results) was cubic on a long blank run (400
    blanks took 7 s)."""
    out = {}
    for field in text.split("|"):
        key, colon, value = field.lstrip(":").partition(":")
        if colon:
            out[key.strip()] = value.strip()
    return out


def first_number(value: str | None) -> float:
    """The first of Primus' ``inst/avg`` pair (``"2701.3/2712.7"`` → 2701.3), or of a plain
    number; NaN when it is not a number (``"."``, ``"1.2.3"``) or missing."""
    if value is None:
        return float("nan")
    try:
        return float(value.partition("/")[0])
    except ValueError:
        return float("nan")


def tokens_rate(f: dict[str, str]) -> float | None:
    """Primus' tokens/s/GPU (the first number) from a step line's fields, or None."""
    for key in TOKENS_KEYS:
        if key in f:
            return first_number(f[key])
    return None


def scan_facts(data: bytes, facts: dict[str, int]) -> None:
    """Add the start-up facts of a block of whole lines to ``facts`` (the first value found of
    each wins)."""
    for name, literal, pattern in _FACTS:
        if name in facts or literal not in data:
            continue
        m = pattern.search(b"\n" + data)
        if m:
            facts[name] = int(m.group(1))


def job_tokens(frame: pd.DataFrame, facts: dict[str, int]) -> list[str]:
    """Set the ``tokens`` column of job-level rows (GLOBAL, like ``samples``: the job's tokens per
    step) and drop the working :data:`TPS` column; return notes saying where the figures came
    from.

    ``tokens`` = global batch × ``seq_length`` when the arguments dump printed it, else Primus'
    tokens/s/GPU × step time × world size (``using world size``, ``world_size`` or the
    ``[rank-R/N]`` field) — which is global batch × seq_length up to the rounding of the printed
    figures, so it is snapped to a whole seq_length per token when within 0.1 %; without either
    a note says the rate was not used."""
    notes = []
    tps = frame.pop(TPS).to_numpy(dtype="float64") if TPS in frame.columns else None
    seq = facts.get("seq_length")
    world = facts.get("world_size") or facts.get("world_prefix")
    where = "'[rank-R/N]' field" if "world_size" not in facts else "start-up lines"
    if seq and "samples" in frame.columns and frame["samples"].notna().any():
        frame["tokens"] = frame["samples"].to_numpy(dtype="float64") * seq
        notes.append(
            f"tokens per step = global batch size × seq_length {seq} (printed at start-up): the "
            "job's tokens, like samples"
        )
    elif tps is not None and world:
        tokens = tps * frame["step_time_s"].to_numpy(dtype="float64") * world
        how = ""
        if "samples" in frame.columns:  # = global batch × seq_length: snap to a whole seq_length
            gbs = frame["samples"].to_numpy(dtype="float64")
            with np.errstate(invalid="ignore", divide="ignore"):
                seq_est = tokens / gbs
            whole = np.round(seq_est)
            ok = np.abs(seq_est - whole) <= 1e-3 * whole
            if ok.any():
                tokens = np.where(ok, gbs * whole, tokens)
                how = f" = global batch × {int(np.median(whole[ok]))} (whole seq_length)"
        frame["tokens"] = tokens
        notes.append(
            f"tokens per step = tokens/s/GPU × step time × world size {world} (from the "
            f"{where}){how}: the job's tokens, like samples"
        )
    elif tps is not None:
        notes.append(
            "the log prints tokens/s/GPU but neither seq_length nor the world size: tokens per "
            "step not read"
        )
    return notes


def world_of(facts: dict[str, int]) -> tuple[int | None, str]:
    """The job's world size (GPUs) the log states and where: the ``using world size`` line or
    the arguments dump first, else Primus' ``[rank-R/N]`` logger field; (None, "") without."""
    if facts.get("world_size"):
        return facts["world_size"], "start-up lines ('using world size' / arguments dump)"
    if facts.get("world_prefix"):
        return facts["world_prefix"], "'[rank-R/N]' logger field"
    return None, ""
