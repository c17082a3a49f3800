"""What kind of xpuperf input a file is, when ``analyze`` cannot read it as a step log.

People paste whatever their cluster printed. When the step-log readers cannot tell a file's
format, :func:`other_kind` looks at its first 64 KiB for the other inputs xpuperf reads —
topology dumps (``xpuperf topo import``: ``nvidia-smi topo -m``, ``numactl -H``, ``lscpu``,
``npu-smi info``, NCCL topology XML, ``rocm-smi --showtopo``, HCCL rank tables) and nccl-tests
output (``xpuperf calibrate``) — so the error can name the right subcommand instead of only
listing the step-log formats. Raises nothing: unreadable files give None.
"""

from __future__ import annotations

import gzip
from pathlib import Path

HEAD_BYTES = 64 << 10
_NCCL_TESTS = ("# Avg bus bandwidth", "out-of-place", "#  Rank ", "# nThread ")

_TOOL = {"nvidia-smi": "nvidia-smi topo -m", "numactl": "numactl -H", "npu-smi": "npu-smi info",
         "nccl-xml": "NCCL topology XML", "rocm-smi": "rocm-smi --showtopo",
         "hccl-ranktable": "HCCL rank table"}  # fmt: skip

WHAT_ANALYZE_READS = (
    "xpuperf analyze reads per-rank step logs (CSV/TSV/JSONL/Parquet with step and time or "
    "throughput columns, and the framework logs `xpuperf formats` lists), NCCL_DEBUG=INFO logs "
    "and scaling tables (cards vs throughput); topology dumps go to `xpuperf topo import`, "
    "nccl-tests output to `xpuperf calibrate`"
)


def _head(path: Path) -> str:
    try:
        with path.open("rb") as fh:
            gz = fh.read(2) == b"\x1f\x8b"
        opener = gzip.open if gz else open
        with opener(path, "rb") as fh:  # type: ignore[operator]
            raw = fh.read(HEAD_BYTES)
    except (OSError, EOFError, gzip.BadGzipFile):
        return ""
    return raw.decode("utf-8", "replace")


def other_kind(path: str | Path) -> str | None:
    """A one-line pointer to the subcommand that reads ``path`` (e.g. "this is `nvidia-smi topo
    -m` output: read it with `xpuperf topo import FILE`"), or None when it is none of them."""
    text = _head(Path(path))
    if not text:
        return None
    if any(m in text for m in _NCCL_TESTS) and ("busbw" in text or "algbw" in text):
        return (
            f"this is nccl-tests output: measure the links with `xpuperf calibrate {path}` "
            "(add --topology to compare with what the links should give)"
        )
    from xpuperf.topology.importers import IMPORTERS

    for name, mod in IMPORTERS.items():
        try:
            hit = mod.sniff(text)
        except Exception:  # a sniffer's bug must not hide the user's real error
            hit = False
        if hit:
            return (
                f"this is a topology dump ({_TOOL.get(name, name)} output): audit it with "
                f"`xpuperf topo check {path}` or turn it into a description file with "
                f"`xpuperf topo import {path}`"
            )
    return None
