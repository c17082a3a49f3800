"""``--fail-on`` grammar and evaluation (no eval: a fixed grammar over the JSON document)."""

from __future__ import annotations

import pytest

from xpuperf import gates as gt
from xpuperf.errors import GateFailedError, UsageError

DOC = {
    "summary": {"ranks": 16, "step_time_s": {"median": 0.38, "p99": 1.5}},
    "jitter": {"cv": 0.08, "fps_cv": None},
    "stragglers": [{"rank": 5}],
    "breakdown": {"speedup": 0.82, "comm_fraction": 0.175},
    "findings": [
        {"code": "XP101", "severity": "warning"},
        {"code": "XP404", "severity": "info"},
    ],
}


def check(expr: str, doc: dict = DOC) -> gt.GateResult:
    (g,) = gt.parse_gates([expr])
    return gt.evaluate_gate(g, doc)


@pytest.mark.parametrize(
    ("expr", "failed", "actual"),
    [
        ("speedup<0.9", True, 0.82),
        ("speedup < 0.8", False, 0.82),
        ("jitter.cv>0.05", True, 0.08),
        ("jitter.cv>=8%", True, 0.08),
        ("cv>0.1", False, 0.08),
        ("stragglers>0", True, 1),
        ("stragglers==0", False, 1),
        ("summary.step_time_s.p99>1.2", True, 1.5),
        ("p99>1.2", True, 1.5),
        ("summary.ranks!=16", False, 16),
        ("breakdown.comm_fraction>1e-1", True, 0.175),
        ("severity>=warning", True, "warning"),
        ("severity>=error", False, "warning"),
        ("severity==info", False, "warning"),
        ("code=XP101", True, "present"),
        ("code==xp102", False, "absent"),
        ("code!=XP102", True, "absent"),
    ],
)
def test_gate_values(expr: str, failed: bool, actual) -> None:
    r = check(expr)
    assert r.failed is failed
    assert r.actual == pytest.approx(actual) if isinstance(actual, float) else r.actual == actual


def test_severity_without_findings() -> None:
    assert check("severity>=info", {"findings": []}).failed is False


def test_comma_separated_and_repeated() -> None:
    gates = gt.parse_gates(["speedup<0.9,jitter.cv>0.05", "stragglers>0"])
    assert [g.text for g in gates] == ["speedup<0.9", "jitter.cv>0.05", "stragglers>0"]


@pytest.mark.parametrize(
    "expr",
    [
        "speedup",
        "speedup<<0.9",
        "speedup<abc",
        "__import__('os').system('x')>0",
        "speedup<0.9;rm",
        "severity>=fatal",
        "code>XP101",
        "code=ABC",
        "1<speedup",
        "",
        ",",
    ],
)
def test_malformed_is_usage_error_naming_grammar(expr: str) -> None:
    with pytest.raises(UsageError) as e:
        gt.parse_gates([expr])
    assert "Accepted:" in str(e.value)
    assert repr(expr) in str(e.value) or expr in str(e.value)


def test_null_value_says_what_is_missing() -> None:
    doc = {**DOC, "breakdown": {"speedup": None}}
    with pytest.raises(UsageError, match=r"breakdown\.speedup is null.*--baseline"):
        check("speedup<0.9", doc)
    with pytest.raises(UsageError, match="fps_cv is null"):
        check("jitter.fps_cv>0.1")
    with pytest.raises(UsageError, match=r"jitter\.cv is null"):
        check("jitter.cv>0.1", {**DOC, "jitter": None})


def test_unknown_field_and_non_number() -> None:
    with pytest.raises(UsageError, match=r"no field .jitter\.nope.*fields of jitter: cv, fps_cv"):
        check("jitter.nope>1")
    with pytest.raises(UsageError, match="is an object"):
        check("summary.step_time_s>1")


def test_enforce_lists_each_failed_gate_with_value() -> None:
    results = gt.evaluate(gt.parse_gates(["speedup<0.9,jitter.cv>0.05,stragglers>3"]), DOC)
    with pytest.raises(GateFailedError) as e:
        gt.enforce(results)
    msg = str(e.value)
    assert e.value.exit_code == 1
    assert "2 of 3 gate(s) failed" in msg
    assert "speedup<0.9 (speedup = 0.82)" in msg
    assert "jitter.cv>0.05 (jitter.cv = 0.08)" in msg
    assert "stragglers>3" not in msg
    gt.enforce(gt.evaluate(gt.parse_gates(["stragglers>3"]), DOC))  # passes: no raise


@pytest.mark.parametrize("expr", ["mfu<40", "jitter_cost>5", "comm_fraction>20"])
def test_a_bare_percent_on_a_fraction_is_refused(expr: str) -> None:
    # MFU and shares are fractions 0…1: 'mfu<40' would fail every run (QA of issue 18)
    with pytest.raises(UsageError, match=r"is a fraction 0…1.*%"):
        gt.parse_gate(expr)
    assert gt.parse_gate(expr + "%").value == pytest.approx(
        float(expr.split("<")[-1].split(">")[-1]) / 100
    )
