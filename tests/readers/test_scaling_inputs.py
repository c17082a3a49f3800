"""Scaling-table reader, inputs as QA found them (issue 16): gzip files, a column naming the
model of each row, a training log pasted under the table, and cards per node stated with the card
model only ("nodes with 8 A100")."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from xpuperf.errors import InputError
from xpuperf.readers.scaling import (
    looks_like_scaling_table,
    read_scaling_table,
    sniff_scaling_table,
    split_by_group,
)

DATA = Path(__file__).resolve().parent.parent / "data"


@pytest.mark.parametrize(
    ("gz", "plain"),
    [
        ("scaling_gzip/table.md.gz", "scaling_markdown_intra/table.md"),
        ("scaling_gzip/scaling.csv.gz", "scaling_csv_internode/scaling.csv"),
    ],
)
def test_gzip_table_reads_like_the_plain_one(gz: str, plain: str) -> None:
    a, b = read_scaling_table(DATA / gz), read_scaling_table(DATA / plain)
    assert a.rows.equals(b.rows)
    assert (a.measure, a.form, a.cards_per_node) == (b.measure, b.form, b.cards_per_node)
    assert looks_like_scaling_table(DATA / gz)


def test_gzip_sniffing_reads_the_decompressed_head(tmp_path: Path) -> None:
    p = tmp_path / "t.txt.gz"
    p.write_bytes(gzip.compress(b"GPUs  img/s\n1  100\n2  190\n", mtime=0))
    t = sniff_scaling_table(p)
    assert t is not None
    assert t.rows["throughput_samples_per_s"].tolist() == [100, 190]
    bad = tmp_path / "bad.md.gz"
    bad.write_bytes(b"\x1f\x8b" + b"not deflate at all")
    assert not looks_like_scaling_table(bad)  # sniffing never raises
    with pytest.raises(InputError, match="cannot decompress"):
        read_scaling_table(bad)


def test_a_model_column_splits_the_table_into_its_ladders() -> None:
    t = read_scaling_table(DATA / "scaling_two_models/table.md")
    assert t.group_column == "Network"
    parts = split_by_group(t)
    assert [p.group for p in parts] == ["ResNet-50", "VGG-16"]
    assert [p.rows["cards"].tolist() for p in parts] == [[1, 4, 8], [1, 8]]
    assert [p.rows["line"].tolist() for p in parts] == [[5, 6, 7], [8, 9]]
    assert "'Network' = 'VGG-16' (2 of 5)" in parts[1].notes[-1]


def test_one_configuration_or_numbers_make_no_group() -> None:
    one = read_scaling_table("| Model | GPUs | img/s |\n|-|-|-|\n| R | 1 | 10 |\n| R | 2 | 19 |")
    assert one.group_column is None
    assert split_by_group(one) == [one]
    # a 'notes'-like column is not a label (header not a model/config word)
    notes = read_scaling_table("| GPUs | img/s | remark |\n|-|-|-|\n| 1 | 10 | a |\n| 2 | 19 | b |")
    assert notes.group_column is None


def test_training_log_lines_under_the_table_are_counted_in_a_note() -> None:
    t = read_scaling_table(DATA / "scaling_table_plus_log/post.txt")
    assert t.rows["cards"].tolist() == [1, 2, 4]
    # the three ' iteration N/ 1000 | …' lines at lines 10-12 (counted in the fixture)
    assert (t.log_lines, t.log_format, t.log_first_line) == (3, "megatron", 10)
    assert any("3 line(s) from line 10 look like a megatron step log" in n for n in t.notes)
    assert any("--format megatron" in n for n in t.notes)
    plain = read_scaling_table(DATA / "scaling_markdown_intra/table.md")
    assert plain.log_lines == 0  # prose with numbers is not a step log


@pytest.mark.parametrize(
    ("text", "cpn"),
    [
        ("Two nodes with 8 A100 each.", 8),
        ("nodes with 4x H100 80GB", 4),
        ("nodes with 8 A100 GPUs", 8),
        ("2 nodes with 64 cores", None),  # cores are not cards
        ("nodes with 2 EPYC 7763 CPUs", None),
    ],
)
def test_cards_per_node_from_the_card_model(text: str, cpn: int | None) -> None:
    t = read_scaling_table(f"{text}\n\n| GPUs | img/s |\n|-|-|\n| 1 | 100 |\n| 16 | 1500 |")
    assert t.cards_per_node == cpn
