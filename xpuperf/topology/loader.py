"""Read a topology description (YAML or JSON, ``schema: xpuperf.topology/1``) into a
:class:`~xpuperf.topology.model.Cluster`.

Entry points: :func:`load` (a file), :func:`loads` (text), :func:`from_dict` (parsed data, e.g.
the JSON view of :func:`xpuperf.topology.view.to_json_dict`, which loads back unchanged).

Every problem raises :class:`~xpuperf.errors.InputError` (exit code 2) whose message starts with
the dotted path of the offending value (``nodes[1].nics[0].speed_Gbps: must be > 0``), with the
file and, for YAML, the line. The format is documented in docs/topology.md; node entries are read
by :mod:`xpuperf.topology.nodes`.
"""

from __future__ import annotations

import difflib
import json
import math
import re
from pathlib import Path
from typing import Any, NoReturn

import yaml

from xpuperf.errors import InputError, read_hint
from xpuperf.surrogates import clean_parsed
from xpuperf.topology.model import (
    FABRICS,
    LATENCY_US,
    NETWORK_FIGURES,
    Cluster,
    Network,
    Node,
)
from xpuperf.topology.schema import (
    QUANTITIES,
    SCHEMA_ID,
    UnitError,
    allowed_keys,
    read_quantity,
)


