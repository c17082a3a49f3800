"""A user-defined step line for any text log: ``--pattern 'iter {step}: time {step_time_ms}ms'``.

The answer for a log no format module knows. A pattern is literal text with ``{field}`` holes:

=====================================  ============================================================
field                                  meaning
=====================================  ============================================================
``{step}``                             step number (an integer); without it, matching lines are
                                       numbered 0, 1, 2 … per rank
``{step_time_<unit>}``                 step time; ``<unit>`` is one of the unit suffixes of
                                       :data:`xpuperf.readers.columns.UNITS` (``s``, ``ms``,
                                       ``us``, ``ns``, ``sec``, ``msec`` …)
``{data_<unit>}``, ``{forward_…}``,    phase times of the step table, same units
``{backward_…}``, ``{comm_…}``,
``{optimizer_…}``, ``{compute_…}``
``{samples}``, ``{tokens}``            samples / tokens of this rank in this step
``{samples_per_s}`` (= ``{throughput}``)  samples per second; without a time field, step time =
                                       samples / throughput (``{samples}`` or ``--batch-size``)
``{tokens_per_s}``                     tokens per second; step time = tokens / tokens_per_s
                                       without another time source
``{mfu}``                              MFU as a fraction; ``{mfu}%`` (a ``%`` right after it) is
                                       a percentage (41.2% → 0.412)
``{timestamp}``                        ``2026-01-03 10:00:01[,.]frac`` / ``2026/01/03 …`` /
                                       ISO 8601 (read by ``console.timestamp``); without a time
                                       field, step time = timestamp difference
``{rank}``, ``{node}``                 rank (integer) and host name (no blanks)
``{_}``                                anything up to the first place where the literal text that
                                       follows it matches; before another ``{_}``: one word
=====================================  ============================================================

Literal text matches literally (``{{``/``}}`` are literal braces), except that a run of blanks
matches any run of blanks, and a field takes blanks before its value (``[{step}/`` matches
``[  12/``). The pattern may match anywhere in a line (like ``grep``). Numbers: an optional sign,
digits, a decimal point, an exponent (``1.2e-3``); a comma is a thousands separator only between
groups of three digits (``10,050`` = 10050); a decimal comma (``812,5``) is not a number.

A pattern without a step-time source (a time field, ``{samples_per_s}``, ``{tokens_per_s}`` with
``{tokens}``, or ``{timestamp}``), with an unknown field, a field given twice or an unbalanced
brace is a :class:`~xpuperf.errors.UsageError` naming the field and the accepted names.

Reading (:func:`read`): lines go through the console-noise removal of every text format
(:func:`~xpuperf.readers.formats.console.iter_lines`: launcher prefixes, ANSI codes, tqdm, CRLF,
streamed in blocks), so a pattern never includes the ``[rank3]:`` prefix. Lines the pattern does
not match are noise. Rank: ``{rank}``, else a rank in the file name (``rank3.log``), else the
launcher prefix, else 0. A matching line that repeats the step of the previous matching line of
its rank is dropped (the first is kept) with a counted warning. A file where no line matches is
an :class:`~xpuperf.errors.InputError` quoting the closest line (:class:`Closest`).
"""

from __future__ import annotations

import functools
import math
import re
import shlex
from dataclasses import dataclass, field

from xpuperf.errors import InputError, UsageError
from xpuperf.readers.base import Format, Source, short
from xpuperf.readers.columns import UNITS
from xpuperf.readers.formats import console
from xpuperf.readers.formats.table import NAN, Rows, TextTable, near_int
from xpuperf.readers.paths import rank_from_name

