"""``--pattern``: a user-defined step line for any text log (issue 18, scope 1).

Expected values are worked out by hand from the sample lines (tests/data/formats_pattern/README.md).
"""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import pytest

from xpuperf.errors import InputError, UsageError
from xpuperf.readers import read_logs
from xpuperf.readers.formats.pattern import compile_pattern, pattern_format

DATA = Path(__file__).resolve().parent.parent / "data" / "formats_pattern"
INHOUSE = DATA / "inhouse_trainer.log"
TEE = DATA / "torchrun_tee_colour.log"
FULL = (
    "{timestamp} | ep {_} it {step}/{_} | loss {_} | {step_time_ms} ms/it | {samples_per_s} img/s"
)
TOKENS = "step {step}/{_} | loss {_} | {step_time_ms} ms/step | {tokens_per_s} tok/s | mfu {mfu}%"


def read(path: Path, pattern: str, **kw: object):
    return read_logs([path], fmt=pattern_format(pattern), **kw)


def test_inhouse_trainer_line_with_time_throughput_and_timestamp() -> None:
    r = read(INHOUSE, FULL)
    t = r.table
    assert t["rank"].tolist() == [0] * 5
    assert t["step"].tolist() == [120, 121, 122, 123, 124]  # line 8 repeats step 123
    # ms/it / 1000; '1,024.0' has a thousands comma
    assert t["step_time_s"].tolist() == pytest.approx([0.8125, 0.8, 1.024, 0.64, 0.816])
    # samples = img/s × step time: 157.5 × 0.8125 = 127.97 → 128 (within 2 %), 160 × 0.8 = 128,
    # 125 × 1.024 = 128, 200 × 0.64 = 128, 156.9 × 0.816 = 128.03 → 128
    assert t["samples"].tolist() == [128.0] * 5
    # 2026-01-03 10:00:01,000 UTC: 20 454 days 1970→2026 (56 × 365 + 14 leap days) + 2 days
    # = 20 456 days × 86 400 = 1 767 398 400 s, + 10 h (36 000 s) + 1 s
    assert t["t_end_s"].iloc[0] == pytest.approx(1_767_434_401.0)
    dup = [w for w in r.warnings if "repeats the step" in w]
    assert len(dup) == 1
    assert "inhouse_trainer.log:8: skipped 1 row" in dup[0]


def test_step_time_from_timestamps_alone() -> None:
    t = read(INHOUSE, "{timestamp} | ep {_} it {step}/").table
    # differences of 01,000 → 01,800 → 02,824 → 03,464 → 04,280; the first line has none
    assert t["step"].tolist() == [121, 122, 123, 124]
    assert t["step_time_s"].tolist() == pytest.approx([0.8, 1.024, 0.64, 0.816])


def test_throughput_alone_needs_the_batch_size() -> None:
    pat = "it {step}/{_} {samples_per_s} img/s"
    with pytest.raises(InputError, match="--batch-size"):
        read(INHOUSE, pat)
    t = read(INHOUSE, pat, batch_size=128).table
    # step time = 128 / img/s: 128/157.5 = 0.812698…, 128/160 = 0.8, 128/125 = 1.024,
    # 128/200 = 0.64, 128/156.9 = 0.815806…
    assert t["step_time_s"].tolist() == pytest.approx(
        [0.812698, 0.8, 1.024, 0.64, 0.815806], rel=1e-5
    )


def test_rank_prefix_ansi_colours_tokens_and_mfu_percent() -> None:
    r = read(TEE, TOKENS)
    t = r.table
    assert t["rank"].tolist() == [0, 0, 0, 1, 1, 1]  # from '[rank0]:' / '[rank1]:'
    assert t["step"].tolist() == [10, 11, 12] * 2
    assert t["step_time_s"].tolist() == pytest.approx([0.4096, 0.4, 0.4096, 0.4096, 0.512, 0.4096])
    # tokens = tok/s × step time: 40 000 × 0.4096 = 40 960 × 0.4 = 32 000 × 0.512 = 16 384
    assert t["tokens"].tolist() == [16384.0] * 6
    # mfu 38.5% → 0.385 ('%' right after {mfu})
    assert t["mfu"].tolist() == pytest.approx([0.385, 0.394, 0.385, 0.385, 0.308, 0.385])
    assert any("tokens = {tokens_per_s}" in w for w in r.warnings)


def test_rank_from_the_file_name_wins_over_no_prefix(tmp_path: Path) -> None:
    a, b = tmp_path / "worker3.log", tmp_path / "worker5.log"
    shutil.copy(INHOUSE, a)
    shutil.copy(INHOUSE, b)
    t = read_logs([a, b], fmt=pattern_format(FULL)).table
    assert sorted(t["rank"].unique().tolist()) == [3, 5]
    assert len(t) == 10


def test_rank_and_node_fields(tmp_path: Path) -> None:
    f = tmp_path / "job.log"
    f.write_text(
        "host gpu-a07 rank 1 iter 5 took 1.5e3 ms\n"
        "host gpu-a07 rank 0 iter 5 took 1,250 ms\n"
        "host gpu-a07 rank 1 iter 6 took 1500.0 ms\n"
        "host gpu-a07 rank 0 iter 6 took 1.0e3 ms\n",  # a complete last step (test_cut_tail)
        encoding="utf-8",
    )
    t = read(f, "host {node} rank {rank} iter {step} took {step_time_ms} ms").table
    assert t["rank"].tolist() == [0, 0, 1, 1]
    # 1,250 ms = 1.25 s; 1.0e3 ms = 1 s; 1.5e3 ms = 1500 ms = 1.5 s
    assert t["step_time_s"].tolist() == pytest.approx([1.25, 1.0, 1.5, 1.5])
    assert t["node"].tolist() == ["gpu-a07"] * 4


