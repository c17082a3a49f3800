"""tqdm training progress bars: PyTorch Lightning, HF Trainer / accelerate loops, ultralytics YOLO.

A log whose only timing is a progress bar (shapes: :mod:`~xpuperf.readers.formats.tqdm_bars`)::

    Epoch 2:  40%|████      | 240/600 [01:36<02:24,  2.50it/s, v_num=3, train_loss=0.412]

Which bar is the training bar: bars whose description names validation, evaluation, testing,
prediction or a sanity check (Lightning ``Validation DataLoader 0``, ``Validating``,
``Sanity Checking``; ultralytics ``Class  Images  Instances … mAP50``) are not steps; nor are
bars of data preparation or I/O (``Map``, ``Loading checkpoint shards``, ``Writing model
shards``, ``Downloading`` …) or bars counting other units than steps (``examples/s``, ``B/s``:
the units read are ``it``, ``step``, ``batch``, ``iter``, ``iteration``, ``update``). Among the
others (HF Trainer's bar and its evaluation bar both have no description) the bar whose rows
cover the most time is the training bar, per process.

Columns (one row per window of updates, one process = one rank):

- ``step_time_s`` = Δelapsed / Δn between two updates at least :data:`WINDOW` clock resolutions
  apart (20 s for tqdm's ``[mm:ss]`` clock, which truncates to whole seconds: each row is within
  ±1 s / 20 s = ±5 % and the rows add up to the bar's own elapsed time). The last stretch of a
  bar shorter than a window joins the window before it; a bar stretch shorter than a window
  altogether is one row if it spans 5 resolutions, else takes tqdm's displayed rate (an
  exponential moving average of recent updates) at its end. A window does not span another
  bar's updates (an evaluation between two training updates): it restarts after them, so a
  step time excludes evaluation (the steps across it are not timed).
- ``step`` counts the timed bar steps, from the first counter value seen (HF Trainer: the
  global step); across restarts (Lightning's per-epoch bars) it continues.
- ``rank`` = the launcher prefix (``[rank1]:``, ``1: ``) when the bars carry one; else rank 0.
- ``samples`` only when the HF Trainer banner (``Instantaneous batch size per device = 8``,
  ``Gradient Accumulation steps = 4``, ``Total optimization steps = 600``) matches the bar's
  total: per-device batch × accumulation per bar step (one optimizer step).

One bar step is one tick of the bar: a batch for Lightning, ultralytics and most accelerate
loops, an optimizer step for the HF Trainer. The bar is printed by one process (Lightning,
Trainer and ultralytics print on rank 0 only), so the rows are one rank's view of the job: pass
``--batch-size`` and ``--world-size`` (or keep the launch line in the log) for throughput.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from xpuperf.errors import InputError
from xpuperf.readers.base import Source, short
from xpuperf.readers.formats import console
from xpuperf.readers.formats.console import no_ansi
from xpuperf.readers.formats.table import Rows, TextTable
from xpuperf.readers.formats.tqdm_bars import (
    RATE,
    SHORT,
    WHOLE,
    WINDOW,
    WINDOWED,
    Bar,
    Point,
    Update,
    looks_cut,
    parse,
    pieces,
)

NAME = "tqdm"
EXAMPLE = "Epoch 2:  40%|████      | 240/600 [01:36<02:24,  2.50it/s, v_num=3, train_loss=0.412]"
BAR_NOTE = "tqdm bar "
"""Start of the first note of every table this reader returns (``read_logs`` looks for it)."""
SNIFF_RAW = True
"""The sniff gets the lines with their bars (the cleaned lines drop a bar that starts a line)."""
STEP_UNITS = frozenset(
    ("it", "its", "step", "steps", "batch", "batches", "iter", "iters", "iteration", "iterations",
     "update", "updates")
)  # fmt: skip
_EVAL = re.compile(
    r"(?i)valid|\bval\b|\beval|evaluat|\btest|predict|sanity|inference"
    r"|(?-i:\bmAP|\bClass\s+Images)"
)
_OTHER = re.compile(
    r"(?i)\b(?:map|filter|load|download|fetch|resolv|tokeni|generat|writ|sav|upload|extract"
    r"|comput|pre-?process|shuffl|concat|convert|creat|build|cach|read|scann)"
)
_NUMS = re.compile(r"\d+(?:\.\d+)?(?:e[+-]?\d+)?|nan|inf", re.I)
_BANNER = re.compile(
    r"(Instantaneous batch size per device|Gradient Accumulation steps|Total optimization steps"
    r"|Total train batch size)[^=]*=\s*([\d,]+)\s*$"
)
_MEMBER = re.compile(r"GLOBAL_RANK: \d+, MEMBER: \d+/(\d+)")


def kind(desc: str, unit: str) -> str:
    """``"eval"``, ``"other"`` (not training) or ``"train"`` for a bar's description and unit."""
    if _EVAL.search(desc):
        return "eval"
    if unit.lower() not in STEP_UNITS or _OTHER.search(desc):
        return "other"
    return "train"


