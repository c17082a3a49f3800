"""What kind of xpuperf input a file is, so that a subcommand handed the wrong file can say which
one reads it.

People paste whatever their cluster printed. When a subcommand cannot read a file,
:func:`other_kind` looks at its first 64 KiB for the inputs xpuperf reads, in this order:

==========================================  ====================================================
nccl-tests output (``# … busbw``)            ``xpuperf calibrate``
Gaudi ``hccl_demo`` output                  ``xpuperf calibrate``
(``[BENCHMARK]``, ``SUMMARY REPORT``)
topology dumps (``nvidia-smi topo -m``,      ``xpuperf topo check`` / ``topo import``
``numactl -H``, ``lscpu``, ``npu-smi info``,
NCCL topology XML, ``rocm-smi --showtopo``,
HCCL rank tables)
NCCL_DEBUG=INFO/WARN logs                    ``xpuperf analyze`` (its NCCL section)
scaling tables (cards vs throughput)         ``xpuperf analyze`` (its scaling report)
framework training logs (``xpuperf formats``) ``xpuperf analyze``
step tables (CSV/TSV/JSONL header naming a   ``xpuperf analyze``
step column and a time or throughput column)
training output with framework warnings      ``xpuperf analyze`` (its framework-warning checks)
(tqdm ``it/s]``, Lightning ``GLOBAL_RANK``,
``[rankN]:``, DDP ``find_unused_parameters``)
==========================================  ====================================================

:func:`pointed` rewords an :class:`~xpuperf.errors.InputError` with that pointer. Never raises
on content: unreadable files give None. Used by :mod:`xpuperf.pipeline` and the CLI (it imports
readers, calibrate and topology, so none of those may import it).
"""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

from xpuperf.errors import InputError

HEAD_BYTES = 64 << 10
_NCCL_TESTS = ("# Avg bus bandwidth", "out-of-place", "#  Rank ", "# nThread ")
_GENERIC = {"csv", "tsv", "jsonl", "parquet"}
_TOOL = {"nvidia-smi": "nvidia-smi topo -m", "numactl": "numactl -H", "npu-smi": "npu-smi info",
         "nccl-xml": "NCCL topology XML", "rocm-smi": "rocm-smi --showtopo",
         "hccl-ranktable": "HCCL rank table", "nvidia-smi-nvlink": "nvidia-smi nvlink -s",
         "npu-smi-topo": "npu-smi info -t topo", "mx-smi": "mx-smi topo -m"}  # fmt: skip
GRAPH_DUMP = "an NCCL graph dump (NCCL_GRAPH_DUMP_FILE: the rings and trees NCCL chose)"
"""What a ``<graphs>`` file is: not a topology and not a step log."""

ANALYZE, CALIBRATE, TOPO = "xpuperf analyze", "xpuperf calibrate", "xpuperf topo"
_STEP_ROLES = ("step_time_s", "t_end_s", "step_rate", "throughput")
_TRAINING = re.compile(
    r"\d+(?:\.\d+)?(?:it/s|s/it)[,\]]|GLOBAL_RANK: \d|\[rank\d+\]:|find_unused_parameters"
    r"|persistent_workers|torch\.distributed|DataLoader worker"
)

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
    from xpuperf.calibrate.hccldemo import sniff as hccl_demo

    if hccl_demo(text):
        return "Intel Gaudi hccl_demo output", CALIBRATE
    from xpuperf.topology.importers import IMPORTERS

    for name, mod in IMPORTERS.items():
        try:
            hit = mod.sniff(text)
        except Exception:  # a sniffer's bug must not hide the user's real error
            hit = False
        if hit and name == "nccl-graph":
            return GRAPH_DUMP, TOPO
        if hit:
            return f"a topology dump ({_TOOL.get(name, name)} output)", TOPO
    if "NCCL INFO " in text or "NCCL WARN " in text:
        return "an NCCL debug log", ANALYZE
    from xpuperf.readers.scaling import sniff_scaling_table

    if sniff_scaling_table(p) is not None:  # one row too: analyze says what it lacks
        return "a scaling table (cards vs throughput)", ANALYZE
    from xpuperf.readers import FORMATS

    lines = text.splitlines()[:200]
    for f in FORMATS:
        if f.name not in _GENERIC and not f.binary and f.sniff(lines):
            return f"a {f.name} step log" if f.extensions else f"a {f.name} training log", ANALYZE
    if table := _step_table(lines):
        return table, ANALYZE
    if _TRAINING.search(text):
        return "a training log (framework output)", ANALYZE
    return None


def _step_table(lines: list[str]) -> str | None:
    """What the file is ("a step log (CSV with columns …)") when the first line of a CSV, TSV or
    JSON Lines table names a step column and a step time, timestamp, rate or throughput column
    (:mod:`xpuperf.readers.columns`); else None."""
    from xpuperf.readers import columns as colmod

    first = next((x.strip() for x in lines if x.strip() and not x.startswith("#")), "")
    if first.startswith("{"):
        try:
            row = json.loads(first)
        except (ValueError, RecursionError):
            return None
        names, kind = (list(row) if isinstance(row, dict) else []), "JSON Lines"
    else:
        sep, kind = ("\t", "TSV") if "\t" in first else (",", "CSV")
        names = [c.strip().strip('"') for c in first.split(sep)]
    found = colmod.resolve(names)
    timed = next((found[r][0].column for r in _STEP_ROLES if found.get(r)), None)
    if len(names) < 2 or not found.get("step") or timed is None:
        return None
    return f"a step log ({kind} with columns {found['step'][0].column}, {timed})"


def other_kind(path: str | Path, reader: str = ANALYZE) -> str | None:
    """A one-line pointer to the subcommand that reads ``path`` (e.g. "this is a topology dump
    (nvidia-smi topo -m output): audit it with `xpuperf topo check FILE` …"), or None when it
    is none of the known kinds or ``reader`` itself reads that kind."""
    got = kind_of(path)
    return None if got is None or got[1] == reader else _pointer(path, *got)


def _pointer(path: str | Path, what: str, command: str) -> str:
    """``this is WHAT: how to read it with COMMAND``."""
    if what == GRAPH_DUMP:
        how = (
            "xpuperf reads the topology NCCL saw instead: rerun with NCCL_TOPO_DUMP_FILE=topo.xml "
            "and pass that file to `xpuperf topo import`"
        )
    elif command == TOPO:
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
    got = kind_of(exc.path)  # the file's head is read and sniffed once
    if got is None or got[1] == reader or f"`{got[1]}" in exc.message:
        return exc  # not another kind, or the message already names the subcommand
    return InputError(f"not an input for `{reader}`: {_pointer(exc.path, *got)}", exc.path)


def clip(text: str, limit: int) -> str:
    """``text`` cut to about ``limit`` characters at a word boundary, ending in ``…``; a
    `command` in backticks is never cut: one that the limit falls inside is kept whole (it is
    what the user copies) and the rest dropped."""
    if len(text) <= limit:
        return text
    cut = text[:limit]
    if cut.count("`") % 2:  # inside a command: keep it to its closing backtick
        end = text.find("`", limit)
        return text if end < 0 else text[: end + 1] + " …"
    cut = cut[: cut.rfind(" ")] if " " in cut else cut
    return cut.rstrip(" ,;:(") + " …"
