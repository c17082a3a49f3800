"""The ``xpuperf`` command: the typer app and ``main()``, the one place errors become exit codes.

Exit codes: 0 ran fine (also ``xpuperf`` alone, which prints the help), 1 a gate the user asked
for failed, 2 usage or input error, 3 internal error (traceback only with ``--debug``), 130
interrupted (Ctrl-C, also while Python is still loading).

Start-up stays light: a subcommand's module (and with it pandas, numpy, scipy, plotly) is
imported only when that subcommand runs; ``--version`` and ``--help`` import none of them
(tests/cli/test_startup.py).
"""

from __future__ import annotations

try:  # Ctrl-C while Python loads the CLI: exit 130 quietly, not a traceback
    import contextlib
    import difflib
    import errno
    import os
    import re
    import sys
    import traceback
    from pathlib import Path
    from typing import Any

    import typer
    from typer.core import TyperGroup

    from xpuperf import __version__
    from xpuperf.errors import EXIT_INPUT, EXIT_INTERNAL, PATH_REMEDIES, UsageError, XpuperfError

    try:  # typer >= 0.25 vendors click: its usage errors derive from TyperException
        from typer.exceptions import TyperException as _UsageErrors
    except ImportError:  # older typer runs on click
        from click.exceptions import ClickException as _UsageErrors
except KeyboardInterrupt:
    raise SystemExit(130) from None

SUBCOMMANDS: dict[str, str] = {
    "analyze": "Find stragglers, FPS jitter and the compute/non-compute split in per-rank step "
    "logs; also reads NCCL debug logs, the job's stdout/stderr (framework warnings) and scaling "
    "tables.",
    "ingest": "Write per-rank step logs as a Parquet dataset partitioned by rank range, for "
    "`xpuperf analyze DATASET --engine dask`.",
    "plan": "Predict speedup up to 1000+ cards from the topology and a single-card step time, and "
    "rank the fixes (bucket size, algorithm, ring order, NIC per card, …) by gain.",
    "formats": "List the log formats in sniffing order, with their extensions and an example line.",
    "compare": "Compare two runs: per-metric change, Mann–Whitney test over steps, regression "
    "gate.",
    "calibrate": "Fit latency and bus bandwidth to nccl-tests results; flag busbw far below the "
    "topology.",
    "topo": "Cluster topology: show a description, preset or generic cluster; audit it.",
}
"""Subcommand -> the one-line help ``xpuperf --help`` lists without importing its module (a test
keeps each equal to the command's own)."""


def _target(name: str) -> Any:
    """The command function or Typer app of subcommand ``name``, importing its module now."""
    if name == "analyze":
        from xpuperf.cli.analyze import analyze as target
    elif name == "ingest":
        from xpuperf.cli.ingest import ingest as target
    elif name == "plan":
        from xpuperf.cli.plan import plan as target
    elif name == "formats":
        from xpuperf.cli.formats import formats as target
    elif name == "compare":
        from xpuperf.cli.compare import compare as target
    elif name == "calibrate":
        from xpuperf.cli.calibrate import calibrate as target
    elif name == "topo":
        from xpuperf.cli.topo import topo_app as target
    else:
        raise KeyError(name)
    return target


OUTPUT_PARAMS = frozenset({"json_out", "html_out", "md_out", "output", "out"})
"""Parameters naming what a subcommand writes; every other string parameter naming an existing
path is an input."""
INPUT_PARAMS = frozenset(
    {"logs", "files", "baseline", "topology", "calibration", "layers", "from_log", "measured_src",
     "binding", "base", "current", "explain"}
)  # fmt: skip
"""Parameters naming files a subcommand reads: ``-`` in one is refused unless the command reads
standard input there (:func:`xpuperf.cli.stdin.reads_stdin`)."""