NAME = "pattern"
INT = r"(?:\d{1,3}(?:,\d{3})+(?!\d)|\d+)"
"""An integer, with optional thousands commas (groups of three digits)."""
NUM = rf"[-+]?(?:{INT}(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"
"""A number: sign, digits (thousands commas), decimals, exponent."""
TS = r"\d{4}[-/]\d\d[-/]\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d{1,9})?(?:Z|[+-]\d\d:?\d\d)?"
"""The date-times :func:`console.timestamp` reads."""
TIME_BASES = ("step_time", "data", "forward", "backward", "comm", "optimizer", "compute")
"""Time fields: ``<base>_<unit>`` feeds the step-table column ``<base>_s``."""
PLAIN: dict[str, tuple[str, str]] = {
    "step": ("step", INT),
    "rank": ("rank", INT),
    "node": ("node", r"\S+"),
    "samples": ("samples", NUM),
    "tokens": ("tokens", NUM),
    "samples_per_s": ("throughput", NUM),
    "throughput": ("throughput", NUM),
    "tokens_per_s": ("tokens_per_s", NUM),
    "mfu": ("mfu", NUM),
    "timestamp": ("t_end_s", TS),
}
"""Field name → (output column, value regex) for the fields that are not times."""
ACCEPTED = (
    "step, step_time_s|_ms|_us|_ns (also data_, forward_, backward_, comm_, optimizer_, "
    "compute_ with a unit), samples, tokens, samples_per_s (or throughput), tokens_per_s, mfu, "
    "timestamp, rank, node, _ (skip anything)"
)
"""The accepted field names, for messages."""
NO_MATCH = "the pattern matched no line of the file"
"""Start of the error for a file where no line matches (``analyze`` keeps it an error when no
other input matched either, instead of reading the file as job output)."""
DUPLICATE = "matching line repeats the step of the previous one of its rank; kept the first"
BAD_DATE = "{timestamp} is not a valid date"
_TOKEN = re.compile(r"\{\{|\}\}|\{([^{}]*)\}|[{}]|\s+|[^{}\s]+")


@dataclass(frozen=True)
class Field:
    """One ``{name}`` of a pattern: output ``column``, value ``regex``, ``factor`` to seconds (or
    1/100 for ``{mfu}%``)."""

    name: str
    column: str
    regex: str
    factor: float = 1.0


@dataclass(frozen=True)
class Token:
    """A piece of a pattern: ``kind`` is ``lit``, ``ws``, ``field`` or ``skip``."""

    kind: str
    text: str
    field: Field | None = None

    def regex(self, after_ws: bool = False) -> str:
        if self.kind == "lit":
            return re.escape(self.text)
        if self.kind == "ws":
            return r"\s+"
        if self.kind == "skip":
            return ".*?"
        assert self.field is not None
        lead = "" if after_ws else r"\s*"
        return rf"{lead}({self.field.regex})"

    def describe(self) -> str:
        """How the token reads in a message: ``'time '``, ``{step} (an integer)``."""
        if self.kind == "lit":
            return repr(self.text)
        if self.kind == "ws":
            return "a blank"
        if self.kind == "skip":
            return "{_}"
        assert self.field is not None
        what = {INT: "an integer", NUM: "a number", TS: "a date-time"}.get(self.field.regex)
        return f"{{{self.field.name}}} ({what or 'a word without blanks'})"


def _field(name: str, percent: bool) -> Field:
    if name in PLAIN:
        column, rx = PLAIN[name]
        return Field(name, column, rx, 0.01 if name == "mfu" and percent else 1.0)
    for base in TIME_BASES:
        if name.startswith(base + "_") and name[len(base) + 1 :] in UNITS:
            return Field(name, f"{base}_s", NUM, UNITS[name[len(base) + 1 :]])
    if name in TIME_BASES:
        raise UsageError(
            f"pattern field {{{name}}} needs a unit in its name: {{{name}_s}}, {{{name}_ms}}, "
            f"{{{name}_us}} …; accepted fields: {ACCEPTED}"
        )
    raise UsageError(f"unknown pattern field {{{name}}}; accepted fields: {ACCEPTED}")


