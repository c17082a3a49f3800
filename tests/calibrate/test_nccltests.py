"""nccl-tests reader: facts read off the real files by hand (corpus README, checked again)."""

from __future__ import annotations

import math

import pytest

from xpuperf.calibrate.nccltests import bus_factor, read_nccl_tests, strip_prefix
from xpuperf.errors import InputError

from .conftest import FILES

# name -> (ranks, nodes, rows, peak out-of-place busbw, its size, Avg bus bandwidth)
FACTS = {
    "eks_efa_t4": (2, 2, 31, 3.15, 256 << 20, 1.15327),
    "k8s_h100": (16, 2, 5, 196.52, 8 << 30, 194.675),
    "p4d_old": (16, 2, 30, 43.81, 4 << 30, 11.2432),
    "crossnic0": (8, None, 8, 159.43, 256 << 20, None),
}


@pytest.mark.parametrize("name", sorted(FACTS))
def test_hand_read_facts(name):
    ranks, nodes, rows, peak, peak_size, avg = FACTS[name]
    res = read_nccl_tests(FILES[name])
    df = res.frame
    assert len(res.tables) == 1
    t = res.tables[0]
    assert t.collective == "all_reduce"
    assert t.ranks == ranks
    assert t.nodes == nodes
    assert len(df) == rows
    top = df.loc[df["busbw_GBps"].idxmax()]
    assert top["busbw_GBps"] == pytest.approx(peak)
    assert top["size_bytes"] == peak_size
    if avg is None:
        assert t.avg_busbw_GBps is None
    else:
        assert t.avg_busbw_GBps == pytest.approx(avg)
    assert (df["ranks"] == ranks).all()
    assert df["nodes"].isna().all() if nodes is None else (df["nodes"] == nodes).all()


@pytest.mark.parametrize("name", sorted(FACTS))
def test_busbw_is_algbw_times_allreduce_factor(name):
    """Cross-check of the parse: busbw = algbw·2(n−1)/n (formulas.md §3), within rounding."""
    res = read_nccl_tests(FILES[name])
    n = res.tables[0].ranks
    df = res.frame[res.frame["algbw_GBps"] >= 0.1]
    assert len(df) >= 4
    f = bus_factor("all_reduce", n)
    tol = 0.005 * (1 + f) + 1e-6  # both columns are printed with two decimals
    assert ((df["busbw_GBps"] - df["algbw_GBps"] * f).abs() <= tol).all()
    ip = df[df["inplace_algbw_GBps"].notna()]
    assert ((ip["inplace_busbw_GBps"] - ip["inplace_algbw_GBps"] * f).abs() <= tol).all()


def test_algbw_is_size_over_time():
    df = read_nccl_tests(FILES["k8s_h100"]).frame
    algbw = df["size_bytes"] / (df["time_us"] * 1e3)
    assert (algbw / df["algbw_GBps"] - 1).abs().max() < 0.002


def test_preamble_hosts_devices_and_versions():
    t = read_nccl_tests(FILES["p4d_old"]).tables[0]
    assert t.hosts == ["nccl-tests-efa-16-worker-0", "nccl-tests-efa-16-worker-1"]
    assert t.devices == ["A100-SXM4-40GB"]
    assert t.nccl_version == "2.9.9+cuda11.2"
    assert t.check_kind == "error"
    assert t.ranks_source == "preamble"
    t16 = read_nccl_tests(FILES["eks_efa_t4"]).tables[0]
    assert t16.nccl_version == "2.12.7+cuda11.4"
    assert t16.check_kind == "#wrong"
    assert t16.devices == ["Tesla T4"]


def test_old_format_columns():
    df = read_nccl_tests(FILES["p4d_old"]).frame
    first = df.iloc[0]
    assert (first["size_bytes"], first["count"], first["dtype"]) == (8, 2, "float")
    assert first["redop"] == "sum"
    assert first["root"] == -1  # no root column in the old layout
    assert first["check"] == pytest.approx(2e-07)
    assert first["time_us"] == pytest.approx(179.1)
    assert first["inplace_time_us"] == pytest.approx(176.3)


