"""The step recorder: file contents, buffering, rank detection, misuse errors, light import."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from xpuperf.probe import PHASES, ProbeError, StepProbe, detect_rank
from xpuperf.readers import read_logs


class FakeClock:
    """A clock that advances only when told to."""

    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t

    def tick(self, dt: float) -> None:
        self.t += dt


def lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]


def make(tmp_path: Path, **kw: object) -> tuple[StepProbe, FakeClock]:
    clock = FakeClock()
    kw.setdefault("rank", 0)
    kw.setdefault("node", "n0")
    probe = StepProbe(tmp_path, clock=clock, **kw)  # type: ignore[arg-type]
    return probe, clock


def test_record_has_canonical_columns_and_phase_times(tmp_path: Path) -> None:
    probe, clock = make(tmp_path, rank=3, samples_per_step=32)
    with probe.step():
        clock.tick(0.010)
        probe.mark("data")
        with probe.phase("forward"):
            clock.tick(0.020)
        clock.tick(0.001)  # between phases: "other"
        with probe.phase("backward"):
            clock.tick(0.040)
        with probe.phase("comm"):
            clock.tick(0.005)
        clock.tick(0.003)
        probe.mark("optimizer")  # from the end of the last phase
    probe.close()
    (rec,) = lines(tmp_path / "rank3.jsonl")
    assert list(rec) == [
        *("rank", "step", "step_time_s", "t_end_s", "samples", "node", "data_s", "forward_s"),
        *("backward_s", "comm_s", "optimizer_s", "compute_s"),
    ]
    assert rec["rank"] == 3
    assert rec["step"] == 0
    assert rec["node"] == "n0"
    assert rec["samples"] == 32
    expect = {
        "step_time_s": 0.079,
        "data_s": 0.010,
        "forward_s": 0.020,
        "backward_s": 0.040,
        "comm_s": 0.005,
        "optimizer_s": 0.003,
        "compute_s": 0.063,
    }
    for key, value in expect.items():
        assert rec[key] == pytest.approx(value, abs=1e-12), key
    assert rec["t_end_s"] > 1.6e9  # Unix epoch seconds


def test_file_reads_back_as_the_canonical_step_table(tmp_path: Path) -> None:
    for rank in (0, 1):
        probe, clock = make(tmp_path, rank=rank, samples_per_step=8)
        for _ in range(4):
            probe.begin_step()
            clock.tick(0.1 + rank * 0.01)
            probe.mark("forward")
            probe.end_step()
        probe.close()
    run = read_logs([tmp_path])
    t = run.table
    assert run.warnings == []
    assert sorted(t["rank"].unique()) == [0, 1]
    assert list(t["step"][t["rank"] == 0]) == [0, 1, 2, 3]
    assert {"step_time_s", "t_end_s", "samples", "node", "forward_s", "compute_s"} <= set(t)
    assert t.loc[t["rank"] == 1, "step_time_s"].tolist() == pytest.approx([0.11] * 4)


def test_buffered_until_flush_every_then_at_close(tmp_path: Path) -> None:
    probe, clock = make(tmp_path, flush_every=3)
    path = tmp_path / "rank0.jsonl"
    for i in range(5):
        with probe.step():
            clock.tick(0.01)
        if i < 2:
            assert not path.exists()
        elif i < 4:
            assert len(lines(path)) == 3
    assert len(lines(path)) == 3
    probe.close()
    assert [r["step"] for r in lines(path)] == [0, 1, 2, 3, 4]
    assert probe.steps_written == 5
    probe.close()  # twice is fine


def test_appends_by_default_and_truncate_starts_afresh(tmp_path: Path) -> None:
    for start in (0, 10):
        probe, clock = make(tmp_path, start_step=start)
        with probe.step():
            clock.tick(0.01)
        probe.close()
    assert [r["step"] for r in lines(tmp_path / "rank0.jsonl")] == [0, 10]
    probe, clock = make(tmp_path, truncate=True, start_step=20)
    with probe.step():
        clock.tick(0.01)
    probe.close()
    assert [r["step"] for r in lines(tmp_path / "rank0.jsonl")] == [20]


def test_flushed_at_interpreter_exit(tmp_path: Path) -> None:
    code = (
        "from xpuperf.probe import StepProbe\n"
        f"p = StepProbe({str(tmp_path)!r}, rank=1, flush_every=100)\n"
        "for _ in range(3):\n"
        "    with p.step(samples=4):\n"
        "        p.mark('compute')\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
    recs = lines(tmp_path / "rank1.jsonl")
    assert [r["step"] for r in recs] == [0, 1, 2]
    assert all(r["samples"] == 4 for r in recs)


def test_default_folder_from_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XPUPERF_PROBE_DIR", str(tmp_path / "env_dir"))
    probe = StepProbe(rank=0)
    assert probe.path == tmp_path / "env_dir" / "rank0.jsonl"
    probe.close()


@pytest.mark.parametrize(
    ("env", "rank", "local_rank", "world", "source"),
    [
        ({"RANK": "5", "LOCAL_RANK": "1", "WORLD_SIZE": "8"}, 5, 1, 8, "RANK"),
        (
            {"OMPI_COMM_WORLD_RANK": "3", "OMPI_COMM_WORLD_SIZE": "4"},
            3,
            None,
            4,
            "OMPI_COMM_WORLD_RANK",
        ),
        ({"SLURM_PROCID": "7", "SLURM_LOCALID": "3", "SLURM_NTASKS": "8"}, 7, 3, 8, "SLURM_PROCID"),
        ({"LOCAL_RANK": "2"}, 2, 2, None, "local_rank"),
        ({}, 0, None, None, "default"),
        ({"RANK": " ", "PMI_RANK": "4"}, 4, None, None, "PMI_RANK"),
    ],
)
def test_rank_from_environment(
    env: dict[str, str], rank: int, local_rank: int | None, world: int | None, source: str
) -> None:
    info = detect_rank(env=env, node="host-a")
    assert (info.rank, info.local_rank, info.world_size, info.source) == (
        rank,
        local_rank,
        world,
        source,
    )
    assert info.node == "host-a"


def test_arguments_override_environment_and_hostname_is_default() -> None:
    info = detect_rank(6, world_size=8, env={"RANK": "1", "WORLD_SIZE": "2"})
    assert (info.rank, info.world_size, info.source) == (6, 8, "argument")
    assert info.node  # socket.gethostname()


@pytest.mark.parametrize(
    ("env", "kwargs", "message"),
    [
        ({"RANK": "abc"}, {}, "RANK='abc' is not a non-negative integer"),
        ({"RANK": "-1"}, {}, "RANK='-1'"),
        ({"RANK": "4", "WORLD_SIZE": "4"}, {}, "not below the world size 4"),
        ({}, {"rank": -2}, "rank=-2"),
    ],
)
def test_bad_rank_is_a_clear_error(env: dict[str, str], kwargs: dict, message: str) -> None:
    with pytest.raises(ProbeError, match=message.replace("(", r"\(")):
        detect_rank(env=env, **kwargs)


def test_probe_takes_rank_from_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RANK", "3")
    monkeypatch.setenv("WORLD_SIZE", "4")
    probe = StepProbe(tmp_path)
    assert probe.path.name == "rank3.jsonl"
    assert probe.info.world_size == 4
    probe.close()


def test_misuse_raises_probe_error(tmp_path: Path) -> None:
    probe, _ = make(tmp_path)
    with pytest.raises(ProbeError, match="outside a step"):
        probe.mark("data")
    with pytest.raises(ProbeError, match="outside a step"), probe.phase("forward"):
        pass
    with pytest.raises(ProbeError, match="unknown phase 'fwd'"):
        probe.phase("fwd")
    probe.begin_step()
    with pytest.raises(ProbeError, match="still open"):
        probe.begin_step()
    with probe.phase("forward"):
        with pytest.raises(ProbeError, match="phases do not nest"), probe.phase("backward"):
            pass
        with pytest.raises(ProbeError, match="inside the open phase 'forward'"):
            probe.mark("data")
        with pytest.raises(ProbeError, match="end_step inside the open phase"):
            probe.end_step()
    probe.end_step()
    with pytest.raises(ProbeError, match="outside a step"):
        probe.end_step()
    probe.close()
    with pytest.raises(ProbeError, match="closed"):
        probe.begin_step()
    with pytest.raises(ProbeError, match="at least 1"):
        StepProbe(tmp_path, rank=0, flush_every=0)


def test_exception_in_step_abandons_it(tmp_path: Path) -> None:
    probe, clock = make(tmp_path)

    def fail() -> None:
        clock.tick(1.0)
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"), probe.step(), probe.phase("forward"):
        fail()
    assert not probe.in_step
    with probe.step():  # usable again, same step number
        clock.tick(0.5)
    probe.close()
    (rec,) = lines(tmp_path / "rank0.jsonl")
    assert rec["step"] == 0
    assert rec["step_time_s"] == pytest.approx(0.5)


def test_comm_note_splits_the_open_segment(tmp_path: Path) -> None:
    probe, clock = make(tmp_path)
    probe.note_comm_start()  # outside a step: ignored
    with probe.step():
        with probe.phase("forward"):
            clock.tick(0.02)
        with probe.phase("backward"):
            clock.tick(0.03)
            probe.note_comm_start()  # first bucket
            clock.tick(0.01)
            probe.note_comm_start()  # last bucket: compute ends here
            clock.tick(0.04)  # blocked in the allreduce
        clock.tick(0.002)
        probe.mark("optimizer")  # after the note's segment: not split
    with probe.step():  # the note does not leak into the next step
        clock.tick(0.05)
        probe.mark("backward")
    probe.close()
    first, second = lines(tmp_path / "rank0.jsonl")
    assert first["backward_s"] == pytest.approx(0.04)
    assert first["comm_s"] == pytest.approx(0.04)
    assert first["optimizer_s"] == pytest.approx(0.002)
    assert first["compute_s"] == pytest.approx(0.062)
    assert second["backward_s"] == pytest.approx(0.05)
    assert second["comm_s"] == 0.0


def test_comm_note_splits_a_mark_segment(tmp_path: Path) -> None:
    probe, clock = make(tmp_path)
    probe.begin_step()
    clock.tick(0.03)
    probe.note_comm_start()
    clock.tick(0.01)
    probe.mark("compute")
    probe.end_step()
    probe.close()
    (rec,) = lines(tmp_path / "rank0.jsonl")
    assert (rec["compute_s"], rec["comm_s"]) == pytest.approx((0.03, 0.01))


def test_phase_columns_appear_once_seen(tmp_path: Path) -> None:
    probe, clock = make(tmp_path)
    with probe.step():
        clock.tick(0.01)
    with probe.step():
        probe.mark("data")
        clock.tick(0.01)
        probe.mark("forward")
    with probe.step():
        clock.tick(0.01)
        probe.mark("forward")
    probe.close()
    a, b, c = lines(tmp_path / "rank0.jsonl")
    assert not any(k.endswith("_s") and k not in ("step_time_s", "t_end_s") for k in a)
    assert (b["data_s"], b["forward_s"], b["compute_s"]) == pytest.approx((0.0, 0.01, 0.01))
    assert c["data_s"] == 0.0  # seen before: 0 in this step, not absent


def test_iterate_times_data_and_ends_steps(tmp_path: Path) -> None:
    probe, clock = make(tmp_path)

    def loader():
        for i in range(3):
            clock.tick(0.005)  # fetching a batch
            yield i

    seen = []
    for item in probe.iterate(loader(), samples=16):
        with probe.phase("forward"):
            clock.tick(0.02)
        seen.append(item)
    assert not probe.in_step
    for item in probe.iterate(iter([7, 8, 9])):
        clock.tick(0.01)
        probe.mark("compute")
        if item == 8:
            break
    assert not probe.in_step
    probe.close()
    recs = lines(tmp_path / "rank0.jsonl")
    assert seen == [0, 1, 2]
    assert [r["step"] for r in recs] == [0, 1, 2, 3, 4]
    assert [r["data_s"] for r in recs[:3]] == pytest.approx([0.005] * 3)
    assert [r["step_time_s"] for r in recs[:3]] == pytest.approx([0.025] * 3)
    assert recs[0]["samples"] == 16


def test_samples_and_extra_fields(tmp_path: Path) -> None:
    probe, clock = make(tmp_path, samples_per_step=10)
    with probe.step():
        clock.tick(0.01)
    with probe.step():
        probe.set_samples(7)
        probe.add_fields(loss=0.5)
        clock.tick(0.01)
    probe.begin_step()
    clock.tick(0.01)
    rec = probe.end_step(samples=3, lr=0.1)
    assert rec is probe.last_record
    probe.close()
    a, b, c = lines(tmp_path / "rank0.jsonl")
    assert (a["samples"], b["samples"], c["samples"]) == (10, 7, 3)
    assert (b["loss"], c["lr"]) == (0.5, 0.1)
    assert "loss" not in c


def test_sync_is_called_before_every_timestamp_only_when_given(tmp_path: Path) -> None:
    calls = []
    probe, _ = make(tmp_path, sync=lambda: calls.append(1))
    with probe.step():  # begin + end
        with probe.phase("forward"):  # enter + exit
            pass
        probe.mark("optimizer")  # one
    probe.close()
    assert len(calls) == 5


def test_phase_names() -> None:
    assert PHASES == ("data", "forward", "backward", "comm", "optimizer", "compute")


def test_import_loads_no_heavy_module() -> None:
    code = (
        "import sys\n"
        "import xpuperf, xpuperf.probe, xpuperf.probe.hf, xpuperf.probe.lightning\n"
        "heavy = ('torch', 'numpy', 'pandas', 'transformers', 'lightning', 'pytorch_lightning')\n"
        "print(sorted(m for m in heavy if m in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == "[]"


def test_lines_are_valid_json_for_any_extra_field(tmp_path: Path) -> None:
    probe, clock = make(tmp_path, node='host "a"\\b')
    with probe.step(samples=2.5):
        clock.tick(1.23456789012)
        probe.add_fields(**{'odd "key"': "line\nbreak", "nan_s": float("nan"), "flag": True})
    probe.close()
    (rec,) = lines(tmp_path / "rank0.jsonl")
    assert rec["node"] == 'host "a"\\b'
    assert rec['odd "key"'] == "line\nbreak"
    assert rec["nan_s"] != rec["nan_s"]  # NaN, as json.dumps writes it
    assert rec["flag"] is True
    assert rec["samples"] == 2.5
    assert rec["step_time_s"] == pytest.approx(1.23456789, abs=1e-8)  # 9 significant digits


def test_probe_columns_are_the_canonical_ones() -> None:
    from xpuperf import steps
    from xpuperf.probe import jsonl

    assert set(jsonl.COLUMNS) == set(steps.COLUMNS)
    assert {p + "_s" for p in PHASES} == set(steps.PHASES)
