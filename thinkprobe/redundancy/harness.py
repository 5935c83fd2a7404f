"""Runs inside the sandbox's child interpreter (sandbox.run_code_tests copies this file into a fresh
temporary folder and starts ``python -I harness.py RESULT MEMORY_MB CPU_S`` there): limits first,
then no network and no processes, then the user code in solution.py against tests.json. The verdict
is written to RESULT as {"passed", "reason"}. Standard library only; nothing of thinkprobe is imported.
"""
import io
import json
import sys

def _report(passed, reason):
    with open(sys.argv[1], "w") as f:
        json.dump({"passed": passed, "reason": reason}, f)


def _limit_resources(memory_mb, cpu_s):
    try:
        import resource
    except ImportError:
        return
    mb = memory_mb * 1024 * 1024
    for lim, val in ((resource.RLIMIT_AS, (mb, mb)), (resource.RLIMIT_CPU, (cpu_s, cpu_s + 1)),
                     (resource.RLIMIT_FSIZE, (16 << 20, 16 << 20)), (resource.RLIMIT_CORE, (0, 0)),
                     (getattr(resource, "RLIMIT_NPROC", None), (0, 0))):
        if lim is not None:
            try:
                resource.setrlimit(lim, val)
            except (ValueError, OSError):
                pass


def _no_network(*args, **kwargs):
    raise OSError("network access is disabled in the ThinkProbe sandbox")


def _no_processes(*args, **kwargs):
    raise OSError("starting processes is disabled in the ThinkProbe sandbox")


def _disable_network_and_processes():
    import os
    import socket
    import subprocess

    for name in ("socket", "create_connection", "socketpair", "getaddrinfo", "gethostbyname"):
        setattr(socket, name, _no_network)
    for name in ("system", "popen", "fork", "forkpty", "execv", "execve", "execvp", "execvpe", "execl", "execle",
                 "execlp", "execlpe", "spawnv", "spawnve", "spawnvp", "spawnvpe", "posix_spawn", "posix_spawnp"):
        if hasattr(os, name):
            setattr(os, name, _no_processes)
    subprocess.Popen = _no_processes


def _run(src, name, stdin_text=None):
    g = {"__name__": "__main__" if stdin_text is not None else "solution", "__builtins__": __builtins__}
    old_in, old_out = sys.stdin, sys.stdout
    if stdin_text is not None:
        sys.stdin, sys.stdout = io.StringIO(stdin_text), io.StringIO()
    try:
        try:
            exec(compile(src, name, "exec"), g)
        except SystemExit:
            pass
        return g, (sys.stdout.getvalue() if stdin_text is not None else None)
    finally:
        sys.stdin, sys.stdout = old_in, old_out


def _main():
    src = open("solution.py", encoding="utf-8").read()
    spec = json.load(open("tests.json", encoding="utf-8"))
    if spec["mode"] == "asserts":
        g, _ = _run(src, "solution.py")
        for k, test in enumerate(spec["tests"]):
            try:
                exec(compile(test, "test_%d" % k, "exec"), g)
            except AssertionError:
                return False, "test %d failed" % k
    else:
        for k, case in enumerate(spec["tests"]):
            _, out = _run(src, "solution.py", case["input"])
            if out.split() != str(case["output"]).split():
                return False, "test %d: wrong output" % k
    return True, "all %d tests passed" % len(spec["tests"])


if __name__ == "__main__":  # only ever run as the child's script (imported by doctest collection)
    _limit_resources(int(sys.argv[2]), int(sys.argv[3]))
    _disable_network_and_processes()
    try:
        _report(*_main())
    except MemoryError:
        _report(False, "memory limit exceeded")
    except RecursionError:
        _report(False, "recursion limit exceeded")
    except BaseException as exc:
        _report(False, "error: %s: %s" % (type(exc).__name__, str(exc)[:200]))
