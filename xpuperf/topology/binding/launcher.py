"""Binding given as a launcher config (YAML with a ``launcher:`` key): torchrun's
``--numa-binding`` or a numactl/taskset wrapper per local rank.

The format is described in :mod:`xpuperf.topology.binding.tables` (``launcher``), which
re-exports :func:`parse_launcher` and :data:`TORCHRUN_MODES`.

Errors: :class:`~xpuperf.errors.InputError` with file:line or the key's path.
"""

from __future__ import annotations

import re
import shlex
from typing import Any

import yaml

from xpuperf.errors import InputError
from xpuperf.topology.binding.records import BindingFile, RankBinding, cpu_list, hex_mask, node_list

TORCHRUN_MODES = ("node", "exclusive")
_NUMA_FLAG = re.compile(r"^--numa[-_]binding(?:=(.*))?$")
_NPROC_FLAG = re.compile(r"^--nproc[-_]per[-_]node(?:=(.*))?$")


def parse_launcher(text: str, source: str) -> BindingFile:
    """A launcher config (format: :mod:`~xpuperf.topology.binding.tables`): entries by local rank,
    for every node."""
    from xpuperf.topology.binding.tables import _entry, _load  # tables imports this module

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
