"""fairseq ``train_inner`` lines that cannot be steps: absurd batch sizes, cut lines, a bad ups.
Each must be a dropped row with a counted reason (never a silent loss, never a RuntimeWarning);
the samples are written here by hand, with step time = 1 / ups."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

from xpuperf.cli import app as cli_app
from xpuperf.readers import open_source
from xpuperf.readers.formats import fairseq
from xpuperf.readers.formats.table import TextTable
from xpuperf.readers.paths import Found

HEAD = "2021-05-01 10:00:{s:02d} | INFO | train_inner | epoch 001:  {u:5d} / 900 "


def _line(u: int, ups: str = "2.0", bsz: str = "100", wpb: str = "4000") -> str:
    return HEAD.format(s=u // 10 % 60, u=u) + (
        f"loss=5.1, wps=8000, ups={ups}, wpb={wpb}, bsz={bsz}, num_updates={u}, lr=1e-05, "
        f"train_wall=5, wall={u // 2}"
    )


def _read(tmp_path: Path, *lines: str) -> TextTable:
    path = tmp_path / "train.log"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no numpy RuntimeWarning may get out
        return fairseq.read(open_source(Found(path, True, (path.name,))))


def _drops(out: TextTable) -> dict[str, tuple[int, int | None]]:
    return {d.reason: (d.count, d.first) for d in out.drops}


def test_absurd_batch_sizes_are_dropped_rows(tmp_path: Path) -> None:
    out = _read(
        tmp_path,
        _line(10),
        _line(20, bsz="-5"),
        _line(30, bsz="1e308"),
        _line(40, bsz="0"),
        _line(50, wpb="inf"),
        _line(60, bsz="2000000000"),  # 2e9 sentences per update
        _line(70, wpb="nan"),
        _line(80),
    )
    assert out.frame["step"].tolist() == [10, 80]
    assert out.frame["samples"].tolist() == [100, 100]
    assert out.frame["step_time_s"].tolist() == pytest.approx([0.5, 0.5])
    assert _drops(out) == {fairseq.BAD_BATCH: (6, 2)}


def test_cut_train_inner_lines_are_counted(tmp_path: Path) -> None:
    full = _line(30)
    out = _read(
        tmp_path,
        _line(10),
        _line(20),
        full[: full.index("bsz=100") + len("bsz=100")],  # cut after bsz: no num_updates
        _line(40)[: _line(40).index(", wpb")],  # cut after ups=2.0
        HEAD.format(s=5, u=50) + "loss=5.1, wps=8000",  # cut early, mid-file
        '[2021-05-01 10:00:06,000][train_inner][INFO] - {"epoch": 1, "ups": "2.0", "wpb": "4',
        _line(70)[: _line(70).index(", lr")],  # ends at num_updates=70: kept (ups=2.0)
        HEAD.format(s=8, u=80) + "loss=5.1, wps=8000, wpb=4000, bsz=100, num_updates=80, lr=1",
        _line(90),
    )
    assert out.frame["step"].tolist() == [10, 20, 70, 90]
    assert _drops(out) == {fairseq.NO_UPDATES: (4, 3), fairseq.NO_CLOCK: (1, 8)}


def test_a_cut_digit_in_num_updates_is_no_resumed_run(tmp_path: Path) -> None:
    cut = _line(250)
    cut = cut[: cut.index("num_updates=25") + len("num_updates=25")]  # 250 cut to 25
    out = _read(tmp_path, _line(100), _line(200), cut, _line(300), _line(400))
    assert out.frame["step"].tolist() == [100, 200, 300, 400]
    assert _drops(out) == {fairseq.OUT_OF_ORDER: (1, 3)}
    assert not any("repeat update numbers" in n for n in out.notes)
    # the same cut on the last line of a log still being written
    out = _read(tmp_path, _line(100), _line(200), cut)
    assert out.frame["step"].tolist() == [100, 200]
    assert _drops(out) == {fairseq.OUT_OF_ORDER: (1, 3)}


def test_a_restart_is_still_a_resumed_run(tmp_path: Path) -> None:
    # updates 100…300, then a run resumed from update 100's checkpoint: 200, 300 again, then 400
    out = _read(
        tmp_path,
        _line(100),
        _line(200),
        _line(300),
        _line(200, ups="2.5"),
        _line(300, ups="2.5"),
        _line(400, ups="2.5"),
    )
    assert out.frame["step"].tolist() == [100, 200, 300, 400]
    assert out.frame["step_time_s"].tolist() == pytest.approx([0.5, 0.5, 0.5, 0.4])
    assert not out.drops
    assert any(n.startswith("fairseq: 2 line(s) repeat update numbers") for n in out.notes)


def test_infinite_or_negative_ups_says_so(tmp_path: Path) -> None:
    out = _read(
        tmp_path, _line(10), _line(20), _line(30, ups="inf"), _line(40, ups="-2"), _line(50)
    )
    assert out.frame["step"].tolist() == [10, 20, 50]
    assert _drops(out) == {fairseq.BAD_UPS: (2, 3)}


def test_analyze_reports_the_dropped_batch(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # 8 lines at ups=2.0, bsz=100: 200 samples/s; the one at bsz=-5 is skipped, not averaged in
    lines = [_line(u, bsz="-5" if u == 40 else "100") for u in range(10, 90, 10)]
    path = tmp_path / "train.log"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    report = tmp_path / "r.json"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(SystemExit):
            cli_app.main(["analyze", str(path), "--json", str(report)])
    err = capsys.readouterr().err
    assert "train.log:4: skipped 1 row: fairseq line whose bsz or wpb" in err
    assert "RuntimeWarning" not in err
    d = json.loads(report.read_text(encoding="utf-8"))
    assert d["summary"]["throughput_samples_per_s"] == pytest.approx(200.0)
    assert "XP401" in json.dumps(d)
    assert "XP201" not in json.dumps(d)
