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
import shlex
from typing import Any

import yaml

from xpuperf.errors import InputError
from xpuperf.topology.binding.records import (
    BindingFile,
    RankBinding,
    cpu_list,
    hex_mask,
    lines,
    node_list,
)
from xpuperf.topology.loader import _check_expanded_size

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
TORCHRUN_MODES = ("node", "exclusive")
_NUMA_FLAG = re.compile(r"^--numa[-_]binding(?:=(.*))?$")
_NPROC_FLAG = re.compile(r"^--nproc[-_]per[-_]node(?:=(.*))?$")


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
            return data, {}
        data = yaml.safe_load(text)
        _check_expanded_size(data, source)  # YAML aliases ("billion laughs")
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


def parse_launcher(text: str, source: str) -> BindingFile:
    """A launcher config (module docstring): entries by local rank, for every node."""
    out = BindingFile(source, "launcher")
    data, where = _load(text, source)
    if not isinstance(data, dict) or "launcher" not in data:
        raise InputError("a launcher config is a mapping with a launcher: key", source)
    allowed = {"launcher", "command", "numa_binding", "nproc_per_node", "local_ranks"}
    extra = sorted(set(map(str, data)) - allowed)
    if extra:
        raise InputError(f"{extra[0]}: unknown key (allowed: {', '.join(sorted(allowed))})", source)
    at = _key_lines(text)
    _check_launcher_values(data, source, at)
    mode, nproc = data.get("numa_binding"), data.get("nproc_per_node")
    if data.get("command"):
        cmd_mode, cmd_nproc = _torchrun_flags(str(data["command"]), source)
        if mode is not None and cmd_mode is not None and str(mode) != cmd_mode:
            raise InputError(
                f"numa_binding: {mode} but the command says --numa-binding={cmd_mode}",
                source,
                at.get("numa_binding"),
            )
        mode = mode if mode is not None else cmd_mode
        nproc = nproc if nproc is not None else cmd_nproc
    if nproc is not None:
        nproc = _nproc(nproc, source, at.get("nproc_per_node", at.get("command")))
    wrappers = data.get("local_ranks")
    if mode is not None and wrappers:
        raise InputError("give numa_binding or local_ranks, not both", source)
    if mode is not None:
        mode = str(mode).strip().lower()
        if mode not in TORCHRUN_MODES:
            raise InputError(_bad_mode(mode), source, at.get("numa_binding", at.get("command")))
        share = " (disjoint shares)" if mode == "exclusive" else ""
        out.notes.append(
            f"{source}: torchrun --numa-binding={mode}: local rank i on card i's NUMA node{share}"
        )
        out.entries = [RankBinding(None, follow_card=mode)]
        out.nproc_per_node = nproc
        return out
    if not wrappers:
        out.entries = [RankBinding(None, unbound=True)]
        out.nproc_per_node = nproc
        out.notes.append(f"{source}: no numa_binding and no local_ranks: ranks are not bound")
        return out
    out.nproc_per_node = nproc
    for i, w in enumerate(wrappers):
        line = where.get(i)
        if isinstance(w, dict):
            e = _entry({"local_rank": i, **w}, source, line, f"local_ranks[{i}]")
        else:
            e = _wrapper(str(w), i, source, line)
        out.entries.append(e)
    return out


_UNBOUND = "or remove the key if the ranks are not bound"


def _key_lines(text: str) -> dict[str, int]:
    """Top-level key → its 1-based line (empty when the text does not compose as YAML)."""
    try:
        root = yaml.compose(text)
    except (yaml.YAMLError, RecursionError, ValueError):
        return {}
    if not isinstance(root, yaml.MappingNode):
        return {}
    return {str(k.value): k.start_mark.line + 1 for k, _ in root.value}


def _bad_mode(mode: Any) -> str:
    return (
        f"numa_binding: {mode!r:.60} is not audited (accepted: {', '.join(TORCHRUN_MODES)}, as "
        "torchrun --numa-binding; socket and core-complex need a socket/L3 layout the topology "
        f"does not have); write numa_binding: node, {_UNBOUND}"
    )


def _nproc(v: Any, source: str, line: int | None) -> int:
    """``nproc_per_node`` (key or ``--nproc-per-node``): a whole number >= 1."""
    text = str(v).strip() if isinstance(v, (int, str)) and not isinstance(v, bool) else ""
    if not re.fullmatch(r"[0-9]{1,9}", text) or int(text) < 1:
        raise InputError(
            f"nproc_per_node: expected a whole number >= 1 (processes per node, as torchrun "
            f"--nproc-per-node), got {v!r:.60}; give the number of ranks started on each node",
            source,
            line,
        )
    return int(text)


