"""Scaling analysis: efficiency per row vs one card, where the loss is, honesty of the verdict.
Expected values are worked out by hand from the fixture numbers (comments give the sums)."""

from __future__ import annotations

from pathlib import Path

import pytest

from xpuperf.analysis.scaling import Baseline, analyze_scaling
from xpuperf.errors import InputError
from xpuperf.findings import CheckStatus
from xpuperf.readers.scaling import read_scaling_table

DATA = Path(__file__).resolve().parent.parent / "data"


def run(name: str, **kw):
    return analyze_scaling(read_scaling_table(DATA / name), **kw)


def codes(res) -> list[str]:
    return [f.code for f in res.findings]


def status(res) -> dict[str, str]:
    return {c.name: c.status.value for c in res.checks}


def test_intra_node_loss_and_oversubscription() -> None:
    res = run("scaling_markdown_intra/table.md")
    # per card / one card: 722/2/380 = 0.95, 1292/4/380 = 0.85, 2219/8/380 = 0.72993
    assert res.rows["efficiency"].tolist() == pytest.approx([1, 0.95, 0.85, 0.729934], abs=1e-6)
    assert res.rows["throughput_ratio"].iloc[3] == pytest.approx(2219 / 380)
    # xpuperf's speedup is per card vs one card alone: 2219 / 8 / 380
    assert res.rows["speedup"].iloc[3] == pytest.approx(2219 / 8 / 380)
    assert res.location == "inside one node"
    assert res.confidence == "suspicion"  # four rows: never more than a suspicion
    assert set(codes(res)) == {"XP310", "XP311", "XP313", "XP314"}
    xp311 = next(f for f in res.findings if f.code == "XP311")
    assert "not the network" in xp311.message
    assert "0.730" in xp311.message
    assert "suspicion" in xp311.message
    assert "0.90" in xp311.message
    xp313 = next(f for f in res.findings if f.code == "XP313")
    # per-card time ratio 1/eff: 1, 760/722, 1520/1292, 3040/2219 = 1.369986 — grows
    assert xp313.data["per_card_time_ratio"] == pytest.approx([1, 1.052632, 1.176471, 1.369986],
                                                              abs=1e-5)  # fmt: skip
    assert "OMP_NUM_THREADS × processes per node ≤ physical cores" in xp313.message
    xp314 = next(f for f in res.findings if f.code == "XP314")
    assert "0.81 at 8 cards" in xp314.message
    assert "0.730 recomputed" in xp314.message
    st = status(res)
    assert st["scaling.inter_node"] == "not_checked"
    assert (
        "no multi-node row"
        in next(c for c in res.checks if c.name == "scaling.inter_node").evidence
    )
    assert st["scaling.batch"] == "not_checked"


def test_inter_node_loss_with_clean_intra() -> None:
    res = run("scaling_csv_internode/scaling.csv")
    # 3148.8/8/410 = 0.96 on one node; 4592/16/410 = 0.70 on 2 nodes: factor 0.70/0.96 = 0.7292
    assert res.intra.efficiency == pytest.approx(0.96)
    assert [s.factor for s in res.inter] == pytest.approx([0.729167, 0.729167], abs=1e-6)
    assert res.location == "across nodes"
    assert codes(res) == ["XP310", "XP312"]
    st = status(res)
    assert st["scaling.intra_node"] == "clean"
    assert st["scaling.inter_node"] == "problem"
    assert st["scaling.reported"] == "clean"  # its efficiency column is right
    assert st["scaling.batch"] == "clean"
    assert "NCCL" in next(f for f in res.findings if f.code == "XP312").message


def test_healthy_table_is_clean_only_where_evidence_exists() -> None:
    res = run("scaling_text_healthy/results.txt")
    # 38700/32/1290 = 0.9375 >= 0.90; one node: 10010/8/1290 = 0.96996;
    # across: 0.95155/0.96996 = 0.98102 and 0.9375/0.96996 = 0.96654
    assert res.largest["efficiency"] == pytest.approx(0.9375)
    assert [s.factor for s in res.inter] == pytest.approx([0.98102, 0.96654], abs=1e-5)
    assert res.findings == []
    assert res.location == "none"
    st = status(res)
    for name in ("efficiency", "intra_node", "inter_node", "oversubscription", "superlinear"):
        assert st[f"scaling.{name}"] == "clean"
    assert st["scaling.reported"] == "not_checked"
    assert st["scaling.batch"] == "not_checked"


