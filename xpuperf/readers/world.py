"""``--world-size N``: job-level logs (one line per step for the whole job) as N ranks.

Megatron-LM, Keras, single-process tf_cnn_benchmarks, MLPerf and ``trainer_state.json`` print one
line per step for the whole job, with GLOBAL samples (global batch, job samples/s). Read alone,
such a log is one rank whose throughput is the job's, so "per card" would be the job throughput.
Given the number of data-parallel ranks N, :func:`spread` turns the one rank into N ranks
0…N−1 that each carry the job's step times and ``samples / N`` (the per-card share), so the job
throughput (Σ samples over ranks / step time) is unchanged and the per-card throughput is
job / N. The N ranks are copies: the log cannot tell them apart, so no straggler can be found.
Memory: N × the rows of the log (compact dtypes; 1000 ranks × 100 000 steps ≈ 4 GB).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from xpuperf.errors import InputError
from xpuperf.readers.formats.table import JOB_LEVEL

MAX_WORLD = 1_000_000
"""Largest accepted --world-size (the topology model's limit too)."""


def check(world_size: object) -> int | None:
    """``world_size`` as an int ≥ 1, or None.

    Raises:
        InputError: not an integer in 1…MAX_WORLD.
    """
    if world_size is None:
        return None
    try:
        n = int(world_size)  # type: ignore[call-overload]
        ok = n == float(world_size) and 1 <= n <= MAX_WORLD  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):
        ok = False
    if not ok:
        raise InputError(
            f"world size must be a whole number of ranks in 1…{MAX_WORLD:,}, got {world_size!r}"
        )
    return n


def is_job_level(notes: list[str]) -> bool:
    """Whether a parsed log said its lines describe the whole job."""
    return any(n.startswith(JOB_LEVEL) for n in notes)


def job_level(
    part: object, df: pd.DataFrame, notes: list[str], given: int | None
) -> tuple[pd.DataFrame, list[str], int | None]:
    """A single job-level log (``part``: a ``build.Part``) spread over its world size: ``given``
    (``--world-size``), else what the log states (its reader's ``world_size``, else a launch
    line, :func:`from_launch`). Returns the table, the notes (the job-level note replaced by
    :func:`note` once spread) and N (None when not spread)."""
    raw = part.raw  # type: ignore[attr-defined]
    clash = ""
    if given is None:
        launch = from_launch(part.src)  # type: ignore[attr-defined]  # `mpirun -np 16` echoed
        stated = getattr(raw, "world_size", None)
        if launch is not None and not stated and hasattr(raw, "world_size"):
            raw.world_size, raw.world_source = launch
        elif launch is not None and stated and launch[0] != stated:
            clash = (
                f"the log states a world size of {stated:,} in its "
                f"{getattr(raw, 'world_source', '') or 'lines'} but its {launch[1]} starts "
                f"{launch[0]:,} processes; used {stated:,} (the run's own statement): pass "
                "--world-size N if the launch line is the right one"
            )
    n, why = choose(given, raw, len(df))
    notes = [*notes, *(x for x in (why, clash) if x)]
    if n is None:
        return df, notes, None
    df = spread(df, n)
    notes = [x for x in notes if not is_job_level([x])]
    src = getattr(raw, "world_source", "") if given is None else ""
    notes.append(note(n, "samples" in df.columns, src))
    return df, notes, n


def one_rank(
    part: object, table: pd.DataFrame, given: int | None
) -> tuple[pd.DataFrame, str, int | None]:
    """A per-rank log holding ONE rank's lines of an N-card job (torchrun
    ``--local-ranks-filter 0``, torchtitan's default; one rank's file alone): with N from
    ``given`` or a launch line, the rank stands for all N — copied with its own samples and
    tokens (per card), so job throughput = N × this rank's. Returns the table, the note ("" when
    nothing changed) and N."""
    n = given
    where = f"--world-size {given}"
    if n is None:
        launch = from_launch(part.src)  # type: ignore[attr-defined]
        if launch is None:
            return table, "", None
        n, where = launch[0], f"the log's {launch[1]}"
    if n <= 1 or n > MAX_WORLD or n * len(table) > MAX_SPREAD_ROWS:
        return table, "", None
    out = spread(table, n, per_card=False)
    return (
        out,
        (
            f"the log holds one rank's lines of a {n:,}-card job ({where}; e.g. torchrun "
            f"--local-ranks-filter 0): read as that rank's view of all {n:,} — job figures = "
            f"{n:,} × this rank's; the ranks are copies, so stragglers cannot be seen"
        ),
        n,
    )


