"""Runs inside the sandbox's child (sandbox.run_code_tests copies this file into a fresh temporary
folder and starts ``unshare --user --map-root-user --net --pid --ipc --uts --mount --fork --kill-child
python -I harness.py MEMORY_MB CPU_S`` there). Standard library only; nothing of thinkprobe is imported.

Before it runs the model-written code in solution.py against tests.json, the child isolates itself
with what the kernel offers, and stops (reporting which mechanism is missing) when one of them fails:

1. reads its inputs, then mounts a fresh, empty, size-capped tmpfs over its working folder, so
   the folder the parent prepared (and everything else the parent left there) is out of reach;
2. limits: address space, CPU time, file size, core dumps;
3. Landlock (no_new_privs first): read-only access to the system's library folders and the Python
   installation, read-write access to the new working folder, nothing else (no TCP either, and,
   where the kernel's Landlock has them, no signals or abstract sockets outside);
4. seccomp (through libseccomp): no new processes (fork, vfork, clone without CLONE_THREAD,
   clone3, execve), no sockets, no changes to files' modes, owners, times or extended attributes,
   no truncate by path, no mounts, namespaces, ptrace, io_uring, BPF or kernel keys; syscalls
   numbered above 466 (Linux 6.15 and later: not reviewed here) answer ENOSYS.

The namespaces (an empty network, its own PID space where it is process 1, and a user namespace,
which takes every capability over the rest of the system away, root included) come from `unshare`.

Protocol on stdout (the parent reads at most a few kilobytes of it): a first line "started", then
one JSON line, {"passed", "reason"} or {"unavailable": what is missing}. What the code prints goes
to /dev/null (assert tests) or into a buffer that is compared with the expected output (stdin/stdout
tests). stderr is a capped file the parent reads the tail of.
"""
import ctypes
import errno
import io
import json
import os
import sys

WORK_MB = 64  # the tmpfs working folder
FILE_MB = 16  # RLIMIT_FSIZE: any one file, stderr included

# Landlock (include/uapi/linux/landlock.h): syscall numbers are the same on every architecture.
_LL_CREATE, _LL_ADD_RULE, _LL_RESTRICT = 444, 445, 446
_FS_EXECUTE, _FS_WRITE_FILE, _FS_READ_FILE, _FS_READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
_FS_REMOVE_DIR, _FS_REMOVE_FILE, _FS_MAKE_DIR, _FS_MAKE_REG, _FS_MAKE_SYM = 1 << 4, 1 << 5, 1 << 7, 1 << 8, 1 << 12
_FS_REFER, _FS_TRUNCATE = 1 << 13, 1 << 14
_READ_ONLY_PATHS = ("/usr", "/lib", "/lib64", "/lib32", "/libx32")

# seccomp: denied with EPERM. Names libseccomp does not know (older than the kernel) are added by
# their number, the same on every architecture for syscalls from 425 on.
_DENIED = (
    # new processes and other processes
    "fork", "vfork", "execve", "execveat", "ptrace", "process_vm_readv", "process_vm_writev", "kcmp",
    "pidfd_open", "pidfd_getfd", "pidfd_send_signal", "process_madvise", "process_mrelease",
    # network (the network namespace is empty; sockets on the filesystem are not namespaced)
    "socket", "socketpair",
    # file metadata Landlock does not cover
    "chmod", "fchmod", "fchmodat", "fchmodat2", "chown", "fchown", "lchown", "fchownat", "utime", "utimes",
    "utimensat", "futimesat", "setxattr", "lsetxattr", "fsetxattr", "removexattr", "lremovexattr",
    "fremovexattr", "setxattrat", "removexattrat", "truncate", "mknod", "mknodat", "name_to_handle_at",
    "open_by_handle_at", "quotactl", "quotactl_fd", "inotify_add_watch", "fanotify_init", "fanotify_mark",
    # mounts and namespaces
    "mount", "umount2", "pivot_root", "chroot", "unshare", "setns", "open_tree", "move_mount", "fsopen",
    "fsconfig", "fsmount", "fspick", "mount_setattr",
    # the kernel
    "bpf", "perf_event_open", "io_uring_setup", "io_uring_enter", "io_uring_register", "userfaultfd", "keyctl",
    "add_key", "request_key", "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
    "reboot", "swapon", "swapoff", "acct", "syslog", "iopl", "ioperm", "lsm_set_self_attr",
)
_UNIFIED = {"io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427, "open_tree": 428,
            "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433, "pidfd_open": 434,
            "clone3": 435, "pidfd_getfd": 438, "process_madvise": 440, "mount_setattr": 442, "quotactl_fd": 443,
            "process_mrelease": 448, "fchmodat2": 452, "lsm_set_self_attr": 460, "setxattrat": 463,
            "removexattrat": 466}
