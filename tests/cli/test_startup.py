"""Start-up: loading the CLI does not import scipy (about 1 s of a 2.8 s ``xpuperf --help``);
the analyses and the cost model import it when they compute."""

from __future__ import annotations

import subprocess
import sys


def loaded_after(code: str) -> set[str]:
    """Module names in ``sys.modules`` after running ``code`` in a fresh interpreter."""
    out = subprocess.run(
        [sys.executable, "-c", code + "\nimport sys\nprint('\\n'.join(sys.modules))"],
        capture_output=True,
        text=True,
        check=True,
    )
    return set(out.stdout.split())


def test_cli_import_leaves_scipy_out() -> None:
    mods = loaded_after("import xpuperf.cli.app")
    assert "xpuperf.cli.plan" in mods  # every subcommand module was loaded
    assert not {m for m in mods if m == "scipy" or m.startswith("scipy.")}


def test_analysis_imports_scipy_when_it_computes() -> None:
    mods = loaded_after(
        "from xpuperf.synth import Scenario, generate\n"
        "from xpuperf.analysis import analyze\n"
        "analyze(generate(Scenario(ranks=4, steps=60, slow_ranks={1: 1.2})))"
    )
    assert "scipy.stats" in mods
