"""Read the ``nodes:`` entries of a topology description (used by :mod:`.loader`).

A node entry describes one host, or ``count`` identical hosts (named ``<name>-0`` …, or by a
``{i}`` placeholder in ``name``), or names a preset (``preset: dgx-a100``). Checks made here:
devices, NUMA nodes, NICs and PCIe switches that refer to each other must exist and agree;
bandwidths must be positive; a NIC may not be faster than the PCIe slot it hangs on (a Gb/s vs
GB/s mix-up); link patterns must name existing cards.
"""

from __future__ import annotations

import difflib
from dataclasses import replace
from typing import Any

from xpuperf.topology import build
from xpuperf.topology.build import NIC_PCIE_TOLERANCE
from xpuperf.topology.loader import Ctx, join, read_assumed
from xpuperf.topology.model import (
    DEFAULT_SYS_GBPS,
    LINK_KINDS,
    NODE_FIGURES,
    PCIE_GBPS_BY_GEN,
    PCIE_GEN6_X16_RAW_GBPS,
    Device,
    Link,
    Nic,
    Node,
    NumaNode,
    PcieSwitch,
)
from xpuperf.topology.schema import PATTERNS

# Sanity bounds on sizes a description may ask for (plan models up to 100 000 cards).
MAX_NODES = 100_000
MAX_CARDS_PER_NODE = 4096
MAX_CARDS = 1_000_000
MAX_LINK_COUNT = 1000  # links of one pair (NVLink: 18 per GPU on H100/B200); bounds typos
MAX_NUMA_NODES = 1024  # Linux MAX_NUMNODES (CONFIG_NODES_SHIFT = 10)


def read_nodes(ctx: Ctx, entries: list[Any]) -> tuple[list[Node], list[str]]:
    """All nodes, expanded, and for each the path of the entry it came from."""
    nodes: list[Node] = []
    origin: list[str] = []
    names: dict[str, str] = {}
    total_cards = 0
    for e, entry in enumerate(entries):
        path = f"nodes[{e}]"
        obj = ctx.mapping(entry, "node", path)
        count = ctx.integer(obj, "count", path, 1, 1)
        if count > MAX_NODES:
            ctx.fail(join(path, "count"), f"must be <= {MAX_NODES} nodes (got {count})")
        template = _preset(ctx, obj, path) if "preset" in obj else _node(ctx, obj, path)
        total_cards += count * len(template.devices)
        if total_cards > MAX_CARDS:
            ctx.fail(join(path, "count"), f"the cluster would exceed {MAX_CARDS} cards")
        base = ctx.text(obj, "name", path) or (template.name if "preset" in obj else "node")
        for i in range(count):
            if "{i}" in base:
                name = base.replace("{i}", str(i))
            elif count == 1 and "name" in obj:
                name = base
            else:
                name = f"{base}-{len(nodes) if 'name' not in obj else i}"
            if name in names:
                ctx.fail(join(path, "name"), f"node name {name!r} already used by {names[name]}")
            names[name] = path
            nodes.append(replace(template, name=name))
            origin.append(path)
    if not nodes:
        ctx.fail("nodes", "empty; a cluster needs at least one node")
    return nodes, origin


