"""Fuzz the topology importers and the description loader: a Cluster or InputError, nothing else.

Targets: ``import_files`` on mutated real tool outputs, one target per importer (sniffing,
parsing, merging and assembling run as in ``xpuperf topo import``); ``load_any`` (``topo show
FILE``) on the same files; ``load`` on mutated YAML and JSON descriptions (byte mutations), and
``loads`` on structure-aware mutations (a value or key of a valid description replaced by a
hostile one: huge, negative, NaN, wrong type, deep nesting); ``read_binding`` (``topo check
--binding``) on mutated binding files, sniffed or with each format forced.
"""

from __future__ import annotations

import contextlib
import json
import math
import tempfile
from pathlib import Path

import pytest
import yaml
from hypothesis import example, given
from hypothesis import strategies as st

from tests.fuzz.harness import DATA, check, fuzz_settings, mutated, read_seeds
from xpuperf.errors import InputError
from xpuperf.topology.binding import FORMATS as BINDING_FORMATS
from xpuperf.topology.binding import BindingFile, read_binding
from xpuperf.topology.importers import IMPORTERS, import_files, load_any, parse_text
from xpuperf.topology.importers.assemble import to_description
from xpuperf.topology.loader import load, loads
from xpuperf.topology.model import Cluster

IMPORT_DIRS = {
    "nvidia-smi": "topology_import_nvsmi",
    "numactl": "topology_import_numactl",
    "lscpu": "topology_import_lscpu",
    "npu-smi": "topology_import_lscpu",  # the Kunpeng dump holds lscpu and npu-smi info
    "nccl-xml": "topology_import_ncclxml",
    "rocm-smi": "topology_import_rocmsmi",
    "hccl-ranktable": "topology_import_ranktable",
    "mx-smi": "topology_import_mxsmi",
    "npu-smi-topo": "topology_import_npusmitopo",
    "nvidia-smi-nvlink": "topology_import_nvlink",
    "lstopo": "topology_import_lstopo",
    "nccl-graph": "topology_import_ncclgraph",
}
ALL_TOOL_SEEDS = [s for d in sorted(set(IMPORT_DIRS.values())) for s in read_seeds(d)]


def test_every_importer_has_seeds() -> None:
    assert set(IMPORT_DIRS) == set(IMPORTERS)


def _descriptions() -> list[tuple[str, bytes]]:
    """The hand-written example plus every imported sample written as a description."""
    out = [("cluster.yaml", (DATA / "topology_example/cluster.yaml").read_bytes())]
    for name, data in ALL_TOOL_SEEDS:
        try:
            desc = to_description(parse_text(data.decode(), name))
        except InputError:  # CPU-only outputs (lscpu, numactl) describe no cards
            continue
        out.append((name + ".yaml", yaml.safe_dump(desc, sort_keys=False).encode()))
    return out


DESCRIPTIONS = _descriptions()


def _run(target: str, fn, name: str, data: bytes):
    with tempfile.TemporaryDirectory() as d:
        p = Path(d, name)
        p.write_bytes(data)
        return check(target, fn, p, expect=(InputError,))


@pytest.mark.parametrize("importer", sorted(IMPORT_DIRS))
@fuzz_settings()
@given(data=st.data())
def test_importer(importer: str, data) -> None:
    name, content = data.draw(mutated(read_seeds(IMPORT_DIRS[importer])))
    res = _run(f"topo import ({importer} samples)", lambda p: import_files([p]), name, content)
    if res is not None:
        assert isinstance(res.cluster, Cluster)
        assert res.cluster.nodes


@fuzz_settings()
@given(seed=mutated(ALL_TOOL_SEEDS + DESCRIPTIONS))
def test_load_any(seed) -> None:
    name, content = seed
    res = _run("topo show (load_any)", load_any, name, content)
    assert res is None or isinstance(res, Cluster)


@fuzz_settings()
@given(seed=mutated(DESCRIPTIONS), as_json=st.booleans())
def test_load_description_bytes(seed, as_json: bool) -> None:
    name, content = seed
    if as_json:
        with contextlib.suppress(Exception):  # broken YAML: feed the bytes as they are
            content = json.dumps(yaml.safe_load(content)).encode()
    res = _run("topology load (bytes)", load, name + (".json" if as_json else ""), content)
    assert res is None or isinstance(res, Cluster)


HOSTILE_VALUES = st.one_of(
    st.sampled_from([0, -1, -(10**9), 10**30, 2**63, math.nan, math.inf, -math.inf, 1e-300, True,
                     None, "", "x", "-5us", "1e999GB/s", "0-4294967296", "NaN", [], {}, [[[]]]]),
    st.integers(), st.floats(), st.text(max_size=20),
    st.lists(st.integers(-5, 100), max_size=12),
)  # fmt: skip


def _paths(obj, prefix=()):
    yield prefix
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _paths(v, (*prefix, i))


@fuzz_settings()
@given(data=st.data())
@example(data=None)
def test_load_description_structure(data) -> None:
    base = yaml.safe_load(DESCRIPTIONS[0][1])
    if data is not None:
        base = yaml.safe_load(data.draw(st.sampled_from(DESCRIPTIONS))[1])
        for _ in range(data.draw(st.integers(1, 4))):
            paths = [p for p in _paths(base) if p]
            path = data.draw(st.sampled_from(paths))
            parent = base
            for k in path[:-1]:
                parent = parent[k]
            if data.draw(st.integers(0, 5)) == 0 and isinstance(parent, dict):
                parent[data.draw(st.text(max_size=12))] = parent.pop(path[-1])  # rename a key
            elif data.draw(st.integers(0, 5)) == 0 and isinstance(parent, list):
                del parent[path[-1]]
            else:
                parent[path[-1]] = data.draw(HOSTILE_VALUES)
    text = json.dumps(base)  # NaN/inf become the JSON extensions Python accepts
    res = check(
        "topology loads (structure)", loads, text, "json", "fuzz.json", expect=(InputError,)
    )
    assert res is None or isinstance(res, Cluster)


BINDING_SEEDS = read_seeds("topology_binding")


@fuzz_settings()
@given(seed=mutated(BINDING_SEEDS), forced=st.sampled_from([None, *sorted(BINDING_FORMATS)]))
def test_binding_parsers(seed, forced: str | None) -> None:
    """``topo check --binding FILE [--binding-format F]``: sniffed, or each format forced."""
    name, content = seed
    res = _run("binding (read_binding)", lambda p: read_binding(p, forced), name, content)
    assert res is None or isinstance(res, BindingFile)
