"""Parsers for what tools print about a process's binding, one line at a time.

Every line first loses launcher noise with :func:`xpuperf.readers.formats.console.clean`: ANSI
codes and a rank tag (``[rank3]:``, ``[default3]:``, ``[1,3]<stdout>:``, ``3: `` from
``srun -l``) that gives the rank of the line.

Formats (``NAME``: what is read):

- ``numactl``: ``numactl --show`` blocks (``policy:``, ``preferred node:``, ``physcpubind:``,
  ``cpubind:``, ``nodebind:``, ``membind:``), one per rank. A block's rank is its lines' rank tag,
  else a preceding ``rank N`` line, else its position in the file. ``membind`` counts only under
  ``policy: bind``, ``preferred node`` only under ``policy: preferred``.
- ``taskset``: ``pid 123's current affinity list: 0-23`` (``taskset -cp``) or ``… affinity mask:
  ffffff`` (``taskset -p``); a ``new affinity`` line for the same pid replaces the current one.
  Rank: the line's tag, else the pid's order of appearance.
- ``slurm``: ``cpu-bind=MASK - node01, task  3  3 [4242]: mask 0x30 set`` (``srun
  --cpu-bind=verbose``; ``cpu_bind=`` in older Slurm): task id = rank, the second number the
  local task id, the mask the CPUs.
- ``openmpi``: ``[host:pid] MCW rank 3 bound to socket 0[core 0[hwt 0-1]]: [BB/../..][../../..]``
  (Open MPI 1.8–4.x ``--report-bindings``: read from the picture, one bracket per socket, cores
  split by ``/``, one character per hardware thread, ``B`` bound), ``[host:pid] Rank 3 bound to
  package[0][core:0-3]`` (Open MPI 5 / PRRTE; ``core:L0`` logical ids too) and ``… is not bound``.
  Open MPI numbers cores logically (hwloc); they are read as OS CPU ids the way Linux numbers
  them on common servers: core k's first hardware thread is CPU k and its SMT twin CPU k + C (C =
  all cores). ``package[…][hwt:…]`` lists are refused (threads per core unknown).

Errors: :class:`~xpuperf.errors.InputError` with file:line for a line that matches a format but
cannot be read, a rank given twice, or a file with no binding line.
"""

from __future__ import annotations

import re

from xpuperf.errors import InputError
from xpuperf.readers.formats.console import clean
from xpuperf.topology.binding.records import (
    BindingFile,
    RankBinding,
    cpu_list,
    hex_mask,
    lines,
    node_list,
)

_NUMACTL_KEY = re.compile(
    r"^\s*(policy|preferred node|preferred|physcpubind|cpubind|nodebind|membind):(.*)$"
)  # the value is stripped in code: `(.*?)\s*$` is quadratic on a long blank run (as in lscpu)
_RANK_LINE = re.compile(r"^\W*(?:global[_ ]?)?rank\s*(?:[=:#]\s*)?(\d+)\W*$", re.I)
_TASKSET = re.compile(
    r"pid\s+(\d+)'s\s+(current|new)\s+affinity\s+(list|mask):\s*(\S(?:.*\S)?)\s*$", re.I
)
_SLURM = re.compile(
    r"cpu[-_]bind(?:[-_]\w+)?=(\w+)\s+-\s+(\S+?),\s+task\s+(\d+)\s+(\d+)\s+\[(\d+)\]:\s+"
    r"mask\s+(0x[0-9a-fA-F,]+)\s+set"
)
_OMPI = re.compile(r"\[([^\[\]:]+)(?::\d+)?\]\s+(?:MCW\s+)?rank\s+(\d+)\s+(.*)$", re.I)
_PICTURE = re.compile(r":\s*((?:\[[^\[\]]*\])+)\s*$")
_PACKAGE = re.compile(r"package\[(\d+)\]\[(core|hwt):([^\]]*)\]")


