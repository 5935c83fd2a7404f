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


def test_device_agreement_counts_what_differs(monkeypatch):
    """scripts/device_agreement.py (the CPU/CUDA comparison of docs/benchmarks.md) on two runs of three
    graphs: identical runs agree fully; one edge retyped, one node retyped, one segment boundary
    moved and one indicator changed show up as such, and a trace with other units is left out of
    the unit-level figures."""
    import copy

    monkeypatch.syspath_prepend(str(SCRIPTS))
    from device_agreement import compare
    from run_folder import make_graph

    a = {t: make_graph(t, "m", "d", 12) for t in ("t1", "t2", "t3")}
    same = compare(a, copy.deepcopy(a))
    assert same["traces_identical_graphs"] == 3 and same["edge_pair_agreement"] == 1.0
    assert all(d["traces_differing"] == 0 for d in same["indicators"].values())
    b = copy.deepcopy(a)
    b["t1"]["edges"][0]["type"] = "elaboration" if a["t1"]["edges"][0]["type"] != "elaboration" else "inference"
    b["t1"]["units"][2]["type"] = "MET"
    b["t2"]["units"][4]["segment"] = 0
    b["t2"]["indicators"]["idea_count"] = 2.5
    b["t3"]["units"][0]["end"] -= 1
    got = compare(a, b)
    pairs = sum(len({(e["src"], e["dst"]) for e in a[t]["edges"]}) for t in ("t1", "t2"))
    assert got["traces_same_units"] == 2 and got["traces_identical_graphs"] == 1
    assert got["edge_pair_agreement"] == (pairs - 1) / pairs
    assert got["node_type_agreement"] == 1 - 1 / 26 and got["segment_agreement"] == 1 - 1 / 26
    assert got["indicators"]["idea_count"] == {"max_abs_diff": 2.0, "traces_differing": 1}