def spread(df: pd.DataFrame, n: int, per_card: bool = True) -> pd.DataFrame:
    """Rank-0 rows → ``n`` ranks; job-level rows (``per_card``) give each rank its share of the
    job's ``samples`` and ``tokens`` (see the module docstring), one rank's own rows are copied
    as they are."""
    m = len(df)
    out = {}
    for col in df.columns:
        v = df[col].to_numpy()
        out[col] = np.tile(v, n) if col != "rank" else np.repeat(np.arange(n, dtype=v.dtype), m)
    res = pd.DataFrame(out)
    for col in ("samples", "tokens") if per_card else ():  # job counts → per-card shares
        if col in res.columns:
            res[col] = res[col].to_numpy(dtype=np.float64) / n
    return res


MAX_SPREAD_ROWS = 50_000_000
"""Largest step table a world size READ FROM THE LOG is spread into (ranks × rows; ≈ 2 GB); a
``--world-size`` the user gives is always applied."""


HEAD_BYTES = 1 << 20
"""How much of a job-level log's start is searched for a launch line (:func:`from_launch`)."""


def from_launch(src: object) -> tuple[int, str] | None:
    """The world size a launch line near the start of the log states (``mpirun -np 16``,
    ``horovodrun -np``, ``torchrun --nproc_per_node=8 --nnodes=2``, ``deepspeed --num_gpus``,
    ``WORLD_SIZE=``; :func:`xpuperf.readers.launch.world_from_lines`), or None. Reads at most
    :data:`HEAD_BYTES` of ``src`` (a :class:`~xpuperf.readers.base.Source`); never raises on
    content or I/O."""
    from xpuperf.readers.launch import world_from_lines

    try:
        with src.open() as fh:  # type: ignore[attr-defined]
            head = fh.read(HEAD_BYTES)
    except (OSError, EOFError, ValueError):
        return None
    lines = head.decode("utf-8", "replace").splitlines()[:2000]
    return world_from_lines(lines)


def choose(given: int | None, raw: object, rows: int) -> tuple[int | None, str]:
    """The world size to spread a job-level log over, and a note ("" when none is needed).

    ``given`` (``--world-size``) wins; a different world size stated in the log is then named in
    the note. Without it the log's own (``raw.world_size``, e.g. Megatron ``using world size``,
    Primus ``[rank-R/N]``) is used unless ``rows ×`` it exceeds :data:`MAX_SPREAD_ROWS`.
    """
    stated = getattr(raw, "world_size", None)
    where = getattr(raw, "world_source", "") or "the log"
    if given is not None:
        if stated and stated != given:
            return given, (
                f"--world-size {given} given, but the log states {stated} ({where}); used "
                f"{given} as given"
            )
        return given, ""
    if not stated or stated < 1:
        return None, ""
    if stated > MAX_WORLD:
        return None, (
            f"the log states a world size of {stated:,} ({where}), more than {MAX_WORLD:,} "
            "ranks: ignored, read as one rank (pass --world-size N if the log is one card's)"
        )
    if stated * rows > MAX_SPREAD_ROWS:
        return None, (
            f"the log states a world size of {stated:,} ({where}), but {rows:,} steps × "
            f"{stated:,} ranks would exceed {MAX_SPREAD_ROWS:,} rows: read as one rank "
            f"(per-card figures = job figures); divide by {stated:,}, or keep fewer steps and "
            f"pass --world-size {stated}"
        )
    return int(stated), ""


def note(n: int, had_samples: bool, source: str = "") -> str:
    """The warning that replaces the job-level note once ``spread`` ran (``source``: where the
    log stated ``n`` when it was read from the log, "" for ``--world-size``)."""
    share = (
        f"samples per step = the log's global samples / {n}"
        if had_samples
        else "no samples in the log: pass --batch-size for throughput"
    )
    how = f"world size read from the log's {source}; --world-size overrides" if source else (
        f"--world-size {n}")  # fmt: skip
    return (
        f"job-level log read as {n:,} cards ({how}): {share}; per-card figures "
        f"= job / {n:,}; the ranks are copies of the one step line, so stragglers cannot be seen"
    )


def not_job_level(ranks: int, n: int) -> str | None:
    """Warning when per-rank logs disagree with ``--world-size``; None when they agree."""
    if ranks == n:
        return None
    return (
        f"--world-size {n} given, but the logs hold {ranks:,} ranks of their own; kept the "
        "ranks of the logs (--world-size applies to job-level logs only)"
    )
