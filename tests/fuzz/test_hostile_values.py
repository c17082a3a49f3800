"""Hostile values (issue 21 §4, docs/reliability.md): lone UTF-16 surrogates in JSON/JSONL logs
and topology files, timestamps in year 1 and year 9999, single-column CSVs, a 10^6-step compare
and a topology XML with very many GPUs. Each ends with exit 0, 1 or 2 under the hard alarm."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from tests.fuzz.harness import ROOT
from tests.fuzz.test_hostile_paths import one_error, run
from xpuperf.errors import InputError
from xpuperf.surrogates import fix
from xpuperf.topology.importers import ncclxml

DATA = ROOT / "tests/data"
CLUSTER = DATA / "topology_example/cluster.yaml"
RANKTABLE = DATA / "topology_import_ranktable/22_ranktable_ascend-hccl-2server-16npu-v1.0-json.txt"


@pytest.fixture(autouse=True)
def _here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)


def test_fix_replaces_lone_surrogates_and_keeps_pairs() -> None:
    assert fix("a\ud800b\udfffc") == "a\ufffdb\ufffdc"
    assert fix("\ud83d\ude00") == "\U0001f600"  # a valid pair is the one character it encodes
    assert fix("\udc00\ud800") == "\ufffd\ufffd"  # low before high: two lone halves
    assert fix("plain") == "plain"


def _records() -> list[dict]:
    """Two ranks x 30 steps, 0.30 s + 0.01 s x (step mod 3), hosts with lone surrogates."""
    return [
        {"step": s, "rank": r, "step_time_s": 0.3 + 0.01 * (s % 3), "hostname": f"n\ud800{r}"}
        for r in range(2)
        for s in range(1, 31)
    ]


@pytest.mark.parametrize("kind", ["jsonl value", "jsonl key", "json document"])
def test_lone_surrogates_in_json_logs(kind: str, capsys: pytest.CaptureFixture[str]) -> None:
    rows = _records()
    if kind == "jsonl key":
        rows = [{("note\udc80" if k == "hostname" else k): v for k, v in r.items()} for r in rows]
    path = Path("log.json" if kind == "json document" else "log.jsonl")
    # json.dumps escapes them as \ud800, as a program with a broken string would write them
    text = json.dumps(rows) if kind == "json document" else "\n".join(map(json.dumps, rows))
    path.write_text(text + "\n")
    outs = ["--json", "a.json", "--html", "a.html", "--markdown", "a.md"]
    code, err = run(["analyze", str(path), *outs], capsys)
    assert code == 0, err
    doc = json.loads(Path("a.json").read_text())
    assert (doc["summary"]["ranks"], doc["summary"]["steps"] + doc["summary"]["warmup_steps"]) == (
        2,
        30,
    )
    if kind != "jsonl key":  # the host names, with U+FFFD where the lone surrogate was
        assert "n\ufffd0" in json.dumps(doc, ensure_ascii=False)
    code, err = run(["compare", str(path), str(path), "-q", "--json", "c.json"], capsys)
    assert code == 0, err
    assert json.loads(Path("c.json").read_text())["regressions"] == []
    code, err = run(["ingest", str(path), "-q", "-o", "ds"], capsys)
    assert (code, err) == (0, "")


@pytest.mark.parametrize("fmt", ["json", "yaml"])
def test_lone_surrogates_in_a_topology_description(
    fmt: str, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = yaml.safe_load(CLUSTER.read_text())
    doc["name"] = "ex\ud800"
    doc["nodes"][0]["devices"]["model"] = "A\udc00"
    path = Path(f"topo.{fmt}")
    if fmt == "json":
        path.write_text(json.dumps(doc))
    else:  # YAML's own escape in a double-quoted scalar
        text = CLUSTER.read_text().replace("name: example", 'name: "ex\\ud800"')
        path.write_text(text.replace("model: Ascend-910", 'model: "A\\udc00"'))
    code, err = run(["topo", "show", str(path), "--json", "t.json"], capsys)
    assert code == 0, err
    out = json.loads(Path("t.json").read_text())
    assert out["name"] == "ex\ufffd"
    assert {d["model"] for d in out["nodes"][0]["devices"]} == {"A\ufffd"}
    code, err = run(["topo", "show", str(path)], capsys)  # the terminal view
    assert code == 0, err
    plan = ["plan", "--topology", str(path), "--cards", "8", "--model", "resnet50"]
    code, err = run(
        [*plan, "--step-time", "0.3", "-q", "--json", "p.json", "--html", "p.html"], capsys
    )
    assert code == 0, err


def test_lone_surrogate_in_a_rank_table(capsys: pytest.CaptureFixture[str]) -> None:
    text = RANKTABLE.read_text().replace('"server_id": "', '"server_id": "\\ud800', 1)
    assert "\\ud800" in text
    Path("rt.json").write_text(text)
    code, err = run(["topo", "import", "rt.json", "-o", "rt_out.json"], capsys)
    assert code == 0, err
    assert "\ufffd" in Path("rt_out.json").read_text(encoding="utf-8")


def _timestamps(year: int) -> list[str]:
    """ISO date-times one minute apart, 30 per rank, in ``year``."""
    day = "0001-01-01T00" if year == 1 else "9999-12-31T23"
    return [f"{day}:{m:02d}:00" for m in range(1, 31)]


@pytest.mark.parametrize("year", [1, 9999])
@pytest.mark.parametrize("form", ["csv", "jsonl"])
def test_timestamps_at_year_1_and_9999(
    year: int, form: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Step time = difference of consecutive timestamps: 60 s for every step; 29 steps per rank
    (the first row of each rank has none), wall time 29 x 60 s = 1740 s."""
    ts = _timestamps(year)
    if form == "csv":
        rows = [f"{i + 1},{r},{t}" for r in range(2) for i, t in enumerate(ts)]
        Path("log.csv").write_text("step,rank,timestamp\n" + "\n".join(rows) + "\n")
    else:
        rows = [json.dumps({"step": i + 1, "rank": r, "time": t + "Z"}) for r in range(2)
                for i, t in enumerate(ts)]  # fmt: skip
        Path("log.jsonl").write_text("\n".join(rows) + "\n")
    code, err = run(
        ["analyze", f"log.{form}", "-q", "--json", "a.json", "--html", "a.html"], capsys
    )
    assert code == 0, err
    s = json.loads(Path("a.json").read_text())["summary"]
    assert s["steps"] + s["warmup_steps"] == 29
    assert s["step_time_s"]["median"] == pytest.approx(60.0)
    assert s["wall_time_s"] == pytest.approx(1740.0)


