"""Rank lists that do not list every rank: counts read from what the tool prints.

Samples: tests/data/calibrate_ranks_abbreviated (README there: versions imitated, hand checks).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from xpuperf.calibrate import calibrate_files
from xpuperf.calibrate.nccltests import bus_factor, read_nccl_tests

DATA = Path(__file__).resolve().parent.parent / "data" / "calibrate_ranks_abbreviated"
ELIDED = DATA / "all_reduce_64r_middle_elided.txt"
TOOL_CUT = DATA / "all_reduce_2x16_dgx2_tool_cut_2.17.txt"
END_ELIDED = DATA / "all_reduce_32r_end_elided_mpirun.txt"
NEW_HEADER = (
    "#       size         count      type   redop    root     time   algbw   busbw #wrong"
    "     time   algbw   busbw #wrong\n"
)


def _row(size: int, t_us: float, n: int) -> str:
    alg = size / (t_us * 1e3)
    bus = alg * bus_factor("all_reduce", n)
    return (
        f"{size:12d}  {size // 4:12d}     float     sum      -1  {t_us:7.1f}  {alg:6.2f}  "
        f"{bus:6.2f}       0  {t_us:7.1f}  {alg:6.2f}  {bus:6.2f}       0\n"
    )


def _table(n: int) -> str:
    # t = 50 µs + 2(n−1)/n · S / 40 GB/s: busbw/algbw = 2(n−1)/n as printed
    f = bus_factor("all_reduce", n)
    rows = "".join(_row(s, 50 + f * s / 40e3, n) for s in (1 << 20, 1 << 24, 1 << 28, 1 << 30))
    return "#\n" + NEW_HEADER + rows + "# Avg bus bandwidth    : 30.0\n"


def _rank(r: int, host: str, dev: int) -> str:
    return f"#  Rank {r:2d} Group  0 Pid {1000 + r:6d} on {host:>10} device {dev:2d} [0x1b] X\n"


def test_middle_elided_by_hand_count_from_the_largest_id_nodes_from_a_whole_host_block():
    (t,) = read_nccl_tests(ELIDED).tables
    assert (t.ranks, t.abbreviated, t.rank_lines) == (64, True, 16)
    assert t.ranks_source.startswith("abbreviated preamble: rank ids up to 63")
    # ranks 56–63 on h100-008 from device 0: 8 per node, 64 / 8 = 8 nodes
    assert (t.nodes, t.nodes_source) == (8, "ranks per node (8, a complete host block)")
    assert t.hosts == ["h100-001", "h100-008"]  # the hosts seen; the others were elided
    fr = read_nccl_tests(ELIDED).frame
    big = fr[fr["size_bytes"] == 1 << 30].iloc[0]
    # 80 + (63/32)·2^30/44e3 = 48124 µs; 2^30/48124e3 = 22.31; × 2·63/64 = 43.93
    assert (big["time_us"], big["algbw_GBps"], big["busbw_GBps"]) == (48124.0, 22.31, 43.93)
    assert bus_factor("all_reduce", 64) == pytest.approx(43.93 / 22.31, abs=0.001)


def test_tool_cut_each_process_shows_its_first_ranks():
    res = read_nccl_tests(TOOL_CUT)
    (t,) = res.tables
    assert (t.ranks, t.nodes, t.abbreviated) == (32, 2, True)
    assert t.ranks_source == "launcher (line 1) × 16 per process"
    assert t.devices == ["Tesla V100-SXM3-32GB"]  # the cut names are not devices
    assert [h[-5:] for h in t.hosts] == ["x2k9q", "p7m3w"]
    assert t.rank_lines == 32  # 30 whole lines + ranks 15 and 31 cut after 'on nccl-…'
    assert not [w for w in res.warnings if "busbw/algbw" in w]  # 2·31/32 agrees with 32
    lines = TOOL_CUT.read_text().splitlines()
    assert lines[21].endswith("...")
    assert lines[21].startswith("#  Rank 15")
    # nccl-tests buffers 2048 bytes per process and writes '...' at byte 2043
    per_process = "\n".join(lines[6:22]) + "\n"
    assert len(per_process) == 2043 + len("...\n")


def test_tool_cut_without_launcher_from_ids_and_per_process_count(tmp_path):
    text = "".join(ln for ln in TOOL_CUT.read_text().splitlines(True) if "mpirun" not in ln)
    p = tmp_path / "cut.txt"
    p.write_text(text)
    (t,) = read_nccl_tests(p).tables
    # largest id 31 (a cut line still shows it): (31 // 16 + 1) × 16 = 32 ranks
    assert (t.ranks, t.nodes) == (32, 2)
    assert t.ranks_source == (
        "abbreviated preamble: rank ids up to 31, nThread × nGpus = 16 per process"
    )
    assert t.nodes_source == "preamble (every process's first line)"


def test_end_elided_count_from_the_launch_line():
    res = calibrate_files([END_ELIDED])
    (t,) = [t for _, t in res.tables]
    assert (t.ranks, t.nodes) == (32, 4)  # -np 32 × 1; 32 / -npernode 8
    assert t.ranks_source == "launcher (line 1) × 1 per process"
    (fit,) = res.fits
    assert (fit.ranks, fit.nodes, fit.bus_factor) == (32, 4, 1.9375)
    assert fit.busbw_GBps == pytest.approx(90, rel=0.01)  # the model's B


def test_end_elided_without_launcher_uses_busbw_over_algbw(tmp_path):
    pre = "".join(_rank(r, "gpu-01" if r < 8 else "gpu-02", r % 8) for r in range(10))
    p = tmp_path / "end.txt"
    p.write_text("# nThread 1 nGpus 1 minBytes 1048576\n#\n# Using devices\n" + pre + "# ...\n"
                 + _table(32))  # fmt: skip
    res = read_nccl_tests(p)
    (t,) = res.tables
    # busbw/algbw = 2·31/32 = 1.9375 → n = 2/(2 − 1.9375) = 32 ≥ 10 ids seen; 8 on gpu-01 → 4
    assert (t.ranks, t.ranks_source, t.ranks_min) == (32, "busbw/algbw", 10)
    assert (t.nodes, t.nodes_source) == (4, "ranks per node (8, a complete host block)")


def test_end_elided_and_busbw_cannot_tell_is_unknown_with_a_warning(tmp_path):
    pre = "".join(_rank(r, "gpu-01", r) for r in range(4))
    p = tmp_path / "end.txt"
    p.write_text("# nThread 1 nGpus 1\n#\n# Using devices\n" + pre + "...\n" + _table(128))
    res = read_nccl_tests(p)
    (t,) = res.tables
    assert t.ranks is None  # 2·127/128 = 1.984: above 1.97, two decimals cannot tell n
    (w,) = [w for w in res.warnings if "before '...'" in w]
    assert "at least 4" in w
    assert "pass --ranks N" in w
    assert calibrate_files([p], ranks=128).fits[0].ranks == 128


def test_busbw_count_below_the_ids_seen_is_refused(tmp_path):
    pre = "".join(_rank(r, "h", r % 8) for r in range(12))
    p = tmp_path / "low.txt"
    p.write_text("# nThread 1 nGpus 1\n#\n# Using devices\n" + pre + "# [...]\n" + _table(8))
    res = read_nccl_tests(p)
    assert res.tables[0].ranks is None  # busbw/algbw says 8 but ids reach 11
    assert any("busbw/algbw gives 8 ranks" in w and "at least 12" in w for w in res.warnings)


@pytest.mark.parametrize("pid", ["Pid    501 ", ""])  # 2019–2022 lines; 2017 lines had no Pid
def test_complete_list_is_not_abbreviated_in_older_line_forms(tmp_path, pid):
    old = "".join(
        f"#   Rank {r:2d} {pid}on {'n1':>10} device {r:2d} [0x{r + 16:02x}] Tesla P100-SXM2-16GB\n"
        for r in range(4)
    )
    p = tmp_path / "old.txt"
    p.write_text("# nThread 1 nGpus 4 minBytes 8\n#\n# Using devices\n" + old + _table(4))
    (t,) = read_nccl_tests(p).tables
    assert (t.ranks, t.nodes, t.abbreviated, t.ranks_source) == (4, 1, False, "preamble")
    assert t.nodes_source == "preamble"


def test_rank_ids_printed_twice_mean_separate_jobs(tmp_path):
    # two processes that did not form one job (nccl-tests without MPI=1): each prints its
    # own header and its own ranks 0–7
    head = "# nThread 1 nGpus 8 minBytes 1048576\n#\n# Using devices\n"
    ranks = "".join(_rank(r, "node3", r) for r in range(8))
    ranks += "".join(_rank(r, "node2", r) for r in range(8))
    p = tmp_path / "split.txt"
    p.write_text(head + head + ranks + _table(8))
    res = read_nccl_tests(p)
    (w,) = [w for w in res.warnings if "printed more than once" in w]
    assert "(rank 0 on node3 and on node2)" in w
    assert "make MPI=1" in w


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("Rank 63", "Rank 99999999999999999999"),  # past int64: was an OverflowError (fuzz)
        ("nGpus 1", "nGpus 99999999999999999999"),
    ],
)
def test_mangled_huge_ids_are_ignored_not_a_crash(tmp_path, old, new):
    p = tmp_path / "mangled.txt"
    p.write_text(ELIDED.read_text().replace(old, new))
    (t,) = [t for _, t in calibrate_files([p]).tables]
    assert t.ranks == (63 if "Rank" in old else 64)  # ids up to 62 (63 dropped), or 63
