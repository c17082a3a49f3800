"""``plan --layers FILE``: per-layer size files (xpuperf/costmodel/layerfile.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from xpuperf.cli import app as cli_app
from xpuperf.cli import plan as plan_cmd
from xpuperf.costmodel.layerfile import read_layers
from xpuperf.errors import InputError

if not any(c.name == "plan" for c in cli_app.app.registered_commands):
    cli_app.app.command("plan")(plan_cmd.plan)

BERT = Path(__file__).parent.parent / "data/layers/bert_base_layers.csv"
"""Written by tests/data/layers/make_layers.py from a PyTorch BERT-base."""


def test_bert_base_from_pytorch_named_parameters() -> None:
    w = read_layers(BERT)
    # Hugging Face BertModel(BertConfig()) has 109,482,240 parameters; 3 embeddings + their
    # LayerNorm (2) + 12 layers × 12 tensors + pooler (2) = 151 tensors
    assert w.n_params == 109_482_240
    assert len(w.tensors) == 151
    assert w.tensors[0] == ("word_embeddings.weight", 30522 * 768)
    # forward MACs per sample at 512 tokens: per layer (768·2304 + 768·768 + 2·768·3072) × 512,
    # × 12 layers, + the pooler 768·768 on one token
    assert w.forward_macs == (768 * 2304 + 768 * 768 + 2 * 768 * 3072) * 512 * 12 + 768 * 768
    # backward produces the pooler's bias first, the word embeddings last (fp32: 4 B each)
    sizes = w.backward_sizes_B("fp32")
    assert sizes[0] == 768 * 4
    assert sizes[-1] == 30522 * 768 * 4


def test_json_and_tsv_layouts_read_the_same(tmp_path: Path) -> None:
    rows = [{"name": "fc.weight", "params": 4096, "macs": 4096}, {"name": "fc.bias", "params": 64,
                                                                    "macs": 0}]  # fmt: skip
    j = tmp_path / "m.json"
    j.write_text(json.dumps({"layers": rows}))
    t = tmp_path / "m.tsv"
    t.write_text("Name\tnumel\tMACs\nfc.weight\t4096\t4096\n\nfc.bias\t64\t0\n")
    a, b = read_layers(j), read_layers(t)
    assert a.tensors == b.tensors == (("fc.weight", 4096), ("fc.bias", 64))
    assert a.macs == b.macs == (4096.0, 0.0)


@pytest.mark.parametrize(
    ("text", "message", "line"),
    [
        ("name,size_mb\nfc,3\n", "no 'params' column", 1),
        ("name,params\nfc,100\nfc2,1.5\n", "params '1.5' is not a whole number >= 1", 3),
        ("name,params\nfc,-4\n", "params '-4' is not a whole number >= 1", 2),
        ("name,params,macs\nfc,10,5\nb,2,\n", "macs missing: give macs on every row or on none", 3),
        ("name,params,macs\nfc,10,nan\n", "macs 'nan' is not a finite number >= 0", 2),
        ("name,params\n", "no layers in the file", None),
        ("name,params\nfc,2000000000000000\n", "params '2000000000000000' is not a whole", 2),
        ('[{"name": "fc", "params": true}]', "layer 1: params True is not a whole number", None),
        ('{"layers": 3}', 'JSON must be a list of layers or {"layers": [...]}', None),
        # a break-it pass: extra fields became a pandas index and the plan went on (exit 0)
        ("name,params\na,100,5,6\n", "4 fields, the header has 2", 2),
        ("name,params,numel\na,1,2\n", "params given twice (params, numel); keep one", 1),
        ('[{"params": 5, "numel": 7}]', "layer 1: params given twice (params, numel)", None),
        ('[{"params": ' + "9" * 400 + "}]", "params", None),  # OverflowError was exit 3
        ('[{"params": ' + "9" * 5000 + "}]", "a number of more than 4300 digits", None),
        ("name,params,macs\na,1,1e308\nb,1,1e308\nc,1,1e308\n", "macs add up to more", None),
        ('name,params\na,1\nb,"2\n', "not a CSV/TSV table", 3),
    ],
)
def test_bad_files_name_the_line(tmp_path: Path, text: str, message: str, line: int | None) -> None:
    f = tmp_path / "layers.csv"
    f.write_text(text)
    with pytest.raises(InputError) as exc:
        read_layers(f)
    assert message in str(exc.value)
    assert exc.value.line == line


def test_all_zero_macs_mean_readiness_by_size(tmp_path: Path) -> None:
    f = tmp_path / "z.csv"
    f.write_text("name,params,macs\na,10,0\nb,20,0\n")
    assert read_layers(f).macs is None


def test_cli_plan_with_a_layer_file(capsys, tmp_path: Path) -> None:
    out = tmp_path / "plan.json"
    with pytest.raises(SystemExit) as exc:
        cli_app.main(["plan", "--layers", str(BERT), "--step-time", "0.2", "--batch-size", "32",
                      "--cards", "8,64", "--json", str(out), "--quiet"])  # fmt: skip
    assert exc.value.code == 0
    doc = json.loads(out.read_text())
    assert doc["workload"]["name"] == "layers:bert_base_layers"
    assert doc["workload"]["n_params"] == 109_482_240
    assert doc["workload"]["grad_bytes"] == 109_482_240 * 4
    with pytest.raises(SystemExit) as exc:
        cli_app.main(["plan", "--layers", str(BERT), "--params", "10", "--step-time", "1"])
    assert exc.value.code == 2
    assert "give one of --model NAME, --params N or --layers FILE" in capsys.readouterr().err


def test_blank_leading_lines_and_line_numbers(tmp_path: Path) -> None:
    f = tmp_path / "l.csv"
    f.write_text("\n\nname,params\na,10\n\nb,x\n")
    with pytest.raises(InputError) as exc:
        read_layers(f)
    assert exc.value.line == 6  # the 'b,x' row, counted from the top of the file


def test_special_files_and_empty_path_are_refused(tmp_path: Path) -> None:
    import os

    fifo = tmp_path / "fifo.csv"
    os.mkfifo(fifo)  # reading it would block forever
    for path in (str(fifo), "/dev/zero", str(tmp_path)):
        with pytest.raises(InputError, match="not a regular file"):
            read_layers(path)
    with pytest.raises(InputError, match="--layers path is empty"):
        read_layers(" ")


def test_row_cap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from xpuperf.costmodel import layerfile

    monkeypatch.setattr(layerfile, "MAX_ROWS", 3)
    f = tmp_path / "l.csv"
    f.write_text("params\n1\n2\n3\n4\n")
    with pytest.raises(InputError, match="more than 3 tensors") as exc:
        read_layers(f)
    assert exc.value.line == 5
