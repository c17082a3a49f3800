"""fairseq (0.6, 2018 – 0.12, 2022) and metaseq (2022–) training logs: the ``train_inner`` lines.

Step lines, printed by the master process only, one per ``--log-interval`` updates::

    2021-03-04 12:00:56 | INFO | train_inner | epoch 001:    200 / 450 loss=8.201, …, wps=155301.5,
        ups=2.94, wpb=52823.6, bsz=1751.2, num_updates=200, lr=2.5e-05, …, train_wall=33, wall=135
    [2021-03-24 14:06:37,456][train_inner][INFO] - {"epoch": 1, "update": 0.513, …, "wps": "6874.2",
        "ups": "1.1", "wpb": "6251.8", "bsz": "78.1", "num_updates": "400", …, "wall": "397"}
    epoch 001:  13%|█   | 60/450 [00:20<03:00,  2.44it/s, loss=9.700, …, ups=2.4, …,
        num_updates=50, …]
    | epoch 001:    200 / 612 loss=13.597, …, wps=17272, ups=1, wpb=82946.934, bsz=4023.030,
        num_updates=198, …, oom=0.000, loss_scale=32.000, wall=951, train_wall=182

(``--log-format simple`` through Python logging since 2020-01, ``--log-format json`` — metaseq's
default — also under ``fairseq-hydra-train``'s ``[time][name][INFO] -`` prefix, the tqdm bar of
a terminal, and the ``print`` lines of fairseq ≤ 0.9). Launcher prefixes (``0: ``, ``[rank0]:``,
metaseq's ``slurm_procid 0 : ``) are ignored.

Meaning (fairseq ``train.py`` / ``trainer.py`` / ``tasks/fairseq_task.py``): the counters are
summed over all workers before they are logged, so ``wpb`` (target tokens per update), ``bsz``
(sentences per update) and ``wps`` (tokens per second) are the WHOLE job's; one update is
``--update-freq`` micro-batches. Since 2020-03 the ``train_inner`` meters are reset at every log:
``ups`` (two decimals) is the interval's updates per wall-clock second, ``train_wall`` the
interval's seconds inside ``train_step``, ``wall`` the seconds since the start (whole seconds).
Earlier lines (fairseq ≤ 0.9 ``| epoch`` print lines, where ``wall`` comes before ``train_wall``;
early-2020 lines tagged ``train``) print running averages (``ups`` rounded to a whole number).

Columns (one row per line, read as one rank; each row is the mean of its interval):

- ``step`` = ``num_updates``;
- ``step_time_s`` = 1 / ``ups``; from ``wall`` instead — Δwall / Δnum_updates since the line
  before — for running-average lines (since the last line at least :data:`MIN_SPAN_S` earlier),
  for ``ups`` below 0.1 (two decimals: ±5 % or worse), and when ``ups`` disagrees with the
  wall clock by more than ×1.5 over the log (fairseq on TPUs counts one update per log interval);
- ``samples`` = ``bsz``, ``tokens`` = ``wpb`` (GLOBAL, per update);
- ``t_end_s`` = the line's timestamp when it has one.

``world_size`` = N of ``training on N devices (GPUs/TPUs)`` / ``training on N GPUs``, else of
``distributed_world_size`` in the printed arguments, else the number of ranks that printed
``distributed init (rank R)`` / ``initialized host H as rank R`` (this log's processes only).
End-of-epoch ``train`` summaries and ``valid`` lines are not steps: a note counts them. A line
repeating an update already read (a resumed run restarts at its checkpoint) is skipped; one
line below the last update followed by a line above it (a cut digit) is a dropped row instead.
Dropped rows, counted by reason: a ``train_inner`` line without ``num_updates`` or without both
``ups`` and ``wall`` (cut), ``ups`` infinite or negative, ``bsz`` / ``wpb`` not in
(0, :data:`MAX_BSZ`] / (0, :data:`MAX_WPB`].
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

import numpy as np

from xpuperf.errors import InputError
from xpuperf.readers.base import Source
from xpuperf.readers.formats import console
from xpuperf.readers.formats.table import NAN, Rows, TextTable, as_float, finite, job_level_note

NAME = "fairseq"
EXAMPLE = (
    "2021-03-04 12:00:56 | INFO | train_inner | epoch 001:    200 / 450 loss=8.201, ppl=237.37, "
    "wps=155301.5, ups=2.94, wpb=52823.6, bsz=1751.2, num_updates=200, lr=2.5e-05, gnorm=1.21, "
    "train_wall=33, wall=135"
)
_KV = re.compile(r"(?<![\w.])([A-Za-z_]\w*)=([^,\s\]]+)")
_TAG = re.compile(r"\| [A-Z]+ \| ([\w.]+) \| |\]\[([\w.]+)\]\[[A-Z]+\] - ")
_SUMMARY = re.compile(r"\bepoch \d+ \| ")
_TRAINING_ON = re.compile(r"\btraining on (\d+) (?:devices|GPUs?|TPUs?)\b")
_DWS = re.compile(r"\bdistributed_world_size['\"]?\s*[=:]\s*(\d+)")
_INIT = re.compile(r"\bdistributed init \(rank (\d+)\)|\binitialized host \S+ as rank (\d+)")
_CLI = re.compile(r"\b(?:fairseq|metaseq)_cli\.(?:hydra_)?train\b")
_INNER = re.compile(r"\| train_inner \| |\]\[train_inner\]\[|^\| epoch \d+:\s+\d+ / \d+ \w+=")
MAX_BSZ = 1e9
"""``bsz`` (sentences per update, whole job) above this is not a batch: the row is dropped."""
MAX_WPB = 1e12
"""``wpb`` (tokens per update, whole job) above this is not a batch: the row is dropped."""
COARSE_UPS = 0.1
"""Below this, ``ups`` printed with two decimals is ±5 % or worse: the wall clock is used."""
MIN_SPAN_S = 10.0
"""Running-average lines: a row needs ``wall`` to have advanced this much (whole seconds)."""
MISREPORT = 1.5
"""``ups`` off the wall clock by more than this factor (median over the log) is not used."""
CUT = "fairseq step line that does not parse (cut line?)"
NO_UPDATES = "fairseq train_inner line without num_updates (cut?)"
NO_CLOCK = "fairseq train_inner line without ups= or wall= (cut?)"
BAD_UPS = "fairseq line whose ups is not a finite positive number"
BAD_BATCH = (
    f"fairseq line whose bsz or wpb is not a number in (0, {MAX_BSZ:.0e}] sentences / "
    f"(0, {MAX_WPB:.0e}] tokens per update"
)
OUT_OF_ORDER = (
    "fairseq line whose num_updates goes back on this one line only (the lines around it go on: "
    "a cut or garbled number?)"
)
NO_RATE = (
    "fairseq line without a usable ups (ups=0: the first logged update of a run has no rate "
    "yet) and no earlier line's wall= to difference"
)
NO_WALL = (
    "fairseq line whose step time needs the wall= of an earlier line (running averages of "
    "fairseq <= 0.9, or ups not used): the first line of a run, or wall= missing or not increasing"
)


def sniff(lines: list[str]) -> bool:
    """A ``num_updates=…`` / ``"num_updates": …`` line with ``ups`` or ``wall``, or a
    ``fairseq_cli.train`` / ``metaseq_cli.train`` logger line (the start-up of a run whose first
    step lies beyond the sniffed head: the model printout can be long)."""
    for x in lines:
        if "num_updates" in x:
            if "num_updates=" in x and ("ups=" in x or "wall=" in x):
                return True
            if '"num_updates": ' in x and ('"ups": ' in x or '"wall": ' in x):
                return True
        elif "_cli." in x and _CLI.search(x):
            return True
    return False


@dataclass
class _Seen:
    """What the line loop collected (one list entry per kept step line)."""

    lines: list[int] = field(default_factory=list)
    updates: list[float] = field(default_factory=list)
    ups: list[float] = field(default_factory=list)
    wall: list[float] = field(default_factory=list)
    running: list[bool] = field(default_factory=list)
    cells: list[dict[str, float]] = field(default_factory=list)
    back: int = 0
    pending: int | None = None
    """Line number of a num_updates below the last one read, not yet known as restart or slip."""
    restarting: bool = False
    summaries: dict[str, int] = field(default_factory=lambda: {"train": 0, "valid": 0})


def read(src: Source) -> TextTable:
    """Parse fairseq / metaseq ``train_inner`` lines (see the module docstring).

    Raises:
        InputError: no step line could be read (names the summaries seen, if any).
    """
    rows = Rows()
    bad: list[int] = []
    seen = _Seen()
    world: tuple[int, str] | None = None
    dws: int | None = None
    inits: set[int] = set()
    for n, _tag, text in console.iter_lines(src, bad):
        if "num_updates" not in text:
            if ("train_inner" in text or "| epoch " in text) and _INNER.search(text):
                rows.drop(NO_UPDATES, n)  # cut before num_updates
                continue
            if "training on " in text and world is None and (m := _TRAINING_ON.search(text)):
                world = int(m.group(1)), f"'{m.group(0)}' line"
            elif "distributed_world_size" in text and dws is None and (m := _DWS.search(text)):
                dws = int(m.group(1))
            elif ("distributed init" in text or "initialized host" in text) and (
                m := _INIT.search(text)
            ):
                inits.add(int(m.group(1) or m.group(2)))
            continue
        _line(seen, rows, n, text)
    if seen.pending is not None:  # the last step line went back: a cut last line
        rows.drop(OUT_OF_ORDER, seen.pending)
    rows.undecodable(bad)
    _rows(seen, rows)
    if not len(rows) and any(seen.summaries.values()):
        raise InputError(
            f"no fairseq 'train_inner' line could be read, only {_summaries(seen)} (end-of-epoch "
            "averages, not steps); log every k updates with --log-interval k and "
            f"--log-format simple or json; expected lines like: {EXAMPLE}",
            src.name,
        )
    out = rows.table(src, "fairseq 'train_inner' line", EXAMPLE)
    for col in ("samples", "tokens"):
        if col in out.frame and out.frame[col].isna().all():
            out.frame = out.frame.drop(columns=col)
    out.notes[:0] = [
        job_level_note(
            "samples = bsz (sentences per update) and tokens = wpb (target tokens per update), "
            "both of all cards"
        )
    ]
    if any(seen.summaries.values()):
        out.notes.append(f"fairseq: {_summaries(seen)} are not steps (not read)")
    if seen.back:
        out.notes.append(
            f"fairseq: {seen.back} line(s) repeat update numbers already read (a resumed run "
            "restarts from its last checkpoint): the first reading is kept"
        )
    if world is None and dws is not None:
        world = dws, "'distributed_world_size' in the printed arguments"
    if world is None and len(inits) > 1:
        world = (
            len(inits),
            (
                f"'distributed init (rank R)' lines of {len(inits)} ranks (this log's processes "
                "only: on several nodes pass --world-size)"
            ),
        )
    if world is not None:
        out.world_size, out.world_source = world
    return out


def _line(seen: _Seen, rows: Rows, n: int, text: str) -> None:
    """Read one line holding ``num_updates``: a step line, a summary, or noise."""
    tm = _TAG.search(text)
    tag = (tm.group(1) or tm.group(2)) if tm else None
    j = text.find('{"')
    if j >= 0:
        try:
            d = json.loads(text[j : text.rindex("}") + 1])
        except ValueError:
            d = None
        if not isinstance(d, dict):
            if '"num_updates": ' in text:
                rows.drop(CUT, n)
            return
        if "num_updates" not in d:  # {"epoch": 1, "train_loss": …} / {"valid_loss": …}
            valid = (tag or "").startswith("valid") or any(str(k).startswith("valid") for k in d)
            summary = any(str(k).endswith("num_updates") for k in d)  # train_/valid_num_updates
            seen.summaries["valid" if valid else "train"] += summary
            return
        keys = [str(k) for k in d]
        vals = {str(k): v for k, v in d.items()}
        head = text[:j]
    elif "num_updates=" in text:
        pairs = _KV.findall(text)
        keys = [k for k, _ in pairs]
        vals = dict(pairs)
        head = text[: max(text.find("epoch "), 0)]
    else:
        if "num_updates " in text and _SUMMARY.search(text):  # '| epoch 001 | loss … | …'
            valid = (tag or "").startswith("valid") or "valid on " in text
            seen.summaries["valid" if valid else "train"] += 1
        return
    if (tag or "").startswith("valid"):
        return
    u = as_float(vals.get("num_updates"))
    if not (finite(u) and u >= 0 and u == int(u)):
        rows.drop(CUT, n)
        return
    ups, wall = as_float(vals.get("ups", NAN)), as_float(vals.get("wall", NAN))
    if _went_back(seen, rows, n, u, ups, wall):
        return
    if "ups" not in vals and "wall" not in vals and (tag == "train_inner" or "loss" in vals):
        rows.drop(NO_CLOCK, n)
        return
    if ups < 0 or ups == np.inf:
        rows.drop(BAD_UPS, n)
        return
    batch = {"samples": vals.get("bsz"), "tokens": vals.get("wpb")}
    cells = {k: as_float(NAN if v is None else v) for k, v in batch.items()}
    if any(
        batch[k] is not None and not (0 < cells[k] <= top)
        for k, top in (("samples", MAX_BSZ), ("tokens", MAX_WPB))
    ):
        rows.drop(BAD_BATCH, n)
        return
    order = {k: i for i, k in enumerate(keys)}
    running = (
        tag == "train"  # early-2020 master: mid-epoch lines were epoch averages
        or (tag is None and text.lstrip().startswith("| epoch"))  # fairseq <= 0.9 print
        or order.get("wall", 1 << 30) < order.get("train_wall", -1)
    )
    seen.lines.append(n)
    seen.updates.append(u)
    seen.ups.append(ups)
    seen.wall.append(wall)
    seen.running.append(running)
    ts = console.timestamp(head) if head else None
    seen.cells.append({**cells, **({"t_end_s": ts} if ts is not None else {})})


def _went_back(seen: _Seen, rows: Rows, n: int, u: float, ups: float, wall: float) -> bool:
    """True when line ``n`` (``num_updates`` = ``u``) repeats or goes below an update read.

    One line below the last update whose next step line goes on above it is a slip (a cut
    digit: ``num_updates=25`` for 250), dropped with :data:`OUT_OF_ORDER`; when the next one
    stays at or below it, a resumed run restarts (counted in ``seen.back``, not rows)."""
    last = seen.updates[-1] if seen.updates else -1.0
    if seen.pending is not None:
        if u > last:  # the lines go on: the pending line was a slip
            rows.drop(OUT_OF_ORDER, seen.pending)
        else:
            seen.back += 1
            seen.restarting = True
        seen.pending = None
    if u > last:
        seen.restarting = False
        return False
    # the same values again: a tqdm bar redrawn, or a line printed twice; else a restart
    same = u == last and _same(ups, seen.ups[-1]) and _same(wall, seen.wall[-1])
    if not same and u < last and not seen.restarting:
        seen.pending = n
    else:
        seen.back += not same
    return True


def _same(a: float, b: float) -> bool:
    return a == b or (not finite(a) and not finite(b))


def _rows(seen: _Seen, rows: Rows) -> None:
    """Step times from the collected lines (see the module docstring); add the rows."""
    u = np.asarray(seen.updates, dtype=np.float64)
    ups = np.asarray(seen.ups, dtype=np.float64)
    wall = np.asarray(seen.wall, dtype=np.float64)
    running = np.asarray(seen.running, dtype=bool)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        by_ups = np.where(ups > 0, 1.0 / ups, NAN)
        by_ups[~np.isfinite(by_ups)] = NAN  # a subnormal ups: no step time
        du, dw = np.diff(u, prepend=NAN), np.diff(wall, prepend=NAN)
        by_wall = np.where((du > 0) & (dw > 0), dw / du, NAN)
        ok = ~running & np.isfinite(by_ups) & np.isfinite(by_wall) & (dw >= 5)
        ratio = float(np.median(by_ups[ok] / by_wall[ok])) if ok.sum() >= 3 else 1.0
    misreport = not (1 / MISREPORT <= ratio <= MISREPORT)
    coarse = n_running = merged = 0
    ref = (NAN, NAN)  # (update, wall) the next running-average row is measured from
    for i, n in enumerate(seen.lines):
        if running[i]:
            n_running += 1
            if not finite(wall[i]) or not finite(ref[1]) or wall[i] < ref[1]:  # first of a run
                ref = (u[i], wall[i])
                rows.drop(NO_WALL, n)
                continue
            if wall[i] - ref[1] < MIN_SPAN_S:  # whole-second wall: merged into the next row
                merged += 1
                continue
            st, why = (wall[i] - ref[1]) / (u[i] - ref[0]), NO_WALL
            ref = (u[i], wall[i])
        elif misreport:
            st, why = by_wall[i], NO_WALL
        elif finite(by_wall[i]) and not (ups[i] >= COARSE_UPS):
            st, why = by_wall[i], NO_RATE
            coarse += finite(by_ups[i])
        else:
            st, why = by_ups[i], NO_RATE
        if not (finite(st) and st > 0):
            rows.drop(why, n)
            continue
        rows.add(n, step=u[i], step_time_s=st, **seen.cells[i])
    if n_running:
        rows.notes.append(
            f"fairseq: {n_running} line(s) print running averages (fairseq <= 0.9 '| epoch' lines "
            "or early-2020 'train' lines): step time = Δwall / Δnum_updates between lines at "
            f"least {MIN_SPAN_S:g} s of wall apart (wall is whole seconds)"
            + (f"; {merged} line(s) closer than that merged into the next" if merged else "")
        )
    if coarse:
        rows.notes.append(
            f"fairseq: {coarse} line(s) print ups below {COARSE_UPS:g} with two decimals (±5 % "
            "or worse): step time = Δwall / Δnum_updates since the line before instead"
        )
    if misreport:
        rows.notes.append(
            f"fairseq: ups is {ratio:.3g} × the wall clock's seconds per update (median over "
            f"{int(ok.sum())} lines; fairseq on TPUs counts one update per log interval when "
            "--log-interval > 1): step time = Δwall / Δnum_updates instead, and wps is not used"
        )


def _summaries(seen: _Seen) -> str:
    s = seen.summaries
    return (
        f"{s['train']} end-of-epoch 'train' summar{'y' if s['train'] == 1 else 'ies'} and "
        f"{s['valid']} 'valid' line(s)"
    )
