"""Each framework-warning check is clean only when the log shows the thing it checks in use
(xpuperf.events.evidence). Samples in tests/data/events_evidence were written for these tests;
the expected statuses and line numbers are read off the samples by hand (see comments)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from xpuperf.events import scan, scan_events
from xpuperf.findings import CheckStatus

DATA = Path(__file__).resolve().parent.parent / "data"
EV = DATA / "events_evidence"
C, N, P = CheckStatus.CLEAN, CheckStatus.NOT_CHECKED, CheckStatus.PROBLEM
CHECKS = (
    "events.ddp_unused_parameters",
    "events.dataloader_workers",
    "events.dataloader_worker_crash",
    "events.loss_scale_overflow",
    "events.nccl_timeout",
)


def _status(report) -> tuple[CheckStatus, ...]:
    by = {c.name: c.status for c in report.checks}
    return tuple(by[n] for n in CHECKS)


def _evidence(report, name: str) -> str:
    (c,) = [c for c in report.checks if c.name == name]
    return c.evidence


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        # nccl-tests: NCCL INFO lines and a results table, no framework at all
        ("nccltests_only.log", (N, N, N, N, N)),
        # TF/Keras fp32: 'loss_scale': None and an nccl_2.8.4 library path are not evidence
        ("keras_fp32.log", (N, N, N, N, N)),
        # TensorFlow on Gaudi: HCCL environment, no NCCL
        ("tf_gaudi_hccl.log", (N, N, N, N, N)),
        # MXNet + Horovod: NCCL version banner, MXNet's '.../num_workers (' warning
        ("mxnet_horovod.log", (N, N, N, N, N)),
        # torchrun + DDP reducer line (8), --workers 8 (1), apex O2 (3), NCCL INFO (6)
        ("pytorch_ddp_apex.log", (C, C, C, C, C)),
        # Lightning: distributed banner (3), distributed_backend=nccl (5), LOCAL_RANK line (8);
        # 16-bit AMP (1) uses torch's GradScaler, which skips steps silently
        ("lightning_amp16.log", (C, C, C, N, C)),
        # DeepSpeed engine (not DDP), backend nccl (2), skip counters step=20, skipped=0 (6)
        ("deepspeed_bf16.log", (N, N, N, C, C)),
    ],
)
def test_each_check_needs_its_own_evidence(name, expected):
    r = scan_events([EV / name])
    assert _status(r) == expected
    assert r.findings == []


def test_not_checked_says_what_would_be_evidence():
    r = scan_events([EV / "nccltests_only.log"])
    assert "evidence would be: DistributedDataParallel" in _evidence(r, CHECKS[0])
    assert "evidence would be: torch.utils.data" in _evidence(r, CHECKS[1])
    assert "evidence would be: apex amp's" in _evidence(r, CHECKS[3])
    nccl = _evidence(r, CHECKS[4])
    assert "NCCL is in use ('NCCL INFO' at nccltests_only.log:6) but nothing shows PyTorch" in nccl
    hccl = _evidence(scan_events([EV / "tf_gaudi_hccl.log"]), CHECKS[4])
    assert hccl.startswith("the collectives run on HCCL ('HCCL_OVER_TCP' at tf_gaudi_hccl.log:1)")
    keras = scan_events([EV / "keras_fp32.log"])
    assert _evidence(keras, CHECKS[4]).startswith("no evidence that the job uses PyTorch's NCCL")
    assert "fp32 and bf16 runs use no loss scaling" in _evidence(keras, CHECKS[3])
    mx = _evidence(scan_events([EV / "mxnet_horovod.log"]), CHECKS[0])
    assert "another data-parallel engine ('HOROVOD_CYCLE_TIME' at mxnet_horovod.log:1" in mx


def test_clean_names_the_line_it_rests_on():
    r = scan_events([EV / "pytorch_ddp_apex.log"])
    assert _evidence(r, CHECKS[0]).endswith(
        "PyTorch DDP in use: 'Reducer buckets have been rebuilt' at pytorch_ddp_apex.log:8"
    )
    assert "DataLoader workers set ('--workers 8' at pytorch_ddp_apex.log:1)" in _evidence(
        r, CHECKS[1]
    )
    assert _evidence(r, CHECKS[3]).endswith(
        "'Selected optimization level O2' at pytorch_ddp_apex.log:3"
    )
    assert "NCCL ('NCCL INFO' at pytorch_ddp_apex.log:6) in a PyTorch job" in _evidence(
        r, CHECKS[4]
    )
    ds = scan_events([EV / "deepspeed_bf16.log"])
    assert _evidence(ds, CHECKS[3]).startswith("no step of 20 skipped on loss-scale overflow")
    assert "'with backend nccl' at deepspeed_bf16.log:2" in _evidence(ds, CHECKS[4])
    lt = scan_events([EV / "lightning_amp16.log"])
    silent = _evidence(lt, CHECKS[3])
    assert "'Using 16bit Automatic Mixed Precision' at lightning_amp16.log:1" in silent
    assert "skips overflow steps without printing" in silent


@pytest.mark.parametrize(
    ("path", "check", "code"),
    [
        # the fault line is itself the evidence: no other sign is needed
        ("events_worker_crash/stderr.txt", CHECKS[2], "XP711"),
        ("events_ddp_unused_flag/old_torch18.log", CHECKS[0], "XP701"),
        ("events_ddp_unused_error/job.err", CHECKS[0], "XP702"),
        ("events_nccl_timeout/torch1x_two_ranks.log", CHECKS[4], "XP708"),
        ("events_fairseq_min_scale/train.log", CHECKS[3], "XP707"),
        ("events_overflow_deepspeed/ds_train.log.gz", CHECKS[3], "XP705"),
        ("events_lightning_versions/pl14_fewworkers.log", CHECKS[1], "XP704"),
    ],
)
def test_fault_logs_keep_their_findings(path, check, code):
    r = scan_events([DATA / path])
    (c,) = [c for c in r.checks if c.name == check]
    assert c.status is P
    assert code in c.codes


@pytest.mark.parametrize("chunk", [64, 97, 1 << 20])
def test_evidence_line_numbers_across_chunk_borders(tmp_path, monkeypatch, chunk):
    # 500 step lines; the DDP reducer line is line 437 and 'NCCL version' line 12, so chunks
    # of 64/97 bytes find them in different reads (blocks of 64 KiB hold a whole chunk)
    monkeypatch.setattr(scan, "CHUNK", chunk)
    lines = [f"step {i} loss 1.0 time 0.25" for i in range(1, 501)]
    lines[436] = "INFO:torch.nn.parallel.distributed:Reducer buckets have been rebuilt in this"
    lines[11] = "NCCL version 2.21.5+cuda12.4"
    p = tmp_path / "t.log"
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    signs = scan.scan_files([p]).signs
    assert (signs["ddp"].line, signs["nccl"].line) == (437, 12)
    assert signs["torch"].line == 437  # 'torch.nn.parallel…' on the same line


def test_every_renderer_shows_not_checked(tmp_path):
    out, md, page = tmp_path / "r.json", tmp_path / "r.md", tmp_path / "r.html"
    log = str(EV / "nccltests_only.log")
    args = ["analyze", log, "--json", str(out), "--markdown", str(md), "--html", str(page)]
    p = subprocess.run(
        [sys.executable, "-m", "xpuperf", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert p.returncode == 0, p.stderr
    doc = json.loads(out.read_text(encoding="utf-8"))
    status = {c["name"]: c["status"] for c in doc["checks"]}
    titles = {c["name"]: c["title"] for c in doc["checks"]}
    text, html = md.read_text(encoding="utf-8"), page.read_text(encoding="utf-8")
    for name in CHECKS:
        assert status[name] == "not_checked", name
        title = titles[name]
        assert f"not checked {title}" in " ".join(p.stdout.split()), name
        assert f"| not checked | {title.replace('_', chr(92) + '_')} |" in text, name
        assert f"<tr><td>not checked</td><td>{title}</td>" in html, name
