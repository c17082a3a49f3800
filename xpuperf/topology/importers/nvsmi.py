"""Importer for ``nvidia-smi topo -m`` (NVIDIA driver tools; seen from driver 384 to 560+).

Input shape: a matrix whose header names the cards (``GPU0`` …) and NICs (``NIC0`` … with a
``NIC Legend`` mapping them to devices such as ``mlx5_0``; old drivers print ``mlx5_0`` directly),
then ``CPU Affinity``, ``NUMA Affinity`` (driver 450+) and ``GPU NUMA ID`` (driver 535+) columns.
Cells: ``X`` (self), ``NV#`` (a bonded set of # NVLinks), ``PIX`` (at most one PCIe bridge),
``PXB`` (several bridges), ``PHB`` (through a host bridge), ``NODE`` (between host bridges of one
NUMA node), ``SYS`` (across the inter-socket link; ``SOC`` in drivers before 384). Columns are tab
separated, or spaces when pasted; a blank affinity (Slurm cgroups) is recognised by position.
Shell prompts, ``srun:`` lines and ANSI colour codes before the table and the legends after it
are skipped.

Extracted per card: NVLink count to each peer (link ``nvlink``, ``count`` = #), ``pcie`` for
PIX/PXB/PHB/NODE pairs, ``sys`` for SYS pairs; CPU affinity; NUMA node; the nearest NIC (PIX best,
then PXB, PHB, NODE, SYS; cards with the same best NICs are spread over them in contiguous
blocks, unless the best are several NICs all at SYS: then the card's NIC stays unknown); PCIe
switches as groups of devices joined by PIX. The ``GPU NUMA ID`` column (the card's own memory
node on Grace systems) is not the host affinity and is ignored. NIC speeds are not printed by
this tool (null). The table ends at a blank line, ``Legend:``, ``NIC Legend:`` or a ``#`` line.

Errors: :class:`~xpuperf.errors.InputError` with the file and line when the table is missing,
a row has the wrong number of cells, or a cell is none of the codes above.
"""

from __future__ import annotations

import re

from xpuperf.errors import InputError
from xpuperf.topology.build import parse_cpus
from xpuperf.topology.importers.base import HostFacts, Imported, NicFacts, single_host
from xpuperf.topology.model import Link

NAME = "nvidia-smi"
RANK = {"PIX": 0, "PXB": 1, "PHB": 2, "NODE": 3, "SYS": 4, "SOC": 4}
"""Distance of a GPU–NIC cell, lower is nearer (NV# counts as nearest)."""
TAIL = ("CPU Affinity", "NUMA Affinity", "GPU NUMA ID")
EXPECTED = "X, NV#, PIX, PXB, PHB, NODE or SYS"
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_HEADER = re.compile(r"^[ \t]+GPU0(?:[ \t]|$)", re.M)
_ROW = re.compile(r"^GPU0[ \t]+X(?:[ \t]|$)", re.M)
_NV = re.compile(r"^NV(\d+)$")
_END = re.compile(r"^\s*(#|(NIC )?Legend\b)")
"""A line that ends the table: the legends, or a comment pasted after it."""


def sniff(text: str) -> bool:
    """True for ``nvidia-smi topo -m`` output: a header starting with GPU0 and a GPU0 row (and
    not MetaX's ``mx-smi topo -m``, which has the same shape)."""
    from xpuperf.topology.importers import mxsmi

    text = _ANSI.sub("", text)
    return bool(_HEADER.search(text) and _ROW.search(text)) and not mxsmi.sniff(text)


def _cells(line: str, n: int, path: str, lineno: int) -> tuple[str, list[str], list[str]]:
    """Row label, its ``n`` matrix cells and the tail [CPU affinity, NUMA affinity, GPU NUMA ID]
    (None-free: blank values are '')."""
    if "\t" in line:
        fields = [f.strip() for f in line.split("\t")]
        label, cells, rest = fields[0], fields[1 : n + 1], fields[n + 1 :]
        if len(cells) < n or any(not c for c in cells):
            raise InputError(
                f"row {label} has fewer than {n} cells; expected {EXPECTED}", path, lineno
            )
        tail = [rest[0] if rest else ""] + [f for f in rest[1:] if f]
        return label, cells, tail
    toks = [(m.start(), m.group()) for m in re.finditer(r"\S+", line)]
    if len(toks) < n + 1:
        raise InputError(
            f"row {toks[0][1] if toks else '?'} has fewer than {n} cells", path, lineno
        )
    return toks[0][1], [t for _, t in toks[1 : n + 1]], [t for _, t in toks[n + 1 :]]


