"""The world size a job-level log states spreads it over that many cards (issue 18: per-card
throughput right without --world-size); --world-size wins; copies are never compared."""

from __future__ import annotations

from pathlib import Path

import pytest

from xpuperf.pipeline import analyze_logs
from xpuperf.readers import read_logs, world


def _megatron(tmp_path: Path, head: str, steps: int = 30) -> Path:
    lines = [head]
    for i in range(1, steps + 1):
        lines.append(
            f" iteration {i:8d}/    1000 | consumed samples: {i * 512:12d} | elapsed time per "
            f"iteration (ms): {2000.0 + (i % 3):.1f} | global batch size:   512 | lm loss: "
            "2.5E+00 |"
        )
    p = tmp_path / "train.log"
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return p


HEAD = "using world size: 64, data-parallel size: 8, tensor-model-parallel size: 8"


def test_using_world_size_line_gives_the_cards(tmp_path: Path) -> None:
    r = read_logs([_megatron(tmp_path, HEAD)])
    assert r.job_level_cards == 64
    assert r.table["rank"].nunique() == 64
    assert (r.table["samples"] == 512 / 64).all()
    assert any("world size read from the log's start-up lines" in w for w in r.warnings)


def test_per_card_throughput_and_no_verdict_on_copies(tmp_path: Path) -> None:
    res = analyze_logs([_megatron(tmp_path, HEAD)], warmup=0)
    s = res.summary
    # step times 2.000/2.001/2.002 s in turn (i % 3 ms): median 2.001 s → 512 / 2.001 samples/s
    assert s.throughput_samples_per_s == pytest.approx(512 / 2.001)
    assert s.throughput_per_card_samples_per_s == pytest.approx(512 / 2.001 / 64)
    checks = {c.name: c for c in res.checks}
    for name in ("steps.stragglers", "steps.sync_stalls"):
        assert checks[name].status.value == "not_checked", name
    assert not [f for f in res.findings if f.code.startswith("XP10")]


def test_world_size_option_wins_and_names_the_log_figure(tmp_path: Path) -> None:
    r = read_logs([_megatron(tmp_path, HEAD)], world_size=16)
    assert r.job_level_cards == 16
    assert (r.table["samples"] == 512 / 16).all()
    assert any("--world-size 16 given, but the log states 64" in w for w in r.warnings)


def test_without_a_stated_world_size_one_rank(tmp_path: Path) -> None:
    r = read_logs([_megatron(tmp_path, "no facts here")])
    assert r.job_level_cards is None
    assert r.table["rank"].nunique() == 1
    assert any("pass --world-size N" in w for w in r.warnings)


def test_too_many_rows_is_not_spread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(world, "MAX_SPREAD_ROWS", 30 * 64 - 1)  # 30 steps × 64 cards: one over
    r = read_logs([_megatron(tmp_path, HEAD)])
    assert r.job_level_cards is None
    assert r.table["rank"].nunique() == 1
    assert any("would exceed 1,919 rows" in w for w in r.warnings)


@pytest.mark.parametrize(
    ("launch", "cards"),
    [
        ("+ torchrun --nproc_per_node=8 --nnodes=4 --node_rank=0 pretrain_gpt.py", 32),
        ("$ horovodrun -np 16 -H node1:8,node2:8 python train.py", 16),
        ("mpirun -np 8 --bind-to none python pretrain_gpt.py", 8),
        ("deepspeed --num_gpus 8 --num_nodes 2 pretrain_gpt.py --deepspeed", 16),
        ("export WORLD_SIZE=24", 24),
        ("torchrun --nnodes=1:4 --nproc_per_node=8 pretrain_gpt.py", None),  # elastic: unknown
    ],
)
def test_launch_line_echoed_in_the_log(tmp_path: Path, launch: str, cards: int | None) -> None:
    r = read_logs([_megatron(tmp_path, launch)])
    assert r.job_level_cards == cards
    if cards:
        assert any("world size read from the log's launch line 1" in w for w in r.warnings)
        assert (r.table["samples"] == 512 / cards).all()


