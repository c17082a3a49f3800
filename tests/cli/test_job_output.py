"""The job's stdout/stderr (no step records) is read for framework warnings and NCCL lines, and a
gate is never passed on a check that had no evidence (issue 16)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from xpuperf.readers.generic import sniff_jsonl

DATA = Path(__file__).resolve().parent.parent / "data"
TIMEOUT_LOG = DATA / "events_nccl_timeout" / "torch24_rank_prefixed.log"
SPAWN_LOG = DATA / "events_lightning_spawn" / "spawn.log"
NCCL_LOG = DATA / "calibrate_nccllog_41" / "41_nccllog_2node-16rank-ib-channels-trees-excerpt.txt"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "xpuperf", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _steps_csv(tmp_path: Path, ranks: int = 2) -> Path:
    rows = ["rank,step,step_time_s,samples"]
    rows += [f"{r},{s},1.0,32" for r in range(ranks) for s in range(30)]
    f = tmp_path / "steps.csv"
    f.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return f


def test_a_stderr_log_alone_is_read_for_framework_warnings() -> None:
    p = run("analyze", str(TIMEOUT_LOG), "--json", "-")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert "XP708" in {f["code"] for f in doc["findings"]}
    assert doc["summary"] is None
    assert doc["stragglers"] is None  # not [] — no straggler verdict without step records
    status = {c["name"]: c["status"] for c in doc["checks"]}
    assert status["steps"] == "not_checked"
    assert status["events.nccl_timeout"] == "problem"
    assert "without step records" in p.stderr


def test_a_lightning_log_alone_names_the_ddp_spawn_warning() -> None:
    p = run("analyze", str(SPAWN_LOG), "--json", "-")
    assert p.returncode == 0, p.stderr
    assert "XP703" in {f["code"] for f in json.loads(p.stdout)["findings"]}


def test_step_table_plus_job_output_merges_the_warnings(tmp_path: Path) -> None:
    p = run("analyze", str(_steps_csv(tmp_path)), str(TIMEOUT_LOG), "--warmup", "0", "--json", "-")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["summary"]["ranks"] == 2
    assert "XP708" in {f["code"] for f in doc["findings"]}
    names = {c["name"] for c in doc["checks"]}
    assert "events.nccl_timeout" in names
    assert "framework" not in names  # the framework checks ran on the job output


def test_gates_refuse_to_pass_without_evidence(tmp_path: Path) -> None:
    steps = str(_steps_csv(tmp_path))
    # a step table alone: the framework checks had no evidence
    p = run("analyze", steps, "-q", "--warmup", "0", "--fail-on", "code=XP701")
    assert p.returncode == 2
    assert "cannot be decided" in p.stderr
    # step time only: the straggler check could not run, so stragglers>0 is not a pass
    p = run("analyze", steps, "-q", "--warmup", "0", "--fail-on", "stragglers>0")
    assert p.returncode == 2
    assert "step time only" in p.stderr
    # an NCCL log alone: no step records at all
    p = run("analyze", str(NCCL_LOG), "-q", "--fail-on", "stragglers>0")
    assert p.returncode == 2
    # with the evidence the gate decides: the NCCL log holds no WARN line
    p = run("analyze", str(NCCL_LOG), "-q", "--fail-on", "code=XP665")
    assert p.returncode == 0, p.stderr


def test_html_without_step_records_is_a_page_of_findings_and_checks(tmp_path: Path) -> None:
    out, page = tmp_path / "r.json", tmp_path / "r.html"
    p = run("analyze", str(NCCL_LOG), "-q", "--json", str(out), "--html", str(page))
    assert p.returncode == 0, p.stderr
    doc = json.loads(out.read_text())
    assert doc["nccl"]["ranks"] == 16
    html = page.read_text()
    # the JSON embedded in the page is the document --json wrote
    embedded = html.split('id="xpuperf-data">', 1)[1].split("</script>", 1)[0]
    assert json.loads(embedded)["checks"] == doc["checks"]
    assert "16 rank(s) on" in html
    for c in doc["checks"]:  # every check is a row, with its status
        assert c["title"].replace("'", "&#39;") in html
    assert "Plotly" not in html[:20000]  # no figure: plotly.js is not inlined (17 KB, not 4.8 MB)
    assert len(html) < 200_000


def test_markdown_without_step_records_lists_findings_and_checks() -> None:
    p = run("analyze", str(TIMEOUT_LOG), "--markdown", "-")
    assert p.returncode == 0, p.stderr
    assert "| error | XP708 |" in p.stdout
    assert "| not checked | stragglers, jitter" in p.stdout


def test_log_prefixes_are_not_taken_for_json() -> None:
    assert not sniff_jsonl(["[rank1]:[E1015 03:12:44.918236 4112 ProcessGroupNCCL.cpp:616] x"])
    assert not sniff_jsonl(["[2024-05-01 10:00:00,123] INFO step 1"])
    assert not sniff_jsonl(["[1,3]<stdout>: hello"])
    assert sniff_jsonl(["["])
    assert sniff_jsonl(['[{"step": 1, "loss": 2.0}'])


def _job_folder(tmp_path: Path) -> Path:
    job = tmp_path / "job"
    job.mkdir()
    for r in range(2):
        rows = ["step,step_time_s,samples"] + [f"{s},1.0,32" for s in range(30)]
        (job / f"rank{r}.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    (job / "train.err").write_text(TIMEOUT_LOG.read_text(encoding="utf-8"), encoding="utf-8")
    return job


def test_job_output_inside_a_folder_or_glob_is_read_too(tmp_path: Path) -> None:
    job = _job_folder(tmp_path)
    for arg in (str(job), str(job / "*")):
        p = run("analyze", arg, "--warmup", "0", "--json", "-")
        assert p.returncode == 0, p.stderr
        doc = json.loads(p.stdout)
        assert "XP708" in {f["code"] for f in doc["findings"]}
        assert "XP401" not in {f["code"] for f in doc["findings"]}  # a note, not a skipped row
        assert p.stderr.count("train.err: job output without step records") == 1


def test_a_folder_of_job_output_only_and_an_empty_stderr(tmp_path: Path) -> None:
    only = tmp_path / "only"
    only.mkdir()
    (only / "train.err").write_text(TIMEOUT_LOG.read_text(encoding="utf-8"), encoding="utf-8")
    p = run("analyze", str(only), "--json", "-")
    assert p.returncode == 0, p.stderr
    assert "XP708" in {f["code"] for f in json.loads(p.stdout)["findings"]}
    empty = tmp_path / "job.err"
    empty.write_text("", encoding="utf-8")  # a healthy job's stderr is often empty
    p = run("analyze", str(_steps_csv(tmp_path)), str(empty), "--warmup", "0", "-q")
    assert p.returncode == 0, p.stderr


def test_wrong_files_for_baseline_and_compare_are_named(tmp_path: Path) -> None:
    steps = str(_steps_csv(tmp_path))
    p = run("analyze", steps, "--baseline", str(TIMEOUT_LOG), "-q")
    assert p.returncode == 2
    assert "--baseline takes the step log of ONE card" in p.stderr
    p = run("compare", str(NCCL_LOG), steps)
    assert p.returncode == 2
    assert "not an input for `xpuperf compare`: this is an NCCL debug log" in p.stderr
    out = tmp_path / "n.json"
    assert run("analyze", str(NCCL_LOG), "-q", "--json", str(out)).returncode == 0
    p = run("compare", steps, str(out))
    assert p.returncode == 2
    assert "holds no step records" in p.stderr


def test_json_says_null_for_stragglers_not_checked_and_gates_follow(tmp_path: Path) -> None:
    p = run("analyze", str(_steps_csv(tmp_path)), "--warmup", "0", "--json", "-")
    assert json.loads(p.stdout)["stragglers"] is None  # step time only: not checked
    table = DATA / "scaling_markdown_intra" / "table.md"
    p = run("analyze", str(table), "-q", "--fail-on", "code=XP701")
    assert p.returncode == 2
    assert "no events.ddp_unused_parameters check" in p.stderr


def test_a_healthy_stderr_without_warnings_is_job_output(tmp_path: Path) -> None:
    err = tmp_path / "train.err"
    err.write_text("Loading model...\nEpoch 1 done\n", encoding="utf-8")
    steps = str(_steps_csv(tmp_path))
    p = run("analyze", steps, str(err), "--warmup", "0", "--json", "-")
    assert p.returncode == 0, p.stderr
    status = {c["name"]: c["status"] for c in json.loads(p.stdout)["checks"]}
    # its 2 lines were read, but nothing in them shows PyTorch's NCCL backend: no verdict
    assert status["events.nccl_timeout"] == "not_checked"
    assert "framework" not in status
    # in a folder too
    job = tmp_path / "job"
    job.mkdir()
    (job / "rank0.csv").write_text(Path(steps).read_text(encoding="utf-8"), encoding="utf-8")
    (job / "train.err").write_text(err.read_text(encoding="utf-8"), encoding="utf-8")
    p = run("analyze", str(job), "--warmup", "0", "--json", "-")
    assert p.returncode == 0, p.stderr
    assert "events.nccl_timeout" in {c["name"] for c in json.loads(p.stdout)["checks"]}
    # a binary .err stays an error
    binary = tmp_path / "core.err"
    binary.write_bytes(b"\x00\x01\x02" * 100)
    assert run("analyze", steps, str(binary), "-q").returncode == 2


def test_header_only_step_log_beside_job_output_is_skipped_with_a_warning(tmp_path: Path) -> None:
    empty = tmp_path / "steps.csv"
    empty.write_text("rank,step,step_time_s\n")
    p = run("analyze", str(empty), str(TIMEOUT_LOG), "--json", "-")
    assert p.returncode == 0, p.stderr
    assert "steps.csv: has no data rows, only a header: skipped" in p.stderr
    assert json.loads(p.stdout)["summary"] is None  # no step record anywhere: step keys null
    # beside a good step log the good one is analysed: 2 ranks of 3 steps of 1.0 s
    good = tmp_path / "rank0.csv"
    good.write_text("rank,step,step_time_s\n" + "".join(f"{r},{s},1.0\n" for r in (0, 1)
                                                           for s in (1, 2, 3)))  # fmt: skip
    p = run("analyze", str(good), str(empty), "--warmup", "0", "--json", "-")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["summary"]["ranks"] == 2
    assert "only a header: skipped" in p.stderr
    # alone it is still an error: nothing else to analyse
    p = run("analyze", str(empty))
    assert p.returncode == 2
    assert "has no data rows, only a header" in p.stderr
