"""busbw collapsing in the middle of a sweep (XP611): found, left out of the fit, worded as a
fabric finding. Sample: tests/data/calibrate_sweep_collapse (README there)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from xpuperf.calibrate import calibrate_files, sweep
from xpuperf.findings import CheckStatus
from xpuperf.report.calibrate_html import build_calibrate_view
from xpuperf.report.calibrate_report import to_json_dict

DATA = Path(__file__).resolve().parent.parent / "data"
COLLAPSE = DATA / "calibrate_sweep_collapse" / "all_reduce_16r_mi300x_collapse_32M-128M.txt"
HEALTHY = DATA / "calibrate_curve_h100_link" / "all_reduce_8xh100_plateau360.txt"
MIB = 1 << 20


def test_collapsed_needs_a_fall_and_a_recovery_of_four_times():
    s = np.array([1, 2, 4, 8, 16, 32]) * MIB
    got = sweep.collapsed(s, np.array([1.0, 10, 20, 2, 21, 22]))
    assert list(got["size_bytes"]) == [8 * MIB]
    assert got["neighbour_busbw_GBps"].iloc[0] == 20  # min(best before 20, best after 22)
    assert sweep.collapsed(s, np.array([1.0, 10, 20, 6, 21, 22])).empty  # 6 × 4 = 24 > 20
    assert sweep.collapsed(s, np.array([1.0, 10, 20, 21, 22, 2])).empty  # no recovery after
    # a latency-bound size that doubled (best before it 0.2 < 10 % of the best 22): left alone
    assert sweep.collapsed(s, np.array([0.1, 0.2, 0.01, 8, 21, 22])).empty


def test_sample_collapse_found_excluded_and_the_fit_keeps_the_model():
    res = calibrate_files([COLLAPSE])
    (fit,) = res.fits
    ex = fit.excluded
    assert list(ex["size_bytes"]) == [32 * MIB, 64 * MIB, 128 * MIB]
    # 64 MiB row as printed: 36515 µs; busbw = 1.875 · 2^26 / 36515e3 = 3.446 GB/s (printed 3.45)
    assert ex["measured_busbw_GBps"].iloc[1] == pytest.approx(1.875 * 2**26 / 36515e3)
    # it fell from 16 MiB: 1.875 · 2^24 / 793.4e3 = 39.65 GB/s (printed 39.65)
    assert ex["neighbour_busbw_GBps"].iloc[1] == pytest.approx(1.875 * 2**24 / 793.4e3)
    assert set(fit.points["size_bytes"]).isdisjoint(ex["size_bytes"])
    # the model the sample was written from: α 50 µs, B 42 GB/s
    assert fit.busbw_GBps == pytest.approx(42, rel=0.01)
    assert fit.latency_us == pytest.approx(50, rel=0.01)
    codes = [f.code for f in res.findings]
    assert "XP611" in codes
    assert "XP602" not in codes
    (f,) = [f for f in res.findings if f.code == "XP611"]
    drop = (1.875 * 2**24 / 793.4e3) / (1.875 * 2**26 / 36515e3)  # 11.5
    assert f.data["worst_drop"] == pytest.approx(drop)
    assert f.data["sizes_bytes"] == [32 * MIB, 64 * MIB, 128 * MIB]
    assert "worst ×11.5 below its neighbours (threshold ×4" in f.message
    assert "not noise — rerunning with more iterations will not remove it" in f.message
    assert "(-b 32M -e 128M)" in f.message
    assert "adaptive routing" in f.message
    assert "PCIe ACS" in f.message
    check = next(c for c in res.checks if c.name == "calibrate.sweep_collapse")
    assert (check.status, check.codes) == (CheckStatus.PROBLEM, ("XP611",))


def test_json_lists_the_excluded_sizes():
    doc = to_json_dict(calibrate_files([COLLAPSE]))
    (ex,) = [f["excluded"] for f in doc["fits"]]
    assert [e["size_bytes"] for e in ex] == [32 * MIB, 64 * MIB, 128 * MIB]
    assert ex[1]["measured_busbw_GBps"] == pytest.approx(3.446, abs=0.001)
    assert ex[1]["fitted_busbw_GBps"] == pytest.approx(41.3, abs=0.2)  # the α–β curve there


def test_hccl_demo_rerun_uses_its_own_flags():
    (fit,) = calibrate_files([COLLAPSE]).fits
    fit.tool = "hccl_demo"
    (f,) = sweep.findings(fit)
    assert "(--size_range 32M 128M)" in f.message
    assert "-b 32M" not in f.message


def test_healthy_sweep_is_clean():
    res = calibrate_files([HEALTHY])
    assert res.fits[0].excluded is None
    assert not [f for f in res.findings if f.code == "XP611"]
    check = next(c for c in res.checks if c.name == "calibrate.sweep_collapse")
    assert check.status == CheckStatus.CLEAN


def test_html_view_draws_the_left_out_sizes_and_names_the_run():
    view = build_calibrate_view(calibrate_files([COLLAPSE]))
    (fig,) = view["figures"]
    left = fig["data"][-1]
    assert left["name"] == "left out: busbw collapsed (XP611)"
    assert left["x"] == [32 * MIB, 64 * MIB, 128 * MIB]
    assert left["y"][1] == 3.446  # 1.875 · 2^26 / 36515e3, rounded to 3 decimals
    assert "(all_reduce_16r_mi300x_collapse_32M-128M.txt:23)" in fig["title"]
    assert view["fits"]["rows"][0][-1] == "all_reduce_16r_mi300x_collapse_32M-128M.txt:23"
