"""Regenerate the bundled sample logs (seeded): ``python sample_logs/make_samples.py``.

Each scenario is a synthetic synchronous data-parallel run from :mod:`xpuperf.synth` written in a
different generic layout, so the samples also exercise the readers. See README.md here.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from xpuperf.synth import Scenario, generate

HERE = Path(__file__).resolve().parent

# ResNet-50-like step on one card: 0.300 s compute at 256 samples per card.
COMMON = {
    "compute_s": 0.300,
    "data_s": 0.008,
    "other_s": 0.004,
    "allreduce_s": 0.025,
    "batch_per_rank": 256,
    "noise_cv": 0.015,
    "warmup_steps": 6,
    "warmup_factor": 4.0,
}


def _round(df: pd.DataFrame, cols: list[str], digits: int = 6) -> pd.DataFrame:
    out = df.copy()
    for c in cols:
        out[c] = out[c].round(digits)
    return out


def healthy(out: Path) -> None:
    """8 ranks on one node, one CSV with a rank column, times in milliseconds."""
    df = generate(Scenario(ranks=8, steps=200, seed=11, **COMMON))
    table = pd.DataFrame(
        {
            "iteration": df["step"],
            "rank": df["rank"],
            "hostname": df["node"],
            "step_time_ms": (df["step_time_s"] * 1e3).round(3),
            "data_time_ms": (df["data_s"] * 1e3).round(3),
            "compute_ms": (df["compute_s"] * 1e3).round(3),
            "allreduce_ms": (df["comm_s"] * 1e3).round(3),
            "batch_size": df["samples"].astype(int),
        }
    )
    out.mkdir(parents=True, exist_ok=True)
    table.to_csv(out / "steps.csv", index=False)


def slow_rank(out: Path) -> None:
    """16 ranks on two nodes, rank 5 computes 15 % slower; one JSON Lines file per rank."""
    df = generate(
        Scenario(ranks=16, steps=150, slow_ranks={5: 0.15}, seed=12, **COMMON),
    )
    cols = ["step_time_s", "t_end_s", "data_s", "forward_s", "backward_s", "comm_s", "optimizer_s"]
    df = _round(df, cols, 5)
    out.mkdir(parents=True, exist_ok=True)
    for r, part in df.groupby("rank"):
        rec = part[["step", "node", "samples", *cols]].rename(columns={"t_end_s": "timestamp"})
        rec = rec.assign(samples=rec["samples"].astype(int))
        rec.to_json(out / f"rank{r}.jsonl", orient="records", lines=True)


def periodic_spikes(out: Path) -> None:
    """8 ranks, a 1.2 s checkpoint stall every 50 steps; per-rank CSV with FPS and timestamps."""
    df = generate(
        Scenario(
            ranks=8, steps=300, spike_period=50, spike_phase=20, spike_s=1.2, seed=13, **COMMON
        )
    )
    out.mkdir(parents=True, exist_ok=True)
    for r, part in df.groupby("rank"):
        table = pd.DataFrame(
            {
                "step": part["step"],
                "timestamp": (1_764_400_000.0 + part["t_end_s"]).round(6),
                "samples": part["samples"].astype(int),
                "samples_per_sec": (part["samples"] / part["step_time_s"]).round(3),
            }
        )
        table.to_csv(out / f"worker-{r}.csv", index=False)


def single_card(out: Path) -> None:
    """The single-card baseline at the same per-card batch (256): one card alone, no comm."""
    df = generate(Scenario(ranks=1, steps=100, seed=14, **COMMON))
    table = pd.DataFrame(
        {
            "step": df["step"],
            "step_time_s": df["step_time_s"].round(6),
            "data_time_s": df["data_s"].round(6),
            "samples": df["samples"].astype(int),
        }
    )
    out.mkdir(parents=True, exist_ok=True)
    table.to_csv(out / "baseline.csv", index=False)


if __name__ == "__main__":
    healthy(HERE / "healthy_8rank")
    slow_rank(HERE / "slow_rank_16rank")
    periodic_spikes(HERE / "periodic_spikes_8rank")
    single_card(HERE / "single_card")
