"""HuggingFace Trainer ``trainer_state.json`` (saved with every checkpoint, transformers 4.x–5.x).

A JSON object whose ``log_history`` list holds one dict per ``Trainer.log`` call::

    {"global_step": 400, "train_batch_size": 8, "log_history": [
      {"epoch": 0.03, "grad_norm": 1.05, "learning_rate": 4.8e-06, "loss": 0.1677, "step": 25},
      {"epoch": 0.03, "eval_loss": 0.2, "eval_runtime": 92.0, "step": 25},
      …,
      {"epoch": 1.0, "step": 400, "train_runtime": 812.5, "train_samples_per_second": 63.02,
       "train_steps_per_second": 0.492, "total_flos": …, "train_loss": 0.09}]}

Stock transformers logs no per-step time: the per-step entries carry ``step``, ``epoch``,
``loss``, ``learning_rate``, ``grad_norm`` (and ``num_input_tokens_seen`` when asked). Only the
final summary has times. So, first found of:

1. per-step timing keys some trainers add (ms-swift: ``elapsed_time`` ``'1h 2m 3s'`` → timestamps,
   ``train_speed(iter/s)`` → step rate): one row per logged step, as for the Trainer log lines
   (:mod:`~xpuperf.readers.formats.hf`);
2. the summary: ONE row for the whole run — ``step`` = the last step, ``step_time_s`` =
   ``train_runtime`` / steps (``global_step``; evaluation and checkpoint time included; for a run
   resumed from a checkpoint transformers ≥ 5 times only the last ``train()`` call, whose steps
   are ``train_runtime × train_steps_per_second``), ``samples`` = ``train_samples_per_second`` ×
   ``step_time_s`` (the GLOBAL samples per step: Trainer counts every process) — with a note that
   no per-step timing exists.

The summary is logged AFTER the last checkpoint is saved, so ``checkpoint-N/trainer_state.json``
has none: only the copy ``trainer.save_state()`` writes after ``train()`` can be read (checked on
files transformers 5.24 wrote, tests/data/formats_hf_trainer_state). Evaluation entries
(``eval_*``) are not steps. Read as rank 0 (a job-level record: pass ``--world-size N`` for
per-card throughput) unless samples per step = ``train_batch_size`` (one process). A ``.json``
file without ``log_history`` is read by the generic JSON reader. Errors:
:class:`~xpuperf.errors.InputError` for invalid JSON or a ``log_history`` without anything timed.
"""

from __future__ import annotations

import json
import math

from xpuperf.errors import InputError
from xpuperf.readers.base import Source
from xpuperf.readers.formats.hf import _duration
from xpuperf.readers.formats.table import (
    NAN,
    Rows,
    TextTable,
    as_float,
    job_level_note,
    num,
)
from xpuperf.readers.generic import read_jsonl

NAME = "hf_trainer_state"
EXTENSIONS = (".json",)
EXAMPLE = (
    '{"global_step": 400, "log_history": [{"loss": 0.1677, "step": 25, …}, …, '
    '{"step": 400, "train_runtime": 812.5, "train_samples_per_second": 63.02}]}'
)
NO_TIME = (
    "trainer_state.json has no timing: neither per-step timing keys nor a train_runtime "
    "summary in log_history (stock transformers logs the summary after the last checkpoint is "
    "saved, so checkpoint-N/trainer_state.json never has it); read the trainer_state.json that "
    "trainer.save_state() writes to the output directory after train(), or a console log with "
    "timestamps"
)


def sniff(lines: list[str]) -> bool:
    """A JSON object with a ``"log_history"`` key among the first lines."""
    head = "\n".join(lines[:200])
    return head.lstrip().startswith("{") and '"log_history"' in head


def read(src: Source) -> TextTable:
    """Parse a trainer_state.json (see the module docstring)."""
    if not sniff(src.first_lines(200)):
        return read_jsonl(src)  # type: ignore[return-value]
    try:
        state = json.loads(src.read_all())
    except json.JSONDecodeError as exc:
        raise InputError(
            f"trainer_state.json is not valid JSON ({exc.msg}, column {exc.colno}); the file may "
            "be cut: take the copy trainer.save_state() wrote after train()",
            src.name,
            exc.lineno,
        ) from None
    except (ValueError, RecursionError) as exc:
        raise InputError(f"trainer_state.json is not valid JSON: {exc}", src.name) from None
    history = state.get("log_history") if isinstance(state, dict) else None
    if not isinstance(history, list):
        raise InputError("'log_history' is not a list: not a trainer_state.json", src.name)
    entries = [e for e in history if isinstance(e, dict)]
    steps = [e for e in entries if "loss" in e and not any(str(k).startswith("eval_") for k in e)]
    summary = next((e for e in reversed(entries) if "train_runtime" in e), None)
    timed = [e for e in steps if "elapsed_time" in e or "train_speed(iter/s)" in e]
    rows = Rows()
    if timed:
        for i, e in enumerate(timed):
            speed = e.get("train_speed(iter/s)")
            ts = _duration(str(e["elapsed_time"])) if "elapsed_time" in e else NAN
            rows.add(i + 1, step=num(str(e.get("step", i + 1))), t_end_s=ts,
                     steps_per_sec=num(str(speed)) if speed is not None else NAN)  # fmt: skip
        out = rows.table(src, "log_history entry", EXAMPLE)
        frame = out.frame
        keep = "t_end_s" if frame["t_end_s"].notna().any() else "steps_per_sec"
        out.frame = frame.drop(columns=[c for c in ("t_end_s", "steps_per_sec") if c != keep])
        out.unit = "record"
        out.notes.append(job_level_note("no samples in log_history: pass --batch-size"))
        return out
    if summary is None:
        raise InputError(NO_TIME, src.name)
    return _summary_row(src, state, summary, len(entries))


