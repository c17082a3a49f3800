"""Stream training logs and collect the framework warnings they print.

:func:`scan_files` reads each file once in 8 MiB chunks (``.gz`` decompressed transparently, as
:func:`xpuperf.calibrate.nccllog.has_nccl_lines` does), tests 64 KiB line-aligned blocks of raw
bytes for the markers of :mod:`xpuperf.events.patterns` in one RE2 pass (pyarrow), and decodes and
matches only the lines holding one: 165-215 MB/s on a plain step log and ~170 MB/s on a Megatron
log (2-core machine under load; the per-line scan was 42 and 6 MB/s). Line numbers are exact
(1-based, counted in the decompressed text). Parquet files, files with a NUL byte in their first
8 KiB and structured step tables (``.csv``, ``.tsv``, ``.json``, ``.jsonl``) are skipped: they
cannot hold framework output. Until a line that is not NCCL's own output is seen, each chunk is
also searched for one (:data:`~xpuperf.events.patterns.OTHER_LINE`; ~110 MB/s on an NCCL-only
log, found at once on a training log). The patterns of the evidence signs not yet seen
(:mod:`xpuperf.events.evidence`) join the markers' RE2 pass, and the blocks that matched are
searched again for them: no measurable cost on a plain step log, 15–20 % on logs with a marker
or an NCCL line in every block (125 MB synthetic logs; the figures above were not re-measured).
"""

from __future__ import annotations

import contextlib
import gzip
import re
import zlib
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from xpuperf.events import evidence
from xpuperf.events import patterns as pat

CHUNK = 8 << 20
BLOCK = 1 << 16
TABLE_SUFFIXES = (".csv", ".tsv", ".json", ".jsonl", ".parquet")
MAX_TEXT = 300
"""Characters of a line kept as the event's text."""


@dataclass
class Event:
    """One kind of warning as it appeared in the input.

    Attributes:
        kind: event kind (``ddp_no_unused``, ``nccl_timeout``, ``apex_overflow``…).
        file: file of the first occurrence.
        line: 1-based line number of the first occurrence in ``file``.
        count: number of lines with this warning over all files.
        text: the first occurrence as printed (ANSI codes removed, cut at 300 characters).
    """

    kind: str
    file: str
    line: int
    count: int
    text: str

    def to_dict(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "file": self.file,
            "line": self.line,
            "count": self.count,
            "text": self.text,
        }


@dataclass
class Facts:
    """What the scan read: events plus the values the checks need.

    ``ranks[kind]`` holds the ranks (launcher prefix or message) that printed each kind.
    """

    text_files: list[str] = field(default_factory=list)
    skipped_files: list[str] = field(default_factory=list)
    lines: int = 0
    other_text: bool = False  # a line that is not NCCL's own output nor blank was scanned
    nccl_text: bool = False  # an NCCL INFO/WARN line was scanned
    events: dict[str, Event] = field(default_factory=dict)
    signs: dict[str, evidence.Sign] = field(default_factory=dict)  # evidence.SIGNS kind -> first
    ranks: dict[str, set[int]] = field(default_factory=lambda: defaultdict(set))
    warnings: list[str] = field(default_factory=list)
    # DDP
    unused_params: dict[int, int] = field(default_factory=dict)  # rank -> indices listed
    # DataLoader
    few_workers_loaders: set[str] = field(default_factory=set)
    few_workers_forms: set[str] = field(default_factory=set)  # "<= 2" (Lightning <= 2.0), "< 2"
    spawn_loaders: set[str] = field(default_factory=set)  # named by the Lightning >= 2.1 warning
    suggested_workers: int | None = None
    loader_workers: int | None = None  # largest num_workers torch warned about (one process)
    loader_suggested: int | None = None  # smallest suggested max (CPUs the process may use)
    loader_cpuset_unchecked: bool = False  # suggested max from os.cpu_count(), not the cpuset
    worker_pids: set[str] = field(default_factory=set)
    worker_signals: set[str] = field(default_factory=set)
    # overflow
    overflow_per_rank: dict[int | None, int] = field(default_factory=lambda: defaultdict(int))
    overflow_iters: set[str] = field(default_factory=set)  # as printed, see distinct_iters()
    loss_scales: list[float] = field(default_factory=list)
    megatron: list[tuple[int, int, int]] = field(default_factory=list)  # (iter, skipped, nan)
    ds_step: tuple[int, int] | None = None  # last (step, skipped)
    # NCCL
    timeouts: dict[tuple[int, str, str], dict[str, object]] = field(default_factory=dict)
    # threads
    omp_default: int | None = None
    omp_values: set[int] = field(default_factory=set)
    nproc: int | None = None
    cpus: int | None = None
    # epochs
    steps_per_epoch: int | None = None

    def add(self, kind: str, file: str, line: int, text: str, rank: int | None) -> None:
        ev = self.events.get(kind)
        if ev is None:
            self.events[kind] = Event(kind, file, line, 1, text.strip()[:MAX_TEXT])
        else:
            ev.count += 1
        if rank is not None:
            self.ranks[kind].add(rank)


