"""The generic table formats: CSV, TSV, JSON Lines (or a JSON list of records) and Parquet.

Each reader loads only the columns that match a known name (:mod:`xpuperf.readers.columns`).

CSV/TSV: the first non-empty line is the header. The fast path is ``pyarrow.csv`` (multi-threaded:
a plain file is parsed in chunks on all cores, :mod:`xpuperf.readers.csvchunks`)
with numeric fields read as float64; rows with the wrong number of fields are skipped by the parser
and counted. A field whose values are not all numbers is re-read as text and checked later. Text
that is not UTF-8 (or any other parser failure) falls back to a line-by-line reader that keeps
every good line. Quoted fields may contain the delimiter; a quoted newline is supported on the fast
path only.

JSON Lines: one object per line, ``pyarrow.json`` first, a line-by-line fallback when any line is
malformed. A file whose first character is ``[`` is one JSON list of record objects (or an object
holding such a list); positions in it are reported as ``record N``.

Parquet: columns are read by name; positions are reported as ``row N``.
"""

from __future__ import annotations

import json
import re
import zlib
from collections.abc import Sequence

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.json as pajson
import pyarrow.parquet as pq

from xpuperf.errors import InputError
from xpuperf.readers import columns as colmod
from xpuperf.readers import lines as ln
from xpuperf.readers.base import Drop, Format, RawTable, Source
from xpuperf.readers.csvchunks import stream_csv, undecodable_rows
from xpuperf.surrogates import clean_parsed

_CSV_COLUMN_ERROR = re.compile(r"In CSV column #(\d+)")
MAX_READ_ROWS = 200_000_000
"""Rows a CSV/TSV may hold (estimated from its size and its first MiB of lines before any row is
parsed): ≈ 6 GB to read at ≈ 30 B per row; a 2 GB file of bare step times (5·10⁸ rows) is
refused at once instead of filling the memory."""


def _estimated_rows(src: Source) -> float:
    """Lines of a plain file: its size × newlines per byte of its first MiB (a gzip file: 0,
    its compressed size says little)."""
    if src.path.suffix.lower() == ".gz":
        return 0.0
    try:
        size = src.path.stat().st_size
        with src.open() as fh:
            head = fh.read(1 << 20)
    except OSError:
        return 0.0
    lines = head.count(b"\n")
    return size * lines / len(head) if lines and len(head) < size else float(lines)


def _header(src: Source, delimiter: str) -> tuple[int, list[str]]:
    """(0-based physical line index, field names) of the header: the first line that is neither
    blank nor a ``#`` comment."""
    for i, raw in enumerate(src.head.split(b"\n")):
        text = raw.rstrip(b"\r").decode("utf-8", errors="replace")
        if i == 0:
            text = text.removeprefix("\ufeff")
        if text.strip() and not text.lstrip().startswith("#"):
            fields = ln.split_fields(text, delimiter)
            if fields is None:
                raise InputError("cannot parse the header line", src.name, i + 1)
            return i, [f.strip() for f in fields]
    raise InputError("no header line: only blank or # comment lines at the start", src.name)


class _Locator:
    """``RawTable.locate`` of the fast CSV path: one streaming scan per call.

    The same scan places the first ragged row, so a file with ragged rows is scanned once when
    its warnings are written.
    """

    def __init__(self, src: Source, header_line: int, delimiter: str, fields: int) -> None:
        self.src, self.header_line, self.delimiter, self.fields = (
            src,
            header_line,
            delimiter,
            fields,
        )
        self.ragged: Drop | None = None

    def __call__(self, idx: Sequence[int]) -> dict[int, int | None]:
        sc = ln.scan(
            self.src,
            idx,
            header_line=self.header_line,
            delimiter=self.delimiter,
            fields=self.fields,
            ragged=self.ragged is not None,
        )
        if self.ragged is not None and self.ragged.first is None:
            self.ragged.first = sc.first_ragged
        return sc.lines


def _column_type(name: str) -> pa.DataType | None:
    roles = {m.role for m in colmod.match(name)}
    if "node" in roles:
        return pa.string()  # node names stay text even when they look like numbers
    if "t_end_s" in roles:
        return None  # numbers, ISO strings or dates: let pyarrow infer
    return pa.float64()


_STEP_TIME_SOURCES = frozenset({"step_time_s", "step_rate", "throughput", "t_end_s"})
"""Fields a step time can come from (:func:`xpuperf.readers.build.prepare`): a header with none
of them is refused before its rows are parsed (a file of step numbers only, of any size)."""


