"""Two sweeps the QA of issue 18 found misread: a collapse on the rising part of the busbw curve
(XP611 missed its last size) and a sweep of latency-bound sizes only (a fitted plateau of
1.6e13 GB/s reported as measured). Tables written here from an α–β model: all_reduce on 8
ranks, t(S) = 20 µs + 1.75·S / 360 GB/s (bus factor 2·7/8 = 1.75)."""

from __future__ import annotations

from pathlib import Path

import pytest

from xpuperf.calibrate.run import calibrate_files
from xpuperf.report.calibrate_report import to_calibration_dict

HEAD = """# nThread 1 nGpus 1 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
#
# Using devices
{ranks}#
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
"""  # noqa: E501
RANK = (
    "#  Rank {r:2d} Group  0 Pid {pid:6d} on node00 device {r:2d} [0x{r:02x}] NVIDIA H100 80GB "
    "HBM3\n"
)


def _table(tmp_path: Path, sizes: list[int], slow: dict[int, float], name: str) -> Path:
    ranks = "".join(RANK.format(r=r, pid=1000 + r) for r in range(8))
    rows = []
    for s in sizes:
        t = (20.0 + 1.75 * s / 360e3) / slow.get(s, 1.0)  # µs; 360 GB/s = 360e3 B/µs
        alg = s / t / 1e3
        bus = 1.75 * alg
        rows.append(
            f"{s:>14d}{s // 4:>14d}     float     sum      -1  {t:9.2f} {alg:7.2f} {bus:7.2f}"
            f"      0  {t:9.2f} {alg:7.2f} {bus:7.2f}      0"
        )
    text = HEAD.format(ranks=ranks) + "\n".join(rows) + "\n# Out of bounds values : 0 OK\n"
    p = tmp_path / name
    p.write_text(text + "# Avg bus bandwidth    : 1.0\n", encoding="utf-8")
    return p


def test_collapse_on_the_rising_part_is_found_at_every_size(tmp_path: Path) -> None:
    sizes = [8 << k for k in range(25)]  # 8 B … 128 MiB
    mib = 1 << 20
    # busbw at a tenth at 2, 4 and 8 MiB (healthy there: 121, 184, 248 GB/s; 1 MiB: 73)
    p = _table(tmp_path, sizes, {2 * mib: 0.1, 4 * mib: 0.1, 8 * mib: 0.1}, "rise.txt")
    res = calibrate_files([p])
    (fit,) = res.fits
    assert fit.excluded is not None
    assert fit.excluded["size_bytes"].tolist() == [2 * mib, 4 * mib, 8 * mib]
    codes = {f.code for f in res.findings}
    assert "XP611" in codes
    assert "XP602" not in codes  # not "rerun with more iterations"
    assert fit.busbw_GBps == pytest.approx(360, rel=0.02)


def test_latency_bound_sweep_reports_no_bandwidth(tmp_path: Path) -> None:
    p = _table(tmp_path, [8, 16, 32, 64, 128], {}, "small.txt")  # all ≈ 20 µs
    res = calibrate_files([p])
    (fit,) = res.fits
    assert not fit.bandwidth_measured
    (xp605,) = [f for f in res.findings if f.code == "XP605"]
    assert xp605.severity.value == "warning"
    assert "busbw not measured" in xp605.message
    checks = {c.name: c.status.value for c in res.checks}
    assert checks["calibrate.accuracy"] == "not_checked"
    assert checks["calibrate.sweep_collapse"] == "not_checked"
    doc = to_calibration_dict(res)
    assert doc["fits"] == []  # a guessed plateau never reaches a plan
    assert doc["levels"] == {}
