"""``xpuperf plan``: parse options, resolve the cluster and workload, call
:func:`xpuperf.advice.plan.make_plan`, render. Errors are xpuperf exceptions (exit 2, one line),
turned into exit codes by ``main()``. Register with ``app.command("plan")(plan_cmd.plan)``.
"""

from __future__ import annotations

import math
import sys
from dataclasses import replace
from pathlib import Path
from typing import Annotated

import typer

from xpuperf.advice.plan import make_plan
from xpuperf.cli.console import out_console
from xpuperf.cli.topo import nic_speed_Gbps
from xpuperf.costmodel.comm import USER_ALGORITHMS
from xpuperf.costmodel.estimate import DEFAULT_CARDS, FRAMEWORKS, Settings
from xpuperf.costmodel.workloads import MODEL_PRESETS, even_split, model
from xpuperf.errors import UsageError
from xpuperf.report.output import check_not_input, write_text_atomic
from xpuperf.report.plan_report import render_json, render_terminal
from xpuperf.topology import build, presets
from xpuperf.topology.importers import load_any
from xpuperf.topology.model import Cluster

EXAMPLE = ("dgx-a100", 128, "resnet50", 0.1, 256.0)
"""Bundled example: 128 DGX-A100 nodes (1024 cards), ResNet-50, 0.1 s single-card step at batch
256 per card (≈ 2,560 img/s, an A100 mixed-precision ballpark)."""

Opt = typer.Option


def _preset_names() -> list[str]:
    return [*presets.NODE_PRESETS, *presets.MORE_PRESETS, *presets.ALIASES]


def _cards(text: str | None) -> list[int]:
    if text is None:
        return list(DEFAULT_CARDS)
    try:
        out = [int(x) for x in text.replace(" ", "").split(",") if x]
    except ValueError:
        raise UsageError(f"--cards: expected integers separated by commas, got {text!r}") from None
    if not out or any(c < 1 for c in out):
        raise UsageError(f"--cards: card counts must be integers >= 1, got {text!r}")
    return out


def _nic_override(cluster: Cluster, speed_Gbps: float | None, k: int | None) -> Cluster:
    if speed_Gbps is None and k is None:
        return cluster
    node = cluster.nodes[0]
    if k is None:
        k = max(1, len(node.nics))
    if speed_Gbps is None:
        speeds = [n.speed_Gbps for n in node.nics if n.speed_Gbps]
        speed_Gbps = speeds[0] if speeds else None
    nics = build.nics_for([f"nic{i}" for i in range(k)], speed_Gbps)
    devs = tuple(replace(d, nic=None) for d in node.devices)
    new = build.assign_nearest_nics(replace(node, nics=nics, devices=devs))
    return replace(cluster, nodes=tuple(replace(new, name=n.name) for n in cluster.nodes))


def resolve_cluster(topology: str | None, nodes: int | None, cards_per_node: int | None,
                    nic_speed: str | None, nics_per_node: int | None,
                    max_cards: int) -> Cluster:  # fmt: skip
    """The cluster of ``--topology`` (file or preset), or a generic one (``--cards-per-node``)."""
    for name, v in (("--nodes", nodes), ("--cards-per-node", cards_per_node),
                    ("--nics-per-node", nics_per_node)):  # fmt: skip
        if v is not None and v < 1:
            raise UsageError(f"{name} must be >= 1, got {v}")
    speed = nic_speed_Gbps(nic_speed, "--nic-speed")
    if topology is not None and cards_per_node is not None:
        raise UsageError("give --topology or --cards-per-node (a generic cluster), not both")
    if topology is None and cards_per_node is not None:
        n = nodes or max(1, math.ceil(max_cards / cards_per_node))
        try:
            return presets.generic(n, cards_per_node, speed, nics_per_node or 1)
        except ValueError as e:
            raise UsageError(str(e)) from None
    name = topology or EXAMPLE[0]
    if name in _preset_names():
        g = len(presets.node_template(name).devices)
        try:
            cluster = presets.preset(name, nodes or max(1, math.ceil(max_cards / g)))
        except ValueError as e:
            raise UsageError(f"--nodes: {e}") from None
    elif Path(name).exists():
        if nodes is not None:
            raise UsageError("--nodes applies to a preset or a generic cluster, not to a file")
        cluster = load_any(name)
    else:
        raise UsageError(
            f"--topology {name!r} is neither a file nor a preset ({', '.join(_preset_names())})"
        )
    return _nic_override(cluster, speed, nics_per_node)


