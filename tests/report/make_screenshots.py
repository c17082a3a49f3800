"""Regenerate the screenshots in docs/ (not a test): ``python -m tests.report.make_screenshots``.

docs/plan-report.png is the plan page of the worked example of docs/plan.md §11 (BERT-large on
128 × pcie-8gpu, cards 1 … 1024), drawn by headless Chromium (the binary the browser tests use).
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

from xpuperf.advice import make_plan
from xpuperf.costmodel.workloads import model
from xpuperf.report.plan_html import render_plan_html
from xpuperf.topology import preset

from .test_html import CHROMIUM

DOCS = Path(__file__).resolve().parents[2] / "docs"


def screenshot(html: str, out: Path, width: int = 1320, height: int = 1750) -> None:
    """Write ``html`` to a temporary file and save Chromium's screenshot of it to ``out``."""
    if CHROMIUM is None:
        sys.exit("no chromium on PATH (apt-get install -y chromium)")
    with tempfile.TemporaryDirectory() as tmp:
        page = Path(tmp) / "page.html"
        page.write_text(html, encoding="utf-8")
        subprocess.run(
            [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
             f"--window-size={width},{height}", "--virtual-time-budget=10000",
             f"--user-data-dir={tmp}/profile", "--host-resolver-rules=MAP * ~NOTFOUND",
             f"--screenshot={out}", page.as_uri()],
            check=True, capture_output=True, timeout=120,
        )  # fmt: skip
    print(f"wrote {out}")


def main() -> None:
    plan = make_plan(preset("pcie-8gpu", 128), model("bert_large"), 0.4,
                     cards=[1, 8, 16, 64, 256, 1024], batch_size=32)  # fmt: skip
    screenshot(render_plan_html(plan), DOCS / "plan-report.png")


if __name__ == "__main__":
    main()