def _tail_positions(header: str) -> dict[str, int]:
    return {m.group(): m.start() for m in re.finditer(r"\S+(?: \S+)*", header) if m.group() in TAIL}


def _table(text: str, source: str) -> tuple:
    """(lines, header index, matrix columns, tail columns, tail positions, rows) of the table;
    ``rows``: label → (cells, 1-based line, the line, its tail cells)."""
    lines = _ANSI.sub("", text).splitlines()
    start = next((i for i, ln in enumerate(lines) if _HEADER.match(ln)), None)
    if start is None:
        raise InputError("no `nvidia-smi topo -m` table (a header line starting with GPU0)", source)
    header = lines[start]
    cols = [c for c in re.split(r"\t+| {2,}", header.strip()) if c]
    n = next((i for i, c in enumerate(cols) if c in TAIL), len(cols))
    matrix, tail_cols = cols[:n], cols[n:]
    tail_pos = _tail_positions(header.expandtabs(8))
    rows: dict[str, tuple[list[str], int, str, list[str]]] = {}
    for k in range(start + 1, len(lines)):
        line = lines[k]
        if not line.strip() or _END.match(line):
            break
        label, cells, tail = _cells(line.rstrip(), n, source, k + 1)
        if label not in matrix:
            raise InputError(f"row {label!r} is not a column of the header", source, k + 1)
        rows[label] = (cells, k + 1, line, tail)
    return lines, start, matrix, tail_cols, tail_pos, rows


def parse(text: str, source: str = "<text>") -> Imported:
    """Read ``nvidia-smi topo -m`` output into one host's facts (see the module docstring).

    Raises:
        InputError: no table, a malformed row or an unknown cell code (file and line).
    """
    imp, host = single_host(source, NAME)
    lines, start, matrix, tail_cols, tail_pos, rows = _table(text, source)
    for label, (_, ln, line, tail) in rows.items():
        if label.startswith("GPU"):
            _card(host, int(label[3:]), line, tail, tail_cols, tail_pos, source, ln, imp.notes)
    legend = _nic_legend(lines)
    gpus = [c for c in matrix if re.fullmatch(r"GPU\d+", c)]
    nics = [c for c in matrix if c not in gpus]
    for c in nics:
        host.nics[legend.get(c, c)] = NicFacts(legend.get(c, c))
    missing = [g for g in gpus if g not in rows]
    if missing:
        raise InputError(f"no row for {', '.join(missing)}", source, start + 1)
    code = _codes(rows, matrix, source)
    _links(host, gpus, code, source, imp.notes)
    host.links_known = True  # the matrix gives every card pair
    _nearest_nics(host, gpus, nics, code, legend)
    _switches(host, gpus, nics, code, legend)
    return imp


def _codes(rows: dict[str, tuple], matrix: list[str], source: str) -> dict[tuple[str, str], str]:
    return {(r, matrix[j]): _check(v, r, matrix[j], source, ln)
            for r, (cells, ln, *_) in rows.items() for j, v in enumerate(cells)}  # fmt: skip


def matrix_codes(text: str, source: str = "<text>") -> dict[tuple[str, str], str]:
    """The matrix cells as printed, ``(row, column) → code`` (``"GPU0", "NIC1"`` → ``"PIX"``),
    with NIC columns renamed by the NIC Legend; the rows only (no affinity columns).

    Raises:
        InputError: as :func:`parse`.
    """
    lines, _, matrix, _, _, rows = _table(text, source)
    legend = _nic_legend(lines)
    return {
        (legend.get(r, r), legend.get(c, c)): v
        for (r, c), v in _codes(rows, matrix, source).items()
    }


def _check(v: str, row: str, col: str, path: str, lineno: int) -> str:
    if v == "X" or v in RANK or _NV.match(v):
        if (v == "X") != (row == col):
            raise InputError(
                f"{row}/{col}: {v!r} off the diagonal (X marks a card itself)", path, lineno
            )
        return v
    raise InputError(f"{row}/{col}: unknown code {v!r}; expected {EXPECTED}", path, lineno)


