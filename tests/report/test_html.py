"""HTML report: the view model (figures, tables, size limits), escaping, and a real browser."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from xpuperf.analysis import analyze
from xpuperf.pipeline import analyze_logs
from xpuperf.report import figures as fg
from xpuperf.report.html import (
    build_view,
    embed_json,
    node_table,
    plotly_js,
    render_html,
)
from xpuperf.report.json_report import to_dict
from xpuperf.synth import Scenario, generate

SCENARIOS = ["healthy_8rank", "slow_rank_16rank", "periodic_spikes_8rank", "single_card"]
EXPECTED_FIGURES = {
    "healthy_8rank": ["fig-fps", "fig-heatmap", "fig-breakdown"],
    "slow_rank_16rank": ["fig-fps", "fig-heatmap", "fig-breakdown"],
    "periodic_spikes_8rank": ["fig-fps", "fig-heatmap"],  # no phase columns: no breakdown
    "single_card": ["fig-fps", "fig-breakdown"],  # one rank: no heatmap
}
HOSTILE = "</script><script>alert(1)</script>"


class _Scan(HTMLParser):
    """Collects element ids, script elements and URL-bearing attributes of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: list[str] = []
        self.scripts: list[dict[str, str | None]] = []
        self.urls: list[str] = []
        self.tags: set[str] = set()
        self._in_script = False
        self.script_text: list[str] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.add(tag)
        if "id" in a:
            self.ids.append(a["id"])
        if tag == "script":
            self.scripts.append(a)
            self._in_script = True
            self.script_text.append("")
        for k in ("src", "href", "action", "data", "poster"):
            if a.get(k):
                self.urls.append(a[k])

    def handle_endtag(self, tag):
        if tag == "script":
            self._in_script = False

    def handle_data(self, data):
        if self._in_script:
            self.script_text[-1] += data


def _scan(page: str) -> _Scan:
    s = _Scan()
    s.feed(page)
    return s


def _embedded(page: str, element_id: str):
    m = re.search(rf'<script type="application/json" id="{element_id}">(.*?)</script>', page, re.S)
    assert m, element_id
    return json.loads(m.group(1))


@pytest.fixture(scope="module")
def sample_pages() -> dict[str, tuple[object, str]]:
    root = Path(__file__).resolve().parents[2] / "sample_logs"
    out = {}
    for sc in SCENARIOS:
        result = analyze_logs([root / sc])
        out[sc] = (result, render_html(result))
    return out


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_every_sample_view_and_page(sample_pages, scenario: str) -> None:
    result, page = sample_pages[scenario]
    view = build_view(result)
    assert view["figure_ids"] == EXPECTED_FIGURES[scenario]
    scan = _scan(page)
    for fid in [*view["figure_ids"], "tbl-summary", "tbl-findings", "xpuperf-data"]:
        assert scan.ids.count(fid) == 1, fid
    # self-contained: exactly 4 scripts (data, figures, plotly.js, renderer), none by URL
    assert len(scan.scripts) == 4
    assert all("src" not in s for s in scan.scripts)
    assert scan.urls == []
    assert not {"link", "img", "iframe", "object", "embed"} & scan.tags
    assert page.count("plotly.js v") == 1  # the bundle's banner: inlined once
    assert "@import" not in page
    assert "@font-face" not in page
    # the embedded document is the JSON renderer's document, and the figures are the view's
    assert _embedded(page, "xpuperf-data") == json.loads(json.dumps(to_dict(result)))
    assert _embedded(page, "xpuperf-figures") == view["figures"]
    assert len(page.encode()) < len(str(plotly_js()).encode()) + 1_000_000


def test_slow_rank_tables(sample_pages) -> None:
    result, _ = sample_pages["slow_rank_16rank"]
    view = build_view(result)
    rows = view["stragglers"]["rows"]
    assert [r[:3] for r in rows] == [["deterministic", "5", "node00"]]
    assert rows[0][5] == f"{result.stragglers.per_rank.set_index('rank').loc[5, 'score']:.3f}"
    nodes = view["nodes"]["rows"]
    assert [r[0] for r in nodes] == ["node00", "node01"]  # slowest node first
    assert nodes[0][3] == "rank 5"
    assert nodes[0][5] == "1"
    assert [r[1] for r in view["findings"]["rows"]] == [f.code for f in result.findings]
    heat = next(f for f in view["figures"] if f["id"] == "fig-heatmap")["data"][0]
    z = np.array(heat["z"], dtype=float)
    assert int(np.nanargmax(np.nanmean(z, axis=1))) == 5  # the hot row is rank 5
    assert heat["y"][5] == "rank 5 (node00)"


