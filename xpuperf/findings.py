"""Stable finding codes and the :class:`Finding` record every analysis emits.

Codes never change meaning once released (style.md rule 10):

- ``XP1xx`` stragglers, ``XP2xx`` jitter, ``XP3xx`` decomposition / speedup,
  ``XP4xx`` data quality, ``XP5xx`` topology, ``XP6xx`` collectives (nccl-tests, NCCL logs),
  ``XP7xx`` framework and runtime warnings printed in training logs.

Every message states the value, the threshold and the remedy (style.md rule 9).

A :class:`Check` records whether the input held the evidence a check needs: a verdict such as
"no straggler" or "no misconfiguration" is only given for a check whose status is ``clean``
(evidence present, nothing wrong); a check without evidence is ``not_checked`` and says which
input would let it run (docs/diagnosis.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any


class Severity(str, Enum):
    """How much a finding matters; ordered info < warning < error."""

    INFO = "info"
    WARNING = "warning"
    ERROR = "error"

    @property
    def rank(self) -> int:
        return {"info": 0, "warning": 1, "error": 2}[self.value]


# code -> short title. The title is for tables and docs; the message carries the numbers.
CODES: dict[str, str] = {
    "XP101": "straggler rank (deterministic or intermittent)",
    "XP102": "deterministic straggler node",
    "XP103": "random stragglers (slowest rank changes step to step)",
    "XP104": "no straggler",
    "XP105": "straggler signal weak: no per-rank work columns",
    "XP201": "FPS jitter above threshold",
    "XP202": "heavy step-time tail (p99/p50)",
    "XP203": "step-time spikes",
    "XP204": "periodic spikes",
    "XP205": "throughput change point",
    "XP206": "flat FPS line (healthy)",
    "XP207": "synchronous stall on every rank at the same steps",
    "XP210": "a phase's time spreads while the step time is flat",
    "XP211": "time outside the logged steps (between steps)",
    "XP301": "communication exposed",
    "XP302": "input (data loading) stall",
    "XP303": "host / other overhead",
    "XP304": "speedup below target",
    "XP305": "per-card batch differs from baseline",
    "XP310": "scaling efficiency below target (scaling table)",
    "XP311": "scaling loss already inside one node (not the network)",
    "XP312": "scaling loss across nodes (the network)",
    "XP313": "per-card time grows with processes on one node (oversubscription?)",
    "XP314": "the table's own efficiency or speedup disagrees with its numbers",
    "XP315": "per-card batch differs from the one-card row",
    "XP316": "superlinear scaling (efficiency above 1)",
    "XP401": "rows skipped while reading",
    "XP402": "missing ranks",
    "XP403": "ranks with missing steps",
    "XP404": "warm-up steps excluded",
    "XP405": "too few steps for a confident verdict",
    "XP501": "card's NIC is on another NUMA node",
    "XP502": "NIC shared by more than 2 cards",
    "XP503": "cards without NUMA affinity",
    "XP504": "non-uniform intra-node links",
    "XP505": "uneven link groups",
    "XP506": "rank order crosses nodes more than needed",
    "XP507": "cards without an assigned NIC",
    "XP508": "NIC speed unknown",
    "XP510": "rank bound to a NUMA node remote from its card",
    "XP511": "rank bound across several NUMA nodes",
    "XP512": "ranks on one node share CPUs (oversubscription)",
    "XP513": "rank not bound (may run on every CPU)",
    "XP514": "memory bound to a NUMA node other than the rank's CPUs",
    "XP515": "ranks without a binding in the binding file",
    "XP516": "binding not checked: card's NUMA node unknown",
    "XP520": "consumer GPUs without peer-to-peer: PCIe traffic goes through host memory",
    "XP521": "flat PCIe topology inside a VM: NCCL cannot see the real PCIe tree",
    "XP522": "flat PCIe topology: no PCIe switch visible (VM not confirmed)",
    "XP523": "NVLinks inactive (nvidia-smi nvlink -s)",
    "XP524": "NVLink running below its generation's full rate",
    "XP601": "measured busbw far below what the topology allows",
    "XP602": "calibrated model misses its held-out accuracy target",
    "XP603": "nccl-tests reported wrong results",
    "XP604": "latency floor not measured",
    "XP605": "busbw still rising at the largest size",
    "XP606": "single nccl-tests measurement far below the link under it",
    "XP607": "single nccl-tests measurement is latency-bound (no bandwidth comparison)",
    "XP610": "runs of one benchmark configuration reach different busbw plateaus",
    "XP611": "busbw collapses at some sizes in the middle of a sweep",
    "XP612": "several benchmark runs in one file, fitted apart",
    "XP650": "no NCCL misconfiguration found",
    "XP651": "inter-node traffic on TCP sockets although RDMA is available",
    "XP652": "inter-node traffic on TCP sockets (no RDMA NIC found)",
    "XP653": "GPUDirect RDMA not used between nodes",
    "XP654": "peer-to-peer disabled inside a node (traffic through host memory)",
    "XP655": "NIC on another CPU socket than its GPUs",
    "XP656": "ring crosses nodes more than needed",
    "XP657": "NCCL topology search fell back to a simple order",
    "XP658": "a node's transport differs from the others",
    "XP659": "NCCL log lacks the lines a check needs",
    "XP660": "NCCL could not load its RDMA library, device or net plugin",
    "XP661": "NCCL could not connect to a peer",
    "XP662": "InfiniBand / RDMA verbs error in NCCL",
    "XP663": "CUDA failure inside NCCL",
    "XP664": "NCCL shared-memory segment error (/dev/shm)",
    "XP665": "other NCCL WARN lines",
    "XP666": "NCCL topology / ring construction error",
    "XP701": "DDP find_unused_parameters=True but no parameter unused",
    "XP702": "DDP stopped: parameters without gradient",
    "XP703": "DataLoader workers re-created every epoch (ddp_spawn)",
    "XP704": "too few DataLoader workers",
    "XP705": "steps skipped on loss-scale overflow",
    "XP706": "loss-scale overflow skips, step count unknown",
    "XP707": "loss scale at its minimum (training diverged)",
    "XP708": "NCCL collective timed out (watchdog)",
    "XP709": "launcher set OMP_NUM_THREADS by default",
    "XP710": "OpenMP threads oversubscribe the CPUs",
    "XP711": "DataLoader worker killed",
    "XP712": "inter-epoch stall (workers re-created)",
    "XP713": "more DataLoader workers than CPUs",
    # XP106-XP109, XP207-XP209: lead (step-log checks); XP310-XP319: scaling tables;
    # XP520-XP529: topology evidence; XP606-XP609: single nccl-tests measurements;
    # XP660-XP669: NCCL debug logs; XP701-XP719: framework warnings in training logs.
}


CHECK_OF_CODE: dict[str, str] = {
    **dict.fromkeys(("XP101", "XP102", "XP103", "XP104"), "steps.stragglers"),
    **dict.fromkeys(("XP201", "XP202", "XP206"), "steps.jitter"),
    **dict.fromkeys(("XP203", "XP204", "XP205"), "steps.spikes"),
    "XP207": "steps.sync_stalls",
    "XP210": "steps.phase_jitter",
    "XP211": "steps.between_steps",
    "XP301": "steps.comm_exposed",
    "XP302": "steps.data_wait",
    "XP303": "steps.host_overhead",
    **dict.fromkeys(("XP304", "XP305"), "steps.speedup"),
    "XP310": "scaling.efficiency",
    "XP311": "scaling.intra_node",
    "XP312": "scaling.inter_node",
    "XP313": "scaling.oversubscription",
    "XP314": "scaling.reported",
    "XP315": "scaling.batch",
    "XP316": "scaling.superlinear",
    **dict.fromkeys(("XP401", "XP402", "XP403"), "steps.completeness"),
    **dict.fromkeys(("XP610", "XP612"), "calibrate.run_consistency"),
    "XP611": "calibrate.sweep_collapse",
    **dict.fromkeys(("XP651", "XP652", "XP660"), "nccl.network"),
    "XP653": "nccl.gdr",
    "XP654": "nccl.p2p",
    "XP655": "nccl.nic_affinity",
    "XP656": "nccl.ring_crossings",
    **dict.fromkeys(("XP657", "XP666"), "nccl.ring_construction"),
    "XP658": "nccl.uniform",
    **dict.fromkeys(("XP661", "XP662", "XP663", "XP664", "XP665"), "nccl.warn"),
    **dict.fromkeys(("XP701", "XP702"), "events.ddp_unused_parameters"),
    **dict.fromkeys(("XP703", "XP704", "XP712", "XP713"), "events.dataloader_workers"),
    **dict.fromkeys(("XP705", "XP706", "XP707"), "events.loss_scale_overflow"),
    "XP708": "events.nccl_timeout",
    **dict.fromkeys(("XP709", "XP710"), "events.omp_threads"),
    "XP711": "events.dataloader_worker_crash",
}
"""The check whose verdict a finding code belongs to (``--fail-on code=XPnnn`` is refused when
that check, or its area — ``steps``, ``nccl``, ``framework`` — was not checked)."""
CHECK_AREA = {"steps": "steps", "nccl": "nccl", "events": "framework", "scaling": "scaling"}
"""Check-name prefix → the name of the one ``not_checked`` line an absent evidence kind gets."""


class CheckStatus(str, Enum):
    """Outcome of one check: ``problem`` (it produced a finding above info), ``clean`` (its
    evidence was in the input and nothing was wrong), ``not_checked`` (no evidence)."""

    PROBLEM = "problem"
    CLEAN = "clean"
    NOT_CHECKED = "not_checked"


@dataclass(frozen=True)
class Check:
    """One diagnostic check and the evidence its verdict rests on.

    Attributes:
        name: stable id, ``area.check`` (``nccl.gdr``, ``steps.stragglers``…).
        title: short human title ("GPUDirect RDMA between nodes").
        status: :class:`CheckStatus`.
        evidence: what in the input the verdict rests on ("64 inter-node connections via
            NET/IB/GDRDMA"), or, when ``not_checked``, what is missing and how to get it
            ("no 'via NET/…' transport lines; rerun with NCCL_DEBUG_SUBSYS=INIT,NET").
        codes: finding codes the check produced (empty when clean or not checked).
    """

    name: str
    title: str
    status: CheckStatus
    evidence: str
    codes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "title": self.title,
            "status": self.status.value,
            "evidence": self.evidence,
            "codes": list(self.codes),
        }


@dataclass(frozen=True)
class Finding:
    """One diagnosis: stable code, severity, one-line message with value, threshold and remedy.

    Attributes:
        code: stable code from :data:`CODES`.
        severity: :class:`Severity`.
        message: value, threshold and remedy in one sentence or two.
        data: machine-readable details (JSON-serialisable) for renderers and CI.
    """

    code: str
    severity: Severity
    message: str
    data: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.code not in CODES:
            raise ValueError(f"unknown finding code {self.code!r}")

    @property
    def title(self) -> str:
        return CODES[self.code]

    def to_dict(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "severity": self.severity.value,
            "title": self.title,
            "message": self.message,
            "data": self.data,
        }
