"""DeepSpeed's own throughput line (``SamplesPerSec``) is read as the log's rate and shown beside
the timer rows (QA: the 2020 log's SamplesPerSec=7.46 was ignored and throughput said unknown).
Samples are written here; expected values are worked out by hand."""

from __future__ import annotations

from pathlib import Path

import pytest

from xpuperf.pipeline import analyze_logs
from xpuperf.report.rates_view import throughput_rows

TIMER = (
    "time (ms) | forward_microstep: 100.00 | backward_microstep: 300.00 | "
    "backward_inner_microstep: 299.00 | backward_allreduce_microstep: 1.00 | step_microstep: 100.00"
)


def _log(tmp_path: Path, rate_line: str) -> Path:
    p = tmp_path / "ds.log"
    p.write_text("\n".join([rate_line, TIMER, TIMER, TIMER]) + "\n", encoding="utf-8")
    return p


@pytest.mark.parametrize(
    ("line", "where"),
    [
        ("[INFO 2020-06-08 06:02:19] 0/450, SamplesPerSec=7.458824", "0/450"),
        (
            "[2023-01-01 10:00:00,000] [INFO] [timer.py:199:stop] epoch=0/micro_step=20/"
            "global_step=20, RunningAvgSamplesPerSec=7.458824, CurrSamplesPerSec=7.1, "
            "MemAllocated=1.0GB, MaxMemAllocated=2.0GB",
            "global_step 20",
        ),
    ],
)
def test_samples_per_sec_is_the_logs_rate(tmp_path: Path, line: str, where: str) -> None:
    s = analyze_logs([_log(tmp_path, line)], warmup=0).summary
    assert s.log_throughput_samples_per_s == pytest.approx(7.458824)
    assert f"SamplesPerSec at {where}" in s.log_throughput_source
    # the timers give 0.1 + 0.3 + 0.1 = 0.5 s per step but no batch: no samples/s of our own
    assert s.step_time_s["median"] == pytest.approx(0.5)
    assert s.throughput_wallclock_samples_per_s is None
    rows = dict(throughput_rows(s))
    assert rows["as the log prints it"].startswith("7.459 samples/s (DeepSpeed SamplesPerSec")
