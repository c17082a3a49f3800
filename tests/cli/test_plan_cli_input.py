"""``xpuperf plan``: --from-log on real logs, input-pipeline options, bad combinations exit 2 with
one line (the bundled example's fixes: test_plan_cli.py)."""

from __future__ import annotations

import json

import pytest

from xpuperf.cli import app as cli_app
from xpuperf.cli import plan as plan_cmd

if not any(c.name == "plan" for c in cli_app.app.registered_commands):
    cli_app.app.command("plan")(plan_cmd.plan)

SLOW16 = "sample_logs/slow_rank_16rank"  # 0.300 s compute + 4 ms host, 8 ms data, rank 5 +15 %


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        cli_app.main(["plan", *args])
    out, err = capsys.readouterr()
    return int(exc.value.code), out, err


def plan_json(capsys, *args: str) -> dict:
    code, out, err = run(capsys, *args, "--json", "-")
    assert code == 0, err
    return json.loads(out)


def test_from_log_multi_rank(capsys) -> None:
    doc = plan_json(capsys, "--from-log", SLOW16, "--model", "resnet50", "--topology",
                    "dgx-a100", "--cards", "1,16,1024")  # fmt: skip
    w, s = doc["workload"], doc["settings"]
    # single-card step = step − comm − data: 0.300 s compute + 4 ms host overhead
    assert w["step_time_s"] == pytest.approx(0.304, abs=0.002)
    assert w["batch_size"] == 256
    assert s["slowest_factor"] == pytest.approx(1.15, abs=0.01)  # rank 5 planted +15 %
    assert s["backward_fraction"] == pytest.approx(0.6, abs=0.02)  # backward = 2 × forward
    assert s["loader"]["workers"] == 0
    one, sixteen, big = doc["scaling"]
    assert one["breakdown"]["input_stall_s"] == pytest.approx(0.008, abs=3e-4)  # 8 ms data time
    strag16 = sixteen["breakdown"]["straggler_s"]
    assert strag16 > 0.15 * 0.3  # the deterministic part alone is (1.15 − 1) × 0.304
    assert big["breakdown"]["straggler_s"] > strag16  # random stragglers grow with N
    assert any("rank 5" in n for n in doc["notes"])
    assert "workers" in {f["lever"] for f in doc["fixes"]}


def test_from_log_with_forced_format(capsys) -> None:
    doc = plan_json(capsys, "--from-log", "sample_logs/healthy_8rank/steps.csv", "--format", "csv",
                    "--model", "resnet50", "--topology", "dgx-a100", "--cards", "1,8")  # fmt: skip
    assert doc["workload"]["step_time_s"] == pytest.approx(0.304, abs=0.002)
    assert doc["settings"]["slowest_factor"] == 1.0  # healthy: no straggler planted


def test_from_log_single_card_with_workers_hides_the_data_time(capsys) -> None:
    doc = plan_json(capsys, "--from-log", "sample_logs/single_card", "--model", "resnet50",
                    "--topology", "dgx-a100", "--cards", "1,8", "--workers", "2")  # fmt: skip
    assert doc["settings"]["slowest_factor"] == 1.0
    assert all(r["breakdown"]["input_stall_s"] == 0.0 for r in doc["scaling"])


