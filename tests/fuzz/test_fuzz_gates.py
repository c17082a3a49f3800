"""Fuzz the ``--fail-on`` parser and evaluator: a list of gates / results or UsageError only."""

from __future__ import annotations

import json

from hypothesis import example, given
from hypothesis import strategies as st

from tests.fuzz.harness import check, fuzz_settings
from xpuperf.errors import UsageError
from xpuperf.gates import ANALYZE_ALIASES, evaluate, parse_gates

FIELDS = [
    *ANALYZE_ALIASES,
    "severity",
    "code",
    "codes",
    "stragglers",
    "summary.step_time_s.p99",
    "jitter.cv",
    "findings",
    "summary",
    "a..b",
    ".x",
    "x.",
    "breakdown.speedup",
    "_",
    "9x",
]
OPS = ["<", "<=", ">", ">=", "==", "=", "!=", "=<", "<>", "===", "~", ""]
VALUES = ["0.9", "5%", "1e-3", "-1", "+.5", "1e309", "nan", "inf", "info", "warning", "ERROR",
          "XP101", "xp999", "XP1", "%", "5%%", "", "1.2.3", "0x10", "1_0", "١"]  # fmt: skip
TOKEN = st.one_of(
    st.sampled_from(FIELDS),
    st.sampled_from(OPS),
    st.sampled_from(VALUES),
    st.sampled_from([",", " ", "\t", "\n", "\x00", "(", ")", "'", "__import__"]),
)
EXPR = st.one_of(
    st.text(max_size=40),
    st.lists(TOKEN, max_size=8).map("".join),
    st.tuples(st.sampled_from(FIELDS), st.sampled_from(OPS), st.sampled_from(VALUES)).map(
        lambda t: "".join(t)
    ),
    st.tuples(  # well-formed gates, so the evaluator runs too
        st.sampled_from(FIELDS), st.sampled_from(OPS[:7]), st.sampled_from(VALUES[:13])
    ).map(lambda t: " ".join(t)),
    st.tuples(  # numbers of every shape
        st.sampled_from(FIELDS), st.sampled_from(OPS[:7]), st.floats(allow_nan=True)
    ).map(lambda t: f"{t[0]}{t[1]}{t[2]!r}"),
)
DOC = {
    "summary": {"step_time_s": {"median": 0.3, "p99": 0.41}, "throughput_samples_per_s": None},
    "jitter": {"cv": 0.08, "fps_cv": float("nan")},
    "breakdown": {"speedup": None, "comm_fraction": 0.2},
    "stragglers": [{"rank": 3}],
    "straggler_analysis": {"sync_cost_fraction": 0.05},
    "findings": [{"code": "XP101", "severity": "warning"}, {"code": None}, {}],
}


@fuzz_settings()
@given(exprs=st.lists(EXPR, min_size=1, max_size=3))
@example(exprs=["__import__('os').system('true')"])
@example(exprs=["speedup<0.9,jitter.cv>0.05"])
def test_fail_on(exprs: list[str]) -> None:
    gates = check("--fail-on parser", parse_gates, exprs, expect=(UsageError,))
    if gates is None:
        return
    assert gates
    assert all(g.op in ("<", "<=", ">", ">=", "==", "=", "!=") for g in gates)
    results = check("--fail-on evaluate", evaluate, gates, DOC, expect=(UsageError,))
    if results is not None:
        assert len(results) == len(gates)
        json.dumps([r.describe() for r in results])
