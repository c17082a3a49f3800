"""``xpuperf plan``: parse options, resolve the cluster and workload, call
:func:`xpuperf.advice.plan.make_plan`, render. Errors are xpuperf exceptions (exit 2, one line),
turned into exit codes by ``main()``. Register with ``app.command("plan")(plan_cmd.plan)``.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Annotated

import typer

from xpuperf.advice.plan import make_plan
from xpuperf.cli import plan_input
from xpuperf.cli.console import out_console
from xpuperf.cli.options import reader_format
from xpuperf.cli.topo import nic_speed_Gbps
from xpuperf.costmodel.calibrated import plan_inputs
from xpuperf.costmodel.comm import USER_ALGORITHMS
from xpuperf.costmodel.estimate import DEFAULT_CARDS, FRAMEWORKS, Settings
from xpuperf.costmodel.layerfile import read_layers
from xpuperf.costmodel.workloads import MODEL_PRESETS, even_split, model
from xpuperf.errors import UsageError
from xpuperf.report.output import check_not_input, stdout_outputs, write_output
from xpuperf.report.plan_report import render_json, render_terminal
from xpuperf.topology import build, presets
from xpuperf.topology.importers import load_any
from xpuperf.topology.model import Cluster

EXAMPLE = ("pcie-8gpu-2socket", 128, "bert_large", 0.4, 32.0)
"""Bundled example: 128 two-socket PCIe servers of 8 GPUs (1024 cards), BERT-large, 0.4 s
single-card step at batch 32 per card, DDP 4 MiB buckets and an input pipeline on PyTorch's
DataLoader defaults that stalls (:data:`xpuperf.cli.plan_input.EXAMPLE_INPUT`; docs/plan.md §11)."""

Opt = typer.Option


def _preset_names() -> list[str]:
    return [*presets.NODE_PRESETS, *presets.MORE_PRESETS, *presets.ALIASES]


def _cards(text: str | None) -> list[int]:
    """``--cards 1,8,64``: whole numbers >= 1 separated by commas (blanks allowed around them).

    Raises:
        UsageError: an empty item (``1,,8``, a trailing comma) or one that is not a whole number
            >= 1 (``0``, ``-8``, ``8.5``, ``abc``), naming the item.
    """
    if text is None:
        return list(DEFAULT_CARDS)
    out = []
    for i, item in enumerate((x.strip() for x in text.split(",")), 1):
        if not item:
            raise UsageError(f"--cards {text!r}: item {i} is empty; give card counts separated by "
                             "commas, e.g. 1,8,64")  # fmt: skip
        if not (item.isascii() and item.isdigit()) or int(item) < 1:
            raise UsageError(f"--cards {text!r}: {item!r} is not a card count (a whole number "
                             ">= 1); give e.g. 1,8,64")  # fmt: skip
        out.append(int(item))
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


MAX_BATCH = 1e9
"""Largest ``--batch-size`` (samples per card per step) taken."""
MAX_BUCKET_MB = 1 << 20
"""Largest ``--bucket-mb`` taken: 1 TiB, above any model's gradient (one bucket)."""
MAX_PARAMS = 10**15
"""Largest ``--params`` taken: 10^15, a hundred times the largest models trained."""
MAX_NIC_GBPS = 100_000.0
"""Largest ``--nic-speed`` taken: 100 Tb/s per port."""
MAX_NICS = 4096
"""Largest ``--nics-per-node`` taken (as many as the largest node has cards)."""


def _in_range(flag: str, value: float | None, hi: float, unit: str, lo: float = 1e-6) -> None:
    """Refuse a value that is not a number in [lo, hi] (UsageError, exit 2)."""
    if value is not None and not (lo <= value <= hi):
        raise UsageError(
            f"{flag} must be a number between {lo:g} and {hi:,.0f} ({unit}), got {value:g}"
        )


