"""nanoGPT train.py and build-nanogpt train_gpt2.py logs (tests/data/formats_nanogpt, written for
these tests the way the scripts print); every value below was read off the files by hand."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from xpuperf.readers import choose_format, open_source
from xpuperf.readers.formats import nanogpt
from xpuperf.readers.formats.table import TextTable
from xpuperf.readers.paths import Found

DATA = Path(__file__).resolve().parents[2] / "data" / "formats_nanogpt"


def _read(name: str) -> tuple[TextTable, str]:
    path = DATA / name
    found = Found(path, True, (path.name,))
    fmt = choose_format(open_source(found), found, None)
    assert fmt is not None
    return nanogpt.read(open_source(found)), fmt.name


def test_ddp_run_with_mfu_tokens_and_world_size() -> None:
    out, fmt = _read("train_gpt2_8gpu_torchrun.log")
    assert fmt == "nanogpt"
    t = out.frame
    assert t["step"].tolist() == list(range(0, 301, 10))  # iter 0 … iter 300, log_interval 10
    assert t["step_time_s"].iloc[0] == pytest.approx(52.31746)  # 'time 52317.46ms'
    assert t["step_time_s"].iloc[1] == pytest.approx(0.90214)  # 'time 902.14ms'
    assert math.isnan(t["mfu"].iloc[0])  # 'mfu -100.00%': no estimate yet
    assert t["mfu"].iloc[1] == pytest.approx(0.4025)  # 'mfu 40.25%'
    assert t.loc[t["step"] == 300, "mfu"].item() == pytest.approx(0.3454)
    assert (t["tokens"] == 491_520).all()  # 'tokens per iteration will be: 491,520'
    # the start-up line is printed by each of the 8 torchrun processes
    assert out.world_size == 8
    assert "8 processes" in out.world_source
    # evaluations before iter 0, 100, 200 and 300
    assert any(n.startswith("nanoGPT: 4 logged step(s)") for n in out.notes)


def test_2023_lines_without_mfu_or_tokens() -> None:
    out, fmt = _read("shakespeare_char_2023_single_gpu.log")
    assert fmt == "nanogpt"
    t = out.frame
    assert len(t) == 25
    assert "mfu" not in t.columns
    assert "tokens" not in t.columns
    assert t["step_time_s"].iloc[1] == pytest.approx(0.04837)
    assert t["step_time_s"].iloc[-1] == pytest.approx(0.04981)
    assert out.world_size is None  # no 'tokens per iteration' line: the log does not tell


def test_build_nanogpt_tokens_from_tok_per_sec() -> None:
    out, fmt = _read("build_nanogpt_8gpu.log")
    assert fmt == "nanogpt"
    t = out.frame
    assert t["step"].tolist() == list(range(24))
    assert t["step_time_s"].iloc[1] == pytest.approx(0.33558)  # 'dt: 335.58ms'
    # 'tok/sec: 1562329.14' × 0.33558 s = 524 286.4: the 2**19 total batch, up to print rounding
    assert t["tokens"].iloc[1] == pytest.approx(1562329.14 * 0.33558)
    assert t["tokens"].iloc[1] == pytest.approx(524_288, rel=1e-5)
    assert out.world_size is None


def test_sniff_needs_a_step_line() -> None:
    assert nanogpt.sniff(["iter 7: loss 2.1000, time 81.25ms, mfu 12.00%"])
    assert nanogpt.sniff(["step    7 | loss: 2.100000 | dt: 81.25ms | tok/sec: 10.00"])
    assert not nanogpt.sniff(["step 7: train loss 2.1000, val loss 2.2000"])
    assert not nanogpt.sniff(["tokens per iteration will be: 491,520"])