def _preset(ctx: Ctx, obj: dict[str, Any], path: str) -> Node:
    from xpuperf.topology import presets

    extra = sorted(set(obj) - {"preset", "name", "count"})
    if extra:
        ctx.fail(join(path, extra[0]), "cannot be combined with preset (only name and count)")
    name = ctx.text(obj, "preset", path)
    try:
        return presets.node_template(name)
    except KeyError:
        close = difflib.get_close_matches(name, presets.NODE_PRESETS, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        ctx.fail(
            join(path, "preset"),
            f"unknown preset {name!r}{hint} (known: {', '.join(presets.NODE_PRESETS)})",
        )


def _node(ctx: Ctx, obj: dict[str, Any], path: str) -> Node:
    gen = ctx.integer(obj, "pcie_gen", path, 1)
    pcie = ctx.qty(obj, "pcie_bw", path)
    if gen is not None:
        if pcie is not None:
            ctx.fail(join(path, "pcie_gen"), "give pcie_gen or pcie_bw_GBps, not both")
        if gen not in PCIE_GBPS_BY_GEN:
            ctx.fail(join(path, "pcie_gen"), f"must be one of {sorted(PCIE_GBPS_BY_GEN)}")
        pcie = PCIE_GBPS_BY_GEN[gen]
    assumed = read_assumed(ctx, obj, path, NODE_FIGURES)
    if gen is None and pcie is None:
        assumed.add("pcie_bw_GBps")
    sys_bw = ctx.qty(obj, "sys_bw", path)
    if sys_bw is None:
        sys_bw = DEFAULT_SYS_GBPS
        assumed.add("sys_bw_GBps")
    if "links" not in obj:
        assumed.add("links")
    numa = _numa_nodes(ctx, obj.get("numa_nodes"), join(path, "numa_nodes"))
    if "devices" not in obj:
        ctx.fail(join(path, "devices"), "missing; give a count (devices: 8) or a list")
    devices = _devices(ctx, obj["devices"], join(path, "devices"))
    switches = [
        _switch(ctx, s, f"{path}.pcie_switches[{i}]")
        for i, s in enumerate(ctx.seq(obj.get("pcie_switches", []), join(path, "pcie_switches")))
    ]
    limit = (pcie * NIC_PCIE_TOLERANCE, f"{pcie:g} GB/s") if pcie else None
    nics = [
        _nic(ctx, n, f"{path}.nics[{i}]", i, limit)
        for i, n in enumerate(ctx.seq(obj.get("nics", []), join(path, "nics")))
    ]
    pcie = pcie or build.infer_pcie_GBps(nics)
    node = Node("", tuple(devices), numa, tuple(nics), (), tuple(switches), pcie, sys_bw, assumed)
    node = _reconcile(ctx, node, path)
    links = _links(ctx, node, obj.get("links", []), join(path, "links"))
    return build.assign_nearest_nics(replace(node, links=links))


def _numa_nodes(ctx: Ctx, raw: Any, path: str) -> tuple[NumaNode, ...]:
    if raw is None:
        return ()
    if isinstance(raw, int) and not isinstance(raw, bool):
        count = ctx.as_int(raw, path, 1)
        if count > MAX_NUMA_NODES:
            ctx.fail(path, f"must be <= {MAX_NUMA_NODES} NUMA nodes (got {count})")
        return tuple(NumaNode(i) for i in range(count))
    out: list[NumaNode] = []
    for i, item in enumerate(ctx.seq(raw, path)):
        p = f"{path}[{i}]"
        ctx.mapping(item, "numa_node", p)
        nid = ctx.integer(item, "id", p, 0, i)
        if any(n.id == nid for n in out):
            ctx.fail(join(p, "id"), f"NUMA node {nid} listed twice")
        cpus = item.get("cpus", [])
        if isinstance(cpus, str):
            try:
                cpus = build.parse_cpus(cpus)
            except ValueError as e:
                ctx.fail(join(p, "cpus"), str(e))
        elif isinstance(cpus, int) and not isinstance(cpus, bool):
            cpus = (cpus,)
        else:
            cpus = tuple(ctx.as_int(c, f"{p}.cpus[{j}]") for j, c in enumerate(ctx.seq(cpus, p)))
        dist = item.get("distances")
        dist = () if dist is None else ctx.seq(dist, join(p, "distances"))
        dist = tuple(ctx.as_int(d, f"{p}.distances[{j}]", 1) for j, d in enumerate(dist))
        out.append(NumaNode(nid, tuple(cpus), ctx.qty(item, "memory", p), dist))
    for i, n in enumerate(out):
        if n.distances and len(n.distances) != len(out):
            ctx.fail(
                f"{path}[{i}].distances",
                f"has {len(n.distances)} values for {len(out)} NUMA nodes (one per NUMA node, in "
                "the order listed, as in numactl -H's distance matrix)",
            )
    return tuple(out)


def _per_card(ctx: Ctx, obj: dict[str, Any], key: str, n: int, path: str) -> list[Any]:
    """A shorthand field: one value for all cards or a list with one value per card."""
    v = obj.get(key)
    if isinstance(v, list):
        if len(v) != n:
            ctx.fail(join(path, key), f"has {len(v)} values for {n} cards")
        return v
    return [v] * n


def _devices(ctx: Ctx, raw: Any, path: str) -> list[Device]:
    if isinstance(raw, int) and not isinstance(raw, bool):
        raw = {"count": raw}
    if isinstance(raw, dict):
        ctx.mapping(raw, "devices_shorthand", path)
        n = ctx.integer(raw, "count", path, 1)
        if n is None:
            ctx.fail(join(path, "count"), "missing; how many cards has the node?")
        if n > MAX_CARDS_PER_NODE:
            ctx.fail(join(path, "count"), f"must be <= {MAX_CARDS_PER_NODE} cards (got {n})")
        ctx.number(raw, "peak_tflops", path)
        ctx.text(raw, "model", path)
        cols = {k: _per_card(ctx, raw, k, n, path) for k in ("numa_node", "nic", "pcie_switch")}
        items = [
            {
                "index": i,
                "model": raw.get("model"),
                "peak_tflops": raw.get("peak_tflops"),
                **{k: cols[k][i] for k in cols},
            }
            for i in range(n)
        ]
        paths = [f"{path}.{{}}[{i}]" for i in range(n)]
    else:
        items = ctx.seq(raw, path)
        paths = [f"{path}[{i}].{{}}" for i in range(len(items))]
    out: list[Device] = []
    for i, (item, p) in enumerate(zip(items, paths, strict=True)):
        base = p.replace(".{}", "").replace("{}", "")
        ctx.mapping(item, "device", base)
        idx = ctx.integer(item, "index", base, 0, i)
        if any(d.index == idx for d in out):
            ctx.fail(p.format("index"), f"device index {idx} listed twice")
        numa = item.get("numa_node")
        numa = None if numa is None else ctx.as_int(numa, p.format("numa_node"))
        tflops = ctx.number(item, "peak_tflops", base)
        out.append(
            Device(
                idx,
                ctx.text(item, "model", base),
                tflops,
                numa,
                ctx.text(item, "nic", base),
                ctx.text(item, "pcie_switch", base),
            )
        )
    if not out:
        ctx.fail(path, "a node needs at least one card")
    return out


def _switch(ctx: Ctx, raw: Any, path: str) -> PcieSwitch:
    ctx.mapping(raw, "pcie_switch", path)
    name = ctx.text(raw, "name", path)
    if name is None:
        ctx.fail(join(path, "name"), "missing")
    numa = ctx.integer(raw, "numa_node", path, 0)
    devs = tuple(
        ctx.as_int(d, f"{path}.devices[{j}]")
        for j, d in enumerate(ctx.seq(raw.get("devices", []), join(path, "devices")))
    )
    nics = tuple(str(x) for x in ctx.seq(raw.get("nics", []), join(path, "nics")))
    return PcieSwitch(name, numa, devs, nics)


def _nic(ctx: Ctx, raw: Any, path: str, i: int, limit: tuple[float, str] | None) -> Nic:
    """One NIC; refuses one faster than its PCIe slot (almost always Gb/s written as GB/s)."""
    ctx.mapping(raw, "nic", path)
    cards = tuple(
        ctx.as_int(c, f"{path}.cards[{j}]")
        for j, c in enumerate(ctx.seq(raw.get("cards", []), join(path, "cards")))
    )
    speed = ctx.qty(raw, "speed", path)
    lim, what = limit or (PCIE_GEN6_X16_RAW_GBPS, "128 GB/s even for PCIe Gen6 x16")
    if speed is not None and speed / 8 > lim:
        key = next(k for k in raw if k == "speed" or k.startswith("speed_"))
        ctx.fail(
            join(path, key),
            f"{speed:g} Gb/s ({speed / 8:g} GB/s) is faster than the PCIe link the NIC hangs on "
            f"({what}); did you mean {speed / 8:g} Gb/s? (b = bits, B = bytes)",
        )
    return Nic(
        ctx.text(raw, "name", path, f"nic{i}"),
        speed,
        ctx.integer(raw, "numa_node", path, 0),
        cards,
        ctx.text(raw, "pcie_switch", path),
    )


def _reconcile(ctx: Ctx, node: Node, path: str) -> Node:
    """Cross-check and fill devices ↔ PCIe switches ↔ NICs ↔ NUMA nodes."""
    idx = {d.index: i for i, d in enumerate(node.devices)}
    devs, nics = list(node.devices), list(node.nics)
    nic_pos = {n.name: i for i, n in enumerate(nics)}
    if len(nic_pos) != len(nics):
        ctx.fail(join(path, "nics"), "NIC names must be unique")
    for s, sw in enumerate(node.pcie_switches):
        sp = f"{path}.pcie_switches[{s}]"
        for j, d in enumerate(sw.devices):
            if d not in idx:
                ctx.fail(f"{sp}.devices[{j}]", f"device {d} does not exist on this node")
            dev = devs[idx[d]]
            if dev.pcie_switch not in (None, sw.name):
                ctx.fail(f"{sp}.devices[{j}]", f"card {d} is already under {dev.pcie_switch}")
            devs[idx[d]] = replace(
                dev, pcie_switch=sw.name, numa_node=_first(dev.numa_node, sw.numa_node)
            )
        for j, nm in enumerate(sw.nics):
            if nm not in nic_pos:
                ctx.fail(f"{sp}.nics[{j}]", f"NIC {nm!r} is not in this node's nics")
            n = nics[nic_pos[nm]]
            nics[nic_pos[nm]] = replace(
                n, pcie_switch=sw.name, numa_node=_first(n.numa_node, sw.numa_node)
            )
    owner: dict[int, str] = {}
    for k, n in enumerate(nics):
        for j, c in enumerate(n.cards):
            if c not in idx:
                ctx.fail(f"{path}.nics[{k}].cards[{j}]", f"device {c} does not exist on this node")
            if c in owner and owner[c] != n.name:
                ctx.fail(f"{path}.nics[{k}].cards[{j}]", f"card {c} is already on {owner[c]}")
            owner[c] = n.name
    for i, d in enumerate(devs):
        if d.nic is not None:
            if d.nic not in nic_pos:
                close = difflib.get_close_matches(d.nic, list(nic_pos), n=1)
                hint = f"; did you mean {close[0]!r}?" if close else ""
                ctx.fail(f"{path}.devices[{i}].nic", f"NIC {d.nic!r} is not in nics{hint}")
            if owner.get(d.index, d.nic) != d.nic:
                ctx.fail(
                    f"{path}.devices[{i}].nic",
                    f"{d.nic} but nics lists card {d.index} on {owner[d.index]}",
                )
            owner[d.index] = d.nic
    devs = [replace(d, nic=owner.get(d.index)) for d in devs]
    nics = [
        replace(n, cards=tuple(sorted(c for c, o in owner.items() if o == n.name))) for n in nics
    ]
    numa = node.numa_nodes
    refs = [(f"{path}.devices[{i}].numa_node", d.numa_node) for i, d in enumerate(devs)]
    refs += [(f"{path}.nics[{i}].numa_node", n.numa_node) for i, n in enumerate(nics)]
    refs += [
        (f"{path}.pcie_switches[{i}].numa_node", s.numa_node)
        for i, s in enumerate(node.pcie_switches)
    ]
    if numa:
        ids = [n.id for n in numa]
        for p, v in refs:
            if v is not None and v not in ids:
                ctx.fail(p, f"NUMA node {v} does not exist (this node has {_ids(ids)})")
    else:
        numa = tuple(NumaNode(i) for i in sorted({v for _, v in refs if v is not None}))
    return replace(node, devices=tuple(devs), nics=tuple(nics), numa_nodes=numa)


def _links(ctx: Ctx, node: Node, raw: Any, path: str) -> tuple[Link, ...]:
    out: list[Link] = []
    for i, item in enumerate(ctx.seq(raw, path)):
        out += _link_entry(ctx, node, item, f"{path}[{i}]")
    return build.merge_links(out)


def _link_entry(ctx: Ctx, node: Node, item: Any, p: str) -> list[Link]:
    """One ``links[]`` entry: an explicit pair or a pattern, expanded to pairs."""
    all_idx = [d.index for d in node.devices]
    ctx.mapping(item, "link", p)
    pattern = item.get("pattern")
    if pattern is not None:
        ctx.choice(str(pattern), PATTERNS, join(p, "pattern"))
    kind = "pcie" if pattern == "pcie_tree" else ctx.text(item, "kind", p)
    if kind is None:
        ctx.fail(join(p, "kind"), f"missing; one of {', '.join(LINK_KINDS)}")
    ctx.choice(kind, LINK_KINDS, join(p, "kind"))
    count = ctx.integer(item, "count", p, 1)
    if count is not None and count > MAX_LINK_COUNT:
        ctx.fail(join(p, "count"), f"must be <= {MAX_LINK_COUNT} links (got {count})")
    bw = ctx.qty(item, "bw", p)
    lat = ctx.qty(item, "latency", p, minimum_exclusive=False)

    def dev(v: Any, q: str) -> int:
        d = ctx.as_int(v, q)
        if d not in all_idx:
            ctx.fail(q, f"device {d} does not exist (this node has {_ids(all_idx)})")
        return d

    def dev_list(key: str) -> list[int]:
        if key not in item:
            return all_idx
        got = [dev(v, f"{p}.{key}[{j}]") for j, v in enumerate(ctx.seq(item[key], p))]
        if len(set(got)) != len(got):
            ctx.fail(join(p, key), "lists a card twice")
        return got

    if pattern is None:
        if "a" not in item or "b" not in item:
            ctx.fail(p, "a link is a pair (a, b) or a pattern: " + ", ".join(PATTERNS))
        a, b = dev(item["a"], join(p, "a")), dev(item["b"], join(p, "b"))
        if a == b:
            ctx.fail(join(p, "b"), f"a link joins two different cards (a = b = {a})")
        return [Link(a, b, kind, count, bw, lat)]
    if pattern == "full_mesh":
        return build.full_mesh(dev_list("devices"), kind, count, bw, lat)
    if pattern == "ring":
        return build.ring(dev_list("devices"), kind, count, bw, lat)
    if pattern == "pcie_tree":
        return build.pcie_tree(node.devices, bw, lat)
    if "groups" not in item:
        ctx.fail(join(p, "groups"), "missing; e.g. groups: [[0, 1, 2, 3], [4, 5, 6, 7]]")
    gs = []
    for g, grp in enumerate(ctx.seq(item["groups"], join(p, "groups"))):
        q = f"{p}.groups[{g}]"
        gs.append([dev(v, f"{q}[{j}]") for j, v in enumerate(ctx.seq(grp, q))])
    return build.groups(gs, kind, count, bw, lat)


def _first(a: Any, b: Any) -> Any:
    return a if a is not None else b


def _ids(ids: list[int]) -> str:
    return build.format_cpus(ids) if ids else "none"
