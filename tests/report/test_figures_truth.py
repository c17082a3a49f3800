"""Figures that tell the truth (issue 19 part 6), on the view model: axes from 0, heat-map
colours clamped around the straggler threshold, a reason instead of a blank heat map, node rows
that show their worst rank, a single-card breakdown drawn to the step time, the plan's speedup
axis from 0 and the calibrate page's bandwidth figure. The same pages are drawn in Chromium in
tests/report/test_html_truth.py."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

from xpuperf.analysis import analyze
from xpuperf.calibrate.run import calibrate_files
from xpuperf.pipeline import analyze_logs
from xpuperf.report import figures as fg
from xpuperf.report.calibrate_html import build_calibrate_view
from xpuperf.report.plotting import CALM_SCALE, clamped_colors
from xpuperf.synth import Scenario, generate
from xpuperf.topology import presets

ROOT = Path(__file__).resolve().parents[2]
H100 = ROOT / "tests/data/calibrate_k8s_h100/17_nccltests_k8s-mpijob-2node-16xh100-orted-launch.txt"


def _z(fig: dict) -> np.ndarray:
    z = fig["data"][0]["z"]
    return np.array([[np.nan if v is None else v for v in row] for row in z], dtype=float)


def test_fps_axis_starts_at_zero() -> None:
    fig = fg.fps_figure(analyze(generate(Scenario(ranks=4, steps=60, seed=1))))
    assert fig["layout"]["yaxis"]["rangemode"] == "tozero"


def test_heatmap_colours_are_clamped_at_twice_the_threshold() -> None:
    # threshold 0.05 → colours span 1 ± 0.10; the threshold 1.05 sits at (1.05 − 0.9) / 0.2 =
    # 0.75 of the scale (light red), the median 1.0 at 0.5 (white)
    res = analyze(generate(Scenario(ranks=8, steps=120, seed=4)))
    assert res.stragglers.threshold == 0.05
    trace = fg.heatmap_figure(res)["data"][0]
    assert (trace["zmin"], trace["zmax"]) == (0.9, 1.1)
    assert trace["zauto"] is False
    assert dict(map(tuple, CALM_SCALE))[0.75] == "#f4a582"
    assert trace["colorbar"]["ticktext"][3] == "1.05 (threshold)"
    assert trace["colorbar"]["ticktext"][0] == "≤0.9"
    # with --straggler-threshold 0.1 the span follows: 1 ± 0.2
    assert (clamped_colors(0.1)["zmin"], clamped_colors(0.1)["zmax"]) == (0.8, 1.2)


def test_a_healthy_job_stays_in_the_pale_band() -> None:
    # synth noise: log-normal σ = 0.02 on each phase, so a rank's work deviates from the median
    # rank by ~1-2 %: median |z − 1| < 0.02 = the white band (0.4 × threshold), none clamped
    res = analyze(generate(Scenario(ranks=8, steps=200, seed=5)))
    z = _z(fg.heatmap_figure(res))
    assert float(np.nanmedian(np.abs(z - 1))) < 0.02
    assert float(np.nanmax(z)) < 1.1
    assert float(np.nanmin(z)) > 0.9


def test_node_rows_show_the_worst_rank() -> None:
    # 300 ranks, 8 per node (> 256: rows are nodes); rank 13 (node01) computes 25 % slower.
    # The worst rank of node01 is ~1.25 × the median at every step; the mean of its 8 ranks
    # would be ~1 + 0.25 × (compute share ≈ 0.8) / 8 ≈ 1.03 and look healthy
    res = analyze(generate(Scenario(ranks=300, cards_per_node=8, steps=20, slow_ranks={13: 0.25})))
    fig = fg.heatmap_figure(res)
    z = _z(fig)
    labels = fig["data"][0]["y"]
    hot = labels.index("node01")
    assert float(np.nanmedian(z[hot])) > 1.15
    assert float(np.nanmedian(np.delete(z, hot, axis=0))) < 1.05
    assert fig["layout"]["yaxis"]["title"]["text"] == "node (worst)"
    assert "rows are nodes (their worst rank)" in fig["note"]
    bars = fg.breakdown_figure(res)
    comp = next(t for t in bars["data"] if t["name"] == "compute")
    i = comp["x"].index("node01")
    others = [y for j, y in enumerate(comp["y"]) if j != i]
    assert comp["y"][i] > 1.15 * float(np.median(others))  # the node's slowest rank, not a mean


def test_no_blank_heatmap_when_per_rank_work_is_missing() -> None:
    res = analyze(generate(Scenario(ranks=8, steps=40, seed=6)))
    rs = res.rank_steps.assign(work_s=np.nan)
    fig = fg.heatmap_figure(replace(res, rank_steps=rs))
    assert fig["data"] == []
    assert "No per-rank work" in fig["layout"]["annotations"][0]["text"]
    assert fig["note"].startswith("No per-rank work")
    job_level = replace(res, rank_steps=pd.DataFrame(columns=res.rank_steps.columns))
    fig = fg.heatmap_figure(job_level)
    assert fig["data"] == []
    assert "No per-rank step times in the input (8 ranks" in fig["note"]
    one = analyze(generate(Scenario(ranks=1, steps=40, seed=6)))
    assert fg.heatmap_figure(one) is None  # one card: nothing to compare, no figure


def test_single_card_breakdown_reaches_the_step_time() -> None:
    # sample_logs/single_card/baseline.csv gives step time and data time only: the bar is data
    # (median 0.0079865 s) plus "not broken down" up to the median step time 0.3119355 s
    res = analyze_logs([ROOT / "sample_logs" / "single_card"])
    fig = fg.breakdown_figure(res)
    by = {t["name"]: t["y"][0] for t in fig["data"]}
    assert set(by) == {"data", "not broken down in the logs"}
    assert by["data"] == 0.007987
    assert abs(sum(by.values()) - 0.3119355) < 2e-6


def test_full_phases_add_no_grey_segment() -> None:
    res = analyze(generate(Scenario(ranks=4, steps=40, seed=7)))
    names = [t["name"] for t in fg.breakdown_figure(res)["data"]]
    assert names == ["compute", "comm", "data", "other"]


def test_plan_speedup_axis_starts_at_zero(tmp_path: Path) -> None:
    from xpuperf.report.figures_plan import speedup_figure

    doc = {
        "scaling": [{"cards": 1, "speedup": 1.0}, {"cards": 8, "speedup": 0.93},
                    {"cards": 64, "speedup": 0.86}],
        "target_cards": 64,
    }  # fmt: skip
    fig = speedup_figure(doc)
    lo, hi = fig["layout"]["yaxis"]["range"]
    assert lo == 0.0
    assert abs(hi - 1.05) < 1e-12  # 1.0 (the largest speedup) × 1.05


def test_calibrate_view_draws_busbw_from_zero_with_the_link() -> None:
    # 16 × H100 on 2 nodes (dgx-h100 preset): XP601 names the ceiling the figure draws
    res = calibrate_files([H100])
    cluster = presets.preset("dgx-h100", 2)
    from xpuperf.calibrate.run import add_topology_findings

    add_topology_findings(res, cluster, "dgx-h100")
    view = build_calibrate_view(res, cluster)
    fig = view["figures"][0]
    assert view["figure_ids"] == ["fig-calib-0"]
    assert fig["layout"]["yaxis"]["range"][0] == 0.0
    assert fig["layout"]["xaxis"]["type"] == "log"
    ceiling = next(f.data["ceiling_GBps"] for f in res.findings if f.code == "XP601")
    assert fig["layout"]["shapes"][0]["y0"] == ceiling
    measured = fig["data"][0]["y"]
    assert len(measured) == len(res.fits[0].points)
    assert view["fits"]["rows"][0][0] == "all_reduce on 16 ranks / 2 nodes"
