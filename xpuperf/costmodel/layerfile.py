"""``plan --layers FILE``: a model's parameter tensors from a per-layer size file.

The file lists the trainable parameter tensors in registration (forward) order, one per row, as
``model.named_parameters()`` yields them — gradients become ready in the reverse order
(:meth:`~xpuperf.costmodel.workloads.Workload.backward_sizes_B`). Accepted layouts:

- CSV or TSV with a header: ``params`` (element count; aliases ``numel``, ``parameters``,
  ``elements``, ``size``), optional ``name`` and ``macs`` (forward multiply-accumulates per
  sample owned by the tensor: in × out × tokens for a linear weight,
  C_out·C_in·k_h·k_w·H_out·W_out for a convolution, 0 for biases and norms). With ``macs`` on
  every row, backward time is split over the layers by MACs (as for the presets); without, by
  size.
- JSON: a list of objects with the same keys, or ``{"layers": [...]}``.

Written from PyTorch with::

    print("name,params")
    for n, p in model.named_parameters():
        if p.requires_grad:
            print(f"{n},{p.numel()}")

Errors: :class:`~xpuperf.errors.InputError` naming the file and line (exit 2).
"""

from __future__ import annotations

import csv
import json
import math
import stat
from pathlib import Path

from xpuperf.costmodel.workloads import Workload
from xpuperf.errors import InputError

MAX_BYTES = 16 << 20
"""Largest layer file read (16 MiB)."""
MAX_ROWS = 100_000
"""Most parameter tensors taken (the largest models have a few thousand)."""
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
    if not str(path).strip():
        raise InputError("--layers path is empty; give the layer file")
    p = Path(path)
    try:
        info = p.stat()
    except OSError as exc:
        raise InputError(f"cannot read the layer file: {exc.strerror or exc}", str(p)) from exc
    if not stat.S_ISREG(info.st_mode):
        raise InputError("not a regular file; give a CSV, TSV or JSON layer file", str(p))
    if info.st_size > MAX_BYTES:
        raise InputError(f"layer file of {info.st_size:,} bytes is over {MAX_BYTES >> 20} MiB",
                         str(p))  # fmt: skip
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
    if use_macs and not math.isfinite(sum(macs)):  # type: ignore[arg-type]
        raise InputError("the macs add up to more than a float holds (1.8e308); give forward "
                         "MACs per sample, per tensor", str(p))  # fmt: skip
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
    """(line, "", row) of a CSV/TSV with a header (the first non-blank line; tab-separated when
    it holds a tab); blank lines skipped; a row with another number of fields than the header
    is refused."""
    lines = text.splitlines()
    start = next((i for i, x in enumerate(lines) if x.strip()), None)
    if start is None:
        return []
    sep = "\t" if "\t" in lines[start] else ","
    reader = csv.reader(lines[start:], delimiter=sep, strict=True)
    try:
        header = [str(c).strip().lower() for c in next(reader)]
        names = _columns(header, p, start + 1)
        out = []
        for fields in reader:
            line = start + reader.line_num
            if not any(f.strip() for f in fields):
                continue
            if len(fields) != len(header):
                raise InputError(f"{len(fields)} fields, the header has {len(header)}; {HINT}",
                                 str(p), line)  # fmt: skip
            if len(out) >= MAX_ROWS:
                raise InputError(f"more than {MAX_ROWS:,} tensors", str(p), line)
            out.append((line, "", dict(zip(names, fields, strict=True))))
    except csv.Error as exc:
        raise InputError(f"not a CSV/TSV table ({exc}); {HINT}", str(p),
                         start + reader.line_num) from exc  # fmt: skip
    return out


def _columns(header: list[str], p: Path, line: int | None, label: str = "") -> list[str]:
    """Header names with aliases resolved; a role given twice or no ``params`` is refused."""
    names = [ALIASES.get(c, c) for c in header]
    for role in ("name", "params", "macs"):
        given = [h for h, n in zip(header, names, strict=True) if n == role]
        if len(given) > 1:
            raise InputError(f"{label}{role} given twice ({', '.join(given)}); keep one",
                             str(p), line)  # fmt: skip
    if "params" not in names:
        raise InputError(f"{label}no 'params' column (columns: {', '.join(header)}); {HINT}",
                         str(p), line)  # fmt: skip
    return names


def _json_rows(text: str, p: Path) -> list[Row]:
    """(None, "layer k: ", row) of a JSON list of objects (or ``{"layers": [...]}``)."""
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError) as exc:
        why = "a number of more than 4300 digits" if "digits" in str(exc) else str(exc)
        raise InputError(f"not valid JSON ({why}); {HINT}", str(p)) from exc
    layers = doc.get("layers") if isinstance(doc, dict) else doc
    if not isinstance(layers, list):
        raise InputError(f"JSON must be a list of layers or {{\"layers\": [...]}}; {HINT}",
                         str(p))  # fmt: skip
    if len(layers) > MAX_ROWS:
        raise InputError(f"{len(layers):,} layers: more than {MAX_ROWS:,} tensors", str(p))
    out = []
    for i, rec in enumerate(layers):
        label = f"layer {i + 1}: "
        if not isinstance(rec, dict):
            raise InputError(f"{label}not an object; {HINT}", str(p))
        keys = [str(k).strip().lower() for k in rec]
        names = _columns(keys, p, None, label)
        out.append((None, label, dict(zip(names, rec.values(), strict=True))))
    return out


def _number(v: object) -> float | None:
    if isinstance(v, bool):
        return None
    try:
        if isinstance(v, int | float):
            return float(v)
        return float(str(v).strip().replace("_", ""))
    except (ValueError, OverflowError):
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
