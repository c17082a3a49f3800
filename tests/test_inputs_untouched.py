"""Inputs are never modified; outputs never overwrite an input; writes are atomic.

Every subcommand runs through ``xpuperf.cli.app.main`` on copies of real inputs (the bundled
samples and real tool outputs in tests/data); afterwards every input file has the same sha256,
size and mtime as before, and no stray file appeared next to it. An output path equal to an input
is refused with exit 2 before anything is read or written. An interrupted write (the renderer
raising, ``os.replace`` failing, Ctrl-C mid-write in a child process) leaves neither a partial
target nor a temp file.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from xpuperf.cli.app import main

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
NCCL = "17_nccltests_k8s-mpijob-2node-16xh100-orted-launch.txt"
NVSMI = "14_topo_dgx1-v100-hybrid-cube-mesh-nv1-nv2-mlx5.txt"
NUMACTL = "24_numa_metax-host-numactl-hardware-8node-asymmetric-distances.txt"


@pytest.fixture
def inputs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Copies of real inputs in ``tmp_path/in``; outputs go to ``tmp_path/out``."""
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    monkeypatch.setenv("COLUMNS", "120")
    src = tmp_path / "in"
    src.mkdir()
    shutil.copytree(ROOT / "sample_logs/slow_rank_16rank", src / "run")
    shutil.copy(ROOT / "sample_logs/single_card/baseline.csv", src / "baseline.csv")
    shutil.copy(ROOT / "sample_logs/healthy_8rank/steps.csv", src / "healthy.csv")
    shutil.copy(DATA / "topology_example/cluster.yaml", src / "cluster.yaml")
    shutil.copy(DATA / "calibrate_k8s_h100" / NCCL, src / NCCL)
    shutil.copy(DATA / "topology_import_nvsmi" / NVSMI, src / NVSMI)
    shutil.copy(DATA / "topology_import_numactl" / NUMACTL, src / NUMACTL)
    with (src / "run.csv.gz").open("wb") as fh:  # a gzip input too
        import gzip

        fh.write(gzip.compress((src / "healthy.csv").read_bytes(), mtime=0))
    (tmp_path / "out").mkdir()
    for p in src.rglob("*"):  # old mtimes: a rewrite of the same bytes would still show
        os.utime(p, ns=(1_000_000_000_000_000_000, 1_000_000_000_000_000_000))
    return src


def _snapshot(folder: Path) -> dict[str, tuple[str, int, int, int]]:
    """path → (sha256, size, mtime_ns, mode) of every file and folder below ``folder``."""
    out = {}
    for p in sorted(folder.rglob("*")):
        st = p.stat()
        digest = hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
        out[str(p.relative_to(folder))] = (digest, st.st_size, st.st_mtime_ns, st.st_mode)
    return out


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    with pytest.raises(SystemExit) as e:
        main(argv)
    return int(e.value.code), capsys.readouterr().err


def _commands(i: Path, o: Path) -> list[list[str]]:
    return [
        ["analyze", str(i / "run"), "--baseline", str(i / "baseline.csv"), "-q",
         "--json", str(o / "a.json"), "--html", str(o / "a.html"), "--markdown", str(o / "a.md")],
        ["analyze", str(i / "run.csv.gz"), "--json", str(o / "gz.json"), "-q",
         "--fail-on", "stragglers>100"],
        ["compare", str(i / "healthy.csv"), str(i / "run"), "-q", "--json", str(o / "c.json"),
         "--markdown", str(o / "c.md"), "--html", str(o / "c.html")],
        ["calibrate", str(i / NCCL), "--topology", str(i / "cluster.yaml"), "-q",
         "-o", str(o / "cal.yaml"), "--json", str(o / "cal.json")],
        ["plan", "--topology", str(i / "cluster.yaml"), "--cards", "8,32", "--model", "resnet50",
         "--step-time", "0.3", "-q", "--json", str(o / "p.json"), "--html", str(o / "p.html")],
        ["plan", "--topology", str(i / "cluster.yaml"), "--cards", "8,32", "--model", "resnet50",
         "--from-log", str(i / "healthy.csv"), "-q", "--json", str(o / "p2.json")],
        ["topo", "show", str(i / "cluster.yaml"), "--json", str(o / "t.json")],
        ["topo", "show", str(i / NVSMI)],
        ["topo", "check", str(i / "cluster.yaml"), "--json", str(o / "tc.json")],
        ["topo", "import", str(i / NVSMI), str(i / NUMACTL), "-o", str(o / "imported.yaml")],
        ["formats"],
    ]  # fmt: skip


