"""From parsed files to canonical step-table rows: mapping, derivation, row checks and ranks.

(:func:`finish` and :func:`warnings_of` live in :mod:`xpuperf.readers.finish` and are re-exported
here.)

Per file, :func:`prepare` maps columns (:mod:`~xpuperf.readers.columns`) and converts values; then
:func:`assign_ranks` gives every row its global rank looking at all files together; then
:func:`finish` drops bad rows and derives the step time when the file has none.

Step time, first found of:

1. a step-time column;
2. a step-rate column (steps/s): ``1 / rate``;
3. a throughput column (samples/s of this rank): ``samples / throughput``, samples from a samples
   column or the ``batch_size`` argument;
4. a timestamp column: the difference of consecutive timestamps of a rank divided by the
   difference of their step numbers (logs written every N steps give the mean step time); the
   first row of each rank has no predecessor and is dropped.

Rank, first found of (per file):

1. a rank column;
2. ``local_rank`` and ``node`` columns: ``rank = node_index × local_world + local_rank`` where
   ``node_index`` is the position of the node name among all node names of the input in natural
   order (``node2`` before ``node10``) and ``local_world = max(local_rank) + 1`` over the input;
3. a rank number in the file name (:func:`xpuperf.readers.paths.rank_from_name`);
4. a ``local_rank`` column alone (taken as the rank: one node);
5. a ``node`` column alone (one rank per node: ``rank = node_index``);
6. rank 0 when the input is a single file.

Rows are dropped, with one warning per file and reason, when: a numeric cell is not a number; the
rank is missing or not a non-negative integer; the step is missing or not an integer; the step time
is missing, NaN, infinite, zero or negative; a phase time is negative; the (rank, step) pair
repeats an earlier row (the first is kept); the step is lower than an earlier step of the rank in
the same file.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from xpuperf.errors import EmptyLogError, InputError
from xpuperf.readers import columns as colmod
from xpuperf.readers import convert
from xpuperf.readers.base import NAME_CHARS, RawTable, Source, name_list, short
from xpuperf.readers.generic import sniff_jsonl
from xpuperf.readers.paths import natural_key, rank_from_name

BAD_RANK = "rank missing or not a non-negative integer"
RANK_LIMIT = 2**31 - 1
"""Ranks must be below this (the step table stores them as int32)."""
RANK_RANGE = f"rank out of range (must be below {RANK_LIMIT})"
BAD_STEP = "step number missing or not an integer"
STEP_LIMIT = 2.0**63
"""Step numbers must lie in [-STEP_LIMIT, STEP_LIMIT) (the step table stores them as int64)."""
STEP_RANGE = "step number out of range (must fit a signed 64-bit integer)"
BAD_TIME = "step time missing, NaN, infinite, zero or negative"
MAX_SECONDS = 1e7
"""Plausibility bound of a step time and of each phase time: 1e7 s (about 116 days) per step.
Larger values are a wrong unit, a mis-mapped column or corrupt data, and would overflow the
statistics (variance of values near 1e300 is infinite)."""
TOO_LONG = f"implausible time above {MAX_SECONDS:.0e} s (~116 days) per step"
TIMESTAMPS_BACK = (
    "timestamps do not increase (step time = timestamp difference is zero or negative)"
)
PHASE_SLACK = 0.01
"""compute + comm + data may exceed the step time by this fraction before a file is warned about."""
DUPLICATE = "same (rank, step) as an earlier row; kept the first"
BACKWARDS = "step number lower than an earlier step of the same rank in this file"
FIRST_DIFF = (
    "first row of each rank has no step time (step time = difference of consecutive timestamps)"
)
DERIVED = {
    "rate": " (step time = 1 / step rate)",
    "throughput": " (step time = samples / throughput)",
    "timestamps": " (step time = timestamp difference)",
}


@dataclass
class Part:
    """One file on its way to the step table.

    Attributes:
        src, raw: the file and its parsed table.
        df: canonical columns so far (plus ``local_rank``, ``step_rate``, ``throughput`` while
            needed); the index holds record ordinals of ``raw`` (for locating warnings).
        derive: where the step time comes from: None (a column), ``"rate"``, ``"throughput"`` or
            ``"timestamps"``.
        file_rank: rank number found in the file name, if any.
        names: field → the file's column that feeds it (for messages).
        how: how the rank was found (set by :func:`assign_ranks`).
        pending: dropped rows as ``(reason, count, first record ordinal)``.
        notes: kept but suspicious rows as ``(message, count, first record ordinal)``.
        report: every drop as ``(reason, count, first position in raw.unit)``, set by
            :func:`warnings_of`.
    """

    src: Source
    raw: RawTable
    df: pd.DataFrame
    derive: str | None
    file_rank: int | None
    names: dict[str, str] = field(default_factory=dict)
    how: str = ""
    pending: list[tuple[str, int, int]] = field(default_factory=list)
    report: list[tuple[str, int, int | None]] = field(default_factory=list)
    notes: list[tuple[str, int, int]] = field(default_factory=list)

    def drop(self, mask: np.ndarray, reason: str) -> None:
        """Drop the rows where ``mask`` is true, remembering the reason, count and first row."""
        if not mask.any():
            return
        first = int(self.df.index[int(np.argmax(mask))])
        self.pending.append((reason, int(mask.sum()), first))
        self.df = self.df[~mask]


def _no_step_time(src: Source, names: list[str]) -> InputError:
    def some(role: str) -> str:
        return ", ".join(colmod.ALIASES[role][:4]) + ", …"

    hint = (  # not for '[rank0]:' / '[2024-…]' log prefixes: the JSON sniffer decides
        "; the file looks like JSON: try --format jsonl"
        if sniff_jsonl(src.first_lines(50)) and src.suffix not in (".json", ".jsonl", ".ndjson")
        else ""
    )
    return InputError(
        "no step time column: expected one of "
        f"{colmod.accepted('step_time_s')} (optionally with a unit suffix such as _ms); or a "
        f"step rate ({some('step_rate')}); or a throughput ({some('throughput')}) with samples "
        f"or --batch-size; or a timestamp ({some('t_end_s')}). The first line must name the "
        f"columns; found: {name_list(names, quote=False)}{hint}",
        src.name,
    )


def _pick(raw: RawTable) -> dict[str, colmod.Match]:
    found = colmod.resolve(raw.frame.columns)
    for m in list(found.get("step_time_s", [])):
        if m.ambiguous:
            is_ts = convert.looks_like_timestamp(raw.frame[m.column], m.factor)
            other = "step_time_s" if is_ts else "t_end_s"
            found[other] = [x for x in found[other] if x.column != m.column]
    return {role: ms[0] for role, ms in found.items() if ms}


def prepare(src: Source, raw: RawTable, batch_size: float | None) -> Part:
    """Map and convert the columns of one parsed file; drop rows with non-numeric cells.

    Raises:
        InputError: no usable step-time source; a throughput without samples or ``batch_size``;
            a file with a header but no data rows.
    """
    pick = _pick(raw)
    if "step_time_s" in pick:
        derive = None
    elif "step_rate" in pick:
        derive = "rate"
    elif "throughput" in pick:
        derive = "throughput"
        if "samples" not in pick and batch_size is None:
            raise InputError(
                (
                    f"column {short(pick['throughput'].column, NAME_CHARS)!r} is a throughput, "
                    f"but there is no samples column ({colmod.accepted('samples')}) to turn it "
                    "into a step time"
                    if not getattr(raw, "batch_hint", "")
                    else raw.batch_hint  # type: ignore[attr-defined]
                )
                + ": pass --batch-size N (batch_size=N), the samples per step of one rank",
                src.name,
            )
    elif "t_end_s" in pick:
        derive = "timestamps"
    else:
        raise _no_step_time(src, raw.all_columns)
    for unused in {None: ("step_rate", "throughput"), "rate": ("throughput",)}.get(derive, ()):
        pick.pop(unused, None)
    frame = raw.frame
    if len(frame) == 0 and not raw.drops:
        raise EmptyLogError("has no data rows, only a header", src.name)

    # the mapped columns go into the part as they are: a numeric column is not copied (pandas
    # copies an array set with df[col] = …, not one passed to the constructor with copy=False)
    cols: dict[str, object] = {}
    nonnum = np.zeros(len(frame), dtype=bool)
    bad_cols = []
    for role, m in pick.items():
        s = frame[m.column]
        if role == "node":
            cols["node"] = convert.to_label(s)
            continue
        if role == "t_end_s":
            vals, bad = convert.to_epoch(s, m.factor, m.unit)
        elif role in ("rank", "local_rank"):
            vals, bad = convert.to_index(s)
        else:
            vals, bad = convert.to_float(s)
            if m.factor != 1.0 and not convert.is_duration(s):  # durations carry their unit
                vals = vals * m.factor
        cols[role] = vals
        if bad is not None and bad.any():
            nonnum |= bad
            bad_cols.append(m.column)
    df = pd.DataFrame(cols, index=frame.index, copy=False)
    del cols
    if "step" not in df.columns:  # number rows 0, 1, 2… per rank, in file order
        keys = [k for k in ("rank", "local_rank", "node") if k in df.columns]
        keys = keys[:1] if "rank" in keys else keys
        if keys:
            df["step"] = df.groupby(keys, dropna=False, sort=False).cumcount().astype(np.float64)
        else:
            df["step"] = np.arange(len(df), dtype=np.float64)
    if batch_size is not None:
        if "samples" in df.columns:
            df["samples"] = df["samples"].fillna(float(batch_size))
        else:
            df["samples"] = float(batch_size)
    names = {role: m.column for role, m in pick.items()}
    part = Part(src, raw, df, derive, rank_from_name(src.rank_hint), names)
    part.drop(nonnum, f"non-numeric value in {name_list(bad_cols, 3, quote=False)}")
    raw.frame = frame.iloc[:0].copy()  # the values live on in part.df; free the parsed copy
    # (.copy(): a zero-row view would keep the parsed columns' buffers alive)
    return part


CHUNK = 1 << 20
"""Rows per chunk of the element-wise row checks (their temporaries stay ~8 MiB)."""


def _integral(v: np.ndarray, nonneg: bool = False) -> np.ndarray:
    """True where ``v`` is a finite whole number (and ``>= 0`` with ``nonneg``); computed in
    chunks of :data:`CHUNK` so that ``np.floor``'s float temporary stays small."""
    ok = np.empty(len(v), dtype=bool)
    for i in range(0, len(v), CHUNK):
        x = v[i : i + CHUNK]
        o = np.isfinite(x) & (x == np.floor(x))
        if nonneg:
            o &= x >= 0
        ok[i : i + CHUNK] = o
    return ok