@pytest.mark.parametrize("year", [1, 9999])
def test_timestamps_beside_a_step_time_column(
    year: int, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = [f"{i + 1},0,{t},0.25" for i, t in enumerate(_timestamps(year))]
    Path("log.csv").write_text("step,rank,timestamp,step_time_s\n" + "\n".join(rows) + "\n")
    code, err = run(["analyze", "log.csv", "-q", "--json", "a.json"], capsys)
    assert code == 0, err
    assert json.loads(Path("a.json").read_text())["summary"]["step_time_s"]["median"] == 0.25


N_ROWS = 200_000  # moderate: the code path is the one a 2 GB file takes (chunked CSV reading)


def test_a_csv_of_step_numbers_only_exits_2_from_its_header(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Refused by the header: the rows are never parsed (bounded for a file of any size)."""
    from xpuperf.readers import generic, lines

    def never(*_a: object, **_k: object) -> None:
        raise AssertionError("the rows were read")

    monkeypatch.setattr(generic, "stream_csv", never)
    monkeypatch.setattr(lines, "read_csv_lines", never)
    Path("steps.csv").write_text("step\n" + "\n".join(map(str, range(1, N_ROWS + 1))) + "\n")
    line = one_error(run(["analyze", "steps.csv", "-q"], capsys))
    assert line.startswith("xpuperf: error: steps.csv: no step time column: expected one of")
    assert line.endswith("found: step")


def test_a_csv_of_step_times_only_is_one_rank(capsys: pytest.CaptureFixture[str]) -> None:
    times = 0.3 + 0.01 * (np.arange(N_ROWS) % 7)  # median 0.33 s
    Path("t.csv").write_text("step_time_s\n" + "\n".join(f"{x:.2f}" for x in times) + "\n")
    code, err = run(["analyze", "t.csv", "-q", "--json", "a.json"], capsys)
    assert code == 0, err
    s = json.loads(Path("a.json").read_text())["summary"]
    assert (s["ranks"], s["steps"] + s["warmup_steps"]) == (1, N_ROWS)
    assert s["step_time_s"]["median"] == pytest.approx(0.33)


def test_compare_a_million_step_log_with_itself(capsys: pytest.CaptureFixture[str]) -> None:
    n = 1_000_000
    times = 0.3 + 0.001 * (np.arange(n) % 11)
    Path("m.csv").write_text(
        "step,step_time_s\n" + "\n".join(f"{i},{x:.3f}" for i, x in enumerate(times, 1)) + "\n"
    )
    code, err = run(["compare", "m.csv", "m.csv", "-q", "--json", "c.json"], capsys)
    assert code == 0, err
    doc = json.loads(Path("c.json").read_text())
    assert doc["base"]["steps"] == doc["current"]["steps"] == n
    assert doc["regressions"] == []


def _nccl_xml(gpus: int) -> str:
    """An NCCL topology XML with ``gpus`` cards under CPUs of 64, each behind an NVSwitch."""
    out = ['<system version="1">']
    for c in range(-(-gpus // 64)):
        out.append(f'<cpu numaid="{c}" affinity="ffffffff" arch="x86_64" vendor="GenuineIntel">')
        for g in range(c * 64, min(gpus, (c + 1) * 64)):
            out.append(
                f'<pci busid="{g >> 8:04x}:{g & 255:02x}:00.0" class="0x030200" '
                f'link_speed="32.0 GT/s PCIe" link_width="16"><gpu dev="{g}" sm="90" rank="{g}" '
                f'gdr="1"><nvlink target="ffff:ff:{g % 18:02x}.0" count="1" tclass="0x068000"/>'
                "</gpu></pci>"
            )
        out.append("</cpu>")
    return "\n".join([*out, "</system>"]) + "\n"


@pytest.mark.parametrize("gpus", [ncclxml.MAX_GPUS + 1, 20_000])
def test_topology_xml_with_too_many_gpus_is_refused(
    gpus: int, capsys: pytest.CaptureFixture[str]
) -> None:
    Path("topo.xml").write_text(_nccl_xml(gpus))
    line = one_error(run(["topo", "import", "topo.xml", "-o", "t.yaml"], capsys))
    assert line == (
        f"xpuperf: error: topo.xml: {gpus} GPUs in one topology XML, more than 256 "
        "(NCCL_TOPO_MAX_NODES): not one host's topology; import each host's "
        "NCCL_TOPO_DUMP_FILE separately"
    )
    assert not Path("t.yaml").exists()


def test_topology_xml_at_the_cap_is_imported(capsys: pytest.CaptureFixture[str]) -> None:
    Path("topo.xml").write_text(_nccl_xml(ncclxml.MAX_GPUS))
    code, err = run(["topo", "import", "topo.xml", "-o", "t.json"], capsys)
    assert code == 0, err
    doc = json.loads(Path("t.json").read_text())
    assert len(doc["nodes"][0]["devices"]) == 256


def test_a_table_beyond_the_in_memory_limit_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a 2 GB CSV of step times only is ~2.5e8 rows (≈ 40 GB to analyse at 170 B per row):
    # refused after the streaming read, before the analysis; the limit is lowered here
    import xpuperf.pipeline as pipeline

    monkeypatch.setattr(pipeline, "MAX_ANALYSIS_ROWS", 99)
    p = tmp_path / "times.csv"
    p.write_text("step_time_s\n" + "0.1\n" * 100, encoding="utf-8")
    with pytest.raises(InputError, match=r"100 rows \(ranks × steps\) exceed"):
        pipeline.analyze_logs([p])


def test_a_csv_too_big_to_read_is_refused_from_its_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a 2 GB CSV of bare step times (5e8 rows) was read into ~15 GB; now its row count is
    # estimated from the size and the first MiB of lines and refused before any row is parsed
    import xpuperf.readers.generic as generic
    from xpuperf.readers import read_logs

    monkeypatch.setattr(generic, "MAX_READ_ROWS", 1000)
    p = tmp_path / "times.csv"
    p.write_text("step_time_s\n" + "0.1\n" * 2000, encoding="utf-8")  # 2001 lines
    with pytest.raises(InputError, match=r"about 2,001 rows .* more than the 1,000"):
        read_logs([p])


def test_calibrate_refuses_huge_or_binary_input_before_parsing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a 2 GB file of NULs ran > 120 s at 4.3 GB; a 50 GB sparse calibration file: MemoryError
    import xpuperf.calibrate.run as run_mod
    import xpuperf.costmodel.calibrated as calibrated

    nul = tmp_path / "nul.txt"
    nul.write_bytes(b"# nThread 1\n" + b"\0" * 4096)
    with pytest.raises(InputError, match="binary file"):
        run_mod.calibrate_files([nul])
    monkeypatch.setattr(run_mod, "MAX_INPUT_BYTES", 100)
    big = tmp_path / "big.txt"
    big.write_text("#" * 200, encoding="utf-8")
    with pytest.raises(InputError, match="larger than the 0 MiB a benchmark output can be"):
        run_mod.calibrate_files([big])
    monkeypatch.setattr(calibrated, "MAX_FILE_BYTES", 100)
    with pytest.raises(InputError, match="not a calibration file"):
        calibrated.load(big)