def sniff(lines: list[str]) -> bool:
    """A tqdm bar counting steps (``it``, ``step``, ``batch`` …) that is not an evaluation or
    data-preparation bar (the lines come with their bars: :data:`SNIFF_RAW`)."""
    return any(
        any(kind(console.clean(u.desc)[1], u.unit) == "train" for u in parse(no_ansi(x)))
        for x in lines
        if "[" in x or "━" in x or "─" in x
    )


def eval_only(lines: list[str]) -> str:
    """``"only a validation/evaluation bar ('Validating'), no training bar"`` when the lines
    (as :func:`sniff` gets them) hold step bars that are all evaluation bars, else ``""`` (for
    the error on a file no reader recognised)."""
    kinds = {
        kind(console.clean(u.desc)[1], u.unit): console.clean(u.desc)[1]
        for x in lines
        if "[" in x or "━" in x or "─" in x
        for u in parse(no_ansi(x))
    }
    if "eval" not in kinds or "train" in kinds:
        return ""
    return f"only a validation/evaluation bar ({short(kinds['eval'], 40)!r}), no training bar"


@dataclass
class _Stream:
    """The bars of one process (a launcher tag, or none)."""

    bars: dict[str, Bar] = field(default_factory=dict)
    last_key: str | None = None


@dataclass
class _Seen:
    """What the log said besides the training bars (for the notes)."""

    evals: dict[str, int] = field(default_factory=dict)
    others: dict[str, int] = field(default_factory=dict)
    banner: dict[str, int] = field(default_factory=dict)
    member: int | None = None
    scaled: bool = False


def _shape(u: Update, cache: dict) -> tuple[int | None, str, str]:
    """(launcher tag in the description, the bar's key, its :func:`kind`), cached per shape."""
    got = cache.get((u.desc, u.unit, u.total))
    if got is None:
        own, desc = console.clean(u.desc)
        key = " ".join(_NUMS.sub("#", desc).split())
        if not key:
            key = f"(no description, total {u.total:g})" if u.total else "(no description)"
        got = (own, key, kind(desc, u.unit))
        if len(cache) > 4096:  # descriptions carrying losses (ultralytics) never repeat
            cache.clear()
        cache[(u.desc, u.unit, u.total)] = got
    return got


def read(src: Source) -> TextTable:
    """Parse the training bars of a log (see the module docstring).

    Raises:
        InputError: no training bar (only evaluation or data bars, or none at all).
    """
    return read_bars(src)[0]


