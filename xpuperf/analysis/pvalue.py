"""How p-values are printed: never ``p=1.000`` or ``p=0.000``.

A p-value from a normal approximation or a rank test is not meaningful below about 1e-16 (the
spacing of doubles near 1: ``1 − p`` rounds to 1), and one computed as exactly 0 or 1 only says
"beyond what the test resolves". So the floor prints as ``p<1e-16``, a p-value at the resolution of
a bootstrap as ``p<`` that resolution, values near 1 as ``p>0.99``, and the rest with two
significant digits.
"""

from __future__ import annotations

import math

P_FLOOR = 1e-16
"""The smallest p-value printed as a number."""


def format_p(p: float | None, floor: float = P_FLOOR) -> str:
    """``p=0.034``, ``p=3.2e-05``, ``p<1e-16``, ``p>0.99``; ``p=n/a`` for None or NaN.

    Args:
        p: the p-value, in [0, 1].
        floor: the resolution of the test (e.g. 1 / bootstrap draws); at or below it the text is
            ``p<`` the floor, rounded up to one significant digit.
    """
    if p is None or math.isnan(p):
        return "p=n/a"
    floor = max(floor, P_FLOOR)
    if p <= floor:
        return f"p<{_one_digit_up(floor)}"
    if p > 0.99:
        return "p>0.99"
    return f"p={p:.2g}" if p >= 1e-3 else f"p={p:.1e}"


def _one_digit_up(x: float) -> str:
    """``1e-16`` → ``1e-16``; ``5e-05`` → ``5e-05``; ``4.99e-05`` → ``5e-05``."""
    e = math.floor(math.log10(x))
    m = math.ceil(round(x / 10**e, 9))
    if m >= 10:
        m, e = 1, e + 1
    return f"{m}e{e:+03d}" if e < -4 else f"{m * 10**e:g}"
