"""Snippets several engine tests record, and how they run without gradwalk."""

from __future__ import annotations

import contextlib
import io
import random
import re
import sys
import types
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import torch

from engine import queries as q
from engine import record
from engine.events import FullValue, Limits, Trace
from engine.process_settings import restore_settings, saved_settings
from engine.text import without_terminal_codes

_CORPUS_MARK = re.compile(r"^# ==== (\w+) ====$", re.MULTILINE)


def corpus(path: Path) -> dict[str, str]:
    """The snippets of a false-alarm hunt's corpus file by name (each opens with a line
    ``# ==== name ====``)."""
    text = path.read_text()
    found = list(_CORPUS_MARK.finditer(text))
    return {
        m.group(1): text[m.end() + 1 : found[i + 1].start() if i + 1 < len(found) else len(text)]
        for i, m in enumerate(found)
    }


def recorded_silently(source: str) -> Any:
    """Record ``source``, which must finish ``ok`` with no pitfall (a detector's near miss),
    and return its trace."""
    trace = record(source)
    assert trace.events[-1].status == "ok", trace.events[-1].message
    assert q.pitfalls(trace) == []
    return trace


def the_pitfall(source: str, kind: str, line: int, limits: Limits | None = None) -> Any:
    """Record ``source`` (with ``limits``), which must raise exactly one pitfall, of ``kind``
    at snippet ``line``, and print what it prints without gradwalk (a detector changes no
    number); return that pitfall event."""
    trace = record(source, limits=limits)
    found = q.pitfalls(trace)
    assert [(p.kind, p.line) for p in found] == [(kind, line)], [(p.kind, p.line, p.title) for p in found]
    with warnings.catch_warnings():  # plain PyTorch warns as the recorded run did
        warnings.simplefilter("ignore")
        assert q.stdout(trace) == plain_stdout(source)
    return found[0]


def plain_grads(source: str, names: list[str]) -> dict[str, Any]:
    """Run ``source`` without gradwalk, seeded as gradwalk seeds it; return ``.grad`` of each
    of ``names`` (an expression such as ``seq[0].weight``) as a flat list."""
    scope: dict[str, Any] = {"__name__": "__main__"}
    torch.manual_seed(0)
    with _settings_kept():
        exec(compile(source, "plain.py", "exec", dont_inherit=True), scope)
    return {name: eval(name, scope).grad.reshape(-1).tolist() for name in names}


def plain_stdout(source: str) -> str:
    """What ``source`` prints run without gradwalk, seeded as gradwalk seeds it."""
    torch.manual_seed(0)
    out = io.StringIO()
    with contextlib.redirect_stdout(out), _settings_kept():
        _run_as_main(source, "plain.py")
    return out.getvalue()


@contextlib.contextmanager
def _settings_kept() -> Iterator[None]:
    """Put back, after a plain run, the process-wide settings a snippet may change for good
    (the default dtype, print options, deterministic algorithms …), as a recorded run does
    (engine/process_settings.py): a test's plain run of a snippet that set the default dtype
    to float64 failed every test after it in the same worker."""
    settings = saved_settings()
    try:
        yield
    finally:
        restore_settings(settings)


def _run_as_main(source: str, filename: str) -> None:
    """Run ``source`` as ``python script.py`` does: its globals are the ``__main__`` module's."""
    with as_main() as scope:
        exec(compile(source, filename, "exec", dont_inherit=True), scope)


@contextlib.contextmanager
def as_main() -> Iterator[dict[str, Any]]:
    """The namespace of a fresh ``__main__`` module, installed as ``__main__`` while the block
    runs a snippet in it as ``python script.py`` would (the host's comes back after)."""
    main = types.ModuleType("__main__")
    host = sys.modules["__main__"]
    sys.modules["__main__"] = main
    try:
        yield main.__dict__
    finally:
        sys.modules["__main__"] = host


@contextlib.contextmanager
def plain_main() -> Iterator[dict[str, Any]]:
    """:func:`as_main` for a plain run, seeded as gradwalk seeds a run (``torch`` and
    ``random``), with the process-wide settings the snippet changes put back after."""
    torch.manual_seed(0)
    random.seed(0)
    with _settings_kept(), as_main() as scope:
        yield scope


def run_plain(
    source: str, seed: int | None = 0
) -> tuple[str, tuple[str, str, int | None] | None, dict[str, Any]]:
    """Run ``source`` without gradwalk, seeded as gradwalk seeds it (unless ``seed`` is None):
    what it printed, the exception that escaped it (type name, message, the snippet's line)
    or ``None``, and its module namespace."""
    out = io.StringIO()
    scope: dict[str, Any] = {"__name__": "__main__"}
    error = None
    if seed is not None:
        torch.manual_seed(seed)
    with contextlib.redirect_stdout(out), _settings_kept():
        try:
            exec(compile(source, "plain.py", "exec", dont_inherit=True), scope)
        except Exception as exc:  # the snippet's own error, whatever it is
            line = None
            tb = exc.__traceback__
            while tb is not None:
                if tb.tb_frame.f_code.co_filename == "plain.py":
                    line = tb.tb_lineno
                tb = tb.tb_next
            error = (type(exc).__name__, str(exc), line)
    return out.getvalue(), error, scope


