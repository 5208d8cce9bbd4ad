"""Hostile snippets: each one is contained, and its user gets a clear status and message.

Every case runs on the shared strict pool. After each, the workers are the same live
processes and no sandboxed process other than the workers' standby children exists; the
last test checks that the pool still runs an ordinary snippet.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from engine.events import Event, Limits
from runner.sandbox import SCRATCH
from tests.conftest import ROOT, case_source

from .conftest import SECRET, PoolDriver, alive, finished, outputs, sandbox_processes

Check = Callable[[list[Event], Any], None]


@dataclass
class Hostile:
    name: str
    source: str
    status: str
    check: Check
    limits: Limits = field(default_factory=lambda: Limits(timeout_s=3.0))


def _error(exc_type: str, *words: str) -> Check:
    def check(events: list[Event], end: Any) -> None:
        errors = [e for e in events if e.type == "error"]
        assert errors and errors[-1].exc_type == exc_type, errors
        for word in words:
            assert word in end.message, end.message

    return check


def _at_line(events: list[Event], exc_type: str, line: int) -> None:
    error = [e for e in events if e.type == "error"][-1]
    assert (error.exc_type, error.line) == (exc_type, line), error
    assert f"line {line}, in <module>" in error.traceback, error.traceback


def _message(*words: str) -> Check:
    def check(events: list[Event], end: Any) -> None:
        for word in words:
            assert word in end.message, end.message

    return check


def _printed(*lines: str) -> Check:
    def check(events: list[Event], end: Any) -> None:
        text = outputs(events)
        for line in lines:
            assert line in text, text

    return check


def _both(*checks: Check) -> Check:
    def check(events: list[Event], end: Any) -> None:
        for c in checks:
            c(events, end)

    return check


def _bounded_output(events: list[Event], end: Any) -> None:
    assert sum(len(e.text) for e in events if e.type == "output") <= Limits().max_output_bytes
    assert any(e.type == "limit" and e.what == "output" for e in events)
    assert "time limit" in end.message


def _ops_capped(events: list[Event], end: Any) -> None:
    assert sum(e.type == "op" for e in events) <= 200
    assert any(e.type == "limit" and e.what == "ops" for e in events)


def _no_forged_event(events: list[Event], end: Any) -> None:
    assert not any(e.type == "run_finished" and "forged" in e.message for e in events)
    assert [e.type for e in events].count("run_finished") == 1


_SYSCALL = "import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\n"

CASES = [
    # an error whose message is one 100,000-letter word: the hints' patterns backtracked over
    # it past the time limit, and the run ended `timeout`, its learner told the code was slow
    Hostile(
        "long_error_message",
        "raise ValueError('y' * 100_000)\n",
        "error",
        _error("ValueError", "ValueError: yyyy"),
    ),
    Hostile(
        "infinite_loop",
        "while True:\n    pass\n",
        "timeout",
        _message("1 s time limit"),
        Limits(timeout_s=1.0),
    ),
    Hostile(
        "sleep_past_wall_time",
        "import time\ntime.sleep(60)\n",
        "timeout",
        _message("1 s time limit"),
        Limits(timeout_s=1.0),
    ),
    Hostile(
        "catch_sigxcpu",
        "import signal\nsignal.signal(signal.SIGXCPU, lambda *a: print('caught'))\nwhile True:\n    pass\n",
        "timeout",
        _message("time limit"),
        Limits(timeout_s=1.0),
    ),
    Hostile(
        "fork_bomb",
        "import os\nwhile True:\n    os.fork()\n",
        "error",
        _error("PermissionError", "Operation not permitted"),
    ),
    Hostile(
        "thread_bomb",
        "import threading, time\nn = 0\ntry:\n    while True:\n"
        "        threading.Thread(target=time.sleep, args=(30,), daemon=True).start()\n        n += 1\n"
        "finally:\n    print('threads', n)\n",
        "error",
        _both(_error("RuntimeError", "can't start new thread"), _printed("threads ")),
    ),
    Hostile("huge_bytearray", "b = bytearray(10**10)\n", "limit", _message("ran out of memory", "1536 MiB")),
    Hostile(
        "huge_torch_empty",
        "import torch\nt = torch.empty(10**12)\n",
        "limit",
        _message("ran out of memory", "can't allocate memory"),
    ),
    Hostile(
        "leak_loop",
        "import torch\nkeep = []\nwhile True:\n    keep.append(torch.ones(10**7))\n",
        "limit",
        _message("ran out of memory"),
        Limits(timeout_s=8.0),
    ),
    Hostile(
        "memory_limit_is_per_run",
        "b = bytearray(400 * 2**20)\n",
        "limit",
        _message("at most 256 MiB"),
        Limits(timeout_s=3.0, memory_mb=256),
    ),
    Hostile(
        "autograd_graph_bomb",
        "import torch\nx = torch.ones(1000, requires_grad=True)\ny = x\n"
        "for i in range(10**7):\n    y = y * 1.0000001\n",
        "timeout",
        _ops_capped,
        Limits(timeout_s=3.0, max_ops=200, max_nodes=200),
    ),
    Hostile(
        "recursion_bomb",
        "def f(n):\n    return f(n + 1)\nf(0)\n",
        "error",
        _error("RecursionError", "maximum recursion depth"),
    ),
    Hostile(
        # a recursion through tensor ops: the op hit the limit while its event was written,
        # the numbers skipped one and the pool killed the run as an invalid stream (hunt 64)
        "recursion_bomb_through_tensor_ops",
        "import torch\nx = torch.ones(2, requires_grad=True)\ndef f(x):\n    return f(x * 2)\nf(x)\n",
        "error",
        _error("RecursionError", "maximum recursion depth"),
    ),
    Hostile(
        "os_system",
        "import os\nprint(os.system('touch /tmp/pwned; echo hi'))\nprint(os.path.exists('/tmp/pwned'))\n",
        "ok",
        _printed("32512\nFalse\n"),
    ),
    Hostile(
        "subprocess",
        "import subprocess\nsubprocess.run(['ls'])\n",
        "error",
        _error("PermissionError", "Operation not permitted"),
    ),
    Hostile(
        "execv",
        "import os\nos.execv('/bin/sh', ['sh', '-c', 'echo hi'])\n",
        "error",
        _error("PermissionError", "Operation not permitted"),
    ),
    Hostile(
        "null_dereference",
        "import ctypes\nctypes.string_at(0)\n",
        "crashed",
        _message("segmentation fault", "SIGSEGV"),
    ),
    Hostile(
        "socket",
        "import socket\nsocket.create_connection(('127.0.0.1', 22))\n",
        "error",
        _error("PermissionError", "Operation not permitted"),
    ),
    Hostile(
        "raw_socket_syscall",
        _SYSCALL + "print(libc.syscall(41, 2, 1, 0), os.strerror(ctypes.get_errno()))\n",
        "ok",
        _printed("-1 Operation not permitted"),
    ),
    Hostile(
        "ptrace",
        _SYSCALL + "print(libc.ptrace(16, 1, 0, 0), os.strerror(ctypes.get_errno()))\n",
        "ok",
        _printed("-1 Operation not permitted"),
    ),
    Hostile(
        "nested_namespaces",
        _SYSCALL + "for flag in (0x10000000, 0x20000, 0x40000000):\n"
        "    print(libc.unshare(flag), os.strerror(ctypes.get_errno()))\nos.chroot('/tmp')\n",
        "error",
        _both(_printed("-1 Operation not permitted\n" * 3), _error("PermissionError")),
    ),
    Hostile(
        "mount_proc_or_tmpfs",
        _SYSCALL + "print(libc.mount(b'x', b'/tmp', b'tmpfs', 0, None), os.strerror(ctypes.get_errno()))\n",
        "ok",
        _printed("-1 Operation not permitted"),
    ),
    Hostile("become_root", "import os\nos.setuid(0)\n", "error", lambda events, end: _refused(events)),
    Hostile(
        "raise_own_limits",
        "import resource\nresource.setrlimit(resource.RLIMIT_AS, (2**40, 2**40))\n",
        "error",
        _error("ValueError", "not allowed to raise maximum limit"),
    ),
    Hostile(
        "daemonise",
        "import os\nos.setsid()\nif os.fork():\n    os._exit(0)\n",
        "error",
        _error("PermissionError"),
    ),
    Hostile(
        "thread_outliving_the_run",
        "import threading, time\nthreading.Thread(target=time.sleep, "
        "args=(100,)).start()\nprint('started')\n",
        "ok",
        _printed("started"),
    ),
    Hostile(
        "output_flood",
        "while True:\n    print('x' * 1000)\n",
        "timeout",
        _bounded_output,
        Limits(timeout_s=1.5),
    ),
    Hostile(
        "raw_fd_flood_and_binary_junk",
        "import os\nfor _ in range(5000):\n"
        "    os.write(1, bytes(range(256)) * 40)\n    os.write(2, b'\\xff\\xfe\\x00 junk')\nprint('done')\n",
        "ok",
        lambda events, end: _printed("done")(events, end) or _no_junk(events),
    ),
    Hostile(
        "forged_frame_on_stdout",
        "import os, json, struct\nframe = json.dumps({'seq': 1, 'type': "
        "'run_finished', 'status': 'ok', 'message': 'forged'}).encode()\n"
        "os.write(1, struct.pack('>I', len(frame)) + frame)\nprint(frame.decode())\n"
        "raise ValueError('real error')\n",
        "error",
        _both(_no_forged_event, _error("ValueError", "real error"), _printed('"message": "forged"')),
    ),
    Hostile(
        "forged_frame_on_the_event_pipe",
        "import os, json, struct\nframe = json.dumps({'seq': 99, 'type': "
        "'run_finished', 'status': 'ok', 'message': 'forged'}).encode()\n"
        "os.write(3, struct.pack('>I', len(frame)) + frame)\nimport time\ntime.sleep(1)\n",
        "error",
        _both(_no_forged_event, _message("event stream was invalid", "99")),
    ),
    Hostile(
        "oversized_frame_on_the_event_pipe",
        "import os, struct\nos.write(3, struct.pack('>I', 2**31))\nimport time\ntime.sleep(1)\n",
        "limit",
        _message("bytes (the cap is"),
    ),
    Hostile(
        "atexit_tricks",
        "import atexit, time\natexit.register(time.sleep, 100)\n"
        "atexit.register(print, 'atexit ran')\nprint('body done')\n",
        "ok",
        lambda events, end: _printed("body done")(events, end) or _not_printed("atexit ran")(events, end),
    ),
    Hostile(
        "os_exit", "import os\nos._exit(0)\n", "crashed", _message("exited (code 0) before the run finished")
    ),
    Hostile(
        "close_the_event_pipe",
        "import os\nos.close(3)\nprint('x')\n",
        "crashed",
        _message("before the run finished"),
    ),
    Hostile("sys_exit", "import sys\nsys.exit(3)\n", "error", _message("SystemExit: 3")),
    # the worker ignores SIGINT (a cancel kills the child): only the snippet raises this, and it
    # was reported as "cancelled: interrupted", as if the user had pressed Stop
    Hostile(
        "raise_keyboard_interrupt",
        "print('a')\nraise KeyboardInterrupt('from the snippet')\n",
        "error",
        _error("KeyboardInterrupt", "KeyboardInterrupt: from the snippet"),
    ),
    # closing the snippet's stdout and printing: the error at its line, not a second
    # ValueError from gradwalk's own flush with no line and no traceback
    Hostile(
        "print_after_closing_stdout",
        "import sys\nprint('a')\nsys.stdout.close()\nprint('x')\n",
        "error",
        lambda events, end: _at_line(events, "ValueError", 4),
    ),
    Hostile(
        "fill_scratch",
        "n = 0\ntry:\n    with open('big', 'wb') as f:\n        while True:\n"
        "            f.write(b'x' * (1 << 20))\n            f.flush()\n            n += 1\n"
        "except OSError as e:\n    print('stopped after', n, 'MiB:', e.strerror)\n",
        "ok",
        _printed("stopped after 32 MiB: File too large"),
    ),
    Hostile(
        "write_outside_scratch",
        "import os\nfor p in ['/usr/x', '/dev/shm/x', '/x', '/etc/passwd', "
        f"'/proc/sys/kernel/hostname', {str(ROOT / '.venv' / 'x')!r}, '{SCRATCH}/ok']:\n"
        "    try:\n        open(p, 'w').close()\n        print('wrote', p)\n"
        "    except OSError as e:\n        print('refused', p, e.strerror)\n",
        "ok",
        lambda events, end: _check_writes(outputs(events)),
    ),
    Hostile(
        "read_secrets_and_server_files",
        "import os\nprint(sorted(os.environ))\n"
        f"print(os.environ.get('GRADWALK_TEST_SECRET'))\nfor p in [{str(ROOT / 'pyproject.toml')!r}, "
        f"{str(ROOT / 'server')!r}, {str(ROOT / 'engine' / 'run.py')!r}, '/etc/shadow', '/root/.ssh', "
        "'/home', '/var', '/sys/class']:\n    print(p, os.path.exists(p))\n"
        f"print(os.listdir({str(ROOT)!r}) if os.path.exists({str(ROOT)!r}) else [])\ntry:\n    print(open('/proc/1/environ').read().count('SECRET'))\n"
        "except OSError:\n    print(0)\n",
        "ok",
        lambda events, end: _check_secrets(outputs(events)),
    ),
    Hostile(
        "kill_other_processes_and_the_worker",
        "import os, signal\n"
        "print('visible', sorted(int(p) for p in os.listdir('/proc') if p.isdigit()))\n"
        "for pid in WORKERS:\n    try:\n        os.kill(pid, signal.SIGKILL)\n    except OSError as e:\n"
        "        print('kill', e.strerror)\ntry:\n    os.kill(-1, signal.SIGKILL)\nexcept OSError as e:\n"
        "    print('kill -1', e.strerror)\nos.kill(1, signal.SIGKILL)\nprint('still here', os.getpid())\n",
        "ok",
        _printed("visible [1]\n", "kill No such process\n", "kill -1 No such process", "still here 1"),
    ),
]


def _refused(events: list[Event]) -> None:
    # PermissionError as a plain uid; EINVAL in a user namespace, where uid 0 does not exist.
    errors = [e for e in events if e.type == "error"]
    assert errors[-1].exc_type in ("PermissionError", "OSError") and "Errno" in errors[-1].message


def _no_junk(events: list[Event]) -> None:
    assert "junk" not in outputs(events)


def _not_printed(text: str) -> Check:
    def check(events: list[Event], end: Any) -> None:
        assert text not in outputs(events)

    return check


def _check_writes(text: str) -> None:
    lines = text.splitlines()
    assert lines[-1] == f"wrote {SCRATCH}/ok", text
    assert all(line.startswith("refused") for line in lines[:-1]), text
    assert "Read-only file system" in text


_KEPT_IN_ROOT = sorted(
    p.name for p in ROOT.iterdir() if p.is_dir() and Path(sys.prefix).resolve().is_relative_to(p.resolve())
)


def _check_secrets(text: str) -> None:
    assert SECRET not in text and "GRADWALK" not in text
    assert "None" in text.splitlines()[1]
    assert " True" not in text, text
    # the project's folder is hidden but for the virtual environment the run needs, if it is there
    assert text.splitlines()[-2] == str(_KEPT_IN_ROOT), text
    assert text.splitlines()[-1] == "0"


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_hostile_snippet_is_contained(driver: PoolDriver, case: Hostile) -> None:
    workers = sorted(driver.pool.worker_pids)
    source = case.source.replace("WORKERS", repr(workers))
    events, handle = driver.run(source, limits=case.limits)
    end = finished(events)
    assert (end.status, handle.status) == (case.status, case.status), end.message
    case.check(events, end)
    assert sorted(driver.pool.worker_pids) == workers and all(alive(pid) for pid in workers)
    driver.call(_settle())
    assert len(sandbox_processes(workers)) <= len(workers), "a sandboxed process outlived its run"


async def _settle() -> None:
    import asyncio

    await asyncio.sleep(0.2)


def test_nothing_persists_between_runs(driver: PoolDriver) -> None:
    events, _ = driver.run(
        f"open('{SCRATCH}/marker', 'w').write('x')\nimport os\nprint(sorted(os.listdir('.')))\n"
    )
    assert outputs(events) == "['marker']\n"
    for _ in range(driver.pool.workers + 1):  # whichever worker serves it, the scratch is fresh
        events, _ = driver.run(
            f"import os\nprint(os.getcwd(), os.listdir('.'), os.path.exists('{SCRATCH}/marker'))\n"
        )
        assert outputs(events) == f"{SCRATCH} [] False\n"


def test_pool_is_healthy_after_the_hostile_suite(driver: PoolDriver) -> None:
    report = driver.pool.isolation_report()
    assert all(report.values()), report
    events, handle = driver.run(case_source("cubic.py"))
    assert finished(events).status == "ok" and handle.status == "ok"
    assert [e.grad.flat for e in events if e.type == "tensor_final"] == [[14.75]]
