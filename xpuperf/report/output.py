"""Writing outputs safely: never over an input file, atomically (temp file + rename), never
through a looping symlink, into a read-only folder or into a FIFO nobody reads (exit 2)."""

from __future__ import annotations

import contextlib
import errno
import os
import select
import stat
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

from xpuperf.errors import UsageError
from xpuperf.readers.paths import glob_paths, special_kind

FIFO_WAIT_S = 10.0
"""Seconds an output that is a FIFO (``--json >(jq .)``, a named pipe, ``$GITHUB_STEP_SUMMARY``)
may wait for a reader to open it, and for a reader that stopped reading; then exit 2 (a warning
for the step summary). ``XPUPERF_FIFO_WAIT_S`` overrides it."""


def fifo_wait_s() -> float:
    """:data:`FIFO_WAIT_S`, or ``$XPUPERF_FIFO_WAIT_S`` when that is a number from 0 to 3600."""
    try:
        value = float(os.environ.get("XPUPERF_FIFO_WAIT_S", ""))
    except ValueError:
        return FIFO_WAIT_S
    return value if 0.0 <= value <= 3600.0 else FIFO_WAIT_S


def _expanded(inputs: Iterable[str | os.PathLike]) -> Iterator[str]:
    """The inputs, with a glob pattern that is not itself a path replaced by its matches."""
    for p in inputs:
        text = os.fspath(p)
        if not Path(text).exists() and any(c in text for c in "*?["):
            yield from glob_paths(text)  # a symlink loop cannot make it endless
        else:
            yield text


def _resolved(path: str | os.PathLike) -> Path:
    """``path`` with symbolic links resolved; a looping one is left as it is (no error)."""
    return Path(os.path.realpath(path))


def check_output_path(out: str | os.PathLike) -> None:
    """Refuse an output path that cannot be written, before any work: empty, a NUL byte, a
    symbolic link that loops (the path or a folder on the way to it), a folder that does not
    exist or is a file, or a folder that takes no new file (no write permission, a read-only
    mount, an immutable folder, ``/proc`` and ``/sys``, which ``os.access`` calls writable for
    root: a file is created there and removed at once to know, :func:`_probe`). ``-``
    (stdout), devices and FIFOs pass: they are written through (:func:`write_text_atomic`). A
    folder output (``ingest -o``) must itself be writable when it exists.

    Raises:
        UsageError: one line naming the path, what is wrong and what to do.
    """
    text = os.fspath(out)
    if not text.strip():
        raise UsageError("output path is empty; give a file name")
    if text == STDOUT:
        return
    try:
        mode: int | None = Path(text).stat().st_mode
    except ValueError:
        raise UsageError(f"cannot write {text!r}: the path contains a NUL byte") from None
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise UsageError(
                f"cannot write {text}: it is, or goes through, a symbolic link that loops; fix or "
                "remove the link, or choose another path"
            ) from None
        mode = None
    if mode is not None and not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        return
    real = _resolved(text)
    place = real if mode is not None and stat.S_ISDIR(mode) else real.parent
    if not place.is_dir():
        what = (
            f"{place} is a file, not a folder"
            if place.exists()
            else f"folder {place} does not exist"
        )
        raise UsageError(f"cannot write {text}: {what}; choose another path")
    if not os.access(place, os.W_OK):
        raise UsageError(
            f"cannot write {text}: folder {place} is read-only (no write permission, a "
            "read-only mount or an immutable folder); choose another path"
        )
    _probe(text, place)


def _probe(text: str, place: Path) -> None:
    """Refuse (UsageError) folder ``place`` when it takes no new file. An unnamed file
    (``O_TMPFILE``) leaves the folder as it was; where the file system has none, a named file
    is created and removed, and the folder's times are put back (an input folder stays as
    it was)."""
    why = None
    try:
        os.close(os.open(place, os.O_TMPFILE | os.O_WRONLY, 0o600))  # type: ignore[attr-defined]
        return
    except AttributeError:  # not Linux
        pass
    except OSError as e:
        if e.errno not in (errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL):
            why = e.strerror
    if why is None:  # no unnamed files here (/proc, /sys, NFS …): try a named one
        before = place.stat()
        try:
            fd, probe = tempfile.mkstemp(prefix=".xpuperf-probe-", dir=place)
        except OSError as e:
            why = e.strerror
        else:
            os.close(fd)
            Path(probe).unlink(missing_ok=True)
            with contextlib.suppress(OSError):  # not the owner: the times stay changed
                os.utime(place, ns=(before.st_atime_ns, before.st_mtime_ns))
            return
    raise UsageError(
        f"cannot write {text}: folder {place} takes no new file ({why}; /proc, /sys and "
        "read-only mounts refuse them); choose another path"
    )


