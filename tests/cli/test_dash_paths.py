"""``-`` as a path: an output ``-`` is standard output (never a file named ``-``); an input
``-`` is standard input where a subcommand reads it, else a one-line refusal (exit 2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.cli.conftest import Run, pipe

DATA = Path(__file__).resolve().parent.parent / "data"
TOPO_M = DATA / "topology_import_nvsmi" / "14_topo_dgx1-v100-hybrid-cube-mesh-nv1-nv2-mlx5.txt"


def nccl_tests_output(alpha_us: float = 10.0, busbw_GBps: float = 100.0) -> str:
    """nccl-tests all_reduce output on 8 ranks, 1-64 MiB, written from t = α + 1.75·S / busbw
    (bus factor 2(n-1)/n = 1.75 for n = 8), so the fit must give back α and busbw."""
    head = (
        "# nThread 1 nGpus 8 minBytes 1048576 maxBytes 67108864 step: 2(factor) warmup iters: "
        "5 iters: 20 agg iters: 1 validation: 1 graph: 0\n#\n"
        "#       size         count      type   redop    root     time   algbw   busbw #wrong"
        "     time   algbw   busbw #wrong\n"
        "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)        "
        "    (us)  (GB/s)  (GB/s)\n"
    )
    rows = []
    for k in range(20, 27):
        size = 2**k
        t_us = alpha_us + 1.75 * size / (busbw_GBps * 1e3)
        alg = size / t_us / 1e3
        cols = f"{t_us:8.1f} {alg:7.2f} {alg * 1.75:7.2f}      0"
        rows.append(f"{size:12d} {size // 4:12d}     float     sum      -1 {cols} {cols}\n")
    return head + "".join(rows) + "# Avg bus bandwidth    : 90\n"


def test_calibrate_output_dash_is_stdout(xp: Run, tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "ar.txt").write_text(nccl_tests_output(), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    code, out, err = xp("calibrate", "ar.txt", "--max-lines", "1", "-o", "-")
    assert code == 0, err
    assert not (tmp_path / "-").exists()
    doc = yaml.safe_load(out)  # stdout is the YAML alone: no terminal summary mixed in
    assert doc["schema"] == "xpuperf.calibration/1"
    (fit,) = doc["fits"]
    assert fit["latency_us"] == pytest.approx(10.0, abs=0.1)
    assert fit["busbw_GBps"] == pytest.approx(100.0, rel=0.01)


def test_calibrate_two_outputs_on_stdout_are_refused(xp: Run, tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "ar.txt").write_text(nccl_tests_output(), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    code, out, err = xp("calibrate", "ar.txt", "-o", "-", "--json", "-")
    assert code == 2
    assert err.strip() == (
        "xpuperf: error: --output and --json both write to stdout (-); send one of them to a file"
    )
    assert out == ""
    assert not (tmp_path / "-").exists()


def test_topo_import_output_dash_is_stdout(xp: Run, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    code, out, err = xp("topo", "import", str(TOPO_M), "-o", "-")
    assert code == 0, err
    assert not (tmp_path / "-").exists()
    doc = yaml.safe_load(out)
    assert doc["schema"] == "xpuperf.topology/1"
    # the DGX-1 `nvidia-smi topo -m` matrix: one node of 8 cards; GPU0-GPU3 reads NV2
    (node,) = doc["nodes"]
    assert [d["index"] for d in node["devices"]] == list(range(8))
    assert {"a": 0, "b": 3, "kind": "nvlink", "count": 2} in node["links"]
    assert "wrote" not in err  # no "wrote -" line: nothing was written to a file


def test_calibrate_reads_stdin(xp: Run, monkeypatch) -> None:
    pipe(monkeypatch, nccl_tests_output())
    code, out, err = xp("calibrate", "-", "--max-lines", "1", "-o", "-")
    assert code == 0, err
    doc = yaml.safe_load(out)
    assert doc["sources"] == ["<stdin>"]
    (fit,) = doc["fits"]
    assert fit["latency_us"] == pytest.approx(10.0, abs=0.1)
    assert fit["busbw_GBps"] == pytest.approx(100.0, rel=0.01)


def test_topo_import_and_check_read_stdin(xp: Run, monkeypatch) -> None:
    pipe(monkeypatch, TOPO_M.read_text(encoding="utf-8"))
    code, out, err = xp("topo", "import", "-")
    assert code == 0, err
    assert "#   <stdin>: nvidia-smi" in out  # the header names where it came from
    (node,) = yaml.safe_load(out)["nodes"]
    assert {"a": 0, "b": 3, "kind": "nvlink", "count": 2} in node["links"]  # GPU0-GPU3: NV2
    pipe(monkeypatch, TOPO_M.read_text(encoding="utf-8"))
    code, out, err = xp("topo", "check", "-", "--json", "-")
    assert code == 0, err
    assert json.loads(out)["inputs"] == ["<stdin>"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["analyze", "run.csv", "--baseline", "-"],
         "--baseline -: `xpuperf analyze` reads standard input only as LOGS, not as --baseline"),
        (["compare", "-", "run.csv"], "BASE -: `xpuperf compare` does not read standard input"),
        (["ingest", "-", "-o", "ds"], "LOGS -: `xpuperf ingest` does not read standard input"),
        (["plan", "--topology", "-"], "--topology -: `xpuperf plan` does not read standard input"),
        (["plan", "--measured", "8=-", "--model", "resnet50"],
         "--measured -: `xpuperf plan` does not read standard input"),
        (["calibrate", "run.csv", "--topology", "-"],
         "--topology -: `xpuperf calibrate` reads standard input only as FILES, not as "
         "--topology"),
        (["topo", "check", "run.csv", "--binding", "-"],
         "--binding -: `xpuperf topo check` reads standard input only as FILES, not as --binding"),
    ],
)  # fmt: skip
def test_dash_where_stdin_is_not_read_is_refused(xp: Run, monkeypatch, argv, message) -> None:
    pipe(monkeypatch, "step,step_time_s\n1,0.1\n")  # something piped in: still not read there
    code, out, err = xp(*argv)
    assert (code, out) == (2, "")
    assert err == f"xpuperf: error: {message}; save it to a file and give that file's path\n"