def _number(value: object) -> float:
    """A finite JSON number as float, else NaN (strings, booleans, null, inf)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return NAN
    x = float(value)
    return x if math.isfinite(x) else NAN


def console_summary(src: Source, summary: dict, n_lines: int) -> TextTable:
    """ONE row from the Trainer's printed summary dict, for a console log whose lines carry no time.

    transformers ≥ 5 prints the values as strings (``{'train_runtime': '1.294', …}``); the step
    count is ``train_runtime × train_steps_per_second`` (the log lines in 5.x carry no ``step``).
    Used by :mod:`~xpuperf.readers.formats.hf` (``n_lines``: the summary's line number). Errors:
    :class:`~xpuperf.errors.InputError` when those two are not positive numbers.
    """
    values = {k: as_float(v) for k, v in summary.items() if k.startswith("train_")}
    steps = values.get("train_runtime", NAN) * values.get("train_steps_per_second", NAN)
    if not (math.isfinite(steps) and round(steps) >= 1):
        raise InputError(
            "the Trainer log lines carry no time and the summary line has no positive "
            "train_runtime and train_steps_per_second: keep timestamps (e.g. docker logs -t, or "
            "logging with %(asctime)s)",
            src.name,
            n_lines,
        )
    state = {"global_step": float(round(steps))}
    return _summary_row(src, state, values, n_lines, "the Trainer log", "summary line")


def _summary_row(
    src: Source,
    state: dict,
    summary: dict,
    n_entries: int,
    what: str = "trainer_state.json",
    kind: str = "log_history summary",
) -> TextTable:
    """ONE row from the ``train_runtime`` summary (see the module docstring).

    Steps timed = ``global_step``, unless ``train_runtime × train_steps_per_second`` is smaller
    by more than one step and 1 %: transformers ≥ 5 counts only the steps of the last
    ``train()`` call (a run resumed from a checkpoint), so that product is used (4.x divides by
    ``max_steps`` in every case, so neither its resumed runs nor an early stop can be told from
    the file). Ranks hint:
    samples per step / ``train_batch_size`` (per process) = data-parallel processes × gradient
    accumulation steps (``Trainer.get_total_train_batch_size``); when it rounds to 1 the run had
    one process and the ``--world-size`` note is left out.
    """
    runtime = _number(summary.get("train_runtime"))
    last = _number(state.get("global_step"))
    if not last > 0:
        last = _number(summary.get("step"))
    if not (runtime > 0 and last > 0):
        raise InputError(
            f"cannot derive a step time from train_runtime {summary.get('train_runtime')!r} s "
            f"over global_step {state.get('global_step')!r} steps: both must be positive numbers",
            src.name,
        )
    steps = last
    notes = []
    rate = _number(summary.get("train_steps_per_second"))
    if rate > 0 and last - runtime * rate > max(1.0, 0.01 * last):
        steps = float(round(runtime * rate))
        notes.append(
            f"train_runtime × train_steps_per_second = {steps:g} steps, not global_step "
            f"{last:g}: the run was resumed from a checkpoint and the summary times only the "
            f"last {steps:g} steps"
        )
    step_s = runtime / max(steps, 1.0)
    samples = _number(summary.get("train_samples_per_second")) * step_s
    rows = Rows()
    rows.add(n_entries, step=last, step_time_s=step_s, samples=samples)
    out = rows.table(src, kind, EXAMPLE)
    out.unit = "record" if kind.startswith("log_history") else "line"
    out.notes.append(
        f"{what} holds no per-step timing: one row = the mean step over train_runtime "
        f"(train_runtime {runtime:g} s / {steps:g} steps = {step_s:.4g} s, evaluation and "
        "checkpointing included); jitter and stragglers cannot be seen"
    )
    out.notes.extend(notes)
    per_process = _number(state.get("train_batch_size"))
    ratio = samples / per_process if per_process > 0 else NAN
    if math.isfinite(ratio) and round(ratio) == 1:
        out.notes.append(
            f"samples per step {samples:.4g} ≈ train_batch_size {per_process:g}: one process "
            "without gradient accumulation, so job throughput = per-card throughput"
        )
        return out
    hint = "samples = train_samples_per_second × step time"
    if math.isfinite(ratio) and round(ratio) > 1:
        hint += (
            f" = {samples:.4g} ≈ {round(ratio)} × train_batch_size {per_process:g} "
            "(data-parallel processes × gradient accumulation steps)"
        )
    out.notes.append(job_level_note(hint))
    return out
