"""The truthful figures as Chromium draws them: a probe script added to the page reads what
plotly.js laid out (axis ranges, colour ranges, annotations, bar heights) after the page's own
script has drawn every figure; the view-model side is in tests/report/test_figures_truth.py."""

from __future__ import annotations

import html
import json
import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from tests.report.test_html import _console, needs_chromium, run_chromium
from xpuperf.analysis import analyze
from xpuperf.cli.app import main
from xpuperf.pipeline import analyze_logs
from xpuperf.report.html import render_html
from xpuperf.synth import Scenario, generate

ROOT = Path(__file__).resolve().parents[2]
H100 = ROOT / "tests/data/calibrate_k8s_h100/17_nccltests_k8s-mpijob-2node-16xh100-orted-launch.txt"

PROBE = """<script>
(function () {
  function dump() {
    var out = {};
    document.querySelectorAll(".figure").forEach(function (gd) {
      var fl = gd._fullLayout || {};
      out[gd.id] = {
        yrange: fl.yaxis ? fl.yaxis.range : null,
        xtype: fl.xaxis ? fl.xaxis.type : null,
        annotations: (fl.annotations || []).map(function (a) { return a.text; }),
        traces: (gd._fullData || []).map(function (t) {
          return {type: t.type, name: t.name, zmin: t.zmin, zmax: t.zmax, y: t.y || null};
        })
      };
    });
    var pre = document.createElement("pre");
    pre.id = "probe";
    pre.textContent = JSON.stringify(out);
    document.body.appendChild(pre);
  }
  var t = setInterval(function () {
    if (document.body.hasAttribute("data-rendered")) { clearInterval(t); dump(); }
  }, 50);
})();
</script>
"""


def drawn(page_html: str, tmp: Path) -> tuple[int, dict]:
    """(figures drawn, what plotly.js laid out per figure id) for a page opened in Chromium."""
    page = tmp / "page.html"
    page.write_text(page_html.replace("</body>", PROBE + "</body>"), encoding="utf-8")
    p = run_chromium(page, tmp, "--dump-dom")
    assert p.returncode == 0, p.stderr[-2000:]
    assert _console(p.stderr) == []
    assert '<div id="render-errors" hidden=""></div>' in p.stdout
    rendered = re.search(r'<body[^>]*data-rendered="(\d+)"', p.stdout)
    probe = re.search(r'<pre id="probe">(.*?)</pre>', p.stdout, re.S)
    assert rendered, p.stderr[-2000:]
    assert probe, p.stderr[-2000:]
    return int(rendered.group(1)), json.loads(html.unescape(probe.group(1)))


@needs_chromium
def test_analyze_page_axes_colours_and_scale(tmp_path: Path) -> None:
    # 300 ranks on 8-card nodes, rank 13 (node01) 25 % slow; the single card: data time only
    res = analyze(generate(Scenario(ranks=300, cards_per_node=8, steps=30, slow_ranks={13: 0.25})))
    n, figs = drawn(render_html(res), tmp_path)
    assert n == 3
    assert figs["fig-fps"]["yrange"][0] == 0  # throughput axis from 0
    heat = figs["fig-heatmap"]["traces"][0]
    assert (heat["zmin"], heat["zmax"]) == (0.9, 1.1)  # 1 ± 2 × threshold 0.05
    bars = {t["name"]: t["y"] for t in figs["fig-breakdown"]["traces"]}
    assert set(bars) == {"compute", "comm", "data", "other"}
    assert figs["fig-breakdown"]["yrange"][0] == 0


@needs_chromium
def test_single_card_bar_is_drawn_to_the_step_time(tmp_path: Path) -> None:
    # median step time 0.3119355 s of which data 0.0079865 s: the drawn axis reaches the step
    res = analyze_logs([ROOT / "sample_logs" / "single_card"])
    n, figs = drawn(render_html(res), tmp_path)
    assert n == 2  # FPS and breakdown; one card has no heat map
    top = figs["fig-breakdown"]["yrange"][1]
    assert top >= 0.3119
    stack = sum(t["y"][0] for t in figs["fig-breakdown"]["traces"])
    assert abs(stack - 0.3119355) < 2e-6


@needs_chromium
def test_missing_per_rank_work_says_why_in_the_page(tmp_path: Path) -> None:
    res = analyze(generate(Scenario(ranks=8, steps=40, seed=6)))
    res = replace(res, rank_steps=res.rank_steps.assign(work_s=np.nan))
    n, figs = drawn(render_html(res), tmp_path)
    heat = figs["fig-heatmap"]
    assert heat["traces"] == []
    assert any("No per-rank work" in a for a in heat["annotations"])
    assert n == 3


@needs_chromium
def test_plan_page_speedup_axis_from_zero(tmp_path: Path) -> None:
    out = tmp_path / "plan.html"
    with pytest.raises(SystemExit) as e:
        main(["plan", "--html", str(out), "-q"])
    assert e.value.code == 0
    n, figs = drawn(out.read_text(encoding="utf-8"), tmp_path)
    assert n == 2
    assert figs["fig-plan-speedup"]["yrange"][0] == 0


@needs_chromium
def test_calibrate_html_page(tmp_path: Path) -> None:
    out = tmp_path / "cal.html"
    with pytest.raises(SystemExit) as e:
        main(["calibrate", str(H100), "--topology", "dgx-h100", "--html", str(out), "-q"])
    assert e.value.code == 0
    page = out.read_text(encoding="utf-8")
    assert "XP601" in page
    n, figs = drawn(page, tmp_path)
    assert n == 1
    fig = figs["fig-calib-0"]
    assert fig["yrange"][0] == 0
    assert fig["xtype"] == "log"
    assert [t["name"].split(" (")[0] for t in fig["traces"]] == ["measured", "α–β fit"]
    assert any(a.startswith("topology ") for a in fig["annotations"])