@pytest.mark.parametrize(
    ("log", "compute_s", "data_s"),
    [
        # time − data_time per step: 1.4788 1.8150 1.7852 1.7562 1.7296 1.9922 → median 1.7707;
        # data_time mean (7.4351 + 7.1704 + 6.8948 + 7.2190 + 6.9613 + 6.8551) / 6
        ("tests/data/formats_mmengine", 1.7707, 42.5357 / 6),  # data time dominates
        # input = data + cpu2cuda: 0.1304 0.1363 0.1322 (mean); time − input → median 0.3557
        (
            "tests/data/formats_maskrcnn/39_trainlog_maskrcnn-benchmark-cpu2cuda-forward-backward-breakdown.txt",
            0.3557,
            (0.1304 + 0.1363 + 0.1322) / 3,
        ),
        # batch_cost − reader_cost: 0.64021 0.58717 0.56258 0.55235 → median 0.574875;
        # reader_cost mean (5.33854 + 3.18704 + 2.21899 + 3.84420) / 4
        ("tests/data/formats_paddle", 0.574875, 14.58877 / 4),
        ("tests/data/formats_megatron/36_trainlog_megatron-llm-127s-per-iteration.txt", None, 0),
        (
            "tests/data/formats_keras/11_trainlog_dlperf-tf2-keras-resnet50-1node-8gpu-timehistory.txt",
            None,
            0,
        ),
    ],
)
def test_from_log_framework_formats(capsys, log: str, compute_s: float | None,
                                    data_s: float) -> None:  # fmt: skip
    doc = plan_json(capsys, "--from-log", log, "--params", "100000000", "--topology",
                    "dgx-a100", "--cards", "1,8,64")  # fmt: skip
    assert doc["workload"]["step_time_s"] > 0
    one = doc["scaling"][0]
    # speedup(1) = 1.0 by definition (one card alone is the denominator); the log's data time is
    # loaded in the training process (num_workers=0), so one card waits all of it
    assert one["speedup"] == 1.0
    if compute_s is not None:
        assert doc["workload"]["step_time_s"] == pytest.approx(compute_s)
        assert one["breakdown"]["input_stall_s"] == pytest.approx(data_s)
        assert doc["workload"]["one_card_step_s"] == pytest.approx(compute_s + data_s)


def test_maskrcnn_split_sets_backward_fraction(capsys) -> None:
    log = "tests/data/formats_maskrcnn/39_trainlog_maskrcnn-benchmark-cpu2cuda-forward-backward-breakdown.txt"  # noqa: E501
    doc = plan_json(capsys, "--from-log", log, "--params", "44000000", "--topology", "dgx-a100",
                    "--cards", "1,8")  # fmt: skip
    s = doc["settings"]
    assert 0 < s["backward_fraction"] < 1
    assert s["loader"]["workers"] == 0


def test_input_options(capsys) -> None:
    base = ["--model", "resnet50", "--step-time", "0.1", "--topology", "pcie-8gpu-2socket",
            "--cards", "1,16"]  # fmt: skip
    doc = plan_json(capsys, *base, "--input-time", "0.3", "--workers", "2", "--loader-numa",
                    "local", "--input-mb", "154.140672", "--no-pinned")  # fmt: skip
    lo = doc["settings"]["loader"]
    assert (lo["workers"], lo["pinned"], lo["numa"]) == (2, False, "local")
    sync = 2 * 154.140672e6 / 12e9  # pageable copy, PCIe Gen3
    stall1 = doc["scaling"][0]["breakdown"]["input_stall_s"]
    assert stall1 == pytest.approx(sync + (0.15 - 0.1 - sync))
    levers = {f["lever"] for f in doc["fixes"]}
    assert "workers" in levers
    # producer-bound: the pageable copy sits inside the producer's deficit, pinning alone gains 0
    assert "pinned" not in levers


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--from-log", SLOW16, "--model", "resnet50", "--step-time", "0.1"], "not both"),
        (["--from-log", SLOW16], "also give --model"),
        (["--from-log", "no/such/dir", "--model", "resnet50"], "no/such/dir"),
        (["--format", "csv"], "--format applies to --from-log"),
        (["--model", "resnet50", "--step-time", "0.1", "--workers", "4"], "needs an input time"),
        (["--model", "resnet50", "--step-time", "0.1", "--workers", "-1"], "--workers"),
        (
            [
                "--model",
                "resnet50",
                "--step-time",
                "0.1",
                "--input-time",
                "0.1",
                "--workers",
                "0",
                "--prefetch",
                "4",
            ],
            "--prefetch needs",
        ),
        (["--model", "resnet50", "--step-time", "0.1", "--input-time", "0"], "--input-time"),
        (
            [
                "--model",
                "resnet50",
                "--step-time",
                "0.1",
                "--input-time",
                "0.1",
                "--loader-numa",
                "far",
            ],
            "--loader-numa",
        ),
        (
            [
                "--model",
                "resnet50",
                "--step-time",
                "0.1",
                "--input-time",
                "0.1",
                "--input-mb",
                "nan",
            ],
            "--input-mb",
        ),
    ],
)
def test_bad_input_combinations_exit_2(capsys, args: list[str], message: str) -> None:
    code, _out, err = run(capsys, *args)
    assert code == 2
    assert message in err
    assert len(err.strip().splitlines()) == 1
