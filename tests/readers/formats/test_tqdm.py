"""tqdm training progress bars (Lightning, HF Trainer, ultralytics, accelerate loops).

The samples in tests/data/formats_tqdm were written by its make_samples.py from explicit step
schedules (each sample's comment there gives it). Every expected value below is worked out by
hand from that schedule and the reading rule: tqdm's [mm:ss] clock truncates to whole seconds;
a row is Δelapsed / Δn between two displays at least 20 ticks apart (20 s; 2 s for ultralytics'
'12.5s' clock), the last shorter stretch of a bar joins the window before it, and a window never
spans another bar's displays.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from xpuperf.errors import InputError
from xpuperf.readers import choose_format, open_source, read_logs
from xpuperf.readers.formats import tqdm
from xpuperf.readers.formats.table import TextTable
from xpuperf.readers.formats.tqdm_bars import parse
from xpuperf.readers.paths import Found

DATA = Path(__file__).resolve().parents[2] / "data"
TQDM = DATA / "formats_tqdm"


def _read(path: Path) -> tuple[TextTable, str]:
    found = Found(path, True, (path.name,))
    fmt = choose_format(open_source(found), found, None)
    assert fmt is not None
    return tqdm.read(open_source(found)), fmt.name


def _rows(out: TextTable) -> list[tuple[int, float]]:
    return [
        (int(s), float(t)) for s, t in zip(out.frame["step"], out.frame["step_time_s"], strict=True)
    ]


def _close(got: list[tuple[int, float]], want: list[tuple[int, float]]) -> None:
    assert [s for s, _ in got] == [s for s, _ in want]
    assert [t for _, t in got] == pytest.approx([t for _, t in want])


def _note(out: TextTable, start: str) -> str:
    (note,) = [n for n in out.notes if n.startswith(start)]
    return note


def test_lightning_2x_epochs_and_validation() -> None:
    out, fmt = _read(TQDM / "lightning_2x_1gpu.log")
    assert fmt == "tqdm"
    # epoch 0: display of batch i at floor(2.5 + 0.5 i): 10→7, 20→12, 30→17, 40→22 (first ≥ 20:
    # 40 steps in 22 s), 80→42 (40 in 20 s), 120→62 (40 in 20 s).
    # epoch 1 (a new bar at 00:00, steps continue from 120): 40→20, 80→40, 100→60 (a window of
    # 20 steps in 20 s), then 110→65, 120→70 is shorter than 20 s and joins it: 40 in 30 s.
    _close(_rows(out), [(40, 22 / 40), (80, 0.5), (120, 0.5), (160, 0.5), (200, 0.5),
                        (240, 30 / 40)])  # fmt: skip
    assert "samples" not in out.frame
    assert "rank" not in out.frame
    # sanity check: 'Sanity Checking: |…| 0/?', 0/2, 2/2; each validation: 'Validation: |…| 0/?',
    # 0/20, 10/20, 20/20 (two epochs)
    assert _note(out, "11 validation/evaluation bar update(s)")
    assert any("pass --batch-size" in n for n in out.notes)


def test_lightning_1x_counts_validation_in_the_epoch_bar() -> None:
    out, fmt = _read(TQDM / "lightning_1x_val_in_epoch_bar_ascii.log")
    assert fmt == "tqdm"
    # epoch 0 (ASCII bar, s/it): batch i shown at floor(3.5 + 2.5 i): 7→21 (7 steps in 21 s),
    # 15→41 (8 in 20 s), 16→43 joins it (9 in 22 s); the epoch bar's 17–20 are validation
    # batches, each after a 'Validating' display: not timed. Epoch 1 (steps continue from 16):
    # floor(2.5 i): 8→20, 16→40.
    _close(_rows(out), [(7, 3.0), (16, 22 / 9), (24, 2.5), (32, 2.5)])
    assert _note(out, "8 bar step(s) across other bars")  # 4 validation batches per epoch
    # sanity: 0it, 0/2, 2/2; validation per epoch: 0it, 0/4, 1/4 … 4/4
    assert _note(out, "15 validation/evaluation bar update(s)")


def test_hf_trainer_banner_gives_samples_and_world_size() -> None:
    out, fmt = _read(TQDM / "hf_trainer_2gpu_torchrun.log")
    assert fmt == "tqdm"
    # step n shown at floor(5.25 + 1.25 n) up to 100: 12→20, 28→40, 44→60, 60→80, 76→100,
    # 92→120; 100→130 joins the last window (76→100: 24 steps in 30 s). The evaluation (a bar
    # without description, total 25) restarts the windows at step 101 (141 s): 117→161,
    # 133→181, 149→201; steps 151–170 take 2.5 s: 158→222 (9 in 21 s), 166→242 (8 in 20 s);
    # then 1.25 s: 178→262 (12 in 20 s), 194→282, and 200→290 joins it (22 in 28 s).
    _close(
        _rows(out),
        [(12, 20 / 12), (28, 1.25), (44, 1.25), (60, 1.25), (76, 1.25), (100, 1.25),
         (117, 1.25), (133, 1.25), (149, 1.25), (158, 21 / 9), (166, 2.5), (178, 20 / 12),
         (200, 28 / 22)],
    )  # fmt: skip
    assert (out.frame["samples"] == 32).all()  # per-device batch 8 × accumulation 4
    assert "64 = 2 processes: pass --world-size 2" in _note(out, "HF Trainer banner")
    assert _note(out, "1 bar step(s) across other bars")  # step 101: after the evaluation
    assert "(no description, total 25)" in _note(out, "1 other bar(s)")


def test_hf_trainer_real_console_with_format_forced() -> None:
    # transformers 5.24 output (tests/data/formats_hf_trainer_state, see its README): the dict
    # lines make it an hf_trainer log; --format tqdm reads its bar instead. The run took about
    # a second, so the clock cannot time it: the displayed rate does.
    path = DATA / "formats_hf_trainer_state" / "04_console_hf_trainer.txt"
    out, fmt = _read(path)
    assert fmt == "hf_trainer"
    # ' 50%|█████     | 20/40 [00:00<00:00, 37.70it/s]' then 'Writing model shards' (a
    # checkpoint), then 23/40 … '100%|██████████| 40/40 [00:01<00:00, 32.41it/s]'
    _close(_rows(out), [(20, 1 / 37.70), (40, 1 / 32.41)])
    assert _note(out, "2 row(s) from tqdm's displayed rate")
    assert _note(out, "3 bar step(s) across other bars")  # 20 → 23 around the checkpoint
    assert "'Writing model shards'" in _note(out, "1 other bar(s)")
    res = read_logs([path], fmt="tqdm")
    assert res.table["step"].tolist() == [20, 40]


def test_ultralytics_tqdm_bar_ddp() -> None:
    out, fmt = _read(TQDM / "ultralytics_yolov8_ddp_2gpu.log")
    assert fmt == "tqdm"
    # epoch 1: n = k shown at floor(4.0 + 0.8 k): 20→20 (20 steps in 20 s), 45→40, then the end
    # (59→51, 60→51) joins it: 40 steps in 31 s. Epochs 2, 3: floor(0.8 (k + 1)): 24→20 (24 in
    # 20 s), 49→40, 60→48 joins it (36 in 28 s).
    _close(_rows(out), [(20, 1.0), (60, 31 / 40), (84, 20 / 24), (120, 28 / 36),
                        (144, 20 / 24), (180, 28 / 36)])  # fmt: skip
    # 'val: Scanning …' (1) + 'Class Images Instances … mAP50-95)' 0/4 … 4/4 (5) per epoch
    assert _note(out, "16 validation/evaluation bar update(s)")
    assert "train: Scanning" in _note(out, "1 other bar(s)")
    res = read_logs([TQDM / "ultralytics_yolov8_ddp_2gpu.log"])
    # the 'DDP: debug command … torch.distributed.run --nproc_per_node 2' line: 2 ranks
    assert sorted(res.table["rank"].unique()) == [0, 1]


def test_ultralytics_own_bar_tenths_of_a_second() -> None:
    out, fmt = _read(TQDM / "ultralytics_8.3_own_bar.log")
    assert fmt == "tqdm"
    # '12.5s' clock (0.1 s): windows of 2 s. Epoch 1: n = k at 2.5 + 0.5 k: every 4 steps 2.0 s
    # up to 48 (26.5 s), then 49 and 50 at 27.0 s join the window 44→48: 6 steps in 2.5 s.
    # Epoch 2 (0.5 (k + 1), steps from 50): the same shape.
    want = [(4 * i, 0.5) for i in range(1, 12)] + [(50, 2.5 / 6)]
    want += [(50 + 4 * i, 0.5) for i in range(1, 12)] + [(100, 2.5 / 6)]
    _close(_rows(out), want)
    assert _note(out, "8 validation/evaluation bar update(s)")  # 4 per epoch


def test_accelerate_two_nodes_by_srun_prefix_and_a_cut_line() -> None:
    out, fmt = _read(TQDM / "accelerate_srun_2nodes_resumed.log")
    assert fmt == "tqdm"
    t = out.frame
    r0 = _rows(TextTable(t[t["rank"] == 0], locate=out.locate))
    r8 = _rows(TextTable(t[t["rank"] == 8], locate=out.locate))
    # rank 0 (resumed at 500, step 500 + j at 2j + 3 s): 509→21 (9 in 21 s), 519→41, 529→61,
    # 530→63 joins it (11 in 22 s). Rank 8 (at 2j + 4 s): 508→20, 518→40, 528→60, 530→64.
    _close(r0, [(509, 21 / 9), (519, 2.0), (530, 2.0)])
    _close(r8, [(508, 2.5), (518, 2.0), (530, 2.0)])
    (drop,) = out.drops
    assert (drop.reason, drop.count, drop.first) == (
        "a tqdm bar that does not parse (cut line?)", 1, 10)  # fmt: skip


def test_lightning_colab_bar_without_blocks() -> None:
    out, fmt = _read(TQDM / "lightning_1x_colab_ncols0.log")
    assert fmt == "tqdm"
    # 'Epoch 0:  40% 80/200 [00:22<…]': batch i at floor(2 + 0.25 i): 80→22 (80 in 22 s),
    # 160→42, 200→52 joins it (120 steps in 30 s)
    _close(_rows(out), [(80, 22 / 80), (200, 0.25)])


@pytest.mark.parametrize(
    ("text", "want"),
    [
        # (desc, n, total, elapsed s, resolution s, s per unit, unit, scaled)
        ("Epoch 3:  45%|████▌     | 450/1000 [01:23<01:42,  5.38it/s, loss=0.1, v_num=0]",
         ("Epoch 3", 450, 1000, 83, 1.0, 1 / 5.38, "it", False)),
        ("  3%|▎         | 30/1000 [00:12<06:40,  2.42it/s]",
         ("", 30, 1000, 12, 1.0, 1 / 2.42, "it", False)),
        ("Epoch 0:  22%|##2       | 4/18 [00:17<01:02,  4.47s/it, loss=10.07]",
         ("Epoch 0", 4, 18, 17, 1.0, 4.47, "it", False)),
        ("Epoch 8: : 150it [00:03, 46.84it/s, loss=1.62]",
         ("Epoch 8", 150, None, 3, 1.0, 1 / 46.84, "it", False)),
        ("Training: |          | 0/? [00:00<?, ?it/s]",
         ("Training", 0, None, 0, 1.0, math.nan, "it", False)),
        ("train:  40%|####      | 1.20k/3.00k [1:02:03<1:33:05, 1.23kit/s]",
         ("train", 1200, 3000, 3723, 1.0, 1 / 1230, "it", True)),
        ("Epoch 0:   2%|▏         | 3744/150000 [3:12:36<125:24:04,  0.32it/s, v_num=35a4]",
         ("Epoch 0", 3744, 150000, 11556, 1.0, 1 / 0.32, "it", False)),
        ("Map:  10%|█         | 100/1000 [00:02<00:18, 49.50 examples/s]",
         ("Map", 100, 1000, 2, 1.0, 1 / 49.5, "examples", False)),
        ("   1/100   3.52G   1.234   16   640: 45% ━━━━━╸────── 211/469 5.6it/s 1:05<46.1s",
         ("1/100   3.52G   1.234   16   640", 211, 469, 65, 1.0, 1 / 5.6, "it", False)),
        ("   2/100   3.52G   1.234   16   640: 4% ────────────── 20/469 1.2Kit/s 37.5s<6.1s",
         ("2/100   3.52G   1.234   16   640", 20, 469, 37.5, 0.1, 1 / 1200, "it", False)),
    ],
)  # fmt: skip
def test_parse_bar_shapes(text: str, want: tuple) -> None:
    (u,) = parse(text)
    got = (u.desc, u.n, u.total, u.elapsed_s, u.res_s, u.rate_s, u.unit, u.scaled)
    assert got[:5] == want[:5]
    assert got[6:] == want[6:]
    if math.isnan(want[5]):
        assert math.isnan(u.rate_s)
    else:
        assert u.rate_s == pytest.approx(want[5])


def test_parse_ignores_other_brackets() -> None:
    assert parse("[12:30:01] epoch 3 done") == []
    assert parse("2024-03-02 10:00:05 step 5 [00:12, fast]") == []


def test_sniff_wants_a_training_bar() -> None:
    assert tqdm.sniff(["Epoch 0:  10%|█         | 10/100 [00:05<00:45,  2.00it/s]"])
    assert tqdm.sniff(["\x1b[A  3%|▎         | 30/1000 [00:12<06:40,  2.42it/s]"])
    assert not tqdm.sniff(
        ["Validation DataLoader 0:  50%|█████     | 5/10 [00:01<00:01,  5.00it/s]"]
    )
    assert not tqdm.sniff(["Map: 100%|██████████| 1000/1000 [00:00<00:00, 5000.00 examples/s]"])
    assert not tqdm.sniff(
        ["Loading checkpoint shards: 100%|██████████| 2/2 [00:05<00:00,  2.50s/it]"]
    )
    assert not tqdm.sniff(["iter 10: loss 2.1, time 81.2ms"])


def _write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "train.log"
    p.write_text(text, encoding="utf-8")
    return p


def _bar(n: int, total: int, el: str, desc: str = "train") -> str:
    return f"\r{desc}: {100 * n // total:3d}%|          | {n}/{total} [{el}<00:10,  1.00it/s]"


def test_a_short_bar_takes_the_rate_and_a_finished_bar_seen_once_is_timed_from_its_start(
    tmp_path: Path,
) -> None:
    # bar 1 ran 3 s (under 5 ticks): the rate at its end; bar 2 only shows its end: 50 steps in
    # 40 s from 00:00
    text = "\r" + "train:   0%|          | 0/10 [00:00<?, ?it/s]"
    text += "\rtrain: 100%|██████████| 10/10 [00:03<00:00,  4.00it/s]\n"
    text += "\rtrain: 100%|██████████| 50/50 [00:40<00:00,  1.25it/s]\n"
    out = tqdm.read(open_source(Found(_write(tmp_path, text), True, ("train.log",))))
    _close(_rows(out), [(10, 0.25), (60, 0.8)])
    assert _note(out, "1 row(s) from tqdm's displayed rate")
    assert _note(out, "1 bar(s) seen only at their end")


def test_an_update_going_backwards_is_counted(tmp_path: Path) -> None:
    lines = [_bar(0, 100, "00:00"), _bar(10, 100, "00:10"), _bar(8, 100, "00:11"),
             _bar(30, 100, "00:30")]  # fmt: skip
    out = tqdm.read(open_source(Found(_write(tmp_path, "".join(lines)), True, ("t.log",))))
    _close(_rows(out), [(30, 1.0)])  # 0 → 30 in 30 s, the 8 skipped
    (drop,) = out.drops
    assert drop.count == 1
    assert drop.reason.startswith("bar update going backwards")


def test_validation_bars_only_is_a_one_line_input_error(tmp_path: Path) -> None:
    text = "\rValidation DataLoader 0:  50%|█████     | 5/10 [00:01<00:01,  5.00it/s]\n"
    with pytest.raises(InputError) as exc:
        tqdm.read(open_source(Found(_write(tmp_path, text), True, ("v.log",))))
    assert "only a validation/evaluation bar (Validation DataLoader #), no training bar" in (
        exc.value.message
    )
    assert "\n" not in exc.value.message


def test_bars_without_the_prefix_the_others_carry_are_dropped(tmp_path: Path) -> None:
    tagged = "[rank1]:" + _bar(0, 100, "00:00") + _bar(25, 100, "00:25") + "\n"
    plain = _bar(0, 100, "00:00") + _bar(40, 100, "00:25") + "\n"
    out = tqdm.read(open_source(Found(_write(tmp_path, tagged + plain), True, ("t.log",))))
    assert out.frame["rank"].tolist() == [1]
    _close(_rows(out), [(25, 1.0)])
    assert out.drops[0].reason.startswith("bar without the launcher rank prefix")


def test_explain_quotes_the_bar_and_its_physical_line() -> None:
    from xpuperf.readers.formats.explain import explain

    e = explain(str(TQDM / "hf_trainer_2gpu_torchrun.log"))
    assert e.reader == "tqdm"
    # 12 lines of launch and banner; line 13 holds the bar's updates, '\r' apart
    assert e.lines[0].endswith(
        "(its sniff accepts line 13: '0%|          | 0/200 [00:00<?, ?it/s]')"
    )
    assert "    13: '50%|█████     | 100/200 [02:10<02:05,  1.25s/it][INFO" in "\n".join(e.lines)


def test_a_bar_beside_other_step_logs_is_job_output(tmp_path: Path) -> None:
    csvs = sorted((DATA.parent.parent / "sample_logs" / "periodic_spikes_8rank").glob("*.csv"))
    bar = TQDM / "lightning_2x_1gpu.log"
    with pytest.raises(InputError) as exc:  # named: an error naming the file
        read_logs([*map(str, csvs), str(bar)])
    assert exc.value.path is not None
    assert Path(exc.value.path).name == bar.name
    assert "only step timing is a tqdm progress bar" in exc.value.message
    # found in a folder: skipped like an unrecognised file (analyze reads those as job output)
    job = tmp_path / "job"
    job.mkdir()
    for p in csvs:
        (job / p.name).write_bytes(p.read_bytes())
    (job / "train.log").write_bytes(bar.read_bytes())
    res = read_logs([str(job)])
    assert res.table["rank"].nunique() == len(csvs)
    (said,) = [w for w in res.warnings if "train.log" in w]
    assert said.endswith(
        "train.log: skipped the file: its format is not recognised as a step log (its only step "
        "timing is a tqdm progress bar, read as steps when no other step log is given; beside "
        "the other step logs it is the job's console output)"
    )
    assert len(read_logs([str(bar)]).table) == 6  # alone: read


def test_an_outer_epoch_bar_is_not_the_training_bar(tmp_path: Path) -> None:
    # for epoch in trange(2, desc="Epochs"): for batch in tqdm(loader, desc="Iter"): …
    # the outer bar moves once per epoch, always after the inner bar: it never forms a window,
    # and its last display (2/2 at 01:02) is not a bar seen only at its end
    def inner() -> str:
        return "".join(_bar(n, 30, f"00:{n:02d}", "Iter") for n in (0, 10, 20, 30))

    text = _bar(0, 2, "00:00", "Epochs") + "\n" + inner() + "\n"
    text += _bar(1, 2, "00:31", "Epochs") + "\n" + inner() + "\n" + _bar(2, 2, "01:02", "Epochs")
    out = tqdm.read(open_source(Found(_write(tmp_path, text + "\n"), True, ("t.log",))))
    # each epoch: 0→20 in 20 s, then 30 at 00:30 joins it: 30 steps in 30 s; epoch 2 from 30
    _close(_rows(out), [(30, 1.0), (60, 1.0)])
    assert "Iter" in out.notes[0]
