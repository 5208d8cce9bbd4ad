"""Wall one forked child off from everything but its own run, in layers.

:func:`enter` runs in the child right after ``fork()``, before the snippet, and applies
the layers in an order where each step still has the rights it needs: file descriptors,
namespaces, a new root file system, host name, environment, rlimits, a non-root uid, and
seccomp last (it denies ``mount`` and friends). :func:`runner.probe.verify` then checks
every layer from the inside, the way a snippet would meet it.

# NOTE [The sandbox's file system]
# The child pivots into a fresh tmpfs root that holds only what running PyTorch needs,
# bind-mounted read-only: /usr and the /lib* directories, the Python installation and the
# virtual environment. Everything else (the app's own files, the server's data, /root,
# /home, /etc, /sys, the host's /tmp) is simply absent, so nothing has to be remembered to
# be hidden. A path to hide that lies inside a kept one (the project folder around its
# .venv) gets an empty tmpfs laid over it. /proc is a fresh mount of the child's own pid
# namespace, /dev holds null, zero, full, random and urandom, and /dev/shm is an empty
# read-only folder. The whole tree is made read-only recursively; the only writable place
# is a small fresh tmpfs at /tmp, which is the working directory and vanishes with the run.
"""

from __future__ import annotations

import ctypes
import errno
import glob
import math
import os
import resource
import signal
import sys
import tempfile
from collections.abc import Callable
from typing import Any

from . import linux, seccomp

__all__ = [
    "ENV",
    "EVENT_FD",
    "LAYERS",
    "NPROC",
    "REQUEST_FD",
    "SCRATCH",
    "SandboxError",
    "enter",
    "limit_run",
]

LAYERS = (
    "namespaces",
    "user_namespace",
    "readonly_fs",
    "scratch_tmpfs",
    "hidden_files",
    "non_root_uid",
    "env_scrubbed",
    "fds_closed",
    "rlimits",
    "seccomp",
)

EVENT_FD = 3
REQUEST_FD = 4


def _pick_scratch() -> str:
    # The scratch tmpfs is laid over /tmp, unless the Python installation or venv the
    # child needs lives under /tmp (a checkout in /tmp): it would be hidden, so the
    # scratch moves to /scratch and /tmp stays part of the read-only tree.
    roots = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
    return "/scratch" if any(r == "/tmp" or r.startswith("/tmp/") for r in roots) else "/tmp"


SCRATCH = _pick_scratch()
NPROC = 64
NOFILE = 256
_PROC_READONLY = ("sys", "sysrq-trigger", "irq", "bus", "fs", "kcore")
_DEV_NODES = ("null", "zero", "full", "random", "urandom")
ENV = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "HOME": SCRATCH,
    "TMPDIR": SCRATCH,
    "LANG": "C.UTF-8",
    "USER": "gradwalk",
    "LOGNAME": "gradwalk",
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
}
_NS_FLAGS = linux.CLONE_NEWNS | linux.CLONE_NEWNET | linux.CLONE_NEWIPC | linux.CLONE_NEWUTS
_AT_FDCWD = -100
_AT_RECURSIVE = 0x8000
_MOUNT_ATTR_RDONLY = 0x1
_MOUNT_ATTR_NOSUID = 0x2


class SandboxError(Exception):
    """A layer could not be applied in strict mode."""


class _MountAttr(ctypes.Structure):
    _fields_ = [
        ("attr_set", ctypes.c_uint64),
        ("attr_clr", ctypes.c_uint64),
        ("propagation", ctypes.c_uint64),
        ("userns_fd", ctypes.c_uint64),
    ]


