"""Writing outputs safely: never over an input file, atomically (temp file + rename)."""

from __future__ import annotations

import glob
import os
import sys
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path

from xpuperf.errors import UsageError


def _expanded(inputs: Iterable[str | os.PathLike]) -> Iterator[str]:
    """The inputs, with a glob pattern that is not itself a path replaced by its matches."""
    for p in inputs:
        text = os.fspath(p)
        if not Path(text).exists() and any(c in text for c in "*?["):
            yield from glob.glob(text, recursive=True)  # noqa: PTH207 (absolute patterns too)
        else:
            yield text


STDOUT = "-"
"""An output path that means standard output (``--json -``, ``--html -``, ``--markdown -``)."""


def stdout_outputs(**outputs: str | None) -> bool:
    """Whether any output goes to standard output (then the terminal summary is not printed).

    Keyword names are the flags without dashes (``json``, ``html``, ``markdown``).

    Raises:
        UsageError: an output path that is empty or blank; more than one output is ``-`` (they
            would interleave on stdout).
    """
    for k, v in outputs.items():
        if v is not None and not v.strip():
            raise UsageError(f"--{k} path is empty; give a file name, or - for stdout")
    flags = [f"--{k}" for k, v in outputs.items() if v == STDOUT]
    if len(flags) > 1:
        raise UsageError(
            f"{' and '.join(flags)} both write to stdout (-); send one of them to a file"
        )
    return bool(flags)


def write_output(path: str, text: str) -> None:
    """``text`` to standard output when ``path`` is ``-``, else :func:`write_text_atomic`."""
    if path == STDOUT:
        sys.stdout.write(text)
    else:
        write_text_atomic(path, text)


def check_not_input(out: str | os.PathLike, inputs: Iterable[str | os.PathLike]) -> None:
    """Raise :class:`UsageError` if ``out`` resolves to one of ``inputs`` (files, dirs or the
    matches of glob patterns)."""
    target = Path(out).resolve()
    for p in _expanded(inputs):
        src = Path(p).resolve()
        if target == src or (src.is_dir() and src in target.parents and target.exists()):
            raise UsageError(
                f"refusing to write {out}: it is one of the inputs; choose another output path"
            )


def write_text_atomic(path: str | os.PathLike, text: str) -> None:
    """Write ``text`` to ``path`` via a temporary file in the same directory and a rename.

    An interrupted run leaves either the old file or the new one, never a partial file. A
    symlink is followed (the file it points to is replaced, the link stays); an existing
    device, FIFO or other special file is written to directly, never replaced. New files get
    the usual mode (0666 less the umask), an existing file keeps its mode.

    Raises:
        UsageError: empty path, the directory does not exist, or the file cannot be written.
    """
    if not str(path):
        raise UsageError("output path is empty; give a file name")
    target = Path(path)
    if target.is_symlink():
        target = target.resolve()
    if target.exists() and not target.is_file():
        if target.is_dir():
            raise UsageError(f"cannot write {path}: it is a directory; give a file name")
        try:  # /dev/stdout, a FIFO, a device: write through, never replace
            with target.open("w", encoding="utf-8") as fh:
                fh.write(text)
        except OSError as e:
            raise UsageError(f"cannot write {path}: {e.strerror}") from None
        return
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
        check_not_input(summary_path, kept)
    except UsageError:
        return (
            f"$GITHUB_STEP_SUMMARY ({summary_path}) is an input or output of this run: step "
            "summary not written"
        )
    try:
        with Path(summary_path).open("a", encoding="utf-8") as fh:
            fh.write(text)
    except OSError as e:
        return f"cannot append to $GITHUB_STEP_SUMMARY: {e}"
    return None
