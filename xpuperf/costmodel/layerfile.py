"""``plan --layers FILE``: a model's parameter tensors from a per-layer size file.

The file lists the trainable parameter tensors in registration (forward) order, one per row, as
``model.named_parameters()`` yields them — gradients become ready in the reverse order
(:meth:`~xpuperf.costmodel.workloads.Workload.backward_sizes_B`). Accepted layouts:

- CSV or TSV with a header: ``params`` (element count; aliases ``numel``, ``parameters``,
  ``elements``), optional ``name`` and ``macs`` (forward multiply-accumulates per sample owned by
  the tensor: in × out × tokens for a linear weight, C_out·C_in·k_h·k_w·H_out·W_out for a
  convolution, 0 for biases and norms). With ``macs`` on every row, backward time is split over
  the layers by MACs (as for the presets); without, by size.
- JSON: a list of objects with the same keys, or ``{"layers": [...]}``.

Written from PyTorch with::

    print("name,params")
    for n, p in model.named_parameters():
        if p.requires_grad:
            print(f"{n},{p.numel()}")

Errors: :class:`~xpuperf.errors.InputError` naming the file and line (exit 2).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd

from xpuperf.costmodel.workloads import Workload
from xpuperf.errors import InputError

MAX_BYTES = 64 << 20
"""Largest layer file read (64 MiB, ~1 M rows)."""
MAX_PARAMS = 10**15
"""Largest total parameter count taken (as ``--params``)."""
ALIASES = {"numel": "params", "parameters": "params", "elements": "params", "size": "params"}
HINT = "write one row per parameter tensor with a header 'name,params[,macs]' (docs/plan.md §6)"


def read_layers(path: str | Path) -> Workload:
    """The :class:`Workload` of a per-layer size file (module docstring).

    Returns a workload named after the file (``layers:STEM``) with one tensor per row and MACs
    when every row has them.

    Raises:
        InputError: unreadable, too large, no ``params`` column, no rows, a count that is not a
            whole number ≥ 1, a MACs value that is negative or not finite, MACs on some rows
            only, or more than :data:`MAX_PARAMS` parameters — with the file's line number.
    """
    p = Path(path)
    try:
        size = p.stat().st_size
    except OSError as exc:
        raise InputError(f"cannot read the layer file: {exc.strerror or exc}", str(p)) from exc
    if size > MAX_BYTES:
        raise InputError(f"layer file of {size:,} bytes is over {MAX_BYTES >> 20} MiB", str(p))
    try:
        text = p.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read the layer file as UTF-8 text ({exc})", str(p)) from exc
    rows = _json_rows(text, p) if text.lstrip()[:1] in ("[", "{") else _table_rows(text, p)
    if not rows:
        raise InputError(f"no layers in the file; {HINT}", str(p))
    tensors, macs = [], []
    for line, label, row in rows:
        tensors.append((str(row.get("name") or f"t{len(tensors)}"), _count(row, line, label, p)))
        macs.append(_macs(row, line, label, p))
    have = [m is not None for m in macs]
    if any(have) and not all(have):
        line, label, _ = rows[have.index(False)]
        raise InputError(f"{label}macs missing: give macs on every row or on none", str(p), line)
    use_macs = all(have) and any(macs)  # all zero: no compute split, readiness by size
    total = sum(n for _, n in tensors)
    if total > MAX_PARAMS:
        raise InputError(f"{total:,} parameters in all: more than {MAX_PARAMS:.0e}", str(p))
    return Workload(
        f"layers:{p.stem}",
        tuple(tensors),
        f"{len(tensors)} tensors from {p.name}",
        tuple(float(m) for m in macs) if use_macs else None,  # type: ignore[arg-type]
    )


Row = tuple[int | None, str, dict]
"""(file line or None, label for messages, the row's fields)."""


def _table_rows(text: str, p: Path) -> list[Row]:
    """(line, "", row) of a CSV/TSV with a header; blank lines skipped."""
    first = text.split("\n", 1)[0]
    sep = "\t" if "\t" in first else ","
    try:
        df = pd.read_csv(p, sep=sep, dtype=str, keep_default_na=False, skip_blank_lines=False,
                         encoding="utf-8-sig")  # fmt: skip
    except (ValueError, pd.errors.ParserError) as exc:
        raise InputError(f"not a CSV/TSV table ({str(exc).splitlines()[0]}); {HINT}",
                         str(p)) from exc  # fmt: skip
    df.columns = [ALIASES.get(str(c).strip().lower(), str(c).strip().lower()) for c in df.columns]
    if "params" not in df.columns:
        raise InputError(f"no 'params' column (columns: {', '.join(df.columns)}); {HINT}",
                         str(p), 1)  # fmt: skip
    out = []
    for i, rec in enumerate(df.to_dict("records")):
        if all(not str(v).strip() for v in rec.values()):
            continue
        out.append((i + 2, "", rec))
    return out


def _json_rows(text: str, p: Path) -> list[Row]:
    """(None, "layer k: ", row) of a JSON list of objects (or ``{"layers": [...]}``)."""
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise InputError(f"not valid JSON ({exc}); {HINT}", str(p)) from exc
    layers = doc.get("layers") if isinstance(doc, dict) else doc
    if not isinstance(layers, list):
        raise InputError(f"JSON must be a list of layers or {{\"layers\": [...]}}; {HINT}",
                         str(p))  # fmt: skip
    out = []
    for i, rec in enumerate(layers):
        if not isinstance(rec, dict):
            raise InputError(f"layer {i + 1} is not an object; {HINT}", str(p))
        rec = {ALIASES.get(str(k).lower(), str(k).lower()): v for k, v in rec.items()}
        if "params" not in rec:
            raise InputError(f"layer {i + 1} has no 'params'; {HINT}", str(p))
        out.append((None, f"layer {i + 1}: ", rec))
    return out


def _number(v: object) -> float | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int | float):
        return float(v)
    try:
        return float(str(v).strip().replace("_", ""))
    except ValueError:
        return None


def _count(row: dict, line: int | None, label: str, p: Path) -> int:
    v = _number(row.get("params"))
    if v is None or not math.isfinite(v) or v < 1 or v != int(v) or v > MAX_PARAMS:
        raise InputError(f"{label}params {row.get('params')!r} is not a whole number >= 1",
                         str(p), line)  # fmt: skip
    return int(v)


def _macs(row: dict, line: int | None, label: str, p: Path) -> float | None:
    raw = row.get("macs")
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return None
    v = _number(raw)
    if v is None or not math.isfinite(v) or v < 0:
        raise InputError(f"{label}macs {raw!r} is not a finite number >= 0", str(p), line)
    return v
