"""fairseq / metaseq ``train_inner`` logs (tests/data/formats_fairseq, written for these tests the
way fairseq 0.9–0.12 and metaseq print); every value below was read off the files by hand:
step time = 1 / ups (or Δwall / Δnum_updates), per-card tokens/s = wpb × ups / N ≈ wps / N."""

from __future__ import annotations

import calendar
from pathlib import Path

import pytest

from xpuperf.errors import InputError
from xpuperf.readers import choose_format, open_source, read_logs
from xpuperf.readers.formats import fairseq
from xpuperf.readers.formats.table import TextTable
from xpuperf.readers.paths import Found

DATA = Path(__file__).resolve().parents[2] / "data" / "formats_fairseq"


def _read(path: Path) -> tuple[TextTable, str]:
    """The fairseq reader's table of ``path`` and the format content sniffing picks for it."""
    found = Found(path, True, (path.name,))
    picked = choose_format(open_source(found), found, None)
    return fairseq.read(open_source(found)), picked.name if picked else "(none)"


def _write(tmp_path: Path, *lines: str) -> Path:
    path = tmp_path / "train.log"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _inner(u: int, ups: float, wall: int, tag: str = "train_inner", **kw: str) -> str:
    extra = "".join(f", {k}={v}" for k, v in kw.items())
    return (
        f"2021-05-01 10:00:00 | INFO | {tag} | epoch 001:  {u:5d} / 900 loss=5.1, wps=1000, "
        f"ups={ups}, wpb=4000, bsz=128, num_updates={u}, lr=1e-05{extra}, train_wall=1, wall={wall}"
    )


def test_train_inner_16_gpus_srun() -> None:
    out, fmt = _read(DATA / "train_inner_16gpu_srun_2021.log")
    assert fmt == "fairseq"
    t = out.frame
    assert t["step"].tolist() == [100, 200, 300, 400, 500, 600, 700, 800]  # num_updates
    row = t[t["step"] == 200].iloc[0]
    # 'wps=155301.5, ups=2.94, wpb=52823.6, bsz=1751.2, num_updates=200' at 12:00:56
    assert row["step_time_s"] == pytest.approx(1 / 2.94)
    assert (row["samples"], row["tokens"]) == (1751.2, 52823.6)
    assert row["t_end_s"] == calendar.timegm((2021, 3, 4, 12, 0, 56, 0, 0, 0))
    assert row["tokens"] / row["step_time_s"] == pytest.approx(155301.5, rel=1e-5)  # = wps
    # update 500 spans the end of epoch 1 and its validation: 'ups=1.72'
    assert t.loc[t["step"] == 500, "step_time_s"].item() == pytest.approx(1 / 1.72)
    assert out.world_size == 16  # 'training on 16 devices (GPUs/TPUs)'
    assert "training on 16 devices" in out.world_source
    assert not out.sampled  # ups is the mean over the log interval
    assert any("1 end-of-epoch 'train' summary and 2 'valid' line(s)" in n for n in out.notes)


def test_spread_over_16_cards_gives_wps_per_card() -> None:
    res = read_logs([DATA / "train_inner_16gpu_srun_2021.log"])
    t = res.table
    assert sorted(t["rank"].unique()) == list(range(16))
    row = t[(t["rank"] == 5) & (t["step"] == 200)].iloc[0]
    assert row["samples"] == pytest.approx(1751.2 / 16)  # 109.45 sentences per card
    # per-card tokens/s = wps / 16 = 155301.5 / 16 = 9706.3
    assert row["tokens"] / row["step_time_s"] == pytest.approx(155301.5 / 16, rel=1e-5)
    assert any("read as 16 cards" in w for w in res.warnings)


def test_json_hydra_wav2vec2() -> None:
    out, fmt = _read(DATA / "json_hydra_wav2vec2_8gpu_2021.log")
    assert fmt == "fairseq"
    t = out.frame
    assert t["step"].tolist() == list(range(200, 1401, 200))
    # '"ups": "0.95"', '"wpb": "6249.3"', '"bsz": "77.8"' at [2021-03-24 14:03:35,456]
    first = t.iloc[0]
    assert first["step_time_s"] == pytest.approx(1 / 0.95)
    assert (first["samples"], first["tokens"]) == (77.8, 6249.3)
    assert first["t_end_s"] == pytest.approx(calendar.timegm((2021, 3, 24, 14, 3, 35)) + 0.456)
    assert t["step_time_s"].iloc[3] == pytest.approx(1 / 0.88)  # update 800, after validation
    assert out.world_size == 8
    assert any("1 end-of-epoch 'train' summary and 1 'valid' line(s)" in n for n in out.notes)