def plan(
    topology: Annotated[
        str | None, Opt(help="Topology file or preset name (default: dgx-a100).")
    ] = None,
    nodes: Annotated[
        int | None, Opt(help="Nodes (default: enough for the largest --cards).")
    ] = None,
    cards_per_node: Annotated[int | None, Opt(help="Generic cluster: cards per node.")] = None,
    nic_speed: Annotated[str | None, Opt(help='NIC speed with unit, e.g. "100Gbps".')] = None,
    nics_per_node: Annotated[int | None, Opt(help="NICs per node (overrides the preset).")] = None,
    model_name: Annotated[
        str | None, Opt("--model", help=f"Model preset: {', '.join(MODEL_PRESETS)}.")
    ] = None,
    params: Annotated[
        int | None, Opt(help="Parameter count, split evenly (instead of --model).")
    ] = None,
    dtype: Annotated[str, Opt(help="Gradient dtype: fp32, fp16 or bf16.")] = "fp32",
    batch_size: Annotated[float | None, Opt(help="Samples per card per step.")] = None,
    step_time: Annotated[float | None, Opt(help="Single-card step time, seconds.")] = None,
    cards: Annotated[str | None, Opt(help="Card counts, e.g. 1,8,64,1024.")] = None,
    target: Annotated[
        int | None, Opt(help="Card count for the fixes (default: the largest).")
    ] = None,
    algorithm: Annotated[str, Opt(help=f"{'|'.join(USER_ALGORITHMS)}.")] = "auto",
    framework: Annotated[str, Opt(help=f"Bucketing rules: {'|'.join(FRAMEWORKS)}.")] = "ddp",
    bucket_mb: Annotated[float | None, Opt(help="Bucket / fusion size, MiB.")] = None,
    json_out: Annotated[
        str | None, Opt("--json", help="Write JSON to PATH, or - for stdout.")
    ] = None,
    quiet: Annotated[bool, Opt("--quiet", "-q", help="No terminal output.")] = False,
) -> None:
    """Predict speedup up to 1000+ cards from the topology and a single-card step time, and rank
    the fixes (bucket size, algorithm, ring order, NIC per card, …) by gain."""
    counts = _cards(cards)
    notes: list[str] = []
    if model_name is not None and params is not None:
        raise UsageError("give --model NAME or --params N, not both")
    if step_time is not None and not (math.isfinite(step_time) and step_time > 0):
        raise UsageError(f"--step-time must be a positive number of seconds, got {step_time}")
    if batch_size is not None and not batch_size > 0:
        raise UsageError(f"--batch-size must be > 0, got {batch_size}")
    if params is not None and params < 1:
        raise UsageError(f"--params must be >= 1, got {params}")
    if model_name is None and params is None:
        if step_time is not None:
            raise UsageError("--step-time needs --model NAME or --params N")
        model_name, step_time = EXAMPLE[2], EXAMPLE[3]
        batch_size = EXAMPLE[4] if batch_size is None else batch_size
        notes.append(f"example workload: {model_name}, single-card step {step_time} s at batch "
                     f"{batch_size:g} (no --model/--params given)")  # fmt: skip
    elif step_time is None:
        raise UsageError("give --step-time S (single-card step time in seconds)")
    if topology is None and cards_per_node is None:
        notes.append(f"example topology: {EXAMPLE[0]} (no --topology given)")
    max_cards = max([*counts, target or 0])
    cluster = resolve_cluster(topology, nodes, cards_per_node, nic_speed, nics_per_node, max_cards)
    work = model(model_name) if params is None else even_split(params)
    settings = Settings(algorithm=algorithm.lower(), framework=framework.lower(),
                        bucket_mb=bucket_mb, dtype=dtype.lower())  # fmt: skip
    result = make_plan(cluster, work, step_time, cards=counts, settings=settings,
                       batch_size=batch_size, target_cards=target, notes=notes)  # fmt: skip
    if json_out == "-":
        sys.stdout.write(render_json(result))
    elif json_out:
        if topology and Path(topology).exists():
            check_not_input(json_out, [topology])
        write_text_atomic(json_out, render_json(result))
    if not quiet and json_out != "-":
        render_terminal(result, out_console())