def test_fps_figure_marks_warmup_spikes_and_change_points(sample_pages) -> None:
    result, _ = sample_pages["periodic_spikes_8rank"]
    fig = fg.fps_figure(result)
    spikes = next(t for t in fig["data"] if t["name"].startswith("spike"))
    assert spikes["x"] == sorted(result.jitter.spike_steps)
    rect = next(s for s in fig["layout"]["shapes"] if s["type"] == "rect")
    assert rect["x1"] == result.warmup.first_steady_step - 0.5
    table = generate(Scenario(ranks=4, steps=160, change_step=80, change_factor=1.3, seed=4))
    res = analyze(table)
    assert res.jitter.change_points
    fig = fg.fps_figure(res)
    vlines = [s for s in fig["layout"]["shapes"] if s["type"] == "line" and s["yref"] == "paper"]
    assert [v["x0"] for v in vlines] == [cp.step - 0.5 for cp in res.jitter.change_points]


def test_minmax_downsample_keeps_extremes() -> None:
    rng = np.random.default_rng(0)
    y = rng.normal(1.0, 0.01, 10_000)
    y[1234], y[8765] = 5.0, -3.0
    idx = fg.minmax_indices(y, 2000)
    assert len(idx) <= 2000
    assert {1234, 8765} <= set(idx.tolist())
    assert np.all(np.diff(idx) > 0)
    assert fg.minmax_indices(y[:50], 2000).tolist() == list(range(50))


def test_long_and_wide_runs_are_reduced_and_say_so() -> None:
    long = analyze(generate(Scenario(ranks=2, steps=5000, spike_period=997, spike_s=1.0, seed=1)))
    view = build_view(long)
    fps = next(f for f in view["figures"] if f["id"] == "fig-fps")
    assert len(fps["data"][0]["x"]) <= fg.MAX_POINTS
    assert max(fps["data"][0]["y"]) == pytest.approx(long.job_steps["fps"].max())
    assert "downsampled" in fps["note"]
    heat = next(f for f in view["figures"] if f["id"] == "fig-heatmap")
    assert len(heat["data"][0]["x"]) <= fg.MAX_HEATMAP_COLS
    assert any("downsampled" in n for n in view["notes"])
    assert any("binned" in n for n in view["notes"])

    wide = analyze(generate(Scenario(ranks=300, cards_per_node=8, steps=30, seed=2)))
    view = build_view(wide)
    heat = next(f for f in view["figures"] if f["id"] == "fig-heatmap")
    assert len(heat["data"][0]["y"]) == 38  # ceil(300 / 8) nodes
    bars = next(f for f in view["figures"] if f["id"] == "fig-breakdown")
    assert len(bars["data"][0]["x"]) == 38
    assert sum("rows are nodes" in n or "one bar per node" in n for n in view["notes"]) == 2
    assert len(render_html(wide).encode()) < len(str(plotly_js()).encode()) + 2_000_000


def test_minimal_run_renders() -> None:
    result = analyze(pd.DataFrame({"rank": [0, 0], "step": [1, 2], "step_time_s": [0.5, 0.7]}))
    view = build_view(result)
    assert view["figure_ids"] == ["fig-fps"]
    assert "step time" in view["figures"][0]["title"].lower()  # no samples: step time, not FPS
    assert _scan(render_html(result)).ids.count("fig-fps") == 1


def test_embed_json_cannot_close_script_and_round_trips() -> None:
    obj = {"node": HOSTILE, "sep": "a\u2028b\u2029c", "amp": "x&y", "<key>": 1}
    text = str(embed_json(obj))
    assert "<" not in text
    assert ">" not in text
    assert "&" not in text
    assert "\u2028" not in text
    assert "\u2029" not in text
    assert json.loads(text) == obj
    assert "</script" not in str(plotly_js()).lower()


def _hostile_result():
    table = generate(Scenario(ranks=4, cards_per_node=2, steps=40, slow_ranks={1: 0.2}, seed=5))
    names = {"node00": HOSTILE, "node01": '<img src=x onerror="alert(2)">&amp;'}
    table["node"] = table["node"].map(names).astype("string")
    return analyze(table, sources=["<script>alert(3)</script>.csv"])


def test_log_strings_are_escaped_everywhere() -> None:
    result = _hostile_result()
    page = render_html(result)
    scan = _scan(page)
    assert len(scan.scripts) == 4  # no script element injected
    assert "img" not in scan.tags
    assert "alert" not in "".join(scan.script_text[2:])  # not in executable scripts
    assert "<script>alert" not in page
    assert "<img" not in page
    assert "&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;" in page  # shown as text
    doc = _embedded(page, "xpuperf-data")
    assert doc["stragglers"][0]["node"] == HOSTILE  # data intact after JSON escaping
    heat = next(f for f in build_view(result)["figures"] if f["id"] == "fig-heatmap")
    assert all("<" not in y for y in heat["data"][0]["y"])  # plotly labels escaped too


