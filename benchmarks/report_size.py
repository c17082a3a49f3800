"""Size of the HTML and Markdown reports: every bundled sample, a plan, and a large synthetic run.

Run: ``python benchmarks/report_size.py [--ranks 1024 --steps 2000]``. Prints, per report, the
file size, the share that is plotly.js (inlined once), the embedded JSON document, the figures'
data and the rest (markup, tables, CSS, the drawing script), and the size limits the page states.
Results are recorded in docs/report.md ("Large runs"). No assertions; sizes do not depend on the
machine, only on the data (synthetic runs are seeded).
"""

from __future__ import annotations

import argparse
import re
import time
from pathlib import Path

from xpuperf.advice import make_plan
from xpuperf.analysis import analyze
from xpuperf.costmodel.workloads import model
from xpuperf.pipeline import analyze_logs
from xpuperf.report.html import build_view, plotly_js, render_html
from xpuperf.report.markdown import render_markdown, render_plan_markdown
from xpuperf.report.plan_html import render_plan_html
from xpuperf.report.plan_report import to_dict
from xpuperf.synth import Scenario, generate
from xpuperf.topology import preset

SAMPLES = Path(__file__).resolve().parents[1] / "sample_logs"
MB = 1e6


def _script_bytes(page: str, element_id: str) -> int:
    m = re.search(rf'<script type="application/json" id="{element_id}">(.*?)</script>', page, re.S)
    return len(m.group(1).encode()) if m else 0


def describe(name: str, page: str, markdown: str, notes: list[str]) -> None:
    total = len(page.encode())
    js = len(str(plotly_js()).encode())
    doc = _script_bytes(page, "xpuperf-data")
    figs = _script_bytes(page, "xpuperf-figures")
    rest = total - js - doc - figs
    print(
        f"{name}: HTML {total / MB:.2f} MB = plotly.js {js / MB:.2f} MB ({js / total:.0%}) "
        f"+ JSON {doc / 1e3:,.0f} kB + figures {figs / 1e3:,.0f} kB + rest {rest / 1e3:,.0f} kB"
        f"; Markdown {len(markdown.encode()) / 1e3:.1f} kB"
    )
    for n in notes:
        print(f"    note: {n}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=1024)
    ap.add_argument("--steps", type=int, default=2000)
    args = ap.parse_args()
    for d in sorted(p for p in SAMPLES.iterdir() if p.is_dir()):
        r = analyze_logs([d])
        describe(d.name, render_html(r), render_markdown(r), build_view(r)["notes"])
    plan = make_plan(preset("pcie-8gpu", 128), model("bert_large"), 0.4,
                     cards=[1, 8, 16, 64, 256, 1024], batch_size=32)  # fmt: skip
    describe("plan (docs/plan.md §11)", render_plan_html(plan),
             render_plan_markdown(to_dict(plan)), [])  # fmt: skip
    t0 = time.perf_counter()
    sc = Scenario(ranks=args.ranks, steps=args.steps, slow_ranks={517: 0.15},
                  random_straggler_prob=0.002, random_straggler_s=0.05, spike_period=250,
                  spike_s=0.2, seed=7)  # fmt: skip
    r = analyze(generate(sc))
    t1 = time.perf_counter()
    page = render_html(r)
    t2 = time.perf_counter()
    describe(f"synthetic {args.ranks} ranks × {args.steps} steps", page, render_markdown(r),
             build_view(r)["notes"])  # fmt: skip
    print(f"    generate+analyze {t1 - t0:.1f} s, render {t2 - t1:.1f} s")
    out = Path("/tmp") / f"xpuperf_report_{args.ranks}x{args.steps}.html"
    out.write_text(page, encoding="utf-8")
    print(f"    written to {out}")


if __name__ == "__main__":
    main()
