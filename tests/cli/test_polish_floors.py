"""constraints/floors.txt pins every runtime dependency of pyproject.toml at exactly its declared
floor (CI runs the suite on those versions, .ci/run), and the torch extra is a range, not a pin."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).parents[2]


def _name(req: str) -> str:
    return re.split(r"[<>=!~\[; ]", req, maxsplit=1)[0].lower()


def test_floors_file_pins_each_runtime_dependency_at_its_floor() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    floors = {}
    for line in (ROOT / "constraints" / "floors.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, version = line.split("==")
            floors[name.lower()] = version
    declared = {}
    for req in project["dependencies"]:
        m = re.fullmatch(r"([A-Za-z0-9_.-]+)>=([0-9.]+)", req)
        assert m, f"{req}: a runtime dependency needs a plain '>=' floor"
        declared[m.group(1).lower()] = m.group(2)
    assert set(floors) == set(declared)
    for name, version in declared.items():  # 2.0 == 2.0.0: compare padded release numbers
        pad = [*map(int, version.split(".")), 0, 0][:3]
        assert [*map(int, floors[name].split(".")), 0, 0][:3] == pad, name


def test_torch_extra_is_not_an_exact_pin() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    torch = [r for reqs in extras.values() for r in reqs if _name(r) == "torch"]
    assert torch
    assert not [r for r in torch if "==" in r]


def test_ci_runs_the_suite_on_the_floors() -> None:
    ci = (ROOT / ".ci" / "run").read_text()
    assert '-c constraints/floors.txt ".[test]"' in ci
