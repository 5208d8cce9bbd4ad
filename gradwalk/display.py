"""How a :class:`gradwalk.notebook.Recording` is shown: its page's options, checked at the
call (:func:`check_options`, :func:`check_page_choices`), and :class:`Display`, the export
page in a sandboxed ``<iframe srcdoc>`` that Jupyter draws."""

from __future__ import annotations

import html
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Literal

from .packed import packed_frame

if TYPE_CHECKING:
    from .notebook import Recording

__all__ = ["DEFAULT_HEIGHT", "Display", "check_options", "check_page_choices"]

DEFAULT_HEIGHT = 600


class Display:
    """A Recording as shown: the export page in a sandboxed ``<iframe srcdoc>``."""

    def __init__(self, rec: Recording, height: int = DEFAULT_HEIGHT, **options: Any) -> None:
        """``options`` are :meth:`Recording.html`'s (view, step, theme, sel, ...), passed on as given."""
        self.rec = rec
        self.options = options
        self.height = height

    def _repr_html_(self) -> str:
        from server.export import BundleMissing

        try:
            page = self.rec.html(**self.options)
        except BundleMissing as exc:
            return f"<p><b>gradwalk</b>: {html.escape(str(exc))}</p>"
        return packed_frame(page, f"gradwalk: {self.rec.title or 'recorded run'}", self.height)

    def __repr__(self) -> str:
        return repr(self.rec)


def check_page_choices(
    events: Iterable[Any],
    *,
    step: int | None,
    call: int | Literal["all"] | None,
    sel: str | None,
    **choices: Any,
) -> None:
    """Refuse a page choice that is not one (:func:`server.export.check_choices`, charts by
    name), a ``step`` past the end of the run's walk (``events``), a ``call`` it did not record
    in full and a ``sel`` naming a node or tensor it never made, as ``gradwalk export`` does."""
    from server.export import (
        check_call_in,
        check_chart_names,
        check_choices,
        check_selection_in,
        check_step_in,
    )

    events = list(events)
    check_chart_names(check_choices(step=step, call=call, sel=sel, **choices))
    check_step_in(events, step)
    check_call_in(events, call)
    check_selection_in(events, sel)


def check_options(*, controls: object, elk: object, per_parameter: object, compare: object) -> None:
    """Refuse the options of :meth:`Recording.html` that :func:`server.export.check_choices`
    does not check: the flags must be bools (``controls="hide"`` would show the controls),
    ``compare`` a Recording or ``None`` (``TypeError``)."""
    from .notebook import Recording

    for name, flag in (("controls", controls), ("elk", elk), ("per_parameter", per_parameter)):
        if not isinstance(flag, bool):
            raise ValueError(f"{name} must be True or False, not {flag!r}")
    if compare is not None and not isinstance(compare, Recording):
        raise TypeError(
            f"compare must be another Recording (what gradwalk.watch returns), not {type(compare).__name__}"
        )