def test_noise_inside_table_and_zero_rows():
    df = read_nccl_tests(FILES["eks_efa_t4"]).frame
    assert (df["size_bytes"] == 0).sum() == 2
    assert df["size_bytes"].iloc[-1] == 1 << 30
    # the 'Launch mode Parallel' INFO line sits between header and first row
    assert df["line"].iloc[0] == 58


def test_cut_last_row_keeps_out_of_place_half():
    res = read_nccl_tests(FILES["crossnic0"])
    last = res.frame.iloc[-1]
    assert last["size_bytes"] == 268435456
    assert last["time_us"] == pytest.approx(2946.6)
    assert last["busbw_GBps"] == pytest.approx(159.43)
    assert math.isnan(last["inplace_time_us"])
    assert math.isnan(last["check"])
    t = res.tables[0]
    assert t.ranks_source == "busbw/algbw"  # no preamble: n from 2(n−1)/n = 1.75
    assert any("Avg bus bandwidth" in w for w in res.warnings)


def test_trailing_space_avg_line():
    assert read_nccl_tests(FILES["k8s_h100"]).tables[0].avg_busbw_GBps == pytest.approx(194.675)


@pytest.mark.parametrize(
    ("raw", "want"),
    [
        ("[1,0]<stdout>:#  Rank  0 Group", "#  Rank  0 Group"),
        ("[1,12]<stderr>:     8   2", "     8   2"),
        ("12: # Avg bus bandwidth    : 1.0", "# Avg bus bandwidth    : 1.0"),
        ("  3:     1024   256  float", "    1024   256  float"),
        ("2024-05-01T10:00:00.123456Z        8    2", "       8    2"),
        ("        1024           256     float", "        1024           256     float"),
    ],
)
def test_strip_prefix(raw, want):
    assert strip_prefix(raw) == want


NEW_HEADER = (
    "#       size         count      type   redop    root     time   algbw   busbw #wrong"
    "     time   algbw   busbw #wrong\n"
    "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)"
    "            (us)  (GB/s)  (GB/s)\n"
)


def _write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_srun_prefixed_all_gather_new_layout(tmp_path):
    """all_gather: count is per rank, so size/(count·4) gives n; busbw = algbw·(n−1)/n."""
    lines = [
        "# nccl-tests version 2.13.9 nccl-headers=21903 nccl-library=21903",
        "# Collective test starting: all_gather_perf",
        "# nThread 1 nGpus 1 minBytes 1024 maxBytes 4096 step: 2(factor) warmup iters: 5",
        "#",
        "# Using devices",
    ]
    for r in range(4):
        lines.append(
            f"#  Rank  {r} Group  0 Pid {100 + r} on node0{r // 2 + 1} device  {r % 2}"
            f" [0000:0{r}:00] NVIDIA H100 80GB HBM3"
        )
    lines += NEW_HEADER.splitlines()
    lines += [
        "     1048576         65536     float    none      -1    100.0   10.49    7.86      0"
        "    101.0   10.38    7.79      0",
        "     2097152        131072     float    none      -1    180.0   11.65    8.74      0"
        "    181.0   11.59    8.69      0",
        "# Out of bounds values : 0 OK",
        "# Avg bus bandwidth    : 8.27 ",
    ]
    text = "".join(f"{i % 2}: {ln}\n" for i, ln in enumerate(lines))
    res = read_nccl_tests(_write(tmp_path, "ag.txt", text))
    t = res.tables[0]
    assert (t.collective, t.collective_source) == ("all_gather", "banner")
    assert (t.ranks, t.nodes, t.nccl_tests_version) == (4, 2, "2.13.9")
    assert not res.warnings
    assert list(res.frame["redop"]) == ["none", "none"]


