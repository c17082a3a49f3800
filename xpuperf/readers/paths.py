"""From the user's path arguments to a list of files, and rank numbers from file names.

Each argument is a file, a directory (every supported file inside, recursively, in natural order —
``rank2`` before ``rank10`` — skipping hidden files and folders, ``README*`` and ``*.md``) or a
glob pattern (``logs/rank*.csv``, ``**`` recurses).

A rank in a file name is the number right after one of the words in :data:`RANK_WORDS`
(case-insensitive, optionally joined by ``_`` or ``-``, not preceded by a letter or by
``local_``): ``rank3.csv``,
``rank_3.log``, ``Rank-03.jsonl``, ``worker-3.jsonl``, ``worker3.csv``, ``proc2.csv``,
``process_2.log``, ``gpu5.csv``, ``device5.csv``. Words earlier in the list win
(``worker1_rank3.csv`` is rank 3). When the file name has no such word, the enclosing folders below
the folder the user named are tried, nearest first (``logs/rank_3/stdout.log`` with argument
``logs``).
"""

from __future__ import annotations

import glob
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from xpuperf.errors import InputError

RANK_WORDS: tuple[str, ...] = ("rank", "worker", "process", "proc", "device", "gpu", "npu")
"""Words whose following number names the rank of a file, highest priority first."""

_RANK_RES = [
    re.compile(rf"(?<![a-z])(?<!local_)(?<!local-){w}[_-]?(\d+)", re.IGNORECASE) for w in RANK_WORDS
]
_GLOB_CHARS = re.compile(r"[*?\[]")
_DIGITS = re.compile(r"(\d+)")


@dataclass(frozen=True)
class Found:
    """A file to read.

    Attributes:
        path: the file.
        explicit: named by the user; files found in a folder or by a glob pattern are not (an
            unrecognised one of those is skipped with a warning instead of being an error).
        hint: path parts that may carry the rank: file name, then folders below the user's folder.
    """

    path: Path
    explicit: bool
    hint: tuple[str, ...]


def natural_key(text: str) -> tuple[tuple[int, int | str], ...]:
    """Sort key comparing digit runs as numbers: ``node2`` < ``node10``."""
    return tuple(
        (0, int(part)) if part.isdigit() else (1, part.lower())
        for part in _DIGITS.split(text)
        if part
    )


def rank_from_name(parts: Iterable[str]) -> int | None:
    """The rank number named by the first part that carries one, else None.

    ``parts`` is a file name followed by enclosing folder names, e.g. ``("rank3.csv", "run1")``.
    """
    for part in parts:
        for rx in _RANK_RES:
            m = rx.search(part)
            if m:
                return int(m.group(1))
    return None


def _skipped(name: str) -> bool:
    low = name.lower()
    return name.startswith(".") or low.startswith("readme") or low.endswith(".md")


def _walk(root: Path, wanted: set[str]) -> list[Found]:
    out: list[Found] = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames[:] = sorted((d for d in dirnames if not d.startswith(".")), key=natural_key)
        rel = Path(dirpath).relative_to(root).parts
        for name in filenames:
            if _skipped(name) or suffix_of(name) not in wanted:
                continue
            hint = (name, *reversed(rel))
            out.append(Found(Path(dirpath) / name, False, hint))
    out.sort(key=lambda f: natural_key(str(f.path.relative_to(root))))
    return out


def suffix_of(name: str) -> str:
    """Lower-case extension of a file name after stripping ``.gz`` (``"a.CSV.gz"`` → ``".csv"``)."""
    low = name.lower().removesuffix(".gz")
    dot = low.rfind(".")
    return low[dot:] if dot > 0 else ""


def expand(args: Sequence[str | os.PathLike[str]], wanted: set[str]) -> list[Found]:
    """Files named by the arguments, in argument order, each file once.

    Args:
        args: files, folders or glob patterns.
        wanted: extensions (``".csv"``, after stripping ``.gz``) read from inside folders.

    Raises:
        InputError: no argument; an argument that does not exist; a pattern or folder with no
            matching file.
    """
    if isinstance(args, (str, os.PathLike)):
        args = [args]
    if not args:
        raise InputError("no input given: pass log files, folders or glob patterns")
    found: list[Found] = []
    for arg in args:
        text = os.fspath(arg)
        p = Path(text)
        if p.is_dir():
            items = _walk(p, wanted)
            if not items:
                exts = ", ".join(sorted(wanted))
                raise InputError(
                    f"folder contains no log files (looked for {exts}, also .gz)", text
                )
            found.extend(items)
        elif p.exists():
            found.append(Found(p, True, (p.name,)))
        elif _GLOB_CHARS.search(text):
            hits = glob.glob(text, recursive=True)  # noqa: PTH207 (absolute patterns too)
            matches = sorted(hits, key=natural_key)
            items = []
            for m in matches:
                mp = Path(m)
                if mp.is_dir():
                    items.extend(_walk(mp, wanted))
                elif not _skipped(mp.name):
                    items.append(Found(mp, False, (mp.name,)))
            if not items:
                raise InputError(f"pattern {text!r} matches no file")
            found.extend(items)
        else:
            raise InputError(
                "no such file or folder; check the path (or quote a glob pattern)", text
            )
    seen: set[str] = set()
    unique = []
    for f in found:
        key = os.path.realpath(f.path)
        if key not in seen:
            seen.add(key)
            unique.append(f)
    return unique
