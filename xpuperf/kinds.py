"""What kind of xpuperf input a file is, so that a subcommand handed the wrong file can say which
one reads it.

People paste whatever their cluster printed. When a subcommand cannot read a file,
:func:`other_kind` looks at its first 64 KiB for the inputs xpuperf reads, in this order:

==========================================  ====================================================
nccl-tests output (``# … busbw``)            ``xpuperf calibrate``
topology dumps (``nvidia-smi topo -m``,      ``xpuperf topo check`` / ``topo import``
``numactl -H``, ``lscpu``, ``npu-smi info``,
NCCL topology XML, ``rocm-smi --showtopo``,
HCCL rank tables)
NCCL_DEBUG=INFO/WARN logs                    ``xpuperf analyze`` (its NCCL section)
scaling tables (cards vs throughput)         ``xpuperf analyze`` (its scaling report)
framework training logs (``xpuperf formats``) ``xpuperf analyze``
==========================================  ====================================================

:func:`pointed` rewords an :class:`~xpuperf.errors.InputError` with that pointer. Never raises
on content: unreadable files give None. Used by :mod:`xpuperf.pipeline` and the CLI (it imports
readers, calibrate and topology, so none of those may import it).
"""

from __future__ import annotations

import gzip
from pathlib import Path

from xpuperf.errors import InputError

HEAD_BYTES = 64 << 10
_NCCL_TESTS = ("# Avg bus bandwidth", "out-of-place", "#  Rank ", "# nThread ")
_GENERIC = {"csv", "tsv", "jsonl", "parquet"}
_TOOL = {"nvidia-smi": "nvidia-smi topo -m", "numactl": "numactl -H", "npu-smi": "npu-smi info",
         "nccl-xml": "NCCL topology XML", "rocm-smi": "rocm-smi --showtopo",
         "hccl-ranktable": "HCCL rank table"}  # fmt: skip

ANALYZE, CALIBRATE, TOPO = "xpuperf analyze", "xpuperf calibrate", "xpuperf topo"

WHAT_ANALYZE_READS = (
    "xpuperf analyze reads per-rank step logs (CSV/TSV/JSONL/Parquet with step and time or "
    "throughput columns, and the framework logs `xpuperf formats` lists), NCCL_DEBUG=INFO logs "
    "and scaling tables (cards vs throughput); topology dumps go to `xpuperf topo import`, "
    "nccl-tests output to `xpuperf calibrate`"
)


def _head(path: Path) -> str:
    try:
        if not path.is_file():
            return ""
        with path.open("rb") as fh:
            gz = fh.read(2) == b"\x1f\x8b"
        opener = gzip.open if gz else open
        with opener(path, "rb") as fh:  # type: ignore[operator]
            raw = fh.read(HEAD_BYTES)
    except (OSError, EOFError, gzip.BadGzipFile):
        return ""
    return raw.decode("utf-8", "replace")


def kind_of(path: str | Path) -> tuple[str, str] | None:
    """``(what it is, the subcommand that reads it)`` for ``path``, or None when it is none of
    the kinds in the module docstring."""
    p = Path(path)
    text = _head(p)
    if not text:
        return None
    if any(m in text for m in _NCCL_TESTS) and ("busbw" in text or "algbw" in text):
        return "nccl-tests output", CALIBRATE
    from xpuperf.topology.importers import IMPORTERS

    for name, mod in IMPORTERS.items():
        try:
            hit = mod.sniff(text)
        except Exception:  # a sniffer's bug must not hide the user's real error
            hit = False
        if hit:
            return f"a topology dump ({_TOOL.get(name, name)} output)", TOPO
    if "NCCL INFO " in text or "NCCL WARN " in text:
        return "an NCCL debug log", ANALYZE
    from xpuperf.readers.scaling import looks_like_scaling_table

    if looks_like_scaling_table(p):
        return "a scaling table (cards vs throughput)", ANALYZE
    from xpuperf.readers import FORMATS

    lines = text.splitlines()[:200]
    for f in FORMATS:
        if f.name not in _GENERIC and not f.binary and not f.extensions and f.sniff(lines):
            return f"a {f.name} training log", ANALYZE
    return None


def other_kind(path: str | Path, reader: str = ANALYZE) -> str | None:
    """A one-line pointer to the subcommand that reads ``path`` (e.g. "this is a topology dump
    (nvidia-smi topo -m output): audit it with `xpuperf topo check FILE` …"), or None when it
    is none of the known kinds or ``reader`` itself reads that kind."""
    got = kind_of(path)
    if got is None or got[1] == reader:
        return None
    what, command = got
    if command == TOPO:
        how = (
            f"audit it with `xpuperf topo check {path}` or turn it into a description file "
            f"with `xpuperf topo import {path}`"
        )
    elif command == CALIBRATE:
        how = (
            f"measure the links with `xpuperf calibrate {path}` (add --topology to compare with "
            "what the links should give)"
        )
    else:
        how = f"read it with `xpuperf analyze {path}`"
    return f"this is {what}: {how}"


def pointed(exc: InputError, reader: str) -> InputError:
    """``exc`` with a pointer to the right subcommand when its file is another kind of input
    (:func:`other_kind`), else ``exc`` unchanged (also when its message already names that
    subcommand)."""
    if exc.path is None:
        return exc
    got = kind_of(exc.path)
    if got is None or got[1] == reader or got[1] in exc.message:
        return exc  # not another kind, or the message already names the subcommand
    hint = other_kind(exc.path, reader)
    if hint is None:
        return exc
    return InputError(f"not an input for `{reader}`: {hint}", exc.path)
