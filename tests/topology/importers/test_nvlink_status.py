"""``nvidia-smi nvlink -s`` (samples 55-57, written for these tests in the tool's layout: a
``GPU i: NAME (UUID: …)`` line, then tab-space-indented ``Link k: R GB/s`` / ``<inactive>``),
the check ``topology.nvlink_links`` (XP523/XP524) and the per-generation NVLink figures."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from xpuperf.cli.topo import topo_app
from xpuperf.errors import InputError
from xpuperf.findings import CheckStatus
from xpuperf.topology import evidence, nvlink_check
from xpuperf.topology.constants import NVLINK_GENERATIONS, nvlink_generation
from xpuperf.topology.importers import detect, import_files, nvlinks

from .conftest import fixture_path


def test_55_v100_two_inactive_links(read) -> None:
    text, src = read("nvlink", "55")
    assert detect(text) == ["nvidia-smi-nvlink"]
    cards = nvlinks.link_status(text, src)
    assert [c.index for c in cards] == list(range(8))
    assert all(len(c.rates) == 6 for c in cards)
    assert cards[3].inactive == [3, 5]
    assert cards[3].active == dict.fromkeys((0, 1, 2, 4), 25.781)
    assert all(not c.inactive for c in cards if c.index != 3)
    imp = nvlinks.parse(text, src)
    (host,) = imp.hosts
    assert {d.model for d in host.devices.values()} == {"Tesla V100-SXM2-32GB"}
    assert not host.links  # the tool names no peers
    assert "48 NVLinks, 46 active at 25.781 GB/s; inactive: GPU 3 links 3,5" in imp.notes[0]


def test_55_inactive_links_are_xp523_with_the_bandwidth_left() -> None:
    p = fixture_path("nvlink", "55")
    checks, findings = nvlink_check.check([(str(p), p.read_text())])
    (f,) = findings
    assert f.code == "XP523"
    assert f.data["gpu"] == 3
    assert f.data["inactive"] == [3, 5]
    assert f.data["links"] == 6
    # V100 = NVLink2, 25 GB/s per link per direction: 4 links left = 100 of 6 x 25 = 150 GB/s
    assert "4 × 25 = 100 of 150 GB/s per direction left" in f.message
    assert "threshold: every link of the card active" in f.message
    assert "nvidia-smi nvlink -e" in f.message
    (c,) = checks
    assert (c.name, c.status, c.codes) == ("topology.nvlink_links", CheckStatus.PROBLEM, ("XP523",))


@pytest.mark.parametrize(("prefix", "links", "rate"), [("56", 144, "26.562"), ("57", 96, "25")])
def test_all_active_samples_are_clean(prefix: str, links: int, rate: str) -> None:
    p = fixture_path("nvlink", prefix)
    checks, findings = nvlink_check.check([(str(p), p.read_text())])
    assert findings == []
    (c,) = checks
    assert c.status == CheckStatus.CLEAN
    assert f"8 card(s), {links} NVLinks all active at {rate} GB/s" in c.evidence


def test_slow_link_is_xp524_against_the_generation_rate() -> None:
    text = (
        "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-00000000-1111-2222-3333-444444444444)\n"
        "\t Link 0: 26.562 GB/s\n\t Link 1: 13.281 GB/s\n\t Link 2: 26.562 GB/s\n"
    )
    _, findings = nvlink_check.check([("s.txt", text)])
    (f,) = findings
    assert f.code == "XP524"
    assert f.data["slow"] == {"1": 13.281}
    assert f.data["full_GBps"] == 26.562  # NVLink4 as nvidia-smi prints it
    assert f.data["threshold"] == pytest.approx(0.95 * 26.562)
    assert "NVLink4 full rate is 26.562 GB/s" in f.message


def test_unknown_card_is_judged_by_its_fastest_link() -> None:
    text = "GPU 0: Some Card (UUID: GPU-x)\n\t Link 0: 40 GB/s\n\t Link 1: 20 GB/s\n"
    _, findings = nvlink_check.check([("s.txt", text)])
    (f,) = findings
    assert f.data["full_GBps"] == 40.0
    assert "the card's fastest link is 40 GB/s" in f.message


def test_cards_without_links_are_not_checked() -> None:
    text = (
        "GPU 0: NVIDIA L40S (UUID: GPU-a)\n\t Link 0: <inactive>\n"
        "GPU 1: NVIDIA L40S (UUID: GPU-b)\n"
    )
    cards = nvlinks.link_status(text)
    assert [len(c.rates) for c in cards] == [1, 0]
    checks, findings = nvlink_check.check([("l.txt", "GPU 0: NVIDIA L40S (UUID: GPU-a)\n")])
    assert (checks, findings) == ([], [])  # no Link line: not nvlink -s output at all
    checks, findings = nvlink_check.check([("l.txt", text)])
    assert [f.code for f in findings] == ["XP523"]  # its one link is down
    assert "1 of 1 NVLinks inactive" in findings[0].message


def test_check_without_nvlink_output_is_not_checked_where_there_are_nvlinks() -> None:
    assert nvlink_check.check([("x.txt", "nothing here")]) == ([], [])  # no NVLink: no check
    # a DGX-1 `topo -m` shows NV1/NV2 links but not whether each is up: not_checked, never clean
    p = fixture_path("nvsmi", "14")
    checks, found, _ = evidence.assess([(str(p), p.read_text())], import_files([p]).cluster)
    (c,) = [c for c in checks if c.name == "topology.nvlink_links"]
    assert c.status.value == "not_checked"
    assert "nvidia-smi nvlink -s" in c.evidence
    assert not [f for f in found if f.code in ("XP523", "XP524")]


def test_merges_with_topo_m_models_and_links() -> None:
    # sample 14: DGX-1 V100 nvidia-smi topo -m; sample 55: its nvlink -s
    result = import_files([fixture_path("nvsmi", "14"), fixture_path("nvlink", "55")])
    node = result.cluster.nodes[0]
    assert node.device(3).model == "Tesla V100-SXM2-32GB"
    assert node.link(0, 3).kind == "nvlink"


def test_topo_check_cli_reports_xp523() -> None:
    r = CliRunner().invoke(topo_app, ["check", str(fixture_path("nvlink", "55"))])
    assert r.exit_code == 0, r.output
    assert "XP523 warning: GPU 3 (Tesla V100-SXM2-32GB): 2 of 6 NVLinks inactive" in r.output
    assert "problem     topology.nvlink_links [XP523]" in r.output


@pytest.mark.parametrize(
    ("text", "message", "line"),
    [
        ("GPU 0: X (UUID: GPU-a)\n\t Link 0: fast\n", "neither 'N GB/s' nor '<inactive>'", 2),
        ("GPU 0: X (UUID: GPU-a)\n\t Link 0: 25 GB/s\nGPU 0: X (UUID: GPU-a)\n", "twice", 3),
    ],
)
def test_nvlink_refusals(text: str, message: str, line: int) -> None:
    with pytest.raises(InputError) as e:
        nvlinks.parse(text, "n.txt")
    assert message in str(e.value)
    assert e.value.line == line


def test_generation_figures() -> None:
    # NVIDIA: V100 6 x 25 = 150 GB/s per direction (300 both ways), A100 12 x 25 (600),
    # H100 18 x 25 (900), B200 18 x 50 (1800): data GB/s per link and direction
    for gen, model, links, total_bidir in [
        (2, "V100", 6, 300), (3, "A100", 12, 600), (4, "H100", 18, 900), (5, "B200", 18, 1800),
    ]:  # fmt: skip
        data, _, cards = NVLINK_GENERATIONS[gen]
        assert cards[model] == links
        assert 2 * links * data == total_bidir
    assert NVLINK_GENERATIONS[4][0] != 20.0  # a Hopper link is not 20 GB/s
    assert nvlink_generation("NVIDIA H100 80GB HBM3") == 4
    assert nvlink_generation("NVIDIA GH200 480GB") == 4
    assert nvlink_generation("NVIDIA A800-SXM4-80GB") == 3
    assert nvlink_generation(None, 25.781) == 2
    assert nvlink_generation(None, 25.0) == 3
    assert nvlink_generation(None, 53.125) == 5
    assert nvlink_generation("Some Card", 31.0) is None