def _write_special(path: str | os.PathLike, text: str, wait_s: float) -> None:
    """Write ``text`` through an existing FIFO, device or ``/dev/stdout``, never replacing it.

    A FIFO is opened without blocking, retried until a reader opens it or ``wait_s`` passed;
    a reader that stops reading for ``wait_s`` ends the write too.

    Raises:
        OSError: ``ENXIO`` (no reader), ``ETIMEDOUT`` (the reader stopped), any other failure.
    """
    if not stat.S_ISFIFO(Path(path).stat().st_mode):
        with Path(path).open("a", encoding="utf-8") as fh:
            fh.write(text)
        return
    deadline = time.monotonic() + wait_s
    while True:
        try:
            fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK | os.O_APPEND)
            break
        except OSError as e:
            if e.errno != errno.ENXIO or time.monotonic() >= deadline:
                raise
            time.sleep(min(0.05, wait_s))
    try:
        data = memoryview(text.encode("utf-8"))
        while data:
            try:
                data = data[os.write(fd, data) :]
            except BlockingIOError:
                if not select.select([], [fd], [], wait_s)[1]:
                    raise OSError(errno.ETIMEDOUT, "the reader stopped reading") from None
    finally:
        os.close(fd)


def _special_error(path: str | os.PathLike, e: OSError, wait_s: float) -> str:
    """One line for a failed write through a FIFO or device."""
    kind = special_kind(path)
    if e.errno == errno.ENXIO and kind is not None and not kind.startswith("a FIFO"):
        return f"cannot write {os.fspath(path)}: {kind}, not a regular file; write to a file"
    if e.errno == errno.ENXIO:
        return (
            f"cannot write {os.fspath(path)}: a FIFO (named pipe) that no process opened for "
            f"reading within {wait_s:g} s; start the reader first or write to a regular file"
        )
    if e.errno == errno.ETIMEDOUT:
        return (
            f"cannot write {os.fspath(path)}: the FIFO's reader stopped reading for "
            f"{wait_s:g} s; write to a regular file"
        )
    return f"cannot write {os.fspath(path)}: {e.strerror}"


STDOUT = "-"
"""An output path that means standard output (``--json -``, ``--html -``, ``--markdown -``)."""


def stdout_outputs(**outputs: str | None) -> bool:
    """Whether any output goes to standard output (then the terminal summary is not printed).

    Keyword names are the flags without dashes (``json``, ``html``, ``markdown``).

    Raises:
        UsageError: an output path that is empty or blank; more than one output is ``-`` (they
            would interleave on stdout) or names the same file (the last would replace the
            others: ``--json out.json --html out.json`` lost the JSON).
    """
    for k, v in outputs.items():
        if v is not None and not v.strip():
            raise UsageError(f"--{k} path is empty; give a file name, or - for stdout")
    flags = [f"--{k}" for k, v in outputs.items() if v == STDOUT]
    if len(flags) > 1:
        raise UsageError(
            f"{' and '.join(flags)} both write to stdout (-); send one of them to a file"
        )
    seen: dict[Path, str] = {}
    for k, v in outputs.items():
        if v is None or v == STDOUT:
            continue
        try:
            target = _resolved(v)
        except ValueError:  # a NUL byte: check_output_path refuses it with its own message
            continue
        if target in seen:
            raise UsageError(
                f"{seen[target]} and --{k} both write {v}: one would replace the other; give "
                "each output its own file"
            )
        seen[target] = f"--{k}"
    return bool(flags)


def write_output(path: str, text: str) -> None:
    """``text`` to standard output when ``path`` is ``-``, else :func:`write_text_atomic`."""
    if path == STDOUT:
        sys.stdout.write(text)
    else:
        write_text_atomic(path, text)


def check_not_input(out: str | os.PathLike, inputs: Iterable[str | os.PathLike]) -> None:
    """Raise :class:`UsageError` if ``out`` resolves to one of ``inputs`` (files, dirs or the
    matches of glob patterns), or cannot be written (:func:`check_output_path`); a path ending
    with ``/`` names a folder, not the file to write (``--json newdir/`` wrote a file
    ``newdir``)."""
    text = os.fspath(out)
    if text != STDOUT and text.endswith(("/", os.sep)) and not Path(text).is_dir():
        raise UsageError(f"cannot write {text}: it ends with '/', a folder; give a file name")
    check_output_path(out)
    target = _resolved(out)
    for p in _expanded(inputs):
        src = _resolved(p)
        if target == src or (src.is_dir() and src in target.parents and target.exists()):
            raise UsageError(
                f"refusing to write {out}: it is one of the inputs; choose another output path"
            )


