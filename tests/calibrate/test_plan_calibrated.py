"""``xpuperf calibrate -o`` feeding ``xpuperf plan``: topology key, exact fits, calibrated levels.

Expected values are read off the real nccl-tests output (corpus file 19, 2 × p4d.24xlarge,
16 × A100, EFA) or worked out by hand from formulas.md §1–2, not from the code under test.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from xpuperf.calibrate.render import topology_ref
from xpuperf.cli.app import main
from xpuperf.costmodel import calibrated
from xpuperf.costmodel.comm import cluster_levels
from xpuperf.costmodel.estimate import Planner, Settings
from xpuperf.costmodel.workloads import even_split
from xpuperf.errors import InputError
from xpuperf.topology import presets
from xpuperf.topology.loader import load

from .conftest import DATA, FILES

P4D = DATA / "plan_p4d" / "p4d-24xlarge.yaml"
# corpus 19, all_reduce on 16 ranks / 2 nodes: (out-of-place, in-place) time in µs per size;
# the calibration fits the smaller of the two ("best")
MEASURED_US = {67_108_864: min(5305.9, 5301.1), 1_073_741_824: min(47392, 47420)}


def _cli(capsys, *args) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as ex:
        main([str(a) for a in args])
    out, err = capsys.readouterr()
    return ex.value.code, out, err


@pytest.fixture(scope="module")
def cal_file(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("cal") / "calibrated.yaml"
    with pytest.raises(SystemExit) as ex:
        main(["calibrate", str(FILES["p4d_old"]), "--topology", str(P4D), "-o", str(out), "-q"])
    assert ex.value.code == 0
    return out


def test_topology_key_is_relative_to_the_calibration(cal_file, tmp_path):
    doc = yaml.safe_load(cal_file.read_text())
    assert (cal_file.parent / doc["topology"]).resolve() == P4D.resolve()
    assert not Path(doc["topology"]).is_absolute()
    cal = calibrated.load(cal_file)
    assert Path(cal.topology_ref()).resolve() == P4D.resolve()
    # a preset is recorded by name; a file relative to where the calibration is written
    assert topology_ref("dgx-a100", tmp_path / "c.yaml") == "dgx-a100"
    assert topology_ref(str(P4D), DATA / "c.yaml") == "plan_p4d/p4d-24xlarge.yaml"


@pytest.mark.parametrize(
    ("size", "params", "bucket_mb"),
    [(67_108_864, 16_777_216, 64), (1_073_741_824, 268_435_456, 1024)],
)
def test_plan_reproduces_measured_allreduce(cal_file, capsys, tmp_path, size, params, bucket_mb):
    """One bucket of exactly ``size`` bytes (fp32 params in one Horovod fusion buffer) on the 16
    cards / 2 nodes the file measured: the plan's allreduce time is the measured one, within the
    calibration's own held-out accuracy (and within 2 %: the fit's residual at these sizes)."""
    assert params * 4 == size
    out = tmp_path / "plan.json"
    code, _, err = _cli(capsys, "plan", "--topology", cal_file, "--cards", "1,16", "--params",
                        params, "--framework", "horovod", "--bucket-mb", bucket_mb,
                        "--step-time", "0.1", "--json", out, "-q")  # fmt: skip
    assert code == 0, err
    doc = json.loads(out.read_text())
    p16 = next(p for p in doc["scaling"] if p["cards"] == 16)
    assert p16["n_buckets"] == 1
    assert p16["nodes"] == 2
    assert p16["algorithm"] == "calibrated"
    accuracy = yaml.safe_load(cal_file.read_text())["fits"][0]["accuracy"]
    rel = p16["comm_s"] / (MEASURED_US[size] * 1e-6) - 1
    assert abs(rel) <= accuracy["busbw_max_err_ge_1MiB"]
    assert abs(rel) <= 0.02
    assert any("calibrated from" in a and str(cal_file) in a for a in doc["assumptions"])


def test_calibrated_levels_by_hand(cal_file):
    """Other counts use the levels: plateau 45.01 GB/s → node NICs; floor 174.2 µs → Δ per
    network step. Hand derivation (formulas.md §2, NCCL latencies):

    - Δ: at 16 ranks / 2 nodes every candidate has 2 network steps; the smallest default latency
      is tree/LL = 6.8 + 2·(7·0.6) + 2·5.0 = 25.2 µs, so Δ = (174.2 − 25.2)/2 = 74.5 µs.
    - card share: 100 Gb/s EFA shared by 2 cards = 6.25 GB/s × 45.01/50.
    - ring at 32 cards (4 nodes), 64 MiB, node-contiguous: 2·31 steps, 6 of them cross nodes;
      per protocol p: lat = base + 56·intra + 6·(net + 74.5), time = lat + 2·31/32·S/(45.01e9·eff)
      with (base, intra, net, eff) LL (6.6, 0.6, 2.7, 1/4), LL128 (14, 1.9, 4.0, 0.92),
      Simple (8.4, 3.4, 14, 1) and Simple's latency × 1.4 (A100, large message): the fastest.
    """
    cal = calibrated.load(cal_file)
    cluster = load(P4D)
    lv = cluster_levels(cluster, calibration=cal)
    assert lv.net_latency_extra_us == pytest.approx(74.5, abs=1e-9)
    assert lv.node_net_bw_GBps == pytest.approx(45.01)
    assert lv.card_net_bw_GBps == pytest.approx(6.25 * 45.01 / 50)
    assert lv.intra_bw_GBps == pytest.approx(240.0)  # NVSwitch: the network is the bottleneck
    s = 67_108_864
    by_hand = []
    for base, intra, net, eff, plateau in ((6.6, 0.6, 2.7, 1 / 4, 1), (14, 1.9, 4.0, 0.92, 1),
                                           (8.4, 3.4, 14.0, 1.0, 1.4)):  # fmt: skip
        lat_us = (base + 56 * intra + 6 * (net + 74.5)) * plateau
        by_hand.append(lat_us * 1e-6 + 2 * 31 / 32 * s / (45.01e9 * eff))
    pl = Planner(cluster, even_split(s // 4), 0.1, calibration=cal)
    p = pl.point(32, Settings(algorithm="ring", framework="horovod", bucket_mb=64))
    assert p.comm_s == pytest.approx(min(by_hand), rel=1e-9)
    # an explicit algorithm at the measured count uses the levels too, not the fit
    p16 = pl.point(16, Settings(algorithm="ring", framework="horovod", bucket_mb=64))
    assert p16.algorithm == "ring"


def test_intra_level_by_hand(tmp_path):
    """A one-node fit (8 × A100, busbw 232.5 GB/s — the measured DGX-A100 figure of formulas.md
    §2 — floor 29 µs) on dgx-a100: intra ring 240 → 232.5 GB/s; Δ_i: ring/LL on one node has
    base 6.6 + 14 × 0.6 = 15.0 µs (tree/LL 15.2), 14 intra steps → Δ_i = (29 − 15)/14 = 1.0 µs."""
    f = tmp_path / "one.yaml"
    f.write_text(yaml.safe_dump({
        "schema": "xpuperf.calibration/1", "topology": "dgx-a100",
        "levels": {"intra": {"latency_us": 29.0, "busbw_GBps": 232.5,
                             "from": {"collective": "all_reduce", "ranks": 8, "nodes": 1}}},
        "fits": [{"collective": "all_reduce", "ranks": 8, "nodes": 1, "bus_factor": 1.75,
                  "latency_us": 29.0, "busbw_GBps": 232.5, "latency_floor_observed": True,
                  "lines": [{"alpha_us": 29.0, "busbw_GBps": 232.5}]}],
    }))  # fmt: skip
    cal = calibrated.load(f)
    lv = cluster_levels(presets.preset("dgx-a100", 2), calibration=cal)
    assert lv.intra_bw_GBps == pytest.approx(232.5)
    assert lv.intra_latency_extra_us == pytest.approx(1.0)
    assert lv.node_net_bw_GBps == pytest.approx(192.0)  # no net level: topology kept


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--topology", "eflops"], "8 ranks on each node, but the topology has 4 cards"),
        (["--cards-per-node", "4"], "8 ranks on each node, but the topology has 4 cards"),
    ],
)
def test_calibration_that_does_not_fit_the_cluster(cal_file, capsys, extra, message):
    code, _, err = _cli(capsys, "plan", "--calibration", cal_file, *extra, "--model", "resnet50",
                        "--step-time", "0.1", "--cards", "16")  # fmt: skip
    assert code == 2
    assert message in err
    assert len(err.strip().splitlines()) == 1


def test_contradictions_exit_2(cal_file, capsys, tmp_path):
    # what `calibrate -o` writes without --topology: the same document without the key
    bare = tmp_path / "bare.yaml"
    doc = yaml.safe_load(cal_file.read_text())
    del doc["topology"]
    bare.write_text(yaml.safe_dump(doc, sort_keys=False))
    moved = tmp_path / "moved.yaml"  # a calibration whose topology file is not where it says
    doc["topology"] = "../nowhere/p4d.yaml"
    moved.write_text(yaml.safe_dump(doc, sort_keys=False))
    common = ["--model", "resnet50", "--step-time", "0.1", "--cards", "16", "-q"]
    for args, msg in (
        (["--topology", bare], "names no topology"),
        (["--calibration", bare], "names no topology"),
        (["--topology", cal_file, "--calibration", bare], "is a calibration file"),
        (["--topology", "dgx-a100", "--calibration", P4D], "not a calibration file"),
        (["--calibration", tmp_path / "missing.yaml"], "no such calibration file"),
        (["--topology", cal_file, "--json", cal_file], "one of the inputs"),
        (["--topology", moved], "(relative to this file) does not exist"),
    ):
        code, _, err = _cli(capsys, "plan", *args, *common)
        assert code == 2, (args, err)
        assert msg in err, (args, err)
        assert "Traceback" not in err
        assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("edit", "msg"),
    [
        ({"fits": 5}, "fits must be a list"),
        ({"levels": 3}, "levels must be a mapping"),
        ({"levels": {"net": {"from": 7}}}, "levels.net.from must be a mapping"),
        ({"fits": [{"lines": 5}]}, "fits[0].lines must be a list"),
        ({"fits": [{"ranks": float("inf")}]}, "ranks and nodes must be integers"),
        ({"fits": [{"ranks": 0}]}, "ranks and nodes must be >= 1"),
        ({"fits": [{"accuracy": 3}]}, "fits[0].accuracy must be a mapping"),
    ],
)
def test_malformed_calibration_is_an_input_error(cal_file, tmp_path, edit, msg):
    """Hand-edited files with the wrong shapes (a break-it pass found a TypeError, exit 3)."""
    doc = yaml.safe_load(cal_file.read_text())
    if "fits" in edit and isinstance(edit["fits"], list):
        doc["fits"] = [{**doc["fits"][0], **edit["fits"][0]}]
    else:
        doc.update(edit)
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(doc, sort_keys=False))
    with pytest.raises(InputError) as e:
        calibrated.load(bad)
    assert msg in str(e.value)


def test_any_topology_with_calibration(cal_file, capsys):
    """``--topology PRESET --calibration FILE``: the preset's nodes get the measured network."""
    code, out, err = _cli(capsys, "plan", "--topology", "dgx-a100", "--calibration", cal_file,
                          "--model", "resnet50", "--step-time", "0.1", "--cards", "16,64",
                          "--json", "-")  # fmt: skip
    assert code == 0, err
    doc = json.loads(out)
    assert doc["scaling"][0]["algorithm"] == "calibrated"
    # dgx-a100: 8 × 24 GB/s of NICs → the measured 45.01 GB/s per node
    assert any("45.01 GB/s per node" in a for a in doc["assumptions"])
