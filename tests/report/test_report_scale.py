"""Analyze report past the rank limit: rows become nodes in natural order, and the page says so."""

from __future__ import annotations

from xpuperf.analysis import analyze
from xpuperf.report import figures as fg
from xpuperf.report.html import build_view
from xpuperf.report.markdown import MAX_BYTES, render_markdown
from xpuperf.report.plotting import natural_key
from xpuperf.synth import Scenario, generate


def test_natural_key_orders_numbers_by_value() -> None:
    names = ["node100", "node10", "node9", "node09b", "gpu-2", "gpu-10"]
    assert sorted(names, key=natural_key) == ["gpu-2", "gpu-10", "node9", "node09b", "node10",
                                              "node100"]  # fmt: skip


def test_808_ranks_become_101_nodes_in_natural_order() -> None:
    # 808 ranks of 8 per node = 101 nodes, node00 … node100; rank 805 (node100) is 25 % slow
    run = generate(Scenario(ranks=808, cards_per_node=8, steps=12, warmup_steps=2,
                            slow_ranks={805: 0.25}, seed=3))  # fmt: skip
    result = analyze(run)
    view = build_view(result)
    heat = next(f for f in view["figures"] if f["id"] == fg.FIG_HEATMAP)["data"][0]
    expected = [f"node{i:02d}" for i in range(101)]
    assert heat["y"] == expected  # node99 before node100, not node10 before node100
    hot = [sum(v for v in row if v is not None) / len(row) for row in heat["z"]]
    assert hot.index(max(hot)) == 100  # the slow rank's node is the hot (last) row
    bars = next(f for f in view["figures"] if f["id"] == fg.FIG_BREAKDOWN)["data"][0]
    assert bars["x"] == expected
    assert any("808 ranks > 256: rows are nodes" in n for n in view["notes"])
    assert len(render_markdown(result).encode()) < MAX_BYTES
