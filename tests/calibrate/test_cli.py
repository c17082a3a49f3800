"""``xpuperf calibrate``: JSON (xpuperf.calibrate/1), YAML (xpuperf.calibration/1), findings."""

from __future__ import annotations

import json

import pytest
import typer
import yaml
from typer.testing import CliRunner

from xpuperf.calibrate import calibrate_files, to_calibration_dict, to_json_dict
from xpuperf.calibrate.render import render_terminal
from xpuperf.cli.calibrate import calibrate
from xpuperf.errors import InputError, UsageError

from .conftest import FILES

app = typer.Typer()
app.command("calibrate")(calibrate)
app.command("other")(lambda: None)  # keep `calibrate` a subcommand, as in app.py

TOPO_T4 = """schema: xpuperf.topology/1
nodes:
  - name: g4dn
    count: 2
    devices: {count: 1, model: T4, numa_node: 0}
    numa_nodes: [{id: 0}, {id: 1}]
    nics:
      - {name: efa0, speed: "100Gbps", numa_node: 1, cards: [0]}
"""


def _run(*args):
    return CliRunner().invoke(app, ["calibrate", *map(str, args)], catch_exceptions=False)


def test_json_schema_and_points(tmp_path):
    out = tmp_path / "cal.json"
    res = _run(FILES["k8s_h100"], FILES["eks_efa_t4"], "--json", out, "--quiet")
    assert res.exit_code == 0, res.output
    doc = json.loads(out.read_text())
    assert doc["schema"] == "xpuperf.calibrate/1"
    assert set(doc) >= {"fits", "findings", "inputs", "warnings", "measurement"}
    assert len(doc["fits"]) == 2
    for fit in doc["fits"]:
        assert {"collective", "ranks", "nodes", "latency_us", "busbw_GBps", "points"} <= set(fit)
        for p in fit["points"]:
            assert {"size_bytes", "measured_busbw_GBps", "predicted_busbw_GBps"} <= set(p)
    h100 = next(f for f in doc["fits"] if f["ranks"] == 16)
    assert [p["size_bytes"] for p in h100["points"]] == [2**k for k in range(29, 34)]
    assert h100["points"][0]["measured_busbw_GBps"] == pytest.approx(193.5, rel=0.01)
    assert {i["avg_busbw_GBps"] for i in doc["inputs"]} == {194.675, 1.15327}


def test_json_to_stdout_and_yaml_output(tmp_path):
    out = tmp_path / "calibrated.yaml"
    res = _run(FILES["p4d_old"], "-o", out, "--json", "-")
    assert res.exit_code == 0
    doc = json.loads(res.stdout)
    assert doc["fits"][0]["ranks"] == 16
    cal = yaml.safe_load(out.read_text())
    assert cal["schema"] == "xpuperf.calibration/1"
    assert cal["levels"]["net"]["busbw_GBps"] == pytest.approx(doc["fits"][0]["busbw_GBps"], 1e-3)
    fit = cal["fits"][0]
    assert fit["level"] == "net"
    assert "points" not in fit
    assert fit["lines"][0]["from_bytes"] == 8


def test_terminal_summary(tmp_path):
    res = _run(FILES["crossnic0"])
    assert res.exit_code == 0
    assert "all_reduce" in res.stdout
    assert "XP604" in res.stdout  # no small sizes: latency extrapolated


def test_topology_flags_low_busbw(tmp_path):
    topo = tmp_path / "t4.yaml"
    topo.write_text(TOPO_T4)
    result = calibrate_files([FILES["eks_efa_t4"]])
    from xpuperf.calibrate.run import add_topology_findings
    from xpuperf.topology import load

    add_topology_findings(result, load(topo), str(topo))
    xp601 = [f for f in result.findings if f.code == "XP601"]
    assert len(xp601) == 1
    d = xp601[0].data
    # 100 Gb/s = 12.5 GB/s, capped by the default PCIe slot (Gen3 x16, 12 GB/s, formulas.md §2)
    assert d["ceiling_GBps"] == pytest.approx(12.0)
    assert d["fraction"] == pytest.approx(3.11 / 12.0, rel=0.03)
    assert any("another NUMA node" in c for c in d["causes"])
    assert "12 GB/s" in xp601[0].message
    assert "70%" in xp601[0].message
    res = _run(FILES["eks_efa_t4"], "--topology", topo, "--json", "-")
    codes = [f["code"] for f in json.loads(res.stdout)["findings"]]
    assert "XP601" in codes


def test_topology_preset_and_unknown(tmp_path):
    res = _run(FILES["k8s_h100"], "--topology", "dgx-h100", "--json", "-")
    assert res.exit_code == 0
    assert json.loads(res.stdout)["topology"] == "dgx-h100"
    with pytest.raises(UsageError, match="neither a file nor a preset"):
        _run(FILES["k8s_h100"], "--topology", "no-such-thing")


def test_refuses_to_overwrite_input(tmp_path):
    src = tmp_path / "in.txt"
    src.write_bytes(FILES["k8s_h100"].read_bytes())
    with pytest.raises(UsageError, match="one of the inputs"):
        _run(src, "-o", src)


def test_bad_input_is_input_error(tmp_path):
    bad = tmp_path / "bad.log"
    bad.write_text("not nccl-tests\n")
    with pytest.raises(InputError) as e:
        _run(bad)
    assert e.value.line == 1


def test_wrong_results_are_an_error_finding(tmp_path):
    text = FILES["k8s_h100"].read_text().replace("193.50      0   5377.7", "193.50      3   5377.7")
    p = tmp_path / "wrong.txt"
    p.write_text(text)
    result = calibrate_files([p])
    assert result.findings[0].code == "XP603"
    assert "3 wrong elements" in result.findings[0].message


def test_pool_merges_files_with_same_key(tmp_path):
    copy = tmp_path / "again.txt"
    copy.write_bytes(FILES["k8s_h100"].read_bytes())
    assert len(calibrate_files([FILES["k8s_h100"], copy]).fits) == 2
    pooled = calibrate_files([FILES["k8s_h100"], copy], pool=True)
    assert len(pooled.fits) == 1
    assert len(pooled.fits[0].sources) == 2


def test_library_renderers_round_trip_every_real_file():
    from rich.console import Console

    for path in FILES.values():
        result = calibrate_files([path])
        doc = to_json_dict(result)
        json.dumps(doc, allow_nan=False)
        yaml.safe_dump(to_calibration_dict(result))
        console = Console(record=True, width=120)
        render_terminal(result, console)
        assert "all_reduce" in console.export_text()


def test_usage_errors():
    with pytest.raises(UsageError):
        calibrate_files([])
    with pytest.raises(UsageError, match="measurement"):
        calibrate_files([FILES["k8s_h100"]], measurement="fastest")
