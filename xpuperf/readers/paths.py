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

import errno
import fnmatch
import glob
import os
import re
import stat
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


_SPECIAL = {
    stat.S_IFIFO: "a FIFO (named pipe)",
    stat.S_IFSOCK: "a socket",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
}


def special_kind(path: str | os.PathLike[str]) -> str | None:
    """What ``path`` is when it is neither a regular file nor a folder (``"a FIFO (named
    pipe)"``, ``"a socket"``, ``"a character device"``, ``"a block device"``, ``"a symbolic link
    that loops"``), else None (also for a missing path). Only ``stat`` is called: nothing is
    opened, so a FIFO without a writer cannot block."""
    try:
        mode = Path(path).stat().st_mode
    except OSError as e:
        return "a symbolic link that loops" if e.errno == errno.ELOOP else None
    except ValueError:  # a NUL byte in the name
        return None
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    return _SPECIAL.get(stat.S_IFMT(mode), "not a regular file")


def check_input(path: str | os.PathLike[str]) -> None:
    """Refuse an input that is a FIFO, socket, device or looping symlink, before it is opened.

    A FIFO blocks until a writer comes, ``/dev/zero`` never ends, ``/dev/stdin`` is a pipe or
    the terminal: xpuperf reads saved files only. A missing path is left to the caller.

    Raises:
        InputError: one line naming the path, what it is and what to do.
    """
    kind = special_kind(path)
    if kind is None:
        return
    if kind.startswith("a symbolic link"):
        todo = "fix or remove the link, or name the file it should point to"
    else:
        todo = (
            "save the output to a regular file and pass that file (as a log, `xpuperf analyze "
            "-` reads one piped in)"
        )
    raise InputError(
        f"{kind}, not a regular file: xpuperf reads saved files only (reading this could block "
        f"or never end); {todo}",
        os.fspath(path),
    )


def check_inputs(args: Iterable[str | os.PathLike[str] | None]) -> None:
    """:func:`check_input` on each argument that names an existing path (others, such as
    presets, glob patterns or ``N=LOGS``, are left to the subcommand)."""
    for a in args:
        if a is not None and os.fspath(a) not in ("", "-"):
            check_input(a)


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
            check_input(Path(dirpath) / name)
            out.append(Found(Path(dirpath) / name, False, hint))
    out.sort(key=lambda f: natural_key(str(f.path.relative_to(root))))
    return out


def _dir_key(path: str) -> tuple[int, int] | None:
    """(device, inode) of the folder ``path`` (links followed), else None."""
    try:
        st = Path(path or ".").stat()
    except (OSError, ValueError):
        return None
    return (st.st_dev, st.st_ino) if stat.S_ISDIR(st.st_mode) else None


def _scan(folder: str, pattern: str) -> list[str]:
    """Entries of ``folder`` matching one component of a pattern (hidden names only when the
    component starts with a dot, as :mod:`glob` does)."""
    try:
        names = [e.name for e in Path(folder or ".").iterdir()]
    except (OSError, ValueError):
        return []
    if not pattern.startswith("."):
        names = [n for n in names if not n.startswith(".")]
    return [str(Path(folder, n)) for n in fnmatch.filter(names, pattern)]


def glob_paths(pattern: str) -> list[str]:
    """Paths matching a glob pattern; ``**`` matches zero or more folders (hidden ones skipped).

    Unlike :func:`glob.glob` a folder reached twice through symbolic links (a link to ``.`` or
    to a parent, a loop of links) is walked once per ``**``, so a link loop cannot make the walk
    endless or exponential: the work is bounded by the number of distinct folders.
    """
    if "**" not in pattern:
        return glob.glob(pattern)  # noqa: PTH207 (bounded depth; absolute patterns too)
    head, comps = ("/", pattern.lstrip("/").split("/")) if pattern.startswith("/") else (
        "", pattern.split("/"))  # fmt: skip
    out: dict[str, None] = {}
    seen: set[tuple[int, int, int]] = set()  # (index of the **, device, inode) walked
    todo = [(head, 0)]  # a stack, not recursion: a deep tree cannot overflow Python's stack
    while todo:
        base, i = todo.pop()
        if i == len(comps):
            if base:
                out[base] = None
            continue
        comp = comps[i]
        if comp == "**":
            key = _dir_key(base)
            if key is not None:
                if (i, *key) in seen:
                    continue
                seen.add((i, *key))
            todo.append((base, i + 1))
            for sub in _scan(base, "*"):
                if _dir_key(sub) is not None:
                    todo.append((sub, i))
                elif i + 1 == len(comps):  # a trailing ** also matches the files
                    out[sub] = None
        elif comp == "":
            todo.append((base, i + 1))
        elif glob.has_magic(comp):
            todo.extend((sub, i + 1) for sub in _scan(base, comp))
        elif os.path.lexists(nxt := str(Path(base, comp))):
            todo.append((nxt, i + 1))
    return list(out)


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
        check_input(p)
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
            hits = glob_paths(text)
            matches = sorted(hits, key=natural_key)
            items = []
            for m in matches:
                mp = Path(m)
                if mp.is_dir():
                    items.extend(_walk(mp, wanted))
                elif not _skipped(mp.name):
                    check_input(mp)
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
