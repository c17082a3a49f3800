"""trainer_state.json and console lines written by transformers 5.24's own Trainer.

Samples and the facts asserted here: tests/data/formats_hf_trainer_state/README.md (02–05, made by
make_sample.py there); every value was read off the files by hand.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.readers.formats.test_real_samples import sniffed
from xpuperf.cli import app as cli_app
from xpuperf.errors import InputError
from xpuperf.pipeline import analyze_logs
from xpuperf.readers import read_logs

DIR = Path(__file__).resolve().parents[2] / "data" / "formats_hf_trainer_state"
CHECKPOINT = DIR / "02_checkpoint-40_trainer_state.json"
STATE = DIR / "03_trainer_state.json"
CONSOLE = DIR / "04_console_hf_trainer.txt"
RESUMED = DIR / "05_resumed_trainer_state.json"


def test_formats_are_sniffed() -> None:
    assert sniffed(STATE) == "hf_trainer_state"
    assert sniffed(CHECKPOINT) == "hf_trainer_state"
    assert sniffed(RESUMED) == "hf_trainer_state"
    assert sniffed(CONSOLE) == "hf_trainer"


def test_save_state_copy() -> None:
    res = read_logs([STATE])
    t = res.table
    assert t["rank"].tolist() == [0]
    assert t["step"].tolist() == [40]  # global_step
    assert t["step_time_s"].tolist() == pytest.approx([1.2935 / 40])  # train_runtime / steps
    assert t["step_time_s"].iloc[0] == pytest.approx(1 / 30.923, rel=1e-4)  # steps/s agrees
    assert t["samples"].tolist() == pytest.approx([8.0], abs=0.001)  # 247.385 × 0.0323375
    assert any("one process without gradient accumulation" in w for w in res.warnings)
    assert not any("--world-size" in w for w in res.warnings)
    s = analyze_logs([STATE]).summary
    assert s.ranks == 1
    assert s.throughput_samples_per_s == pytest.approx(247.385)


def test_resumed_run_times_only_its_own_steps() -> None:
    res = read_logs([RESUMED])
    t = res.table
    assert t["step"].tolist() == [40]
    # 0.4029 s × 49.643 steps/s = 20.001: the second train() ran steps 21–40
    assert t["step_time_s"].tolist() == pytest.approx([0.4029 / 20])
    assert t["samples"].tolist() == pytest.approx([8.0], abs=0.001)  # 397.145 × 0.020145
    assert any("= 20 steps, not global_step 40" in w for w in res.warnings)


def test_checkpoint_copy_has_no_summary() -> None:
    with pytest.raises(InputError, match=r"checkpoint-N/trainer_state\.json never has it"):
        read_logs([CHECKPOINT])


def test_console_dict_lines_with_string_values() -> None:
    res = read_logs([CONSOLE])
    t = res.table
    assert t["step"].tolist() == [40]  # 1.294 s × 30.92 steps/s = 40.01
    assert t["step_time_s"].tolist() == pytest.approx([1.294 / 40])
    assert t["samples"].tolist() == pytest.approx([247.4 * 1.294 / 40])  # 8.003
    assert any("the Trainer log holds no per-step timing" in w for w in res.warnings)
    assert any("--world-size" in w for w in res.warnings)  # the console does not tell


def test_console_summary_without_numbers(tmp_path: Path) -> None:
    raw = CONSOLE.read_bytes()  # bytes: keep the tqdm carriage returns and line numbers
    p = tmp_path / "console.txt"
    p.write_bytes(raw.replace(b"'train_runtime': '1.294'", b"'train_runtime': 'x'"))
    with pytest.raises(InputError, match="no positive train_runtime") as e:
        read_logs([p])
    assert "console.txt:13" in str(e.value)  # the summary's line


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as e:
        cli_app.main(list(args))
    out = capsys.readouterr()
    return int(e.value.code or 0), out.out, out.err


def test_cli_on_the_real_files(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "analyze", str(STATE))
    assert code == 0, err
    assert "1 rank(s)" in out
    assert "247.4 samples/s" in out
    code, out, err = run(capsys, "analyze", str(CHECKPOINT))
    assert code == 2
    assert err.count("\n") == 1  # one line, no traceback
    assert "02_checkpoint-40_trainer_state.json" in err
    assert "save_state()" in err
