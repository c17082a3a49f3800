"""Hostile paths (issue 21, docs/reliability.md): FIFOs, devices, symlink loops and read-only
folders, as inputs and outputs of every subcommand. Each case ends with exit 0, 1 or 2 — never
3, never a hang (every run is under the fuzz suite's hard alarm, so a hang fails the test)."""

from __future__ import annotations

import json
import os
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fuzz.harness import ROOT, hard_deadline
from xpuperf.cli.app import main
from xpuperf.readers.paths import expand, glob_paths

DATA = ROOT / "tests/data"
NCCL = DATA / "calibrate_single_h100/all_reduce_64MiB_8xh100.txt"
CLUSTER = DATA / "topology_example/cluster.yaml"
LSCPU = DATA / "topology_vm_flat/lscpu.txt"
PLAN = ["plan", "--cards", "8", "--model", "resnet50", "--step-time", "0.3", "-q"]
FIFO_IN = "a FIFO (named pipe), not a regular file: xpuperf reads saved files only"
LOOP_OUT = "it is, or goes through, a symbolic link that loops"
NO_READER = "a FIFO (named pipe) that no process opened for reading within 0.2 s"


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """Exit code and stderr of ``xpuperf ARGV`` run in this process under the hard alarm."""
    with hard_deadline(), pytest.raises(SystemExit) as e:
        main(argv)
    return int(e.value.code), capsys.readouterr().err


def one_error(result: tuple[int, str]) -> str:
    """The one ``xpuperf: error:`` line of a :func:`run` result, checking exit code 2."""
    code, err = result
    lines = [x for x in err.splitlines() if x.strip()]
    assert code == 2, err
    assert len(lines) == 1, err
    assert lines[0].startswith("xpuperf: error: "), err
    return lines[0]


def log(path: Path, ranks: int = 2, steps: int = 30) -> Path:
    """A small per-rank CSV step log (step times 0.30 s + 0.01 s x (step mod 3))."""
    rows = [f"{s},{r},{0.3 + 0.01 * (s % 3):.2f}" for r in range(ranks) for s in range(steps)]
    path.write_text("step,rank,step_time_s\n" + "\n".join(rows) + "\n")
    return path


@pytest.fixture
def fifos(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``tmp_path`` holding FIFOs ``p.csv``, ``p.txt``, ``p.yaml``, a folder ``ranks`` with a
    good ``rank0.csv`` and a FIFO ``rank1.csv``, and a good log ``good.csv``."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XPUPERF_FIFO_WAIT_S", "0.2")
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    for name in ("p.csv", "p.txt", "p.yaml", "p.json"):
        os.mkfifo(name)
    Path("ranks").mkdir()
    log(Path("ranks/rank0.csv"), ranks=1)
    os.mkfifo("ranks/rank1.csv")
    log(Path("good.csv"))
    return tmp_path


FIFO_INPUTS = {
    "analyze file": ["analyze", "p.csv"],
    "analyze folder": ["analyze", "ranks"],
    "analyze glob": ["analyze", "ranks/*.csv"],
    "analyze ** glob": ["analyze", "ranks/**/*.csv"],
    "analyze --baseline": ["analyze", "good.csv", "--baseline", "p.csv"],
    "compare base": ["compare", "p.csv", "good.csv"],
    "compare current folder": ["compare", "good.csv", "ranks"],
    "ingest": ["ingest", "p.csv", "-o", "ds"],
    "ingest folder": ["ingest", "ranks", "-o", "ds"],
    "plan --topology": [*PLAN, "--topology", "p.yaml"],
    "plan --calibration": [*PLAN, "--topology", str(CLUSTER), "--calibration", "p.yaml"],
    "plan --layers": [*PLAN, "--topology", str(CLUSTER), "--layers", "p.csv"],
    "plan --measured": [*PLAN, "--topology", str(CLUSTER), "--measured", "8=p.csv"],
    "calibrate": ["calibrate", "p.txt"],
    "calibrate --topology": ["calibrate", str(NCCL), "--topology", "p.yaml"],
    "topo show": ["topo", "show", "p.yaml"],
    "topo check": ["topo", "check", "p.yaml"],
    "topo check --binding": ["topo", "check", str(CLUSTER), "--binding", "p.txt"],
    "topo import": ["topo", "import", str(LSCPU), "p.txt"],
    "formats --explain": ["formats", "--explain", "p.txt"],
}


