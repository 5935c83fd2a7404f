"""Every script in scripts/ imports and answers --help (a script whose imports moved fails here
first, not when someone needs it)."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"


@pytest.mark.parametrize("script", sorted(p.name for p in SCRIPTS.glob("*.py")))
def test_script_answers_help(script):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    res = subprocess.run([sys.executable, str(SCRIPTS / script), "--help"], capture_output=True, text=True,
                         timeout=300, env=env)
    assert res.returncode == 0, res.stderr[-2000:]
    assert "usage" in res.stdout.lower(), res.stdout[-2000:]


@pytest.mark.parametrize("script", sorted(p.name for p in SCRIPTS.glob("*.sh")))
def test_shell_script_parses(script):
    res = subprocess.run(["bash", "-n", str(SCRIPTS / script)], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
