"""Record autograd from a notebook and see it inline: :func:`watch` and :func:`watch_call`.

A :class:`Recording` shows itself in Jupyter as the same self-contained page that
``gradwalk export`` writes (graph, backward stepper, tape, code), inside an
``<iframe srcdoc>``: its scripts run sandboxed, nothing touches the notebook's page, and it
needs no server and no network. It can also be saved as a trace, exported as an HTML file,
and opened in the full app when a gradwalk server runs.

>>> import gradwalk
>>> rec = gradwalk.watch('''
... import torch
... x = torch.tensor(2.5, requires_grad=True)
... y = x**3 - 4*x
... y.backward()
... ''')
>>> rec.grads
{'x': 14.75}
>>> rec  # in Jupyter: the graph, stepper and code inline      # doctest: +SKIP

The snippet runs in this process with real PyTorch, under the recorder (as ``gradwalk
record`` runs it: ``torch`` and ``random`` seeded with 0, ``device`` set); the notebook's
own random state is put back afterwards.
"""

from __future__ import annotations

import contextlib
import gzip
import inspect
import json
import os
import random
import textwrap
import urllib.error
import urllib.request
import webbrowser
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

from .display import DEFAULT_HEIGHT, Display, check_options, check_page_choices
from .packed import unpack
from .watch_args import watch_limits, watch_source

__all__ = ["Recording", "called_with", "load", "unpack", "watch", "watch_call"]