# ---- a real browser ---------------------------------------------------------------------------

CHROMIUM = next(
    (p for p in (shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome")) if p),
    None,
)
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None,
    reason="no chromium binary on PATH (.ci/run installs it: apt-get install -y chromium)",
)
_BROWSER_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--host-resolver-rules=MAP * ~NOTFOUND",
    "--virtual-time-budget=10000",
    "--enable-logging=stderr",
    "--v=0",
]


def run_chromium(page: Path, tmp: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    """Open ``page`` in headless Chromium with a throw-away profile and a network log."""
    return subprocess.run(
        [
            str(CHROMIUM),
            *_BROWSER_FLAGS,
            f"--user-data-dir={tmp / 'profile'}",
            f"--log-net-log={tmp / 'netlog.json'}",
            *extra,
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _page_requests(netlog: Path) -> list[str]:
    """URLs the PAGE asked the network for, from Chromium's NetLog.

    Chromium's own background requests (updater, time sync, accounts) have the initiator
    "not an origin"; requests made on behalf of a page carry the page's origin (``null`` or
    ``file://`` for a local file).
    """
    d = json.loads(netlog.read_text(errors="replace"))
    start = d["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
    urls = set()
    for e in d["events"]:
        params = e.get("params", {})
        url = params.get("url", "")
        if e["type"] != start or not url or params.get("initiator") == "not an origin":
            continue
        if not url.startswith(("file:", "data:", "blob:")):
            urls.add(url)
    return sorted(urls)


def _console(stderr: str) -> list[str]:
    return [ln for ln in stderr.splitlines() if ":CONSOLE" in ln or "Uncaught" in ln]


@needs_chromium
def test_browser_harness_sees_console_errors_and_requests(tmp_path: Path) -> None:
    # the checks below are only worth something if they can fail: a control page
    page = tmp_path / "control.html"
    page.write_text(
        '<html><body><img src="http://example.org/a.png"><script>console.error("boom");'
        'fetch("https://example.com/x").catch(function(){});</script></body></html>'
    )
    p = run_chromium(page, tmp_path, "--dump-dom")
    assert any("boom" in ln for ln in _console(p.stderr)), p.stderr[-2000:]
    assert _page_requests(tmp_path / "netlog.json") == [
        "http://example.org/a.png",
        "https://example.com/x",
    ]


@needs_chromium
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_report_renders_in_headless_chromium(sample_pages, tmp_path: Path, scenario: str) -> None:
    _, html_text = sample_pages[scenario]
    page = tmp_path / "report.html"
    page.write_text(html_text, encoding="utf-8")
    p = run_chromium(page, tmp_path, "--dump-dom")
    assert p.returncode == 0, p.stderr[-2000:]
    dom = p.stdout
    m = re.search(r'<body[^>]*data-rendered="(\d+)"', dom)
    assert m, "the page's script did not finish: " + p.stderr[-2000:]
    assert int(m.group(1)) == len(EXPECTED_FIGURES[scenario])
    for fid in EXPECTED_FIGURES[scenario]:
        # plotly.js drew into the element: it now holds an SVG main layer
        assert re.search(rf'id="{fid}"[^>]*>.*?class="main-svg"', dom, re.S), fid
    assert _console(p.stderr) == []
    assert '<div id="render-errors" hidden=""></div>' in dom
    assert _page_requests(tmp_path / "netlog.json") == []
    scan = _scan(dom)
    assert [u for u in scan.urls if re.match(r"(?i)\s*(https?:|//)", u)] == []


@needs_chromium
def test_hostile_strings_do_not_run_in_chromium(tmp_path: Path) -> None:
    page = tmp_path / "hostile.html"
    page.write_text(render_html(_hostile_result()), encoding="utf-8")
    p = run_chromium(page, tmp_path, "--dump-dom")
    dom = p.stdout
    assert 'data-rendered="3"' in dom
    assert "<img" not in dom  # the onerror payload never became an element
    assert _console(p.stderr) == []


def test_one_rank_with_a_host_column_has_no_node_table() -> None:
    # one rank has no slowdown to compare (NaN): the per-node table raised "all NA values"
    # (exit 3 from `analyze --html`, found by the issue-21 break-it pass)
    t = pd.DataFrame({"rank": 0, "step": range(1, 31), "step_time_s": 0.1, "node": "nodeA"})
    res = analyze(t, warmup=0)
    assert node_table(res) is None
    assert "<html" in render_html(res)
