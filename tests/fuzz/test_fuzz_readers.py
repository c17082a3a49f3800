"""Fuzz every log reader: mutated real samples → a valid canonical step table or InputError.

Targets: each registered format forced with ``fmt=`` (the 12 framework formats and the generic
CSV, TSV, JSON Lines and Parquet readers), detection by extension and content over all samples
(through the whole ``analyze_logs`` pipeline and the JSON report), ``.gz`` input (also cut
short), and folders holding several mutated files of mixed formats.
"""

from __future__ import annotations

import gzip
import io
import json
import tempfile
import warnings
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from tests.fuzz.harness import ROOT, check, fuzz_settings, mutated, read_seeds
from xpuperf import steps
from xpuperf.errors import InputError
from xpuperf.pipeline import analyze_logs
from xpuperf.readers import FORMATS, read_logs
from xpuperf.report.json_report import to_dict

FRAMEWORK_DIRS = {
    "megatron": "formats_megatron",
    "deepspeed": "formats_deepspeed",
    "torchtitan": "formats_torchtitan",
    "mmengine": "formats_mmengine",
    "maskrcnn": "formats_maskrcnn",
    "paddle": "formats_paddle",
    "hf_trainer": "formats_hf_trainer",
    "keras": "formats_keras",
    "tf_cnn_benchmarks": "formats_tfcnn",
    "mindspore": "formats_mindspore",
    "ascend_step_trace": "formats_ascend",
    "mlperf": "formats_mlperf",
    "detectron2": "formats_detectron2",
    "hf_trainer_state": "formats_hf_trainer_state",
    "timm": "formats_timm",
    "nanogpt": "formats_nanogpt",
    "fairseq": "formats_fairseq",
    "tqdm": "formats_tqdm",
}


def _seeds(folder: str, ext: str) -> list[tuple[str, bytes]]:
    return read_seeds(folder, pattern=f"*.{ext}")


def _generic_seeds() -> dict[str, list[tuple[str, bytes]]]:
    base = (ROOT / "sample_logs/single_card/baseline.csv").read_bytes()
    worker = (ROOT / "sample_logs/periodic_spikes_8rank/worker-3.csv").read_bytes()
    jsonl = (ROOT / "sample_logs/slow_rank_16rank/rank5.jsonl").read_bytes()
    records = [json.loads(x) for x in jsonl.splitlines()[:60]]
    buf = io.BytesIO()
    pd.read_csv(io.BytesIO(base)).to_parquet(buf)
    return {
        "csv": [
            ("baseline.csv", base),
            ("worker-3.csv", worker),
            *read_seeds("formats_ascend", pattern="*.csv"),
        ],
        "tsv": [
            ("baseline.tsv", base.replace(b",", b"\t")),
            *read_seeds("readers_mixed", pattern="*.tsv"),
        ],
        "jsonl": [
            ("rank5.jsonl", jsonl),
            ("list.json", json.dumps(records, indent=1).encode()),
            *read_seeds("readers_mixed", pattern="*.jsonl"),
        ],
        "parquet": [("baseline.parquet", buf.getvalue())],
    }


SEEDS: dict[str, list[tuple[str, bytes]]] = {
    **{name: read_seeds(d) for name, d in FRAMEWORK_DIRS.items()},
    **_generic_seeds(),
}
ALL_SEEDS = [s for v in SEEDS.values() for s in v] + read_seeds("readers_mixed")
EXT = {"csv": ".csv", "tsv": ".tsv", "jsonl": ".jsonl", "parquet": ".parquet"}


def test_every_registered_format_has_seeds() -> None:
    assert {f.name for f in FORMATS} == set(SEEDS)


def _valid(res) -> None:
    """The contract of ReadResult: a canonical table that validates, one-line warnings."""
    t = res.table
    assert len(t) > 0
    assert set(steps.REQUIRED) <= set(t.columns) <= set(steps.COLUMNS), t.columns
    pd.testing.assert_frame_equal(steps.validate(t.copy()), t)
    assert str(t["rank"].dtype) == "int32"
    assert str(t["step"].dtype) == "int64"
    assert res.sources
    assert all(isinstance(w, str) and "\n" not in w for w in res.warnings)


def _maybe_gzip(data: bytes, how: int) -> tuple[bytes, str]:
    """how: 0 plain, 1 gzip, 2 gzip cut short."""
    if how == 0:
        return data, ""
    z = gzip.compress(data, mtime=0)
    return (z if how == 1 else z[: max(2, len(z) * 2 // 3)]), ".gz"


def _read(target: str, files: dict[str, bytes], **kw):
    with tempfile.TemporaryDirectory() as d, warnings.catch_warnings():
        warnings.simplefilter("error")  # a numpy/pandas warning would reach the user's stderr
        for name, data in files.items():
            p = Path(d, name)
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(data)
        paths = kw.pop("paths", None) or [str(Path(d, n)) for n in files]
        res = check(target, read_logs, paths, expect=(InputError,), **kw)
        if res is not None:
            _valid(res)
        return res


@pytest.mark.parametrize("fmt", sorted(SEEDS))
@fuzz_settings()
@given(data=st.data())
def test_forced_format(fmt: str, data) -> None:
    _, content = data.draw(mutated(SEEDS[fmt]))
    content, gz = _maybe_gzip(content, data.draw(st.sampled_from([0, 0, 0, 1, 2])))
    _read(f"read_logs fmt={fmt}", {f"rank0{EXT.get(fmt, '.log')}{gz}": content}, fmt=fmt)


def _auto_name(seed: str) -> str:
    suffix = Path(seed).suffix.lower()
    return "rank0" + (".log" if suffix == ".txt" else suffix)


@fuzz_settings()
@given(seed_data=mutated(ALL_SEEDS), gz=st.sampled_from([0, 0, 0, 1, 2]))
@example(seed_data=("x.csv", b"step,step_time_s\n1,0.3\n2,1e309\n"), gz=0)
def test_detected_format_through_the_pipeline(seed_data, gz) -> None:
    seed, content = seed_data
    content, ext = _maybe_gzip(content, gz)
    name = _auto_name(seed) + ext
    with tempfile.TemporaryDirectory() as d, warnings.catch_warnings():
        warnings.simplefilter("error")
        p = Path(d, name)
        p.write_bytes(content)
        res = check("analyze_logs (detected format)", analyze_logs, [str(p)], expect=(InputError,))
        if res is not None:
            json.dumps(to_dict(res), allow_nan=False)


@fuzz_settings()
@given(files=st.lists(mutated(ALL_SEEDS, max_ops=2), min_size=1, max_size=4), data=st.data())
def test_folder_of_mixed_formats(files, data) -> None:
    named = {}
    for i, (seed, content) in enumerate(files):
        sub = data.draw(st.sampled_from(["", "node1/", "a b/"]))
        named[f"logs/{sub}rank{i}{Path(_auto_name(seed)).suffix}"] = content
    with tempfile.TemporaryDirectory() as d:
        for name, content in named.items():
            p = Path(d, name)
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(content)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            res = check(
                "read_logs (folder, mixed formats)",
                read_logs,
                [str(Path(d, "logs"))],
                expect=(InputError,),
            )
        if res is not None:
            _valid(res)