def _read_delimited(src: Source, delimiter: str) -> RawTable:
    hidx, header = _header(src, delimiter)
    names = ln.unique_names(header)
    wanted = colmod.select(names)
    if not wanted or not colmod.resolve(names).keys() & _STEP_TIME_SOURCES:
        return RawTable(pd.DataFrame(), columns=names)  # refused by its header: body not read
    if (est := _estimated_rows(src)) > MAX_READ_ROWS:
        raise InputError(
            f"about {est:,.0f} rows (from the file size and its first lines), more than the "
            f"{MAX_READ_ROWS:,} one run reads: split the log or keep a window of steps",
            src.name,
        )
    types = {n: t for n in wanted if (t := _column_type(n)) is not None}
    hits: list[int] = []

    def on_invalid(_row: object) -> str:
        hits.append(1)
        return "skip"

    frame = None
    for _ in range(len(wanted) + 1):
        hits.clear()
        try:
            with undecodable_rows(on_invalid) as undecodable:
                frame = stream_csv(src, delimiter, names, hidx + 1, wanted, types, on_invalid)
            if undecodable:  # a ragged row that is not UTF-8: the line reader names it
                frame = None
            break
        except pa.ArrowInvalid as exc:
            # a value that is not a number: read that column as text (checked later) and retry
            m = _CSV_COLUMN_ERROR.search(str(exc))
            col = names[int(m.group(1))] if m and int(m.group(1)) < len(names) else None
            if col is None or "UTF8" in str(exc) or types.get(col) == pa.string():
                break
            types[col] = pa.string()
        except (pa.ArrowException, OSError, EOFError, zlib.error):
            break
    if frame is None:
        # text that is not UTF-8, a corrupt stream, …: keep every good line the slow way
        return _read_delimited_slow(src, delimiter, wanted)
    locate = _Locator(src, hidx + 1, delimiter, len(names))
    drops = []
    if hits:
        locate.ragged = Drop(f"wrong number of fields (header has {len(names)})", len(hits), None)
        drops.append(locate.ragged)
    return RawTable(frame, locate=locate, unit="line", drops=drops, columns=names)


def _read_delimited_slow(src: Source, delimiter: str, wanted: Sequence[str]) -> RawTable:
    header, frame, lines, drops = ln.read_csv_lines(src, delimiter, wanted)
    return RawTable(frame, locate=ln.locate_from(lines), unit="line", drops=drops, columns=header)


def read_csv(src: Source) -> RawTable:
    """Read a comma-separated file with a header line (see the module docstring)."""
    return _read_delimited(src, ",")


def read_tsv(src: Source) -> RawTable:
    """Read a tab-separated file with a header line (see the module docstring)."""
    return _read_delimited(src, "\t")


def _first_char(src: Source) -> str:
    text = src.head.decode("utf-8", errors="replace").removeprefix("\ufeff").lstrip()
    return text[:1]


def _records_frame(records: list[object]) -> tuple[pd.DataFrame, np.ndarray, Drop | None]:
    keep = [i for i, r in enumerate(records) if isinstance(r, dict)]
    keys: dict[str, None] = {}
    for i in keep:
        for k in records[i]:  # type: ignore[union-attr]
            keys.setdefault(str(k), None)
    wanted = colmod.select(list(keys))
    frame = pd.DataFrame(
        {k: pd.Series([records[i].get(k) for i in keep], dtype=object) for k in wanted},  # type: ignore[union-attr]
        index=pd.RangeIndex(len(keep)),
    )
    bad = len(records) - len(keep)
    first_bad = next((i + 1 for i, r in enumerate(records) if not isinstance(r, dict)), None)
    drop = Drop("not a JSON object", bad, first_bad) if bad else None
    frame.attrs["all_columns"] = list(keys)
    return frame, np.asarray(keep, dtype=np.int64) + 1, drop


def _read_json_document(src: Source) -> RawTable:
    text = src.read_all()
    try:
        decoded = text.decode("utf-8-sig")
        doc = clean_parsed(json.loads(decoded), decoded)
    except UnicodeDecodeError as exc:
        raise InputError(f"{ln.UNDECODABLE}", src.name) from exc
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON: {exc.msg}", src.name, exc.lineno) from exc
    except RecursionError:
        raise InputError(
            "JSON nested too deeply to be a log; expected a list of flat records", src.name
        ) from None
    except ValueError as exc:  # an integer of more than 4300 digits
        raise InputError(f"not valid JSON: {str(exc)[:80]}", src.name) from None
    if isinstance(doc, dict):
        lists = [v for v in doc.values() if isinstance(v, list) and v and isinstance(v[0], dict)]
        doc = lists[0] if lists else [doc]
    if not isinstance(doc, list):
        raise InputError("JSON document is not a list of record objects", src.name)
    frame, numbers, drop = _records_frame(doc)
    return RawTable(
        frame,
        locate=ln.locate_from(numbers),
        unit="record",
        drops=[drop] if drop else [],
        columns=frame.attrs.pop("all_columns"),
    )


