"""``xpuperf plan --jitter-cv / --accumulation / --global-batch / --no-overlap /
--optimizer-step`` (issue 20): JSON figures worked out by hand, one-line errors with exit 2."""

from __future__ import annotations

import json

import pytest

from tests.cli.test_plan_cli import run

BASE = ("--topology", "dgx-a100", "--model", "resnet50", "--step-time", "0.1",
        "--batch-size", "32", "--cards", "1,16", "--json", "-")  # fmt: skip
E16 = 1.7659913930547881  # E[max of 16 standard normals]


def _plan(capsys, *extra: str) -> dict:
    code, out, err = run(capsys, *BASE, *extra)
    assert code == 0, err
    return json.loads(out)


def test_jitter_cv_sets_the_sync_tax(capsys) -> None:
    doc = _plan(capsys, "--jitter-cv", "0.05")
    at16 = doc["scaling"][1]["breakdown"]
    # 0.1 s x 5 % x E[max of 16] = 8.83 ms
    assert at16["straggler_s"] == pytest.approx(0.1 * 0.05 * E16, rel=1e-3)
    assert _plan(capsys, "--jitter-cv", "0")["scaling"][1]["breakdown"]["straggler_s"] == 0.0
    # default: the published 1.2 % floor, said in the assumptions
    doc = _plan(capsys)
    assert doc["scaling"][1]["breakdown"]["straggler_s"] == pytest.approx(0.1 * 0.012 * E16,
                                                                          rel=1e-3)  # fmt: skip
    assert any("published GPU variability" in a for a in doc["assumptions"])


def test_accumulation_and_global_batch(capsys) -> None:
    k4 = _plan(capsys, "--accumulation", "4")
    assert k4["settings"]["accumulation"] == 4
    # the sync wait per micro-step is halved by sqrt(4)
    assert k4["scaling"][1]["breakdown"]["straggler_s"] == pytest.approx(0.1 * 0.012 * E16 / 2,
                                                                         rel=1e-3)  # fmt: skip
    gb = _plan(capsys, "--global-batch", "2048")  # 32 x 16 x 4: K = 4 at 16 cards
    assert gb["settings"]["global_batch"] == 2048
    assert gb["scaling"][1]["breakdown"]["straggler_s"] == pytest.approx(
        k4["scaling"][1]["breakdown"]["straggler_s"]
    )
    assert any("fixed global batch 2048" in n for n in gb["notes"])
    # ... and pays the optimizer step over 4 instead of 64 micro-steps: F x 15/64, F = 0.4602 ms
    more = gb["scaling"][1]["breakdown"]["other_s"] - k4["scaling"][1]["breakdown"]["other_s"]
    assert more == pytest.approx(25_557_032 * 28 / 1555e9 * 15 / 64, rel=1e-6)
    assert _plan(capsys, "--global-batch", "2048", "--optimizer-step", "0")["scaling"][1][
        "breakdown"
    ]["other_s"] == pytest.approx(k4["scaling"][1]["breakdown"]["other_s"])


def test_no_overlap(capsys) -> None:
    doc = _plan(capsys, "--no-overlap", "--jitter-cv", "0")
    p = doc["scaling"][1]
    assert doc["settings"]["overlap"] is False
    assert p["breakdown"]["exposed_comm_s"] == pytest.approx(p["comm_s"])


@pytest.mark.parametrize(("args", "says"), [
    (("--jitter-cv", "2"), "--jitter-cv must be"),
    (("--accumulation", "0"), "--accumulation must be"),
    (("--accumulation", "2", "--global-batch", "2048"), "not both"),
    (("--global-batch", "1000"), "not a whole number of micro-batches of 32 per card"),
    (("--global-batch", "16"), "at least the per-card batch"),
    (("--optimizer-step", "-1"), "--optimizer-step must be"),
])  # fmt: skip
def test_bad_step_options_exit_2(capsys, args: tuple, says: str) -> None:
    code, _, err = run(capsys, *BASE, *args)
    assert code == 2
    assert says in err
    assert "Traceback" not in err


def test_global_batch_needs_the_batch_size(capsys) -> None:
    code, _, err = run(capsys, "--model", "resnet50", "--step-time", "0.1", "--global-batch",
                       "1024", "-q")  # fmt: skip
    assert code == 2
    assert "--global-batch needs --batch-size" in err


def test_the_validation_harness_is_the_plan_command(capsys) -> None:
    """A published point (docs/plan.md §15, tf-bert-a100-s128-amp-256) run through the CLI from
    its facts gives the harness's figure: DGX A100, BERT-large, fp16 reduced (Horovod fp16
    compression), 64 MiB fusion after backward, micro-batch 64, global batch 65536 (K = 1024 at
    one card, 128 at 8, 4 at 256), one card 64 / 356.845 seq/s."""
    from tests.costmodel.published import load_points, predict

    p = next(x for x in load_points() if x.id == "tf-bert-a100-s128-amp-256")
    code, out, err = run(capsys, "--topology", "dgx-a100", "--model", "bert_large", "--dtype",
                         "fp16", "--framework", "horovod", "--bucket-mb", "64", "--algorithm",
                         "nccl", "--step-time", str(64 / 356.845), "--batch-size", "64",
                         "--global-batch", "65536", "--no-overlap", "--cards", "1,8,256",
                         "--json", "-")  # fmt: skip
    assert code == 0, err
    s = {r["cards"]: r["speedup"] for r in json.loads(out)["scaling"]}
    assert s[256] / s[8] == pytest.approx(predict(p), rel=1e-9)
