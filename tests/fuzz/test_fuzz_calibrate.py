"""Fuzz the nccl-tests parser (and the whole calibration fit) and the NCCL_DEBUG log parser.

Property: a result (a frame with the documented columns; a calibration; a parsed NCCL log) or
InputError (a file that holds no table) / UsageError (nothing to fit) — nothing else.
"""

from __future__ import annotations

import gzip
import tempfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.fuzz.harness import check, fuzz_settings, mutated, read_seeds
from xpuperf.calibrate.nccltests import COLUMNS, read_nccl_tests
from xpuperf.calibrate.run import calibrate_files
from xpuperf.errors import InputError, UsageError

NCCL_TESTS = read_seeds(
    "calibrate_crossnic0_partial", "calibrate_eks_efa_t4", "calibrate_k8s_h100",
    "calibrate_p4d_old_format",
)  # fmt: skip


def _write(d: str, name: str, content: bytes, gz: bool) -> Path:
    p = Path(d, name + (".gz" if gz else ""))
    p.write_bytes(gzip.compress(content, mtime=0) if gz else content)
    return p


@fuzz_settings()
@given(seed=mutated(NCCL_TESTS), gz=st.booleans())
def test_nccl_tests_parser(seed, gz: bool) -> None:
    name, content = seed
    with tempfile.TemporaryDirectory() as d:
        p = _write(d, name, content, gz)
        res = check("nccl-tests parser", read_nccl_tests, p, expect=(InputError,))
        if res is not None:
            assert list(res.frame.columns) == COLUMNS
            assert len(res.frame) > 0
            assert all("\n" not in w for w in res.warnings)


@fuzz_settings()
@given(seed=mutated(NCCL_TESTS))
def test_calibrate_fit(seed) -> None:
    name, content = seed
    with tempfile.TemporaryDirectory() as d:
        p = _write(d, name, content, False)
        res = check(
            "calibrate (parse + fit)", calibrate_files, [p], expect=(InputError, UsageError)
        )
        if res is not None:
            assert res.fits or res.measurements  # one size: a single measurement, no fit


def _nccllog():
    try:
        from xpuperf.calibrate.nccllog import read_nccl_log
    except ImportError:  # written by another change; fuzzed once it exists
        return None
    return read_nccl_log


@pytest.mark.skipif(_nccllog() is None, reason="xpuperf.calibrate.nccllog not present")
@fuzz_settings()
@given(seed=mutated(NCCL_TESTS + read_seeds("calibrate_nccllog_41")), gz=st.booleans())
def test_nccl_debug_log_parser(seed, gz: bool) -> None:
    name, content = seed
    with tempfile.TemporaryDirectory() as d:
        p = _write(d, name, content, gz)
        check("NCCL_DEBUG log parser", _nccllog(), p, expect=(InputError,))
