"""Hostile topology inputs end in a one-line InputError, never a hang, crash or exit 3."""

from __future__ import annotations

from pathlib import Path

import pytest

from xpuperf.errors import InputError
from xpuperf.topology import presets
from xpuperf.topology.loader import load

LAUGHS = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{c}: &{c} [{', '.join([f'*{p}'] * 9)}]\n" for p, c in zip("abcdefg", "bcdefgh", strict=True)
)


@pytest.mark.parametrize(
    ("name", "text", "match"),
    [
        ("laughs.yaml", LAUGHS, "expands to more than"),
        ("deep.json", "[" * 100_000 + "]" * 100_000, "nested too deeply"),
        ("deep.yaml", "[" * 100_000 + "]" * 100_000, "nested too deeply"),
        (
            "count.yaml",
            "schema: xpuperf.topology/1\nnodes:\n  - count: 1000000000\n    devices: 8\n",
            "must be <= 100000 nodes",
        ),
        (
            "cards.yaml",
            "schema: xpuperf.topology/1\nnodes:\n  - devices: 100000000\n",
            "must be <= 4096 cards",
        ),
        (
            "total.yaml",
            "schema: xpuperf.topology/1\nnodes:\n  - count: 1000\n    devices: 4096\n",
            "would exceed 1000000 cards",
        ),
        (
            "cpus.yaml",
            "schema: xpuperf.topology/1\nnodes:\n  - devices: 8\n    numa_nodes:\n"
            '      - id: 0\n        cpus: "0-999999999"\n',
            "more than 65536 CPUs",
        ),
    ],
)
def test_hostile_description_is_refused(tmp_path: Path, name: str, text: str, match: str) -> None:
    f = tmp_path / name
    f.write_text(text)
    with pytest.raises(InputError, match=match):
        load(f)


def test_huge_preset_node_count_is_refused() -> None:
    with pytest.raises(ValueError, match="between 1 and 100000"):
        presets.preset("dgx-a100", 10**9)
    with pytest.raises(ValueError, match="at most 100000 nodes"):
        presets.generic(10**9, 8)
    with pytest.raises(ValueError, match="1000000 cards in all"):
        presets.generic(1000, 4096)


@pytest.mark.parametrize(
    ("text", "mapping"),
    [("hello world\nfoo bar\n", False), ("", False), ("- a\n- b\n", False), ("nodes: []\n", True)],
)
def test_text_that_is_no_topology_names_both_kinds(
    tmp_path: Path, text: str, mapping: bool
) -> None:
    # `topo check junk.txt` said "a topology description is a mapping with schema: …", which
    # names neither what the file should be nor the tool outputs that are accepted; a mapping
    # without its schema line is still judged by the loader (schema: missing)
    from xpuperf.topology.importers import load_any

    p = tmp_path / "t.txt"
    p.write_text(text)
    with pytest.raises(InputError) as e:
        load_any(p)
    if mapping:
        assert "schema: missing" in str(e.value)
    else:
        assert "neither a topology description" in str(e.value)
        assert "nvidia-smi topo -m" in str(e.value)
