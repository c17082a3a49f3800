"""``xpuperf topo show|check`` (thin CLI) and the shipped JSON Schema."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from xpuperf.cli.topo import topo_app
from xpuperf.errors import GateFailedError, InputError, UsageError
from xpuperf.topology import preset, to_json_dict
from xpuperf.topology.presets import NODE_PRESETS
from xpuperf.topology.schema import KEYS, allowed_keys, json_schema

DATA = Path(__file__).resolve().parent.parent / "data" / "topology_example"
runner = CliRunner()


def run(*args: str):
    return runner.invoke(topo_app, list(args), catch_exceptions=True)


def test_show_preset_picture() -> None:
    r = run("show", "--preset", "dgx-a100", "--nodes", "4")
    assert r.exit_code == 0, r.output
    assert "dgx-a100-0 … dgx-a100-3 (×4)" in r.output
    assert "nvlink ×12" in r.output
    assert "240.0 GB/s" in r.output
    assert "NIC mlx5_0 200 Gb/s → cards 0, 25 GB/s per card" in r.output


def test_show_file_json_to_stdout() -> None:
    r = run("show", str(DATA / "cluster.yaml"), "--json", "-")
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    assert d["schema"] == "xpuperf.topology/1"
    dev = d["nodes"][0]["devices"][0]
    assert (dev["index"], dev["numa_node"], dev["nic"]) == (0, 0, "eth0")
    assert d["nodes"][0]["nics"][0] == {
        "name": "eth0", "speed_Gbps": 100.0, "numa_node": 0, "cards": [0, 1], "pcie_switch": None
    }  # fmt: skip
    assert {"a", "b", "kind", "count"} <= set(d["nodes"][0]["links"][0])


def test_show_json_to_file_and_generic(tmp_path: Path) -> None:
    out = tmp_path / "g.json"
    r = run("show", "--cards-per-node", "4", "--nodes", "2", "--nic", "100Gbps", "--json", str(out))
    assert r.exit_code == 0, r.output
    assert json.loads(out.read_text())["nodes"][1]["nics"][0]["speed_Gbps"] == 100.0


def test_check_findings_and_gate() -> None:
    r = run("check", "--preset", "pcie-8gpu")
    assert r.exit_code == 0
    assert "XP502 warning" in r.output
    r = run("check", "--preset", "pcie-8gpu", "--fail-on", "warning")
    assert isinstance(r.exception, GateFailedError)
    assert r.exception.exit_code == 1
    r = run("check", "--preset", "dgx-h100", "--json", "-")
    doc = json.loads(r.output)
    assert doc["findings"] == []
    # a preset is a full description: every audit rule has its evidence and is clean
    audit_checks = [c for c in doc["checks"] if not c["name"].startswith("topology.consumer")]
    skip = {"topology.vm_flat", "topology.nvlink_links"}
    assert {c["status"] for c in audit_checks if c["name"] not in skip} == {"clean"}
    # whether each NVLink is up is not in a preset: not checked, never clean
    (nvl,) = [c for c in doc["checks"] if c["name"] == "topology.nvlink_links"]
    assert nvl["status"] == "not_checked"


@pytest.mark.parametrize(
    ("args", "error"),
    [
        ((), UsageError),
        (("--preset", "dgx-a100", "--cards-per-node", "8"), UsageError),
        (("--preset", "nope"), UsageError),
        (("--cards-per-node", "8", "--nic", "400"), UsageError),
        (("does-not-exist.yaml",), InputError),
    ],
)
def test_show_errors_are_xpuperf_errors(args: tuple[str, ...], error: type) -> None:
    r = run("show", *args)
    assert isinstance(r.exception, error)
    assert r.exception.exit_code == 2


def test_preset_name_as_file_points_to_preset_option() -> None:
    """`topo check dgx-a100` (plan takes --topology PRESET) said only "No such file"."""
    r = run("check", "dgx-a100")
    assert isinstance(r.exception, UsageError)
    assert str(r.exception) == "dgx-a100 is a preset name, not a file: use --preset dgx-a100"


def test_schema_keys_match_the_loader() -> None:
    s = json_schema()
    defs = s["$defs"]
    assert set(s["properties"]) == set(allowed_keys("cluster"))
    for kind in KEYS:
        if kind == "cluster":
            continue
        assert set(defs[kind]["properties"]) == set(allowed_keys(kind)), kind


@pytest.mark.parametrize("name", sorted(NODE_PRESETS))
def test_json_view_validates_against_schema(name: str) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.Draft202012Validator.check_schema(json_schema())
    jsonschema.validate(to_json_dict(preset(name, nodes=2)), json_schema())


def test_example_file_validates_against_schema() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    import yaml

    jsonschema.validate(yaml.safe_load((DATA / "cluster.yaml").read_text()), json_schema())
