"""Run a command the way a default container pod runs it, as far as the grading sandbox can tell.

``python podlike.py -- COMMAND [ARGS...]`` sets ``no_new_privs`` and installs a seccomp filter that
refuses new namespaces, then executes COMMAND. That is what stops bubblewrap in a Docker container or
a Kubernetes pod with the runtime's default seccomp profile (moby's ``profiles/seccomp/default.json``,
which containerd and CRI-O's ``RuntimeDefault`` follow: ``unshare``, ``setns`` and ``clone`` with a
``CLONE_NEW*`` flag are allowed only to a process holding CAP_SYS_ADMIN, which a pod's process does
not; ``clone3`` answers ENOSYS so the C library falls back to ``clone``). ``no_new_privs`` is what
``allowPrivilegeEscalation: false`` (Zero to JupyterHub's default for user pods) sets.

The local hub starts the instructor's named server ``pod`` through this (``localhub.py --pod-server``,
the hub test), so that the split "hub server without a sandbox, grading host with one" runs on one
machine. The filter is inherited by every process the server starts, the grader's bubblewrap included.
Only the namespace calls are refused: the server, its kernels and its terminals work as usual.
"""

from __future__ import annotations

import ctypes
import os
import platform
import struct
import sys

PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
# linux/sched.h: the namespace flags a clone() may carry (CLONE_NEWTIME shares its bit with the exit
# signal in clone()'s flags, so only unshare() and clone3() could ask for it; both are refused whole).
CLONE_NEW_ANY = (0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000
                 | 0x40000000)  # NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET
ARCHES = {  # audit architecture and system call numbers (asm/unistd.h)
    "x86_64": (0xC000003E, {"unshare": 272, "setns": 308, "clone": 56, "clone3": 435}),
    "aarch64": (0xC00000B7, {"unshare": 97, "setns": 268, "clone": 220, "clone3": 435}),
}


def namespace_filter(machine: str | None = None) -> bytes:
    """The seccomp program (classic BPF, as bytes) refusing new namespaces on ``machine``."""
    machine = machine or platform.machine()
    if machine not in ARCHES:
        raise SystemExit(f"podlike.py: no seccomp filter for the architecture {machine!r} "
                         f"(known: {', '.join(sorted(ARCHES))})")
    arch, nr = ARCHES[machine]
    LD, JEQ, JSET, JGE, RET = 0x20, 0x15, 0x45, 0x35, 0x06  # BPF_LD|W|ABS, BPF_JMP|JEQ|K, ..., BPF_RET|K
    ALLOW, KILL, ERRNO = 0x7FFF0000, 0x80000000, 0x00050000
    EPERM, ENOSYS = 1, 38
    # struct seccomp_data: u32 nr (offset 0), u32 arch (4), u64 ip (8), u64 args[6] (16...).
    program = [(LD, 0, 0, 4), (JEQ, 1, 0, arch), (RET, 0, 0, KILL),   # another ABI: refuse outright
               (LD, 0, 0, 0), (JGE, 0, 1, 0x40000000), (RET, 0, 0, ERRNO | ENOSYS)]  # no x32 numbers
    for name in ("unshare", "setns"):
        program += [(JEQ, 0, 1, nr[name]), (RET, 0, 0, ERRNO | EPERM)]
    program += [(JEQ, 0, 1, nr["clone3"]), (RET, 0, 0, ERRNO | ENOSYS)]
    # clone(): its flags are the first argument, the low 32 bits at offset 16 (little-endian).
    program += [(JEQ, 0, 3, nr["clone"]), (LD, 0, 0, 16), (JSET, 0, 1, CLONE_NEW_ANY),
                (RET, 0, 0, ERRNO | EPERM), (RET, 0, 0, ALLOW)]
    return b"".join(struct.pack("=HBBI", code, jt, jf, k) for code, jt, jf, k in program)


def confine() -> None:
    """Set no_new_privs and install :func:`namespace_filter` on this process (and its children)."""
    libc = ctypes.CDLL(None, use_errno=True)
    program = namespace_filter()

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_char_p)]

    prog = SockFprog(len(program) // 8, program)
    for args in ((PR_SET_NO_NEW_PRIVS, ctypes.c_ulong(1), ctypes.c_ulong(0)),
                 (PR_SET_SECCOMP, ctypes.c_ulong(SECCOMP_MODE_FILTER), ctypes.byref(prog))):
        if libc.prctl(args[0], *args[1:], ctypes.c_ulong(0), ctypes.c_ulong(0)) != 0:
            error = ctypes.get_errno()
            raise SystemExit(f"podlike.py: prctl({args[0]}) failed: {os.strerror(error)}")


def main(argv: list) -> None:
    if argv[:1] == ["--"]:
        argv = argv[1:]
    if not argv:
        raise SystemExit("usage: podlike.py -- COMMAND [ARGS...]  (COMMAND is required)")
    confine()
    os.execvp(argv[0], argv)


if __name__ == "__main__":
    main(sys.argv[1:])
