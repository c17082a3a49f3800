"""timm train.py logs (tests/data/formats_timm, written for these tests the way timm prints);
every value below was read off the files by hand."""

from __future__ import annotations

from pathlib import Path

from xpuperf.readers import choose_format, open_source
from xpuperf.readers.formats import timm
from xpuperf.readers.formats.table import TextTable
from xpuperf.readers.paths import Found

DATA = Path(__file__).resolve().parents[2] / "data" / "formats_timm"


def _read(path: Path) -> tuple[TextTable, str]:
    found = Found(path, True, (path.name,))
    fmt = choose_format(open_source(found), found, None)
    assert fmt is not None
    return timm.read(open_source(found)), fmt.name


def test_2023_eight_processes() -> None:
    out, fmt = _read(DATA / "train_resnet50_8gpu_2023.log")
    assert fmt == "timm"
    t = out.frame
    assert len(t) == 52  # 26 lines per epoch (0, 50, …, 1250), 2 epochs; 'Test:' lines ignored
    first = t.iloc[0]
    # 'Train: 0 [   0/1251 (  0%)] … Time: 6.812s,  150.32/s … Data: 5.904 (5.904)'
    assert (first["step"], first["step_time_s"], first["data_s"]) == (0, 6.812, 5.904)
    assert first["samples"] == 1024  # 150.32 × 6.812 = 1023.98: 128 per card × 8
    # 'Train: 1 [   0/1251 …] … Time: 1.934s,  529.47/s …': epoch 1 starts at step 1251
    row = t[t["step"] == 1251].iloc[0]
    assert (row["step_time_s"], row["data_s"], row["samples"]) == (1.934, 1.512, 1024)
    assert t["step"].iloc[-1] == 1251 + 1250
    assert (t["samples"] == 1024).all()
    assert out.world_size == 8  # 'Process 0, total 8'
    assert "distributed mode" in out.world_source


def test_2021_single_process() -> None:
    out, fmt = _read(DATA / "train_effnet_1gpu_2021.log")
    assert fmt == "timm"
    t = out.frame
    assert t["step"].tolist() == [*range(0, 200, 10), 199]
    # 'Time: 0.210s,  304.76/s' → 64.0 samples; 'Data: 0.046 (1.508)'
    assert (t["step_time_s"].iloc[1], t["data_s"].iloc[1]) == (0.210, 0.046)
    assert (t["samples"] == 64).all()
    assert out.world_size == 1  # 'Training with a single process on 1 GPUs.'


def test_2025_updates_per_second_give_no_samples() -> None:
    out, fmt = _read(DATA / "train_vit_4gpu_2025_updates_per_s.log")
    assert fmt == "timm"
    t = out.frame
    assert "samples" not in t.columns  # 'Time: 3.210s,    0.31/s': 1 / time, not samples/s
    assert t["step_time_s"].iloc[0] == 3.210
    assert len(t) == 27
    assert any("updates per second" in n and n.startswith("timm: 27 ") for n in out.notes)
    assert out.world_size == 4


def test_file_handler_prefix_and_one_line_per_node(tmp_path: Path) -> None:
    line = (
        "Train: 2 [  40/100 ( 40%)]  Loss: 3.1 (3.2)  Time: 0.500s,  512.00/s  "
        "(0.510s,  501.96/s)  LR: 1.000e-03  Data: 0.020 (0.030)"
    )
    path = tmp_path / "train.log"
    path.write_text(
        f"2023-06-11 10:15:00,123 - train: [    INFO] - {line}\n{line}\n", encoding="utf-8"
    )
    out, fmt = _read(path)
    assert fmt == "timm"
    t = out.frame
    assert t["step"].tolist() == [2 * 100 + 40]
    assert (t["step_time_s"].iloc[0], t["data_s"].iloc[0], t["samples"].iloc[0]) == (
        0.5, 0.02, 256)  # fmt: skip
    assert any("1 repeated step line" in n for n in out.notes)
    assert out.world_size is None
