"""Calibrate the communication model from measurements (issue 10).

Library entry points (usable without the CLI):

- :func:`read_nccl_tests` — nccl-tests output → row table (:mod:`.nccltests`).
- :func:`fit_frame` — α–β fits with leave-one-out predictions (:mod:`.fit`).
- :func:`calibrate_files` — files (+ topology) → :class:`CalibrationResult` with XP6xx findings.
- :func:`to_json_dict` / :func:`to_calibration_dict` — the ``xpuperf.calibrate/1`` JSON and the
  ``xpuperf.calibration/1`` YAML (:mod:`.render`).
"""

from xpuperf.calibrate.fit import Fit, Line, fit_frame
from xpuperf.calibrate.nccltests import (
    COLLECTIVES,
    NcclTestsResult,
    TableInfo,
    bus_factor,
    read_nccl_tests,
)
from xpuperf.calibrate.render import to_calibration_dict, to_json_dict
from xpuperf.calibrate.run import CalibrationResult, calibrate_files

__all__ = [
    "COLLECTIVES",
    "CalibrationResult",
    "Fit",
    "Line",
    "NcclTestsResult",
    "TableInfo",
    "bus_factor",
    "calibrate_files",
    "fit_frame",
    "read_nccl_tests",
    "to_calibration_dict",
    "to_json_dict",
]
