"""``xpuperf topo``: import, show and check a cluster topology (description file, a tool's raw
output, preset or generic).

Thin: resolve the cluster (:func:`xpuperf.topology.importers.load_any`,
:func:`~xpuperf.topology.presets.preset` or :func:`~xpuperf.topology.presets.generic`), call the
library, print. ``import`` writes what :func:`xpuperf.topology.importers.import_files` read as a
description file. Errors are xpuperf exceptions, turned into exit codes by ``main()``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer
import yaml

from xpuperf.cli.console import err_console, out_console
from xpuperf.cli.options import QuietOption
from xpuperf.cli.stdin import reads_stdin, relabel
from xpuperf.cli.topo_files import evidence_only, file_evidence, load_files, read_files, split_files
from xpuperf.errors import GateFailedError, InputError, UsageError
from xpuperf.findings import Severity
from xpuperf.kinds import TOPO, pointed
from xpuperf.report.output import STDOUT, check_not_input, write_text_atomic
from xpuperf.report.terminal import safe
from xpuperf.topology import audit, evidence, presets
from xpuperf.topology import binding as bind
from xpuperf.topology.binding import audit as bind_audit
from xpuperf.topology.importers import import_files
from xpuperf.topology.model import Cluster
from xpuperf.topology.schema import UnitError, parse_quantity
from xpuperf.topology.view import describe, to_json_dict

topo_app = typer.Typer(
    help="Cluster topology: show a description, preset or generic cluster; audit it.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
)

FileArg = Annotated[
    list[str] | None,
    typer.Argument(
        help="Topology description (YAML or JSON, xpuperf.topology/1), or tool outputs of the "
        "same hosts that `xpuperf topo import` reads (nvidia-smi topo -m, lscpu, nvidia-smi -L "
        "…), merged as import merges them.",
        show_default=False,
    ),
]
PresetOpt = Annotated[
    str | None,
    typer.Option("--preset", help=f"Built-in node preset: {', '.join(presets.NODE_PRESETS)}."),
]
NodesOpt = Annotated[int | None, typer.Option(min=1, help="Number of nodes (preset/generic).")]
CardsOpt = Annotated[
    int | None, typer.Option("--cards-per-node", min=1, help="Generic cluster: cards per node.")
]
NicOpt = Annotated[
    str | None, typer.Option("--nic", help='Generic cluster: NIC speed with unit, e.g. "200Gbps".')
]
NicsOpt = Annotated[int, typer.Option("--nics-per-node", min=1, help="Generic cluster: NICs.")]
JsonOpt = Annotated[str | None, typer.Option("--json", help="Write JSON to PATH, or - for stdout.")]


def resolve(
    files: list[str] | str | None,
    preset: str | None,
    nodes: int | None,
    cards_per_node: int | None,
    nic: str | None,
    nics_per_node: int,
) -> Cluster:
    """The cluster named by exactly one of FILES, --preset or --cards-per-node."""
    files = [files] if isinstance(files, str) else list(files or [])
    given = [x for x in (files or None, preset, cards_per_node) if x is not None]
    if len(given) != 1:
        raise UsageError("give one of FILE, --preset NAME or --cards-per-node N (generic)")
    if files:
        file = files[0]
        if len(files) == 1 and file in presets.NODE_PRESETS and not Path(file).exists():
            raise UsageError(f"{file} is a preset name, not a file: use --preset {file}")
        if nodes is not None:
            raise UsageError("--nodes applies to --preset and generic clusters, not to FILE")
        return load_files(files)
    if preset is not None:
        if preset not in presets.NODE_PRESETS:
            raise UsageError(f"unknown preset {preset!r}; known: {', '.join(presets.NODE_PRESETS)}")
        try:
            return presets.preset(preset, nodes)
        except ValueError as e:
            raise UsageError(f"--nodes: {e}") from None
    speed = nic_speed_Gbps(nic, "--nic")
    try:
        return presets.generic(nodes or 1, cards_per_node or 1, speed, nics_per_node)
    except ValueError as e:
        raise UsageError(str(e)) from None


def nic_speed_Gbps(text: str | None, flag: str) -> float | None:
    """A NIC speed option (``"100Gbps"``, ``"25GB/s"``) in Gb/s, or None when not given.

    Raises:
        UsageError: not a bandwidth, or not > 0 and finite.
    """
    if text is None:
        return None
    try:
        speed = parse_quantity(text, "bandwidth") * 8.0
    except UnitError as e:
        raise UsageError(f"{flag}: {e}") from None
    if not speed > 0 or speed == float("inf"):
        raise UsageError(f"{flag} must be > 0 and finite, e.g. 100Gbps (got {text})")
    return speed


def _print_checks(console, checks: list) -> None:
    console.print("checks:", markup=False)
    for c in checks:
        codes = f" [{', '.join(c.codes)}]" if c.codes else ""
        line = f"  {c.status.value:<11} {c.name}{codes}: {c.evidence}"
        console.print(line, markup=False, soft_wrap=True)


def _check_json_opt(json_out: str | None) -> None:
    if json_out is not None and not json_out.strip():
        raise UsageError("--json needs a file name, or - for stdout")


def _emit_json(data: object, json_out: str, inputs: list[str]) -> None:
    text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    if json_out == "-":
        sys.stdout.write(text)
        return
    check_not_input(json_out, [p for p in inputs if Path(p).exists()])
    write_text_atomic(json_out, text)


@topo_app.command("show")
@reads_stdin("files")
def show(
    files: FileArg = None,
    preset: PresetOpt = None,
    nodes: NodesOpt = None,
    cards_per_node: CardsOpt = None,
    nic: NicOpt = None,
    nics_per_node: NicsOpt = 1,
    json_out: JsonOpt = None,
    quiet: QuietOption = False,
) -> None:
    """Print a picture of the cluster: per node, cards grouped by link kind, NUMA and NIC
    affinity; or its JSON description (--json)."""
    _check_json_opt(json_out)
    files = read_files(files)  # `-`: a tool output piped in, named <stdin>
    cluster = resolve(files, preset, nodes, cards_per_node, nic, nics_per_node)
    if json_out:
        _emit_json(relabel(to_json_dict(cluster)), json_out, files)
    if json_out != "-":
        console = out_console(quiet)
        for line in relabel(describe(cluster)):
            console.print(line, markup=False, soft_wrap=True)
        for f in relabel(file_evidence(files, cluster)[1]):
            console.print(f"{f.code} {f.severity.value}: {f.message}", markup=False, soft_wrap=True)


@topo_app.command("check")
@reads_stdin("files")
def check(
    files: FileArg = None,
    preset: PresetOpt = None,
    nodes: NodesOpt = None,
    cards_per_node: CardsOpt = None,
    nic: NicOpt = None,
    nics_per_node: NicsOpt = 1,
    json_out: JsonOpt = None,
    fail_on: Annotated[
        str | None,
        typer.Option("--fail-on", help="Exit 1 if a finding is at least: warning|error."),
    ] = None,
    binding: Annotated[
        str | None,
        typer.Option(
            "--binding",
            help="CPU binding in effect: per-rank CPU lists (CSV/YAML/JSON), a launcher config, "
            "numactl --show, taskset -cp, srun --cpu-bind=verbose or Open MPI --report-bindings "
            "output; audited against the card's NUMA node (XP510-XP516).",
        ),
    ] = None,
    binding_format: Annotated[
        str | None,
        typer.Option(
            "--binding-format",
            help=f"Binding file format instead of sniffing: {', '.join(bind.FORMATS)}.",
        ),
    ] = None,
    quiet: QuietOption = False,
) -> None:
    """Audit the topology: NICs across the socket, shared NICs, missing NUMA affinity,
    non-uniform or uneven links, rank order (codes XP5xx); with --binding, the ranks' CPU
    binding against their cards' NUMA nodes."""
    if fail_on not in (None, "warning", "error", "info"):
        raise UsageError("--fail-on must be info, warning or error")
    if binding_format is not None and binding is None:
        raise UsageError("--binding-format needs --binding FILE")
    _check_json_opt(json_out)
    files = read_files(files)  # `-`: a tool output piped in, named <stdin>
    cluster = resolve(files, preset, nodes, cards_per_node, nic, nics_per_node)
    findings = audit.check(cluster)
    checks = audit.checks(cluster, findings)
    ev_checks, ev_findings, _ = relabel(file_evidence(files, cluster))
    checks += ev_checks
    findings = sorted(findings + ev_findings, key=lambda f: (-f.severity.rank, f.code))
    doc: dict = {}
    if binding is not None:
        bf = bind.read_binding(binding, binding_format)
        extra, ranks = bind_audit.check(cluster, bf)
        findings = sorted(findings + extra, key=lambda f: (-f.severity.rank, f.code))
        doc["binding"] = {
            "file": binding,
            "format": bf.format,
            "ranks": [r.to_dict() for r in ranks],
        }
        err = err_console(quiet)
        for note in bf.notes:
            err.print("note: " + safe(note), markup=False)
    inputs = [*files, *([binding] if binding else [])]
    if json_out:
        out = {
            "schema": audit.CHECK_SCHEMA,
            "inputs": relabel(files),
            "findings": [f.to_dict() for f in findings],
            "checks": [c.to_dict() for c in checks],
        }
        _emit_json({**out, **doc}, json_out, inputs)
    if json_out != "-":
        console = out_console(quiet)
        if binding is not None:
            console.print(_binding_line(doc["binding"]), markup=False, soft_wrap=True)
        if not findings:
            console.print("no topology findings", markup=False)
        for f in findings:
            console.print(f"{f.code} {f.severity.value}: {f.message}", markup=False, soft_wrap=True)
        _print_checks(console, checks)
    if fail_on is not None:
        bar = Severity(fail_on).rank
        bad = [f for f in findings if f.severity.rank >= bar]
        if bad:
            raise GateFailedError(f"{len(bad)} topology finding(s) at or above {fail_on}")