def test_v09_print_lines_use_wall_differences() -> None:
    out, fmt = _read(DATA / "pipe_v0.9_4gpu_2019.log")
    assert fmt == "fairseq"
    t = out.frame
    # num_updates 98 (first line: no earlier wall), 198 … 498, then epoch 2: 710, 810, 910
    assert t["step"].tolist() == [198, 298, 398, 498, 710, 810, 910]
    # wall=868, 951, 1034, 1118, 1201 | 1397, 1480, 1563
    want = [83 / 100, 83 / 100, 84 / 100, 83 / 100, 196 / 212, 83 / 100, 83 / 100]
    assert t["step_time_s"].tolist() == pytest.approx(want)
    assert t["tokens"].iloc[0] == 82946.934  # 'wpb=82946.934' (a running mean)
    assert "t_end_s" not in t.columns  # print lines carry no time of day
    (drop,) = out.drops
    assert (drop.reason, drop.count, drop.first) == (fairseq.NO_WALL, 1, 22)
    assert out.world_size == 4  # '| training on 4 GPUs'
    assert any("8 line(s) print running averages" in n for n in out.notes)


def test_metaseq_json_log_interval_1() -> None:
    out, fmt = _read(DATA / "metaseq_json_64gpu_slurm_2022.log")
    assert fmt == "fairseq"
    t = out.frame
    assert t["step"].tolist() == list(range(2, 9))  # update 1 prints '"ups": "0"'
    ups = [0.71, 0.74, 0.73, 0.74, 0.72, 0.74, 0.73]
    assert t["step_time_s"].tolist() == pytest.approx([1 / x for x in ups])
    assert (t["tokens"] == 1_048_580).all()  # '"wpb": "1.04858e+06"' (6 significant digits)
    assert (t["samples"] == 512).all()
    (drop,) = out.drops
    assert (drop.reason, drop.first) == (fairseq.NO_RATE, 6)
    assert out.world_size == 64
    # per-card tokens/s at update 3: 1048580 × 0.74 / 64 = 12124.2 ≈ '"wps": "775946"' / 64
    row = t[t["step"] == 3].iloc[0]
    assert row["tokens"] / row["step_time_s"] / 64 == pytest.approx(775946 / 64, rel=1e-5)


def test_tpu_ups_off_the_wall_clock_is_not_used() -> None:
    out, fmt = _read(DATA / "tpu_v3_8_misreported_ups_2020.log")
    assert fmt == "fairseq"
    t = out.frame
    assert t["step"].tolist() == list(range(40, 201, 20))
    # wall=61, 68, 75, 82, 89, 96, 104, 111, 118, 125 over 20 updates each ('ups=0.14' = 1/7 s)
    assert t["step_time_s"].tolist() == pytest.approx([x / 20 for x in [7] * 5 + [8] + [7] * 3])
    # median of (1 / ups) / (Δwall / 20) = (1 / 0.14) / 0.35 = 20.4
    assert any("ups is 20.4 ×" in n for n in out.notes)


def test_tqdm_console() -> None:
    out, fmt = _read(DATA / "tqdm_console_1gpu_2022.log")
    assert fmt == "fairseq"
    t = out.frame
    assert t["step"].tolist() == list(range(50, 401, 50))  # bars redrawn with the same postfix
    ups = [2.40, 2.45, 2.46, 2.44, 2.47, 2.45, 2.46, 2.44]
    assert t["step_time_s"].tolist() == pytest.approx([1 / x for x in ups])
    assert t["tokens"].tolist() == [5239 + k for k in range(8)]
    assert out.world_size == 1
    assert not any("repeat update numbers" in n for n in out.notes)


def test_early_2020_train_tag_is_running_averages(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        _inner(100, 1.2, 95, tag="train"),
        _inner(200, 1.2, 178, tag="train"),
        _inner(300, 1.2, 262, tag="train"),
    )
    out, _ = _read(path)
    assert out.frame["step"].tolist() == [200, 300]
    assert out.frame["step_time_s"].tolist() == pytest.approx([0.83, 0.84])  # Δwall / 100


