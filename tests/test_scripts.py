"""Every script in scripts/ and experiments/ imports and answers --help (a script whose imports
moved fails here first, not when someone needs it)."""
import contextlib
import io
import runpy
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SCRIPTS = REPO / "scripts"
EXPERIMENTS = REPO / "experiments"
PY_SCRIPTS = sorted(str(p.relative_to(REPO)) for folder in (SCRIPTS, EXPERIMENTS) for p in folder.glob("*.py"))


def test_experiments_are_found():
    assert "experiments/candidate_ceiling.py" in PY_SCRIPTS and "scripts/train_parser.py" in PY_SCRIPTS


@pytest.mark.parametrize("script", PY_SCRIPTS)
def test_script_answers_help(script, monkeypatch):
    """Run as `python scripts/X.py --help` would, in this process (the imports are loaded once)."""
    monkeypatch.setattr(sys, "argv", [str(REPO / script), "--help"])
    monkeypatch.setattr(sys, "path", list(sys.path))  # scripts put the repository on sys.path
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as done:
        runpy.run_path(str(REPO / script), run_name="__main__")
    assert done.value.code in (0, None), out.getvalue()[-2000:]
    assert "usage" in out.getvalue().lower(), out.getvalue()[-2000:]


@pytest.mark.parametrize("script", sorted(p.name for p in SCRIPTS.glob("*.sh")))
def test_shell_script_parses(script):
    res = subprocess.run(["bash", "-n", str(SCRIPTS / script)], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