def test_crlf_and_gzip_read_like_the_plain_file(tmp_path: Path) -> None:
    f = tmp_path / "train.log.gz"
    f.write_bytes(gzip.compress(INHOUSE.read_bytes().replace(b"\n", b"\r\n")))
    got = read(f, FULL).table
    want = read(INHOUSE, FULL).table
    assert got.equals(want)


@pytest.mark.parametrize(
    ("line", "want_step", "want_s"),
    [
        ("iter 7: loss 2.5, time 12.5ms", 7, 0.0125),
        ("iter   7:  loss 2.5 (avg 2.6),   time 12.5ms", 7, 0.0125),  # blank runs, {_} spans
        ("[I] iter 7: loss nan, time 1.25e1ms extra", 7, 0.0125),  # exponent; search in line
        ("iter 1,024: loss 2.5, time 12.5ms", 1024, 0.0125),  # thousands comma
    ],
)
def test_the_first_example_of_the_issue(line: str, want_step: int, want_s: float) -> None:
    vals = compile_pattern("iter {step}: loss {_}, time {step_time_ms}ms").values(line)
    assert vals is not None
    assert vals["step"] == want_step
    assert vals["step_time_s"] == pytest.approx(want_s)


def test_lines_that_do_not_fit_are_noise() -> None:
    pat = compile_pattern("time {step_time_s}s [{step}/")
    assert pat.values("time 12,5s [3/") is None  # a decimal comma is not a number
    assert pat.values("time 12.5 s [3/") is None  # 's' right after the number in the pattern
    assert pat.values("time 2s [  3/10]")["step"] == 3  # a field takes blanks before it
    mfu = compile_pattern("{step} {mfu} {step_time_s}").values("7 0.41 1.0")["mfu"]
    assert mfu == pytest.approx(0.41)  # no '%' after {mfu}: the fraction as printed


def test_no_matching_line_quotes_the_closest_one() -> None:
    with pytest.raises(InputError) as e:
        read(INHOUSE, "ep {_} it {step}/{_} | loss {_} | {step_time_ms} ms/step")
    msg = str(e.value)
    assert "the pattern matched no line of the file" in msg
    assert "the closest line was line 4: '2026-01-03 10:00:01,000 | ep 1 it 120/5000" in msg
    assert "the pattern wants 'ms/step' where the line has 'ms/it | 157.5 img/s'" in msg
    assert "xpuperf formats --explain" in msg


@pytest.mark.parametrize(
    ("pattern", "says"),
    [
        ("it {step", "unbalanced '{' at character 4"),
        ("it step} {step_time_s}", "unbalanced '}' at character 8"),
        ("it {stepp} {step_time_s}", "unknown pattern field {stepp}; accepted fields: step,"),
        ("it {step} {step_time}", "{step_time} needs a unit in its name: {step_time_s}"),
        ("it {step} {data_ms}", "the pattern gives no step time"),
        ("it {step} {tokens_per_s}", "{tokens_per_s} needs {tokens} too"),
        ("{step} {step} {step_time_s}", "{step} appears twice"),
        ("it {} {step_time_s}", "empty field {}"),
        ("   ", "--pattern is empty"),
    ],
)
def test_malformed_patterns_are_usage_errors(pattern: str, says: str) -> None:
    with pytest.raises(UsageError) as e:
        compile_pattern(pattern)
    assert says in str(e.value)


def test_literal_braces_and_phase_units() -> None:
    pat = compile_pattern(
        "{{'step': {step}, 'data_us': {data_us}, 'step_time_sec': {step_time_sec}"
    )
    vals = pat.values("{'step': 3, 'data_us': 1500, 'step_time_sec': 0.25}")
    assert compile_pattern("{step}}} {step_time_s}").values("3} 1")["step"] == 3
    # 1500 µs = 0.0015 s; 'sec' is a unit suffix of readers/columns.py
    assert vals == {"step": 3.0, "data_s": pytest.approx(0.0015), "step_time_s": 0.25}


def test_many_skips_match_in_one_way() -> None:
    # `{_}` before another `{_}` is one word and `{_}` before a literal stops at its first
    # occurrence: six skips on a 50-word line that nearly matches were an n^6 backtracking
    # search (a hang, QA of issue 18); now each skip has one way to match
    pat = compile_pattern("{_} {_} {_} {_} {_} {_} took {step_time_ms}ms")
    assert pat.regex.pattern.count(r"\S+") == 5
    words = " ".join(f"w{i}" for i in range(50))
    assert pat.values(words + " took 5ms") == {"step_time_s": pytest.approx(0.005)}
    assert pat.values(words + " took 5") is None  # no 'ms': no match, found at once
    assert pat.prefix_depth(words + " took 5")[0] >= 13  # the closest-line search too
    # a lone {_} before a field still skips anything (several words)
    got = compile_pattern("it {step}/{_} {samples_per_s} img/s").values(
        "it 120/5000 | loss 2.31 | 157.5 img/s"
    )
    assert got == {"step": 120.0, "throughput": 157.5}