def _whole(flag: str, value: float | None, hi: float) -> int | None:
    """``value`` as a whole number in [1, hi] (``1e9`` and ``1_000_000`` allowed); exit 2."""
    if value is None:
        return None
    if not (1 <= value <= hi) or value != int(value):
        raise UsageError(f"{flag} must be a whole number between 1 and {hi:.0e}, got {value:g}")
    return int(value)


def resolve_cluster(topology: str | None, nodes: int | None, cards_per_node: int | None,
                    nic_speed: str | None, nics_per_node: int | None,
                    max_cards: int) -> Cluster:  # fmt: skip
    """The cluster of ``--topology`` (file or preset), or a generic one (``--cards-per-node``)."""
    for name, v in (("--nodes", nodes), ("--cards-per-node", cards_per_node)):
        if v is not None and v < 1:
            raise UsageError(f"{name} must be >= 1, got {v}")
    speed = nic_speed_Gbps(nic_speed, "--nic-speed")
    _in_range("--nic-speed", speed, MAX_NIC_GBPS, "Gb/s", lo=1e-3)
    _in_range("--nics-per-node", nics_per_node, MAX_NICS, "NIC ports", lo=1)
    if topology is not None and cards_per_node is not None:
        raise UsageError("give --topology or --cards-per-node (a generic cluster), not both")
    if topology is None and cards_per_node is not None:
        n = nodes or max(1, -(-max_cards // cards_per_node))
        try:
            return presets.generic(n, cards_per_node, speed, nics_per_node or 1)
        except ValueError as e:
            raise UsageError(str(e)) from None
    name = topology or EXAMPLE[0]
    if name in _preset_names():
        g = len(presets.node_template(name).devices)
        try:
            cluster = presets.preset(name, nodes or max(1, -(-max_cards // g)))
        except ValueError as e:
            flag = "--nodes" if nodes else f"--cards {max_cards:,} on {g}-card nodes"
            raise UsageError(f"{flag}: {e}") from None
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
        str | None, Opt(help="Topology file or preset name (default: pcie-8gpu-2socket).")
    ] = None,
    calibration: Annotated[
        str | None,
        Opt(
            help="xpuperf.calibration/1 file (xpuperf calibrate -o): measured α/β replace the "
            "topology's; --topology may also name such a file."
        ),
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
        float | None, Opt(help="Parameter count, e.g. 1.3e9, split evenly (instead of --model).")
    ] = None,
    layers: Annotated[
        str | None,
        Opt(
            help="Per-layer size file, CSV/TSV/JSON rows name,params[,macs] in forward order "
            "(instead of --model)."
        ),
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
    from_log: Annotated[
        str | None,
        Opt(
            help="Measured run (any log `xpuperf analyze` reads): single-card step, "
            "backward split, data times, per-rank distribution (instead of --step-time)."
        ),
    ] = None,
    log_format: Annotated[
        str | None, Opt("--format", help="Force the --from-log reader (xpuperf formats).")
    ] = None,
    log_pattern: Annotated[
        str | None,
        Opt(
            "--pattern",
            help="Read --from-log by its step line: 'iter {step} … {step_time_ms}ms' "
            "(docs/formats.md).",
        ),
    ] = None,
    measured_src: Annotated[
        list[str] | None,
        Opt(
            "--measured",
            help="Measured scaling ladder (repeatable): a scaling table (CSV/TSV/Markdown) or "
            "N=LOGS (the logs of an N-card run); forecasts --cards with an interval.",
        ),
    ] = None,
    baseline: Annotated[
        float | None,
        Opt(help="--measured: one card's items/s when the ladder has no one-card run."),
    ] = None,
    jitter_cv: Annotated[
        float | None,
        Opt(
            help="Spread (coefficient of variation) of per-rank compute per step: the random-"
            "straggler tax E[max over N] (default 0.012, published GPU variability; 0 = off)."
        ),
    ] = None,
    accumulation: Annotated[
        int | None, Opt(help="Gradient accumulation: micro-steps per allreduce (default 1).")
    ] = None,
    global_batch: Annotated[
        float | None,
        Opt(
            help="Fixed global batch (strong scaling): accumulation = B / (batch x cards) at "
            "each count; needs --batch-size."
        ),
    ] = None,
    overlap: Annotated[
        bool,
        Opt(
            "--overlap/--no-overlap",
            help="Allreduce overlaps backward (default); --no-overlap: it starts after "
            "backward (allreduce after accumulation, one flat buffer).",
        ),
    ] = True,
    optimizer_step: Annotated[
        float | None, Opt(help="Seconds of one optimizer step (default: memory-bound estimate).")
    ] = None,
    input_time: Annotated[
        float | None,
        Opt(
            help="Seconds ONE loader worker needs per batch of one card (per step, not per "
            "sample), as measured with --loader-numa."
        ),
    ] = None,
    workers: Annotated[
        int | None, Opt(help="DataLoader num_workers (default 1; 0 with --from-log data).")
    ] = None,
    prefetch: Annotated[
        int | None, Opt(help="DataLoader prefetch_factor, batches per worker (default 2).")
    ] = None,
    pinned: Annotated[
        bool | None, Opt("--pinned/--no-pinned", help="pin_memory (default: pinned).")
    ] = None,
    input_mb: Annotated[
        float | None, Opt(help="MB (1e6 bytes) copied host→device per step per card.")
    ] = None,
    loader_numa: Annotated[
        str | None,
        Opt(help="Loader CPUs/memory vs the card: local|remote|unbound (default unbound)."),
    ] = None,
    json_out: Annotated[
        str | None, Opt("--json", help="Write JSON to PATH, or - for stdout.")
    ] = None,
    html_out: Annotated[
        str | None,
        Opt("--html", help="Write a self-contained HTML report (offline) to PATH, - for stdout."),
    ] = None,
    md_out: Annotated[
        str | None,
        Opt(
            "--markdown",
            help="Write a Markdown summary to PATH or - (also appended to "
            "$GITHUB_STEP_SUMMARY when that is set).",
        ),
    ] = None,
    quiet: Annotated[bool, Opt("--quiet", "-q", help="No terminal output.")] = False,
) -> None:
    """Predict speedup up to 1000+ cards from the topology and a single-card step time, and rank
    the fixes (bucket size, algorithm, ring order, NIC per card, …) by gain."""
    counts = _cards(cards)
    if log_pattern is not None and from_log is None:
        raise UsageError("--pattern applies to --from-log PATH; give the log too")
    log_format = reader_format(log_format, log_pattern)
    to_stdout = stdout_outputs(json=json_out, html=html_out, markdown=md_out)
    if target is not None and target < 1:
        raise UsageError(f"--target must be a card count >= 1, got {target}")
    workloads = [f for f, v in (("--model", model_name), ("--params", params),
                                ("--layers", layers)) if v is not None]  # fmt: skip
    if len(workloads) > 1:
        raise UsageError(f"give one of --model NAME, --params N or --layers FILE, not "
                         f"{' and '.join(workloads)}")  # fmt: skip
    notes: list[str] = []
    ladder = plan_input.read_measured_ladder(
        measured_src, baseline=baseline, step_time=step_time, batch_size=batch_size,
        from_log_path=from_log, has_workload=bool(workloads), fmt=log_format)  # fmt: skip
    if ladder is not None:
        step_time = step_time or ladder.one_card_step_s
        batch_size = batch_size or ladder.batch_per_card
        notes += [*ladder.notes]
    measured = plan_input.read_measured(from_log, step_time if ladder is None else None,
                                        bool(workloads), batch_size, log_format)  # fmt: skip
    if measured is not None:
        step_time, batch_size = measured.step_time_s, batch_size or measured.batch_size
        notes += measured.notes
    example = not workloads
    if example and bucket_mb is None:
        bucket_mb = plan_input.EXAMPLE_BUCKET_MB
    if step_time is not None and not (0 < step_time <= plan_input.MAX_SECONDS):
        raise UsageError(f"--step-time must be a positive number of seconds up to "
                         f"{plan_input.MAX_SECONDS:g}, got {step_time}")  # fmt: skip
    _in_range("--batch-size", batch_size, MAX_BATCH, "samples per card")
    _in_range("--bucket-mb", bucket_mb, MAX_BUCKET_MB, "MiB", lo=1e-3)
    params = _whole("--params", params, MAX_PARAMS)
    if example:
        if step_time is not None:
            raise UsageError("--step-time needs --model NAME, --params N or --layers FILE")
        model_name, step_time = EXAMPLE[2], EXAMPLE[3]
        batch_size = EXAMPLE[4] if batch_size is None else batch_size
        notes.append(f"example workload: {model_name}, single-card step {step_time} s at batch "
                     f"{batch_size:g}, DDP {bucket_mb:g} MiB buckets (no --model/--params "
                     "given)")  # fmt: skip
    elif step_time is None:
        raise UsageError("give --step-time S (single-card step time in seconds)")
    topology, cal = plan_inputs(topology, calibration, need_topology=cards_per_node is None)
    inputs = [str(x) for x in (from_log, layers, cal.path if cal else None) if x is not None]
    inputs += [m.split("=", 1)[-1] for m in measured_src or []]
    if topology is not None and Path(topology).exists():  # not a preset name
        inputs.append(topology)
    for out in (json_out, html_out, md_out):  # before anything is written
        if out and out != "-":
            check_not_input(out, inputs)
    if topology is None and cards_per_node is None:
        notes.append(f"example topology: {EXAMPLE[0]} (no --topology given)")
    max_cards = max([*counts, target or 0])
    cluster = resolve_cluster(topology, nodes, cards_per_node, nic_speed, nics_per_node, max_cards)
    if layers is not None:
        work = read_layers(layers)
    else:
        work = model(model_name) if params is None else even_split(params)
    extra, more_notes = plan_input.input_settings(
        cluster, measured, example=example, workers=workers, prefetch=prefetch, pinned=pinned,
        input_time=input_time, input_mb=input_mb, loader_numa=loader_numa)  # fmt: skip
    notes += more_notes
    more, more_notes = plan_input.step_settings(
        measured, jitter_cv=jitter_cv, accumulation=accumulation, global_batch=global_batch,
        batch_size=batch_size, overlap=overlap, optimizer_step=optimizer_step)  # fmt: skip
    extra.update(more)
    notes += more_notes
    settings = Settings(algorithm=algorithm.lower(), framework=framework.lower(),
                        bucket_mb=bucket_mb, dtype=dtype.lower(), **extra)  # fmt: skip
    result = make_plan(cluster, work, step_time, cards=counts, settings=settings,
                       batch_size=batch_size, target_cards=target, notes=notes,
                       calibration=cal, ladder=ladder)  # fmt: skip
    if json_out:
        write_output(json_out, render_json(result))
    write_plan_reports(result, html_out, md_out, [*inputs, json_out or ""])
    if not quiet and not to_stdout:
        render_terminal(result, out_console())


def write_plan_reports(result, html_out: str | None, md_out: str | None,
                       protect: list[str]) -> None:  # fmt: skip
    """``--html`` and ``--markdown`` (and ``$GITHUB_STEP_SUMMARY``) of a plan (a
    :class:`~xpuperf.advice.plan.PlanResult`); ``protect``: the inputs and other outputs the
    step summary must not be appended to (the paths were checked against the inputs before)."""
    from xpuperf.cli.console import err_console
    from xpuperf.report.output import write_markdown_outputs

    if html_out:
        from xpuperf.report.plan_html import render_plan_html

        write_output(html_out, render_plan_html(result))
    if md_out or os.environ.get("GITHUB_STEP_SUMMARY"):
        from xpuperf.report.markdown import render_plan_markdown
        from xpuperf.report.plan_report import to_dict

        warning = write_markdown_outputs(render_plan_markdown(to_dict(result)), md_out,
                                         [*protect, html_out or ""])  # fmt: skip
        if warning:
            err_console().print(f"warning: {warning}", markup=False)
