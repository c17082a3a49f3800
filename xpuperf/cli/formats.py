"""``xpuperf formats``: list the log formats the readers know, with an example line each."""

from __future__ import annotations

from typing import Annotated

import typer

from xpuperf.cli.console import out_console
from xpuperf.readers import FORMATS, SNIFFED_EXTENSIONS


def formats(
    quiet: Annotated[
        bool, typer.Option("--quiet", "-q", help="Only the names, one per line.")
    ] = False,
) -> None:
    """List the log formats in sniffing order, with their extensions and an example line."""
    out = out_console()
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
