"""Scaling-table reader: every layout people post, units, separators, errors, and sniffing
that never claims a per-rank step log."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from xpuperf.errors import InputError
from xpuperf.readers.scaling import (
    all_scaling_tables,
    looks_like_scaling_table,
    read_scaling_table,
    sniff_scaling_table,
)

DATA = Path(__file__).resolve().parent.parent / "data"


def col(text: str, name: str) -> list[float]:
    return read_scaling_table(text).rows[name].tolist()


def test_markdown_with_alignment_bold_units_and_thousands() -> None:
    t = read_scaling_table(DATA / "scaling_markdown_intra/table.md")
    assert t.form == "markdown"
    assert t.measure == "throughput"
    assert t.throughput_unit == "images"
    assert t.rows["cards"].tolist() == [1, 2, 4, 8]
    # '1,292' and '**2,219**' are thousands separators and bold
    assert t.rows["throughput_samples_per_s"].tolist() == [380, 722, 1292, 2219]
    # per card = job / cards: 2219 / 8 = 277.375
    assert t.rows["throughput_per_card_samples_per_s"].iloc[3] == pytest.approx(277.375)
    # '81%' -> 0.81 (the table's own claim, kept for comparison only)
    assert t.rows["reported_efficiency"].tolist() == pytest.approx([1.0, 0.95, 0.85, 0.81])
    assert t.rows["line"].tolist() == [6, 7, 8, 9]
    assert t.single_node  # "all runs on a single node"


def test_markdown_without_outer_pipes_and_html_separator() -> None:
    text = "GPUs | MiEdges/s\n-- | --\n1 | 37354.79\n2 | 50628.94\n"
    assert col(text, "throughput_samples_per_s") == pytest.approx([37354.79, 50628.94])
    text = "|GPUS | samples/s\n|- | -\n|1 | 100\n|4 | 360\n"
    assert col(text, "cards") == [1, 4]


def test_csv_with_nodes_batch_and_quoted_thousands() -> None:
    text = 'nodes,gpus,batch_per_gpu,samples_per_sec\n1,1,32,"1,000.5"\n2,16,32,12000\n'
    t = read_scaling_table(text)
    assert t.form == "csv"
    assert t.rows["throughput_samples_per_s"].tolist() == [1000.5, 12000]
    assert t.rows["nodes"].tolist() == [1, 2]
    assert t.rows["batch_per_card"].tolist() == [32, 32]


def test_tsv_config_1x8_and_per_card_column() -> None:
    t = read_scaling_table(DATA / "scaling_tsv_no_baseline/table.tsv")
    assert t.form == "tsv"
    assert t.measure == "throughput_per_card"
    assert t.throughput_unit == "tokens"  # token/p/s
    assert t.rows["cards"].tolist() == [8, 16, 32]  # 1x8, 2x8, 4x8
    assert t.rows["nodes"].tolist() == [1, 2, 4]
    assert t.cards_per_node == 8
    # job = per card x cards: 3700.6 x 16 = 59209.6
    assert t.rows["throughput_samples_per_s"].iloc[1] == pytest.approx(59209.6)


def test_whitespace_table_and_cards_per_node_from_text() -> None:
    t = read_scaling_table(DATA / "scaling_text_healthy/results.txt")
    assert t.form == "whitespace"
    assert t.cards_per_node == 8  # "8 GPUs per node" in the line above the table
    assert t.rows["cards"].tolist() == [1, 2, 4, 8, 16, 32]


def test_sentences_with_mixed_time_units() -> None:
    t = read_scaling_table(DATA / "scaling_lines_steptime/post.txt")
    assert t.form == "lines"
    assert t.measure == "step_time"
    # 0.210 s/it, 0.231 s/it, 262 ms/step -> seconds
    assert t.rows["step_time_s"].tolist() == pytest.approx([0.210, 0.231, 0.262])
    assert t.rows["throughput_samples_per_s"].isna().all()  # no batch column: no throughput
    assert t.single_node  # "all on one machine"


@pytest.mark.parametrize(
    ("text", "cards", "value"),
    [
        ("1 GPU performance 400 img/sec\n8 GPU performance 1790 img/sec\n", [1, 8], [400, 1790]),
        ("* 1xA10 GPU - 5878.93 infer/sec\n* 2xA10 GPU - 10904.5 infer/sec\n", [1, 2],
         [5878.93, 10904.5]),
    ],
)  # fmt: skip
def test_sentence_shapes(text: str, cards: list[int], value: list[float]) -> None:
    assert col(text, "cards") == cards
    assert col(text, "throughput_samples_per_s") == pytest.approx(value)


def test_step_time_with_batch_becomes_throughput() -> None:
    # 32 samples per card, 0.2 s/step on 4 cards: 4 x 32 / 0.2 = 640 samples/s
    text = (
        "| GPUs | batch per GPU | time per step (ms) |\n|---|---|---|\n"
        "| 1 | 32 | 160 |\n| 4 | 32 | 200 |\n"
    )
    t = read_scaling_table(text)
    assert t.rows["step_time_s"].tolist() == pytest.approx([0.16, 0.2])
    assert t.rows["throughput_samples_per_s"].tolist() == pytest.approx([200, 640])


def test_it_per_s_and_placeholders() -> None:
    text = "| GPUs | it/s |\n|---|---|\n| 1 | 2.0 |\n| 2 | - |\n| 4 | 1.6 |\n"
    t = read_scaling_table(text)
    assert t.rows["step_time_s"].tolist() == pytest.approx([0.5, 0.625])  # 1 / it/s
    assert any("1 row(s) skipped, first <text>:4" in n for n in t.notes)


def test_dle_readme_first_throughput_column_and_speedup_column() -> None:
    t = read_scaling_table(DATA / "scaling_dle_readme/perf.md")
    assert t.measure_column == "Throughput - TF32 [img/s]"
    assert t.rows["batch_per_card"].tolist() == [2, 4, 2, 4, 2, 4]
    assert t.rows["reported_throughput_ratio"].tolist()[2:] == pytest.approx([3.8, 3.8, 7.0, 7.2])
    assert math.isnan(t.rows["reported_throughput_ratio"].iloc[0])  # '-'
    assert any("mixed precision" in n and "not used" in n for n in t.notes)


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("nothing here\n", "no scaling table found"),
        ("| GPUs | img/s |\n|---|---|\n| many | lots |\n", "no row with both a card count"),
    ],
)
def test_bad_tables_raise_input_error(text: str, needle: str) -> None:
    with pytest.raises(InputError, match=needle):
        read_scaling_table(text)


def test_bad_file_names_file_and_line(tmp_path: Path) -> None:
    p = tmp_path / "t.md"
    p.write_text("| GPUs | img/s |\n|---|---|\n| x | - |\n")
    with pytest.raises(InputError) as e:
        read_scaling_table(p)
    assert str(e.value).startswith(f"{p}:1: ")


def test_sniff_accepts_every_scaling_fixture() -> None:
    for p in sorted(DATA.glob("scaling_*/*")):
        assert looks_like_scaling_table(p) == (p.parent.name != "scaling_one_row"), p
    assert all_scaling_tables([str(DATA / "scaling_strong/table.md")])
    assert not all_scaling_tables([str(DATA / "scaling_strong")])  # a folder: step logs
    assert not all_scaling_tables([])


def test_sniff_never_claims_step_logs(tmp_path: Path) -> None:
    step_csv = tmp_path / "rank0.csv"
    step_csv.write_text("step,rank,gpus,step_time_s,samples_per_s\n1,0,8,0.2,100\n2,0,8,0.21,99\n")
    assert not looks_like_scaling_table(step_csv)
    framework_logs = [p for p in DATA.glob("formats_*/*") if p.is_file()]
    framework_logs += [p for p in DATA.glob("readers_*/*") if p.suffix != ".md"]
    assert framework_logs
    for p in framework_logs:
        assert sniff_scaling_table(p) is None, p  # not even a one-row table (analyze refuses)
    assert not looks_like_scaling_table(tmp_path / "missing.md")


def test_out_of_range_values_are_skipped_not_fatal() -> None:
    # '1e999' overflows to inf; a 9-digit card count is not a card count
    text = (
        "| GPUs | img/s |\n|---|---|\n| 1 | 100 |\n| 2 | 1e999 |\n| 123456789 | 5 |\n| 4 | 380 |\n"
    )
    t = read_scaling_table(text)
    assert t.rows["cards"].tolist() == [1, 4]
    assert any("2 row(s) skipped, first <text>:4: value out of range" in n for n in t.notes)


def test_a_field_over_the_csv_limit_is_no_table_not_a_traceback(tmp_path: Path) -> None:
    # found by the fuzz target through analyze's "what kind of file is this" hint: a 200 kB
    # run without a tab or comma raised _csv.Error (field larger than field limit)
    p = tmp_path / "x.txt"
    p.write_text("x" * 200_000 + "\tcards\n1\t2\n")
    assert sniff_scaling_table(p) is None
