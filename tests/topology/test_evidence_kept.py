"""Topology evidence that survives `topo import` → `topo check`, several files for `topo check`
and `topo show`, one-line errors for inputs that are no topology (issue 16, QA pass).

Samples: tests/data/topology_vm_flat (4 cards, every pair PHB, lscpu 'Hypervisor vendor: KVM')
and tests/data/topology_consumer_pix (4 GeForce RTX 4090, PIX pairs 0-1 and 2-3, nvidia-smi -L).
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from xpuperf.cli.app import app
from xpuperf.errors import UsageError
from xpuperf.topology.audit import CHECK_SCHEMA
from xpuperf.topology.schema import json_schema

DATA = Path(__file__).resolve().parent.parent / "data"
VM = DATA / "topology_vm_flat"
PIX = DATA / "topology_consumer_pix"
VM_TOPO, VM_LSCPU = VM / "nvidia-smi-topo-m.txt", VM / "lscpu.txt"
PIX_TOPO, PIX_L = PIX / "nvidia-smi-topo-m.txt", PIX / "nvidia-smi-L.txt"


def cli(*args: str):
    return CliRunner().invoke(app, list(args))


def check_json(*files: Path | str) -> dict:
    r = cli("topo", "check", *map(str, files), "--json", "-")
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def statuses(doc: dict) -> dict[str, tuple[str, list[str]]]:
    return {c["name"]: (c["status"], c["codes"]) for c in doc["checks"]}


def one_line_error(*args: str) -> str:
    p = subprocess.run(
        [sys.executable, "-m", "xpuperf", *args], capture_output=True, text=True, timeout=120
    )
    assert p.returncode == 2, p.stderr
    (line,) = p.stderr.strip().splitlines()  # one line, no traceback
    return line


def test_import_keeps_the_vm_hint_and_check_gives_the_same_verdict(tmp_path: Path) -> None:
    out = tmp_path / "vm.yaml"
    r = cli("topo", "import", str(VM_TOPO), str(VM_LSCPU), "-o", str(out))
    assert r.exit_code == 0, r.output
    assert "XP521" in r.output
    desc = yaml.safe_load(out.read_text())
    assert desc["evidence"]["hypervisor"] == [f"{VM_LSCPU}: lscpu 'Hypervisor vendor: KVM'"]
    pytest.importorskip("jsonschema").validate(desc, json_schema())
    # before: the description lost the hint and check said XP522 "add lscpu output"
    doc = check_json(out)
    assert statuses(doc)["topology.vm_flat"] == ("problem", ["XP521"])
    (f,) = [f for f in doc["findings"] if f["code"] == "XP521"]
    assert "Hypervisor vendor: KVM" in f["message"]


def test_import_keeps_card_names_and_check_finds_the_geforce_cards(tmp_path: Path) -> None:
    out = tmp_path / "pix.yaml"
    r = cli("topo", "import", str(PIX_TOPO), str(PIX_L), "-o", str(out))
    assert r.exit_code == 0, r.output
    desc = yaml.safe_load(out.read_text())
    # nvidia-smi -L names GPU 0..3 'NVIDIA GeForce RTX 4090': each card gets its model
    assert [d["model"] for d in desc["nodes"][0]["devices"]] == ["NVIDIA GeForce RTX 4090"] * 4
    assert desc["evidence"] == {"cards": ["NVIDIA GeForce RTX 4090"]}
    doc = check_json(out)
    assert statuses(doc)["topology.consumer_p2p"] == ("problem", ["XP520"])
    (f,) = [f for f in doc["findings"] if f["code"] == "XP520"]
    # the description has no PCIe switches (topo -m PIX cells are not kept): no pair named
    assert f["data"]["cards"] == ["NVIDIA GeForce RTX 4090"]


def test_check_takes_several_files_of_one_host() -> None:
    doc = check_json(PIX_TOPO, PIX_L)
    assert statuses(doc)["topology.consumer_p2p"] == ("problem", ["XP520"])
    (f,) = [f for f in doc["findings"] if f["code"] == "XP520"]
    # the matrix: GPU0-1 and GPU2-3 PIX (same switch), the 4 other pairs SYS
    assert f["data"]["same_switch_pairs"] == [[0, 1], [2, 3]]
    assert doc["inputs"] == [str(PIX_TOPO), str(PIX_L)]
    assert statuses(check_json(VM_TOPO, VM_LSCPU))["topology.vm_flat"] == ("problem", ["XP521"])
    # and one file alone still lacks the evidence
    assert statuses(check_json(VM_TOPO))["topology.vm_flat"] == ("not_checked", ["XP522"])


def test_show_takes_several_files() -> None:
    r = cli("topo", "show", str(PIX_TOPO), str(PIX_L))
    assert r.exit_code == 0, r.output
    assert "XP520" in r.stdout


def test_lscpu_beside_a_description_is_evidence(tmp_path: Path) -> None:
    out = tmp_path / "flat.yaml"
    assert cli("topo", "import", str(VM_TOPO), "-o", str(out)).exit_code == 0
    assert statuses(check_json(out))["topology.vm_flat"][0] == "not_checked"
    assert statuses(check_json(out, VM_LSCPU))["topology.vm_flat"] == ("problem", ["XP521"])
    # a description cannot be merged with another card listing
    r = cli("topo", "check", str(out), str(PIX_TOPO))
    assert isinstance(r.exception, UsageError)  # exit 2 through main()
    assert "cannot be merged" in str(r.exception)


def test_not_checked_texts_say_how_to_add_the_evidence() -> None:
    st = {c["name"]: c["evidence"] for c in check_json(VM_TOPO)["checks"]}
    assert "`xpuperf topo check FILES lscpu.txt`" in st["topology.vm_flat"]
    assert "`xpuperf topo check FILES nvidia-smi-L.txt`" in st["topology.consumer_p2p"]


def test_card_list_alone_says_what_it_is() -> None:
    line = one_line_error("topo", "check", str(PIX_L))
    # before: "not valid YAML: mapping values are not allowed here"
    assert "this is `nvidia-smi -L` output (4 card(s)), not a topology" in line
    assert "nvidia-smi topo -m" in line
    assert "YAML" not in line
    assert "`nvidia-smi -L` output (4 card(s))" in one_line_error("topo", "import", str(PIX_L))


def test_bad_evidence_block_is_one_line(tmp_path: Path) -> None:
    out = tmp_path / "pix.yaml"
    assert cli("topo", "import", str(PIX_TOPO), "-o", str(out)).exit_code == 0
    bad = tmp_path / "bad.yaml"
    bad.write_text(out.read_text() + "evidence: {cards: 3}\n")
    assert "evidence: must be a mapping with 'cards'" in one_line_error("topo", "check", str(bad))


def test_check_json_names_its_schema() -> None:
    assert CHECK_SCHEMA == "xpuperf.topo-check/1"
    doc = check_json(VM_TOPO)
    assert doc["schema"] == "xpuperf.topo-check/1"
    assert set(doc) == {"schema", "inputs", "findings", "checks"}


def test_import_prints_the_evidence_checks() -> None:
    r = cli("topo", "import", str(VM_TOPO))
    assert r.exit_code == 0, r.output
    assert "checks:" in r.stderr
    assert "not_checked topology.vm_flat [XP522]" in r.stderr
    assert "not_checked topology.consumer_p2p" in r.stderr


def test_a_line_over_the_cap_is_refused_at_once(tmp_path: Path) -> None:
    # 2 MiB without a newline: PyYAML took ~0.8 s a MiB on such a line (50 MB: 60 s)
    f = tmp_path / "one_line.log"
    f.write_text("x" * (2 << 20) + "\n")
    t0 = time.perf_counter()
    line = one_line_error("topo", "check", str(f))
    assert time.perf_counter() - t0 < 30  # process start included; the parse alone took ~2 s
    assert "line 1 is 2,097,152 characters long (limit 1,048,576)" in line
    assert "line 1 is" in one_line_error("topo", "import", str(f))
    # JSON may come on one line: no cap, the loader answers
    j = tmp_path / "one_line.json"
    j.write_text('{"schema": "xpuperf.topology/1", "name": "' + "x" * (2 << 20) + '"}')
    assert "nodes: missing" in one_line_error("topo", "check", str(j))


def test_gzip_inputs_read_like_plain_ones(tmp_path: Path) -> None:
    # QA's b10: `nvidia-smi topo -m | gzip` said "not a UTF-8 text file"
    gz_topo, gz_lscpu = tmp_path / "topo.txt.gz", tmp_path / "lscpu.txt.gz"
    gz_topo.write_bytes(gzip.compress(VM_TOPO.read_bytes()))
    gz_lscpu.write_bytes(gzip.compress(VM_LSCPU.read_bytes()))
    assert statuses(check_json(gz_topo, gz_lscpu))["topology.vm_flat"] == ("problem", ["XP521"])
    out = tmp_path / "vm.yaml"
    assert cli("topo", "import", str(gz_topo), str(gz_lscpu), "-o", str(out)).exit_code == 0
    gz_desc = tmp_path / "vm.yaml.gz"
    gz_desc.write_bytes(gzip.compress(out.read_bytes()))
    assert statuses(check_json(gz_desc))["topology.vm_flat"] == ("problem", ["XP521"])
    bad = tmp_path / "cut.txt.gz"
    bad.write_bytes(gzip.compress(VM_TOPO.read_bytes())[:20])
    assert "not a readable gzip file" in one_line_error("topo", "check", str(bad))
