"""Model-written code runs in a child the operating system isolates (namespaces, Landlock, seccomp).
Hostile snippets fail or are blocked, with the profiler and its files unharmed; benign code is
graded as before (assert tests and stdin/stdout cases). Tests that run code skip, naming what is
missing, on a machine that cannot isolate it."""
from __future__ import annotations

import os
import shutil
import socket
import tempfile
import time
from pathlib import Path

import pytest

from thinkprobe.redundancy.sandbox import isolation_problem, run_code_tests

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
