"""Binding given as data: per-rank CPU lists (CSV/TSV, YAML, JSON) and a launcher config (YAML).

``cpus`` — per-rank CPU lists, one entry per rank::

    rank,cpus,host,local_rank,membind        # CSV/TSV header (case-insensitive; only rank or
    0,"0-11,24-35",node01,0,0                # local_rank, and cpus, are required). An unquoted
    1,12-23 36-47                            # cpus column may hold commas when it is the last one

    - {rank: 0, cpus: "0-11,24-35", membind: 0}      # YAML/JSON: a list, or {ranks: [...]}
    - {local_rank: 1, cpus: [12, 13, 14]}            # by local rank: applies to every node
                                                     # (or to the node named by host)

Instead of ``cpus`` an entry may give ``cpunodebind`` (NUMA node ids, as numactl takes them).

``launcher`` — how the job is started (YAML with a ``launcher:`` key)::

    launcher: torchrun
    command: torchrun --nproc-per-node=8 --numa-binding=node train.py   # or the keys below
    numa_binding: node          # torchrun --numa-binding: node or exclusive; absent: no binding
    local_ranks:                # or a wrapper per local rank (numactl / taskset prefixes):
      - numactl --cpunodebind=0 --membind=0
      - taskset -c 16-31
      - {cpus: "32-47", membind: 1}

``numa_binding: node`` binds local rank i to every CPU of the NUMA node of card i (torchrun's
documented behaviour); ``exclusive`` to a disjoint share of them. ``socket`` and
``core-complex`` need socket and L3 layouts the topology does not describe and are refused.

Errors: :class:`~xpuperf.errors.InputError` with file:line (YAML, CSV) or the entry's path.
"""

from __future__ import annotations

import csv
import json
import re
from typing import Any

import yaml

from xpuperf.errors import InputError
from xpuperf.surrogates import clean_parsed
from xpuperf.topology.binding.launcher import TORCHRUN_MODES, parse_launcher
from xpuperf.topology.binding.records import (
    BindingFile,
    RankBinding,
    cpu_list,
    lines,
)
from xpuperf.topology.loader import _check_expanded_size

__all__ = ["TORCHRUN_MODES", "parse_cpus_table", "parse_launcher", "sniff_structured"]

_ALIASES = {
    "rank": "rank",
    "global_rank": "rank",
    "local_rank": "local_rank",
    "localrank": "local_rank",
    "cpus": "cpus",
    "cpu": "cpus",
    "cpu_list": "cpus",
    "cpuset": "cpus",
    "affinity": "cpus",
    "physcpubind": "cpus",
    "cpunodebind": "cpu_nodes",
    "nodebind": "cpu_nodes",
    "membind": "mem_nodes",
    "mem": "mem_nodes",
    "host": "host",
    "hostname": "host",
    "node": "host",
}


def sniff_structured(text: str) -> str | None:
    """``"launcher"``, ``"cpus"`` (YAML/JSON/CSV per-rank lists) or None."""
    head = text.lstrip()[:4096]
    first = next((ln for ln in head.splitlines() if ln.strip() and not ln.startswith("#")), "")
    if re.search(r"^launcher\s*:", head, re.M) or re.search(r'"launcher"\s*:', head):
        return "launcher"
    cols = {_ALIASES.get(h.strip().strip('"').lower()) for h in re.split(r"[,;\t]", first)}
    if cols & {"rank", "local_rank"} and cols & {"cpus", "cpu_nodes"}:
        return "cpus"  # a CSV/TSV header
    if re.search(r"(^|[\s{,\"])(local_)?rank\"?\s*:", head, re.M) and re.search(
        r"(cpus|cpunodebind)\"?\s*:", head
    ):
        return "cpus"
    return None


def _load(text: str, source: str) -> tuple[Any, dict[int, int]]:
    """Parsed YAML/JSON and, for YAML, list-item index → line of the top list."""
    stripped = text.lstrip()
    try:
        if stripped.startswith(("{", "[")):
            data = json.loads(text)
            _check_expanded_size(data, source)
            return clean_parsed(data, text), {}
        data = yaml.safe_load(text)
        _check_expanded_size(data, source)  # YAML aliases ("billion laughs")
        data = clean_parsed(data, text)
        root = yaml.compose(text)
    except json.JSONDecodeError as e:
        raise InputError(f"not valid JSON: {e.msg}", source, e.lineno) from None
    except RecursionError:
        raise InputError("nested too deeply to be a binding file", source) from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        problem = " ".join(str(getattr(e, "problem", None) or e).split())  # a ReaderError: 2 lines
        raise InputError(f"not valid YAML: {problem}", source, line) from None
    except ValueError as e:  # e.g. an integer of more than 4300 digits (int() refuses it)
        why = "a number has too many digits" if "digits" in str(e) else str(e)[:100]
        raise InputError(f"a value cannot be read: {why}", source) from None
    where: dict[int, int] = {}
    seq = root
    if isinstance(root, yaml.MappingNode):
        seq = next((v for k, v in root.value if k.value in ("ranks", "local_ranks")), None)
    if isinstance(seq, yaml.SequenceNode):
        where = {i: item.start_mark.line + 1 for i, item in enumerate(seq.value)}
    return data, where