@dataclass
class Pattern:
    """A compiled ``--pattern`` (see the module docstring); build it with :func:`compile_pattern`.

    Attributes:
        text: the pattern as given.
        tokens: its pieces, in order.
        regex: the compiled regular expression (searched in each cleaned line).
        fields: the ``{name}`` fields in order (group ``i + 1`` holds field ``i``).
    """

    text: str
    tokens: list[Token]
    regex: re.Pattern[str]
    fields: list[Field] = field(default_factory=list)

    @property
    def columns(self) -> set[str]:
        """The output columns the pattern fills."""
        return {f.column for f in self.fields}

    @functools.cached_property
    def needle(self) -> str:
        """The longest literal piece: a line without it cannot match (a cheap pre-filter)."""
        return max((t.text for t in self.tokens if t.kind == "lit"), key=len, default="")

    @functools.cached_property
    def first_literal(self) -> str:
        """The first literal piece (the closest-line search looks for lines holding it)."""
        return next((t.text for t in self.tokens if t.kind == "lit"), "")

    def values(self, text: str) -> dict[str, float | str] | None:
        """The field values of the first match in ``text`` (times in seconds, ``t_end_s`` epoch
        seconds, NaN for a date that does not exist), or None when the line does not match."""
        if self.needle not in text:
            return None
        m = self.regex.search(text)
        if m is None:
            return None
        out: dict[str, float | str] = {}
        for i, f in enumerate(self.fields, 1):
            s = m.group(i)
            if f.column == "node":
                out["node"] = s
            elif f.column == "t_end_s":
                ts = console.timestamp(s)
                out["t_end_s"] = NAN if ts is None else ts
            else:
                out[f.column] = float(s.replace(",", "")) * f.factor
        return out

    def prefix_depth(self, text: str) -> tuple[int, int]:
        """``(k, end)``: the first ``k`` tokens match ``text`` (searched), ending at ``end``; the
        largest such ``k`` (``(0, 0)`` when not even the first token matches)."""
        best = (0, 0)
        for k in range(1, len(self.tokens) + 1):
            m = _prefix_regex(self, k).search(text)
            if m is None:
                break
            best = (k, m.end())
        return best


def _prefix_regex(pat: Pattern, k: int) -> re.Pattern[str]:
    cache = pat.__dict__.setdefault("_prefixes", {})
    rx = cache.get(k)
    if rx is None:
        rx = cache[k] = re.compile(_join(pat.tokens[:k]))
    return rx


def _join(tokens: list[Token]) -> str:
    parts = []
    prev = None
    for i, t in enumerate(tokens):
        nxt = [u.kind for u in tokens[i + 1 :] if u.kind != "ws"][:1]
        if t.kind == "skip" and nxt == ["skip"]:
            parts.append(r"\S+")  # `{_} {_}`: a word, then the next {_} (no n^k backtracking)
        elif t.kind == "skip" and (anchor := _anchor(tokens[i + 1 :])):
            # never past the first place where the literal after it matches: one way to match,
            # so `… {_} took` is linear in the line, not a backtracking search
            parts.append(f"(?:(?!{anchor}).)*")
        else:
            parts.append(t.regex(after_ws=prev is not None and prev.kind == "ws"))
        prev = t
    return "".join(parts)


def _anchor(rest: list[Token]) -> str:
    """The regex of the literal and blank tokens that follow a ``{_}`` up to the next field or
    ``{_}``; "" when they hold no literal (blanks alone do not bound a skip)."""
    out, lit = [], False
    for t in rest:
        if t.kind not in ("lit", "ws"):
            break
        out.append(t.regex())
        lit = lit or t.kind == "lit"
    return "".join(out) if lit else ""


