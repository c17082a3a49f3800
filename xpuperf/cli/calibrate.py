"""``xpuperf calibrate``: parse options, call :func:`xpuperf.calibrate.calibrate_files`, render.

The lead registers it in app.py: ``app.command("calibrate")(calibrate_cmd.calibrate)``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from xpuperf.calibrate.nccltests import COLLECTIVES
from xpuperf.calibrate.render import render_calibration_yaml, render_json, render_terminal
from xpuperf.calibrate.run import MEASUREMENTS, add_topology_findings, calibrate_files
from xpuperf.calibrate.single import parse_link
from xpuperf.cli.console import err_console, out_console
from xpuperf.cli.stdin import reads_stdin, relabel, with_stdin
from xpuperf.errors import InputError, UsageError
from xpuperf.kinds import CALIBRATE, pointed
from xpuperf.report.output import STDOUT, check_not_input, stdout_outputs, write_output
from xpuperf.report.terminal import safe
from xpuperf.topology import presets
from xpuperf.topology.importers import load_any
from xpuperf.topology.model import Cluster


def _cluster(topology: str | None, nodes: int | None) -> Cluster | None:
    if topology is None:
        return None
    if Path(topology).exists():  # a description, or tool output topo import reads (.gz too)
        return load_any(topology)
    if topology in presets.NODE_PRESETS:
        return presets.preset(topology, nodes or 1)
    raise UsageError(
        f"--topology {topology!r} is neither a file nor a preset "
        f"({', '.join(presets.NODE_PRESETS)})"
    )


@reads_stdin("files")
def calibrate(
    files: Annotated[
        list[str], typer.Argument(help="nccl-tests output files (*_perf stdout); - reads stdin.")
    ],
    output: Annotated[
        str | None,
        typer.Option(
            "--output", "-o", help="Write the xpuperf.calibration/1 YAML to PATH, or - for stdout."
        ),
    ] = None,
    topology: Annotated[
        str | None,
        typer.Option(help="Topology file (xpuperf.topology/1) or preset, to flag low busbw."),
    ] = None,
    measurement: Annotated[
        str,
        typer.Option(help=f"Timing to fit: {', '.join(MEASUREMENTS)} (best = smaller time)."),
    ] = "best",
    collective: Annotated[
        str | None,
        typer.Option(help=f"Force the collective: {', '.join(COLLECTIVES)} (default: detect)."),
    ] = None,
    max_lines: Annotated[
        int, typer.Option(min=1, max=4, help="Most α–β lines per fit (1 = plain α–β).")
    ] = 4,
    pool: Annotated[
        bool, typer.Option(help="Fit files with the same collective/ranks/nodes together.")
    ] = False,
    json_out: Annotated[
        str | None, typer.Option("--json", help="Write the JSON result to PATH, or - for stdout.")
    ] = None,
    link: Annotated[
        str | None,
        typer.Option(
            help="Link under a single measurement when no --topology: pcie3|pcie4|pcie5|pcie6, "
            "nvlink-a100|nvlink-h100|…, or a NIC rate such as 400Gbps."
        ),
    ] = None,
    ranks: Annotated[
        int | None, typer.Option(min=1, help="Rank count when the output does not say it.")
    ] = None,
    html_out: Annotated[
        str | None,
        typer.Option(
            "--html",
            help="Write a self-contained HTML report (busbw vs size per fit) to PATH, - for "
            "stdout.",
        ),
    ] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No terminal summary.")] = False,
) -> None:
    """Fit latency and bus bandwidth to nccl-tests results; flag busbw far below the topology.
    A single size (one row) is compared with the link under it (--topology or --link)."""
    err = err_console()
    to_stdout = stdout_outputs(output=output, json=json_out, html=html_out)  # one `-` at most
    for out in (output, json_out, html_out):
        if out and out != STDOUT:
            inputs = [*files, *([topology] if topology else [])]  # the topology file too
            check_not_input(out, [p for p in inputs if Path(p).exists()])
    files = with_stdin(
        files, what="nccl-tests output", example="all_reduce_perf -g 8 | xpuperf calibrate -"
    )
    try:
        result = calibrate_files(
            files, measurement=measurement, collective=collective, max_lines=max_lines,
            pool=pool, link=parse_link(link), ranks=ranks,
        )  # fmt: skip
    except InputError as exc:  # a training log or a topology dump: say who reads it
        raise pointed(exc, CALIBRATE) from exc
    result = relabel(result)  # output piped in is named <stdin>
    cluster = None
    if topology is not None:
        groups = [*result.fits, *result.measurements]
        nodes = max((g.nodes or 1 for g in groups), default=1)
        cluster = _cluster(topology, nodes)
        add_topology_findings(result, cluster, topology)
    for w in result.warnings:
        err.print("warning: " + safe(w))
    if output:  # `-`: stdout; a topology file is named relative to the file written
        where = None if output == STDOUT else output
        write_output(output, render_calibration_yaml(result, where))
    if html_out:
        from xpuperf.report.calibrate_html import render_calibrate_html

        write_output(html_out, render_calibrate_html(result, cluster))
    if json_out:
        write_output(json_out, render_json(result))
    if not quiet and not to_stdout:
        render_terminal(result, out_console())
        if result.nccl:  # NCCL INFO lines in the inputs; their findings and checks are above
            from xpuperf.report.nccl_section import render_nccl

            for report in result.nccl:
                render_nccl(report, out_console(), findings=False, checks=False)