def _entry(item: Any, source: str, line: int | None, path: str) -> RankBinding:
    """One mapping ``{rank|local_rank, cpus|cpunodebind, membind?, host?}``."""
    if not isinstance(item, dict):
        raise InputError(
            f"{path}: expected a mapping with rank and cpus, got {item!r}", source, line
        )
    got: dict[str, Any] = {}
    for k, v in item.items():
        key = _ALIASES.get(str(k).strip().lower())
        if key is None:
            raise InputError(
                f"{path}.{k}: unknown key (allowed: rank, local_rank, cpus, cpunodebind, "
                "membind, host)",
                source,
                line,
            )
        got[key] = v
    return _record(got, source, line, path)


def _at(path: str, what: str) -> str:
    """``ranks[0]`` + ``rank`` → ``ranks[0].rank``; a CSV row has no path."""
    return f"{path}.{what}" if path else what


def _as_int(v: Any, source: str, line: int | None, what: str) -> int | None:
    if v is None or v == "":
        return None
    text = str(v).strip() if isinstance(v, (int, str)) and not isinstance(v, bool) else ""
    if not re.fullmatch(r"[0-9]{1,30}", text):  # ASCII digits only: int() refuses "²"
        raise InputError(f"{what} must be a whole number >= 0, got {v!r:.60}", source, line)
    return int(text)


def _ids(v: Any, source: str, line: int | None, what: str) -> tuple[int, ...] | None:
    if v is None or v == "":
        return None
    if isinstance(v, list):
        v = ",".join(str(x) for x in v)
    return cpu_list(str(v), source, line, what)


def _record(got: dict[str, Any], source: str, line: int | None, path: str) -> RankBinding:
    rank = _as_int(got.get("rank"), source, line, _at(path, "rank"))
    local = _as_int(got.get("local_rank"), source, line, _at(path, "local_rank"))
    where = f"{path}: " if path else ""
    if rank is None and local is None:
        raise InputError(f"{where}give rank (or local_rank)", source, line)
    cpus = _ids(got.get("cpus"), source, line, "cpus")
    nodes = _ids(got.get("cpu_nodes"), source, line, "cpunodebind")
    if (cpus is None) == (nodes is None):
        raise InputError(f"{where}give exactly one of cpus or cpunodebind", source, line)
    mem = _ids(got.get("mem_nodes"), source, line, "membind")
    host = got.get("host")
    return RankBinding(rank, cpus, nodes, mem, False, local, str(host) if host else None, line)


def parse_cpus_table(text: str, source: str) -> BindingFile:
    """Per-rank CPU lists as CSV/TSV, YAML or JSON (module docstring)."""
    out = BindingFile(source, "cpus")
    first = next((ln for ln in text.splitlines() if ln.strip() and not ln.startswith("#")), "")
    if not first.lstrip().startswith(("-", "{", "[")) and ":" not in first:
        out.entries = _csv(text, source)
    else:
        data, where = _load(text, source)
        if isinstance(data, dict) and "ranks" in data:
            data = data["ranks"]
        if not isinstance(data, list) or not data:
            raise InputError("expected a list of {rank, cpus} entries (or ranks: [...])", source)
        out.entries = [_entry(x, source, where.get(i), f"ranks[{i}]") for i, x in enumerate(data)]
    return out


def _csv(text: str, source: str) -> list[RankBinding]:
    rows = ((k, ln) for k, ln in lines(text) if ln.strip() and not ln.lstrip().startswith("#"))
    try:
        k0, header_line = next(rows)
    except StopIteration:
        raise InputError("empty binding table", source) from None
    delim = "\t" if "\t" in header_line else ";" if ";" in header_line else ","
    header = [h.strip().lower() for h in next(csv.reader([header_line], delimiter=delim))]
    cols = [_ALIASES.get(h) for h in header]
    if "cpus" not in cols and "cpu_nodes" not in cols:
        raise InputError(f"header {header_line!r} has no cpus column", source, k0)
    out = []
    for k, ln in rows:
        fields = next(csv.reader([ln], delimiter=delim))
        if len(fields) > len(cols) and cols[-1] in ("cpus", "cpu_nodes", "mem_nodes"):
            fields = [*fields[: len(cols) - 1], ",".join(fields[len(cols) - 1 :])]
        if len(fields) != len(cols):
            raise InputError(
                f"{len(fields)} fields for {len(cols)} columns; quote a CPU list that holds "
                'commas ("0-11,24-35") or separate its ranges with spaces',
                source,
                k,
            )
        got = {c: f.strip() for c, f in zip(cols, fields, strict=True) if c is not None}
        out.append(_record(got, source, k, ""))
    if not out:
        raise InputError("binding table has a header but no rows", source, k0)
    return out