def compile_pattern(text: str) -> Pattern:
    """Compile a ``--pattern`` string (module docstring).

    Raises:
        UsageError: empty pattern, unbalanced brace, empty / unknown / repeated field, a time
            field without a unit, or no step-time source; the message names the accepted fields.
    """
    src = text.strip()
    if not src:
        raise UsageError(f"--pattern is empty; write the step line with fields: {ACCEPTED}")
    tokens: list[Token] = []
    seen: set[str] = set()
    for m in _TOKEN.finditer(src):
        s = m.group(0)
        if s in ("{", "}"):
            raise UsageError(
                f"unbalanced {s!r} at character {m.start() + 1} of the pattern {short(src)!r}; "
                "fields are {name}, a literal brace is {{ or }}"
            )
        if s in ("{{", "}}") or not s.startswith("{"):
            kind = "ws" if s.isspace() else "lit"
            lit = s[0] if kind == "lit" and s in ("{{", "}}") else s
            if kind == "lit" and tokens and tokens[-1].kind == "lit":
                tokens[-1] = Token("lit", tokens[-1].text + lit)
            else:
                tokens.append(Token(kind, lit))
            continue
        name = m.group(1).strip()
        if not name:
            raise UsageError(f"empty field {{}} in the pattern; write {{_}} to skip text, or one "
                             f"of: {ACCEPTED}")  # fmt: skip
        if name == "_":
            tokens.append(Token("skip", "{_}"))
            continue
        if name in seen:
            raise UsageError(f"pattern field {{{name}}} appears twice; use {{_}} for the other")
        seen.add(name)
        percent = src[m.end() : m.end() + 1] == "%"
        tokens.append(Token("field", m.group(0), _field(name, percent)))
    fields = [t.field for t in tokens if t.field is not None]
    _check_time_source({f.column for f in fields})
    return Pattern(src, tokens, re.compile(_join(tokens)), fields)


def _check_time_source(cols: set[str]) -> None:
    if "step_time_s" in cols or "throughput" in cols or "t_end_s" in cols:
        return
    if "tokens_per_s" in cols and "tokens" in cols:
        return
    extra = " ({tokens_per_s} needs {tokens} too)" if "tokens_per_s" in cols else ""
    raise UsageError(
        f"the pattern gives no step time{extra}: add {{step_time_ms}} (or _s, _us), "
        "{timestamp} (step time = difference of consecutive lines), {samples_per_s} with "
        "{samples} or --batch-size, or {tokens_per_s} with {tokens}"
    )


def quote_command(path: str, pat: Pattern) -> str:
    """``xpuperf formats --explain PATH --pattern '…'`` quoted for a shell."""
    return f"xpuperf formats --explain {shlex.quote(path)} --pattern {shlex.quote(pat.text)}"


@dataclass
class Closest:
    """The line nearest to matching a pattern, among the lines that did not match.

    Lines holding the pattern's first literal are preferred; among them the one whose longest
    matching token prefix is longest (the first such line); else the first non-blank line.
    At most :data:`LIMIT` lines are compared (the rest of a large file adds nothing)."""

    pat: Pattern
    line: int | None = None
    text: str = ""
    depth: int = -1
    end: int = 0
    tried: int = 0
    LIMIT = 5000

    def offer(self, n: int, text: str) -> None:
        if self.tried >= self.LIMIT or not text.strip():
            return
        first = self.pat.first_literal
        if first and first not in text:
            if self.line is None:
                self.line, self.text = n, text.strip()
            return
        self.tried += 1
        k, end = self.pat.prefix_depth(text)
        if k > self.depth:
            self.line, self.text, self.depth, self.end = n, text, k, end

    def describe(self) -> str:
        """``; the closest line was line 12: '…' — …`` (empty when the file had no text)."""
        if self.line is None:
            return "; the file has no non-blank line"
        out = f"; the closest line was line {self.line}: {short(self.text.strip())!r}"
        toks = self.pat.tokens
        if self.depth < 0:
            return out + f" (no line holds the pattern's first literal {self.pat.first_literal!r})"
        if self.depth < len(toks):
            done = "".join(t.text for t in toks[: self.depth]).strip()
            rest = self.text[self.end :]
            got = repr(short(rest, 24)) if rest else "its end"
            lead = f"the line matches {done!r}, then " if done else ""
            want = toks[self.depth].describe()
            out += f" ({lead}the pattern wants {want} where the line has {got})"
        return out


