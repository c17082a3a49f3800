"""The topology description format ``xpuperf.topology/1``: keys, units and the JSON Schema.

Quantities carry their unit either in the key (``bw_GBps: 25``, ``latency_us: 2``,
``speed_Gbps: 400``, ``memory_MB: 65536``) or in a value string under the bare key
(``speed: "400Gbps"``, ``bw: "25GB/s"``, ``latency: "1.5 ms"``, ``memory: "64GiB"``). A bare
number under a bare key is refused (:class:`UnitError` listing the accepted spellings).

Canonical units: bandwidth GB/s (1e9 bytes/s; nccl-tests' GB), NIC speed Gb/s, time µs,
memory MB (1e6 bytes; ``MiB``/``GiB`` are binary). ``b`` means bits and ``B`` bytes, so
``"400Gbps"`` is 400 Gb/s = 50 GB/s, and ``"400GBps"`` is 400 GB/s = 3200 Gb/s.

The shipped JSON Schema (``topology.schema.json``, :func:`json_schema`) describes the same
format for editors and other tools; :mod:`xpuperf.topology.loader` is the validator of record.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import Any

SCHEMA_ID = "xpuperf.topology/1"
SCHEMA_FILE = Path(__file__).with_name("topology.schema.json")


class UnitError(ValueError):
    """A quantity that cannot be read; the message lists the accepted spellings."""


_NUM = r"([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)"
_PREFIX = {"k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12}
_BIN_PREFIX = {"k": 2.0**10, "m": 2.0**20, "g": 2.0**30, "t": 2.0**40}

# dimension -> (canonical unit name, accepted spellings shown in errors)
DIMENSIONS: dict[str, tuple[str, str]] = {
    "bandwidth": ("GB/s", "Gbps, Gb/s, Gbit/s, GB/s, GBps, GiB/s, Mbps, MB/s, Tbps, TB/s"),
    "time": ("us", "ns, us, µs, ms, s"),
    "memory": ("MB", "KB, MB, GB, TB, KiB, MiB, GiB, TiB"),
}

_BW_RE = re.compile(
    rf"^\s*{_NUM}\s*([kKmMgGtT])(i?)(bits?|Bytes?|bytes?|b|B)\s*(?:ps|PS|/s|/S)\s*$"
)
_TIME_RE = re.compile(rf"^\s*{_NUM}\s*(ns|us|µs|μs|ms|s)\s*$")
_MEM_RE = re.compile(rf"^\s*{_NUM}\s*([kKmMgGtT])(i?)(B|Bytes?|bytes?)\s*$")
_TIME_US = {"ns": 1e-3, "us": 1.0, "µs": 1.0, "μs": 1.0, "ms": 1e3, "s": 1e6}


def _bw_factor(prefix: str, binary: str, unit: str) -> float:
    """GB/s per 1 of the given unit."""
    mult = (_BIN_PREFIX if binary else _PREFIX)[prefix.lower()]
    bits = unit.lower().startswith("bit") or unit == "b"
    return mult / 1e9 / (8.0 if bits else 1.0)


def _mem_factor(prefix: str, binary: str) -> float:
    """MB per 1 of the given unit."""
    return (_BIN_PREFIX if binary else _PREFIX)[prefix.lower()] / 1e6


def parse_quantity(text: str, dimension: str) -> float:
    """Parse ``"400Gbps"`` / ``"2us"`` / ``"64GiB"`` into the canonical unit of ``dimension``.

    Returns GB/s for ``"bandwidth"``, µs for ``"time"``, MB for ``"memory"``.
    Raises :class:`UnitError` naming the accepted spellings.

    >>> parse_quantity("400Gbps", "bandwidth"), parse_quantity("1.5 ms", "time")
    (50.0, 1500.0)
    """
    accepted = DIMENSIONS[dimension][1]
    if dimension == "bandwidth" and (m := _BW_RE.match(text)):
        return float(m.group(1)) * _bw_factor(m.group(2), m.group(3), m.group(4))
    if dimension == "time" and (m := _TIME_RE.match(text)):
        return float(m.group(1)) * _TIME_US[m.group(2)]
    if dimension == "memory" and (m := _MEM_RE.match(text)):
        return float(m.group(1)) * _mem_factor(m.group(2), m.group(3))
    raise UnitError(f"cannot read {text!r} as a {dimension}; accepted units: {accepted}")


# A quantity field: bare key -> (dimension, canonical key, key suffix -> factor to canonical key)
_BW_KEYS = {"GBps": 1.0, "Gbps": 1 / 8, "MBps": 1e-3, "Mbps": 1 / 8000, "TBps": 1e3, "Tbps": 125.0}
_SPEED_KEYS = {k: v * 8.0 for k, v in _BW_KEYS.items()}  # to Gb/s
_TIME_KEYS = {"us": 1.0, "ns": 1e-3, "ms": 1e3, "s": 1e6}
_MEM_KEYS = {"MB": 1.0, "GB": 1e3, "KB": 1e-3, "TB": 1e6, "MiB": 2**20 / 1e6, "GiB": 2**30 / 1e6}

QUANTITIES: dict[str, tuple[str, str, dict[str, float]]] = {
    "bw": ("bandwidth", "bw_GBps", _BW_KEYS),
    "speed": ("bandwidth", "speed_Gbps", _SPEED_KEYS),
    "pcie_bw": ("bandwidth", "pcie_bw_GBps", _BW_KEYS),
    "sys_bw": ("bandwidth", "sys_bw_GBps", _BW_KEYS),
    "latency": ("time", "latency_us", _TIME_KEYS),
    "memory": ("memory", "memory_MB", _MEM_KEYS),
}
"""Quantity fields: bare key → (dimension, canonical key, accepted key suffixes with factors)."""

_TO_CANONICAL_KEY = {"speed_Gbps": 8.0}  # GB/s parsed from a string → Gb/s


def quantity_keys(base: str) -> list[str]:
    """Every accepted key spelling of a quantity field, e.g. ``speed``, ``speed_Gbps`` …"""
    return [base, *(f"{base}_{s}" for s in QUANTITIES[base][2])]


def read_quantity(obj: dict[str, Any], base: str) -> tuple[str, float | None] | None:
    """Read quantity ``base`` from a mapping in whichever spelling it is given.

    Returns ``(key used, value in the canonical unit)``, ``(key, None)`` for an explicit null, or
    None when absent. Raises :class:`UnitError` for a bare number under the bare key, an
    unreadable string, a non-number, or two spellings at once.
    """
    dim, canonical, suffixes = QUANTITIES[base]
    given = [k for k in quantity_keys(base) if k in obj]
    if not given:
        return None
    if len(given) > 1:
        raise UnitError(f"give one of {', '.join(given)}, not several")
    key = given[0]
    value = obj[key]
    if value is None:
        return key, None
    factor = 1.0 if key == base else suffixes[key[len(base) + 1 :]]
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise UnitError(f"expected a number or a string with a unit, got {value!r}")
    if isinstance(value, str):
        text = value.strip()
        if not _is_number(text):
            # the unit in the value wins, also under a unit-suffixed key
            return key, parse_quantity(text, dim) * _TO_CANONICAL_KEY.get(canonical, 1.0)
        value = float(text)
    if key == base:
        raise UnitError(_bare_message(base, value))
    return key, float(value) * factor


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _bare_message(base: str, value: float) -> str:
    dim, canonical, _ = QUANTITIES[base]
    unit = {"bandwidth": "Gbps" if base == "speed" else "GB/s", "time": "us", "memory": "MB"}[dim]
    return (
        f"a bare number ({value:g}) has no unit; write {canonical}: {value:g} or "
        f'{base}: "{value:g}{unit}" (accepted units: {DIMENSIONS[dim][1]})'
    )


# Allowed keys per object (quantity fields listed by their bare name; see quantity_keys).
KEYS: dict[str, tuple[str, ...]] = {
    "cluster": ("schema", "name", "network", "placement", "ranks", "nodes", "evidence"),
    "network": (
        "fabric",
        "switch_levels",
        "oversubscription",
        "nodes_per_leaf",
        "latency",
        "assumed",
    ),
    "node": (
        "name",
        "count",
        "preset",
        "devices",
        "numa_nodes",
        "nics",
        "links",
        "pcie_switches",
        "pcie_gen",
        "pcie_bw",
        "sys_bw",
        "assumed",
    ),
    "devices_shorthand": ("count", "model", "peak_tflops", "numa_node", "nic", "pcie_switch"),
    "device": ("index", "model", "peak_tflops", "numa_node", "nic", "pcie_switch"),
    "numa_node": ("id", "cpus", "memory", "distances"),
    "nic": ("name", "speed", "numa_node", "cards", "pcie_switch"),
    "pcie_switch": ("name", "numa_node", "devices", "nics"),
    "link": ("pattern", "a", "b", "devices", "groups", "kind", "count", "bw", "latency"),
}
"""Allowed keys per object; bare quantity names stand for all their spellings."""

PATTERNS: tuple[str, ...] = ("full_mesh", "groups", "ring", "pcie_tree")
"""Intra-node link patterns; a link entry without ``pattern`` is one explicit pair ``a``–``b``."""


def allowed_keys(kind: str) -> list[str]:
    """Every accepted key of an object kind, with all spellings of its quantity fields."""
    out: list[str] = []
    for k in KEYS[kind]:
        out.extend(quantity_keys(k) if k in QUANTITIES else [k])
    return out


@cache
def json_schema() -> dict[str, Any]:
    """The shipped JSON Schema of the description file (draft 2020-12), as a dict."""
    return json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
