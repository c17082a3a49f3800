"""Importers: read what cluster tools print into a :class:`~xpuperf.topology.model.Cluster`.

One module per source, each with ``sniff(text) -> bool`` and ``parse(text, source) -> Imported``
(a partial description, :mod:`~xpuperf.topology.importers.base`):

============== ======================================= =============================================
name           tool (module)                           what it gives
============== ======================================= =============================================
nvidia-smi     ``nvidia-smi topo -m`` (nvsmi)          cards, NVLink counts, PCIe/SYS pairs, NICs,
                                                       nearest NIC, CPU and NUMA affinity
numactl        ``numactl -H`` / ``--hardware``         NUMA nodes: CPUs, memory, distances
lscpu          ``lscpu`` (util-linux)                  NUMA nodes' CPUs, sockets, cores, threads
npu-smi        ``npu-smi info`` (Ascend)               NPU chips (devices), model
nccl-xml       NCCL topology XML (``NCCL_TOPO_FILE``,  cards, NICs with speeds, NUMA nodes and CPU
               ``NCCL_TOPO_DUMP_FILE``) (ncclxml)      masks, PCIe switches and generation, NVLink
rocm-smi       ``rocm-smi --showtopo`` (rocmsmi)       cards, XGMI/PCIe pairs, NUMA node per card
hccl-ranktable Ascend HCCL rank table JSON (ranktable) servers, devices, device IPs, rank placement
mx-smi         ``mx-smi topo -m`` (MetaX; mxsmi)       cards, MetaXLink/PCIe/SYS pairs, NUMA node,
                                                       CPU affinity
npu-smi-topo   ``npu-smi info -t topo`` (npusmi_topo)  NPUs, HCCS/HCCS_SW/SIO/PCIe/SYS pairs, CPU
                                                       affinity
nvidia-smi-    ``nvidia-smi nvlink -s`` (nvlinks)      cards and models; per-link rate and
nvlink                                                 inactive links (checked: XP523/XP524)
lstopo         hwloc ``lstopo`` text (lstopo)          NUMA nodes (CPUs, memory), cards and NICs
                                                       under host bridges, PCIe switches
nccl-graph     ``NCCL_GRAPH_DUMP_FILE`` (ncclgraph)    refused: a graph dump, not a topology
============== ======================================= =============================================

:func:`import_topology` sniffs each file (one file may hold several outputs, e.g. ``lscpu`` and
``npu-smi info`` in one ``collect_env`` dump), merges what the files say about the same host and
validates the result as a description. Every problem is an :class:`~xpuperf.errors.InputError`.
"""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

from xpuperf.errors import InputError, read_hint
from xpuperf.topology.importers import (
    lscpu,
    lstopo,
    mxsmi,
    ncclgraph,
    ncclxml,
    npusmi,
    npusmi_topo,
    numactl,
    nvlinks,
    nvsmi,
    ranktable,
    rocmsmi,
)
from xpuperf.topology.importers.assemble import to_cluster
from xpuperf.topology.importers.base import Imported, merge
from xpuperf.topology.model import Cluster

_ORDER = (nvsmi, numactl, lscpu, npusmi, ncclxml, rocmsmi, ranktable, mxsmi, npusmi_topo, nvlinks,
          lstopo, ncclgraph)  # fmt: skip
IMPORTERS: dict[str, ModuleType] = {m.NAME: m for m in _ORDER}
"""Importer modules by name, in sniffing order."""


@dataclass(frozen=True)
class ImportResult:
    """The imported cluster, the notes on what was inferred, and the formats found per file."""

    cluster: Cluster
    notes: list[str] = field(default_factory=list)
    formats: dict[str, list[str]] = field(default_factory=dict)


def detect(text: str) -> list[str]:
    """Names of the importers whose ``sniff`` accepts ``text`` (empty: not a known format)."""
    return [name for name, mod in IMPORTERS.items() if mod.sniff(text)]


def read_text(path: str | Path) -> str:
    """A file's text (``.gz`` decompressed, found by its magic bytes); InputError when it cannot
    be read, is larger than the loader's ``MAX_FILE_BYTES`` (decompressed) or is not UTF-8."""
    from xpuperf.topology.loader import MAX_FILE_BYTES, read_bounded

    p = Path(path)
    try:
        if not _is_gzip(p):
            return read_bounded(p)
        with gzip.open(p, "rb") as fh:
            data = fh.read(MAX_FILE_BYTES + 1)
        if len(data) > MAX_FILE_BYTES:
            raise InputError(
                f"decompresses to more than {MAX_FILE_BYTES >> 20} MiB: not a topology "
                "description or tool output",
                p,
            )
        return data.decode("utf-8")
    except (gzip.BadGzipFile, EOFError, zlib.error) as e:
        raise InputError(f"not a readable gzip file ({e or type(e).__name__})", p) from None
    except OSError as e:
        raise InputError(f"cannot read topology file: {e.strerror or e}{read_hint(e)}", p) from None
    except UnicodeDecodeError:
        raise InputError("not a UTF-8 text file", p) from None


