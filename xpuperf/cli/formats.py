"""``xpuperf formats``: list the log formats the readers know, with an example line each;
``--explain FILE [--pattern P]``: which reader reads a file and why, or why none does
(:mod:`xpuperf.readers.formats.explain`)."""

from __future__ import annotations

from typing import Annotated

import typer

from xpuperf.cli.console import out_console
from xpuperf.cli.stdin import reads_stdin
from xpuperf.errors import UsageError
from xpuperf.readers import FORMATS, SNIFFED_EXTENSIONS


@reads_stdin("explain")
def formats(
    quiet: Annotated[
        bool,
        typer.Option(
            "--quiet",
            "-q",
            help="Only the names, one per line (with --explain: the reader, or 'none').",
        ),
    ] = False,
    explain: Annotated[
        str | None,
        typer.Option(
            "--explain",
            metavar="FILE",
            help="Show which reader recognises FILE and why (the lines it read), or, when none "
            "does, each format's nearest miss and a draft --pattern.",
        ),
    ] = None,
    pattern: Annotated[
        str | None,
        typer.Option(
            "--pattern",
            help="With --explain: show what this step-line pattern matches in FILE "
            "('iter {step}: … {step_time_ms}ms', docs/formats.md).",
        ),
    ] = None,
) -> None:
    """List the log formats in sniffing order, with their extensions and an example line.
    With --explain FILE: which reader reads the file and why, or why none does."""
    out = out_console()
    if pattern is not None and explain is None:
        raise UsageError("--pattern goes with --explain FILE here (or with `xpuperf analyze`)")
    if explain is not None:
        from xpuperf.cli.console import err_console
        from xpuperf.cli.options import bare_pattern_warning
        from xpuperf.cli.stdin import shown, with_stdin
        from xpuperf.readers.formats.explain import explain as explain_file

        if pattern is not None and (warning := bare_pattern_warning(pattern)):
            err_console().print(f"warning: {warning}", markup=False)
        (explain,) = with_stdin([explain])  # `-`: a log piped in
        got = explain_file(explain, pattern)
        text = (got.reader or "none") if quiet else shown("\n".join(got.lines))
        out.print(text, markup=False, highlight=False, soft_wrap=True)
        return
    if quiet:
        out.print("\n".join(f.name for f in FORMATS), markup=False)
        return
    sniffed = ", ".join(SNIFFED_EXTENSIONS)
    out.print(
        f"Formats in sniffing order ({sniffed} and unknown extensions are recognised by content; "
        "--format NAME forces one). Details: docs/formats.md",
        markup=False,
    )
    for f in FORMATS:
        exts = f" ({', '.join(f.extensions)})" if f.extensions else ""
        out.print(f"\n{f.name}{exts}", style="bold", markup=False)
        out.print(f"  {f.example}", markup=False)
    out.print(
        "\nAny other text log: --pattern 'iter {step}: loss {_}, time {step_time_ms}ms' "
        "(docs/formats.md); `xpuperf formats --explain FILE` tells which reader reads a file "
        "and drafts a pattern when none does.",
        markup=False,
    )