def sniff(text: str) -> str | None:
    """The name of the line format of ``text`` (see the module docstring), or None."""
    head = text[:200_000]
    if _SLURM.search(head):
        return "slurm"
    if re.search(r"\]\s+(?:MCW\s+)?rank\s+\d+\s+(?:bound to|is not bound)", head, re.I):
        return "openmpi"
    if _TASKSET.search(head):
        return "taskset"
    if re.search(r"^.*physcpubind:", head, re.M):
        return "numactl"
    return None


def _by_order(out: BindingFile, tagged: int, what: str) -> None:
    if tagged == 0 and out.entries:
        out.notes.append(
            f"{out.source}: no rank tags; the {len(out.entries)} {what} are taken as ranks "
            f"0-{len(out.entries) - 1} in file order"
        )


def _check_unique(out: BindingFile) -> None:
    seen: dict[int, int | None] = {}
    for e in out.entries:
        if e.rank in seen:
            raise InputError(
                f"rank {e.rank} is given twice (also at line {seen[e.rank]}); give each rank's "
                "binding once",
                out.source,
                e.line,
            )
        seen[e.rank] = e.line


def parse_numactl(text: str, source: str) -> BindingFile:
    """``numactl --show`` blocks (module docstring)."""
    out = BindingFile(source, "numactl")
    blocks: list[dict] = []
    pending_rank: int | None = None
    for k, raw in lines(text):
        tag, line = clean(raw)
        if m := _RANK_LINE.match(line):
            pending_rank = int(m.group(1))
            continue
        m = _NUMACTL_KEY.match(line)
        if m is None:
            continue
        key, value = m.group(1), m.group(2).strip()
        cur = blocks[-1] if blocks else None
        new = cur is None or key in cur or (tag is not None and cur.get("tag") != tag)
        if new:
            cur = {"line": k, "tag": tag, "rank": tag if tag is not None else pending_rank}
            pending_rank = None
            blocks.append(cur)
        cur[key] = (value, k)
    if not blocks:
        raise InputError("no `numactl --show` lines (physcpubind: …) found", source)
    tagged = sum(b["rank"] is not None for b in blocks)
    if 0 < tagged < len(blocks):
        b = next(b for b in blocks if b["rank"] is None)
        raise InputError(
            "some numactl --show blocks carry a rank and this one does not; tag every block",
            source,
            b["line"],
        )
    for i, b in enumerate(blocks):
        if "physcpubind" not in b and "cpubind" not in b and "nodebind" not in b:
            raise InputError("numactl --show block without physcpubind/cpubind", source, b["line"])
        cpus = nodes = mem = None
        if "physcpubind" in b:
            v, ln = b["physcpubind"]
            cpus = cpu_list(v, source, ln, "physcpubind")
        else:
            v, ln = b.get("cpubind") or b["nodebind"]
            nodes = node_list(v, source, ln, "cpubind")
        policy = b.get("policy", ("default", None))[0].lower()
        if policy == "bind" and "membind" in b:
            mem = node_list(b["membind"][0], source, b["membind"][1], "membind")
        elif policy == "preferred":
            v, ln = b.get("preferred node") or b.get("preferred") or ("", b["line"])
            if re.fullmatch(r"[0-9]+", v.strip()):
                mem = (int(v),)
        rank = b["rank"] if b["rank"] is not None else i
        out.entries.append(RankBinding(rank, cpus, nodes, mem, line=b["line"]))
    _by_order(out, tagged, "numactl --show blocks")
    _check_unique(out)
    return out