def _is_gzip(p: Path) -> bool:
    with p.open("rb") as fh:
        return fh.read(2) == b"\x1f\x8b"


KNOWN = (
    "nvidia-smi topo -m, nvidia-smi nvlink -s, numactl -H, lscpu, lstopo, npu-smi info [-t topo], "
    "mx-smi topo -m, NCCL topology XML, rocm-smi --showtopo, HCCL rank table JSON"
)
"""The tool outputs the importers read, as the errors list them."""


def _yaml_mapping(text: str) -> bool:
    """Whether ``text`` parses as a YAML (or JSON) mapping: a description, perhaps a broken one,
    that the loader should judge."""
    import yaml

    try:
        return isinstance(yaml.safe_load(text), dict)
    except (yaml.YAMLError, ValueError, RecursionError):
        return False


def parse_text(text: str, source: str = "<text>") -> Imported:
    """Every importer that recognises ``text``, merged.

    Raises:
        InputError: no importer recognises the text (listing the formats), or parse errors.
    """
    names = detect(text)
    if not names:
        raise InputError(
            f"not a topology format xpuperf can import; expected one of: {KNOWN}", source
        )
    try:
        return merge([IMPORTERS[n].parse(text, source=source) for n in names])
    except (ValueError, RecursionError) as e:  # a value no parser check anticipated: exit 2
        raise InputError(
            f"cannot read this {'/'.join(names)} output: {str(e)[:100] or type(e).__name__}",
            source,
        ) from None


def import_files(paths: Iterable[str | Path]) -> ImportResult:
    """Import and merge several files (see the module docstring)."""
    parts, formats = [], {}
    for p in paths:
        imp = parse_text(read_text(p), str(p))
        formats[str(p)] = imp.formats
        parts.append(imp)
    if not parts:
        raise InputError("no files to import")
    merged = merge(parts)
    cluster = to_cluster(merged)
    return ImportResult(cluster, merged.notes, formats)


def import_topology(paths: Iterable[str | Path]) -> Cluster:
    """The Cluster described by ``paths`` (any mix of the supported formats, same hosts)."""
    return import_files(paths).cluster


MAX_LINE_CHARS = 1 << 20
"""Longest line a YAML description may have. PyYAML's scanner takes about 0.4 s per MB of one
line (a 50 MB line without a newline took 60 s in ``topo check``); a description written by
hand or by ``topo import`` has lines of a few hundred characters."""


def _longest_line(text: str) -> tuple[int, int]:
    """(length, 1-based line number) of the longest line of ``text``, in one pass."""
    best, best_no, start, no = 0, 1, 0, 1
    while True:
        end = text.find("\n", start)
        stop = len(text) if end < 0 else end
        if stop - start > best:
            best, best_no = stop - start, no
        if end < 0:
            return best, best_no
        start, no = end + 1, no + 1


def refuse_long_lines(text: str, path: str | Path) -> None:
    """Raise InputError when ``text`` (not JSON or XML, which may come on one line) has a line
    longer than :data:`MAX_LINE_CHARS`: no tool output or YAML description has one, and the
    sniffers and PyYAML would spend seconds per 10 MB on it."""
    if text.lstrip()[:1] in ("{", "[", "<"):
        return
    size, no = _longest_line(text)
    if size > MAX_LINE_CHARS:
        raise InputError(
            f"line {no} is {size:,} characters long (limit {MAX_LINE_CHARS:,}): not a topology "
            "description or tool output; pass a description (xpuperf.topology/1) or the output "
            "of nvidia-smi topo -m, lscpu, numactl -H …",
            path,
            no,
        )


def load_any(path: str | Path) -> Cluster:
    """A description file, or any single file an importer recognises (``topo show FILE``).

    Raises:
        InputError: as the importers and the loader; a line longer than
            :data:`MAX_LINE_CHARS` outside JSON/XML (:func:`refuse_long_lines`).
    """
    from xpuperf.topology.loader import load, loads

    p = Path(path)
    if p.is_file():
        text = read_text(p)
        refuse_long_lines(text, p)
        if "xpuperf.topology/" not in text:
            if detect(text):
                return import_topology([p])
            if not _is_gzip(p) and not _yaml_mapping(text):
                raise InputError(
                    "neither a topology description (YAML whose first line is `schema: "
                    "xpuperf.topology/1`, docs/topology.md) nor a tool output xpuperf can import "
                    f"({KNOWN})",
                    p,
                )
        if _is_gzip(p):  # a compressed description: .json.gz is JSON, anything else YAML
            fmt = "json" if p.name.lower().removesuffix(".gz").endswith(".json") else "yaml"
            return loads(text, fmt=fmt, source=p)
    return load(p)


__all__ = [
    "IMPORTERS",
    "ImportResult",
    "detect",
    "import_files",
    "import_topology",
    "load_any",
    "parse_text",
    "read_text",
    "refuse_long_lines",
]
