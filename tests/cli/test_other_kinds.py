"""`analyze` on a file that is not a step log says what it is and which subcommand reads it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from xpuperf.kinds import other_kind

DATA = Path(__file__).resolve().parent.parent / "data"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "xpuperf", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize(
    ("path", "kind", "command"),
    [
        (
            "topology_import_nvsmi/14_topo_dgx1-v100-hybrid-cube-mesh-nv1-nv2-mlx5.txt",
            "nvidia-smi topo -m",
            "xpuperf topo check",
        ),
        (
            "topology_import_numactl/24_numa_metax-host-numactl-hardware-8node-asymmetric-"
            "distances.txt",
            "numactl -H",
            "xpuperf topo check",
        ),
        (
            "calibrate_crossnic0_partial/42_nccltests_crossnic0-4gpu-per-node-no-preamble-"
            "partial-row.txt",
            "nccl-tests",
            "xpuperf calibrate",
        ),
        (  # not a topology either: the pointer names the dump that is
            "topology_import_ncclgraph/61_graph_nccl-2.18-graph-dump-ring-tree-4gpu.txt",
            "NCCL graph dump",
            "NCCL_TOPO_DUMP_FILE",
        ),
    ],
)
def test_not_a_step_log_names_the_subcommand(path: str, kind: str, command: str) -> None:
    p = run("analyze", str(DATA / path))
    assert p.returncode == 2
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1, p.stderr  # one line, no traceback
    assert "not a step log" in lines[0]
    assert kind in lines[0]
    assert command in lines[0]


def test_unknown_text_lists_what_analyze_reads(tmp_path: Path) -> None:
    f = tmp_path / "notes.txt"
    f.write_text("hello\nthis is not a log\n", encoding="utf-8")
    assert other_kind(f) is None
    p = run("analyze", str(f))
    assert p.returncode == 2
    (line,) = p.stderr.strip().splitlines()
    assert "cannot tell the format" in line
    assert "NCCL_DEBUG=INFO logs" in line
    assert "`xpuperf topo import`" in line


def test_clean_step_log_lists_checks_without_evidence(tmp_path: Path) -> None:
    # 2 ranks × 30 steps of 1.0 s, step time only: no straggler verdict (step time is equalised
    # by the allreduce), no NCCL lines, no baseline — each said as "not_checked", none as clean.
    rows = ["rank,step,step_time_s,samples"]
    rows += [f"{r},{s},1.0,32" for r in range(2) for s in range(30)]
    f = tmp_path / "run.csv"
    f.write_text("\n".join(rows) + "\n", encoding="utf-8")
    p = run("analyze", str(f), "--warmup", "0", "--json", "-")
    assert p.returncode == 0, p.stderr
    status = {c["name"]: c["status"] for c in json.loads(p.stdout)["checks"]}
    assert status["steps.stragglers"] == "not_checked"
    assert status["steps.speedup"] == "not_checked"
    assert status["nccl"] == "not_checked"
    assert status["steps.data_wait"] == "not_checked"
    assert status["steps.jitter"] == "clean"  # 30 equal steps: the flat line is evidenced
    assert status["steps.completeness"] == "clean"
    p = run("analyze", str(f), "--warmup", "0")
    assert "not checked" in p.stdout
    assert "stragglers: not checked" in p.stdout


@pytest.mark.parametrize(
    ("args", "reader", "kind", "command"),
    [
        (
            ["calibrate", "stalls_tfcnn_horovod/horovod_4rank_stall.log"],
            "xpuperf calibrate",
            "tf_cnn_benchmarks training log",
            "xpuperf analyze",
        ),
        (
            [
                "calibrate",
                "topology_import_nvsmi/14_topo_dgx1-v100-hybrid-cube-mesh-nv1-nv2-mlx5.txt",
            ],
            "xpuperf calibrate",
            "nvidia-smi topo -m",
            "xpuperf topo check",
        ),
        (
            ["topo", "import", "calibrate_single_4090/all_reduce_28MiB_4x4090.txt"],
            "xpuperf topo",
            "nccl-tests output",
            "xpuperf calibrate",
        ),
        (
            ["topo", "check", "scaling_markdown_intra/table.md"],
            "xpuperf topo",
            "scaling table",
            "xpuperf analyze",
        ),
    ],
)
def test_other_subcommands_point_to_the_right_one(
    args: list[str], reader: str, kind: str, command: str
) -> None:
    p = run(*args[:-1], str(DATA / args[-1]))
    assert p.returncode == 2
    (line,) = p.stderr.strip().splitlines()
    assert f"not an input for `{reader}`" in line
    assert kind in line
    assert command in line


# Step logs handed to calibrate / topo (issue 16 QA): before, calibrate said "is this nccl-tests
# output?" and topo check "a topology description is a mapping" or "not valid YAML".
STEP_CSV = "step,rank,step_time_ms,compute_ms\n0,0,248.1,202.6\n0,1,243.2,198.5\n1,0,247.9,201.0\n"
STEP_JSONL = '{"step": 1, "rank": 0, "samples_per_sec": 512.0}\n{"step": 2, "rank": 0, "samples_per_sec": 510.5}\n'  # noqa: E501
# Lightning 2.x console output (stderr and a tqdm bar, 2>&1), no step records of a format: a
# validation bar is not a training bar (the tqdm reader reads training bars only)
LIGHTNING = (
    "GPU available: True (cuda), used: True\n"
    "Initializing distributed: GLOBAL_RANK: 0, MEMBER: 1/2\n"
    "Validation DataLoader 0:  10%|█         | 10/100 [00:02<00:18,  5.00it/s]\n"
)
LIGHTNING_TRAIN = LIGHTNING.replace("Validation DataLoader 0", "Epoch 0")


@pytest.mark.parametrize(
    ("name", "text", "kind"),
    [
        ("steps.csv", STEP_CSV, "a step log (CSV with columns step, step_time_ms)"),
        (
            "steps.tsv",
            STEP_CSV.replace(",", "\t"),
            "a step log (TSV with columns step, step_time_ms)",
        ),
        ("steps.jsonl", STEP_JSONL, "a step log (JSON Lines with columns step, samples_per_sec)"),
        ("train.log", LIGHTNING, "a training log (framework output)"),
        ("train.log", LIGHTNING_TRAIN, "a tqdm training log"),
    ],
)
@pytest.mark.parametrize("args", [["calibrate"], ["topo", "check"], ["topo", "import"]])
def test_step_logs_point_to_analyze(
    tmp_path: Path, name: str, text: str, kind: str, args: list[str]
) -> None:
    f = tmp_path / name
    f.write_text(text, encoding="utf-8")
    p = run(*args, str(f))
    assert p.returncode == 2
    (line,) = p.stderr.strip().splitlines()
    assert f"this is {kind}: read it with `xpuperf analyze {f}`" in line


def test_a_csv_without_step_and_time_is_no_step_log(tmp_path: Path) -> None:
    f = tmp_path / "hosts.csv"
    f.write_text("host,ip\nnode1,10.0.0.1\n", encoding="utf-8")
    assert other_kind(f) is None