class Recording:
    """One recorded run: its :class:`engine.events.Trace`, shown inline in Jupyter.

    ``result`` is what the function returned (:func:`watch_call`), else ``None``.
    """

    def __init__(self, trace: Any, *, result: Any = None, title: str | None = None) -> None:
        self.trace = trace
        self.result = result
        self.title = title
        self._display = Display(self, elk=False)  # small outputs: laid out breadth-first

    # --- what happened ----------------------------------------------------------------

    @property
    def status(self) -> str:
        """How the run ended: ``ok``, ``error``, ``timeout``, ``limit`` ..."""
        return str(self.trace.events[-1].status)

    @property
    def grads(self) -> dict[str, Any]:
        """The final ``.grad`` of each named leaf: a number for scalars, else nested lists in
        the gradient's shape (``[[0.0, 2.0, 4.0], [6.0, 8.0, 10.0]]`` for a 2x3 one); one too
        large to travel whole (over ``Limits.max_value_elements``) is its
        :class:`engine.events.SummaryValue` (``shape``, ``min``, ``max``, ``mean``, ``norm`` ...)."""
        from engine.queries import events_of, nested_value

        return {
            e.name: nested_value(e.grad) for e in events_of(self.trace, "tensor_final") if e.grad is not None
        }

    @property
    def pitfalls(self) -> list[Any]:
        """The pitfall events the detectors raised (``kind``, ``title``, ``line``, ``fix`` ...)."""
        from engine.queries import pitfalls

        return pitfalls(self.trace)

    @property
    def errors(self) -> list[Any]:
        """The error events (an exception in the snippet, with its line and a hint)."""
        from engine.queries import errors

        return errors(self.trace)

    @property
    def stdout(self) -> str:
        """What the snippet printed."""
        from engine.queries import stdout

        return stdout(self.trace)

    def summary(self) -> str:
        """Return a few lines: status, counts, final grads, errors and pitfalls."""
        from engine.summary import summarize

        return summarize(self.trace)

    def __repr__(self) -> str:
        return f"<gradwalk.Recording {self.title or ''}\n{self.summary()}>".replace(" \n", "\n")

    # --- saving and showing -------------------------------------------------------------

    def to_json(self) -> str:
        """Return the trace as JSON (what ``gradwalk record`` writes)."""
        return str(self.trace.model_dump_json())

    def save(self, path: str | Path) -> Path:
        """Write the trace as JSON to ``path``; open it again with :func:`load` or in the app."""
        out = Path(path)
        out.write_text(self.to_json(), encoding="utf-8")
        return out

    def html(
        self,
        *,
        view: str | None = None,
        step: int | None = None,
        theme: str | None = None,
        controls: bool = True,
        elk: bool = True,
        yscale: str | None = None,
        per_parameter: bool = False,
        compare: Recording | None = None,
        hide: Sequence[str] = (),
        call: int | Literal["all"] | None = None,
        sel: str | None = None,
    ) -> str:
        """Return the self-contained HTML page (see :func:`server.export.render_export`;
        ``yscale`` and ``per_parameter`` are the charts' y axes and norms, ``compare`` another
        recording drawn dashed under this one on the charts, carried in the page, ``hide`` the
        charts hidden, by id: ``loss``, ``calls``, ``grad``, ``update``, ``lr``, ``memory``,
        ``cuda`` or ``metric:NAME``, ``call`` the backward() call whose graph alone is drawn,
        counted from 1, or ``"all"``: every call's; default: the run's own, its first call
        where a loop's calls copy one big graph), ``sel`` the node (``"n12"``) or tensor
        (``"t3"``) picked, as the app's links write it: the graph rings it, the inspector shows
        it). Raises ``ValueError`` (``TypeError`` for a ``compare`` that is not a Recording) for
        a choice that is not one, a ``step`` past the end of the run's backward walk, a ``call``
        the run did not record in full and a ``sel`` naming a node or tensor the run never made
        included (:func:`server.export.check_step_in`, :func:`server.export.check_call_in`,
        :func:`server.export.check_selection_in`)."""
        from server.export import render_export

        check_options(controls=controls, elk=elk, per_parameter=per_parameter, compare=compare)
        check_page_choices(self.trace.events, step=step, hide=hide, call=call, sel=sel)
        return render_export(
            self.to_json(),
            title=self.title,
            view=view,
            step=step,
            controls=controls,
            theme=theme,  # type: ignore[arg-type]
            yscale=yscale,  # type: ignore[arg-type]
            per_parameter=per_parameter,
            compare=("compared", compare.to_json()) if compare is not None else None,
            hide=hide,
            call=call,
            sel=sel,
            elk=elk,
        )

    def export(
        self,
        path: str | Path,
        *,
        view: str | None = None,
        step: int | None = None,
        theme: str | None = None,
        controls: bool = True,
        elk: bool = True,
        yscale: str | None = None,
        per_parameter: bool = False,
        compare: Recording | None = None,
        hide: Sequence[str] = (),
        call: int | Literal["all"] | None = None,
        sel: str | None = None,
    ) -> Path:
        """Write ONE html file that shows this run offline (disk, a static host, an LMS);
        the options are :meth:`html`'s (``hide=["grad", "update"]`` hides those charts,
        ``controls=False`` shows one step without tabs or buttons, ``elk=False`` leaves out
        the layered layout, 1.6 MB smaller, ``sel="n12"`` opens with that node picked), as
        ``gradwalk export`` has them."""
        out = Path(path)
        page = self.html(
            view=view,
            step=step,
            theme=theme,
            controls=controls,
            elk=elk,
            yscale=yscale,
            per_parameter=per_parameter,
            compare=compare,
            hide=hide,
            call=call,
            sel=sel,
        )
        out.write_text(page, encoding="utf-8")
        return out

    def show(
        self,
        view: str | None = None,
        step: int | None = None,
        *,
        height: int = DEFAULT_HEIGHT,
        theme: str | None = None,
        controls: bool = True,
        elk: bool = False,
        yscale: str | None = None,
        per_parameter: bool = False,
        compare: Recording | None = None,
        hide: Sequence[str] = (),
        call: int | Literal["all"] | None = None,
        sel: str | None = None,
    ) -> Display:
        """Return a display of this run opening on ``view`` at backward ``step`` (0-based).

        ``elk=True`` lays the graph out in layers as the app does, at 1.6 MB more per output;
        by default the notebook's copy is laid out breadth-first and stays small. ``yscale``
        (``auto``, ``linear``, ``log``) and ``per_parameter`` set the charts' axes and norms;
        ``compare`` (another recording, say the same loop at another learning rate) is drawn
        dashed under this one on the charts. ``hide`` lists charts to leave out, by id
        (``loss``, ``calls``, ``grad``, ``update``, ``lr``, ``memory``, ``cuda``,
        ``metric:NAME``): ``rec.show("charts", hide=["grad", "update"])``. ``call`` draws one
        backward() call's graph (counted from 1): ``rec.show("graph", call=3)``; ``call="all"``
        every call's together. ``sel`` picks a node (``"n12"``) or tensor (``"t3"``), as the
        app's links write it: ``rec.show("inspector", sel="n4")`` opens the inspector on it,
        the graph rings it. ``height`` is the frame's, in pixels (a whole number, 1 or more).
        Raises ``ValueError`` here, not when the notebook displays it, for a choice that is not
        one (``theme`` included, and a ``step`` past the end of the backward walk, a ``call``
        not recorded in full, a ``sel`` naming no node or tensor of this run;
        ``controls``, ``elk`` and ``per_parameter`` must be ``True`` or ``False``:
        ``controls=False`` hides the tabs and buttons), and ``TypeError`` for a ``compare``
        that is not a Recording.
        """
        check_page_choices(
            self.trace.events, view=view, step=step, theme=theme, yscale=yscale, hide=hide, call=call, sel=sel
        )
        check_options(controls=controls, elk=elk, per_parameter=per_parameter, compare=compare)
        if isinstance(height, bool) or not isinstance(height, int) or height < 1:
            raise ValueError(f"height must be a whole number of pixels, 1 or more, not {height!r}")
        return Display(
            self,
            height,
            view=view,
            step=step,
            theme=theme,
            controls=controls,
            elk=elk,
            yscale=yscale,
            per_parameter=per_parameter,
            compare=compare,
            hide=hide,
            call=call,
            sel=sel,
        )

    def _repr_html_(self) -> str:
        return self._display._repr_html_()

    def open(
        self, url: str = "http://127.0.0.1:8000", *, token: str | None = None, browser: bool = True
    ) -> str:
        """Store this trace on a running gradwalk server and open it in the app; return its URL.

        ``token`` is the server's (``gradwalk serve --token``) when it has one.
        """
        base = url.rstrip("/")
        request = urllib.request.Request(
            f"{base}/api/traces",
            data=gzip.compress(self.to_json().encode("utf-8")),
            method="POST",
            headers={
                "Content-Type": "application/json",
                "Content-Encoding": "gzip",
                **({"Authorization": f"Bearer {token}"} if token else {}),
            },
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as answer:
                body = json.loads(answer.read())
        except urllib.error.HTTPError as exc:
            detail = exc.read().decode("utf-8", "replace")[:500]
            raise RuntimeError(
                f"the gradwalk server at {base} refused the trace ({exc.code}): {detail}"
            ) from None
        except urllib.error.URLError as exc:
            raise ConnectionError(
                f"no gradwalk server at {base} ({exc.reason}): start one with `gradwalk serve`"
            ) from None
        app_url = f"{base}{body['app_url']}"
        if browser:
            webbrowser.open(app_url)
        return app_url


# --- recording ------------------------------------------------------------------------------------


def watch(
    source: str | os.PathLike[str],
    *,
    device: str = "cpu",
    limits: Any = None,
    title: str | None = None,
) -> Recording:
    """Run the snippet ``source`` with real PyTorch under the recorder; return its Recording.

    ``source`` is the snippet's text, or a :class:`pathlib.Path` to a ``.py`` file (a
    ``str`` is always the text: pass ``Path("lesson.py")`` for a file). The snippet runs
    as a script of its own (it sees ``device``, not the notebook's names); to record code
    that uses the notebook's objects, use :func:`watch_call`. Raises ``TypeError`` for
    anything else (a function included: that is :func:`watch_call`'s), and ``ValueError``
    for a ``device`` that is not ``cpu``, ``cuda`` or ``cuda:N``, or CUDA where no GPU is.
    """
    from engine.devices import device_problem
    from engine.run import record

    source, filename, name = watch_source(source)
    checked = watch_limits(limits)
    problem = device_problem(device)
    if problem:
        raise ValueError(f"device: {problem}")
    with _kept_torch_state():
        trace = record(source, device=device, limits=checked, filename=filename)
    from server.library import title_for  # the app's: the first comment line names the run

    return Recording(trace, title=title or title_for(source, []) or name)


class _Handoff:
    """What :func:`watch_call` passes to the snippet it records, and what comes back."""

    call: tuple[dict[str, Any], tuple[Any, ...], dict[str, Any]] | None = None
    scope: dict[str, Any] | None = None


_handoff = _Handoff()
_CALL_TEMPLATE = """\
from gradwalk.notebook import called_with  # your notebook's names and arguments
_args, _kwargs = called_with(globals())

{function}
result = {name}(*_args, **_kwargs)
"""


def watch_call(fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Recording:
    """Record the call ``fn(*args, **kwargs)``; return its Recording (``.result``: what fn returned).

    ``fn`` must be a function defined with ``def`` whose source Python can find (in a notebook
    cell or a file). It is run again from that source, so its lines appear in the trace; it
    sees the names it would see (its module's or the notebook's, and its closure's).
    """
    from engine.run import record

    target = getattr(fn, "__func__", fn)
    if getattr(fn, "__self__", None) is not None:
        args = (fn.__self__, *args)  # type: ignore[attr-defined]
    code = getattr(target, "__code__", None)
    if code is None or target.__name__ == "<lambda>":
        raise TypeError(
            "watch_call() needs a function defined with def; for other code, pass a snippet to watch()"
        )
    try:
        function = textwrap.dedent(inspect.getsource(target))
    except (OSError, TypeError) as exc:
        raise TypeError(f"cannot find the source of {target.__name__}: {exc}") from None
    names = {k: v for k, v in target.__globals__.items() if not k.startswith("__")}
    for var, cell in zip(code.co_freevars, target.__closure__ or (), strict=False):
        with contextlib.suppress(ValueError):  # an empty cell: the name is not bound yet
            names[var] = cell.cell_contents
    names.pop(target.__name__, None)
    source = _CALL_TEMPLATE.format(function=function.rstrip("\n") + "\n", name=target.__name__)
    _handoff.call, _handoff.scope = (names, args, kwargs), None
    try:
        with _kept_torch_state():
            trace = record(source, filename="notebook.py")
        scope: dict[str, Any] = _handoff.scope or {}
        result = scope.get("result")
    finally:
        _handoff.call = _handoff.scope = None
    return Recording(trace, result=result, title=f"{target.__name__}(…)")


def called_with(scope: dict[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """Give the snippet :func:`watch_call` writes the names its function sees; return its arguments.

    Not for calling yourself: it is the first line of every recorded function call.
    """
    if _handoff.call is None:
        raise RuntimeError("called_with() runs inside the snippets that gradwalk.watch_call() records")
    names, args, kwargs = _handoff.call
    for key, value in names.items():
        scope.setdefault(key, value)
    _handoff.scope = scope
    return args, kwargs


def load(path: str | Path) -> Recording:
    """Read a trace file (``gradwalk record``, :meth:`Recording.save`, the app's export).
    Raises ``ValueError`` saying what is wrong with a file that is not one."""
    from pydantic import ValidationError

    from engine.events import trace_adapter
    from server.export import first_problem
    from server.library import title_for

    try:
        trace = trace_adapter.validate_json(Path(path).read_bytes())
    except ValidationError as exc:  # pydantic's own report runs to pages: its first point, in a line
        raise ValueError(f"{path} is not a gradwalk trace: {first_problem(exc)}") from None
    return Recording(trace, title=title_for(trace.source, []) or Path(path).stem)


class _kept_torch_state:
    """Put back what a recording may change in the notebook's process: torch's and Python's
    random state (a recording seeds them with 0), and torch's global modes a snippet may set
    (``torch.set_grad_enabled(False)``, ``set_default_dtype``, ``set_detect_anomaly``)."""

    def __enter__(self) -> None:
        import torch

        self.torch_state = torch.get_rng_state()
        self.python_state = random.getstate()
        self.grad_enabled = torch.is_grad_enabled()
        self.dtype = torch.get_default_dtype()
        self.anomaly = (torch.is_anomaly_enabled(), torch.is_anomaly_check_nan_enabled())

    def __exit__(self, *exc: object) -> None:
        import torch

        torch.set_rng_state(self.torch_state)
        random.setstate(self.python_state)
        torch.set_grad_enabled(self.grad_enabled)
        torch.set_default_dtype(self.dtype)
        torch.set_anomaly_enabled(*self.anomaly)
