"""The FILES of ``xpuperf topo show|check|import``: descriptions or tool outputs, ``-`` for
standard input (``nvidia-smi topo -m | xpuperf topo import -``); which of them hold a topology
and which only name the cards or say the host is a VM (:mod:`xpuperf.topology.evidence`)."""

from __future__ import annotations

from pathlib import Path

from xpuperf.cli.stdin import with_stdin
from xpuperf.errors import InputError, UsageError
from xpuperf.kinds import TOPO, pointed
from xpuperf.topology import evidence
from xpuperf.topology.importers import detect, import_files, load_any, read_text, refuse_long_lines
from xpuperf.topology.model import Cluster

HINT_CHARS = 1 << 20
"""How much of a file that is no topology is searched for card names and VM hints."""


def split_files(files: list[str]) -> tuple[list[str], list[str], evidence.Hints]:
    """(topology files, files that only name the cards or say it is a VM, their hints).

    A file no importer knows and without such hints counts as a topology file, so that the
    loader or the importer says what is wrong with it."""
    topo, extra, hints = [], [], evidence.Hints()
    for f in files:
        text = read_text(f)
        refuse_long_lines(text, f)
        if "xpuperf.topology/" in text or detect(text):
            topo.append(f)
            continue
        found = evidence.scan(text[:HINT_CHARS], f)  # card lists and preambles come first
        (extra if found.worth_keeping() else topo).append(f)
        hints.add(found)
    return topo, extra, hints


def evidence_only(path: str, hints: evidence.Hints) -> InputError:
    """The one-line error for a file that names cards or a VM but holds no topology."""
    if hints.models:
        what = f"`nvidia-smi -L` output ({len(hints.models)} card(s))"
    elif hints.gpu_names:
        what = f"a list of card names ({', '.join(hints.gpu_names[:2])})"
    else:
        what = "a VM hint (" + hints.hypervisor[0].split(": ", 1)[-1] + ")"
    return InputError(
        f"this is {what}, not a topology: it has no links between the cards. Add `nvidia-smi "
        f"topo -m` output of the same host: `xpuperf topo check {path} TOPO_M.txt` (several "
        "files are merged as `xpuperf topo import` merges them)",
        path,
    )


def load_files(files: list[str]) -> Cluster:
    """One description or tool output (:func:`load_any`), or tool outputs of the same hosts
    merged as ``topo import`` merges them. Files that only name the cards or the hypervisor
    are left to the evidence checks."""
    topo, extra, hints = split_files(files)
    if not topo:  # nccl-tests output names its cards too: say who reads it
        raise pointed(evidence_only(extra[0], hints), TOPO)
    desc = [f for f in topo if "xpuperf.topology/" in read_text(f)]
    if desc:  # lscpu beside a description only says whether this is a VM (evidence checks)
        topo = [f for f in topo if f in desc or detect(read_text(f)) != ["lscpu"]]
    try:
        if len(topo) == 1:
            return load_any(topo[0])
        if desc:
            raise UsageError(
                "a description file cannot be merged with other topology files: give it alone "
                "(plus `nvidia-smi -L` or `lscpu` output for the evidence checks), or import "
                "the tool outputs together with `xpuperf topo import FILES -o DESCRIPTION`"
            )
        return import_files(topo).cluster
    except InputError as exc:  # a training log, NCCL log or nccl-tests output: who reads it
        raise pointed(exc, TOPO) from exc


def file_evidence(files: list[str], cluster: Cluster | None) -> tuple[list, list, evidence.Hints]:
    """Checks, findings and hints of :mod:`xpuperf.topology.evidence` over the input files."""
    texts = [(f, read_text(f)) for f in files if Path(f).is_file()]
    return evidence.assess(texts, cluster)


def read_files(files: list[str] | None) -> list[str]:
    """FILES with ``-`` replaced by a copy of standard input (:func:`with_stdin`)."""
    return with_stdin(
        list(files or []),
        what="the tool output",
        example="nvidia-smi topo -m | xpuperf topo import -",
    )
