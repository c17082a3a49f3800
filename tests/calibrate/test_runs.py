"""Several benchmark runs in one file: read apart, fitted apart, compared (XP612, XP610).

Sample: tests/data/calibrate_runs (README there: the model each run was written from).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from xpuperf.calibrate import calibrate_files
from xpuperf.calibrate.nccltests import read_nccl_tests
from xpuperf.calibrate.single import Link
from xpuperf.cli.calibrate import calibrate
from xpuperf.findings import CheckStatus
from xpuperf.report.calibrate_report import to_json_dict

DATA = Path(__file__).resolve().parent.parent / "data" / "calibrate_runs"
THREE = DATA / "all_reduce_8_16_16_three_runs.txt"


def _check(result, name):
    return next(c for c in result.checks if c.name == name)


def test_three_runs_read_apart_with_their_hosts():
    res = read_nccl_tests(THREE)
    got = [(t.header_line, t.ranks, t.nodes, t.hosts, t.rows) for t in res.tables]
    assert got == [
        (15, 8, 1, ["node-a"], 21),
        (63, 16, 2, ["node-a", "node-b"], 21),
        (111, 16, 2, ["node-a", "node-c"], 21),
    ]
    big = res.frame[res.frame["size_bytes"] == 1 << 30]
    # as printed: run 1 t = 12 + 1.75·2^30/360e3 = 5231.6 µs, busbw 359.17;
    # run 2 t = 45 + 1.875·2^30/48e3 = 41988 µs, busbw 2^30/41988e3 · 1.875 = 47.95;
    # run 3 t = 45 + 1.875·2^30/30e3 = 67154 µs, busbw 29.98
    assert list(big["time_us"]) == [5231.6, 41988.0, 67154.0]
    assert list(big["busbw_GBps"]) == [359.17, 47.95, 29.98]
    assert pytest.approx(47.95, abs=0.005) == 1.875 * (1 << 30) / 41988e3


def test_each_run_is_its_own_fit_never_pooled():
    res = calibrate_files([THREE])
    fits = [(f.run, f.ranks, f.nodes, f.hosts) for f in res.fits]
    assert fits == [
        ("all_reduce_8_16_16_three_runs.txt:15", 8, 1, ["node-a"]),
        ("all_reduce_8_16_16_three_runs.txt:63", 16, 2, ["node-a", "node-b"]),
        ("all_reduce_8_16_16_three_runs.txt:111", 16, 2, ["node-a", "node-c"]),
    ]
    # the model each run was written from: α 12 µs / 360 GB/s, 45 µs / 48, 45 µs / 30 (±1 %)
    for fit, (lat, bw) in zip(res.fits, [(12, 360), (45, 48), (45, 30)], strict=True):
        assert fit.busbw_GBps == pytest.approx(bw, rel=0.01)
        assert fit.latency_us == pytest.approx(lat, rel=0.02)
    pooled = calibrate_files([THREE], pool=True)
    assert [(f.ranks, f.run) for f in pooled.fits] == [(8, ""), (16, "")]
    assert 30 < pooled.fits[1].busbw_GBps < 48  # pooling mixes the two fabrics: why it is opt-in


def test_xp612_lists_the_runs_and_what_differs():
    res = calibrate_files([THREE])
    (f,) = [f for f in res.findings if f.code == "XP612"]
    assert f.data["runs"] == [15, 63, 111]
    assert "holds 3 runs, each fitted on its own" in f.message
    assert "[differs from run 1: ranks 8 → 16; nodes 1 → 2; hosts +node-b]" in f.message
    assert "hosts +node-c]" in f.message


def test_xp610_same_configuration_different_plateaus_names_the_new_host():
    res = calibrate_files([THREE])
    (f,) = [f for f in res.findings if f.code == "XP610"]
    assert (f.data["ranks"], f.data["nodes"]) == (16, 2)
    # 1 − 30/48 = 0.375 from the model; the fits give the same within 1 %
    assert f.data["spread"] == pytest.approx(0.375, abs=0.01)
    assert "threshold 10%" in f.message
    assert "(node-c)" in f.message
    assert "do not average the runs" in f.message
    check = _check(res, "calibrate.run_consistency")
    assert (check.status, check.codes) == (CheckStatus.PROBLEM, ("XP610",))


def test_json_fits_say_which_run_tool_and_hosts():
    doc = to_json_dict(calibrate_files([THREE]))
    assert [(f["run"], f["tool"], f["hosts"], f["excluded"]) for f in doc["fits"]][2] == (
        "all_reduce_8_16_16_three_runs.txt:111",
        "nccl-tests",
        ["node-a", "node-c"],
        [],
    )


def test_runs_that_agree_are_clean_and_a_single_run_is_not_checked(tmp_path):
    text = THREE.read_text().splitlines(keepends=True)
    run2 = "".join(text[text.index(next(x for x in text if "-np 16" in x)) :][:48])
    p = tmp_path / "twice.txt"
    p.write_text(run2 + run2)  # the same run twice: plateaus equal
    res = calibrate_files([p])
    assert [f.run for f in res.fits] == ["twice.txt:23", "twice.txt:71"]
    assert _check(res, "calibrate.run_consistency").status == CheckStatus.CLEAN
    xp612 = next(f for f in res.findings if f.code == "XP612")
    assert "[same configuration as run 1]" in xp612.message
    one = tmp_path / "one.txt"
    one.write_text(run2)
    single = calibrate_files([one])
    assert not [f for f in single.findings if f.code in ("XP610", "XP612")]
    assert _check(single, "calibrate.run_consistency").status == CheckStatus.NOT_CHECKED


def test_a_rank_preamble_after_a_table_starts_the_next_run(tmp_path):
    text = THREE.read_text()
    # the second and third runs' '# nThread' headers and launch lines dropped
    kept = [
        ln
        for i, ln in enumerate(text.splitlines(keepends=True))
        if i < 3 or not (ln.startswith(("# nThread", "$ mpirun", "# Using")))
    ]
    p = tmp_path / "no_headers.txt"
    p.write_text("".join(kept))
    res = read_nccl_tests(p)
    assert [(t.ranks, t.hosts) for t in res.tables] == [
        (8, ["node-a"]),
        (16, ["node-a", "node-b"]),
        (16, ["node-a", "node-c"]),
    ]


def test_per_run_checks_do_not_borrow_the_other_runs_findings():
    # --link 50 GB/s: run 2 reaches 48 (96 %, clean), run 3 30 (60 % < 70 %: XP601)
    res = calibrate_files([THREE], link=Link(50.0, "400 Gb/s NIC"))
    (f,) = [f for f in res.findings if f.code == "XP601"]
    assert f.data["run"] == "all_reduce_8_16_16_three_runs.txt:111"
    ev = _check(res, "calibrate.busbw_vs_topology").evidence
    assert "three_runs.txt:63): measured peak" in ev
    assert "fit 48 GB/s vs 50 GB/s" in ev
    assert "three_runs.txt:111): fit below 70% of 50 GB/s" in ev


def test_rccl_tests_banner_before_nthread_starts_each_collective_run(tmp_path):
    # rccl-tests prints '# Collective test starting: X_perf' before '# nThread' (and
    # '# Collective test concluded: X_perf' after the table): a script running two collectives
    one_run = "".join(THREE.read_text().splitlines(keepends=True)[1:40])  # run 1, no mpirun line
    body = one_run.replace(
        "#\n# Using devices", "#\nrccl-tests: Version develop:5b8a2d1\n# Using devices"
    )
    text = ""
    for coll in ("all_reduce", "reduce_scatter"):
        text += f"# Collective test starting: {coll}_perf\n{body}"
        text += f"# Collective test concluded: {coll}_perf\n"
    p = tmp_path / "two_collectives.txt"
    p.write_text(text)
    res = read_nccl_tests(p)
    assert [(t.collective, t.collective_source, t.ranks) for t in res.tables] == [
        ("all_reduce", "banner", 8),
        ("reduce_scatter", "banner", 8),
    ]


def test_hccl_demo_sweeps_are_runs_too(tmp_path):
    sweep = DATA.parent / "calibrate_hccl_demo" / "hccl_demo_allreduce_8x_2024_sweep.log"
    p = tmp_path / "twice.log"
    p.write_text(sweep.read_text() * 2)
    res = calibrate_files([p])
    assert [(f.run, f.tool) for f in res.fits] == [
        ("twice.log:75", "hccl_demo"),
        ("twice.log:175", "hccl_demo"),
    ]
    xp612 = next(f for f in res.findings if f.code == "XP612")
    assert "[same configuration as run 1]" in xp612.message
    assert _check(res, "calibrate.run_consistency").status == CheckStatus.CLEAN


def test_terminal_names_each_run(tmp_path):
    app = typer.Typer()
    app.command("calibrate")(calibrate)
    app.command("other")(lambda: None)
    res = CliRunner().invoke(app, ["calibrate", str(THREE)], catch_exceptions=False)
    assert res.exit_code == 0
    assert "run (file:line)" in res.output
    for line in (15, 63, 111):
        assert f"three_runs.txt:{line}" in res.output
    assert "XP610" in res.output
    assert "XP612" in res.output


def test_a_mangled_root_cell_is_not_a_crash(tmp_path):
    # '--1' passed `lstrip("-").isdigit()` and then failed int() (found by fuzzing)
    text = THREE.read_text().replace("sum      -1    5231.6", "sum     --1    5231.6")
    p = tmp_path / "root.txt"
    p.write_text(text)
    fr = read_nccl_tests(p).frame
    assert fr.loc[fr["size_bytes"] == 1 << 30, "root"].tolist() == [-1, -1, -1]


@pytest.mark.filterwarnings("error")
def test_an_overflowing_wrong_count_is_a_finding_not_a_crash(tmp_path):
    # fuzzing: two #wrong cells of 1e308 sum to inf, which int() refused; the sum printed a
    # numpy RuntimeWarning on stderr
    text = THREE.read_text()
    for cells in ("5231.6  205.24  359.17", "5252.5  204.42  357.74"):
        text = text.replace(f"{cells}       0", f"{cells}  1e308")
    p = tmp_path / "wrong.txt"
    p.write_text(text)
    (f,) = [f for f in calibrate_files([p]).findings if f.code == "XP603"]
    assert "inf wrong elements" in f.message
