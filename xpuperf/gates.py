"""``--fail-on`` gates: a small, safe expression language over a JSON result document.

Nothing is ever passed to ``eval``: an expression is matched against one regular grammar::

    gate   := field OP value
    field  := name ("." name)*             name := [A-Za-z_][A-Za-z0-9_]*
    OP     := "<" | "<=" | ">" | ">=" | "==" | "=" | "!="
    value  := number ["%"]                 e.g. 0.9, 1e-3, 5%  (5% = 0.05)
            | info | warning | error       (only with the field ``severity``)
            | XPnnn                        (only with the field ``code``)

Several gates may be given at once, separated by commas (``speedup<0.9,jitter.cv>0.05``).

Meaning, for the analyze document (``xpuperf.analyze/1``):

- a dotted field is looked up in the JSON document (``summary.step_time_s.p99``); a list counts
  its items (``stragglers>0``); short aliases are listed in :data:`ANALYZE_ALIASES`
  (``speedup`` = ``breakdown.speedup``; ``throughput`` = the wall-clock headline,
  ``throughput_median_step`` = the median-step figure, ``jitter_cost`` = the share of wall time
  lost to spikes, stalls and jitter; ``tokens_per_s`` = ``throughput_tokens`` = the wall-clock
  tokens/s, ``mfu`` = the median MFU);
- ``severity OP level`` compares the most severe finding with ``level`` (``severity>=warning``:
  any finding at warning or above);
- ``code=XP101`` holds when a finding with that code is present, ``code!=XP101`` when absent —
  decided only when the check behind the code had its evidence (``checks[]``: a
  ``not_checked`` check, or its area's line, makes the gate a usage error); the same for
  ``stragglers`` when the straggler check was not checked.

A gate *fails* when its comparison is true (the expression states the bad case). A field that is
null (e.g. ``speedup`` without ``--baseline``) or absent is a usage error, never a silent pass.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from xpuperf.errors import GateFailedError, UsageError
from xpuperf.findings import CHECK_AREA, CHECK_OF_CODE

GRAMMAR = (
    "FIELD OP VALUE, e.g. speedup<0.9, jitter.cv>0.05, stragglers>0, severity>=warning, "
    "summary.step_time_s.p99>1.2, code=XP101; OP is one of < <= > >= == = !=; VALUE is a "
    "number (5% = 0.05), a severity (info, warning, error) for 'severity', or a code (XPnnn) "
    "for 'code'; separate several gates with commas"
)

_GATE = re.compile(
    r"^\s*(?P<field>[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)\s*"
    r"(?P<op><=|>=|==|!=|<|>|=)\s*"
    r"(?P<value>[A-Za-z0-9_.+-]+%?)\s*$"
)
_NUMBER = re.compile(r"^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?%?$")
_CODE = re.compile(r"^XP\d{3}$")
_SEVERITY = {"info": 0, "warning": 1, "error": 2}

#: short names for fields of the analyze document
ANALYZE_ALIASES: dict[str, str] = {
    "speedup": "breakdown.speedup",
    # the headline: samples / steady wall time (spikes and stalls lower it)
    "throughput": "summary.throughput_wallclock_samples_per_s",
    "throughput_per_card": "summary.throughput_per_card_wallclock_samples_per_s",
    # what a typical (median) step reaches
    "throughput_median_step": "summary.throughput_median_step_samples_per_s",
    "throughput_per_card_median_step": "summary.throughput_per_card_samples_per_s",
    # tokens/s (logs that count tokens: torchtitan, Megatron/Primus, nanoGPT)
    "throughput_tokens": "summary.throughput_wallclock_tokens_per_s",
    "tokens_per_s": "summary.throughput_wallclock_tokens_per_s",
    "throughput_tokens_per_card": "summary.throughput_per_card_wallclock_tokens_per_s",
    "mfu": "summary.mfu.median",
    "jitter_cost": "summary.jitter_cost_fraction",
    "step_time": "summary.step_time_s.median",
    "mean_step_time": "summary.step_time_s.mean",
    "p99": "summary.step_time_s.p99",
    "cv": "jitter.cv",
    "fps_cv": "jitter.fps_cv",
    "comm_fraction": "breakdown.comm_fraction",
    "data_fraction": "breakdown.data_fraction",
    "sync_cost": "straggler_analysis.sync_cost_fraction",
}

#: what to do when a field is null, by field prefix
_NULL_HINTS: dict[str, str] = {
    "breakdown.speedup": "speedup needs a single-card baseline: pass --baseline LOG",
    **dict.fromkeys(
        (
            "summary.throughput_wallclock_tokens",
            "summary.throughput_per_card_wallclock_tokens",
            "summary.throughput_tokens",
            "summary.throughput_per_card_tokens",
        ),
        "the logs count no tokens (a tokens column, torchtitan tps, Megatron seq_length)",
    ),
    "summary.mfu": "the logs print no MFU (an mfu column, torchtitan/nanoGPT mfu)",
    "summary.throughput": "throughput needs samples per step: pass --batch-size N",
    "jitter": "jitter needs enough steady steps (see findings XP405)",
    "breakdown.": "the breakdown needs phase columns in the logs or --baseline",
    "straggler_analysis": "the straggler analysis needs at least two ranks",
}

_OPS = {
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
    "==": lambda a, b: a == b,
    "=": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
}


@dataclass(frozen=True)
class Gate:
    """One parsed gate.

    Attributes:
        text: the expression as the user wrote it (stripped).
        field: dotted field, alias not yet resolved (``severity`` and ``code`` are special).
        op: comparison operator.
        value: number, severity rank (int) or finding code (str).
    """

    text: str
    field: str
    op: str
    value: float | int | str


@dataclass(frozen=True)
class GateResult:
    """Outcome of one gate: ``failed`` is True when the bad case the gate states holds."""

    gate: Gate
    actual: Any
    failed: bool

    def describe(self) -> str:
        """``"jitter.cv>0.05 (jitter.cv = 0.0812)"``."""
        a = self.actual
        shown = f"{a:.4g}" if isinstance(a, float) else str(a)
        return f"{self.gate.text} ({self.gate.field} = {shown})"


def _bad(expr: str, why: str) -> UsageError:
    return UsageError(f"--fail-on {expr!r}: {why}. Accepted: {GRAMMAR}")


def parse_gate(expr: str) -> Gate:
    """Parse one expression.

    Raises:
        UsageError: the expression does not match the grammar (message names it and the grammar).
    """
    m = _GATE.match(expr)
    if not m:
        raise _bad(expr, "not a gate expression")
    field, op, raw = m["field"], m["op"], m["value"]
    if field == "severity":
        if raw.lower() not in _SEVERITY:
            raise _bad(expr, f"severity must be compared with info, warning or error, not {raw!r}")
        return Gate(expr.strip(), field, op, _SEVERITY[raw.lower()])
    if field in ("code", "codes"):
        if op not in ("=", "==", "!=") or not _CODE.match(raw.upper()):
            raise _bad(expr, "use code=XPnnn (present) or code!=XPnnn (absent)")
        return Gate(expr.strip(), "code", op, raw.upper())
    if not _NUMBER.match(raw):
        raise _bad(expr, f"{raw!r} is not a number")
    value = float(raw[:-1]) / 100 if raw.endswith("%") else float(raw)
    if _is_fraction(field) and not raw.endswith("%") and 1.0 < value <= 100.0:
        raise _bad(
            expr,
            f"{field} is a fraction 0…1; {raw} reads as {value:g}× — write {field}{op}"
            f"{value / 100:g} or {field}{op}{raw}%",
        )
    return Gate(expr.strip(), field, op, value)


def _is_fraction(field: str) -> bool:
    """Fields whose values are fractions 0…1 (MFU, shares, costs): a bare 40 is a slip for 40 %."""
    path = ANALYZE_ALIASES.get(field, field)
    return path == "summary.mfu.median" or path.endswith("_fraction")


def parse_gates(exprs: Sequence[str] | None) -> list[Gate]:
    """Parse every ``--fail-on`` option; each may hold several comma-separated gates."""
    out: list[Gate] = []
    for e in exprs or ():
        parts = [p for p in e.split(",") if p.strip()]
        if not parts:
            raise _bad(e, "empty")
        out += [parse_gate(p) for p in parts]
    return out


def _lookup(doc: Mapping[str, Any], path: str) -> Any:
    cur: Any = doc
    done: list[str] = []
    for key in path.split("."):
        if cur is None:
            return None
        if not isinstance(cur, Mapping) or key not in cur:
            where = ".".join(done) or "the document"
            keys = sorted(cur) if isinstance(cur, Mapping) else []
            hint = f"; fields of {where}: {', '.join(keys[:25])}" if keys else ""
            raise UsageError(f"--fail-on: no field {path!r} in the result{hint}")
        cur = cur[key]
        done.append(key)
    return cur


def _null_error(gate: Gate, path: str) -> UsageError:
    hint = next((h for p, h in _NULL_HINTS.items() if path.startswith(p)), "")
    return UsageError(
        f"--fail-on {gate.text!r}: {path} is null in this result, so the gate cannot be checked"
        + (f" — {hint}" if hint else "")
    )


def evaluate_gate(
    gate: Gate, doc: Mapping[str, Any], aliases: Mapping[str, str] = ANALYZE_ALIASES
) -> GateResult:
    """Evaluate one gate against a result document.

    Raises:
        UsageError: the field is absent, null, or not a number/list.
    """
    findings = doc.get("findings") or []
    if gate.field == "severity":
        ranks = [_SEVERITY.get(f.get("severity"), -1) for f in findings]
        worst = max(ranks, default=-1)
        names = {v: k for k, v in _SEVERITY.items()}
        return GateResult(gate, names.get(worst, "none"), _OPS[gate.op](worst, gate.value))
    if gate.field == "code":
        codes = sorted({str(f.get("code")) for f in findings})
        present = gate.value in codes
        if not present:
            _refuse_unchecked(gate, doc, CHECK_OF_CODE.get(str(gate.value)))
        failed = present if gate.op in ("=", "==") else not present
        return GateResult(gate, "present" if present else "absent", failed)
    path = aliases.get(gate.field, gate.field)
    _refuse_unchecked(gate, doc, _FIELD_CHECK.get(path.split(".")[0]))
    actual = _lookup(doc, path)
    if actual is None:
        raise _null_error(gate, path)
    if isinstance(actual, list):
        actual = len(actual)
    if isinstance(actual, bool) or not isinstance(actual, (int, float)):
        kind = "an object" if isinstance(actual, Mapping) else type(actual).__name__
        raise UsageError(f"--fail-on {gate.text!r}: {path} is {kind}, not a number")
    if isinstance(actual, float) and not math.isfinite(actual):
        raise _null_error(gate, path)
    return GateResult(gate, actual, bool(_OPS[gate.op](actual, gate.value)))


_FIELD_CHECK = {"stragglers": "steps.stragglers", "straggler_analysis": "steps.stragglers"}
"""Top-level fields whose value is only a verdict when the check named here had evidence."""


def _refuse_unchecked(gate: Gate, doc: Mapping[str, Any], check: str | None) -> None:
    """A usage error when ``check`` (or the one line standing for its area) was not checked:
    "no finding" or "no straggler" without evidence must not pass a gate."""
    checks = doc.get("checks")
    if check is None or not isinstance(checks, list):
        return  # a document without checks (older JSON, compare): nothing to hold against
    area = CHECK_AREA.get(check.split(".")[0])
    mine = [c for c in checks if isinstance(c, dict) and c.get("name") in (check, area)]
    for c in mine:
        if c.get("status") == "not_checked":
            raise UsageError(
                f"--fail-on {gate.text!r} cannot be decided: {c.get('title')} was not checked — "
                f"{c.get('evidence')}"
            )
    if not mine:  # e.g. a framework code on a scaling table: this input cannot show it
        raise UsageError(
            f"--fail-on {gate.text!r} cannot be decided: this input has no {check} check "
            "(another kind of input shows it; docs/diagnosis.md lists what each check needs)"
        )


def evaluate(
    gates: Sequence[Gate], doc: Mapping[str, Any], aliases: Mapping[str, str] = ANALYZE_ALIASES
) -> list[GateResult]:
    """Evaluate every gate (usage errors raised before any verdict)."""
    return [evaluate_gate(g, doc, aliases) for g in gates]


def enforce(results: Sequence[GateResult]) -> None:
    """Raise :class:`GateFailedError` (exit 1) listing every failed gate with its value."""
    failed = [r for r in results if r.failed]
    if failed:
        listing = "; ".join(r.describe() for r in failed)
        raise GateFailedError(f"{len(failed)} of {len(results)} gate(s) failed: {listing}")