def _check_launcher_values(data: dict, source: str, at: dict[str, int]) -> None:
    """Refuse values of the launcher keys that would otherwise read as "not bound" (exit 2)."""
    name = data["launcher"]
    if not isinstance(name, str) or not name.strip():
        raise InputError(
            f"launcher: expected the launcher's name as text (torchrun, srun, mpirun, …), got "
            f"{name!r:.60}; write e.g. launcher: torchrun",
            source,
            at.get("launcher"),
        )
    if "command" in data and (not isinstance(data["command"], str) or not data["command"]):
        raise InputError(
            f"command: expected the launch command line as text, got {data['command']!r:.60}; "
            f"write e.g. command: torchrun --nproc-per-node=8 --numa-binding=node train.py, "
            f"{_UNBOUND}",
            source,
            at.get("command"),
        )
    if "numa_binding" in data:
        mode = data["numa_binding"]
        if not isinstance(mode, str) or mode.strip().lower() not in TORCHRUN_MODES:
            raise InputError(_bad_mode(mode), source, at.get("numa_binding"))
    if "local_ranks" in data:
        w = data["local_ranks"]
        if not isinstance(w, list) or not w:
            raise InputError(
                f"local_ranks: expected a non-empty list, one numactl/taskset wrapper (or "
                f"{{cpus, membind}}) per local rank, got {w!r:.60}; write e.g. local_ranks: "
                f'["numactl --cpunodebind=0 --membind=0", "taskset -c 16-31"], {_UNBOUND}',
                source,
                at.get("local_ranks"),
            )
    if "nproc_per_node" in data:
        _nproc(data["nproc_per_node"], source, at.get("nproc_per_node"))


def _split(cmd: str, source: str, line: int | None, what: str) -> list[str]:
    """``shlex.split`` with an InputError (not a ValueError) for an unbalanced quote."""
    try:
        return shlex.split(cmd)
    except ValueError as e:
        raise InputError(
            f"{what}: cannot split {cmd[:60]!r} into words: {e}", source, line
        ) from None


def _torchrun_flags(cmd: str, source: str) -> tuple[str | None, Any]:
    toks = _split(cmd, source, None, "command")
    mode = nproc = None
    for i, t in enumerate(toks):
        for rx, name in ((_NUMA_FLAG, "mode"), (_NPROC_FLAG, "nproc")):
            if m := rx.match(t):
                v = (
                    m.group(1)
                    if m.group(1) is not None
                    else (toks[i + 1] if i + 1 < len(toks) else None)
                )
                if name == "mode":
                    mode = v
                else:
                    nproc = v
    return mode, nproc


def _wrapper(cmd: str, local: int, source: str, line: int | None) -> RankBinding:
    """``numactl …`` / ``taskset -c …`` prefixes of one local rank's command."""
    toks = _split(cmd, source, line, f"local_ranks[{local}]")
    cpus = nodes = mem = None
    i, tool = 0, None
    while i < len(toks):
        t = toks[i]
        if t in ("numactl", "taskset") or t.endswith(("/numactl", "/taskset")):
            tool = t.rsplit("/", 1)[-1]
            i += 1
            continue
        if tool is None or not t.startswith("-"):
            if tool == "taskset" and cpus is None and re.fullmatch(r"(0x)?[0-9a-fA-F]+", t):
                cpus = hex_mask(t, source, line)
                i += 1
                continue
            if tool is not None:
                break
            i += 1
            continue
        opt, _, val = t.partition("=")
        takes = opt in ("--cpunodebind", "-N", "--physcpubind", "-C", "--membind", "-m",
                        "--preferred", "-p", "-c", "--cpu-list", "--interleave", "-i")  # fmt: skip
        if takes and not val:
            if i + 1 >= len(toks):
                raise InputError(f"local_ranks[{local}]: {opt} needs a value", source, line)
            val, i = toks[i + 1], i + 1
        if opt in ("--cpunodebind", "-N"):
            nodes = node_list(val, source, line, "cpunodebind")
        elif opt in ("--physcpubind", "-C") or (tool == "taskset" and opt in ("-c", "--cpu-list")):
            cpus = cpu_list(val, source, line, opt)
        elif opt in ("--membind", "-m", "--preferred", "-p") and tool == "numactl":
            mem = node_list(val, source, line, opt)
        i += 1
    if cpus is None and nodes is None:
        raise InputError(
            f"local_ranks[{local}]: {cmd[:60]!r} binds no CPUs; write e.g. numactl "
            "--cpunodebind=0 --membind=0 or taskset -c 0-15",
            source,
            line,
        )
    return RankBinding(
        None, cpus, nodes if cpus is None else None, mem, local_rank=local, line=line
    )
