"""``xpuperf compare BASE CURRENT``: parse options, call :func:`~xpuperf.compare.compare_paths`.

Register in ``xpuperf/cli/app.py`` with::

    from xpuperf.cli import compare as compare_cmd
    app.command("compare")(compare_cmd.compare)
"""

from __future__ import annotations

import glob
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from xpuperf.cli.console import out_console
from xpuperf.cli.options import BatchSizeOption, FormatOption, PatternOption, reader_format
from xpuperf.errors import UsageError
from xpuperf.report.output import check_not_input, stdout_outputs, write_output

if TYPE_CHECKING:
    from xpuperf.compare import CompareResult

_VERDICT_STYLE = {
    "regression": "bold red",
    "worse": "red",
    "improvement": "green",
    "better": "green",
}


def parse_fraction(text: str, option: str) -> float:
    """``"5%"`` → 0.05; ``"0.05"`` → 0.05; a bare number ≥ 1 is a percentage: ``"5"`` → 0.05.

    A limit of 100 % or more (a bare ``5`` read as 500 %) would let any regression pass, so a
    bare number of 1 or more is read as percent, and :func:`fraction_note` says so.

    Raises:
        UsageError: not a non-negative number or percentage.
    """
    t = text.strip()
    try:
        v = float(t[:-1]) / 100 if t.endswith("%") else float(t)
    except ValueError:
        raise UsageError(f"{option} {text!r}: expected a fraction like 0.05 or 5%") from None
    if not v >= 0 or v == float("inf"):
        raise UsageError(f"{option} {text!r}: must be a finite number ≥ 0")
    return v / 100 if not t.endswith("%") and v >= 1 else v


def fraction_note(text: str, option: str) -> str | None:
    """The line that says how a bare number was read (``5`` → 5 %), or None."""
    t = text.strip()
    if t.endswith("%"):
        return None
    v = parse_fraction(t, option)
    return f"{option} {t} read as {v:.4g} = {100 * v:g}% (write {100 * v:g}% to say so)"


def render_compare_terminal(result: CompareResult, console: Console) -> None:
    """A rich table of the per-metric changes, the verdict and the caveats."""
    from xpuperf.report.html import compare_table, compare_verdict

    console.print(
        f"[bold]xpuperf compare[/] — base {escape(result.base.source)} vs current "
        f"{escape(result.current.source)}"
    )
    t = compare_table(result)
    tab = Table()
    for c in t["columns"]:
        tab.add_column(c)
    for row in t["rows"]:
        style = _VERDICT_STYLE.get(row[-1], "")
        tab.add_row(
            *[escape(c) for c in row[:-1]], f"[{style}]{escape(row[-1])}[/]" if style else row[-1]
        )
    console.print(tab)
    for n in result.notes:
        console.print(f"note: {escape(n)}", style="dim")
    for f in result.findings:
        style = "yellow" if f.change == "new" else "green"
        console.print(f"  [{style}]{escape(f.describe())}[/]")
    verdict = escape(compare_verdict(result))
    console.print(f"[bold red]{verdict}[/]" if result.regressions() else verdict)


def compare(
    base: Annotated[str, typer.Argument(help="BASE run: log file/dir/glob or analyze JSON.")],
    current: Annotated[str, typer.Argument(help="CURRENT run: log file/dir/glob or analyze JSON.")],
    max_regression: Annotated[
        str | None,
        typer.Option(
            help="Exit 1 if wall-clock or median-step throughput (job or per card), or the "
            "median, mean or p99 step time got significantly worse by more than this: 5% (a "
            "bare 5 is also 5 %; 0.05 is a fraction). Runs with different card counts are "
            "judged per card only."
        ),
    ] = None,
    alpha: Annotated[float, typer.Option(min=0.0, max=1.0, help="Significance level.")] = 0.01,
    min_effect: Annotated[str, typer.Option(help="Smallest change that counts (e.g. 1%).")] = "1%",
    fmt: FormatOption = None,
    pattern: PatternOption = None,
    batch_size: BatchSizeOption = None,
    warmup: Annotated[
        int | None, typer.Option(min=0, help="Exclude this many leading steps (default: detect).")
    ] = None,
    json_out: Annotated[
        str | None, typer.Option("--json", help="Write the JSON result to PATH, or - for stdout.")
    ] = None,
    md_out: Annotated[
        str | None, typer.Option("--markdown", help="Write Markdown to PATH, - for stdout.")
    ] = None,
    html_out: Annotated[
        str | None, typer.Option("--html", help="Write an HTML report to PATH, - for stdout.")
    ] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No terminal summary.")] = False,
) -> None:
    """Compare two runs: per-metric change, Mann–Whitney test over steps, regression gate."""
    import json

    from xpuperf.compare import check_max_regression, compare_paths, to_dict

    fmt = reader_format(fmt, pattern)
    limit = parse_fraction(max_regression, "--max-regression") if max_regression else None
    effect = parse_fraction(min_effect, "--min-effect")
    for text, option in ((max_regression, "--max-regression"), (min_effect, "--min-effect")):
        note = fraction_note(text, option) if text else None
        if note:  # even with -q: it says how the limit was read
            typer.echo(f"xpuperf: {note}", err=True)
    existing = [p for p in (base, current) if Path(p).exists() or glob.has_magic(p)]
    for out in (json_out, md_out, html_out):
        if out and out != "-":
            check_not_input(out, existing)
    to_stdout = stdout_outputs(json=json_out, markdown=md_out, html=html_out)
    result = compare_paths(
        base, current, alpha=alpha, min_effect=effect, fmt=fmt, batch_size=batch_size,
        warmup=warmup,
    )  # fmt: skip
    if json_out:
        text = json.dumps(to_dict(result), indent=2, allow_nan=False) + "\n"
        write_output(json_out, text)
    if md_out:
        from xpuperf.report.markdown import render_compare_markdown

        write_output(md_out, render_compare_markdown(result))
    if html_out:
        from xpuperf.report.html import render_compare_html

        write_output(html_out, render_compare_html(result))
    if not quiet and not to_stdout:
        render_compare_terminal(result, out_console())
    if limit is not None:
        check_max_regression(result, limit)
