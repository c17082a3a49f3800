"""Regressions from the issue-4 break-it pass: hostile binding files, descriptions and tool outputs
that used to crash (exit 3), hang, or be accepted silently now give one InputError/UsageError.

Each case names what used to happen. Topology for binding cases: corpus 14 (DGX-1V ``nvidia-smi
topo -m``: 8 cards, cards 0-3 on NUMA 0 = CPUs 0-11,24-35, cards 4-7 on NUMA 1).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from xpuperf.cli.app import main
from xpuperf.errors import InputError
from xpuperf.topology.binding import read_binding
from xpuperf.topology.binding.audit import check
from xpuperf.topology.importers import import_files, load_any
from xpuperf.topology.loader import load

ROOT = Path(__file__).resolve().parents[1] / "data"
T14 = next((ROOT / "topology_import_nvsmi").glob("14_*"))
HUGE = "9" * 5000  # more digits than int() converts (Python's 4300-digit limit)
HEAD = "schema: xpuperf.topology/1\nnodes:\n  - name: a\n"


@pytest.mark.parametrize(
    ("name", "text", "match"),
    [
        # RecursionError from json.loads (exit 3)
        ("deep.json", '{"rank": 0, "cpus": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested too"),
        # ValueError from int() in the YAML/JSON parser (exit 3)
        ("huge.json", '[{"rank": 0, "cpus": ' + HUGE + "}]", "too many digits"),
        ("huge.yaml", "- {rank: 0, cpus: " + HUGE + "}\n", "too many digits"),
        # shlex ValueError (exit 3)
        ("q1.yaml", 'launcher: t\ncommand: "torchrun \'x --numa-binding=node"\n', "cannot split"),
        (
            "q2.yaml",
            'launcher: x\nlocal_ranks: ["numactl \'-N 0"]\n',
            r"q2.yaml:2: local_ranks\[0\]",
        ),
        # '²'.isdigit() is True but int('²') fails (exit 3)
        ("sup.csv", "rank,cpus\n\u00b2,0-3\n", r"sup.csv:2: rank must be a whole number"),
        ("sup.yaml", "launcher: t\nnuma_binding: node\nnproc_per_node: '\u00b2'\n", "nproc_per"),
        # accepted: 0 processes per node
        ("n0.yaml", "launcher: t\nnuma_binding: node\nnproc_per_node: 0\n", "whole number >= 1"),
        # message paths: "ranks[0]rank", and ": give …" with an empty path in CSV rows
        ("p.yaml", "- {rank: true, cpus: '0'}\n", r"p.yaml:1: ranks\[0\]\.rank must be"),
        ("p.csv", "rank,cpus\n0,\n", r"p.csv:2: give exactly one of cpus"),
    ],
)
def test_hostile_binding_file_is_refused(tmp_path: Path, name: str, text: str, match: str) -> None:
    f = tmp_path / name
    f.write_text(text, encoding="utf-8")
    with pytest.raises(InputError, match=match):
        read_binding(f)


def test_nproc_per_node_is_checked_against_the_topology(tmp_path: Path) -> None:
    cluster = load_any(T14)  # 8 ranks on one node
    f = tmp_path / "l.yaml"
    f.write_text("launcher: torchrun\nnuma_binding: node\nnproc_per_node: 1000\n")
    with pytest.raises(InputError, match="nproc_per_node 1000 but the topology places at most 8"):
        check(cluster, read_binding(f))
    f.write_text("launcher: torchrun\nnuma_binding: node\nnproc_per_node: 4\n")
    bf = read_binding(f)
    check(cluster, bf)
    assert any("nproc_per_node 4 but the topology places 8" in n for n in bf.notes)


def test_csv_with_byte_order_mark_is_read(tmp_path: Path) -> None:
    f = tmp_path / "excel.csv"
    f.write_text("\ufeffrank,cpus\n0,0-11\n", encoding="utf-8")  # Excel's "CSV UTF-8"
    bf = read_binding(f)
    assert (bf.format, bf.entries[0].rank, bf.entries[0].cpus) == ("cpus", 0, tuple(range(12)))


@pytest.mark.parametrize(
    ("body", "match"),
    [
        # NaN passed every "> 0" check and reached the model (shown as "nan Gb/s")
        ("    devices: {count: 1}\n    nics: [{name: n, speed_Gbps: .nan}]\n",
         r"nodes\[0\]\.nics\[0\]\.speed_Gbps: must be a finite number"),
        ("    sys_bw_GBps: .inf\n    devices: {count: 2}\n", "sys_bw_GBps: must be a finite"),
        ("    devices: {count: 1, peak_tflops: .nan}\n", "peak_tflops: must be a finite"),
        # a NUMA count of 1e8 built 1e8 NumaNode objects (minutes, gigabytes)
        ("    numa_nodes: 100000000\n    devices: {count: 1}\n", "must be <= 1024 NUMA nodes"),
        # int('²') in parse_cpus leaked Python's "invalid literal for int()" text
        ("    numa_nodes: [{id: 0, cpus: '\u00b2'}]\n    devices: {count: 1}\n",
         r"cpus: bad CPU range '\u00b2'"),
        # an 11-digit NVLink count was accepted (2e12 GB/s between two cards)
        ("    devices: {count: 2}\n    links: [{a: 0, b: 1, kind: nvlink, count: 99999999999}]\n",
         r"links\[0\]\.count: must be <= 1000 links"),
        # ValueError from the YAML int constructor (exit 3)
        ("    devices: {count: " + HUGE + "}\n", "too many digits"),
    ],
)  # fmt: skip
def test_hostile_description_value_is_refused(tmp_path: Path, body: str, match: str) -> None:
    f = tmp_path / "t.yaml"
    f.write_text(HEAD + body, encoding="utf-8")
    with pytest.raises(InputError, match=match):
        load(f)


def test_nan_oversubscription_is_refused(tmp_path: Path) -> None:
    f = tmp_path / "t.yaml"
    f.write_text(
        HEAD.replace("nodes:", "network: {oversubscription: .nan}\nnodes:") + "    devices: 1\n"
    )
    with pytest.raises(InputError, match=r"network\.oversubscription: must be a finite number"):
        load(f)


NV = "\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\nGPU0\t X \tNV2\t0-3\t0\nGPU1\tNV2\t X \t4-7\t1\n"
NUMA_H = (
    "available: 2 nodes (0-1)\nnode 0 cpus: 0 1 2 3\nnode 0 size: 1000 MB\nnode 0 free: 1 MB\n"
    "node 1 cpus: 4 5 6 7\nnode 1 size: 1000 MB\nnode 1 free: 1 MB\nnode distances:\n"
    "node   0   1 \n"
)


@pytest.mark.parametrize(
    ("rows", "match"),
    [
        # rows that did not match the row pattern were skipped: node 0 lost its distances silently
        ("  0:  10  -20 \n  1:  20  10 \n", r"numa.txt:10: distance row 0: cannot read '-20'"),
        ("  0:  10  nan \n  1:  20  10 \n", r"numa.txt:10: distance row 0: cannot read 'nan'"),
        ("  0:  10  20 \n  1:  20  10 \n  2:  20  10 \n", r"numa.txt:12: distance row 2 but the"),
    ],
)
def test_bad_numactl_distance_rows_are_refused(tmp_path: Path, rows: str, match: str) -> None:
    (tmp_path / "nv.txt").write_text(NV)
    (tmp_path / "numa.txt").write_text(NUMA_H + rows)
    with pytest.raises(InputError, match=match):
        import_files([tmp_path / "nv.txt", tmp_path / "numa.txt"])


def test_missing_numactl_distance_row_is_noted(tmp_path: Path) -> None:
    (tmp_path / "nv.txt").write_text(NV)
    (tmp_path / "numa.txt").write_text(NUMA_H + "  0:  10  20 \n")
    res = import_files([tmp_path / "nv.txt", tmp_path / "numa.txt"])
    numa = {n.id: n.distances for n in res.cluster.nodes[0].numa_nodes}
    assert numa == {0: (10, 20), 1: ()}
    assert any("no row for node(s) 1" in n for n in res.notes)


@pytest.mark.parametrize(
    ("name", "text", "match"),
    [
        # '²'.isdigit() (exit 3 in nvidia-smi NUMA Affinity and rank-table device ids)
        ("nv.txt", NV.replace("\t1\n", "\t\u00b2\n"), None),
        ("rt.json", '{"version": "1.0", "server_count": "1", "server_list": [{"server_id": "a", '
         '"device": [{"device_id": "\u00b2", "device_ip": "x", "rank_id": "0"}]}], '
         '"status": "completed"}', "device_id: expected an integer"),
        # a DOCTYPE in front of <system> made the file unrecognised ("a topology description
        # is a mapping …") instead of the documented refusal
        ("x.xml", '<?xml version="1.0"?><!DOCTYPE s [<!ENTITY a "aa">]><system version="1">'
         '<cpu numaid="0">&a;</cpu></system>', "DOCTYPE or ENTITY declaration is refused"),
    ],
)  # fmt: skip
def test_hostile_tool_output(tmp_path: Path, name: str, text: str, match: str | None) -> None:
    f = tmp_path / name
    f.write_text(text, encoding="utf-8")
    if match is None:  # an unreadable NUMA affinity is treated as unknown, not a crash
        assert load_any(f).nodes[0].devices[1].numa_node is None
        return
    with pytest.raises(InputError, match=match):
        load_any(f)


def test_empty_json_option_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    # --json "" used to be ignored silently (picture printed, exit 0)
    with pytest.raises(SystemExit) as e:
        main(["topo", "show", "--preset", "dgx-a100", "--json", ""])
    assert e.value.code == 2
    assert "--json needs a file name" in capsys.readouterr().err
