"""Model-written code: never run unless the run allows it (--allow-code-execution), and then run in
a child the operating system isolates (namespaces, Landlock, seccomp). Hostile snippets fail or are
blocked, with the profiler, its files and the rest of the batch unharmed; benign code is graded as
before (assert tests and stdin/stdout cases). Tests that run code skip, naming what is missing, on a
machine that cannot isolate it (where the profiler refuses to run code at all)."""
from __future__ import annotations

import json
import os
import shutil
import socket
import tempfile
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

import thinkprobe
from thinkprobe.cli import main
from thinkprobe.options import OptionError, RunOptions
from thinkprobe.redundancy import (NOT_ALLOWED, RedundancyParams, isolation_problem, redundancy_row,
                                   run_code_tests)
from thinkprobe.redundancy import sandbox
from thinkprobe.report.summary import summary_text  # the report's opening lines

ISOLATION = isolation_problem()
isolated = pytest.mark.skipif(ISOLATION is not None, reason=f"this machine cannot isolate model-written code "
                                                             f"(the profiler refuses to run it): {ISOLATION}")
ADD = "def add(a, b):\n    return a + b"


@pytest.fixture
def home():
    """A stand-in for the user's home: a file to keep, a secret, a listening TCP socket and a Unix
    socket (the kind a Docker daemon listens on), and where a marker would appear. (A short path
    of its own: a Unix socket's path must stay under 108 bytes.)"""
    folder = Path(tempfile.mkdtemp(prefix="tp-home-"))
    (folder / "keep.txt").write_text("keep", encoding="utf-8")
    mode = (folder / "keep.txt").stat().st_mode
    (folder / "secret.txt").write_text("s3cret", encoding="utf-8")
    tcp = socket.socket()
    tcp.bind(("127.0.0.1", 0))
    tcp.listen(1)
    tcp.setblocking(False)
    unix = socket.socket(socket.AF_UNIX)
    unix.bind(str(folder / "daemon.sock"))
    unix.listen(1)
    unix.setblocking(False)
    yield folder, tcp.getsockname()[1]
    for s in (tcp, unix):
        with pytest.raises(BlockingIOError):  # nothing ever connected
            s.accept()
        s.close()
    try:
        assert (folder / "keep.txt").read_text(encoding="utf-8") == "keep"
        assert (folder / "keep.txt").stat().st_mode == mode
        assert sorted(p.name for p in folder.iterdir()) == ["daemon.sock", "keep.txt", "secret.txt"]
    finally:
        shutil.rmtree(folder)


# Each snippet succeeds only if its attack does (so a True verdict would be an escape).
HOSTILE = {
    "write outside": "open('{home}/written.txt', 'w').write('x')",
    "delete a file": "import os\nos.remove('{home}/keep.txt')",
    "chmod a file": "import os\nos.chmod('{home}/keep.txt', 0o777)",
    "read a secret": "assert open('{home}/secret.txt').read() == 's3cret'",
    "list a folder": "import os\nassert os.listdir('{home}')",
    "posix.system": "import posix\nassert posix.system('touch {home}/spawned.txt') == 0",
    "os.fork": "import os\nif os.fork() == 0:\n    open('{home}/forked.txt', 'w')\n    os._exit(0)",
    "subprocess via _posixsubprocess": ("import subprocess\n"  # a preexec_fn rules out posix_spawn
                                        "subprocess.run(['touch', '{home}/spawned.txt'], preexec_fn=lambda: None)"),
    "ctypes system": "import ctypes\nassert ctypes.CDLL(None).system(b'touch {home}/spawned.txt') == 0",
    "ctypes fork": "import ctypes\nassert ctypes.CDLL(None).fork() >= 0",
    "ctypes umount": "import ctypes, os\nassert ctypes.CDLL(None).umount2(os.getcwd().encode(), 2) == 0",
    "_socket connect": "import _socket\n_socket.socket().connect(('127.0.0.1', {port}))",
    "_socket bind": "import _socket\n_socket.socket().bind(('0.0.0.0', 0))",
    "unix socket connect": "import _socket\n_socket.socket(_socket.AF_UNIX).connect('{home}/daemon.sock')",
    "kill the profiler": "import os, signal\nos.kill({pid}, signal.SIGKILL)\nos.kill(-1, signal.SIGKILL)",
    "fork bomb": "import os\nwhile True:\n    os.fork()",
    "memory bomb": "x = []\nwhile True:\n    x.append(bytearray(10 ** 7))",
    "huge allocation": "x = bytearray(8 * 1024 ** 3)",
    "infinite loop": "while True:\n    pass",
    "sleeping loop": "import time\nwhile True:\n    time.sleep(0.05)",
    "huge output on stderr": "import sys\nfor _ in range(100):\n    sys.stderr.write('x' * 10 ** 6)",
    "huge output on stdout": "while True:\n    print('x' * 10 ** 6)",
    "raise the memory limit": "import resource\nresource.setrlimit(resource.RLIMIT_AS, (-1, -1))",
}


