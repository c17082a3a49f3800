"""Unit parsing: bandwidth (b = bits, B = bytes), time, memory; bare numbers refused."""

from __future__ import annotations

import pytest

from xpuperf.topology.schema import UnitError, parse_quantity, read_quantity


@pytest.mark.parametrize(
    ("text", "dimension", "expected"),
    [
        ("400Gbps", "bandwidth", 50.0),  # 400 Gb/s / 8 = 50 GB/s
        ("400 Gb/s", "bandwidth", 50.0),
        ("100Gbit/s", "bandwidth", 12.5),
        ("25GB/s", "bandwidth", 25.0),
        ("25GBps", "bandwidth", 25.0),
        ("1Tbps", "bandwidth", 125.0),
        ("800Mbps", "bandwidth", 0.1),
        ("1GiB/s", "bandwidth", 1.073741824),
        ("2us", "time", 2.0),
        ("2µs", "time", 2.0),
        ("1.5 ms", "time", 1500.0),
        ("500ns", "time", 0.5),
        ("1s", "time", 1e6),
        ("64GB", "memory", 64000.0),
        ("1GiB", "memory", 1073.741824),
        ("512MB", "memory", 512.0),
    ],
)
def test_parse_quantity(text: str, dimension: str, expected: float) -> None:
    assert parse_quantity(text, dimension) == pytest.approx(expected)


@pytest.mark.parametrize("text", ["400", "400 parsecs", "fast", "400G", "2 hours"])
def test_unreadable_strings_list_accepted_units(text: str) -> None:
    with pytest.raises(UnitError, match="accepted units"):
        parse_quantity(text, "bandwidth" if "G" in text or text == "fast" else "time")


@pytest.mark.parametrize(
    ("obj", "base", "expected"),
    [
        ({"speed": "400Gbps"}, "speed", 400.0),  # Gb/s is the canonical NIC unit
        ({"speed": "50GB/s"}, "speed", 400.0),
        ({"speed_Gbps": 200}, "speed", 200.0),
        ({"speed_GBps": 25}, "speed", 200.0),
        ({"speed_Gbps": "200"}, "speed", 200.0),
        ({"bw_GBps": 25}, "bw", 25.0),
        ({"bw": "200Gbps"}, "bw", 25.0),
        ({"bw_Gbps": 200}, "bw", 25.0),
        ({"latency_us": 2}, "latency", 2.0),
        ({"latency": "1.5 ms"}, "latency", 1500.0),
        ({"latency_ms": 1.5}, "latency", 1500.0),
        ({"memory_MB": 65536}, "memory", 65536.0),
        ({"memory_GB": 64}, "memory", 64000.0),
    ],
)
def test_read_quantity_spellings(obj: dict, base: str, expected: float) -> None:
    key, value = read_quantity(obj, base)
    assert key == next(iter(obj))
    assert value == pytest.approx(expected)


@pytest.mark.parametrize(
    ("obj", "base", "hint"),
    [
        ({"speed": 400}, "speed", 'speed_Gbps: 400 or speed: "400Gbps"'),
        ({"speed": "400"}, "speed", "speed_Gbps: 400"),
        ({"bw": 25}, "bw", 'bw_GBps: 25 or bw: "25GB/s"'),
        ({"latency": 2}, "latency", 'latency_us: 2 or latency: "2us"'),
        ({"memory": 64}, "memory", "memory_MB: 64"),
    ],
)
def test_bare_number_under_unitless_key_is_refused(obj: dict, base: str, hint: str) -> None:
    with pytest.raises(UnitError) as e:
        read_quantity(obj, base)
    assert "bare number" in str(e.value)
    assert hint in str(e.value)
    assert "accepted units" in str(e.value)


def test_two_spellings_at_once_are_refused() -> None:
    with pytest.raises(UnitError, match="not several"):
        read_quantity({"speed": "100Gbps", "speed_Gbps": 100}, "speed")


def test_absent_and_null() -> None:
    assert read_quantity({}, "speed") is None
    assert read_quantity({"speed_Gbps": None}, "speed") == ("speed_Gbps", None)