def _guard_paths(cmd: Any, where: str | None = None) -> None:
    """Wrap the callback of ``cmd`` (and of its subcommands) so that, before any file is opened,
    every input argument naming a FIFO, socket, device or looping symlink is refused
    (:func:`xpuperf.readers.paths.check_inputs`), ``-`` too where the command does not read
    standard input, and every output argument that cannot be written — a looping symlink, a
    read-only folder — too (:func:`xpuperf.report.output.check_output_path`); all exit 2.
    ``where``: the command line so far (``xpuperf topo show``)."""
    where = where or f"xpuperf {cmd.name}"
    for sub in getattr(cmd, "commands", {}).values():
        _guard_paths(sub, f"{where} {sub.name}")
    callback = cmd.callback
    if callback is None or getattr(callback, "xpuperf_guarded", False):
        return
    readers = getattr(callback, "xpuperf_stdin", frozenset())
    names = {  # how messages name a parameter: --baseline, LOGS
        p.name: max(p.opts, key=len) if p.param_type_name == "option" else str(p.name).upper()
        for p in cmd.params
    }

    def guarded(*args: Any, **kwargs: Any) -> Any:
        from xpuperf.readers.paths import check_inputs
        from xpuperf.report.output import STDOUT, check_output_path

        for key, value in kwargs.items():
            values = value if isinstance(value, (list, tuple)) else [value]
            texts = [v for v in values if isinstance(v, str)]
            if key in OUTPUT_PARAMS:
                for v in texts:
                    if v.strip() and v != STDOUT:  # blank ones: the subcommand's own message
                        check_output_path(v)
                continue
            named = [t.split("=", 1)[-1] if key == "measured_src" else t for t in texts]  # N=LOGS
            if key in INPUT_PARAMS and key not in readers and STDOUT in named:
                raise UsageError(_no_stdin(where, names.get(key, key), [names[k] for k in readers]))
            check_inputs(texts)  # also a path through a looping link, which lexists() calls missing
        return callback(*args, **kwargs)

    guarded.xpuperf_guarded = True  # type: ignore[attr-defined]
    cmd.callback = guarded


def _no_stdin(where: str, name: str, readers: list[str]) -> str:
    """The one line refusing ``-`` as ``name``, an input not read from standard input."""
    how = (
        f"reads standard input only as {' or '.join(readers)}, not as {name}"
        if readers
        else "does not read standard input"
    )
    return f"{name} -: `{where}` {how}; save it to a file and give that file's path"


def load_command(name: str) -> Any:
    """The click command of subcommand ``name``, importing its module now.

    Raises:
        KeyError: ``name`` is not a subcommand.
    """
    obj = _target(name)
    if not isinstance(obj, typer.Typer):
        single = typer.Typer(add_completion=False, rich_markup_mode=None)
        single.command(name)(obj)
        obj = single
    cmd = typer.main.get_command(obj)
    cmd.name = name
    _guard_paths(cmd)
    return cmd


class _LazyGroup(TyperGroup):
    """The root group: subcommands load on use; the help lists them from :data:`SUBCOMMANDS`."""

    def list_commands(self, ctx: Any) -> list[str]:
        return [*self.commands, *(n for n in SUBCOMMANDS if n not in self.commands)]

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        if cmd_name not in self.commands and cmd_name in SUBCOMMANDS:
            self.commands[cmd_name] = load_command(cmd_name)
        cmd = self.commands.get(cmd_name)
        if cmd is not None:  # also a command registered on `app` directly
            _guard_paths(cmd)
        return cmd

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        try:
            return super().resolve_command(ctx, args)
        except _UsageErrors as e:  # a mistyped name: suggest the near ones (typer's needs loading)
            near = difflib.get_close_matches(args[0], self.list_commands(ctx)) if args else []
            if near and "Did you mean" not in e.message:
                e.message = e.message.rstrip(".") + f". Did you mean {', '.join(map(repr, near))}?"
            raise

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        rows = [
            (n, SUBCOMMANDS[n] if n in SUBCOMMANDS else self.commands[n].get_short_help_str())
            for n in self.list_commands(ctx)
        ]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


def __getattr__(name: str) -> Any:
    """``app.analyze_cmd`` & co.: the subcommand modules, imported on first use."""
    sub = name.removesuffix("_cmd")
    if sub != name and sub in SUBCOMMANDS:
        _target(sub)
        return sys.modules[f"xpuperf.cli.{sub}"]
    raise AttributeError(name)


