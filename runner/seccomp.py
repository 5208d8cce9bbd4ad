"""A seccomp-BPF filter, built by hand, that denies the system calls a snippet never needs.

# NOTE [Why a hand-built filter]
# libseccomp's own Python binding (``seccomp``) is not on PyPI; ``pyseccomp`` (0.1.2, 2021)
# is a ctypes wrapper that still needs the C library ``libseccomp.so.2`` on every machine.
# The filter we need is a short deny list, so it is assembled here as classic BPF and
# installed with prctl(2) through ctypes: no dependency at all. It checks the architecture
# first (a foreign ABI is killed, and x86-64's x32 calls are denied), then answers denied
# calls with EPERM so that Python raises a readable ``PermissionError``
# instead of the process dying. Process creation is denied (``clone`` without
# ``CLONE_THREAD``, ``fork``, ``vfork``); threads stay allowed. ``clone3`` answers ENOSYS,
# because its flags live in memory a filter cannot read, and glibc then falls back to
# ``clone``.
"""

from __future__ import annotations

import ctypes
import errno
import platform
import struct

from . import linux

__all__ = ["DENIED", "available", "install"]

DENIED = (
    "socket",
    "socketpair",
    "connect",
    "accept",
    "accept4",
    "bind",
    "listen",
    "fork",
    "vfork",
    "execve",
    "execveat",
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "pidfd_getfd",
    "kcmp",
    "mount",
    "umount2",
    "pivot_root",
    "chroot",
    "unshare",
    "setns",
    "bpf",
    "keyctl",
    "add_key",
    "request_key",
    "perf_event_open",
    "userfaultfd",
    "kexec_load",
    "kexec_file_load",
    "init_module",
    "finit_module",
    "delete_module",
    "reboot",
    "swapon",
    "swapoff",
    "acct",
    "quotactl",
    "open_by_handle_at",
    "name_to_handle_at",
    "iopl",
    "ioperm",
    "personality",
    "syslog",
    "sethostname",
    "setdomainname",
    "settimeofday",
    "clock_settime",
    "adjtimex",
    "clock_adjtime",
    "lookup_dcookie",
    "migrate_pages",
    "move_pages",
    "fanotify_init",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "open_tree",
    "move_mount",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "mount_setattr",
    "process_madvise",
    "landlock_create_ruleset",
)

_AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
_X32_BIT = 0x40000000
_CLONE_THREAD = 0x00010000

_LD_W_ABS = 0x20
_JEQ = 0x15
_JGE = 0x35
_JSET = 0x45
_RET = 0x06
_RET_KILL_PROCESS = 0x80000000
_RET_ERRNO = 0x00050000
_RET_ALLOW = 0x7FFF0000
_OFF_NR, _OFF_ARCH, _OFF_ARG0 = 0, 4, 16

_PR_SET_SECCOMP = 22
_SECCOMP_MODE_FILTER = 2


class _SockFilter(ctypes.Structure):
    _fields_ = [
        ("code", ctypes.c_ushort),
        ("jt", ctypes.c_ubyte),
        ("jf", ctypes.c_ubyte),
        ("k", ctypes.c_uint),
    ]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_SockFilter))]


def available() -> bool:
    """Tell whether this machine's architecture has a filter here."""
    return platform.machine() in _AUDIT_ARCH and bool(linux.SYSCALLS)


def _program() -> list[str | tuple[int, int | str, int | str, int]]:
    """Return the filter: (code, jump-if-true, jump-if-false, k) instructions and label strings."""
    nrs = linux.SYSCALLS
    prog: list[str | tuple[int, int | str, int | str, int]] = [
        (_LD_W_ABS, 0, 0, _OFF_ARCH),
        (_JEQ, 1, 0, _AUDIT_ARCH[platform.machine()]),
        (_RET, 0, 0, _RET_KILL_PROCESS),
        (_LD_W_ABS, 0, 0, _OFF_NR),
    ]
    if platform.machine() == "x86_64":
        prog.append((_JGE, "deny", 0, _X32_BIT))
    prog.append((_JEQ, "enosys", 0, nrs["clone3"]))
    prog.append((_JEQ, "clone", 0, nrs["clone"]))
    prog += [(_JEQ, "deny", 0, nrs[name]) for name in DENIED if name in nrs]
    prog += [
        (_RET, 0, 0, _RET_ALLOW),
        "clone",
        (_LD_W_ABS, 0, 0, _OFF_ARG0),
        (_JSET, 0, "deny", _CLONE_THREAD),
        (_RET, 0, 0, _RET_ALLOW),
        "enosys",
        (_RET, 0, 0, _RET_ERRNO | errno.ENOSYS),
        "deny",
        (_RET, 0, 0, _RET_ERRNO | errno.EPERM),
    ]
    return prog


def _assemble() -> bytes:
    """Resolve labels to relative jumps and pack the instructions."""
    labels: dict[str, int] = {}
    body: list[tuple[int, int | str, int | str, int]] = []
    for ins in _program():
        if isinstance(ins, str):
            labels[ins] = len(body)
        else:
            body.append(ins)
    out = bytearray()
    for pc, (code, jt, jf, k) in enumerate(body):
        jumps = [labels[j] - pc - 1 if isinstance(j, str) else j for j in (jt, jf)]
        if not all(0 <= j <= 255 for j in jumps):
            raise ValueError("seccomp jump out of range")
        out += struct.pack("=HBBI", code, jumps[0], jumps[1], k)
    return bytes(out)


def install() -> None:
    """Install the filter on the calling thread and every thread or process it starts.

    Sets ``no_new_privs`` first (required without ``CAP_SYS_ADMIN``). Irreversible.
    """
    code = _assemble()
    count = len(code) // ctypes.sizeof(_SockFilter)
    filters = (_SockFilter * count).from_buffer_copy(code)
    prog = _SockFprog(count, ctypes.cast(filters, ctypes.POINTER(_SockFilter)))
    linux.prctl(linux.PR_SET_NO_NEW_PRIVS, 1)
    linux.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.addressof(prog))
