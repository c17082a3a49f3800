"""AMD Primus (Megatron backend) step lines behind Primus' logger prefix, with ANSI colours, the
``inst/avg`` number pairs and the per-GPU token rates of three Primus versions
(tests/data/formats_primus/README.md). Every value below was worked out by hand from the files."""

from __future__ import annotations

import calendar
from pathlib import Path

import numpy as np
import pytest

from xpuperf.pipeline import analyze_logs
from xpuperf.readers import choose_format, open_source, read_logs
from xpuperf.readers.base import Source
from xpuperf.readers.formats import console, megatron
from xpuperf.readers.paths import Found

DATA = Path(__file__).resolve().parents[1] / "data" / "formats_primus"
A = DATA / "primus_2025_llama3_8b_32gpu.log"
B = DATA / "primus_2026_8gpu_ansi.log"


def src_of(path: Path) -> Source:
    return Source(path, str(path), False, path.read_bytes()[:65536])


@pytest.mark.parametrize("path", [A, B])
def test_sniffed_as_megatron(path: Path) -> None:
    found = Found(path, True, (path.name,))
    fmt = choose_format(open_source(found), found, None)
    assert fmt is not None
    assert fmt.name == "megatron"


def test_2025_tokens_per_gpu_pairs_and_seq_length_dump() -> None:
    r = read_logs([A])
    # '[rank-31/32]': the job-level lines are spread over the 32 GPUs the log states
    assert r.job_level_cards == 32
    assert r.table["rank"].nunique() == 32
    t = r.table[r.table["rank"] == 0].reset_index(drop=True)
    assert t["step"].tolist() == [1, 2, 3, 4, 5, 6, 7, 8]  # iteration 5 printed twice: kept once
    # the first of each 'elapsed time per iteration (ms): inst/avg' pair, / 1000
    np.testing.assert_allclose(
        t["step_time_s"], [9.8765, 2.7013, 2.6988, 2.7051, 2.7024, 2.6999, 2.7036, 2.7002]
    )
    assert (t["samples"] == 256 / 32).all()  # global batch size 256, per GPU share
    # seq_length 4096 from the arguments dump behind the logger prefix: 256 × 4096 = 1 048 576
    # tokens per step for the job, 32 768 per GPU
    assert (t["tokens"] == 1_048_576 / 32).all()
    assert "mfu" not in t.columns  # TFLOP/s/GPU is not MFU
    # '[20251121 12:10:11]' on iteration 2 (compact date, UTC)
    assert t["t_end_s"].iloc[1] == calendar.timegm((2025, 11, 21, 12, 10, 11))
    dup = [w for w in r.warnings if "same (rank, step)" in w]
    assert len(dup) == 1
    assert "skipped 1 row" in dup[0]
    assert ":11:" in dup[0]
    assert any("read as 32 cards (world size read from the log" in w for w in r.warnings)


def test_2026_inst_harmonic_and_compute_per_gpu_spellings() -> None:
    r = read_logs([B])
    assert r.job_level_cards == 8  # '[rank-7/8]'
    t = r.table[r.table["rank"] == 3].reset_index(drop=True)
    assert t["step"].tolist() == [1, 2, 3, 4, 5, 6, 7]
    np.testing.assert_allclose(
        t["step_time_s"], [21.0346, 13.3728, 13.3647, 13.3802, 13.3699, 13.3755, 13.3711]
    )
    # no seq_length printed: tokens/s/GPU × step time × world size 8 ('[rank-7/8]'), e.g.
    # iteration 2: 9801.4 × 13.3728 × 8 = 1 048 577.3 = 128 × 8192.01 → 128 × 8192 = 1 048 576;
    # iteration 4 ('compute per GPU … (avg …)' form): 9796.0 × 13.3802 × 8 = 1 048 579.5 → same
    assert (t["tokens"] == 128 * 8192 / 8).all()  # the job's tokens, 1/8 per GPU
    assert any("whole seq_length" in w for w in r.warnings)