def test_step_time_without_batch_uses_weak_scaling_assumption() -> None:
    res = run("scaling_lines_steptime/post.txt")
    # t1/tN: 0.210/0.231 = 0.90909, 0.210/0.262 = 0.80153
    assert res.rows["efficiency"].tolist() == pytest.approx([1, 0.909091, 0.801527], abs=1e-6)
    assert res.mode == "assumed weak"
    assert {"XP311", "XP313"} <= set(codes(res))


def test_location_unknown_without_node_information() -> None:
    res = run("scaling_dle_readme/perf.md")
    # batch 2: 84/8/12 = 0.875 (below 0.90); batch 4: 93.6/8/13 = 0.9
    assert res.largest["efficiency"] == pytest.approx(0.875)
    assert res.location == "unknown"
    xp310 = next(f for f in res.findings if f.code == "XP310")
    assert "cannot be told" in xp310.message
    assert "nodes" in xp310.message
    st = status(res)
    assert st["scaling.intra_node"] == st["scaling.inter_node"] == "not_checked"
    assert st["scaling.oversubscription"] == "not_checked"
    # each row has a one-card row at its own batch; the stated speedups (3.80x, 7.00x) agree
    assert st["scaling.batch"] == "clean"
    assert st["scaling.reported"] == "clean"


def test_cards_per_node_argument_places_rows() -> None:
    res = run("scaling_dle_readme/perf.md", cards_per_node=8)
    assert res.node_info == "8 cards per node (given)"
    assert res.location == "inside one node"  # 0.875 at 8 cards on one node


def test_strong_scaling_rows_are_normalised_and_said() -> None:
    res = run("scaling_strong/table.md")
    # per-card batch 256, 128, 64 (global 256): strong; 1500/2/800 = 0.9375, 2720/4/800 = 0.85
    assert res.mode == "strong"
    assert res.rows["efficiency"].tolist() == pytest.approx([1, 0.9375, 0.85])
    assert res.rows["batch_note"].tolist() == ["", "normalised", "normalised"]
    xp315 = next(f for f in res.findings if f.code == "XP315")
    assert "strong scaling" in xp315.message
    assert "128" in xp315.message


def test_step_time_at_another_batch_is_refused() -> None:
    text = ("| GPUs | batch per GPU | s/it |\n|---|---|---|\n| 1 | 32 | 0.2 |\n| 2 | 32 | 0.21 |\n"
            "| 4 | 64 | 0.3 |\n")  # fmt: skip
    table = read_scaling_table(text)
    table.rows.loc[2, "throughput_per_card_samples_per_s"] = float("nan")  # time only
    res = analyze_scaling(table)
    assert res.rows["batch_note"].iloc[2].startswith("refused")
    assert "1 refused" in next(f for f in res.findings if f.code == "XP315").message


def test_no_one_card_row_is_refused_unless_baseline() -> None:
    with pytest.raises(InputError, match="no one-card row") as e:
        run("scaling_tsv_no_baseline/table.tsv")
    assert ":1: " in str(e.value)
    res = run("scaling_tsv_no_baseline/table.tsv",
              baseline=Baseline(throughput_per_card_samples_per_s=4100.0))  # fmt: skip
    # 3936.8/4100 = 0.96020; 3700.6/4100 = 0.90259; 3464.4/4100 = 0.84498
    assert res.rows["efficiency"].tolist() == pytest.approx([0.960195, 0.902585, 0.844976],
                                                            abs=1e-6)  # fmt: skip
    # across nodes: 0.84498/0.96020 = 0.88000 < 0.90 on 4 nodes; 2 nodes 0.94000
    assert [s.factor for s in res.inter] == pytest.approx([0.94, 0.88], abs=1e-5)
    assert "XP312" in codes(res)
    assert "XP311" not in codes(res)


def test_superlinear_row_is_flagged() -> None:
    res = analyze_scaling(read_scaling_table("GPUs,img/s\n1,100\n2,230\n"))
    # 230/2/100 = 1.15 > 1.05
    assert codes(res) == ["XP316"]
    assert {c.name: c.status for c in res.checks}["scaling.superlinear"] == CheckStatus.PROBLEM


def test_likely_needs_more_than_four_rows_and_two_agreeing() -> None:
    text = "GPUs,img/s\n1,100\n2,170\n4,320\n6,450\n8,560\n"
    res = analyze_scaling(read_scaling_table(text + "on a single node\n"))
    # 170/2/100=0.85, 0.80, 0.75, 0.70: four single-node rows below 0.90, five rows in all
    assert res.confidence == "likely"
    assert "likely: 4 rows agree" in next(f for f in res.findings if f.code == "XP311").message
