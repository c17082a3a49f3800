"""Renderers of a calibration: moved to :mod:`xpuperf.report.calibrate_report` (presentation
lives in ``xpuperf/report/``); re-exported here so existing imports keep working.
"""

from xpuperf.report.calibrate_report import (
    CALIBRATION_SCHEMA,
    JSON_SCHEMA,
    render_calibration_yaml,
    render_json,
    render_terminal,
    to_calibration_dict,
    to_json_dict,
    topology_ref,
)

__all__ = [
    "CALIBRATION_SCHEMA",
    "JSON_SCHEMA",
    "render_calibration_yaml",
    "render_json",
    "render_terminal",
    "to_calibration_dict",
    "to_json_dict",
    "topology_ref",
]