def test_without_world_size_tokens_are_not_guessed(tmp_path: Path) -> None:
    # the 2026 lines without the '[rank-7/8]' field: the rate alone cannot give the job's tokens
    text = B.read_text(encoding="utf-8").replace("[rank-7/8]", "[node0]")
    p = tmp_path / "primus.log"
    p.write_text(text, encoding="utf-8")
    r = read_logs([p])
    assert "tokens" not in r.table.columns
    assert any("neither seq_length nor the world size" in w for w in r.warnings)


def test_fast_path_hands_prefixed_blocks_to_the_line_path(tmp_path: Path) -> None:
    # ASCII without ANSI codes: the block is eligible for the fast scan, which does not see
    # lines behind a logger prefix; the 'elapsed time per iteration' count sends the block to
    # the line path, so both paths give the same rows, in blocks of any size
    plain = console._ANSI.sub("", B.read_text(encoding="utf-8"))
    p = tmp_path / "plain.log"
    p.write_text(plain + "iteration 8/ 5000 | consumed samples: 1024 |\n", encoding="ascii")
    for block in (256, 4096, 1 << 19):
        fast = megatron.read(src_of(p), fast=True, block_bytes=block)
        line = megatron.read(src_of(p), fast=False, block_bytes=block)
        assert fast.frame.equals(line.frame)
        assert fast.frame["step"].tolist() == [1, 2, 3, 4, 5, 6, 7]
        (drop,) = fast.drops  # the cut line at the end: line 10
        assert drop.first == 10
        assert drop.count == 1


@pytest.mark.parametrize(
    ("prefix", "read"),
    [
        ("2025-03-04 10:00:00,123 - megatron.training - INFO - ", True),  # Python logging
        ("2025-03-04 10:00:00.123 | INFO     | megatron.training:train:1021 - ", True),  # loguru
        ("[NeMo I 2025-03-04 10:00:00 training:1021] ", True),  # one [...] group
        ("saving checkpoint at ", False),  # free words before 'iteration': not a step line
    ],
)
def test_any_logger_prefix(tmp_path: Path, prefix: str, read: bool) -> None:
    step = (
        "iteration       10/     500 | consumed samples:         5120 | elapsed time per "
        "iteration (ms): 1250.0 | learning rate: 1.0E-04 | global batch size:   512 |"
    )
    p = tmp_path / "m.log"
    p.write_text(f"{step.replace(' 10/', '  9/')}\n{prefix}{step}\n", encoding="utf-8")
    t = megatron.read(src_of(p)).frame
    assert t["step"].tolist() == ([9.0, 10.0] if read else [9.0])
    if read:
        assert t["step_time_s"].iloc[1] == 1.25


def test_analyze_per_card_with_the_world_size_the_log_states() -> None:
    # 8 rows × 256 samples over Σ step times 9.8765 + 18.9113 = 28.7878 s: 71.14 samples/s for
    # the job, 2.2231 per GPU with the 32 GPUs of '[rank-31/32]'
    s = analyze_logs([A]).summary  # no --world-size: the log's '[rank-31/32]' gives 32
    assert s.throughput_wallclock_samples_per_s == pytest.approx(2048 / 28.7878, rel=1e-4)
    assert s.throughput_per_card_wallclock_samples_per_s == pytest.approx(2048 / 28.7878 / 32)
    # median of the 8 step times = (2.7013 + 2.7024) / 2 = 2.70185 s → 256 / 2.70185 = 94.75/s
    assert s.throughput_samples_per_s == pytest.approx(256 / 2.70185, rel=1e-4)
    # the job's tokens over the median step: 1 048 576 / 2.70185 = 388 095 tokens/s, 12 128 per
    # GPU (the log's own 'tokens per GPU' prints 12130.4 for that window)
    assert s.throughput_tokens_per_s == pytest.approx(1_048_576 / 2.70185, rel=1e-4)
    assert s.throughput_per_card_tokens_per_s == pytest.approx(1_048_576 / 2.70185 / 32, rel=1e-4)
    assert s.ranks == 32
