"""Cells and headers of scaling tables as people post them (Markdown, CSV, plain text).

Headers are classified into column kinds (:func:`classify`); cells are parsed into numbers
(:func:`number`), card counts (:func:`cards_cell`) and durations (:func:`duration_s`).

Shapes seen in public posts (NVIDIA DeepLearningExamples READMEs: ``| GPUs | Batch size / GPU |
Throughput - TF32 [img/s] | … | Weak scaling - TF32 |`` with ``371 img/s`` and ``7.69x`` cells;
issue threads: ``| Num of GPUs | Throughput (images/sec) |``, ``|GPUS | MiEdges/s`` without the
closing pipe, ``-- | --`` separators from pasted HTML, ``1x8``/``2x8xH100`` configurations,
``token/p/s`` per-card columns, ``1.38s/it``, ``~40 s/step``, ``10,050`` thousands separators).
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass

#: column kinds, in the order a header is tested against them
KINDS = (
    "efficiency",  # reported scaling efficiency (%, or a fraction)
    "speedup",  # reported speedup / weak- or strong-scaling factor (7.69x)
    "batch_per_card",
    "global_batch",
    "cards_per_node",
    "nodes",
    "config",  # 1x8, 2x8xH100: nodes × cards per node
    "cards",
    "step_time",  # time per step / iteration / batch
    "step_rate",  # it/s, steps/s
    "run_time",  # time per epoch / to train: a fixed amount of work
    "throughput_per_card",
    "throughput",
)

_MD = re.compile(r"\*\*|__|`|~~|<[^>]{0,40}>")
_PRECISION = re.compile(r"precision|\bamp\b|fp16|bf16|tf32|fp32|fp8|int8|mixed", re.I)
_PER_CARD = re.compile(
    r"per[ -_]?(gpu|card|device|npu|rank|accelerator|chip|xpu)|/\s*(gpu|card|device|npu|rank|chip)"
    r"|/p/s|_per_(gpu|card|device)|\bper[ -]?gpu\b",
    re.I,
)
_CARD_WORD = r"(gpus?|cards?|npus?|devices?|accelerators?|xpus?|ranks?|procs?|processes|chips?)"
_NODE_WORD = r"(nodes?|machines?|hosts?|servers?|instances?)"
_RATE_ITEM = (
    r"(img|imgs|image|images|samples?|seqs?|sequences?|sentences?|tokens?|toks?|tkns?|ex|examples?"
    r"|infer|inferences?|frames?|items?|queries|reqs?|requests?)"
)
_RATE = re.compile(rf"{_RATE_ITEM}\s*(/|per)\s*(s|sec|secs|second)\b", re.I)
_RATE_WORDS = re.compile(
    r"throughput|\bspeed\b|\bperf(ormance)?\b|\bips\b|\bfps\b|\bqps\b|\btps\b|"
    rf"{_RATE_ITEM}[ _]per[ _]s(ec(ond)?)?\b|{_RATE_ITEM}/s\b"
    rf"|{_RATE_ITEM}\s*/\s*(p|gpu|card|device|npu)\s*/\s*s(ec)?\b"
    r"|\b[a-z]\w*\s*/\s*s(ec)?\b|\bper[ _]sec(ond)?\b",
    re.I,
)
_STEP_RATE = re.compile(r"\b(it|its|iter|iters|iterations?|steps?|batch(es)?)\s*/\s*s(ec)?\b", re.I)
_STEP_TIME_UNIT = re.compile(
    r"\b(s|sec|secs|seconds?|ms|msec)\s*/\s*(it|iter|iteration|step|batch)\b", re.I
)
_STEP_TIME_WORDS = re.compile(
    r"(time|latency|duration)\b.*\b(step|iter|iteration|batch|it)\b|"
    r"\b(step|iter|iteration|batch)[ _-]?(time|latency|duration)|"
    r"\b(time|sec|ms)[ _]per[ _](step|iter|iteration|batch)",
    re.I,
)
_RUN_TIME = re.compile(
    r"epoch[ _-]?time|time[ _]per[ _]epoch|(train(ing)?|total|wall|run|elapsed)[ _-]?(clock )?time"
    r"|time[ _-]to[ _-](train|solution)|\bttt\b|\be2e[ _]time",
    re.I,
)


@dataclass(frozen=True)
class Header:
    """A classified header cell.

    Attributes:
        text: the header as written (markup removed).
        kind: one of :data:`KINDS`, or None (a column the reader does not use).
        scale_s: for time kinds, seconds per unit of the header (ms → 0.001), or None when
            the header names no unit.
        item: for throughput kinds, ``images``, ``tokens`` or ``samples`` (from the unit).
    """

    text: str
    kind: str | None
    scale_s: float | None = None
    item: str | None = None


def strip_markup(cell: str) -> str:
    """Cell text without Markdown emphasis, code ticks and short HTML tags."""
    return _MD.sub("", cell).strip().strip("*_").strip()


def item_of(text: str) -> str | None:
    """``images``, ``tokens`` or ``samples`` from a rate unit or word in ``text``."""
    low = text.lower()
    if re.search(r"\b(img|imgs|image|images|frames?|fps)\b|img/|image/", low):
        return "images"
    if re.search(r"\b(tokens?|toks?|tkns?|tps)\b|token/|tok/", low):
        return "tokens"
    if _RATE.search(low) or _RATE_WORDS.search(low):
        return "samples"
    return None


def time_scale(text: str) -> float | None:
    """Seconds per unit named in a header or cell (``ms`` → 0.001, ``1.38s`` → 1), None if
    no unit is named."""
    low = text.lower()
    for pattern, scale in (
        (r"ms|msec|millis(?:econds?)?", 1e-3),
        (r"us|µs|usec|micros(?:econds?)?", 1e-6),
        (r"min|mins|minutes?", 60.0),
        (r"h|hr|hrs|hours?", 3600.0),
        (r"s|sec|secs|seconds?", 1.0),
    ):
        if re.search(rf"(?<![a-zµ])(?:{pattern})(?![a-z])", low):
            return scale
    return None


@functools.lru_cache(maxsize=4096)
def classify(raw: str) -> Header:
    """The column kind of a header cell (see :data:`KINDS`); ``kind`` None when unused."""
    text = strip_markup(raw)
    low = " ".join(text.lower().replace("_", " ").split())
    if not low:
        return Header(text, None)
    if "efficien" in low:
        return Header(text, "efficiency")
    if re.search(r"speed[ -]?up|scaling|acceleration|scale factor", low):
        if _PRECISION.search(low) and "scaling" not in low:
            return Header(text, None)  # "Throughput speedup (TF32 - mixed precision)"
        return Header(text, "speedup")
    if re.search(r"\bbatch|\bbs\b|\bmbs\b|\bgbs\b", low):
        if re.search(r"global|total|effective|\bgbs\b|per (job|step)", low):
            return Header(text, "global_batch")
        return Header(text, "batch_per_card")
    if re.search(rf"{_CARD_WORD}\s*(per|/)\s*{_NODE_WORD}|nproc per node|\bppn\b", low):
        return Header(text, "cards_per_node")
    if re.fullmatch(
        rf"(#|num(ber)?( of)?|no\.?|n|total|count of)?\s*{_NODE_WORD}(\s*\(.*\))?", low
    ):
        return Header(text, "nodes")
    if re.fullmatch(r"(config(uration)?|setup|hardware|topology|cluster|system|scale)\b.*", low):
        return Header(text, "config")
    card_forms = (
        rf"(#|num(ber)?( of)?|no\.?|n|total|count of|number of)?\s*{_CARD_WORD}(\s*count)?"
        r"(\s*[\(\[].*[\)\]])?",
        r"world ?size|nproc|np|n ?gpus?|gpu ?num(ber)?",
        r"#",
    )
    if any(re.fullmatch(f, low) for f in card_forms):
        return Header(text, "cards")
    if _RUN_TIME.search(low):
        return Header(text, "run_time", scale_s=time_scale(low))
    if _STEP_TIME_UNIT.search(low) or _STEP_TIME_WORDS.search(low):
        scale = time_scale(low.split("/")[0]) if _STEP_TIME_UNIT.search(low) else time_scale(low)
        return Header(text, "step_time", scale_s=scale)
    if _STEP_RATE.search(low):
        return Header(text, "step_rate")
    if _RATE.search(low) or _RATE_WORDS.search(low):
        kind = "throughput_per_card" if _PER_CARD.search(low) else "throughput"
        return Header(text, kind, item=item_of(low) or "samples")
    return Header(text, None)


_NULL = {"", "-", "--", "—", "–", "n/a", "na", "nan", "none", "null", "?", "oom", "x", "/"}
_NUM = re.compile(r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?")
_THOUSANDS = re.compile(r"^\d{1,3}(?:[,\u202f\u00a0 ']\d{3})+(?:\.\d+)?$")
_DECIMAL_COMMA = re.compile(r"^\d+,(?:\d{1,2}|\d{4,})$")


def number(cell: str, *, spaced_thousands: bool = True) -> float | None:
    """The first number in a cell (``1,234.5 img/s`` → 1234.5, ``~40`` → 40, ``95%`` → 95),
    None for an empty or placeholder cell (``-``, ``N/A``) or a cell without a number.

    ``1,234`` is a thousands separator (English posts); ``0,95`` (not three digits after the
    comma) a decimal comma. ``spaced_thousands`` also joins ``10 050`` (not in whitespace
    tables, where a space separates cells).
    """
    text = strip_markup(cell).replace("\u2212", "-").lstrip("~≈<>=").strip()
    if text.lower() in _NULL:
        return None
    m = re.match(r"[-+]?[\d.,\u202f\u00a0' ]*\d(?:[eE][-+]?\d+)?", text)
    if m:
        head = m.group(0).strip()
        if not spaced_thousands:
            head = head.split()[0] if head.split() else head
        bare = head.lstrip("+-")
        if _THOUSANDS.match(bare):
            head = re.sub(r"[,\u202f\u00a0 ']", "", head)
        elif _DECIMAL_COMMA.match(bare):
            head = head.replace(",", ".")
        m2 = _NUM.match(head)
        if m2:
            return float(m2.group(0))
    m = _NUM.search(text)
    return float(m.group(0)) if m else None


def is_percent(cell: str) -> bool:
    return "%" in cell


def duration_s(cell: str, scale_s: float | None) -> float | None:
    """A duration in seconds: ``2'42"``, ``1 min 55 sec``, ``25m 15s``, ``01:02:03``, or a
    number with a unit in the cell (``120 ms``, ``1.38s/it``) or in the header (``scale_s``;
    seconds when neither says)."""
    text = strip_markup(cell).lower().lstrip("~≈").strip()
    m = re.fullmatch(r"(\d+)\s*['′]\s*(\d+(?:\.\d+)?)\s*(?:\"|″|'')?", text)
    if m:
        return 60 * float(m.group(1)) + float(m.group(2))
    m = re.fullmatch(r"(?:(\d+):)?(\d{1,2}):(\d{2}(?:\.\d+)?)", text)
    if m:
        return 3600 * float(m.group(1) or 0) + 60 * float(m.group(2)) + float(m.group(3))
    parts = re.findall(
        r"(\d+(?:\.\d+)?)\s*(h|hr|hours?|m|min|mins|minutes?|s|sec|secs|seconds?)\b", text
    )
    if len(parts) >= 2:
        unit = {"h": 3600.0, "m": 60.0, "s": 1.0}
        return sum(float(v) * unit[u[0]] for v, u in parts)
    value = number(text)
    if value is None:
        return None
    cell_scale = time_scale(re.sub(r"/\s*(it|iter|iteration|step|batch)\b.*", "", text))
    return value * (cell_scale or scale_s or 1.0)


@dataclass(frozen=True)
class Cards:
    """Card count parsed from a cell: ``cards`` (None when only nodes are given), ``nodes`` and
    ``cards_per_node`` when the cell says (``2x8`` → 2 nodes × 8; ``16 GPUs (2 nodes)``)."""

    cards: int | None
    nodes: int | None = None
    cards_per_node: int | None = None


def cards_cell(cell: str, *, config: bool = False) -> Cards | None:
    """Cards from a cell: ``8``, ``8 GPUs``, ``8x A100`` (8 cards), ``1x8``/``2x8xH100``/``2*8``
    (nodes × cards per node), ``2 nodes (16 GPUs)``, ``2 nodes`` (nodes only). ``config``: a
    lone number in a configuration column is a card count too. None if nothing fits."""
    text = strip_markup(cell).lower().replace("×", "x")
    m = re.search(r"(?<!\d)(\d{1,7})\s*[x*]\s*(\d{1,7})(?![\d.])", text)
    if m:
        nodes, per = int(m.group(1)), int(m.group(2))
        return Cards(nodes * per, nodes, per) if nodes > 0 and per > 0 else None
    cards_m = re.search(rf"(?<!\d)(\d{{1,7}})\s*(?:x\s*)?(?:[a-z][\w-]*\s+)?{_CARD_WORD}\b", text)
    nodes_m = re.search(rf"(?<!\d)(\d{{1,7}})\s*-?\s*{_NODE_WORD}\b", text)
    if cards_m or nodes_m:
        cards = int(cards_m.group(1)) if cards_m else None
        nodes = int(nodes_m.group(1)) if nodes_m else None
        if cards == 0 or nodes == 0:
            return None
        return Cards(cards, nodes)
    m = re.fullmatch(r"(\d{1,7})\s*x?\s*([a-z][\w-]*)?(\s*\(.*\))?", text)
    if m and (m.group(2) is None or config or text.endswith(m.group(2) or "")):
        n = int(m.group(1))
        return Cards(n) if n > 0 else None
    return None


def finite(x: float | None) -> bool:
    return x is not None and math.isfinite(x)