def test_the_logs_own_world_size_beats_a_launch_line(tmp_path: Path) -> None:
    r = read_logs([_megatron(tmp_path, "mpirun -np 8 python x.py\n" + HEAD)])
    assert r.job_level_cards == 64  # 'using world size: 64' — the run's own statement
    clash = [w for w in r.warnings if "but its launch line 1 starts 8 processes" in w]
    assert len(clash) == 1
    assert "world size of 64" in clash[0]
    assert "--world-size N" in clash[0]


def test_a_launch_line_that_agrees_is_not_mentioned(tmp_path: Path) -> None:
    r = read_logs([_megatron(tmp_path, "mpirun -np 64 python x.py\n" + HEAD)])
    assert r.job_level_cards == 64
    assert not [w for w in r.warnings if "processes" in w]


def test_notes_on_how_a_complete_log_was_read_are_not_xp401(tmp_path: Path) -> None:
    # every line of the log is read; the reader only says how (job-level lines, world size):
    # log completeness is clean and the notes still reach the report
    res = analyze_logs([_megatron(tmp_path, HEAD)], warmup=0)
    assert "XP401" not in {f.code for f in res.findings}
    checks = {c.name: c.status.value for c in res.checks}
    assert checks["steps.completeness"] == "clean"
    assert any("world size read from the log" in w for w in res.read_warnings)


def test_a_skipped_row_is_still_xp401(tmp_path: Path) -> None:
    p = _megatron(tmp_path, HEAD)
    with p.open("a", encoding="utf-8") as f:
        f.write(" iteration       31/    1000 | elapsed time per iteration (ms): x.y |\n")
    res = analyze_logs([p], warmup=0)
    assert "XP401" in {f.code for f in res.findings}


def test_torchtitan_rank0_only_with_the_torchrun_line(tmp_path: Path) -> None:
    # torchtitan's run script filters the output to rank 0 (--local-ranks-filter 0); its 'tps'
    # is one device's. The echoed torchrun line says 8 × 2 = 16 devices: job = 16 × tps
    lines = ["+ torchrun --nproc_per_node=8 --nnodes=2 --local-ranks-filter 0 --role rank "
             "--tee 3 -m torchtitan.train"]  # fmt: skip
    for i in range(1, 32):
        lines.append(
            f"[rank0]:[titan] 2025-04-01 10:{10 + i // 60:02d}:{i % 60:02d},000 - root - INFO - "
            f"step: {i:2d}  loss:  7.9  memory: 30.00GiB(40.00%)  tps: 10,000  tflops: 300.00  "
            "mfu: 14.00%"
        )
    p = tmp_path / "titan.log"
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    res = analyze_logs([p], warmup=0)
    s = res.summary
    assert s.ranks == 16
    # one line per second, 10,000 tokens/s per device: 10,000 tokens per step per device
    assert s.throughput_per_card_tokens_per_s == pytest.approx(10_000)
    assert s.throughput_tokens_per_s == pytest.approx(160_000)
    checks = {c.name: c.status.value for c in res.checks}
    assert checks["steps.stragglers"] == "not_checked"


def test_a_job_level_log_over_the_cap_is_never_read_as_one_rank_of_many(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # job-level lines carry the JOB's samples: when the spread is refused by the row cap, an
    # echoed launch line must not copy them as one rank's (that would multiply the job by N);
    # the launch line is also looked for once, not again by the one-rank path
    calls = []
    real = world.from_launch
    monkeypatch.setattr(world, "from_launch", lambda src: calls.append(1) or real(src))
    monkeypatch.setattr(world, "MAX_SPREAD_ROWS", 30 * 8 - 1)
    r = read_logs([_megatron(tmp_path, "mpirun -np 8 python pretrain_gpt.py")])
    assert r.job_level_cards is None
    assert r.table["rank"].nunique() == 1
    assert (r.table["samples"] == 512).all()
    assert len(calls) == 1


def test_a_world_size_beyond_the_limit_is_ignored_with_a_note(tmp_path: Path) -> None:
    # found by the fuzz target: a 40-digit world size in the log reached np.arange (ValueError:
    # Maximum allowed size exceeded) when the log had no step rows to bound it
    head = "using world size: " + "9" * 40 + ", data-parallel size: 8"
    r = read_logs([_megatron(tmp_path, head)])
    assert r.job_level_cards is None
    assert r.table["rank"].nunique() == 1
    assert any("more than 1,000,000 ranks: ignored" in w for w in r.warnings)
