"""Analyses: warm-up, jitter, stragglers, decomposition. They return data; renderers present it."""

from xpuperf.analysis.analyze import analyze

__all__ = ["analyze"]