def write_text_atomic(path: str | os.PathLike, text: str) -> None:
    """Write ``text`` to ``path`` via a temporary file in the same directory and a rename.

    An interrupted run leaves either the old file or the new one, never a partial file. A
    symlink is followed (the file it points to is replaced, the link stays); an existing
    device, FIFO or other special file is written to directly, never replaced (a FIFO waits
    at most :func:`fifo_wait_s` for its reader). New files get the usual mode (0666 less the
    umask), an existing file keeps its mode.

    Raises:
        UsageError: empty path, a looping symlink, a read-only folder, the directory does not
            exist, a FIFO without a reader, or the file cannot be written.
    """
    check_output_path(path)
    target = Path(path)
    if target.exists() and not target.is_file():
        if target.is_dir():
            raise UsageError(f"cannot write {path}: it is a directory; give a file name")
        wait_s = fifo_wait_s()
        try:  # /dev/stdout, a FIFO, a device: write through (unresolved), never replace
            _write_special(target, text, wait_s)
        except OSError as e:
            raise UsageError(_special_error(path, e, wait_s)) from None
        return
    if target.is_symlink():
        target = _resolved(target)
    parent = target.parent
    if not parent.is_dir():
        raise UsageError(f"cannot write {path}: directory {parent} does not exist")
    if target.exists():
        mode = target.stat().st_mode & 0o7777
    else:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=parent)
    except OSError as e:
        raise UsageError(f"cannot write {path}: {e.strerror}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        Path(tmp).chmod(mode)
        Path(tmp).replace(target)
    except OSError as e:
        Path(tmp).unlink(missing_ok=True)
        raise UsageError(f"cannot write {path}: {e.strerror}") from None
    except BaseException:  # Ctrl-C (KeyboardInterrupt) or any error mid-write: no temp file left
        Path(tmp).unlink(missing_ok=True)
        raise


def write_markdown_outputs(
    text: str, md_out: str | None, protect: Iterable[str | os.PathLike] = ()
) -> str | None:
    """Write a Markdown summary to ``md_out`` (``-``: stdout); append it to
    ``$GITHUB_STEP_SUMMARY`` when that is set.

    The step summary is skipped, with a warning, when it names an input or another output of
    the run (``protect``: the inputs and the other output paths; ``md_out`` itself too) or is
    ``-``: appending there would corrupt a file the user keeps.

    Returns a warning (one line) when the step summary cannot be appended — a CI convenience
    must not fail the run — else None. Raises :class:`UsageError` when ``md_out`` cannot be
    written (:func:`write_text_atomic`).
    """
    if md_out:
        write_output(md_out, text)
    summary_path = os.environ.get("GITHUB_STEP_SUMMARY")
    if not summary_path:
        return None
    if summary_path.strip() == STDOUT:
        return "$GITHUB_STEP_SUMMARY is '-', not a file: step summary not written"
    kept = [str(x) for x in protect if x and str(x) != STDOUT]
    if md_out and md_out != STDOUT:
        kept.append(md_out)
    try:
        check_output_path(summary_path)
    except UsageError as e:
        return f"$GITHUB_STEP_SUMMARY: {e}: step summary not written"
    try:
        check_not_input(summary_path, kept)
    except UsageError:
        return (
            f"$GITHUB_STEP_SUMMARY ({summary_path}) is an input or output of this run: step "
            "summary not written"
        )
    wait_s = fifo_wait_s()
    special = False  # set before anything can raise (a name too long fails in is_file)
    try:
        if special := not Path(summary_path).is_file() and Path(summary_path).exists():
            _write_special(summary_path, text, wait_s)  # a FIFO: bounded wait for its reader
        else:
            with Path(summary_path).open("a", encoding="utf-8") as fh:
                fh.write(text)
    except OSError as e:
        if special:
            why = _special_error(summary_path, e, wait_s)
            return f"$GITHUB_STEP_SUMMARY: {why}: step summary not written"
        return f"cannot append to $GITHUB_STEP_SUMMARY: {e.strerror or e}: step summary not written"
    return None