def parse_taskset(text: str, source: str) -> BindingFile:
    """``taskset -cp`` / ``taskset -p`` lines (module docstring)."""
    out = BindingFile(source, "taskset")
    by_pid: dict[int, tuple[int | None, tuple[int, ...], int]] = {}
    for k, raw in lines(text):
        tag, line = clean(raw)
        m = _TASKSET.search(line)
        if m is None:
            continue
        pid, kind, value = int(m.group(1)), m.group(3).lower(), m.group(4)
        if kind == "list":
            cpus = cpu_list(value, source, k, "affinity list")
        else:
            cpus = hex_mask(value, source, k)
        if pid in by_pid and m.group(2).lower() == "current" and by_pid[pid][0] == tag:
            raise InputError(f"pid {pid} is listed twice; one line per process", source, k)
        by_pid[pid] = (tag, cpus, k)
    if not by_pid:
        raise InputError("no `pid N's current affinity list: …` lines found", source)
    tagged = sum(t is not None for t, _, _ in by_pid.values())
    for i, (tag, cpus, k) in enumerate(by_pid.values()):
        if 0 < tagged < len(by_pid) and tag is None:
            raise InputError("this taskset line has no rank tag but others do", source, k)
        out.entries.append(RankBinding(tag if tag is not None else i, cpus, line=k))
    _by_order(out, tagged, "taskset lines")
    _check_unique(out)
    return out


def parse_slurm(text: str, source: str) -> BindingFile:
    """``srun --cpu-bind=verbose`` lines (module docstring)."""
    out = BindingFile(source, "slurm")
    for k, raw in lines(text):
        _, line = clean(raw)
        m = _SLURM.search(line)
        if m is None:
            continue
        cpus = hex_mask(m.group(6), source, k)
        out.entries.append(
            RankBinding(int(m.group(3)), cpus, local_rank=int(m.group(4)), host=m.group(2), line=k)
        )
    if not out.entries:
        raise InputError("no `cpu-bind=… task N N [pid]: mask 0x… set` lines found", source)
    _check_unique(out)
    return out


def parse_openmpi(text: str, source: str) -> BindingFile:
    """Open MPI ``--report-bindings`` lines, old picture and new package styles (docstring)."""
    out = BindingFile(source, "openmpi")
    for k, raw in lines(text):
        _, line = clean(raw)
        m = _OMPI.search(line)
        if m is None:
            continue
        host, rank, rest = m.group(1), int(m.group(2)), m.group(3)
        if rest.lower().startswith("is not bound"):
            out.entries.append(RankBinding(rank, unbound=True, host=host, line=k))
            continue
        if not rest.lower().startswith("bound to"):
            continue
        if pic := _PICTURE.search(rest):
            cpus = _picture_cpus(pic.group(1), source, k)
        elif pk := _PACKAGE.findall(rest):
            cpus = _package_cpus(pk, source, k)
        else:
            raise InputError(
                "Open MPI binding line without a [BB/..] picture or package[N][core:…] list",
                source,
                k,
            )
        out.entries.append(RankBinding(rank, cpus, host=host, line=k))
    if not out.entries:
        raise InputError("no Open MPI `rank N bound to …` lines found", source)
    _check_unique(out)
    return out


def _picture_cpus(pic: str, source: str, k: int) -> tuple[int, ...]:
    """``[BB/..][../..]`` → OS CPU ids: core k thread t is CPU k + t × (all cores)."""
    sockets = [s.split("/") for s in re.findall(r"\[([^\[\]]*)\]", pic)]
    cores = [c for s in sockets for c in s]
    widths = {len(c) for c in cores}
    if not cores or len(widths) != 1 or 0 in widths:
        raise InputError(f"cannot read the binding picture {pic[:60]!r}", source, k)
    total = len(cores)
    out = [i + t * total for i, c in enumerate(cores) for t, ch in enumerate(c) if ch == "B"]
    if not out:
        raise InputError(f"the binding picture {pic[:60]!r} marks no CPU (B)", source, k)
    return tuple(sorted(out))


def _package_cpus(found: list[tuple[str, str, str]], source: str, k: int) -> tuple[int, ...]:
    out: set[int] = set()
    for _, kind, ids in found:
        if kind == "hwt":
            raise InputError(
                "package[…][hwt:…] bindings cannot be mapped to CPU ids (threads per core "
                "unknown); give numactl --show or taskset -cp output from inside the job",
                source,
                k,
            )
        out.update(cpu_list(ids.replace("L", ""), source, k, "core list"))
    return tuple(sorted(out))


PARSERS = {
    "numactl": parse_numactl,
    "taskset": parse_taskset,
    "slurm": parse_slurm,
    "openmpi": parse_openmpi,
}