def test_every_command_leaves_its_inputs_untouched(
    inputs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = inputs.parent / "out"
    before = _snapshot(inputs)
    for argv in _commands(inputs, out):
        code, err = _run(argv, capsys)
        assert code == 0, (argv, err)
    assert _snapshot(inputs) == before
    written = sorted(p.name for p in out.iterdir())
    assert written == sorted(
        [
            "a.json",
            "a.html",
            "a.md",
            "gz.json",
            "c.json",
            "c.md",
            "c.html",
            "cal.yaml",
            "cal.json",
            "p.json",
            "p.html",
            "p2.json",
            "t.json",
            "tc.json",
            "imported.yaml",
        ]
    )  # fmt: skip  — every output, and no temp file beside them
    assert json.loads((out / "a.json").read_text())["schema"] == "xpuperf.analyze/1"


def _over_input(i: Path) -> list[tuple[list[str], Path]]:
    """(command, the input it names as output)."""
    return [
        (["analyze", str(i / "run"), "-q", "--json", str(i / "run/rank3.jsonl")],
         i / "run/rank3.jsonl"),
        (["analyze", str(i / "run"), "-q", "--html", str(i / "run")], i / "run"),
        (["analyze", str(i / "healthy.csv"), "--baseline", str(i / "baseline.csv"), "-q",
          "--markdown", str(i / "baseline.csv")], i / "baseline.csv"),
        (["compare", str(i / "healthy.csv"), str(i / "run"), "-q", "--json",
          str(i / "healthy.csv")], i / "healthy.csv"),
        (["calibrate", str(i / NCCL), "-q", "-o", str(i / NCCL)], i / NCCL),
        (["calibrate", str(i / NCCL), "--topology", str(i / "cluster.yaml"), "-q", "--json",
          str(i / "cluster.yaml")], i / "cluster.yaml"),
        (["plan", "--topology", str(i / "cluster.yaml"), "--cards", "8,32", "--model",
          "resnet50", "--step-time", "0.3", "-q", "--json", str(i / "cluster.yaml")],
         i / "cluster.yaml"),
        (["topo", "show", str(i / "cluster.yaml"), "--json", str(i / "cluster.yaml")],
         i / "cluster.yaml"),
        (["topo", "check", str(i / "cluster.yaml"), "--json", str(i / "cluster.yaml")],
         i / "cluster.yaml"),
        (["topo", "import", str(i / NVSMI), "-o", str(i / NVSMI)], i / NVSMI),
        # a break-it pass: glob patterns and plan --from-log were not counted as inputs
        (["analyze", str(i / "run/rank*.jsonl"), "-q", "--html", str(i / "run/rank0.jsonl")],
         i / "run/rank0.jsonl"),
        (["compare", str(i / "healthy.csv"), str(i / "run/*.jsonl"), "-q", "--json",
          str(i / "run/rank1.jsonl")], i / "run/rank1.jsonl"),
        (["plan", "--from-log", str(i / "run"), "--model", "resnet50", "--cards", "8", "-q",
          "--html", str(i / "run/rank0.jsonl")], i / "run/rank0.jsonl"),
        (["plan", "--from-log", str(i / "run/rank*.jsonl"), "--model", "resnet50", "--cards",
          "8", "-q", "--markdown", str(i / "run/rank2.jsonl")], i / "run/rank2.jsonl"),
    ]  # fmt: skip


def test_output_over_an_input_is_refused(inputs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = _snapshot(inputs)
    for argv, target in _over_input(inputs):
        code, err = _run(argv, capsys)
        assert code == 2, (argv, err)
        assert err.count("\n") == 1, err
        assert f"refusing to write {target}: it is one of the inputs" in err, err
    assert _snapshot(inputs) == before


def test_output_through_a_symlink_to_an_input_is_refused(
    inputs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    link = inputs.parent / "out" / "report.json"
    link.symlink_to(inputs / "healthy.csv")
    before = _snapshot(inputs)
    code, err = _run(["analyze", str(inputs / "healthy.csv"), "-q", "--json", str(link)], capsys)
    assert code == 2, err
    assert _snapshot(inputs) == before


# --- interrupted writes ----------------------------------------------------------------------


def test_renderer_failure_leaves_no_file(
    inputs: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import xpuperf.report.html as html

    def boom(*_a, **_k):
        raise RuntimeError("renderer failed")

    monkeypatch.setattr(html, "render_html", boom)  # imported by the CLI when --html is given
    out = inputs.parent / "out"
    code, err = _run(["analyze", str(inputs / "run"), "-q", "--html", str(out / "r.html")], capsys)
    assert code == 3, err
    assert list(out.iterdir()) == []


def test_failed_rename_keeps_the_old_file_and_no_temp(
    inputs: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    out = inputs.parent / "out"
    old = out / "r.json"
    old.write_text('{"old": true}')

    def fail(self, target):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Path, "replace", fail)
    code, err = _run(["analyze", str(inputs / "run"), "-q", "--json", str(old)], capsys)
    assert code == 2, err
    assert f"cannot write {old}: No space left on device" in err
    assert old.read_text() == '{"old": true}'
    assert sorted(p.name for p in out.iterdir()) == ["r.json"]


CHILD = textwrap.dedent(
    """
    import os, signal, sys
    import xpuperf.report.output as output
    real = output.os.fdopen

    class Half:
        # writes half the text, then the user presses Ctrl-C (SIGINT to this process)
        def __init__(self, fh): self.fh = fh
        def __enter__(self): return self
        def __exit__(self, *exc): self.fh.close()
        def write(self, text):
            self.fh.write(text[: len(text) // 2]); self.fh.flush()
            os.kill(os.getpid(), signal.SIGINT)
            signal.pause()

    output.os.fdopen = lambda *a, **k: Half(real(*a, **k))
    from xpuperf.cli.app import main
    main(sys.argv[1:])
    """
)


def test_ctrl_c_mid_write_leaves_no_partial_file(inputs: Path) -> None:
    out = inputs.parent / "out"
    old = out / "r.json"
    old.write_text('{"old": true}')
    argv = ["analyze", str(inputs / "baseline.csv"), "-q", "--json", str(old)]
    argv += ["--html", str(out / "n.html")]
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, *argv],
        capture_output=True,
        text=True,
        timeout=120,
        # a shell's background job starts with SIGINT ignored and Python keeps that: reset it,
        # as a terminal's foreground process has it (the child raises KeyboardInterrupt itself)
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    assert proc.returncode == 130, proc.stderr
    assert "interrupted" in proc.stderr
    assert old.read_text() == '{"old": true}'  # the old result, not half of the new one
    assert sorted(p.name for p in out.iterdir()) == ["r.json"]  # no temp file, no n.html
