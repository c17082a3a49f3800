"""What changed between two analyze documents besides the metrics: findings, ranks, breakdown.

Inputs are ``xpuperf.analyze/1`` documents (:func:`xpuperf.report.json_report.to_dict` or a
saved ``analyze --json``), so a saved JSON compares like logs do.

- :func:`finding_changes`: findings present in one run only (a new straggler rank, new spikes or
  stalls XP203/XP204/XP207, new NCCL or framework findings), each with its cost where the finding
  states one. A finding is identified by its code and subject (the rank of XP101, the node of
  XP102, the phase of XP207), so "rank 5 slow" and "rank 9 slow" are different findings and a
  straggler that moved from rank 5 to rank 9 shows as one gone and one new.
- :func:`rank_diff`: per-rank median work (from ``straggler_analysis.per_rank``), base vs current.
- :func:`breakdown_diff`: compute / comm / data / other share and seconds per step, base vs
  current.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# finding data key that holds its cost, and what the fraction is of (first present wins)
COST_KEYS: tuple[tuple[str, str], ...] = (
    ("cost_fraction", "of throughput"),
    ("lost_fraction", "of wall time"),
    ("sync_cost_fraction", "of step time"),
    ("value", "of step time"),
)
PHASES = (("compute_fraction", "compute"), ("comm_fraction", "communication"),
          ("data_fraction", "data wait"), ("other_fraction", "host/other"))  # fmt: skip


@dataclass
class FindingChange:
    """A finding present in one run only.

    Attributes:
        change: ``"new"`` (in CURRENT only) or ``"gone"`` (in BASE only).
        code, severity, title, message: of the finding, as the run that has it states it.
        subject: ``"rank 5"``, ``"node n03"``, ``"phase data_s"`` or ``""``.
        cost_fraction: the cost the finding states (fraction), or None.
        cost_of: what the fraction is of (``"of throughput"``, ``"of step time"``, …), or None.
    """

    change: str
    code: str
    severity: str
    title: str
    subject: str
    message: str
    cost_fraction: float | None = None
    cost_of: str | None = None

    def describe(self) -> str:
        """``"new XP101 rank 5 — <title>, cost 15.1% of throughput"``."""
        who = f" {self.subject}" if self.subject else ""
        cost = ""
        if self.cost_fraction is not None:
            cost = f", cost {100 * self.cost_fraction:.1f}% {self.cost_of}"
        return f"{self.change} {self.code}{who} — {self.title}{cost}"


def _subject(f: dict[str, Any]) -> str:
    data = f.get("data") if isinstance(f.get("data"), dict) else {}
    code = str(f.get("code"))
    if code == "XP101" and data.get("rank") is not None:
        return f"rank {data['rank']}"
    if code == "XP102" and data.get("node") is not None:
        return f"node {data['node']}"
    if code == "XP207" and data.get("phase") is not None:
        return f"phase {data['phase']}"
    return ""


def _cost(f: dict[str, Any]) -> tuple[float | None, str | None]:
    data = f.get("data") if isinstance(f.get("data"), dict) else {}
    for key, of in COST_KEYS:
        v = data.get(key)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return float(v), of
    return None, None


def _keyed(doc: dict[str, Any]) -> dict[tuple[str, str, int], dict[str, Any]]:
    out: dict[tuple[str, str, int], dict[str, Any]] = {}
    for f in doc.get("findings") or []:
        if not isinstance(f, dict) or not f.get("code"):
            continue
        code, subject = str(f["code"]), _subject(f)
        i = 0
        while (code, subject, i) in out:  # the same code twice without a subject: by order
            i += 1
        out[(code, subject, i)] = f
    return out


def finding_changes(base: dict[str, Any], current: dict[str, Any]) -> list[FindingChange]:
    """Findings in CURRENT only (``new``) then in BASE only (``gone``), most severe first."""
    kb, kc = _keyed(base), _keyed(current)
    order = {"error": 0, "warning": 1, "info": 2}
    out = []
    for change, have, other in (("new", kc, kb), ("gone", kb, kc)):
        rows = []
        for key, f in have.items():
            if key in other:
                continue
            cost, of = _cost(f)
            rows.append(
                FindingChange(
                    change,
                    key[0],
                    str(f.get("severity", "")),
                    str(f.get("title", "")),
                    key[1],
                    str(f.get("message", "")),
                    cost,
                    of,
                )
            )
        rows.sort(key=lambda x: (order.get(x.severity, 3), -(x.cost_fraction or 0.0), x.code))
        out += rows
    return out


def rank_diff(base: dict[str, Any], current: dict[str, Any]) -> list[dict[str, Any]]:
    """Per-rank median work, base vs current, largest relative change first.

    Returns records ``rank, node, base_work_s, current_work_s, change`` (relative, None when a
    side lacks the rank), ``base_slowdown, current_slowdown`` (vs the median rank); empty when
    either run has no per-rank analysis (one rank).
    """

    def per_rank(doc: dict[str, Any]) -> dict[int, dict[str, Any]]:
        sa = doc.get("straggler_analysis") or {}
        rows = sa.get("per_rank") if isinstance(sa, dict) else None
        return {int(r["rank"]): r for r in rows or [] if isinstance(r, dict) and "rank" in r}

    pb, pc = per_rank(base), per_rank(current)
    if not pb or not pc:
        return []
    out = []
    for rank in sorted(set(pb) | set(pc)):
        b, c = pb.get(rank, {}), pc.get(rank, {})
        wb, wc = b.get("median_work_s"), c.get("median_work_s")
        change = wc / wb - 1.0 if wb and wc is not None else None
        out.append({"rank": rank, "node": c.get("node", b.get("node")), "base_work_s": wb,
                    "current_work_s": wc, "change": change, "base_slowdown": b.get("slowdown"),
                    "current_slowdown": c.get("slowdown")})  # fmt: skip
    out.sort(key=lambda r: -abs(r["change"]) if r["change"] is not None else 0.0)
    return out


def breakdown_diff(base: dict[str, Any], current: dict[str, Any]) -> list[dict[str, Any]]:
    """Phase shares and seconds per step (share × mean step time), base vs current.

    Returns records ``phase, base_fraction, current_fraction, base_s, current_s`` for the phases
    known on either side; empty when neither run has a breakdown.
    """

    def side(doc: dict[str, Any]) -> tuple[dict[str, Any], float | None]:
        b = doc.get("breakdown") if isinstance(doc.get("breakdown"), dict) else {}
        st = ((doc.get("summary") or {}).get("step_time_s") or {}).get("mean")
        return b, st if isinstance(st, (int, float)) else None

    (bb, tb), (bc, tc) = side(base), side(current)
    out = []
    for key, label in PHASES:
        fb, fc = bb.get(key), bc.get(key)
        if fb is None and fc is None:
            continue
        sb = fb * tb if fb is not None and tb is not None else None
        sc = fc * tc if fc is not None and tc is not None else None
        out.append({"phase": label, "base_fraction": fb, "current_fraction": fc,
                    "base_s": sb, "current_s": sc})  # fmt: skip
    return out