def plain_error(source: str) -> BaseException:
    """The exception ``source`` raises when run without gradwalk (AssertionError if none)."""
    try:
        with _settings_kept():
            _run_as_main(source, "<plain>")
    except Exception as exc:  # the snippet's own error, whatever it is
        return exc
    raise AssertionError("the snippet did not raise")


def raised_as_plain(source: str, line: int) -> Any:
    """The error the recording of ``source`` ends with, checked to be the one plain PyTorch
    raises (type and message), at snippet line ``line``."""
    err = q.errors(record(source))[0]
    with warnings.catch_warnings():  # plain PyTorch warns as the recorded run did
        warnings.simplefilter("ignore")
        plain = plain_error(source)
    said = without_terminal_codes(str(plain))  # (as the recording tells it)
    assert (err.exc_type, err.message, err.line) == (type(plain).__name__, said, line), err
    return err


def hinted(source: str, line: int, phrases: Sequence[str]) -> Any:
    """The error ``source`` ends with, checked to be plain PyTorch's own at ``line``
    (:func:`raised_as_plain`) and to carry a hint that holds each of ``phrases``."""
    err = raised_as_plain(source, line)
    assert err.hint is not None, err
    for phrase in phrases:
        assert phrase in err.hint, (phrase, err.hint)
    return err


def fixed_runs(source: str, edits: Sequence[tuple[str, str]], printed: str | None = None) -> str:
    """``source`` with ``edits`` made in turn (each ``(wrong, right)``, ``wrong`` found first),
    checked to record without an error and to print what plain Python prints, which is
    ``printed`` where given; returns the fixed source."""
    fixed = source
    for wrong, right in edits:
        assert wrong in fixed, wrong
        fixed = fixed.replace(wrong, right)
    trace = record(fixed)
    assert q.errors(trace) == [], (edits, q.errors(trace))
    plain = plain_stdout(fixed)
    assert q.stdout(trace) == plain, edits
    assert printed is None or plain == printed, (plain, printed)
    return fixed


def gan_loop(iterations: int) -> str:
    """A GAN trained in the DCGAN tutorial's order: ``lossG.backward()`` adds into D's
    gradients too, which ``optD.zero_grad()`` clears before ``optD`` steps again; two
    optimizers, ``optD (SGD)`` and ``optG (Adam)``, step once each per iteration."""
    return f"""
import torch, torch.nn as nn
G = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
D = nn.Sequential(nn.Linear(2, 8), nn.ReLU(), nn.Linear(8, 1))
optG = torch.optim.Adam(G.parameters(), lr=1e-3, betas=(0.5, 0.999))
optD = torch.optim.SGD(D.parameters(), lr=1e-2, momentum=0.5)
bce = nn.BCEWithLogitsLoss()
real = torch.randn(16, 2) + 3
for i in range({iterations}):
    fake = G(torch.randn(16, 4))
    optD.zero_grad()
    lossD = bce(D(real), torch.ones(16, 1)) + bce(D(fake.detach()), torch.zeros(16, 1))
    lossD.backward()
    optD.step()
    optG.zero_grad()
    lossG = bce(D(fake), torch.ones(16, 1))
    lossG.backward()
    optG.step()
"""


def assert_as_plain(source: str, leaves: tuple[str, ...] = (), pitfalls: tuple[str, ...] = ()) -> Trace:
    """Record ``source`` and check it printed and raised what it does without gradwalk,
    recorded everything (nothing ``unrecorded``), raised the pitfalls of kinds ``pitfalls``
    and no other, and that each of ``leaves`` (whose final ``.grad`` must travel whole in the
    trace) ends with PyTorch's ``.grad``, bitwise."""
    printed, error, scope = run_plain(source)
    trace = record(source)
    assert q.stdout(trace) == printed
    errors = q.errors(trace)
    assert ((errors[0].exc_type, errors[0].message, errors[0].line) if errors else None) == error
    finished = trace.events[-1]
    assert finished.status == ("error" if error else "ok")
    assert finished.counts.unrecorded == 0
    assert [p.kind for p in q.pitfalls(trace)] == list(pitfalls)
    finals = {e.name: e.grad for e in q.events_of(trace, "tensor_final")}
    for name in leaves:
        want = scope[name].grad
        got = finals[name]
        assert isinstance(got, FullValue), name
        assert torch.equal(torch.tensor(got.flat, dtype=want.dtype).reshape(got.shape), want), name
    return trace
