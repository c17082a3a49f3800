"""The busbw headline is the measured peak (with its size and line), never the fitted asymptote;
"plateau reached" only when the 3 largest sizes lie within 2 % (QA of corpus 17, 19, 42: the
headline was the fit, 45/161/197 GB/s, above the largest measured 43.81/159.43/196.52).

Both samples are hand-written nccl-tests all_reduce tables on 4 ranks (busbw = 1.5 × algbw),
timed as t = 50 µs + 1.5·S / 100 GB/s: busbw rises towards 100 GB/s. Expected values are read
off the rows below.
"""

from __future__ import annotations

import json

import yaml
from typer.testing import CliRunner

from xpuperf.calibrate import calibrate_files
from xpuperf.cli.app import app
from xpuperf.findings import CheckStatus
from xpuperf.kinds import clip

HEAD = """# nThread 1 nGpus 4 minBytes {lo} maxBytes {hi} step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
#
# Using devices
#  Rank  0 Group  0 Pid   1000 on     node01 device  0 [0x07] NVIDIA A100-SXM4-80GB
#  Rank  1 Group  0 Pid   1001 on     node01 device  1 [0x0a] NVIDIA A100-SXM4-80GB
#  Rank  2 Group  0 Pid   1002 on     node01 device  2 [0x44] NVIDIA A100-SXM4-80GB
#  Rank  3 Group  0 Pid   1003 on     node01 device  3 [0x4a] NVIDIA A100-SXM4-80GB
#
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
"""  # noqa: E501

# The header is 11 lines, so rows start at line 12.
# Still rising: the 16 MiB row (line 16) is the peak, 83.86 in-place (its time 300.10 µs beats
# the out-of-place 301.66 µs, 83.42); the 3 largest sizes (best) 55.72, 71.56, 83.86 are
# 1 - 55.72/83.86 = 33.6 % apart.
RISING_ROWS = """\
     1048576        262144     float     sum      -1    65.73   15.95   23.93      0    66.13   15.86   23.78      0
     2097152        524288     float     sum      -1    81.46   25.74   38.62      0    81.86   25.62   38.43      0
     4194304       1048576     float     sum      -1   112.91   37.15   55.72      0   113.31   37.02   55.52      0
     8388608       2097152     float     sum      -1   175.83   47.71   71.56      0   176.23   47.60   71.40      0
    16777216       4194304     float     sum      -1   301.66   55.62   83.42      0   300.10   55.91   83.86      0
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 54.69
#
"""  # noqa: E501
RISING = HEAD.format(lo=1048576, hi=16777216) + RISING_ROWS

# Flat: the 3 largest sizes 97.58, 98.77, 99.38 are 1 - 97.58/99.38 = 1.8 % apart (<= 2 %);
# the peak is 99.38 at 512 MiB (line 15, out-of-place: 8103.1 µs beats 8105.1 µs).
FLAT_ROWS = """\
    67108864      16777216     float     sum      -1  1056.60   63.51   95.27      0  1058.60   63.39   95.09      0
   134217728      33554432     float     sum      -1  2063.30   65.05   97.58      0  2065.30   64.99   97.48      0
   268435456      67108864     float     sum      -1  4076.50   65.85   98.77      0  4078.50   65.82   98.73      0
   536870912     134217728     float     sum      -1  8103.10   66.26   99.38      0  8105.10   66.24   99.36      0
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 97.75
#
"""  # noqa: E501
FLAT = HEAD.format(lo=67108864, hi=536870912) + FLAT_ROWS


def _file(tmp_path, name: str, text: str):
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def _calibrate(*args: str):
    r = CliRunner().invoke(app, ["calibrate", *args], env={"COLUMNS": "200"})  # no cell wraps
    assert r.exit_code == 0, r.output
    return r.output


def test_rising_sweep_headline_is_the_measured_peak(tmp_path) -> None:
    p = _file(tmp_path, "rising.txt", RISING)
    (fit,) = calibrate_files([p]).fits
    assert fit.peak() == (83.86, 16 << 20)
    assert fit.peak_line == 16
    assert fit.busbw_GBps > 83.86  # the asymptote lies above every measured value
    reached, spread, _ = fit.plateau()
    assert not reached
    assert spread > 0.30  # 33.6 % by hand (from the rounded printed values)
    out = _calibrate(str(p))
    assert "83.86 @ 16 MiB" in out  # the table's headline column
    doc = json.loads(_calibrate(str(p), "--json", "-", "--quiet"))
    f = doc["fits"][0]
    assert (f["peak_busbw_GBps"], f["peak_size_bytes"], f["peak_line"]) == (83.86, 16 << 20, 16)
    assert f["plateau_reached"] is False
    (xp605,) = [x for x in doc["findings"] if x["code"] == "XP605"]
    assert "measured peak 83.86 GB/s (16 MiB, line 16)" in xp605["message"]
    assert "3 largest sizes within 2%" in xp605["message"]
    check = next(c for c in doc["checks"] if c["name"] == "calibrate.plateau")
    assert check["status"] == CheckStatus.NOT_CHECKED.value
    assert "still rising" in check["evidence"]
    assert "reached" not in check["evidence"]


def test_out_of_place_peak_comes_from_its_own_column(tmp_path) -> None:
    p = _file(tmp_path, "rising.txt", RISING)
    (fit,) = calibrate_files([p], measurement="out-of-place").fits
    assert fit.peak() == (83.42, 16 << 20)


def test_flat_sweep_reaches_the_plateau_and_says_by_which_criterion(tmp_path) -> None:
    p = _file(tmp_path, "flat.txt", FLAT)
    (fit,) = calibrate_files([p]).fits
    assert fit.peak() == (99.38, 512 << 20)
    assert fit.peak_line == 15
    reached, spread, _ = fit.plateau()
    assert reached
    assert 0.017 < spread < 0.019  # 1 - 97.58/99.38 = 1.81 %
    doc = json.loads(_calibrate(str(p), "--json", "-", "--quiet"))
    assert not [x for x in doc["findings"] if x["code"] == "XP605"]
    check = next(c for c in doc["checks"] if c["name"] == "calibrate.plateau")
    assert check["status"] == CheckStatus.CLEAN.value
    assert "plateau reached" in check["evidence"]
    assert "1.8% apart" in check["evidence"]
    assert "measured peak 99.38 GB/s (512 MiB, line 15)" in check["evidence"]


def test_calibration_file_keeps_the_fit_as_beta_and_the_peak_beside_it(tmp_path) -> None:
    p = _file(tmp_path, "rising.txt", RISING)
    out = tmp_path / "cal.yaml"
    _calibrate(str(p), "-o", str(out), "--quiet")
    text = out.read_text(encoding="utf-8")
    assert "not a measurement" in text.split("schema:")[0]  # the header comment says what β is
    doc = yaml.safe_load(text)
    intra = doc["levels"]["intra"]
    assert intra["peak_busbw_GBps"] == 83.86
    assert intra["plateau_reached"] is False
    assert intra["busbw_GBps"] > 83.86  # β of the model, what plan reads


def test_clip_never_cuts_a_command() -> None:
    path = "/data/" + "x" * 120 + ".txt"
    text = f"this is nccl-tests output: measure the links with `xpuperf calibrate {path}` (more)"
    got = clip(text, 100)
    assert f"`xpuperf calibrate {path}`" in got  # whole, copyable
    assert got.endswith("` …")
    assert clip("short text", 100) == "short text"
    assert clip("one two three four", 12) == "one two …"
