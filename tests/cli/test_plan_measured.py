"""``xpuperf plan --measured``: tables and N=LOGS rungs, JSON keys, refusals (exit 2)."""

from __future__ import annotations

import json

import pytest

from xpuperf.cli import app as cli_app
from xpuperf.cli import plan as plan_cmd

if not any(c.name == "plan" for c in cli_app.app.registered_commands):
    cli_app.app.command("plan")(plan_cmd.plan)

TABLE = "tests/data/ladder_dgx1_tf2017/alexnet.md"
TWO = "tests/data/ladder_two_nodes/scaling.csv"


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        cli_app.main(["plan", *args])
    out, err = capsys.readouterr()
    return int(exc.value.code), out, err


def test_table_ladder_gives_forecast_fitted_and_measured(capsys) -> None:
    # TF benchmarks 2017, DGX-1 AlexNet: 2987 / 5658 / 10509 img/s at 1 / 2 / 4 GPUs, batch 512:
    # speedups 5658 / (2 × 2987) = 0.9471 and 10509 / (4 × 2987) = 0.8796
    code, out, _ = run(capsys, "--measured", TABLE, "--model", "alexnet", "--topology",
                       "dgx1-v100", "--cards", "1,2,4,8", "--batch-size", "512",
                       "--json", "-")  # fmt: skip
    assert code == 0
    d = json.loads(out)
    assert [round(m["speedup"], 4) for m in d["measured"]] == [1.0, 0.9471, 0.8796]
    assert [p["cards"] for p in d["forecast"]] == [1, 2, 4, 8]
    p8 = d["forecast"][-1]
    assert p8["low"] < p8["speedup"] < p8["high"] < 0.9  # host loss grows with the cards
    assert {f["name"] for f in d["fitted"]} == {"intra_fixed_s", "intra_per_card_s"}
    assert set(p8["breakdown"]) == {"compute_s", "comm_s", "sync_s", "intra_node_s",
                                    "inter_node_s"}  # fmt: skip
    assert d["forecast_model"]["one_card_step_s"] == pytest.approx(512 / 2987)


def test_terminal_shows_rungs_fit_and_band(capsys) -> None:
    code, out, _ = run(capsys, "--measured", TWO, "--model", "resnet50", "--topology",
                       "dgx-a100", "--cards", "1,8,16")  # fmt: skip
    assert code == 0
    assert "Measured ladder" in out
    assert "Forecast (90 % interval" in out
    assert "inter_fixed_s" in out


def test_log_rungs_measure_sync_from_per_rank_jitter(capsys) -> None:
    code, out, _ = run(capsys, "--measured", "1=sample_logs/single_card", "--measured",
                       "8=sample_logs/healthy_8rank", "--model", "resnet50", "--topology",
                       "dgx-a100", "--cards", "1,8", "--json", "-")  # fmt: skip
    assert code == 0
    d = json.loads(out)
    assert d["measured"][1]["sync_s"] > 0  # E[max of 8] - mean of the measured per-rank work
    assert d["forecast_model"]["notes"] == []


@pytest.mark.parametrize(("args", "match"), [
    (["--measured", TWO, "--model", "resnet50", "--topology", "dgx-a100", "--cards", "1,8,1024"],
     "measure 4 nodes (32 cards) next"),
    (["--measured", TWO, "--topology", "dgx-a100"], "--measured needs the gradients"),
    (["--measured", TWO, "--model", "resnet50", "--from-log", "sample_logs/single_card"],
     "not both"),
    (["--model", "resnet50", "--step-time", "0.1", "--baseline", "100"], "applies to --measured"),
    (["--measured", "tests/data/scaling_tsv_no_baseline/table.tsv", "--model", "resnet50"],
     "no one-card row"),
    (["--measured", "tests/data/ladder_contradictory/scaling.md", "--model", "resnet50",
      "--batch-size", "32", "--cards", "1,8"], "contradictory ladder"),
])  # fmt: skip
def test_refusals_exit_2_with_what_to_measure(capsys, args, match) -> None:
    code, _, err = run(capsys, *args)
    assert code == 2
    assert match in " ".join(err.split())


def test_html_shows_rungs_as_points_and_the_forecast_as_a_band() -> None:
    from xpuperf.report.figures_plan import forecast_traces

    doc = {"forecast": [{"cards": 1, "speedup": 1.0, "low": 1.0, "high": 1.0},
                        {"cards": 16, "speedup": 0.6, "low": 0.55, "high": 0.66}],
           "measured": [{"cards": 1, "speedup": 1.0}, {"cards": 8, "speedup": 0.8}]}  # fmt: skip
    low, high, line, points = forecast_traces(doc)
    assert (low["y"], high["y"], high["fill"]) == ([1.0, 0.55], [1.0, 0.66], "tonexty")
    assert line["y"] == [1.0, 0.6]
    assert (points["mode"], points["x"], points["y"]) == ("markers", [1, 8], [1.0, 0.8])
    assert forecast_traces({}) == []


def test_markdown_summary_has_the_forecast_tables(capsys, tmp_path) -> None:
    md = tmp_path / "plan.md"
    code, out, _ = run(capsys, "--measured", TABLE, "--model", "alexnet", "--topology",
                       "dgx1-v100", "--cards", "1,2,4,8", "--batch-size", "512",
                       "--json", "-", "--markdown", str(md), "-q")  # fmt: skip
    assert code == 0
    d, text = json.loads(out), md.read_text()
    assert "### Forecast from the measured ladder" in text
    p8 = d["forecast"][-1]
    # the row of 8 cards carries the JSON's speedup and interval to 3 decimals
    row = f"| 8 | {p8['speedup']:.3f} | {p8['low']:.3f} – {p8['high']:.3f} |"
    assert row in text
    # measured rungs: 10509 / (4 × 2987) = 0.880 at 4 GPUs (the table's own figures)
    assert "| 4 | 0.880 |" in text
    assert "intra\\_per\\_card\\_s" in text  # the fitted parameters table (escaped for GitHub)


def test_forecast_is_the_headline_before_the_cost_model(capsys) -> None:
    args = ("--measured", TABLE, "--model", "alexnet", "--topology", "dgx1-v100", "--cards",
            "1,2,4,8", "--batch-size", "512")  # fmt: skip
    code, out, _ = run(capsys, *args, "--json", "-")
    assert code == 0
    d = json.loads(out)
    p8 = d["forecast"][-1]
    model8 = d["scaling"][-1]["speedup"]
    code, out, _ = run(capsys, *args)
    head = (
        f"Forecast from the measured ladder: speedup {p8['speedup']:.3f} at 8 cards (90 % "
        f"interval {p8['low']:.3f}–{p8['high']:.3f}); the cost model alone says {model8:.3f}"
    )
    assert head in out
    assert out.index(head) < out.index("Cost model alone, not calibrated")
