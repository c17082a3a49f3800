"""The step recorder: phase timings of a training loop → canonical JSON Lines, one file per rank.

Standard library only. Times are ``time.perf_counter()`` differences in seconds; ``t_end_s`` is
``time.time()`` (Unix epoch seconds) at the end of the step, so ranks can be aligned.

A step is open between :meth:`StepProbe.begin_step` and :meth:`StepProbe.end_step` (or inside
``with probe.step():``, or one iteration of ``for batch in probe.iterate(loader):``). Inside it,
time is charged to a phase either by a context manager (``with probe.phase("forward"):``) or by
:meth:`StepProbe.mark` (``probe.mark("forward")`` charges the time since the previous mark, the end
of the previous phase, or the start of the step). Time in no phase is left to the analysis as
"other" (host overhead); ``step_time_s`` is the whole step.

``comm_s`` is the time this rank was *blocked* in collectives: exposed communication plus waiting
for slower ranks. Communication that overlaps compute is not in it. Integrations that see a
collective start (the DDP hook of :mod:`xpuperf.probe.pytorch`) call
:meth:`StepProbe.note_comm_start`; the phase or mark segment that is open then is split at that
moment: the part before stays in the phase (compute), the rest goes to ``comm``.

Records are kept in memory and appended to ``<out_dir>/rank<R>.jsonl`` every ``flush_every``
steps, at :meth:`StepProbe.close` and at interpreter exit. No device synchronisation happens unless
a ``sync`` callable is given (e.g. ``torch.cuda.synchronize``): it is then called before every
timestamp.
"""

from __future__ import annotations

import atexit
import os
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from types import TracebackType
from typing import Any

from xpuperf.probe.env import ProbeError, RankInfo, detect_rank
from xpuperf.probe.jsonl import format_record

PHASES: tuple[str, ...] = ("data", "forward", "backward", "comm", "optimizer", "compute")
"""Phase names; each is written as ``<name>_s``. ``compute`` is for compute that cannot be split
into forward / backward / optimizer (e.g. a fused training step)."""
COMPUTE_PARTS: frozenset[str] = frozenset({"forward", "backward", "optimizer", "compute"})
"""Phases summed into ``compute_s``."""
DEFAULT_DIR_ENV = "XPUPERF_PROBE_DIR"
"""Environment variable naming the output folder when ``out_dir`` is not given."""


class _Phase:
    """Reusable context manager of one phase (cheaper than a generator-based one)."""

    __slots__ = ("name", "probe")

    def __init__(self, probe: StepProbe, name: str) -> None:
        self.probe, self.name = probe, name

    def __enter__(self) -> StepProbe:
        self.probe._enter(self.name)
        return self.probe

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.probe._exit(self.name)


class _Step:
    """Context manager of one step: ends it on success, abandons it on an exception."""

    __slots__ = ("probe", "samples", "step")

    def __init__(self, probe: StepProbe, step: int | None, samples: float | None) -> None:
        self.probe, self.step, self.samples = probe, step, samples

    def __enter__(self) -> StepProbe:
        self.probe.begin_step(self.step)
        return self.probe

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None:
            self.probe.end_step(self.samples)
        else:
            self.probe.abandon_step()