@pytest.mark.parametrize("argv", FIFO_INPUTS.values(), ids=FIFO_INPUTS.keys())
def test_a_fifo_input_is_refused_before_opening(
    fifos: Path, argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    line = one_error(run(argv, capsys))
    assert FIFO_IN in line
    assert line.split(": ")[2] in {"p.csv", "p.txt", "p.yaml", "ranks/rank1.csv"}, line
    assert not Path("ds").exists()


@pytest.mark.parametrize(
    ("device", "kind"), [("/dev/zero", "a character device"), ("/dev/null", "a character device")]
)
def test_a_device_input_is_refused(
    tmp_path: Path, device: str, kind: str, capsys: pytest.CaptureFixture[str]
) -> None:
    if not Path(device).exists():
        pytest.skip(f"no {device} here")
    line = one_error(run(["analyze", device], capsys))
    assert line == (
        f"xpuperf: error: {device}: {kind}, not a regular file: xpuperf reads saved files "
        "only (reading this could block or never end); save the output to a regular file and "
        "pass that file (as a log, `xpuperf analyze -` reads one piped in)"
    )


@pytest.mark.parametrize("flag", ["--json", "--markdown", "--html"])
def test_an_output_fifo_without_reader_waits_then_exits_2(
    fifos: Path, flag: str, capsys: pytest.CaptureFixture[str]
) -> None:
    line = one_error(run(["analyze", "good.csv", "-q", flag, "p.json"], capsys))
    assert line == (
        f"xpuperf: error: cannot write p.json: {NO_READER}; start the reader first or write to "
        "a regular file"
    )


def _reader(path: str, got: list[bytes]) -> threading.Thread:
    def read() -> None:
        with Path(path).open("rb") as fh:  # blocks until xpuperf opens the FIFO for writing
            got.append(fh.read())

    t = threading.Thread(target=read, daemon=True)
    t.start()
    return t


def test_an_output_fifo_with_a_reader_gets_the_report(
    fifos: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    got: list[bytes] = []
    t = _reader("p.json", got)
    code, err = run(["analyze", "good.csv", "-q", "--json", "p.json"], capsys)
    t.join(10)
    assert (code, err) == (0, "")
    doc = json.loads(got[0])
    assert doc["schema"] == "xpuperf.analyze/1"
    assert doc["summary"]["ranks"] == 2


def test_step_summary_fifo_without_reader_is_a_warning(
    fifos: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", "p.txt")
    code, err = run(["analyze", "good.csv", "-q"], capsys)
    assert code == 0
    assert err.strip() == (
        f"warning: $GITHUB_STEP_SUMMARY: cannot write p.txt: {NO_READER}; start the reader "
        "first or write to a regular file: step summary not written"
    )


def test_step_summary_fifo_with_a_reader_gets_the_summary(
    fifos: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", "p.txt")
    got: list[bytes] = []
    t = _reader("p.txt", got)
    code, err = run(["analyze", "good.csv", "-q"], capsys)
    t.join(10)
    assert (code, err) == (0, "")
    assert got[0].decode().startswith("## xpuperf")


# --- symbolic link loops ------------------------------------------------------------------


@pytest.fixture
def loops(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``tree/`` with ``a.csv`` and ``sub/b.csv``, links ``tree/me -> .``,
    ``tree/sub/up -> ..``, ``tree/sub/x -> ../sub``; two links ``l1 <-> l2`` pointing at each
    other and ``self -> self``; a good log ``good.csv``."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    (tmp_path / "tree/sub").mkdir(parents=True)
    log(tmp_path / "tree/a.csv", ranks=1)
    (tmp_path / "tree/sub/b.csv").write_text("step,rank,step_time_s\n1,1,0.3\n2,1,0.31\n")
    (tmp_path / "tree/me").symlink_to(".")
    (tmp_path / "tree/sub/up").symlink_to("..")
    (tmp_path / "tree/sub/x").symlink_to("../sub")
    Path("l1").symlink_to("l2")
    Path("l2").symlink_to("l1")
    Path("self").symlink_to("self")
    log(Path("good.csv"))
    return tmp_path


def test_recursive_glob_through_link_loops_finds_each_folder_once(loops: Path) -> None:
    with hard_deadline(20):
        hits = glob_paths("tree/**/*.csv")
    # a.csv and sub/b.csv, each once, by the first name reached (not tree/me/a.csv and so on)
    assert len(hits) == 2
    assert {Path(h).resolve() for h in hits} == {
        (loops / "tree/a.csv").resolve(),
        (loops / "tree/sub/b.csv").resolve(),
    }
    with hard_deadline(20):
        files = expand(["tree/**/*.csv", "tree"], {".csv"})
    assert sorted(f.path.name for f in files) == ["a.csv", "b.csv"]


def test_analyze_a_glob_through_link_loops(loops: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, err = run(["analyze", "tree/**/*.csv", "-q", "--json", "out.json"], capsys)
    assert code == 0, err
    doc = json.loads(Path("out.json").read_text())
    assert sorted(Path(s).name for s in doc["sources"]) == ["a.csv", "b.csv"]


@pytest.mark.parametrize("name", ["l1", "self", "l1/x.csv"])
def test_a_looping_link_as_input(
    loops: Path, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    line = one_error(run(["analyze", name], capsys))
    assert line.startswith(f"xpuperf: error: {name}: a symbolic link that loops, not a regular")


LOOP_OUTPUTS = {
    "analyze --json": ["analyze", "good.csv", "-q", "--json", "{o}"],
    "analyze --html": ["analyze", "good.csv", "-q", "--html", "{o}"],
    "analyze --markdown": ["analyze", "good.csv", "-q", "--markdown", "{o}"],
    "compare --json": ["compare", "good.csv", "good.csv", "-q", "--json", "{o}"],
    "plan --json": [*PLAN, "--topology", str(CLUSTER), "--json", "{o}"],
    "calibrate -o": ["calibrate", str(NCCL), "-q", "-o", "{o}"],
    "calibrate --json": ["calibrate", str(NCCL), "-q", "--json", "{o}"],
    "topo import -o": ["topo", "import", str(LSCPU), "-o", "{o}"],
    "topo show --json": ["topo", "show", str(CLUSTER), "--json", "{o}"],
    "ingest -o": ["ingest", "good.csv", "-q", "-o", "{o}"],
}


@pytest.mark.parametrize("out", ["l1", "self", "l2/report.json"])
@pytest.mark.parametrize("argv", LOOP_OUTPUTS.values(), ids=LOOP_OUTPUTS.keys())
def test_an_output_through_a_link_loop_exits_2(
    loops: Path, argv: list[str], out: str, capsys: pytest.CaptureFixture[str]
) -> None:
    line = one_error(run([a.format(o=out) for a in argv], capsys))
    assert line == (
        f"xpuperf: error: cannot write {out}: {LOOP_OUT}; fix or remove the link, or choose "
        "another path"
    )


def test_step_summary_through_a_link_loop_is_a_warning(
    loops: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", "l1")
    code, err = run(["analyze", "good.csv", "-q"], capsys)
    assert code == 0
    assert err.strip() == (
        f"warning: $GITHUB_STEP_SUMMARY: cannot write l1: {LOOP_OUT}; fix or remove the link, "
        "or choose another path: step summary not written"
    )


# --- outputs that cannot be written ----------------------------------------------------------


@pytest.fixture
def read_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An empty folder ``ro`` nobody may write into: mode 0555, and for root (whom the mode does
    not stop) the immutable attribute (``chattr +i``); skipped where neither works."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    log(Path("good.csv"))
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    immutable = False
    if os.access(ro, os.W_OK):  # root
        try:
            r = subprocess.run(["chattr", "+i", str(ro)], capture_output=True, check=False)
        except FileNotFoundError:
            r = None
        immutable = r is not None and r.returncode == 0
        if not immutable or os.access(ro, os.W_OK):
            ro.chmod(0o755)
            pytest.skip("running as root without chattr +i: cannot make a read-only folder")
    yield ro
    if immutable:
        subprocess.run(["chattr", "-i", str(ro)], check=False)
    ro.chmod(0o755)


@pytest.mark.parametrize(
    "argv",
    [
        ["ingest", "good.csv", "-q", "-o", "ro/ds"],
        ["ingest", "good.csv", "-q", "-o", "ro"],
        ["analyze", "good.csv", "-q", "--json", "ro/a.json"],
        ["analyze", "good.csv", "-q", "--html", "ro/a.html"],
        ["calibrate", str(NCCL), "-q", "-o", "ro/cal.yaml"],
        ["topo", "import", str(LSCPU), "-o", "ro/t.yaml"],
    ],
    ids=["ingest new", "ingest into", "analyze json", "analyze html", "calibrate", "topo"],
)
def test_an_output_in_a_read_only_folder_exits_2(
    read_only: Path, argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    line = one_error(run(argv, capsys))
    assert line == (
        f"xpuperf: error: cannot write {argv[-1]}: folder {read_only.resolve()} is read-only "
        "(no write permission, a read-only mount or an immutable folder); choose another path"
    )
    assert list(read_only.iterdir()) == []


def test_a_permission_error_while_writing_exits_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The folder turned read-only after the check (a race, a mount gone read-only): the
    OSError that pyarrow raises is the user's setup, exit 2, not an internal error."""
    import xpuperf.engine.dataset as dataset

    def refuse(*_a: object, **_k: object) -> None:
        raise PermissionError(1, "Operation not permitted", str(tmp_path / "ds"))

    monkeypatch.setattr(dataset, "write_dataset", refuse)
    monkeypatch.chdir(tmp_path)
    log(tmp_path / "good.csv")
    line = one_error(run(["ingest", "good.csv", "-q", "-o", "ds"], capsys))
    assert line == (
        f"xpuperf: error: {tmp_path / 'ds'}: Operation not permitted; check its permissions or "
        "choose another path"
    )


def test_a_socket_as_input_and_as_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import socket

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    log(Path("good.csv"))
    with socket.socket(socket.AF_UNIX) as s:
        s.bind("s.csv")
        line = one_error(run(["analyze", "s.csv"], capsys))
        assert line.startswith("xpuperf: error: s.csv: a socket, not a regular file")
        line = one_error(run(["analyze", "good.csv", "-q", "--json", "s.csv"], capsys))
        assert line == (
            "xpuperf: error: cannot write s.csv: a socket, not a regular file; write to a file"
        )


def test_glob_paths_matches_glob_on_a_tree_without_links(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without links ``glob_paths`` is ``glob.glob(recursive=True)`` (hidden folders skipped,
    ``**`` matching zero or more folders), for relative and absolute patterns."""
    import glob

    monkeypatch.chdir(tmp_path)
    for f in ("x.csv", "a/y.csv", "a/b/c/z.csv", ".hid/h.csv", "a/b/w.txt"):
        Path(f).parent.mkdir(parents=True, exist_ok=True)
        Path(f).write_text("")
    patterns = ["**/*.csv", "a/**/c", "a/**", "*/**/*.csv", "**/b/**/*.csv", "**", "a//**/*.csv"]
    patterns.append(f"{tmp_path}/**/*.csv")
    for pat in patterns:
        expected = sorted(str(Path(p)) for p in glob.glob(pat, recursive=True))  # noqa: PTH207
        assert sorted(glob_paths(pat)) == expected, pat


@pytest.mark.parametrize("target", ["/proc/xpuperf-ds", "/sys/xpuperf-ds"])
def test_ingest_into_a_pseudo_filesystem_exits_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    target: str,
) -> None:  # fmt: skip
    # /proc and /sys report themselves writable (to root), so only trying to create a file
    # tells (was exit 3: FileNotFoundError from the Parquet writer); the output check of every
    # subcommand (check_output_path) says so before the logs are read
    monkeypatch.chdir(tmp_path)
    (tmp_path / "good.csv").write_text("step,step_time_s\n1,0.1\n2,0.1\n", encoding="utf-8")
    line = one_error(run(["ingest", "good.csv", "-q", "-o", target], capsys))
    assert line.startswith(f"xpuperf: error: cannot write {target}: folder {Path(target).parent} ")
    assert not Path(target).exists()


@pytest.mark.parametrize(
    "argv",
    [
        ["analyze", "{long}.csv"],
        ["analyze", "good.csv", "-q", "--json", "{long}.json"],
        ["ingest", "good.csv", "-q", "-o", "{long}"],
    ],
    ids=["input", "json output", "ingest output"],
)
def test_a_file_name_too_long_exits_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    argv: list[str],
) -> None:  # fmt: skip
    # a name part over 255 bytes: ENAMETOOLONG was an internal error (exit 3) in every command
    monkeypatch.chdir(tmp_path)
    (tmp_path / "good.csv").write_text("step,step_time_s\n1,0.1\n2,0.1\n", encoding="utf-8")
    long = "a" * 300
    line = one_error(run([a.replace("{long}", long) for a in argv], capsys))
    assert "File name too long; shorten the file name" in line


def test_a_step_summary_name_too_long_only_warns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # was UnboundLocalError (exit 3) in write_markdown_outputs
    monkeypatch.chdir(tmp_path)
    (tmp_path / "good.csv").write_text("step,step_time_s\n1,0.1\n2,0.1\n", encoding="utf-8")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / ("b" * 300)))
    code, err = run(["analyze", "good.csv", "-q"], capsys)
    assert code == 0
    assert "step summary not written" in err


def test_an_output_ending_with_a_slash_is_a_folder_not_a_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # `--json newdir/` (no such folder) wrote a file named `newdir`
    monkeypatch.chdir(tmp_path)
    (tmp_path / "good.csv").write_text("step,step_time_s\n1,0.1\n2,0.1\n", encoding="utf-8")
    line = one_error(run(["analyze", "good.csv", "-q", "--json", "newdir/"], capsys))
    assert (
        line == "xpuperf: error: cannot write newdir/: it ends with '/', a folder; give a file name"
    )
    assert not (tmp_path / "newdir").exists()


@pytest.mark.parametrize(
    "argv",
    [
        ["plan", "--topology", "adir", "--model", "resnet50", "--step-time", "0.1",
         "--batch-size", "32", "--cards", "1,8"],
        ["topo", "check", "--preset", "pcie-8gpu", "--binding", "adir"],
    ],
    ids=["topology", "binding"],
)  # fmt: skip
def test_a_folder_where_a_file_goes_says_what_to_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    argv: list[str],
) -> None:  # fmt: skip
    monkeypatch.chdir(tmp_path)
    (tmp_path / "adir").mkdir()
    line = one_error(run(argv, capsys))
    assert line.endswith("Is a directory; it is a folder: name the file inside it")


def test_two_outputs_to_one_file_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # `--json out.json --html out.json` exited 0 with the JSON replaced by the HTML
    monkeypatch.chdir(tmp_path)
    (tmp_path / "good.csv").write_text("step,step_time_s\n1,0.1\n2,0.1\n", encoding="utf-8")
    argv = ["analyze", "good.csv", "-q", "--json", "out.json", "--html", "./out.json"]
    line = one_error(run(argv, capsys))
    assert line == (
        "xpuperf: error: --json and --html both write ./out.json: one would replace the other; "
        "give each output its own file"
    )
    assert not (tmp_path / "out.json").exists()
