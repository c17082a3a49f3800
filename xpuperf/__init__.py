"""xpuperf: performance diagnosis for data-parallel training clusters.

Library entry points (usable without the CLI):

- :func:`xpuperf.readers.read_logs` — per-rank logs → canonical step table (:mod:`xpuperf.steps`).
- :func:`xpuperf.analysis.analyze` — step table → :class:`xpuperf.analysis.results.AnalyzeResult`.
"""

__version__ = "0.1.0"