def read(src: Source, pat: Pattern) -> TextTable:
    """Parse the lines of ``src`` that ``pat`` matches into step-table columns (module docstring).

    Raises:
        InputError: no line matches (the message quotes the closest line and the explain
            command); every matching line was dropped.
    """
    rows, bad, matched = Rows(), [], 0
    cols = pat.columns
    tags = "rank" not in cols and rank_from_name(src.rank_hint) is None
    last: dict[object, float] = {}
    closest = Closest(pat)
    derived: set[str] = set()
    for n, tag, text in console.iter_lines(src, bad):
        vals = pat.values(text)
        if vals is None:
            if not matched:
                closest.offer(n, text)
            continue
        matched += 1
        if tags and tag is not None:
            vals["rank"] = float(tag)
        key = vals.get("rank", tag)
        step = vals.get("step")
        if step is not None:
            if last.get(key) == step:
                rows.drop(DUPLICATE, n)
                continue
            last[key] = step  # type: ignore[assignment]
        if "t_end_s" in vals and math.isnan(vals["t_end_s"]):  # type: ignore[arg-type]
            rows.drop(BAD_DATE, n)
            continue
        _derive(vals, derived)
        rows.add(n, **vals)
    rows.undecodable(bad)
    if not matched:
        raise InputError(
            f"{NO_MATCH}{closest.describe()}; see what it matches "
            f"with `{quote_command(src.name, pat)}` (docs/formats.md, 'Any other text log')",
            src.name,
        )
    out = rows.table(src, f"line matching the pattern {short(pat.text)!r}", pat.text)
    if "rank" in out.frame.columns and "rank" not in cols:  # launcher prefixes: untagged = 0
        out.frame["rank"] = out.frame["rank"].fillna(0.0)
    out.notes += [_NOTES[d] for d in sorted(derived)]
    return out


_NOTES = {
    "st_samples": "--pattern: step time = {samples} / {samples_per_s}",
    "st_tokens": "--pattern: step time = {tokens} / {tokens_per_s}",
    "samples": "--pattern: samples = {samples_per_s} × step time (rounded when within 2 %)",
    "tokens": "--pattern: tokens = {tokens_per_s} × step time (rounded when within 2 %)",
}


def _derive(vals: dict[str, float | str], derived: set[str]) -> None:
    """Fill the step time from samples / throughput or tokens / tokens_per_s, and samples or
    tokens from their rate × step time, in place (the rate columns are removed)."""
    thr, tps = vals.get("throughput"), vals.pop("tokens_per_s", None)
    st = vals.get("step_time_s")
    if st is None and thr and "samples" in vals:
        st = vals["step_time_s"] = vals["samples"] / thr  # type: ignore[operator]
        derived.add("st_samples")
    if st is None and tps and "tokens" in vals:
        st = vals["step_time_s"] = vals["tokens"] / tps  # type: ignore[operator]
        derived.add("st_tokens")
    if st is None:  # the reader's build step derives it from throughput + --batch-size, or ts
        return
    vals.pop("throughput", None)
    if thr is not None and "samples" not in vals:
        vals["samples"] = near_int(thr * st)  # type: ignore[operator]
        derived.add("samples")
    if tps is not None and "tokens" not in vals:
        vals["tokens"] = near_int(tps * st)  # type: ignore[operator]
        derived.add("tokens")


def pattern_format(text: str) -> Format:
    """A :class:`~xpuperf.readers.base.Format` named ``pattern`` that reads with ``text``; pass it
    as ``fmt=`` to :func:`xpuperf.readers.read_logs` (as ``--format`` is passed).

    Raises:
        UsageError: a malformed pattern (:func:`compile_pattern`).
    """
    pat = compile_pattern(text)
    return Format(NAME, (), lambda _lines: False, functools.partial(read, pat=pat), pat.text)
