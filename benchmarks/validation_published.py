"""The published-points validation table (docs/plan.md §15): the model's scaling efficiency for
every row of tests/data/validation_published/points.csv with ONE global set of defaults, the
error per point (model − published, in points) and the summary (mean, median, max |error|,
signed mean), overall and at >= 64 cards.

    python benchmarks/validation_published.py [--markdown]

``--markdown`` prints the docs table. Not a timing benchmark: the whole run takes about a second.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.costmodel.published import run_all, summarize


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--markdown", action="store_true", help="print the docs/plan.md table")
    args = ap.parse_args()
    res = run_all()
    if args.markdown:
        print("| point | cards (base) | published | model | error |")
        print("|---|---|---|---|---|")
    for p, m in res:
        err = 100 * (m - p.published)
        if args.markdown:
            print(f"| {p.id} | {p.cards} ({p.base_cards}) | {p.published:.3f} | {m:.3f} | "
                  f"{err:+.1f} |")  # fmt: skip
        else:
            print(f"{p.id:32s} {p.cards:5d}/{p.base_cards:<3d} published {p.published:.3f} "
                  f"model {m:.3f} error {err:+6.1f}")  # fmt: skip
    for label, sel in (("all", res), (">= 64 cards", [r for r in res if r[0].cards >= 64])):
        s = summarize([100 * (m - p.published) for p, m in sel])
        print(f"{label}: n {s.n}, mean |error| {s.mean_abs:.2f}, median {s.median_abs:.2f}, "
              f"max {s.max_abs:.1f}, signed mean {s.signed_mean:+.2f}, within 5 points "
              f"{s.within5}")  # fmt: skip


if __name__ == "__main__":
    main()