def assign_ranks(parts: list[Part]) -> None:
    """Give every row of every part a ``rank`` column (float64 until :func:`finish`).

    Raises:
        InputError: several files and one of them has no rank anywhere; two files claim the same
            rank.
    """
    for p in parts:
        cols = p.df.columns
        if "rank" in cols:
            p.how = "rank column"
        elif "local_rank" in cols and "node" in cols:
            p.how = "local_rank and node columns"
        elif p.file_rank is not None:
            p.how = "file name"
        elif "local_rank" in cols:
            p.how = "local_rank column"
        elif "node" in cols:
            p.how = "node column"
    missing = [p for p in parts if not p.how]
    if missing and len(parts) == 1:
        missing[0].how = "single file"
    elif missing:
        names = ", ".join(p.src.name for p in missing[:3]) + (", …" if len(missing) > 3 else "")
        raise InputError(
            f"cannot tell which rank wrote {names}: with {len(parts)} files each needs a 'rank' "
            "column, local_rank and node columns, or a rank number in its name, e.g. "
            "rank0.csv, rank_1.log, worker-2.jsonl, proc3.csv, gpu4.csv"
        )
    by_node = [p for p in parts if p.how == "local_rank and node columns"]
    order = _node_order(by_node)
    world = 1
    if by_node:
        lr = np.concatenate([p.df["local_rank"].to_numpy() for p in by_node])
        lr = lr[_integral(lr, nonneg=True)]
        world = int(lr.max()) + 1 if len(lr) else 1
    node_only = _node_order([p for p in parts if p.how == "node column"])
    for p in parts:
        if p.how == "rank column":
            r = p.df["rank"].to_numpy(dtype=np.float64)
        elif p.how == "local_rank and node columns":
            idx = p.df["node"].map(order).to_numpy(dtype=np.float64, na_value=np.nan)
            lr = p.df["local_rank"].to_numpy(dtype=np.float64)
            lr = np.where(_integral(lr, nonneg=True) & (lr < world), lr, np.nan)
            r = idx * world + lr
        elif p.how == "file name":
            r = np.full(len(p.df), float(p.file_rank))
        elif p.how == "local_rank column":
            r = p.df["local_rank"].to_numpy(dtype=np.float64)
        elif p.how == "node column":
            r = p.df["node"].map(node_only).to_numpy(dtype=np.float64, na_value=np.nan)
        else:
            r = np.zeros(len(p.df))
        if p.how != "rank column":  # the rank column is float64 already: not copied
            p.df["rank"] = r
        p.drop(r >= RANK_LIMIT, RANK_RANGE)  # also +inf: an integer beyond float range
        p.drop(~_integral(p.df["rank"].to_numpy(), nonneg=True), BAD_RANK)
    owner: dict[int, Part] = {}
    for p in parts:
        for r in _distinct(p.df["rank"].to_numpy()):
            other = owner.setdefault(int(r), p)
            if other is not p:
                raise InputError(
                    f"rank {int(r)} appears in both {other.src.name} (from its {other.how}) and "
                    f"{p.src.name} (from its {p.how}): each rank's steps must come from one "
                    "file; merge the files or fix the rank columns / file names"
                    + (
                        " (add a node or host column so that local ranks of different nodes differ)"
                        if p.how == "local_rank column"
                        else ""
                    )
                )


def _distinct(v: np.ndarray) -> np.ndarray:
    """``pd.unique(v)`` (first-appearance order), hashing only the first value of each run of
    equal values: a file's rows usually come rank by rank."""
    if len(v) < 2:
        return pd.unique(v)
    starts = np.empty(len(v), dtype=bool)
    starts[0] = True
    np.not_equal(v[1:], v[:-1], out=starts[1:])
    return pd.unique(v[starts])


def _node_order(parts: list[Part]) -> dict[str, int]:
    """Node name → index in natural order over all the parts' node names."""
    if not parts:
        return {}
    nodes = pd.unique(pd.concat([p.df["node"].dropna() for p in parts]))
    return {n: i for i, n in enumerate(sorted(map(str, nodes), key=natural_key))}


from xpuperf.readers.finish import finish, warnings_of  # noqa: E402  (the last stage, re-exported)

__all__ = ["Part", "assign_ranks", "finish", "prepare", "warnings_of"]