def _card(
    host: HostFacts,
    idx: int,
    line: str,
    tail: list[str],
    tail_cols: list[str],
    tail_pos: dict[str, int],
    path: str,
    lineno: int,
    notes: list[str],
) -> None:
    values = dict.fromkeys(tail_cols, "")
    if "\t" in line or len(tail) >= len(tail_cols) or not tail_cols:
        values.update(zip(tail_cols, tail, strict=False))
    else:  # spaces: a blank CPU Affinity shows as a token that starts after that column
        first = re.finditer(r"\S+", line.expandtabs(8))
        starts = [m.start() for m in first][-len(tail) :] if tail else []
        cols = list(tail_cols)
        if cols[0] == "CPU Affinity" and starts and starts[0] > tail_pos.get(cols[0], 0) + 2:
            cols = cols[1:]
        values.update(zip(cols, tail, strict=False))
    dev = host.device(idx)
    aff = values.get("CPU Affinity", "")
    if aff and aff != "N/A":
        try:
            dev.cpu_affinity = parse_cpus(aff)
        except ValueError:
            raise InputError(
                f"GPU{idx}: CPU Affinity {aff!r} is not a CPU list", path, lineno
            ) from None
    numa = values.get("NUMA Affinity", "")
    if re.fullmatch(r"[0-9]{1,18}", numa):
        dev.numa_node = int(numa)
    elif numa and numa != "N/A":
        notes.append(
            f"{path}:{lineno}: GPU{idx}: NUMA Affinity {numa!r} is not one node; left unknown"
        )


def _nic_legend(lines: list[str]) -> dict[str, str]:
    """``NIC0: mlx5_0`` lines after ``NIC Legend:``."""
    out: dict[str, str] = {}
    try:
        k = next(i for i, ln in enumerate(lines) if ln.strip() == "NIC Legend:")
    except StopIteration:
        return out
    for ln in lines[k + 1 :]:
        m = re.match(r"^\s*(NIC\d+)\s*:\s*(\S+)\s*$", ln)
        if m:
            out[m.group(1)] = m.group(2)
        elif ln.strip():
            break
    return out


def _links(
    host: HostFacts, gpus: list[str], code: dict[tuple[str, str], str], path: str, notes: list[str]
) -> None:
    for i, a in enumerate(gpus):
        for b in gpus[i + 1 :]:
            v = code[(a, b)]
            if code[(b, a)] != v:
                notes.append(f"{path}: {a}/{b} is {v} but {b}/{a} is {code[(b, a)]}; using {v}")
            m = _NV.match(v)
            kind = "nvlink" if m else "sys" if RANK[v] == RANK["SYS"] else "pcie"
            host.add_link(Link(int(a[3:]), int(b[3:]), kind, int(m.group(1)) if m else None))


def _dist(v: str) -> int:
    return -1 if _NV.match(v) else RANK[v]


def _nearest_nics(
    host: HostFacts,
    gpus: list[str],
    nics: list[str],
    code: dict[tuple[str, str], str],
    legend: dict[str, str],
) -> None:
    """Each card's nearest NIC; ties spread in contiguous blocks, except ties of several NICs
    all across the socket (SYS), which leave the card's NIC unknown; NICs learn their near
    cards."""
    if not nics:
        return
    by_cands: dict[tuple[str, ...], list[int]] = {}
    for g in gpus:
        best = min(_dist(code[(g, c)]) for c in nics)
        cands = tuple(c for c in nics if _dist(code[(g, c)]) == best)
        by_cands.setdefault(cands, []).append(int(g[3:]))
    for cands, cards in by_cands.items():
        if len(cands) > 1 and _dist(code[(f"GPU{cards[0]}", cands[0])]) >= RANK["SYS"]:
            continue  # several NICs, all across the socket: the table does not say which
        for j, card in enumerate(cards):
            host.device(card).nic = legend.get(c := cands[j * len(cands) // len(cards)], c)
    for c in nics:
        best = min(_dist(code[(g, c)]) for g in gpus)
        if best < RANK["SYS"]:
            near = tuple(int(g[3:]) for g in gpus if _dist(code[(g, c)]) == best)
            host.nics[legend.get(c, c)].near_devices = near


def _switches(
    host: HostFacts,
    gpus: list[str],
    nics: list[str],
    code: dict[tuple[str, str], str],
    legend: dict[str, str],
) -> None:
    """Devices joined by PIX share a PCIe switch: name the groups sw0, sw1, … in column order."""
    names = gpus + nics
    parent = {x: x for x in names}

    def find(x: str) -> str:
        while parent[x] != x:
            x = parent[x]
        return x

    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            if code.get((a, b)) == "PIX" or code.get((b, a)) == "PIX":
                parent[find(a)] = find(b)
    groups: dict[str, list[str]] = {}
    for x in names:
        groups.setdefault(find(x), []).append(x)
    k = 0
    for members in groups.values():
        if len(members) < 2:
            continue
        sw = f"sw{k}"
        k += 1
        for x in members:
            if x in gpus:
                host.device(int(x[3:])).pcie_switch = sw
            else:
                host.nics[legend.get(x, x)].pcie_switch = sw