app = typer.Typer(
    name="xpuperf",
    cls=_LazyGroup,
    help="Performance diagnosis for data-parallel training clusters.",
    add_completion=True,  # --install-completion / --show-completion (bash, zsh, fish, PowerShell)
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


def _version(value: bool) -> None:
    if value:
        print(f"xpuperf {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """Performance diagnosis for data-parallel training clusters."""


_OUTPUT_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EBADF})
"""OSError numbers of a failed write to stdout that are the user's setup, not a bug."""
_ACCESS_ERRNOS = frozenset({errno.EACCES, errno.EPERM, errno.EROFS})
"""OSError numbers of a file or folder the user may not write (or read): the setup, not a bug
(e.g. a folder made read-only while ``ingest`` writes into it)."""
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def _err(msg: str) -> None:
    """One line on stderr; control characters from file content (ANSI escapes) become ``?``; a
    copy of standard input is named ``<stdin>`` (:func:`xpuperf.cli.stdin.shown`)."""
    if (stdin := sys.modules.get("xpuperf.cli.stdin")) is not None:  # loaded when `-` was read
        msg = stdin.shown(msg)
    print("xpuperf: " + _CONTROL.sub("?", msg), file=sys.stderr)


def _usage_line(e: Exception) -> str:
    """One line for a typer/click usage error: what is wrong and where to look."""
    ctx = getattr(e, "ctx", None)
    where = ctx.command_path if ctx is not None else "xpuperf"
    fmt = getattr(e, "format_message", None)
    msg = fmt() if fmt is not None else str(e)
    msg = " ".join(msg.split())
    return f"{where}: error: {msg} (see '{where} --help')"


def main(argv: list[str] | None = None) -> None:
    """Run the CLI and exit with the documented exit code.

    ``--debug`` anywhere on the command line shows the traceback of an internal error.
    """
    args = sys.argv[1:] if argv is None else list(argv)
    if sys.stdout is None:  # started with stdout closed (`>&-`): what goes there is dropped
        sys.stdout = Path(os.devnull).open("w", encoding="utf-8")  # noqa: SIM115 (to exit)
    debug = "--debug" in args
    args = [a for a in args if a != "--debug"] or ["--help"]  # alone: the help, exit 0
    try:
        rv = app(args=args, prog_name="xpuperf", standalone_mode=False)
        code = rv if isinstance(rv, int) else 0
        if code == 130:  # typer turns Ctrl-C (KeyboardInterrupt) into exit code 130, silently
            _err("interrupted")
    except typer.Abort:
        _err("interrupted")
        code = 130
    except _UsageErrors as e:
        if type(e).__name__ == "NoArgsIsHelpError":  # `xpuperf topo` alone: its help, exit 0
            print(e.ctx.get_help())
            sys.exit(0)
        # usage errors (typer vendors click; its exceptions derive from TyperException)
        print(_CONTROL.sub("?", _usage_line(e)), file=sys.stderr)
        code = getattr(e, "exit_code", EXIT_INPUT) or EXIT_INPUT
    except XpuperfError as e:
        _err(f"error: {e}")
        code = e.exit_code
    except KeyboardInterrupt:
        _err("interrupted")
        code = 130
    except BrokenPipeError:
        # stdout closed early (e.g. `| head`): not an error of ours; silence the final flush
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        code = 0
    except Exception as e:
        if isinstance(e, OSError) and e.errno in _OUTPUT_ERRNOS:
            # stdout on a full disk (`> /dev/full`) or a dead terminal: the setup, not a bug
            _err(f"error: cannot write the output: {e.strerror}; free space or redirect stdout")
            with contextlib.suppress(OSError, ValueError):  # the exit-time flush would fail too
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            sys.exit(EXIT_INPUT)
        if isinstance(e, OSError) and e.errno in _ACCESS_ERRNOS:
            what = e.filename if e.filename is not None else " ".join(str(e).split())
            _err(f"error: {what}: {e.strerror}; check its permissions or choose another path")
            sys.exit(EXIT_INPUT)
        if isinstance(e, OSError) and e.errno in PATH_REMEDIES:
            what = e.filename if e.filename is not None else " ".join(str(e).split())
            shown = what if len(str(what)) <= 120 else f"{str(what)[:60]}…{str(what)[-40:]}"
            _err(f"error: {shown}: {e.strerror}; {PATH_REMEDIES[e.errno]}")
            sys.exit(EXIT_INPUT)
        if debug:
            traceback.print_exc()
        _err(
            f"internal error: {type(e).__name__}: {e}. This is a bug in xpuperf — please report "
            "it with the command line" + ("" if debug else "; rerun with --debug for a traceback")
        )
        code = EXIT_INTERNAL
    sys.exit(code)
