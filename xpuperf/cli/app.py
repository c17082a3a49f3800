"""The ``xpuperf`` command: the typer app and ``main()``, the one place errors become exit codes.

Exit codes: 0 ran fine, 1 a gate the user asked for failed, 2 usage or input error,
3 internal error (traceback only with ``--debug``).
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import sys
import traceback
from pathlib import Path

import typer

from xpuperf import __version__
from xpuperf.cli import analyze as analyze_cmd
from xpuperf.cli import calibrate as calibrate_cmd
from xpuperf.cli import compare as compare_cmd
from xpuperf.cli import formats as formats_cmd
from xpuperf.cli import ingest as ingest_cmd
from xpuperf.cli import plan as plan_cmd
from xpuperf.cli.topo import topo_app
from xpuperf.errors import EXIT_INPUT, EXIT_INTERNAL, XpuperfError

app = typer.Typer(
    name="xpuperf",
    help="Performance diagnosis for data-parallel training clusters.",
    add_completion=False,
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


app.command("analyze")(analyze_cmd.analyze)
app.command("ingest")(ingest_cmd.ingest)
app.command("plan")(plan_cmd.plan)
app.command("formats")(formats_cmd.formats)
app.command("compare")(compare_cmd.compare)
app.command("calibrate")(calibrate_cmd.calibrate)
app.add_typer(topo_app, name="topo")


_OUTPUT_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EBADF})
"""OSError numbers of a failed write to stdout that are the user's setup, not a bug."""
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def _err(msg: str) -> None:
    """One line on stderr; control characters from file content (ANSI escapes) become ``?``."""
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
    args = [a for a in args if a != "--debug"]
    try:
        rv = app(args=args, prog_name="xpuperf", standalone_mode=False)
        code = rv if isinstance(rv, int) else 0
        if code == 130:  # typer turns Ctrl-C (KeyboardInterrupt) into exit code 130, silently
            _err("interrupted")
    except typer.Abort:
        _err("interrupted")
        code = 130
    except typer.exceptions.TyperException as e:
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
        if debug:
            traceback.print_exc()
        _err(
            f"internal error: {type(e).__name__}: {e}. This is a bug in xpuperf — please report "
            "it with the command line" + ("" if debug else "; rerun with --debug for a traceback")
        )
        code = EXIT_INTERNAL
    sys.exit(code)