def enter(
    config: dict[str, Any],
    event_fd: int,
    request_fd: int | None = None,
    before_walls: Callable[[], None] | None = None,
) -> dict[str, str]:
    """Apply every layer to the calling (freshly forked) process; return the failures.

    ``config`` comes from the worker: ``strict``, ``uid``, ``keep`` and ``hide`` (paths),
    ``scratch_mb``, ``gpu`` and ``userns`` (the worker already is root in its own user
    namespace). The event pipe becomes fd 3 and ``request_fd`` (if any) fd 4; every other
    descriptor is closed. The per-run rlimits come later, from :func:`limit_run`. In strict
    mode the first failure raises :class:`SandboxError`; otherwise the result maps each
    layer that failed to why. ``before_walls`` runs once the descriptors are the sandbox's
    and before any other layer: what it opens stays open (a GPU child opens CUDA there,
    see NOTE [CUDA opened before the walls] in :mod:`runner.child`).
    """
    failures: dict[str, str] = {}

    def step(layer: str, fn: Callable[[], None]) -> None:
        try:
            fn()
        except Exception as exc:
            if config["strict"]:
                raise SandboxError(f"{layer}: {exc}") from exc
            failures.setdefault(layer, f"{type(exc).__name__}: {exc}")

    linux.prctl(linux.PR_SET_PDEATHSIG, signal.SIGKILL)
    _own_fds(event_fd, request_fd)
    if before_walls is not None:
        before_walls()
    step("namespaces", lambda: linux.unshare(_NS_FLAGS))
    if "namespaces" not in failures:
        step("readonly_fs", lambda: _build_root(config))
        step("namespaces", lambda: linux.sethostname("gradwalk"))
    else:
        failures["readonly_fs"] = failures["hidden_files"] = failures["scratch_tmpfs"] = "no mount namespace"
        step("scratch_tmpfs", lambda: os.chdir(SCRATCH))
    step("env_scrubbed", _scrub_env)
    step("rlimits", lambda: _set_rlimits(config))
    step("non_root_uid", lambda: _drop_user(config))
    # Set again: a change of uid clears the parent-death signal (see prctl(2)).
    linux.prctl(linux.PR_SET_PDEATHSIG, signal.SIGKILL)
    step("seccomp", seccomp.install)
    sys.path[:] = [
        p for p in sys.path if p and (_kept(p, config) or not any(under(p, h) for h in config["hide"]))
    ]
    return failures


def limit_run(config: dict[str, Any], timeout_s: float, memory_mb: int | None) -> None:
    """Set the rlimits that depend on the run: CPU seconds and address space.

    Only lowers limits, which needs no privilege, so it works after :func:`enter`.
    """
    cpu = math.ceil(timeout_s) + 1
    try:
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
        if memory_mb:
            resource.setrlimit(resource.RLIMIT_AS, (memory_mb << 20, memory_mb << 20))
    except (OSError, ValueError) as exc:
        if config["strict"]:
            raise SandboxError(f"rlimits: {exc}") from exc