@isolated
@pytest.mark.parametrize("name", list(HOSTILE))
def test_hostile_code_fails_or_is_blocked(name, home):
    folder, port = home
    code = HOSTILE[name].format(home=folder, port=port, pid=os.getpid())
    start = time.monotonic()
    passed, reason = run_code_tests(f"{ADD}\n{code}", ["assert add(1, 2) == 3"], timeout_s=1, memory_mb=256)
    assert passed is False, reason
    assert time.monotonic() - start < 10
    # the checks on the home folder and the sockets run as the fixture ends


@isolated
def test_huge_output_to_be_compared_is_capped(home):
    code = "for _ in range(10 ** 4):\n    print('x' * 10 ** 6)"
    passed, reason = run_code_tests(code, [{"input": "", "output": "x"}], timeout_s=2, memory_mb=256)
    assert passed is False and ("memory" in reason or "timeout" in reason), reason


@isolated
def test_the_child_starts_in_an_empty_folder_of_its_own():
    code = "import os\nHERE = os.getcwd()\nPID = os.getpid()\nFILES = os.listdir('.')\nopen('scratch', 'w').write('x')"
    assert run_code_tests(code, [f"assert HERE != {os.getcwd()!r}", f"assert PID != {os.getpid()}",
                                 "assert FILES == []", "assert open('scratch').read() == 'x'"]) \
        == (True, "all 4 tests passed")


@isolated
def test_benign_code_is_graded_as_before():
    assert run_code_tests(ADD, ["assert add(1, 2) == 3", "assert add(2, 2) == 4"]) == (True, "all 2 tests passed")
    passed, reason = run_code_tests("def add(a, b):\n    return a - b", "assert add(1, 2) == 3")
    assert passed is False and "test 0 failed" in reason
    code = "n = int(input())\nprint(n * 2)"
    assert run_code_tests(code, [{"input": "3", "output": "6"}, {"input": "5\n", "output": "10\n"}])[0] is True
    assert run_code_tests(code, {"inputs": ["3"], "outputs": ["7"]})[0] is False
    threads = "import threading\nout = []\nt = threading.Thread(target=out.append, args=(1,))\nt.start()\nt.join()"
    assert run_code_tests(threads, "assert out == [1]")[0] is True  # threads are not processes


@isolated
def test_errors_are_reported_not_raised():
    assert run_code_tests("raise SystemExit(3)", "assert True")[0] is True  # exiting is not failing
    passed, reason = run_code_tests("def f(n):\n    return f(n + 1)", "f(0)")
    assert passed is False and "recursion" in reason
    passed, reason = run_code_tests("syntax error here", "assert True")
    assert passed is False and "SyntaxError" in reason


def test_nothing_to_run():
    assert run_code_tests("", "assert True") == (None, "no code")
    assert run_code_tests("x = 1", 42) == (None, "no usable tests")