class StepProbe:
    """Per-rank step recorder writing the canonical step table as JSON Lines.

    Args:
        out_dir: folder of the ``rank<R>.jsonl`` files (created on the first flush); default the
            ``XPUPERF_PROBE_DIR`` environment variable, else ``./xpuperf_probe``.
        rank, local_rank, world_size, node: identity; None = detect
            (:func:`xpuperf.probe.env.detect_rank`).
        samples_per_step: samples this rank processes per step (the per-card batch), written as
            ``samples`` unless a step says otherwise.
        flush_every: steps kept in memory between writes (≥ 1).
        sync: called before every timestamp when given (e.g. ``torch.cuda.synchronize``); None =
            never synchronise (host timings; asynchronous device work lands where the host
            next waits for it).
        truncate: start the file afresh instead of appending to it.
        start_step: number of the first step when steps are numbered by the probe.
        clock: monotonic clock in seconds for phase and step times (tests inject a fake one).

    Attributes:
        info: identity of this rank (:class:`RankInfo`).
        path: the JSON Lines file.
        last_record: the record of the last finished step (do not modify it), or None.
        steps_written: records written to the file so far.

    Not thread-safe except :meth:`note_comm_start`, which may be called from any thread.
    """

    def __init__(
        self,
        out_dir: str | os.PathLike[str] | None = None,
        *,
        rank: int | None = None,
        local_rank: int | None = None,
        world_size: int | None = None,
        node: str | None = None,
        samples_per_step: float | None = None,
        flush_every: int = 50,
        sync: Callable[[], Any] | None = None,
        truncate: bool = False,
        start_step: int = 0,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        if int(flush_every) < 1:
            raise ProbeError(f"flush_every={flush_every!r} must be at least 1")
        self.info: RankInfo = detect_rank(
            rank, local_rank=local_rank, world_size=world_size, node=node
        )
        folder = out_dir if out_dir is not None else os.environ.get(DEFAULT_DIR_ENV, "")
        self.path: Path = Path(folder or "xpuperf_probe") / f"rank{self.info.rank}.jsonl"
        self.samples_per_step = samples_per_step
        self.flush_every = int(flush_every)
        self.sync = sync
        self.next_step = int(start_step)
        self.steps_written = 0
        self.last_record: dict[str, Any] | None = None
        self._clock = clock
        self._mode = "w" if truncate else "a"
        self._file: Any = None
        self._closed = False
        self._buf: list[dict[str, Any]] = []
        self._seen: set[str] = set()
        self._phases = {p: _Phase(self, p) for p in PHASES}
        self._reset()
        atexit.register(self.close)

    # --- state ------------------------------------------------------------------------------
    def _reset(self) -> None:
        self._t0: float | None = None  # perf_counter at step start; None = no open step
        self._step: int = self.next_step
        self._last = 0.0  # end of the last charged segment
        self._open: str | None = None  # open phase context
        self._open_t0 = 0.0
        self._acc: dict[str, float] = {}
        self._note: float | None = None  # latest note_comm_start() in this step
        self._samples: float | None = None
        self._extra: dict[str, Any] = {}

    def _now(self) -> float:
        if self.sync is not None:
            self.sync()
        return self._clock()

    @property
    def in_step(self) -> bool:
        """True while a step is open."""
        return self._t0 is not None

    @property
    def closed(self) -> bool:
        """True after :meth:`close`."""
        return self._closed

    def _charge(self, name: str, t0: float, t1: float) -> None:
        """Charge [t0, t1] to ``name``, the part after a comm note (if any) to ``comm``."""
        note = self._note
        acc = self._acc
        if note is not None and t0 <= note < t1 and name != "comm":
            acc["comm"] = acc.get("comm", 0.0) + (t1 - note)
            t1 = note
        acc[name] = acc.get(name, 0.0) + (t1 - t0)

    def _need_step(self, what: str) -> None:
        if self._closed:
            raise ProbeError(f"{what}: the probe is closed")
        if self._t0 is None:
            raise ProbeError(f"{what} outside a step: call begin_step() or use probe.step() first")

    # --- steps --------------------------------------------------------------------------------
    def begin_step(self, step: int | None = None) -> None:
        """Open a step numbered ``step`` (default: one more than the last).

        Raises:
            ProbeError: a step is already open, or the probe is closed.
        """
        if self._closed:
            raise ProbeError("begin_step: the probe is closed")
        if self._t0 is not None:
            raise ProbeError(f"begin_step: step {self._step} is still open; call end_step() first")
        t = self._now()
        if step is not None:
            self.next_step = int(step)
        self._step = self.next_step
        self._t0 = self._last = t

    def end_step(self, samples: float | None = None, **extra: Any) -> dict[str, Any]:
        """Close the open step and buffer its record; returns the record (do not modify it).

        Args:
            samples: samples of this step (default: :meth:`set_samples`, else
                ``samples_per_step``).
            extra: additional JSON fields for this record (ignored by the reader unless they
                are known column names).

        Raises:
            ProbeError: no open step, or a phase context is still open.
        """
        self._need_step("end_step")
        if self._open is not None:
            raise ProbeError(f"end_step inside the open phase {self._open!r}; leave it first")
        t = self._now()
        wall = time.time()
        rec: dict[str, Any] = {
            "rank": self.info.rank,
            "step": self._step,
            "step_time_s": t - self._t0,  # type: ignore[operator]
            "t_end_s": wall,
        }
        n = samples if samples is not None else self._samples
        n = n if n is not None else self.samples_per_step
        if n is not None:
            rec["samples"] = n
        rec["node"] = self.info.node
        acc = self._acc
        seen = self._seen
        seen.update(acc)
        compute = None
        for p in PHASES:
            if p in seen:
                v = acc.get(p, 0.0)
                rec[p + "_s"] = v
                if p in COMPUTE_PARTS:
                    compute = v if compute is None else compute + v
        if compute is not None:
            rec["compute_s"] = compute
        if self._extra or extra:
            rec.update(self._extra)
            rec.update(extra)
        self._buf.append(rec)
        self.last_record = rec
        self.next_step = self._step + 1
        self._reset()
        if len(self._buf) >= self.flush_every:
            self.flush()
        return rec

    def abandon_step(self) -> None:
        """Drop the open step without recording it (e.g. after an exception)."""
        self._reset()

    def step(self, step: int | None = None, samples: float | None = None) -> _Step:
        """``with probe.step(samples=B):`` — one step; an exception inside abandons it."""
        return _Step(self, step, samples)

    def set_samples(self, samples: float) -> None:
        """Samples of the open step (when only known inside the step)."""
        self._need_step("set_samples")
        self._samples = samples

    def add_fields(self, **fields: Any) -> None:
        """Extra JSON fields for the record of the open step."""
        self._need_step("add_fields")
        self._extra.update(fields)

    def iterate(self, iterable: Iterable[Any], samples: float | None = None) -> Iterator[Any]:
        """Wrap a data loader: each item is one step, and fetching it is its ``data`` phase.

        The step of an item ends when the next item is requested or the loop ends. After a
        ``break`` the step ends when the generator is closed (at once in CPython).
        """
        it = iter(iterable)
        try:
            while True:
                if self._t0 is not None:
                    self.end_step(samples)
                self.begin_step()
                try:
                    item = next(it)
                except StopIteration:
                    self.abandon_step()
                    return
                self.mark("data")
                yield item
        finally:
            if self._t0 is not None and self._open is None and not self._closed:
                self.end_step(samples)

    # --- phases -------------------------------------------------------------------------------
    def phase(self, name: str) -> _Phase:
        """``with probe.phase("forward"):`` — charge the block's time to ``name``.

        Raises:
            ProbeError: unknown name (on creation); no open step or an already open phase
                (on entry).
        """
        try:
            return self._phases[name]
        except KeyError:
            raise ProbeError(f"unknown phase {name!r}; phases are {', '.join(PHASES)}") from None

    def _enter(self, name: str) -> None:
        self._need_step(f"phase {name!r}")
        if self._open is not None:
            raise ProbeError(
                f"phase {name!r} opened inside phase {self._open!r}: phases do not nest"
            )
        self._open = name
        self._open_t0 = self._now()

    def _exit(self, name: str) -> None:
        t = self._now()
        if self._open != name or self._t0 is None:
            return  # the step was abandoned or closed inside the block: nothing to charge
        self._charge(name, self._open_t0, t)
        self._open = None
        self._last = t

    def mark(self, name: str) -> None:
        """Charge the time since the previous mark (or phase end, or step start) to ``name``.

        Raises:
            ProbeError: unknown name, no open step, or inside an open phase context.
        """
        if name not in self._phases:
            raise ProbeError(f"unknown phase {name!r}; phases are {', '.join(PHASES)}")
        self._need_step(f"mark({name!r})")
        if self._open is not None:
            raise ProbeError(f"mark({name!r}) inside the open phase {self._open!r}")
        t = self._now()
        self._charge(name, self._last, t)
        self._last = t

    def note_comm_start(self) -> None:
        """Note that this rank's compute for the current segment ended and it now blocks on (or
        hands work to) a collective; see the module docstring. Safe from any thread; a note
        outside a step is ignored."""
        if self._t0 is not None:
            self._note = self._clock()

    # --- output -------------------------------------------------------------------------------
    def flush(self) -> None:
        """Append the buffered records to the file and flush it to the OS."""
        if not self._buf:
            return
        if self._file is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file = self.path.open(self._mode, encoding="utf-8")
            self._mode = "a"
        self._file.write("".join([format_record(r) for r in self._buf]))
        self._file.flush()
        self.steps_written += len(self._buf)
        self._buf.clear()

    def close(self) -> None:
        """Flush and close the file. An open step is dropped. Safe to call twice."""
        if self._closed:
            return
        self._reset()
        self.flush()
        if self._file is not None:
            self._file.close()
            self._file = None
        self._closed = True
        atexit.unregister(self.close)

    def __enter__(self) -> StepProbe:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"StepProbe(rank={self.info.rank}, path={str(self.path)!r})"