def _own_fds(event_fd: int, request_fd: int | None) -> None:
    """Keep the event pipe (as fd 3) and the request pipe (fd 4); 0, 1 and 2 are /dev/null."""
    # Move both out of the way first so that neither dup2 clobbers the other.
    event_fd = os.dup(event_fd)
    request_fd = None if request_fd is None else os.dup(request_fd)
    os.dup2(event_fd, EVENT_FD)
    if request_fd is not None:
        os.dup2(request_fd, REQUEST_FD)
    null = os.open("/dev/null", os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.closerange(REQUEST_FD + 1 if request_fd is not None else EVENT_FD + 1, 1 << 20)


def _kept(path: str, config: dict[str, Any]) -> bool:
    return any(under(path, k) for k in config["keep"])


def under(path: str, top: str) -> bool:
    """Whether ``path`` is ``top`` or lies inside it."""
    return path == top or path.startswith(top.rstrip("/") + "/")


def _build_root(config: dict[str, Any]) -> None:
    """Pivot into a new read-only root holding only the kept paths (see the NOTE above)."""
    keep = [p for p in config["keep"] if os.path.exists(p)]
    hide = list(config["hide"])
    base = _mount_base(keep + hide)
    linux.mount(None, "/", None, linux.MS_REC | linux.MS_PRIVATE)
    linux.mount("gradwalk", base, "tmpfs", linux.MS_NOSUID | linux.MS_NODEV, "size=1m,mode=0755")
    mounted: list[tuple[str, bool]] = []  # (path, is a kept bind) in the order they were mounted
    hidden_tmpfs: list[str] = []

    def covering(path: str) -> bool | None:
        deepest = max((m for m in mounted if under(path, m[0])), key=lambda m: len(m[0]), default=None)
        return None if deepest is None else deepest[1]

    for path, kept in sorted([(p, True) for p in keep] + [(h, False) for h in hide]):
        inner = base + path
        if kept and covering(path) is not True:
            if os.path.islink(path):
                os.makedirs(os.path.dirname(inner), exist_ok=True)
                os.symlink(os.readlink(path), inner)
                continue
            _bind(path, inner, readonly=True)
            mounted.append((path, True))
        elif not kept and covering(path) is True and os.path.isdir(path):
            linux.mount("hidden", inner, "tmpfs", linux.MS_NOSUID | linux.MS_NODEV, "size=64k,mode=0755")
            mounted.append((path, False))
            hidden_tmpfs.append(inner)
    _make_dev(base, config.get("gpu", False))
    _make_etc(base, config["uid"])
    os.makedirs(base + "/proc", exist_ok=True)
    os.makedirs(base + SCRATCH, exist_ok=True)
    # Before the pivot: in a user namespace proc may be mounted only while one is visible.
    linux.mount("proc", base + "/proc", "proc", linux.MS_NOSUID | linux.MS_NODEV | linux.MS_NOEXEC)
    for sub in _PROC_READONLY:  # separate mounts, so they stay read-only even where /proc is not
        if os.path.exists(f"{base}/proc/{sub}"):
            linux.mount(f"{base}/proc/{sub}", f"{base}/proc/{sub}", None, linux.MS_BIND)
    if config.get("gpu") and os.path.isdir("/sys"):
        _bind("/sys", base + "/sys", readonly=True)
    os.chdir(base)
    linux.pivot_root(".", ".")
    linux.umount2(".", linux.MNT_DETACH)
    os.chdir("/")
    _readonly_tree("/", [h[len(base) :] for h in hidden_tmpfs])
    if config.get("userns"):
        # The top of /proc stays writable (to its file permissions; /proc/sys and the like
        # are read-only mounts of their own): the nested user namespace that _drop_user
        # makes writes its uid map there.
        linux.mount(
            None,
            "/proc",
            None,
            linux.MS_REMOUNT | linux.MS_BIND | linux.MS_NOSUID | linux.MS_NODEV | linux.MS_NOEXEC,
        )
    # In a user namespace the run's uid exists only in the nested namespace made later,
    # where this namespace's root (the owner here) appears as that uid.
    uid = os.getuid() if config.get("userns") else config["uid"]
    size = int(config["scratch_mb"]) * 1024 * 1024
    linux.mount(
        "scratch",
        SCRATCH,
        "tmpfs",
        linux.MS_NOSUID | linux.MS_NODEV,
        f"size={size},nr_inodes=4096,mode=0700,uid={uid},gid={uid}",
    )
    os.chdir(SCRATCH)


def _mount_base(paths: list[str]) -> str:
    """Pick an existing folder to build the new root on, one that holds none of ``paths``."""
    for candidate in ("/mnt", "/media", "/srv", "/opt", "/tmp", "/var/tmp", "/run"):
        if (
            os.path.isdir(candidate)
            and not os.path.islink(candidate)
            and not any(under(p, candidate) or under(candidate, p) for p in paths)
        ):
            return candidate
    raise OSError(errno.ENOENT, "no folder to build the sandbox root on")


def _bind(source: str, target: str, *, readonly: bool) -> None:
    if os.path.isdir(source):
        os.makedirs(target, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        if not os.path.exists(target):
            os.close(os.open(target, os.O_CREAT | os.O_WRONLY, 0o644))
    linux.mount(source, target, None, linux.MS_BIND | linux.MS_REC)
    if readonly:
        linux.mount(None, target, None, linux.MS_REMOUNT | linux.MS_BIND | linux.MS_RDONLY | linux.MS_NOSUID)


def _make_dev(base: str, gpu: bool) -> None:
    dev = base + "/dev"
    os.makedirs(dev, exist_ok=True)
    linux.mount("dev", dev, "tmpfs", linux.MS_NOSUID, "size=64k,mode=0755")
    nodes = [f"/dev/{n}" for n in _DEV_NODES]
    if gpu:
        nodes += glob.glob("/dev/nvidia*") + glob.glob("/dev/dri/*")
    for node in nodes:
        if os.path.exists(node):
            _bind(node, base + node, readonly=False)
    os.makedirs(dev + "/shm", exist_ok=True)
    os.symlink("/proc/self/fd", dev + "/fd")
    for i, name in enumerate(("stdin", "stdout", "stderr")):
        os.symlink(f"/proc/self/fd/{i}", f"{dev}/{name}")


def _make_etc(base: str, uid: int) -> None:
    etc = base + "/etc"
    os.makedirs(etc, exist_ok=True)
    files = {
        "passwd": f"root:x:0:0:root:/:/usr/sbin/nologin\ngradwalk:x:{uid}:{uid}:gradwalk:{SCRATCH}:/usr/sbin/nologin\n",
        "group": f"root:x:0:\ngradwalk:x:{uid}:\n",
        "hosts": "127.0.0.1 localhost gradwalk\n",
        "hostname": "gradwalk\n",
    }
    for name, text in files.items():
        with open(f"{etc}/{name}", "w") as fh:
            fh.write(text)
    for name in ("ld.so.cache", "localtime"):
        path = f"/etc/{name}"
        if os.path.islink(path):
            os.symlink(os.readlink(path), f"{etc}/{name}")
        elif os.path.isfile(path):
            _bind(path, f"{etc}/{name}", readonly=True)


def _readonly_tree(root: str, extra: list[str]) -> None:
    """Make every mount under ``root`` read-only and nosuid, recursively when the kernel can."""
    attr = _MountAttr(_MOUNT_ATTR_RDONLY | _MOUNT_ATTR_NOSUID, 0, 0, 0)
    nr = linux.SYSCALLS.get("mount_setattr")
    libc = ctypes.CDLL(None, use_errno=True)
    if (
        nr is not None
        and libc.syscall(
            ctypes.c_long(nr),
            ctypes.c_int(_AT_FDCWD),
            os.fsencode(root),
            ctypes.c_uint(_AT_RECURSIVE),
            ctypes.byref(attr),
            ctypes.c_size_t(ctypes.sizeof(attr)),
        )
        == 0
    ):
        return
    # Older kernels: remount the mounts we made one by one (binds were made read-only already).
    for path in [root, "/dev", "/proc", *extra]:
        linux.mount(None, path, None, linux.MS_REMOUNT | linux.MS_RDONLY | linux.MS_NOSUID)


def _scrub_env() -> None:
    os.environ.clear()
    os.environ.update(ENV)
    # tempfile read TMPDIR once, before the sandbox, and kept the answer: /tmp, read-only
    # where the scratch is /scratch (a checkout under /tmp). Forgotten, so temporary files
    # go to the scratch: a snippet's tempfile.mkdtemp(), TorchDynamo's cache under torch.cond
    tempfile.tempdir = None


def _set_rlimits(config: dict[str, Any]) -> None:
    limits = {
        resource.RLIMIT_FSIZE: (int(config["scratch_mb"]) << 20,) * 2,
        resource.RLIMIT_NOFILE: (NOFILE, NOFILE),
        resource.RLIMIT_NPROC: (NPROC, NPROC),
        resource.RLIMIT_CORE: (0, 0),
        resource.RLIMIT_MEMLOCK: (1 << 16, 1 << 16),
        resource.RLIMIT_MSGQUEUE: (0, 0),
    }
    for which, value in limits.items():
        resource.setrlimit(which, value)


def _drop_user(config: dict[str, Any]) -> None:
    """Become the run's own unprivileged uid, with no capabilities left."""
    uid = config["uid"]
    if config.get("userns"):
        # The worker is root only inside its user namespace; a nested one maps this
        # process's uid to ``uid`` so that it holds no capability anywhere that matters.
        outer_uid, outer_gid = os.getuid(), os.getgid()  # unmapped (65534) once inside
        linux.unshare(linux.CLONE_NEWUSER)
        for name, text in (
            ("setgroups", "deny"),
            ("uid_map", f"{uid} {outer_uid} 1"),
            ("gid_map", f"{uid} {outer_gid} 1"),
        ):
            with open(f"/proc/self/{name}", "w") as fh:
                fh.write(text)
        _clear_capabilities()
    else:
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
    if os.getuid() == 0 or os.geteuid() == 0:
        raise PermissionError("still root")


def _clear_capabilities() -> None:
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)
    data = (ctypes.c_uint32 * 6)()
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.capset(header, data) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