def test_collective_inferred_from_columns(tmp_path):
    rows = (
        "     1048576        262144     float    none       0    100.0   10.49   10.49      0"
        "    101.0   10.38   10.38      0\n"
    )
    t = read_nccl_tests(_write(tmp_path, "x.txt", NEW_HEADER + rows)).tables[0]
    assert (t.collective, t.collective_source, t.ranks) == ("broadcast", "columns", None)


def test_collective_from_filename_and_argument(tmp_path):
    rows = (
        "     1048576        262144     float     sum      -1    100.0   10.49   15.73      0"
        "    101.0   10.38   15.57      0\n"
    )
    p = _write(tmp_path, "run_reduce_scatter_perf.log", NEW_HEADER + rows)
    t = read_nccl_tests(p).tables[0]
    assert (t.collective, t.collective_source) == ("reduce_scatter", "filename")
    t2 = read_nccl_tests(p, collective="all_reduce").tables[0]
    assert (t2.collective, t2.ranks) == ("all_reduce", 4)  # 2(n−1)/n = 1.5 → n = 4


def test_two_runs_in_one_file(tmp_path):
    one = (
        "# nThread 1 nGpus 1\n#  Rank  0 Group  0 Pid 1 on a device  0 [0x1] X\n"
        "#  Rank  1 Group  0 Pid 2 on a device  1 [0x2] X\n"
        + NEW_HEADER
        + "     1048576        262144     float     sum      -1    100.0   10.49   10.49      0"
        "    101.0   10.38   10.38      0\n# Avg bus bandwidth    : 10.4\n"
    )
    two = one.replace("on a device  1", "on b device  0")
    res = read_nccl_tests(_write(tmp_path, "two.txt", one + two))
    assert [(t.ranks, t.nodes) for t in res.tables] == [(2, 1), (2, 2)]
    assert list(res.frame["table"]) == [0, 1]


def test_malformed_row_is_counted_not_fatal(tmp_path):
    rows = (
        "     1048576        262144     float     sum      -1    100.0   10.49   20.98      0"
        "    101.0   10.38   20.76      0\n"
        "     2097152        524288     float     sum\n"
    )
    res = read_nccl_tests(_write(tmp_path, "cut.txt", NEW_HEADER + rows))
    assert len(res.frame) == 1
    assert any("skipped 1 malformed" in w and "line 4" in w for w in res.warnings)


@pytest.mark.parametrize(
    ("text", "line", "what"),
    [
        ("hello\nworld\n", 2, "no nccl-tests result table in 2 lines"),
        (NEW_HEADER + "# Avg bus bandwidth : 0\n", 1, "no result rows"),
        ("", 0, "no nccl-tests result table"),
    ],
)
def test_unparseable_files_raise_input_error_with_line(tmp_path, text, line, what):
    p = _write(tmp_path, "bad.txt", text)
    with pytest.raises(InputError) as e:
        read_nccl_tests(p)
    assert e.value.line == line
    assert what in str(e.value)
    assert str(p) in str(e.value)


def test_missing_file_and_binary_file(tmp_path):
    with pytest.raises(InputError, match="file not found"):
        read_nccl_tests(tmp_path / "nope.txt")
    b = tmp_path / "bin.dat"
    b.write_bytes(bytes(range(256)) * 10)
    with pytest.raises(InputError, match="no nccl-tests result table"):
        read_nccl_tests(b)


def test_gz_input(tmp_path):
    import gzip

    p = tmp_path / "k8s.txt.gz"
    p.write_bytes(gzip.compress(FILES["k8s_h100"].read_bytes()))
    assert len(read_nccl_tests(p).frame) == 5


def test_bus_factor_values():
    assert bus_factor("all_reduce", 8) == pytest.approx(1.75)
    assert bus_factor("all_gather", 4) == pytest.approx(0.75)
    assert bus_factor("broadcast", 16) == 1.0
    with pytest.raises(ValueError, match="unknown collective"):
        bus_factor("nonsense", 2)