def read_bars(src: Source) -> tuple[TextTable, int]:
    """:func:`read` and how many of its rows are timed by the bar's clock (the others take
    tqdm's displayed rate: a bar that ran under :data:`SHORT` clock ticks). Raises as
    :func:`read`."""
    rows = Rows()
    bad: list[int] = []
    streams: dict[int | None, _Stream] = {}
    seen = _Seen()
    shapes: dict[tuple[str, str, float | None], tuple[int | None, str, str]] = {}
    for n, tag, text in pieces(src, bad):
        ups = parse(text) if ("[" in text or "━" in text or "─" in text) else []
        if not ups:
            if looks_cut(text):
                rows.drop("a tqdm bar that does not parse (cut line?)", n)
            else:
                _note_line(console.clean(text)[1], seen)
            continue
        for u in ups:
            own, key, k = _shape(u, shapes)
            st = streams.setdefault(tag if tag is not None else own, _Stream())
            interlude = st.last_key is not None and st.last_key != key
            st.last_key = key
            if k != "train":
                got = seen.evals if k == "eval" else seen.others
                got[key] = got.get(key, 0) + 1
                continue
            seen.scaled |= u.scaled
            bar = st.bars.setdefault(key, Bar(key))
            p = Point(round(u.n), u.elapsed_s, u.res_s, u.rate_s, n, u.total)
            if not bar.update(p, interlude):
                rows.drop("bar update going backwards (another process's bar in this stream?)", n)
    rows.undecodable(bad)
    chosen = _choose(streams, rows)
    if not chosen:
        raise _no_training_bar(src, seen, rows, [k for st in streams.values() for k in st.bars])
    samples = _samples(seen, chosen)
    tagged = any(t is not None for t, _ in chosen)
    for tag, bar in chosen:
        for line, step, st, _how in bar.rows:
            extra = {"rank": float(tag)} if tagged and tag is not None else {}
            if samples:
                extra["samples"] = samples
            rows.add(line, step=step, step_time_s=st, **extra)
    out = rows.table(src, "tqdm training bar", EXAMPLE)
    out.notes.extend(_notes(seen, chosen, streams, samples))
    out.clock_resolution = _resolution(chosen)
    return out, sum(how != RATE for _, bar in chosen for *_, how in bar.rows)


def _resolution(chosen: list[tuple[int | None, Bar]]) -> tuple[float, str]:
    """(±fraction per row, what): 1 / :data:`WINDOW` for windows of the clock, 1 / :data:`SHORT`
    when a row is a shorter stretch or tqdm's rate (the analysis then does not judge jitter)."""
    hows = {how for _, bar in chosen for *_, how in bar.rows}
    res = max((bar.res for _, bar in chosen), default=1.0)
    frac = 1 / WINDOW if hows <= {WINDOWED} else 1 / SHORT
    return frac, f"the bar's clock has {res:g} s resolution"


def _note_line(text: str, seen: _Seen) -> None:
    if "=" in text and (m := _BANNER.search(text)):
        seen.banner.setdefault(m.group(1), int(m.group(2).replace(",", "")))
    elif "MEMBER: " in text and (m := _MEMBER.search(text)):
        seen.member = int(m.group(1))


def _choose(streams: dict[int | None, _Stream], rows: Rows) -> list[tuple[int | None, Bar]]:
    """The training bar of each process: the one whose rows cover the most time."""
    out = []
    for tag, st in streams.items():
        for bar in st.bars.values():
            bar.flush()
        best = max(st.bars.values(), key=lambda b: (b.timed_s, len(b.rows)), default=None)
        if best is not None and best.rows:
            out.append((tag, best))
    if any(t is not None for t, _ in out) and any(t is None for t, _ in out):
        for tag, bar in out:
            if tag is None:  # bars without the launcher prefix the other bars carry
                rows.drop("bar without the launcher rank prefix the other bars carry",
                          bar.rows[0][0])  # fmt: skip
        out = [(t, b) for t, b in out if t is not None]
    return sorted(out, key=lambda tb: -1 if tb[0] is None else tb[0])


def _samples(seen: _Seen, chosen: list[tuple[int | None, Bar]]) -> float:
    """Samples per bar step and card from the HF Trainer banner, when it matches the bar."""
    b = seen.banner
    per, acc = b.get("Instantaneous batch size per device"), b.get("Gradient Accumulation steps")
    total = b.get("Total optimization steps")
    if not per or not acc or total is None:
        return 0.0
    ok = all(bar.name == f"(no description, total {total:g})" for _, bar in chosen)
    return float(per * acc) if ok else 0.0