def read_jsonl(src: Source) -> RawTable:
    """Read JSON Lines, or a JSON list of records when the file starts with ``[``."""
    first = _first_char(src)
    if first == "[":
        return _read_json_document(src)
    if first == "{" and not sniff_jsonl(src.first_lines(1)):
        try:
            return _read_json_document(src)  # one pretty-printed object holding the records
        except InputError:
            pass  # report it line by line below
    table = None
    if not ln.json_too_deep(src):  # pyarrow's JSON parser crashes on hostile nesting depth
        try:
            with src.arrow_stream() as stream:
                table = pajson.read_json(stream)
            table.validate(full=True)  # pyarrow can let bytes that are not UTF-8 into strings
        except (pa.ArrowException, OSError, EOFError, zlib.error, UnicodeDecodeError):
            table = None
    try:
        names = table.column_names if table is not None else []
        frame = (
            table.select(colmod.select(names)).to_pandas(
                split_blocks=True, self_destruct=True, date_as_object=False
            )
            if table is not None
            else None
        )
    except (UnicodeDecodeError, pa.ArrowException):  # a key that is not UTF-8: go line by line
        table = None
    if table is not None:

        def locate(idx: Sequence[int]) -> dict[int, int | None]:
            return ln.scan(src, idx).lines

        return RawTable(frame, locate=locate, unit="line", columns=names)
    frame, lines, drops = ln.read_json_lines(src)
    if len(frame) == 0 and drops:  # every line dropped: say why, not "no step time column"
        first = min(drops, key=lambda d: d.first or 0)
        why = "; ".join(f"{d.count} line(s) {d.reason}" for d in drops)
        raise InputError(f"no line could be read as a record: {why}", src.name, first.first)
    names = [str(c) for c in frame.columns]
    frame = frame[colmod.select(names)]
    return RawTable(frame, locate=ln.locate_from(lines), unit="line", drops=drops, columns=names)


def read_parquet(src: Source) -> RawTable:
    """Read a Parquet file (only the columns with known names)."""
    try:
        source = pa.BufferReader(src.read_all()) if src.gzip else str(src.path)
        pf = pq.ParquetFile(source)
        names = list(pf.schema_arrow.names)
        table = pf.read(columns=colmod.select(names))
    except (pa.ArrowException, OSError, ValueError) as exc:
        why = " ".join(str(exc).split())  # pyarrow messages span lines
        raise InputError(f"not a readable Parquet file ({why})", src.name) from exc
    # the pandas metadata in the schema only restores an index and dtypes the columns already
    # carry; a corrupt one raised JSONDecodeError/TypeError/SyntaxError from pyarrow (fuzz)
    frame = table.replace_schema_metadata(None).to_pandas(
        split_blocks=True, self_destruct=True, date_as_object=False
    )
    return RawTable(frame, unit="row", columns=names)


def _first_text_line(lines: list[str]) -> str | None:
    return next((x for x in lines if x.strip() and not x.lstrip().startswith("#")), None)


def _sniff_delimited(lines: list[str], delimiter: str) -> bool:
    first = _first_text_line(lines)
    if first is None or delimiter not in first:
        return False
    fields = ln.split_fields(first, delimiter) or []
    return len(fields) >= 2 and any(colmod.match(f) for f in fields)


def sniff_csv(lines: list[str]) -> bool:
    """A comma-separated header naming at least one known column."""
    return _sniff_delimited(lines, ",")


def sniff_tsv(lines: list[str]) -> bool:
    """A tab-separated header naming at least one known column."""
    return _sniff_delimited(lines, "\t")


_MPI_TAG = re.compile(r"\[\d+,\d+\]<std(?:out|err)>")  # Open MPI's per-rank output tag
_JSON_LIST_START = re.compile(r'\[\s*(?:$|[\[{"\]]|-?\d[\d.eE+-]*\s*[,\]]|true|false|null)')


def sniff_jsonl(lines: list[str]) -> bool:
    """The first non-blank line is a JSON object, or starts a JSON list (``[`` alone or followed by
    an object, a list or a value — not ``[rank1]:`` / ``[2024-…]`` log prefixes)."""
    first = _first_text_line(lines)
    if first is None:
        return False
    first = first.strip()
    if first.startswith("["):
        return _JSON_LIST_START.match(first) is not None and not _MPI_TAG.match(first)
    if not first.startswith("{"):
        return False
    try:
        return isinstance(json.loads(first), dict)
    except (ValueError, RecursionError):
        return False


GENERIC_FORMATS: tuple[Format, ...] = (
    Format(
        "jsonl",
        (".jsonl", ".ndjson", ".json"),
        sniff_jsonl,
        read_jsonl,
        '{"rank": 0, "step": 1, "step_time_ms": 231.5}   (or a JSON list of such objects)',
    ),
    Format("tsv", (".tsv", ".tab"), sniff_tsv, read_tsv, "rank<TAB>step<TAB>step_time_s"),
    Format("csv", (".csv",), sniff_csv, read_csv, "rank,step,step_time_s  then  0,1,0.2315"),
    Format(
        "parquet",
        (".parquet", ".pq"),
        lambda _lines: False,
        read_parquet,
        "Parquet table with the same columns as the CSV form",
        binary=True,
    ),
)
"""The generic formats, in sniffing order."""
