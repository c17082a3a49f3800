"""Hypothesis profiles of the fuzz suite and the per-target case count.

Profiles (chosen with the environment variable ``XPUPERF_FUZZ``):

- ``xpuperf-fuzz-ci`` (default): a bounded number of examples per target, the whole suite in
  well under two minutes on two cores;
- ``xpuperf-fuzz-long`` (``XPUPERF_FUZZ=long``): ``XPUPERF_FUZZ_EXAMPLES`` examples per target
  (default 5000), for runs by hand (docs/reliability.md).

No example database is written (``database=None``) and no timing deadline is used: a hang is
caught by the hard per-example alarm of :func:`tests.fuzz.harness.check` instead. Set
``XPUPERF_FUZZ_REPORT=path.json`` to save the cases run per target.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, Phase, settings

from tests.fuzz.harness import COUNTS, PROFILE, save_counts

_COMMON = {
    "deadline": None,
    "phases": [Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink],  # no slow 'explain'
    "database": None,
    "suppress_health_check": [
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.filter_too_much,
        HealthCheck.large_base_example,
    ],
}
settings.register_profile("xpuperf-fuzz-ci", max_examples=30, **_COMMON)
settings.register_profile(
    "xpuperf-fuzz-long",
    max_examples=int(os.environ.get("XPUPERF_FUZZ_EXAMPLES", "5000")),
    **_COMMON,
)


def pytest_runtest_teardown(item, nextitem) -> None:
    save_counts()  # after every test, so a long run stopped early still reports what it ran


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    if not COUNTS:
        return
    total = sum(sum(c.values()) for c in COUNTS.values())
    terminalreporter.write_line(f"fuzz ({PROFILE}): {total} cases")
    for target, c in sorted(COUNTS.items()):
        terminalreporter.write_line(
            f"  {target:40s} {sum(c.values()):7d}  ok {c['ok']:7d}  input error {c['error']:7d}"
        )
    save_counts()