def distinct_iters(printed: set[str]) -> set[int]:
    """Iteration numbers of ``Grad overflow on iteration N`` lines, without the numbers made by
    interleaving: ranks printing `` 3`` at once give ``33`` (the text of a seen number repeated),
    as in the MLPerf maskrcnn log of 8 ranks."""
    out = set()
    for s in printed:
        glued = any(
            len(s) % len(t) == 0 and len(s) > len(t) and t * (len(s) // len(t)) == s
            for t in printed
        )
        if not glued:
            out.add(int(s))
    return out


def _kind_of_file(path: Path) -> str:
    """'text', 'table' (structured step table) or 'binary'."""
    name = path.name.lower()
    if name.endswith(".gz"):
        name = name[:-3]
    if name.endswith(TABLE_SUFFIXES):
        return "table"
    try:
        with path.open("rb") as fh:
            head = fh.read(4)
        if head[:2] == b"\x1f\x8b":
            with gzip.open(path, "rb") as fh:
                head = fh.read(8192)
        else:
            with path.open("rb") as fh:
                head = fh.read(8192)
    except (OSError, EOFError, zlib.error):
        return "binary"
    if head.startswith(b"PAR1") or b"\x00" in head:
        return "binary"
    return "text"


def scan_files(paths: list[Path]) -> Facts:
    """Scan ``paths`` (text logs, ``.gz`` allowed) and return the :class:`Facts`.

    Unreadable files and corrupt gzip streams are reported in ``Facts.warnings`` and read as far
    as they are good; nothing raises for bad content.
    """
    facts = Facts()
    for path in paths:
        path = Path(path)
        if not path.is_file():
            facts.warnings.append(f"{path}: not a file; not scanned for framework warnings")
            continue
        kind = _kind_of_file(path)
        if kind != "text":
            facts.skipped_files.append(str(path))
            continue
        try:
            _scan_one(path, facts)
        except (OSError, EOFError, zlib.error) as exc:
            facts.warnings.append(
                f"{path}: read stopped ({exc.__class__.__name__}: {exc}); the lines before were "
                "scanned for framework warnings"
            )
        facts.text_files.append(str(path))
    return facts


def _chunks(path: Path) -> Iterator[bytes]:
    """Decompressed content in pieces of about :data:`CHUNK` bytes. gzip is decompressed here
    (concatenated members too) so that a truncated file yields everything before the cut and
    then raises EOFError; ``gzip.GzipFile.read`` would drop the last piece it was decoding."""
    with path.open("rb") as fh:
        if fh.read(2) != b"\x1f\x8b":
            fh.seek(0)
            while chunk := fh.read(CHUNK):
                yield chunk
            return
        fh.seek(0)
        d: zlib._Decompress | None = None
        while raw := fh.read(CHUNK // 8):
            while raw:
                if d is None:
                    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
                out = d.decompress(raw)
                if out:
                    yield out
                raw = d.unused_data if d.eof else b""
                if d.eof:  # member complete; what follows is the next member
                    d = None
        if d is not None:
            raise EOFError("compressed file ended before the end-of-stream marker")


def _scan_one(path: Path, facts: Facts) -> None:
    name = str(path)
    base = 0  # lines before the current body
    carry = b""
    try:
        for chunk in _chunks(path):
            buf = carry + chunk
            cut = buf.rfind(b"\n") + 1
            if cut == 0:
                carry = buf
                continue
            _scan_body(buf, cut, base, name, facts)
            base += buf.count(b"\n", 0, cut)
            carry = buf[cut:]
    finally:
        if carry:
            _scan_body(carry, len(carry), base, name, facts)
            base += 1
        facts.lines += base


def _hit_blocks(
    arr: pa.Array, markers: tuple[bytes, ...], signs: dict[str, evidence.Sign]
) -> np.ndarray:
    """Indices of the blocks of :func:`~xpuperf.events.evidence.block_array` that hold a marker
    or a sign of evidence not yet seen: one pass of RE2 (pyarrow ``match_substring_regex``) over
    all blocks, zero-copy; a block without either is never looked at again."""
    rx = "|".join(pat.PREFILTER.get(m, re.escape(m.decode())) for m in markers)
    if (more := evidence.pattern(signs)) is not None:
        rx = f"{more}|{rx}"
    return np.flatnonzero(pc.match_substring_regex(arr, pattern=rx).to_numpy(zero_copy_only=False))


def _scan_body(body: bytes, n: int, base: int, name: str, facts: Facts) -> None:
    """Find marker lines in ``body[:n]`` (whole lines) and hand each to :func:`_line`; record
    the first line of each kind of evidence (:func:`xpuperf.events.evidence.find_signs`)."""
    if not facts.other_text:
        facts.other_text = pat.OTHER_LINE.search(body, 0, n) is not None
        facts.nccl_text = facts.nccl_text or b"NCCL INFO" in body or b"NCCL WARN" in body
    markers = pat.MARKERS if facts.steps_per_epoch else (*pat.MARKERS, pat.EPOCH_MARKER)
    bounds, arr = evidence.block_array(body, n, BLOCK)
    hits = _hit_blocks(arr, markers, facts.signs)
    if len(hits) and evidence.pattern(facts.signs) is not None:
        evidence.find_signs(body, bounds, arr, hits, base, name, facts.signs)
    spans: set[tuple[int, int]] = set()
    for lo, hi in ((bounds[k], bounds[k + 1]) for k in hits):
        for mark in markers:
            i = body.find(mark, lo, hi)
            while i != -1:
                s = body.rfind(b"\n", lo, i) + 1 or lo
                e = body.find(b"\n", i, hi)
                if e == -1:
                    e = hi
                spans.add((s, e))
                i = body.find(mark, e, hi)
    pos, no = 0, base
    for s, e in sorted(spans):
        no += body.count(b"\n", pos, s)
        pos = s
        text = body[s:e].decode("utf-8", "replace")
        for seg in text.split("\r"):
            if seg.strip():
                _line(pat.ANSI.sub("", seg), name, no + 1, facts)


def _line(seg: str, name: str, no: int, facts: Facts) -> None:
    """Match one line segment against every pattern whose marker it holds."""
    rank = pat.prefix_rank(seg)
    add = facts.add
    if "find_unused_parameters" in seg or "did not receive grad" in seg or "Expected to" in seg:
        if pat.DDP_NO_UNUSED.search(seg):
            add("ddp_no_unused", name, no, seg, rank)
        if pat.DDP_UNUSED_ERROR.search(seg):
            add("ddp_unused_error", name, no, seg, rank)
        m = pat.DDP_UNUSED_INDICES.search(seg)
        if m:
            r = int(m.group(1))
            facts.unused_params[r] = len(seg[m.end() :].split())
            add("ddp_unused_error", name, no, seg, r)
    if "ddp_spawn" in seg:
        for kind, rx in (
            ("spawn_not_persistent", pat.SPAWN_NOT_PERSISTENT),
            ("spawn_do_not_mix", pat.SPAWN_DO_NOT_MIX),
            ("spawn_no_workers", pat.SPAWN_NO_WORKERS),
        ):
            if rx.search(seg):
                add(kind, name, no, seg, rank)
    if "persistent_workers=True` in" in seg:
        m = pat.SPAWN_METHOD_NOT_PERSISTENT.search(seg)
        if m:
            add("spawn_method_not_persistent", name, no, seg, rank)
            facts.spawn_loaders.add(m.group("name").strip())
    if "does not have many workers" in seg:
        m = pat.FEW_WORKERS.search(seg)
        if m:
            add("few_workers", name, no, seg, rank)
            facts.few_workers_loaders.add((m.group("a") or m.group("b")).strip())
            facts.few_workers_forms.add("<= 2" if m.group("a") else "< 2")
            c = pat.FEW_WORKERS_CPUS.search(seg)
            if c:
                facts.cpus = int(c.group(1))
            g = pat.FEW_WORKERS_SUGGEST.search(seg)
            if g:
                facts.suggested_workers = int(g.group(1))
    if "DataLoader worker" in seg or "bus error" in seg:
        m = pat.WORKER_KILLED.search(seg)
        if m:
            facts.worker_pids.update(p.strip() for p in m.group(1).split(",") if p.strip())
            if m.group(2):
                facts.worker_signals.add(m.group(2).strip())
            add("worker_killed", name, no, seg, rank)
        elif pat.WORKER_BUS_ERROR.search(seg):
            facts.worker_signals.add("Bus error")
            add("worker_killed", name, no, seg, rank)
    if "verflow" in seg or "OVERFLOW" in seg:
        _overflow(seg, name, no, rank, facts)
    if "skipped" in seg:
        m = pat.MEGATRON_SKIPPED.search(seg)
        if m:
            facts.megatron.append((int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)))
            if int(m.group(2)) > 0:
                add("megatron_skipped", name, no, seg, rank)
        m = pat.DS_STEP_SKIPPED.search(seg)
        if m:
            facts.ds_step = (int(m.group(1)), int(m.group(2)))
    if "minimum" in seg.lower() and pat.MIN_LOSS_SCALE.search(seg):
        add("min_loss_scale", name, no, seg, rank)
    if "collective operation timeout" in seg:
        m = pat.NCCL_TIMEOUT.search(seg)
        if m:
            r = int(m.group(1))
            work = dict(pat.NCCL_WORK_FIELD.findall(m.group(2)))
            key = (r, work.get("SeqNum", "?"), work.get("OpType", "?"))
            if key not in facts.timeouts:
                work["ran_ms"] = m.group(3)
                work["file"], work["line"] = name, no
                facts.timeouts[key] = work
                add("nccl_timeout", name, no, seg, r)
    if "OMP_NUM_THREADS" in seg:
        m = pat.OMP_DEFAULT.search(seg)
        if m:
            facts.omp_default = int(m.group(1))
            add("omp_default", name, no, seg, rank)
        else:
            values = [int(v) for v in pat.OMP_VALUE.findall(seg)]
            if values:
                facts.omp_values.update(values)
                add("omp_settings", name, no, seg, rank)
    if "nproc" in seg or "ntasks-per-node" in seg:
        m = pat.NPROC.search(seg)
        if m:
            facts.nproc = int(m.group(1))
            add("omp_settings", name, no, seg, rank)
    if "CPU(s):" in seg:
        m = pat.LSCPU_CPUS.match(seg)
        if m:
            facts.cpus = int(m.group(1))
            add("omp_settings", name, no, seg, rank)
    if "worker processes in total" in seg:
        m = pat.LOADER_TOO_MANY.search(seg)
        if m and m.group(2) is None:
            add("loader_workers_unsized", name, no, seg, rank)
        elif m:
            created, suggested = int(m.group(1)), int(m.group(2))
            facts.loader_workers = max(facts.loader_workers or 0, created)
            facts.loader_suggested = min(facts.loader_suggested or suggested, suggested)
            facts.loader_cpuset_unchecked |= m.group(3) is not None
            add("loader_too_many_workers", name, no, seg, rank)
    if facts.steps_per_epoch is None and "Epoch" in seg:
        m = pat.EPOCH_LEN.search(seg)
        if m:
            facts.steps_per_epoch = int(m.group(1) or m.group(2))


def _overflow(seg: str, name: str, no: int, rank: int | None, facts: Facts) -> None:
    m = pat.APEX_OVERFLOW.search(seg)
    kind = None
    if m:
        kind = "apex_overflow"
        _scale(m.group(2), facts)
    elif m := pat.DS_OVERFLOW.search(seg):
        kind = "deepspeed_overflow"
        if m.group("rank") is not None and rank is None:
            rank = int(m.group("rank"))
        _scale(m.group("scale"), facts)
    elif m := pat.FAIRSEQ_OVERFLOW.search(seg):
        kind = "fairseq_overflow"
        _scale(m.group(1), facts)
    elif m := pat.GRAD_OVERFLOW_ITER.search(seg):
        kind = "grad_overflow"
        if m.group(1) is not None:
            facts.overflow_iters.add(m.group(1))
    if kind is not None:
        facts.add(kind, name, no, seg, rank)
        facts.overflow_per_rank[rank] += 1


def _scale(value: str, facts: Facts) -> None:
    with contextlib.suppress(ValueError):
        facts.loss_scales.append(float(value))
