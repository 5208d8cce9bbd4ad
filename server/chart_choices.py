"""The charts' choices a link, an embed, an export and a classroom carry: the y scale of
their axes and whether gradient and update norms are drawn per parameter.

The names match the viewer's query string (``web/src/url-state.ts``):
``?yscale=auto|linear|log&norms=together|per-parameter``.
"""

from __future__ import annotations

from typing import Literal, get_args

__all__ = ["NORMS", "Y_SCALES", "Norms", "YScale"]

YScale = Literal["auto", "linear", "log"]
Norms = Literal["together", "per-parameter"]
Y_SCALES: tuple[str, ...] = get_args(YScale)
NORMS: tuple[str, ...] = get_args(Norms)