def code_record(trace_id: str, code: str, tests) -> dict:
    units = [{"id": 0, "section": "reasoning", "start": 0, "end": 10, "text": "I will write it.", "type": "PLN",
              "segment": 0, "cues": [], "tokens": 4},
             {"id": 1, "section": "answer", "start": 10, "end": 20, "text": f"```python\n{code}\n```", "type": "CON",
              "segment": 0, "cues": [], "tokens": 4}]
    return {"trace_id": trace_id, "model": "m", "domain": "code", "question": "Write add(a, b).", "gold_answer": None,
            "correct": None, "units": units, "edges": [{"src": 0, "dst": 1, "type": "inference", "polarity": None,
                                                          "score": 1.0}], "tests": tests}


def test_default_runs_no_code_and_leaves_it_ungraded(tmp_path):
    marker = tmp_path / "ran.txt"
    rec = code_record("t", f"{ADD}\nopen({str(marker)!r}, 'w')", ["assert add(1, 2) == 3"])
    row, extra = redundancy_row(rec)
    assert not marker.exists()
    assert row["Acc"] is None and extra["final_correct"] is None
    assert extra["candidates"][0]["reason"] == NOT_ALLOWED and sandbox.code_not_run({"redundancy": extra})


@isolated
def test_a_hostile_batch_leaves_the_rest_graded(home):
    folder, port = home
    params = RedundancyParams(code_timeout_s=1, code_memory_mb=256, allow_code_execution=True)
    tests = ["assert add(1, 2) == 3"]
    batch = [code_record(name, f"{ADD}\n{HOSTILE[name].format(home=folder, port=port, pid=os.getpid())}", tests)
             for name in ("infinite loop", "memory bomb", "fork bomb", "delete a file", "posix.system")]
    batch += [code_record("good", ADD, tests), code_record("wrong", "def add(a, b):\n    return a - b", tests),
              code_record("io", "a, b = map(int, input().split())\nprint(a + b)", [{"input": "1 2", "output": "3"}])]
    acc = {rec["trace_id"]: redundancy_row(rec, params)[0]["Acc"] for rec in batch}
    assert acc == {"infinite loop": 0, "memory bomb": 0, "fork bomb": 0, "delete a file": 0, "posix.system": 0,
                   "good": 1, "wrong": 0, "io": 1}


def test_no_isolation_means_no_run_and_says_what_is_missing(monkeypatch, tmp_path):
    marker = tmp_path / "ran.txt"
    monkeypatch.setattr(sandbox.shutil, "which", lambda name, *a, **k: None)
    passed, reason = run_code_tests(f"open({str(marker)!r}, 'w')", "assert True")
    assert passed is None and "unshare" in reason and "not run" in reason and not marker.exists()
    sandbox.isolation_problem.cache_clear()
    try:
        with pytest.raises(OptionError, match="unshare"):
            thinkprobe.profile([{"reasoning": "x", "tests": "assert True"}], tmp_path / "out", allow_code_execution=True)
    finally:
        sandbox.isolation_problem.cache_clear()
    assert not (tmp_path / "out").exists()


def test_only_the_option_allows_code_not_a_config_file():
    from thinkprobe.config import Config
    from thinkprobe.runner import run_config

    permissive = Config.load(overrides={"redundancy": {"allow_code_execution": True}})
    assert RedundancyParams.from_config(run_config(RunOptions(), permissive)).allow_code_execution is False
    assert RedundancyParams.from_config(run_config(RunOptions(allow_code_execution=True))).allow_code_execution