_REVIEWED_UP_TO = 466  # syscalls numbered above answer ENOSYS (glibc then falls back to older ones)
_CLONE_THREAD = 0x00010000


class Unavailable(Exception):
    """An isolation mechanism this machine does not offer (the message names it)."""


def _emit(obj):
    os.write(_RESULT_FD, (json.dumps(obj) + "\n").encode())


def _syscall():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    return libc


def _fresh_workdir(libc):
    here = os.getcwd()
    data = b"size=%dm,nr_inodes=4096,mode=0700" % WORK_MB
    libc.mount.argtypes = [ctypes.c_char_p] * 3 + [ctypes.c_ulong, ctypes.c_char_p]
    ms_nosuid, ms_nodev, ms_noexec = 2, 4, 8
    if libc.mount(b"tmpfs", here.encode(), b"tmpfs", ms_nosuid | ms_nodev | ms_noexec, data) != 0:
        raise Unavailable("mount namespace: mounting the empty working folder failed: "
                          + os.strerror(ctypes.get_errno()))
    os.chdir(here)  # into the new, empty folder
    if os.listdir("."):
        raise Unavailable("mount namespace: the working folder is not empty")


def _limit_resources(memory_mb, cpu_s):
    import resource

    mb = memory_mb * 1024 * 1024
    for lim, val in ((resource.RLIMIT_AS, (mb, mb)), (resource.RLIMIT_CPU, (cpu_s, cpu_s + 1)),
                     (resource.RLIMIT_FSIZE, (FILE_MB << 20, FILE_MB << 20)), (resource.RLIMIT_CORE, (0, 0))):
        resource.setrlimit(lim, val)


def _landlock(libc):
    abi = libc.syscall(_LL_CREATE, None, ctypes.c_size_t(0), ctypes.c_uint32(1))
    if abi < 1:
        raise Unavailable("Landlock: not offered by this kernel (%s; needs Linux 5.13 or later with landlock "
                          "in its lsm= list)" % os.strerror(ctypes.get_errno()))
    handled = (1 << 13) - 1 | (_FS_REFER if abi >= 2 else 0) | (_FS_TRUNCATE if abi >= 3 else 0) \
        | ((1 << 15) if abi >= 5 else 0)  # + ioctl on devices
    # ruleset_attr: handled_access_fs, handled_access_net (ABI 4: bind and connect TCP), scoped (ABI 6)
    attr = (ctypes.c_uint64 * 3)(handled, 3 if abi >= 4 else 0, 3 if abi >= 6 else 0)
    size = 8 * (3 if abi >= 6 else 2 if abi >= 4 else 1)
    ruleset = libc.syscall(_LL_CREATE, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
    if ruleset < 0:
        raise Unavailable("Landlock: creating a ruleset failed: " + os.strerror(ctypes.get_errno()))

    class PathBeneath(ctypes.Structure):
        _pack_ = 1
        _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]

    read_only = _FS_EXECUTE | _FS_READ_FILE | _FS_READ_DIR
    read_write = (_FS_READ_FILE | _FS_READ_DIR | _FS_WRITE_FILE | _FS_REMOVE_DIR | _FS_REMOVE_FILE | _FS_MAKE_DIR
                  | _FS_MAKE_REG | _FS_MAKE_SYM) | (handled & (_FS_REFER | _FS_TRUNCATE))
    python = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    rules = [(p, read_only) for p in sorted(set(_READ_ONLY_PATHS) | python) if os.path.isdir(p)]
    for path, access in rules + [(os.getcwd(), read_write)]:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        try:
            rule = PathBeneath(access, fd)
            if libc.syscall(_LL_ADD_RULE, ruleset, 1, ctypes.byref(rule), 0) != 0:  # 1: LANDLOCK_RULE_PATH_BENEATH
                raise Unavailable("Landlock: a rule for %s failed: %s" % (path, os.strerror(ctypes.get_errno())))
        finally:
            os.close(fd)
    if libc.prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS
        raise Unavailable("no_new_privs: " + os.strerror(ctypes.get_errno()))
    if libc.syscall(_LL_RESTRICT, ruleset, 0) != 0:
        raise Unavailable("Landlock: restricting failed: " + os.strerror(ctypes.get_errno()))
    os.close(ruleset)


