"""docs/topology.md: each preset's example file loads and equals the built-in preset."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest

from xpuperf.topology import loads, preset
from xpuperf.topology.presets import NODE_PRESETS

DOC = Path(__file__).resolve().parents[2] / "docs" / "topology.md"
BLOCK = re.compile(r"<!-- preset: ([\w-]+) -->\n```yaml\n(.*?)```", re.S)
EXAMPLES = dict(BLOCK.findall(DOC.read_text(encoding="utf-8")))


def test_every_preset_has_an_example() -> None:
    assert set(EXAMPLES) == set(NODE_PRESETS) - {"hgx-h100"}  # alias of dgx-h100


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_doc_example_equals_preset(name: str) -> None:
    from_doc = loads(EXAMPLES[name], source=f"docs/topology.md[{name}]")
    built = preset(name)
    assert len(from_doc.nodes) == len(built.nodes)
    assert from_doc.network == built.network
    for a, b in zip(from_doc.nodes, built.nodes, strict=True):
        assert replace(a, name=b.name) == b