def _binding_line(b: dict) -> str:
    ranks = b["ranks"]
    local = sum(
        1 for r in ranks if r["card_numa"] is not None and r["cpu_numa"] == [r["card_numa"]]
    )
    return (f"binding: {len(ranks)} rank(s) from {b['file']} ({b['format']}); {local} bound to "
            "their card's NUMA node only")  # fmt: skip


@topo_app.command("import")
@reads_stdin("files")
def import_(
    files: Annotated[
        list[str],
        typer.Argument(
            help="Tool outputs from the same hosts: nvidia-smi topo -m, nvidia-smi nvlink -s, "
            "numactl -H, lscpu, lstopo, npu-smi info [-t topo], mx-smi topo -m, NCCL topology "
            "XML, rocm-smi --showtopo, HCCL rank table JSON."
        ),
    ],
    output: Annotated[
        str | None,
        typer.Option(
            "-o", "--output", help="Description file (.json: JSON, else YAML); - for stdout."
        ),
    ] = None,
    quiet: QuietOption = False,
) -> None:
    """Read what the machine printed into a description file (stdout without -o or with -o -);
    notes on what was inferred go to stderr."""
    if output == STDOUT:
        output = None  # the YAML on stdout, as without -o
    if output is not None:
        check_not_input(output, files)
    files = read_files(files)  # `-`: a tool output piped in, named <stdin>
    topo_files, extra, hints = split_files(files)  # extra: files that only name cards or a VM
    if not topo_files:  # only card names or hypervisor hints: not a topology by itself
        raise pointed(evidence_only(extra[0], hints), TOPO)
    try:
        result = import_files(topo_files)
    except InputError as exc:  # a training log or nccl-tests output: say who reads it
        raise pointed(exc, TOPO) from exc
    ev_checks, ev_findings, hints = file_evidence(files, result.cluster)
    cluster = evidence.with_card_models(result.cluster, hints.models)
    data = to_json_dict(cluster)
    result, extra, ev_checks, ev_findings, hints = relabel(  # a file piped in is <stdin>
        (result, extra, ev_checks, ev_findings, hints)
    )
    if (kept := evidence.to_description(hints)) is not None:  # topo check gives the same verdict
        data = {**{k: v for k, v in data.items() if k != "nodes"}, "evidence": kept,
                "nodes": data["nodes"]}  # fmt: skip
    if output is not None and output.lower().endswith(".json"):
        text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    else:
        head = "".join(f"#   {p}: {', '.join(f)}\n" for p, f in result.formats.items())
        head += "".join(f"#   {p}: card names / VM hints (evidence)\n" for p in extra)
        text = "# imported by xpuperf topo import from\n" + head
        text += yaml.safe_dump(
            _drop_nulls(data), sort_keys=False, allow_unicode=True, width=100,
            default_flow_style=None,
        )  # fmt: skip
    err = err_console(quiet)
    for note in result.notes:
        err.print("note: " + safe(note))
    for f in ev_findings:
        err.print(f"{f.code} {f.severity.value}: " + safe(f.message), markup=False)
    for f in extra:
        err.print(f"note: {safe(f)}: read for card names and VM hints only", markup=False)
    _print_checks(err, ev_checks)  # the audit's own checks: `xpuperf topo check DESCRIPTION`
    if output is None:
        sys.stdout.write(text)
        return
    write_text_atomic(output, text)
    c = cluster
    err.print(f"wrote {output}: {len(c.nodes)} node(s), {len(c.slots)} cards", markup=False)


def _drop_nulls(obj: object) -> object:
    """The description without null values (absent and null mean the same to the loader)."""
    if isinstance(obj, dict):
        return {k: _drop_nulls(v) for k, v in obj.items() if v is not None}
    if isinstance(obj, list):
        return [_drop_nulls(v) for v in obj]
    return obj