def _seccomp():
    try:
        lib = ctypes.CDLL("libseccomp.so.2")
    except OSError:
        raise Unavailable("seccomp: libseccomp.so.2 is not installed (Debian and Ubuntu: libseccomp2)")

    class ArgCmp(ctypes.Structure):
        _fields_ = [("arg", ctypes.c_uint), ("op", ctypes.c_int), ("datum_a", ctypes.c_uint64),
                    ("datum_b", ctypes.c_uint64)]

    lib.seccomp_init.restype = ctypes.c_void_p
    lib.seccomp_init.argtypes = [ctypes.c_uint32]
    lib.seccomp_rule_add_array.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int, ctypes.c_uint,
                                           ctypes.POINTER(ArgCmp)]
    lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
    lib.seccomp_load.argtypes = [ctypes.c_void_p]

    def errno_action(e):
        return 0x00050000 | e  # SCMP_ACT_ERRNO

    ctx = lib.seccomp_init(0x7FFF0000)  # SCMP_ACT_ALLOW by default; unknown architectures are killed
    if not ctx:
        raise Unavailable("seccomp: libseccomp could not start a filter")

    def deny(nr, action, *cmp):
        args = (ArgCmp * len(cmp))(*cmp) if cmp else None
        rc = lib.seccomp_rule_add_array(ctx, action, nr, len(cmp), args)
        if rc != 0:
            raise Unavailable("seccomp: a rule for syscall %d failed: %s" % (nr, os.strerror(-rc)))

    for name in _DENIED:
        nr = lib.seccomp_syscall_resolve_name(name.encode())
        if nr < 0:
            nr = _UNIFIED.get(name, -1)
        if nr >= 0:  # else the syscall does not exist on this architecture
            deny(nr, errno_action(errno.EPERM))
    deny(lib.seccomp_syscall_resolve_name(b"clone3") if lib.seccomp_syscall_resolve_name(b"clone3") >= 0
         else _UNIFIED["clone3"], errno_action(errno.ENOSYS))  # glibc falls back to clone, checked below
    # clone: threads only (CLONE_THREAD set); a process is refused. SCMP_CMP_MASKED_EQ is 7.
    deny(lib.seccomp_syscall_resolve_name(b"clone"), errno_action(errno.EPERM), ArgCmp(0, 7, _CLONE_THREAD, 0))
    for nr in range(_REVIEWED_UP_TO + 1, 512):
        deny(nr, errno_action(errno.ENOSYS))
    rc = lib.seccomp_load(ctypes.c_void_p(ctx))
    if rc != 0:
        raise Unavailable("seccomp: loading the filter failed: " + os.strerror(-rc))


def _isolate(memory_mb, cpu_s):
    libc = _syscall()
    _fresh_workdir(libc)
    _limit_resources(memory_mb, cpu_s)
    _landlock(libc)
    _seccomp()


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


def _main(src, spec):
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
    _RESULT_FD = os.dup(1)  # the protocol's channel; what the code prints goes to /dev/null
    _null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(_null, 1)
    os.close(_null)
    _emit("started")
    with open("solution.py", encoding="utf-8") as f:
        _src = f.read()
    with open("tests.json", encoding="utf-8") as f:
        _spec = json.load(f)
    try:
        _isolate(int(sys.argv[1]), int(sys.argv[2]))
    except Unavailable as exc:
        _emit({"unavailable": str(exc)})
        sys.exit(0)
    except Exception as exc:  # noqa: BLE001 - any failure to isolate means no run
        _emit({"unavailable": "%s: %s" % (type(exc).__name__, exc)})
        sys.exit(0)
    try:
        _emit(dict(zip(("passed", "reason"), _main(_src, _spec))))
    except MemoryError:
        _emit({"passed": False, "reason": "memory limit exceeded"})
    except RecursionError:
        _emit({"passed": False, "reason": "recursion limit exceeded"})
    except BaseException as exc:
        _emit({"passed": False, "reason": "error: %s: %s" % (type(exc).__name__, str(exc)[:200])})