class Ctx:
    """Error reporting for one description: the source file and a dotted-path → line map."""

    def __init__(self, source: str | Path | None = None, lines: dict[str, int] | None = None):
        self.source = source
        self.lines = lines or {}

    def fail(self, path: str, message: str) -> NoReturn:
        """Raise InputError ``"<path>: <message>"`` at the line of the nearest known path."""
        line, p = None, path
        while p:
            if p in self.lines:
                line = self.lines[p]
                break
            p = p[: max(p.rfind("."), p.rfind("["), 0)]
        text = f"{path}: {message}" if path else message
        text = text.replace("\r", "\\r").replace("\n", "\\n")  # a key may hold a line break
        raise InputError(text, self.source, line)

    def mapping(self, obj: Any, kind: str, path: str) -> dict[str, Any]:
        """Check ``obj`` is a mapping with only allowed keys (unknown keys get a did-you-mean)."""
        if not isinstance(obj, dict):
            self.fail(path, f"expected a mapping, got {type(obj).__name__}")
        allowed = allowed_keys(kind)
        for key in obj:
            if key not in allowed:
                same_case = sorted(
                    (a for a in allowed if a.lower() == str(key).lower()),
                    key=lambda a: _bits_bytes(a) != _bits_bytes(str(key)),  # b = bits, B = bytes
                )
                close = same_case or difflib.get_close_matches(str(key), allowed, n=1, cutoff=0.6)
                hint = f"; did you mean {close[0]!r}?" if close else ""
                self.fail(
                    join(path, str(key)),
                    f"unknown key{hint} (allowed: {', '.join(sorted(allowed))})",
                )
        return obj

    def qty(self, obj: dict[str, Any], base: str, path: str, minimum_exclusive: bool = True):
        """A quantity in its canonical unit (see :data:`QUANTITIES`), None if absent or null."""
        try:
            got = read_quantity(obj, base)
        except UnitError as e:
            keys = [k for k in obj if k == base or k.startswith(base + "_")]
            self.fail(join(path, keys[0] if len(keys) == 1 else base), str(e))
        if got is None or got[1] is None:
            return None
        key, value = got
        canonical = QUANTITIES[base][1]
        if not math.isfinite(value):
            self.fail(join(path, key), f"must be a finite number (got {value})")
        if minimum_exclusive and value <= 0:
            self.fail(join(path, key), f"must be > 0 (got {value:g} {unit_of(canonical)})")
        if value < 0:
            self.fail(join(path, key), f"must be >= 0 (got {value:g} {unit_of(canonical)})")
        return value

    def integer(
        self, obj: dict[str, Any], key: str, path: str, minimum: int = 0, default: Any = None
    ) -> Any:
        """An int ≥ ``minimum`` (strings of digits accepted), ``default`` if absent."""
        if key not in obj or obj[key] is None:
            return default
        return self.as_int(obj[key], join(path, key), minimum)

    def as_int(self, value: Any, path: str, minimum: int = 0) -> int:
        """``value`` as an int ≥ ``minimum``."""
        if isinstance(value, str) and re.fullmatch(r"[0-9]{1,18}", value.strip()):
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            self.fail(path, f"expected an integer, got {value!r}")
        if value < minimum:
            self.fail(path, f"must be >= {minimum} (got {value})")
        return value

    def number(self, obj: dict[str, Any], key: str, path: str, default: Any = None) -> Any:
        """A plain number > 0 (a ratio or count, no unit), ``default`` if absent."""
        if key not in obj or obj[key] is None:
            return default
        v = obj[key]
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            self.fail(join(path, key), f"expected a number, got {v!r}")
        if not math.isfinite(v):
            self.fail(join(path, key), f"must be a finite number (got {v})")
        if v <= 0:
            self.fail(join(path, key), f"must be > 0 (got {v})")
        return float(v)

    def text(self, obj: dict[str, Any], key: str, path: str, default: Any = None) -> Any:
        """A string (numbers are converted), ``default`` if absent."""
        if key not in obj or obj[key] is None:
            return default
        v = obj[key]
        if isinstance(v, bool) or not isinstance(v, (str, int, float)):
            self.fail(join(path, key), f"expected a string, got {v!r}")
        return str(v)

    def choice(self, value: str, choices: tuple[str, ...], path: str) -> str:
        """``value`` if it is one of ``choices``, else an error with a did-you-mean."""
        if value not in choices:
            close = difflib.get_close_matches(value, choices, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            self.fail(path, f"{value!r} is not one of {', '.join(choices)}{hint}")
        return value

    def seq(self, value: Any, path: str) -> list[Any]:
        """``value`` as a list, or an error."""
        if not isinstance(value, list):
            self.fail(path, f"expected a list, got {type(value).__name__}")
        return value


def _bits_bytes(key: str) -> str:
    return "".join(c for c in key if c in "bB")


def join(path: str, key: str) -> str:
    """Dotted path of ``key`` under ``path``."""
    return f"{path}.{key}" if path else key


def unit_of(canonical_key: str) -> str:
    """``"speed_Gbps"`` → ``"Gb/s"``."""
    return {"GBps": "GB/s", "Gbps": "Gb/s", "us": "µs", "MB": "MB"}[canonical_key.split("_")[-1]]


MAX_FILE_BYTES = 64 << 20
"""Largest topology description or tool output read (real ones are a few kB): the whole file is
parsed in memory, so a bigger one is refused rather than read."""


def read_bounded(p: Path) -> str:
    """The UTF-8 text of ``p``, refused past :data:`MAX_FILE_BYTES` (OSError/UnicodeDecodeError
    propagate to the caller)."""
    with p.open("rb") as fh:
        data = fh.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        raise InputError(
            f"file is larger than {MAX_FILE_BYTES >> 20} MiB: not a topology description or "
            "tool output; pass the output of one tool run",
            p,
        )
    return data.decode("utf-8")


def load(path: str | Path) -> Cluster:
    """Read a description file (``.json`` as JSON, anything else as YAML) into a Cluster.

    Raises InputError for an unreadable file, a file over :data:`MAX_FILE_BYTES`, a parse error
    (with its line) or an invalid description.
    """
    p = Path(path)
    try:
        text = read_bounded(p)
    except OSError as e:
        raise InputError(f"cannot read topology file: {e.strerror or e}{read_hint(e)}", p) from None
    except UnicodeDecodeError:
        raise InputError("not a UTF-8 text file", p) from None
    return loads(text, fmt="json" if p.suffix.lower() == ".json" else "yaml", source=p)


def loads(text: str, fmt: str = "yaml", source: str | Path | None = None) -> Cluster:
    """Parse description text (``fmt`` ``"yaml"`` or ``"json"``) into a Cluster."""
    lines: dict[str, int] = {}
    try:
        if fmt == "json":
            data = json.loads(text)
        else:
            data = yaml.safe_load(text)
            _check_expanded_size(data, source)  # before _line_map walks the same aliases
            lines = _line_map(text)
        data = clean_parsed(data, text)  # a lone "\ud800" cannot be written out as UTF-8
    except json.JSONDecodeError as e:
        raise InputError(f"not valid JSON: {e.msg}", source, e.lineno) from None
    except RecursionError:
        raise InputError("nested too deeply to be a topology description", source) from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        problem = " ".join(str(getattr(e, "problem", None) or e).split())  # one line
        raise InputError(f"not valid YAML: {problem}", source, line) from None
    except ValueError as e:  # e.g. an integer of more than 4300 digits (int() refuses it)
        why = "a number has too many digits" if "digits" in str(e) else str(e)[:100]
        raise InputError(f"a value cannot be read: {why}", source) from None
    if fmt == "json":
        _check_expanded_size(data, source)
    return from_dict(data, source=source, lines=lines)


MAX_ITEMS = 1_000_000


def _check_expanded_size(data: Any, source: str | Path | None) -> None:
    """Refuse documents whose values, counted with YAML aliases expanded, exceed MAX_ITEMS.

    A "billion laughs" document is small on disk but every alias repeats a large subtree;
    counting visits (not distinct objects) with a cap stops the walk early.
    """
    seen = 0
    stack = [data]
    while stack:
        x = stack.pop()
        seen += 1
        if seen > MAX_ITEMS:
            raise InputError(
                f"document expands to more than {MAX_ITEMS} values (YAML aliases?); "
                "write the description without repeated anchors",
                source,
            )
        if isinstance(x, dict):
            stack.extend(x.values())
        elif isinstance(x, list):
            stack.extend(x)


def _line_map(text: str) -> dict[str, int]:
    """Dotted path → 1-based line of every key and list item of a YAML document."""
    out: dict[str, int] = {}

    def walk(node: yaml.Node, path: str) -> None:
        out.setdefault(path, node.start_mark.line + 1)
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                p = join(path, str(k.value))
                out[p] = k.start_mark.line + 1
                walk(v, p)
        elif isinstance(node, yaml.SequenceNode):
            for i, item in enumerate(node.value):
                walk(item, f"{path}[{i}]")

    root = yaml.compose(text)
    if root is not None:
        walk(root, "")
    return out


def from_dict(
    data: Any, source: str | Path | None = None, lines: dict[str, int] | None = None
) -> Cluster:
    """Validate parsed description data and build the Cluster (see module docstring)."""
    from xpuperf.topology.nodes import read_nodes

    ctx = Ctx(source, lines)
    if not isinstance(data, dict):
        ctx.fail("", f"a topology description is a mapping with schema: {SCHEMA_ID}")
    ctx.mapping(data, "cluster", "")
    schema = data.get("schema")
    if schema is None:
        ctx.fail("schema", f"missing; the first line of a description is `schema: {SCHEMA_ID}`")
    if schema != SCHEMA_ID:
        ctx.fail("schema", f"{schema!r} is not supported; this xpuperf reads {SCHEMA_ID}")
    if "nodes" not in data:
        ctx.fail("nodes", "missing; list the nodes (or one entry with count: N)")
    nodes, origin = read_nodes(ctx, ctx.seq(data["nodes"], "nodes"))
    if len(nodes) > 1:
        for pos, node in enumerate(nodes):
            if not node.nics:
                ctx.fail(
                    join(origin[pos], "nics"),
                    f"node {node.name} has no NIC, but the cluster has {len(nodes)} nodes",
                )
    network = _network(ctx, data.get("network"))
    placement, world = _placement(ctx, data, nodes)
    name = ctx.text(data, "name", "")
    return Cluster(tuple(nodes), network, placement, world, name)


def _network(ctx: Ctx, obj: Any) -> Network:
    if obj is None:
        return Network(assumed=frozenset(NETWORK_FIGURES))
    ctx.mapping(obj, "network", "network")
    assumed = read_assumed(ctx, obj, "network", NETWORK_FIGURES)
    given = {k.split("_")[0] if k.startswith("latency") else k for k in obj if obj[k] is not None}
    assumed |= {f for f in NETWORK_FIGURES if f.removesuffix("_us") not in given}
    fabric = ctx.choice(ctx.text(obj, "fabric", "network", "fat-tree"), FABRICS, "network.fabric")
    levels = ctx.integer(obj, "switch_levels", "network", 1, 1)
    over = obj.get("oversubscription", 1)
    if isinstance(over, str) and ":" in over:
        num, _, den = over.partition(":")
        try:
            over = float(num) / float(den)
        except (ValueError, ZeroDivisionError):
            ctx.fail("network.oversubscription", f"cannot read {over!r}; write 3 or '3:1'")
    if isinstance(over, bool) or not isinstance(over, (int, float)):
        ctx.fail("network.oversubscription", f"expected a number or 'N:1', got {over!r}")
    oversub = float(over)
    if not math.isfinite(oversub):
        ctx.fail("network.oversubscription", f"must be a finite number (got {over!r})")
    if oversub < 1:
        ctx.fail("network.oversubscription", f"must be >= 1 (down:up ratio), got {oversub:g}")
    npl = ctx.integer(obj, "nodes_per_leaf", "network", 1)
    lat = ctx.qty(obj, "latency", "network", minimum_exclusive=False)
    lat = LATENCY_US["net"] if lat is None else lat
    return Network(fabric, levels, oversub, npl, lat, frozenset(assumed))


def read_assumed(ctx: Ctx, obj: dict[str, Any], path: str, allowed: tuple[str, ...]) -> set[str]:
    """The ``assumed:`` list of a node or network entry (figures the input did not give; the JSON
    view writes it so that a default reads back as a default)."""
    raw = obj.get("assumed")
    if raw is None:
        return set()
    out = set()
    for i, item in enumerate(ctx.seq(raw, join(path, "assumed"))):
        if not isinstance(item, str):
            ctx.fail(f"{join(path, 'assumed')}[{i}]", f"expected a name, got {item!r}")
        out.add(ctx.choice(item, allowed, f"{join(path, 'assumed')}[{i}]"))
    return out


def _placement(
    ctx: Ctx, data: dict[str, Any], nodes: list[Node]
) -> tuple[tuple[tuple[int, int], ...] | None, int | None]:
    n_slots = sum(len(n.devices) for n in nodes)
    ranks = ctx.integer(data, "ranks", "", 1)
    raw = data.get("placement", "node-major")
    if raw in (None, "node-major"):
        if ranks is not None and ranks > n_slots:
            ctx.fail(
                "ranks",
                f"{ranks} ranks but the cluster has only {n_slots} card slots "
                f"({len(nodes)} nodes); add nodes or lower ranks",
            )
        return None, ranks
    by_name = {n.name: i for i, n in enumerate(nodes)}
    out: list[tuple[int, int]] = []
    seen: dict[tuple[int, int], int] = {}
    for r, item in enumerate(ctx.seq(raw, "placement")):
        path = f"placement[{r}]"
        if isinstance(item, str) and ":" in item:
            node_ref, _, dev = item.rpartition(":")
        elif isinstance(item, list) and len(item) == 2:
            node_ref, dev = item
        elif isinstance(item, dict) and set(item) == {"node", "device"}:
            node_ref, dev = item["node"], item["device"]
        else:
            ctx.fail(path, f"expected 'node:device', [node, device] or {{node, device}}: {item!r}")
        if isinstance(node_ref, int) and not isinstance(node_ref, bool):
            pos = node_ref if 0 <= node_ref < len(nodes) else None
        else:
            pos = by_name.get(str(node_ref))
        if pos is None:
            close = difflib.get_close_matches(str(node_ref), list(by_name), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            ctx.fail(path, f"node {node_ref!r} does not exist{hint}")
        idx = ctx.as_int(dev, path, 0)
        if not any(d.index == idx for d in nodes[pos].devices):
            ctx.fail(path, f"node {nodes[pos].name} has no device {idx}")
        if (pos, idx) in seen:
            ctx.fail(path, f"slot {nodes[pos].name}:{idx} is already rank {seen[(pos, idx)]}")
        seen[(pos, idx)] = r
        out.append((pos, idx))
    if ranks is not None and ranks != len(out):
        ctx.fail("ranks", f"{ranks} ranks but placement lists {len(out)}")
    return tuple(out), None