def test_a_config_file_asking_for_code_execution_is_refused_naming_the_key(tmp_path):
    """It was ignored without a word: the user believed code answers were being run."""
    from thinkprobe.config import Config, ConfigError

    path = tmp_path / "run.yaml"
    path.write_text("redundancy:\n  allow_code_execution: true\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="redundancy.allow_code_execution.*--allow-code-execution") as err:
        Config.load(path)
    assert str(path) in str(err.value)
    path.write_text("redundancy:\n  allow_code_execution: false\n", encoding="utf-8")
    assert Config.load(path)["redundancy"]["allow_code_execution"] is False


# ----------------------------------------------------------------------------- whole runs

def hostile_trace(folder, port) -> dict:
    """The issue's trace: a correct add(a, b) whose final code block also tries to write a file,
    delete one, start a process, connect and read a secret; its own test lists what worked."""
    code = f"""import os, posix, _socket
{ADD}
ESCAPED = []
def attempt(name, worked):
    try:
        if worked():
            ESCAPED.append(name)
    except OSError:
        pass
attempt("write", lambda: open("{folder}/written.txt", "w").write("x") == 1)
attempt("delete", lambda: os.remove("{folder}/keep.txt") is None)
attempt("spawn", lambda: posix.system("touch {folder}/spawned.txt") == 0)
attempt("connect", lambda: _socket.socket().connect(("127.0.0.1", {port})) is None)
attempt("read", lambda: open("{folder}/secret.txt").read() == "s3cret")"""
    return {"id": "hostile", "model": "m", "question": "Write add(a, b).", "reasoning": "I will write add.",
            "content": f"```python\n{code}\n```", "tests": ["assert add(1, 2) == 3", "assert ESCAPED == []"]}


def add_trace(trace_id: str, body: str, **tests) -> dict:
    return {"id": trace_id, "model": "m", "question": "Write add(a, b).", "reasoning": "I will write add.",
            "content": f"```python\n{body}\n```", **tests}


def test_whole_runs_default_then_allowed(home, tmp_path):
    """Default options: nothing runs, the answers are ungraded and run.json, the summary and the
    report's opening lines say how many and how to allow it. --allow-code-execution: the hostile trace is contained,
    the correct answers graded correct and the wrong one incorrect."""
    folder, port = home
    src = tmp_path / "code.jsonl"
    traces = [hostile_trace(folder, port), add_trace("good", ADD, tests=["assert add(1, 2) == 3"]),
              add_trace("wrong", "def add(a, b):\n    return a - b", tests=["assert add(1, 2) == 3"]),
              add_trace("io", "a, b = map(int, input().split())\nprint(a + b)",
                        test_cases=[{"input": "1 2", "output": "3"}])]
    src.write_text("".join(json.dumps(t) + "\n" for t in traces), encoding="utf-8")
    quick = ["--device", "cpu", "--no-progress", "--no-cache", "--linker", "cue", "--types", "cue", "--domain", "code",
             "--no-report"]
    res = CliRunner().invoke(main, ["profile", str(src), "-o", str(tmp_path / "off"), *quick])
    assert res.exit_code == 0, res.output
    assert "4 code answers were not graded" in res.output and "--allow-code-execution" in res.output
    run = json.loads((tmp_path / "off" / "run.json").read_text(encoding="utf-8"))
    assert run["counts"]["code_not_run"] == 4 and run["code_execution"]["allowed"] is False
    assert "--allow-code-execution" in run["code_execution"]["how"]
    stats = json.loads((tmp_path / "off" / "stats.json").read_text(encoding="utf-8"))
    assert any("4 code answers were not graded" in line for line in summary_text(tmp_path / "off", stats, {}, run))
    graphs = [json.loads(line) for line in (tmp_path / "off" / "graphs.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [g["redundancy"]["final_correct"] for g in graphs] == [None] * 4
    if ISOLATION is not None:
        pytest.skip(f"the allowed run needs isolation this machine lacks: {ISOLATION}")
    allowed = thinkprobe.profile(str(src), tmp_path / "on", device="cpu", progress=False, cache=False, linker="cue",
                                 types="cue", domain="code", report=False, allow_code_execution=True)
    verdicts = {g["trace_id"]: g["redundancy"]["final_correct"] for g in allowed.graphs}
    assert verdicts == {"hostile": True, "good": True, "wrong": False, "io": True}  # hostile: nothing escaped
    assert allowed.summary["code_not_run"] == 0
