"""Framework warnings in training logs: one test per finding with its value, the healthy logs
(corpus pieces) on which every check is clean or not_checked, and inputs without framework output
(not_checked). Expected numbers are worked out by hand from the sample files (see comments)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from xpuperf.events import scan_events
from xpuperf.findings import CheckStatus, Severity

DATA = Path(__file__).resolve().parent.parent / "data"


def _codes(report) -> list[str]:
    return sorted(f.code for f in report.findings)


def _check(report, name: str):
    (c,) = [c for c in report.checks if c.name == name]
    return c


def _finding(report, code: str):
    (f,) = [f for f in report.findings if f.code == code]
    return f


def _table(ranks: int, steps: np.ndarray, times: np.ndarray, **cols: float) -> pd.DataFrame:
    n = len(steps)
    df = pd.DataFrame(
        {
            "rank": np.repeat(np.arange(ranks), n).astype("int32"),
            "step": np.tile(steps, ranks).astype("int64"),
            "step_time_s": np.tile(times, ranks).astype("float64"),
        }
    )
    for k, v in cols.items():
        df[k] = v
    return df


ALL_CHECKS = {
    "events.ddp_unused_parameters",
    "events.dataloader_workers",
    "events.dataloader_worker_crash",
    "events.loss_scale_overflow",
    "events.nccl_timeout",
    "events.omp_threads",
}


def test_every_check_is_reported_and_serialisable():
    r = scan_events([DATA / "events_worker_crash/stderr.txt"])
    assert {c.name for c in r.checks} == ALL_CHECKS
    json.dumps(r.to_dict())
    for f in r.findings:
        assert "threshold" in f.message


# --- DDP ------------------------------------------------------------------------------------


def test_ddp_flag_without_unused_parameters():
    # train.log: torchrun banner (lines 1-4), a step line (5), the warning from ranks 1, 0, 3, 2
    # (lines 6-9, rank 0's in ANSI yellow).
    r = scan_events([DATA / "events_ddp_unused_flag/train.log"])
    f = _finding(r, "XP701")
    assert f.severity is Severity.WARNING
    assert f.data["count"] == 4
    assert f.data["ranks"] == [0, 1, 2, 3]
    assert "find_unused_parameters=False" in f.message
    assert "cost is not measured" in f.message
    (ev,) = [e for e in r.events if e.kind == "ddp_no_unused"]
    assert (ev.line, ev.count) == (6, 4)
    assert ev.text.startswith("[rank1]:[W612")
    assert _check(r, "events.ddp_unused_parameters").status is CheckStatus.PROBLEM


def test_ddp_flag_cost_is_never_bound_by_host_other_time():
    # the extra traversal runs inside backward, i.e. in compute_s: host/other time
    # (0.5 - 0.3 - 0.1 - 0.05 = 50 ms here) does not hold it, so no "at most" bound is given
    t = _table(4, np.arange(1, 11), np.full(10, 0.5), compute_s=0.3, comm_s=0.1, data_s=0.05)
    msg = _finding(scan_events([DATA / "events_ddp_unused_flag/train.log"], t), "XP701").message
    assert "at most" not in msg
    assert "host/other" not in msg
    assert "cost is not measured" in msg
    assert "time a few steps with find_unused_parameters=False" in msg


def test_ddp_one_rank_is_singular():
    # one_rank.log: one warning, from [rank2]
    f = _finding(scan_events([DATA / "events_ddp_unused_flag/one_rank.log"]), "XP701")
    assert "one_rank.log:1, rank 2)" in f.message
    assert "ranks 2" not in f.message


def test_ddp_flag_torch18_text():
    # torch 1.8 printed "... did not find any unused parameters. This flag ..." without a prefix
    r = scan_events([DATA / "events_ddp_unused_flag/old_torch18.log"])
    assert _codes(r) == ["XP701"]
    assert _finding(r, "XP701").data["ranks"] == []


def test_ddp_unused_parameters_error():
    # mpirun-tagged: ranks 1 and 3 raise; indices "40 41 42 43" (4) and "40 41" (2)
    r = scan_events([DATA / "events_ddp_unused_error/job.err"])
    f = _finding(r, "XP702")
    assert f.severity is Severity.ERROR
    assert f.data["ranks"] == [1, 3]
    assert f.data["unused_indices"] == {1: 4, 3: 2}
    assert _check(r, "events.ddp_unused_parameters").codes == ("XP702",)


# --- DataLoader -----------------------------------------------------------------------------


def _stall_table() -> pd.DataFrame:
    # 400 steps of 0.2 s; step 0 (warm-up) +5 s; the first step of epochs 2-4 (100, 200, 300)
    # +3 s. Stall = 3.0 s at 3 epoch starts; summed step time 400*0.2 + 5 + 3*3 = 94 s, so the
    # stall is 9/94 = 9.57 % of it.
    times = np.full(400, 0.2)
    times[0] += 5.0
    times[[100, 200, 300]] += 3.0
    return _table(2, np.arange(400), times)


def test_spawn_without_persistent_workers_with_measured_stall():
    # spawn.log: the Lightning 1.6 warning on line 4; tqdm bars give 100 batches an epoch
    r = scan_events([DATA / "events_lightning_spawn/spawn.log"], _stall_table())
    f = _finding(r, "XP703")
    assert f.data["stall_s"] == pytest.approx(3.0)
    assert "3.00 s at each of 3 epoch starts (9.6% of the summed step time)" in f.message
    assert "persistent_workers=True" in f.message
    assert "XP712" not in _codes(r)  # the stall is XP703's cost, not a second finding


def test_stall_without_warning_plain_ddp():
    # MMEngine lines "[ 50/100]": 100 iterations an epoch; plain DDP prints no warning
    r = scan_events([DATA / "events_lightning_spawn/mmengine_plain_ddp.log"], _stall_table())
    f = _finding(r, "XP712")
    assert f.data["epochs"] == 3
    assert f.data["fraction"] == pytest.approx(9 / 94)


def test_no_stall_is_clean_with_measurement():
    flat = _table(2, np.arange(400), np.full(400, 0.2))
    r = scan_events([DATA / "events_lightning_spawn/mmengine_plain_ddp.log"], flat)
    c = _check(r, "events.dataloader_workers")
    assert c.status is CheckStatus.CLEAN
    assert "measured stall 0.00 s" in c.evidence
    assert r.findings == []


def test_few_workers():
    r = scan_events([DATA / "events_lightning_spawn/fewworkers.log"])
    f = _finding(r, "XP704")
    assert f.data["loaders"] == ["train_dataloader", "val_dataloader"]
    assert "num_workers=7" in f.message


LV = DATA / "events_lightning_versions"


def test_lightning_2x_spawn_start_method_names_the_loaders():
    # Lightning >= 2.1 wording (lines 6-7): two loaders, spawn start method, not persistent;
    # the pin_memory + persistent_workers combination warning on line 8 is not this warning.
    r = scan_events([LV / "lightning22_spawn.log"])
    f = _finding(r, "XP703")
    assert f.data["kinds"] == ["spawn_method_not_persistent"]
    assert f.data["loaders"] == ["train_dataloader", "val_dataloader"]
    assert "'train_dataloader', 'val_dataloader' start their DataLoader workers" in f.message
    assert "lightning22_spawn.log:6" in f.message
    (ev,) = [e for e in r.events if e.kind == "spawn_method_not_persistent"]
    assert ev.count == 2
    assert "XP704" not in _codes(r)


def test_lightning_2x_qa_log_fires_spawn_and_few_workers():
    # QA's f1 in the same wording: 'train_dataloader' spawn warning and a 2.x few-workers line
    r = scan_events([LV / "lightning22_spawn.log", LV / "lightning23_fewworkers.log"])
    assert _codes(r) == ["XP703", "XP704"]
    f = _finding(r, "XP704")
    assert f.data["loaders"] == ["test_dataloader"]
    assert "num_workers=11" in f.message


@pytest.mark.parametrize(
    ("name", "loader", "rule"),
    [
        # Lightning >= 2.1: `elif dataloader.num_workers < 2` (data_connector.py, 2.1.0-2.6)
        ("lightning23_fewworkers.log", "test_dataloader", "num_workers < 2 (Lightning >= 2.1)"),
        # 0.9-2.0: `num_workers <= 2 < num_cpus` (data_loading.py, later data_connector.py)
        (
            "pl14_fewworkers.log",
            "train dataloader",
            "num_workers <= 2 on a machine with more than 2 CPUs (Lightning <= 2.0)",
        ),
        # 0.7: `num_workers <= 2` and no "(try N …)"
        (
            "pl07_fewworkers.log",
            "val dataloader 0",
            "num_workers <= 2 on a machine with more than 2 CPUs (Lightning <= 2.0)",
        ),
    ],
)
def test_few_workers_threshold_follows_the_lightning_version(name, loader, rule):
    r = scan_events([LV / name])
    f = _finding(r, "XP704")
    assert f.data["loaders"] == [loader]
    assert f"threshold: Lightning's own, {rule})" in f.message


def test_few_workers_1x_suggests_the_cpu_count():
    # "(try 24 which is the number of cpus on this machine)"
    f = _finding(scan_events([LV / "pl14_fewworkers.log"]), "XP704")
    assert f.data["cpus"] == 24
    assert "up to 24 (CPUs on the machine) / ranks per node" in f.message


def test_lightning_1x_spawn_wordings():
    # 0.8-1.2 "Dataloader(num_workers>0) and ddp_spawn do not mix well!" -> XP703
    r = scan_events([LV / "pl11_spawn.log"])
    assert _codes(r) == ["XP703"]
    assert "re-created at every epoch with ddp_spawn (" in r.findings[0].message
    assert "pl11_spawn.log:3)" in r.findings[0].message
    # 0.8-1.2 "You are using `distributed_backend=ddp_spawn` with num_workers=0" -> XP704
    r = scan_events([LV / "pl09_spawn_zero.log"])
    f = _finding(r, "XP704")
    assert "threshold: Lightning's own, num_workers=0 with ddp_spawn)" in f.message


def test_too_many_loader_workers_qa_stderr():
    # dl.err line 2: torch warns num_workers=16 against a suggested max of 8 (no prefix, no
    # launcher line: processes per node unknown)
    r = scan_events([DATA / "events_loader_too_many/dl.err"])
    assert _codes(r) == ["XP701", "XP713"]
    f = _finding(r, "XP713")
    assert f.severity is Severity.WARNING
    assert f.data == {"workers": 16, "suggested_max": 8, "procs": None, "per_process_max": None}
    assert "dl.err:2" in f.message
    assert "threshold: the suggested max, 8" in f.message
    assert "num_workers per process ≤ CPUs / processes per node" in f.message
    assert "persistent_workers=True" in f.message
    c = _check(r, "events.dataloader_workers")
    assert c.status is CheckStatus.PROBLEM
    assert c.codes == ("XP713",)
    (ev,) = [e for e in r.events if e.kind == "loader_too_many_workers"]
    assert (ev.line, ev.count) == (2, 1)


def test_too_many_loader_workers_per_rank_with_nproc():
    # tee.log: --nproc_per_node=4, ranks 0 and 2 warn 32 workers vs 24 CPUs: 24 // 4 = 6 each
    f = _finding(scan_events([DATA / "events_loader_too_many/tee.log"]), "XP713")
    assert f.data == {"workers": 32, "suggested_max": 24, "procs": 4, "per_process_max": 6}
    assert "24 CPUs / 4 processes per node = 6" in f.message
    assert "tee.log:2, ranks 0, 2)" in f.message


def test_too_many_loader_workers_cpuset_not_checked_wording():
    # Windows (CRLF): 12 workers vs 10 from os.cpu_count() ("cpuset is not taken into account")
    f = _finding(scan_events([DATA / "events_loader_too_many/windows.log"]), "XP713")
    assert (f.data["workers"], f.data["suggested_max"]) == (12, 10)
    assert "os.cpu_count()" in f.message


def test_loader_workers_without_suggested_max_is_no_finding():
    # torch could not count the CPUs: it warns for any num_workers > 0, no threshold to compare
    r = scan_events([DATA / "events_loader_too_many/unsized.log"])
    assert r.findings == []
    assert [e.kind for e in r.events] == ["loader_workers_unsized"]
    assert _check(r, "events.dataloader_workers").status is CheckStatus.CLEAN


def test_worker_killed_by_bus_error():
    # a tqdm bar glued in front of the first line; both lines count
    r = scan_events([DATA / "events_worker_crash/stderr.txt"])
    f = _finding(r, "XP711")
    assert f.data == {"signals": ["Bus error"], "pids": ["48213"]}
    assert "/dev/shm" in f.message
    assert r.events[0].count == 2


# --- loss-scale overflow --------------------------------------------------------------------


def test_apex_overflow_fraction_from_step_table():
    # each of 2 local ranks ([default0]/[default1]) prints 20 overflows: 4 at the start, 16 at
    # steps 120-135. 20 - 16 (start-up allowance) = 4 of 200 steps = 2 % > 1 %;
    # wasted 4 * 0.5 s = 2 s. Scale 65536 halved 20 times = 0.0625.
    t = _table(2, np.arange(1, 201), np.full(200, 0.5))
    r = scan_events([DATA / "events_overflow_apex/train.log"], t)
    f = _finding(r, "XP705")
    assert (f.data["skipped"], f.data["steps"], f.data["beyond_start"]) == (20, 200, 4)
    assert f.data["fraction"] == pytest.approx(0.02)
    assert "about 2 s of step time" in f.message
    assert "0.0625" in f.message


def test_apex_overflow_without_step_count_is_not_checked():
    r = scan_events([DATA / "events_overflow_apex/train.log"])
    assert _codes(r) == ["XP706"]
    assert _check(r, "events.loss_scale_overflow").status is CheckStatus.NOT_CHECKED


def test_deepspeed_overflow_counters_gzip():
    # last counters "step=200, skipped=30": 30 - 16 = 14 of 200 = 7 %
    r = scan_events([DATA / "events_overflow_deepspeed/ds_train.log.gz"])
    f = _finding(r, "XP705")
    assert (f.data["skipped"], f.data["steps"]) == (30, 200)
    assert f.data["fraction"] == pytest.approx(0.07)
    (ev,) = r.events
    assert ev.kind == "deepspeed_overflow"
    assert ev.count == 30


def test_megatron_skipped_iterations():
    # logged every 100 iterations, 100..1000: the step table's span is 1000 - 100 + 100 = 1000;
    # skipped 3 + 20 + 15 = 38 (zero counts are not read); 38 - 16 = 22 of 1000 = 2.2 %
    t = _table(1, np.arange(100, 1001, 100), np.full(10, 1.5))
    r = scan_events([DATA / "events_overflow_megatron/megatron.log"], t)
    f = _finding(r, "XP705")
    assert (f.data["skipped"], f.data["steps"]) == (38, 1000)
    assert f.data["fraction"] == pytest.approx(0.022)


def test_fairseq_minimum_loss_scale():
    r = scan_events([DATA / "events_fairseq_min_scale/train.log"])
    assert _codes(r) == ["XP707"]  # 4 skips are within the start-up allowance
    assert _finding(r, "XP707").severity is Severity.ERROR
    (ev,) = [e for e in r.events if e.kind == "fairseq_overflow"]
    assert (ev.count, ev.line) == (4, 2)
    assert _check(r, "events.loss_scale_overflow").status is CheckStatus.PROBLEM


# --- NCCL -----------------------------------------------------------------------------------


def test_nccl_timeout_ranks_in_different_collectives():
    # ranks 0-2 in ALLREDUCE SeqNum 4410, rank 3 in BROADCAST 4409; rank 0's text repeated in
    # the "terminate called" lines counts once
    t = _table(4, np.arange(1, 5), np.full(4, 1.0))
    r = scan_events([DATA / "events_nccl_timeout/torch24_rank_prefixed.log"], t)
    f = _finding(r, "XP708")
    assert f.severity is Severity.ERROR
    got = {(c["op"], c["seq"]): c["ranks"] for c in f.data["collectives"]}
    assert got == {("ALLREDUCE", "4410"): [0, 1, 2], ("BROADCAST", "4409"): [3]}
    assert (f.data["timeout_ms"], f.data["ran_ms"]) == (600000, 600490)
    assert "different code paths" in f.message
    assert "TORCH_NCCL_ASYNC_ERROR_HANDLING=1" in f.message
    assert "NCCL_DEBUG=INFO" in f.message


def test_nccl_timeout_torch1x_names_silent_ranks():
    t = _table(4, np.arange(1, 5), np.full(4, 1.0))
    r = scan_events([DATA / "events_nccl_timeout/torch1x_two_ranks.log"], t)
    f = _finding(r, "XP708")
    assert f.data["ranks"] == [1, 2]
    assert f.data["timeout_ms"] == 1800000
    assert "Ranks 0, 3 of the step table printed no timeout: look at their logs" in f.message
    assert "same collective" in f.message


def test_nccl_timeout_one_silent_rank_is_singular():
    # ranks 1 and 2 time out; a 3-rank step table leaves rank 0 alone
    t = _table(3, np.arange(1, 5), np.full(4, 1.0))
    f = _finding(scan_events([DATA / "events_nccl_timeout/torch1x_two_ranks.log"], t), "XP708")
    assert "Rank 0 of the step table printed no timeout: look at its log first" in f.message


# --- threads --------------------------------------------------------------------------------


def test_omp_oversubscribed():
    # OMP_NUM_THREADS=4 x 8 processes = 32 threads on 16 CPUs; remedy 16 // 8 = 2
    r = scan_events([DATA / "events_omp_oversubscribed/job.out"])
    f = _finding(r, "XP710")
    assert f.data == {"threads": 4, "procs": 8, "cpus": 16}
    assert "OMP_NUM_THREADS=2" in f.message


def test_omp_fits_is_clean():
    r = scan_events([DATA / "events_omp_oversubscribed/fits.out"])
    c = _check(r, "events.omp_threads")
    assert c.status is CheckStatus.CLEAN
    assert "= 16 threads on 16 CPUs" in c.evidence


@pytest.mark.parametrize(
    ("name", "status", "threads"),
    [
        # QA omp2.out: OMP_NUM_THREADS=4 x --nproc_per_node=8 = 32 threads on 16 CPUs -> XP710
        ("xtrace_only.out", CheckStatus.PROBLEM, 4),
        # QA omp_fits.out: 2 x 8 = 16 threads on 16 CPUs -> clean
        ("fits.out", CheckStatus.CLEAN, 2),
    ],
)
def test_omp_facts_alone_are_events(name, status, threads):
    # three lines, each a fact the OMP check uses: one omp_settings event counted 3 times, so
    # a file holding only them is recognised as job output (scan_events(...).events non-empty)
    r = scan_events([DATA / "events_omp_oversubscribed" / name])
    (ev,) = r.events
    assert (ev.kind, ev.line, ev.count) == ("omp_settings", 1, 3)
    c = _check(r, "events.omp_threads")
    assert c.status is status
    if status is CheckStatus.PROBLEM:
        f = _finding(r, "XP710")
        assert f.data == {"threads": threads, "procs": 8, "cpus": 16}
        assert "= 32 threads on 16 CPUs" in f.message


def test_torchrun_default_is_info_and_clean():
    # torchrun set 1; 32 CPUs / 4 processes allow up to 8
    r = scan_events([DATA / "events_omp_oversubscribed/torchrun_default.out"])
    assert _codes(r) == ["XP709"]
    assert "allow up to 8" in _finding(r, "XP709").message
    assert _check(r, "events.omp_threads").status is CheckStatus.CLEAN


# --- healthy logs and inputs without framework output ---------------------------------------


def test_healthy_corpus_pieces_no_finding():
    # pieces of corpus 07 (maskrcnn, 8 ranks: 3 overflow iterations of the start-up search,
    # printed interleaved as 3/4/5 and glued '33'/'55'), 09 (BERT, srun -l), 30 (torchtitan),
    # 36 (Megatron-LLM, 0 skipped iterations: its lines are not even read).
    files = sorted((DATA / "events_healthy").iterdir())
    r = scan_events(files)
    assert r.findings == []
    for c in r.checks:
        assert c.status in (CheckStatus.CLEAN, CheckStatus.NOT_CHECKED), c
    assert _check(r, "events.nccl_timeout").status is CheckStatus.CLEAN
    ov = _check(r, "events.loss_scale_overflow")
    assert ov.status is CheckStatus.CLEAN
    assert ov.evidence.startswith("3 steps skipped")


def test_healthy_maskrcnn_with_step_table():
    # logged every 50 iterations, 50..150 on 8 ranks: span 150; 3 skips are within the allowance
    t = _table(8, np.array([50, 100, 150]), np.full(3, 0.2))
    r = scan_events([DATA / "events_healthy/maskrcnn_8rank_head.txt"], t)
    assert r.findings == []
    assert (
        "3 of 150 steps skipped on overflow, within the 16"
        in _check(r, "events.loss_scale_overflow").evidence
    )


def test_nccl_debug_lines_only_are_not_checked():
    # NCCL INFO/WARN lines, the "NCCL version" banner, blank and prefix-only lines: no job output
    r = scan_events([DATA / "events_nccl_only/nccl_debug.log"])
    assert r.findings == []
    assert r.events == []
    for c in r.checks:
        assert c.status is CheckStatus.NOT_CHECKED, c
        assert c.evidence == "only NCCL debug lines were scanned: pass the job's stdout/stderr"


def test_nccl_lines_beside_a_training_line_are_not_evidence_of_pytorch():
    # line 3 is the training script's own output, but nothing shows PyTorch: the watchdog
    # (XP708) and DDP (XP701/XP702) lines are PyTorch's, so neither check gives a verdict
    r = scan_events([DATA / "events_nccl_only/nccl_and_train.log"])
    c = _check(r, "events.nccl_timeout")
    assert c.status is CheckStatus.NOT_CHECKED
    assert "NCCL is in use ('NCCL INFO' at nccl_and_train.log:1) but nothing shows PyTorch" in (
        c.evidence
    )
    assert _check(r, "events.ddp_unused_parameters").status is CheckStatus.NOT_CHECKED


def test_blank_file_is_not_checked():
    r = scan_events([DATA / "events_nccl_only/blank.log"])
    for c in r.checks:
        assert c.status is CheckStatus.NOT_CHECKED, c
        assert "hold no line of text" in c.evidence


def test_step_tables_only_are_not_checked(tmp_path: Path):
    t = _table(2, np.arange(1, 6), np.full(5, 0.1))
    csv, pq = tmp_path / "steps.csv", tmp_path / "steps.parquet"
    t.to_csv(csv, index=False)
    t.to_parquet(pq)
    r = scan_events([csv, pq], t)
    assert r.findings == []
    assert r.files_scanned == []
    assert sorted(r.files_skipped) == sorted([str(csv), str(pq)])
    for c in r.checks:
        assert c.status is CheckStatus.NOT_CHECKED
        assert "pass the job's stdout/stderr log" in c.evidence