def test_coarse_ups_uses_the_wall_clock(tmp_path: Path) -> None:
    path = _write(tmp_path, _inner(100, 0.05, 2100), _inner(200, 0.05, 4141))
    out, _ = _read(path)
    # 'ups=0.05' is 20 s ± 2 s; wall 2100 → 4141 over 100 updates is 20.41 s
    assert out.frame["step_time_s"].tolist() == pytest.approx([20.0, 20.41])
    assert any("1 line(s) print ups below 0.1" in n for n in out.notes)


def test_resumed_run_keeps_the_first_reading(tmp_path: Path) -> None:
    lines = [_inner(u, 2.0, w) for u, w in [(100, 50), (200, 100), (300, 150)]]
    lines += [_inner(u, 2.5, w) for u, w in [(200, 90), (300, 130), (400, 170)]]
    out, _ = _read(_write(tmp_path, *lines))
    assert out.frame["step"].tolist() == [100, 200, 300, 400]
    assert out.frame["step_time_s"].tolist() == pytest.approx([0.5, 0.5, 0.5, 0.4])
    assert any(n.startswith("fairseq: 2 line(s) repeat update numbers") for n in out.notes)


def test_bad_lines_are_counted_not_raised(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        _inner(100, 2.0, 50),
        "2021-05-01 10:00:00 | INFO | train_inner | epoch 001:    200 / 900 loss=5.1, ups=2.0, "
        "num_updates=2x0, wall=100",
        '2021-05-01 10:00:00 | INFO | train_inner | {"epoch": 1, "ups": "2.0", "num_updates": "3',
        _inner(400, 2.0, 150),
        "2021-05-01 10:00:00 | INFO | fairseq_cli.train | Stopping training due to num_updates: "
        "400 >= max_update: 400",
    )
    out, _ = _read(path)
    assert out.frame["step"].tolist() == [100, 400]
    (drop,) = out.drops
    assert (drop.reason, drop.count, drop.first) == (fairseq.CUT, 2, 2)


def test_world_size_fallbacks(tmp_path: Path) -> None:
    args = "Namespace(arch='transformer', distributed_world_size=32, log_interval=100)"
    out, _ = _read(_write(tmp_path, args, _inner(100, 2.0, 50)))
    assert out.world_size == 32
    inits = [f"| distributed init (rank {r}): tcp://node:9000" for r in range(3)]
    out, _ = _read(_write(tmp_path, *inits, _inner(100, 2.0, 50)))
    assert out.world_size == 3
    assert "this log's processes only" in out.world_source


def test_only_summaries_say_so(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "2021-05-01 10:00:00 | INFO | fairseq_cli.train | training on 2 devices (GPUs/TPUs)",
        "2021-05-01 10:09:00 | INFO | train | epoch 001 | loss 5.1 | wps 9000 | ups 2.1 | "
        "num_updates 450 | wall 540",
        "2021-05-01 10:09:10 | INFO | valid | epoch 001 | valid on 'valid' subset | loss 4.9 | "
        "num_updates 450",
    )
    with pytest.raises(InputError, match="only 1 end-of-epoch 'train' summary and 1 'valid'"):
        _read(path)


def test_sniff() -> None:
    assert fairseq.sniff([_inner(100, 2.0, 50)])
    assert fairseq.sniff(
        ['[t][train_inner][INFO] - {"epoch": 1, "ups": "1.1", "num_updates": "5"}']
    )
    assert fairseq.sniff(["2021-05-01 10:00:00 | INFO | fairseq_cli.train | task: translation"])
    assert not fairseq.sniff(["| INFO | train | epoch 001 | loss 5.1 | num_updates 450 | wall 9"])
    assert not fairseq.sniff(["Stopping training due to num_updates: 800 >= max_update: 800"])


def test_a_subnormal_ups_gives_no_step_time_and_no_warning(tmp_path: Path) -> None:
    # found by the fuzz target: 1 / 2e-320 overflowed with a RuntimeWarning; such a line has no
    # ups; its step time falls back to Δwall/Δupdates = 10 s / 100 updates = 0.1 s
    p = _write(tmp_path, _inner(100, 1.0, 100), _inner(200, 2e-320, 110), _inner(300, 1.0, 120))
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        table, _ = _read(p)
    assert table.frame["step_time_s"].tolist() == pytest.approx([1.0, 0.1, 1.0])