def _notes(seen: _Seen, chosen: list[tuple[int | None, Bar]], streams: dict, samples: float
           ) -> list[str]:  # fmt: skip
    hows = [how for _, bar in chosen for *_, how in bar.rows]
    names = sorted({bar.name for _, bar in chosen})
    out = [
        f"{BAR_NOTE}{short(', '.join(names), 80)!r}: step time = elapsed / steps over windows of "
        f"at least {WINDOW} clock ticks ({WINDOW} s for [mm:ss]: the clock truncates to whole "
        "seconds, so a row is within ±5 %); tqdm's it/s (a moving average) only for stretches "
        f"under {SHORT} ticks; step-to-step jitter inside a window is not visible"
    ]
    if samples:
        b = seen.banner
        per, acc = b["Instantaneous batch size per device"], b["Gradient Accumulation steps"]
        world = b.get("Total train batch size", 0) / (per * acc)
        n = (
            f"; its total train batch {b['Total train batch size']} = {world:g} processes: "
            f"pass --world-size {world:g}"
            if world >= 1 and world == int(world)
            else ""
        )
        out.append(
            f"HF Trainer banner: samples per bar step (an optimizer step) per card = per-device "
            f"batch {per} × gradient accumulation {acc} = {samples:g}{n}"
        )
    else:
        out.append(
            "a tqdm bar is printed by one process (rank 0 for Lightning, the HF Trainer and "
            "ultralytics) and holds no batch size: read as that rank without samples; pass "
            "--batch-size (samples per card per bar step) and --world-size N (or keep the launch "
            "line in the log) for throughput"
        )
    if seen.member and seen.member > 1:
        out.append(
            f"Lightning's 'GLOBAL_RANK: r, MEMBER: r+1/{seen.member}' says the job had "
            f"{seen.member} processes: pass --world-size {seen.member}"
        )
    if seen.evals:
        shown = ", ".join(f"{short(k, 40)!r}" for k in list(seen.evals)[:3])
        out.append(
            f"{sum(seen.evals.values())} validation/evaluation bar update(s) ({shown}) are not "
            "training steps"
        )
    untimed = sum(bar.untimed for _, bar in chosen)
    if untimed:
        out.append(
            f"{untimed:g} bar step(s) across other bars (an evaluation between two training "
            "updates) are not timed: the row after each such gap counts them at its own step "
            "time (Lightning < 2.0 counts validation batches in its epoch bar: validation inside "
            "an epoch adds them as steps)"
        )
    others = {k: v for st in streams.values() for k, v in _other_bars(st, chosen).items()}
    others.update(seen.others)
    if others:
        shown = ", ".join(f"{short(k, 40)!r}" for k in list(others)[:3])
        out.append(f"{len(others)} other bar(s) not read as training steps: {shown}")
    if hows.count(RATE):
        out.append(
            f"{hows.count(RATE)} row(s) from tqdm's displayed rate: their bar stretch ran under "
            f"{SHORT} clock ticks (the rate is a moving average of the last updates)"
        )
    if hows.count(WHOLE):
        out.append(
            f"{hows.count(WHOLE)} bar(s) seen only at their end (100%): timed from the bar's "
            "start (0 at 00:00), one row each"
        )
    if seen.scaled:
        out.append("counters printed with unit_scale (1.23k): step numbers are rounded values")
    return out


def _other_bars(st: _Stream, chosen: list[tuple[int | None, Bar]]) -> dict[str, int]:
    picked = {id(b) for _, b in chosen}
    return {k: len(b.rows) for k, b in st.bars.items() if id(b) not in picked and b.rows}


def _no_training_bar(src: Source, seen: _Seen, rows: Rows, bars: list[str]) -> InputError:
    if bars:
        what = (
            f"; its training bar ({short(', '.join(bars), 80)}) never moved between two displays "
            "(a step time needs two displays of the bar, or a finished bar's last one)"
        )
    elif seen.evals and not seen.others:
        what = (
            f": only a validation/evaluation bar ({short(', '.join(seen.evals), 120)}), no "
            "training bar"
        )
    elif found := list(seen.evals) + list(seen.others):
        what = f"; its bars are validation or data bars only ({short(', '.join(found), 120)})"
    else:
        what = ""
    first = min((d.first for d in rows.drops.values() if d.first), default=None)
    return InputError(
        f"no tqdm training bar could be read{what}; expected lines like: {EXAMPLE}",
        src.name,
        first,
    )
