"""Intel Gaudi hccl_demo output: read into the nccl-tests row table, fitted, recognised.

Samples in tests/data/calibrate_hccl_demo (README there: versions imitated, model used).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from xpuperf.calibrate.hccldemo import hccl_factor, is_hccl_demo, read_hccl_demo
from xpuperf.calibrate.run import calibrate_files
from xpuperf.errors import InputError
from xpuperf.kinds import kind_of

DATA = Path(__file__).resolve().parent.parent / "data" / "calibrate_hccl_demo"
SWEEP_2024 = DATA / "hccl_demo_allreduce_8x_2024_sweep.log"
LOOP_2025 = DATA / "hccl_demo_allreduce_16x_2025_size_loop.log"
GATHER = DATA / "hccl_demo_allgather_16x_2025-10_summary.log"


def _write(tmp_path: Path, text: str, name: str = "hccl.log") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def test_2024_summary_us_label_holds_milliseconds():
    res = read_hccl_demo(SWEEP_2024)
    (t,) = res.tables
    assert (t.collective, t.ranks, t.ranks_source, t.nodes) == ("all_reduce", 8, "nranks", 1)
    assert t.tool == "hccl_demo"
    assert t.rows == 24
    last = res.frame.iloc[-1]
    # printed "2.002" under "(us)": 268435456 B / 134.083793 GB/s = 2002.0 µs → the value is ms
    assert last["size_bytes"] == 268435456
    assert last["time_us"] == pytest.approx(2002.0)
    assert last["algbw_GBps"] == pytest.approx(134.083793)
    # nw_bw = algo_bw · 2(n−1)/n = 134.083793 × 1.75 = 234.6466 (the nccl-tests busbw)
    assert last["busbw_GBps"] == pytest.approx(134.083793 * 1.75, rel=1e-6)
    assert any("labelled (us) but holds ms" in w for w in res.warnings)
    first = res.frame.iloc[0]  # 32 B in 0.025 ms = 25 µs
    assert (first["size_bytes"], first["time_us"]) == (32, pytest.approx(25.0))


def test_size_loop_of_single_runs_is_one_sweep_with_launcher_ranks():
    res = read_hccl_demo(LOOP_2025)
    (t,) = res.tables  # six `Welcome` runs of one configuration, sizes 1 MiB … 1 GiB
    assert t.rows == 6
    assert t.ranks == 16
    assert t.ranks_source.startswith("launcher")
    assert (t.hosts, t.nodes, t.nodes_source) == (["10.3.0.11", "10.3.0.12"], 2, "hosts")
    row = res.frame[res.frame["size_bytes"] == 268435456].iloc[0]
    # no time printed: t = S / algbw = 268435456 / 47.146797e3 = 5693.61 µs
    assert row["time_us"] == pytest.approx(5693.61, abs=0.01)
    assert row["busbw_GBps"] == pytest.approx(88.400244)  # = 47.146797 × 2·15/16
    assert row["count"] == 67108864


def test_all_gather_sizes_become_nccl_tests_totals():
    res = read_hccl_demo(GATHER)
    (t,) = res.tables
    assert (t.collective, t.ranks, t.nodes, t.nodes_source) == (
        "all_gather",
        16,
        2,
        "ranks per node",
    )
    last = res.frame.iloc[-1]
    # per-rank input 256 MiB → nccl-tests size 16 × 268435456 = 4294967296; count stays per rank
    assert (last["size_bytes"], last["count"]) == (4294967296, 134217728)
    assert last["algbw_GBps"] == pytest.approx(16 * 5.277798)  # 84.44477
    # busbw (n−1)/n · 84.44477 = 79.16697 = hccl_demo's nw_bw = 5.277798 × (n − 1)
    assert last["busbw_GBps"] == pytest.approx(79.166963)
    assert last["time_us"] == pytest.approx(50861.264)  # "50.861264 ms"
    assert not res.warnings


@pytest.mark.parametrize(
    ("path", "busbw", "latency"),
    [(SWEEP_2024, 240.0, 25.0), (LOOP_2025, 90.0, 60.0), (GATHER, 80.0, 40.0)],
)
def test_calibrate_fits_the_model_the_samples_were_written_from(path, busbw, latency):
    (fit,) = calibrate_files([path]).fits
    # ±1 % jitter on every time: the plateau within 2 %, the latency within 10 %
    assert fit.busbw_GBps == pytest.approx(busbw, rel=0.02)
    assert fit.latency_us == pytest.approx(latency, rel=0.10)
    assert fit.tool == "hccl_demo"
    assert fit.run.startswith(path.name)


def test_recognised_by_content():
    for p in (SWEEP_2024, LOOP_2025, GATHER):
        assert is_hccl_demo(p)
        assert kind_of(p) == ("Intel Gaudi hccl_demo output", "xpuperf calibrate")


def test_2022_bandwidth_line_rank_prefix_and_count_only(tmp_path):
    # 2022 layout: `count=` only (size = 2048 floats × 4 B = 8192 B), a single "Bandwidth" (NW)
    block = (
        "[Rank 0] ##########################################\n"
        "[Rank 0] [BENCHMARK] hcclAllReduce(src!=dst, count={c}, dtype=float, iterations=100)\n"
        "[Rank 0] [BENCHMARK]     Bandwidth     : {bw} GB/s\n"
    )
    text = "nranks               = 4\n" + "".join(
        block.format(c=c, bw=bw) for c, bw in ((2048, 0.3), (1048576, 15.0), (4194304, 30.0))
    )
    res = read_hccl_demo(_write(tmp_path, text))
    assert list(res.frame["size_bytes"]) == [8192, 4194304, 16777216]
    # algbw = NW / (2·3/4) = 30 / 1.5 = 20 GB/s; t = 16777216 / 20e3 = 838.86 µs
    last = res.frame.iloc[-1]
    assert last["algbw_GBps"] == pytest.approx(20.0)
    assert last["time_us"] == pytest.approx(838.8608)


def test_inline_unit_header_latency_and_repeated_size(tmp_path):
    # a header with units inline, time in µs; the same size twice = two runs, never pooled
    table = (
        "[SUMMARY REPORT]\n(src!=dst, collective=all_reduce, iterations=10)\n\n"
        "size (B)    count    type    redop    time (us)    algbw (GB/s)    busbw (GB/s)\n"
        "1048576     262144   float   sum      100.0        10.485760       18.350080\n"
        "4194304     1048576  float   sum      200.0        20.971520       36.700160\n"
    )
    res = read_hccl_demo(_write(tmp_path, table + "\n" + table))
    assert len(res.tables) == 2
    assert list(res.frame["table"]) == [0, 0, 1, 1]
    # no count printed: busbw/algbw = 18.35008 / 10.48576 = 1.75 = 2(n−1)/n → n = 8
    assert res.tables[0].ranks == 8
    assert res.tables[0].ranks_source == "nw_bw/algo_bw"
    assert res.frame["time_us"].tolist() == [100.0, 200.0, 100.0, 200.0]
    assert not res.warnings


def test_latency_mode_single_block(tmp_path):
    text = (
        "HCCL_NRANKS=2 HCCL_RANKS_PER_NODE=2 HCCL_DEMO_TEST=broadcast ./hccl_demo\n"
        "[BENCHMARK] hcclBroadcast(dataSize=4096, count=1024, dtype=float, iterations=10)\n"
        "[BENCHMARK]     Host Latency   : 0.020000 ms\n"
        "[BENCHMARK]     Device Latency : 0.015000 ms\n"
    )
    res = read_hccl_demo(_write(tmp_path, text))
    row = res.frame.iloc[0]
    # 4096 B in 20 µs: algbw = 4096 / 20e3 = 0.2048 GB/s; broadcast busbw = algbw (factor 1)
    assert (row["collective"], row["time_us"]) == ("broadcast", pytest.approx(20.0))
    assert row["busbw_GBps"] == pytest.approx(0.2048)
    assert (res.tables[0].ranks, res.tables[0].nodes) == (2, 1)


def test_hccl_factor_values():
    assert hccl_factor("all_reduce", 8) == pytest.approx(1.75)  # 2·7/8
    assert hccl_factor("all_gather", 16) == 15.0  # n − 1: the size is one rank's input
    assert hccl_factor("alltoall", 4) == pytest.approx(0.75)  # (n−1)/n
    assert hccl_factor("reduce", 4) == 1.0


def test_no_result_is_an_input_error_with_line(tmp_path):
    p = _write(tmp_path, "Welcome to HCCL demo\nnranks               = 8\n")
    with pytest.raises(InputError, match="no hccl_demo result in 2 lines") as e:
        read_hccl_demo(p)
    assert e.value.line == 2
