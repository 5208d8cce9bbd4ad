"""The Linux system calls the sandbox needs that Python 3.11's ``os`` lacks, through ctypes.

Every wrapper raises ``OSError`` with the real errno on failure. Only the worker and its
children import this module.
"""

from __future__ import annotations

import ctypes
import os
import platform

__all__ = [
    "CLONE_NEWIPC",
    "CLONE_NEWNET",
    "CLONE_NEWNS",
    "CLONE_NEWPID",
    "CLONE_NEWUSER",
    "CLONE_NEWUTS",
    "MNT_DETACH",
    "MS_BIND",
    "MS_NODEV",
    "MS_NOEXEC",
    "MS_NOSUID",
    "MS_PRIVATE",
    "MS_RDONLY",
    "MS_REC",
    "MS_REMOUNT",
    "PR_SET_CHILD_SUBREAPER",
    "PR_SET_NO_NEW_PRIVS",
    "PR_SET_PDEATHSIG",
    "SYSCALLS",
    "mount",
    "pivot_root",
    "prctl",
    "sethostname",
    "setns",
    "umount2",
    "unshare",
]

CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000

MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REMOUNT = 32
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
MNT_DETACH = 2

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
PR_SET_NO_NEW_PRIVS = 38

# System call numbers, by machine, for the calls that glibc may not wrap or that the
# seccomp filter names. Unknown machines get no seccomp layer (the report says so).
_X86_64 = {
    "read": 0,
    "write": 1,
    "open": 2,
    "close": 3,
    "mmap": 9,
    "ioctl": 16,
    "socket": 41,
    "connect": 42,
    "accept": 43,
    "bind": 49,
    "listen": 50,
    "socketpair": 53,
    "clone": 56,
    "fork": 57,
    "vfork": 58,
    "execve": 59,
    "kill": 62,
    "ptrace": 101,
    "syslog": 103,
    "setsid": 112,
    "personality": 135,
    "chroot": 161,
    "acct": 163,
    "settimeofday": 164,
    "mount": 165,
    "umount2": 166,
    "swapon": 167,
    "swapoff": 168,
    "reboot": 169,
    "sethostname": 170,
    "setdomainname": 171,
    "iopl": 172,
    "ioperm": 173,
    "init_module": 175,
    "delete_module": 176,
    "quotactl": 179,
    "pivot_root": 155,
    "lookup_dcookie": 212,
    "kexec_load": 246,
    "add_key": 248,
    "request_key": 249,
    "keyctl": 250,
    "migrate_pages": 256,
    "unshare": 272,
    "move_pages": 279,
    "perf_event_open": 298,
    "fanotify_init": 300,
    "name_to_handle_at": 303,
    "open_by_handle_at": 304,
    "clock_adjtime": 305,
    "setns": 308,
    "process_vm_readv": 310,
    "process_vm_writev": 311,
    "kcmp": 312,
    "finit_module": 313,
    "bpf": 321,
    "execveat": 322,
    "userfaultfd": 323,
    "kexec_file_load": 320,
    "accept4": 288,
    "adjtimex": 159,
    "clock_settime": 227,
    "io_uring_setup": 425,
    "io_uring_enter": 426,
    "io_uring_register": 427,
    "open_tree": 428,
    "move_mount": 429,
    "fsopen": 430,
    "fsconfig": 431,
    "fsmount": 432,
    "fspick": 433,
    "clone3": 435,
    "pidfd_getfd": 438,
    "mount_setattr": 442,
    "process_madvise": 440,
    "landlock_create_ruleset": 444,
}
_AARCH64 = {
    "read": 63,
    "write": 64,
    "close": 57,
    "mmap": 222,
    "ioctl": 29,
    "socket": 198,
    "connect": 203,
    "accept": 202,
    "bind": 200,
    "listen": 201,
    "socketpair": 199,
    "clone": 220,
    "execve": 221,
    "kill": 129,
    "ptrace": 117,
    "syslog": 116,
    "setsid": 157,
    "personality": 92,
    "chroot": 51,
    "acct": 89,
    "settimeofday": 170,
    "mount": 40,
    "umount2": 39,
    "swapon": 224,
    "swapoff": 225,
    "reboot": 142,
    "sethostname": 161,
    "setdomainname": 162,
    "init_module": 105,
    "delete_module": 106,
    "quotactl": 60,
    "pivot_root": 41,
    "lookup_dcookie": 18,
    "kexec_load": 104,
    "add_key": 217,
    "request_key": 218,
    "keyctl": 219,
    "migrate_pages": 238,
    "unshare": 97,
    "move_pages": 239,
    "perf_event_open": 241,
    "fanotify_init": 262,
    "name_to_handle_at": 264,
    "open_by_handle_at": 265,
    "clock_adjtime": 266,
    "setns": 268,
    "process_vm_readv": 270,
    "process_vm_writev": 271,
    "kcmp": 272,
    "finit_module": 273,
    "bpf": 280,
    "execveat": 281,
    "userfaultfd": 282,
    "kexec_file_load": 294,
    "accept4": 242,
    "adjtimex": 171,
    "clock_settime": 112,
    "io_uring_setup": 425,
    "io_uring_enter": 426,
    "io_uring_register": 427,
    "open_tree": 428,
    "move_mount": 429,
    "fsopen": 430,
    "fsconfig": 431,
    "fsmount": 432,
    "fspick": 433,
    "clone3": 435,
    "pidfd_getfd": 438,
    "mount_setattr": 442,
    "process_madvise": 440,
    "landlock_create_ruleset": 444,
}
SYSCALLS: dict[str, int] = {"x86_64": _X86_64, "aarch64": _AARCH64}.get(platform.machine(), {})

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


def _check(result: int) -> int:
    if result == -1:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return result


def _path(value: str | None) -> bytes | None:
    return None if value is None else os.fsencode(value)


def unshare(flags: int) -> None:
    """Move the caller into new namespaces (``CLONE_NEW*`` flags)."""
    _check(_libc.unshare(ctypes.c_int(flags)))


def setns(fd: int, nstype: int) -> None:
    """Join the namespace that ``fd`` (an ``/proc/*/ns/*`` file) names."""
    _check(_libc.setns(ctypes.c_int(fd), ctypes.c_int(nstype)))


def mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    """Call mount(2)."""
    _check(_libc.mount(_path(source), _path(target), _path(fstype), ctypes.c_ulong(flags), _path(data)))


def umount2(target: str, flags: int) -> None:
    """Call umount2(2)."""
    _check(_libc.umount2(_path(target), ctypes.c_int(flags)))


def pivot_root(new_root: str, put_old: str) -> None:
    """Call pivot_root(2), which glibc does not wrap."""
    _check(_libc.syscall(ctypes.c_long(SYSCALLS["pivot_root"]), _path(new_root), _path(put_old)))


def prctl(option: int, arg2: int = 0, arg3: int = 0, arg4: int = 0, arg5: int = 0) -> int:
    """Call prctl(2) with integer arguments."""
    args = (ctypes.c_ulong(a) for a in (arg2, arg3, arg4, arg5))
    return _check(_libc.prctl(ctypes.c_int(option), *args))


def sethostname(name: str) -> None:
    """Set the host name of the caller's UTS namespace."""
    raw = name.encode()
    _check(_libc.sethostname(raw, ctypes.c_size_t(len(raw))))
