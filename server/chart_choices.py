"""The charts' choices a link, an embed, an export and a classroom carry: the y scale of
their axes, whether gradient and update norms are drawn per parameter, and which other run
is drawn dashed under the one shown.

The names match the viewer's query string (``web/src/url-state.ts``):
``?yscale=auto|linear|log&norms=together|per-parameter&compare=RUN_ID``.
"""

from __future__ import annotations

from typing import Literal, get_args

__all__ = ["COMPARE_PATTERN", "NORMS", "Y_SCALES", "Norms", "YScale"]

YScale = Literal["auto", "linear", "log"]
Norms = Literal["together", "per-parameter"]
Y_SCALES: tuple[str, ...] = get_args(YScale)
NORMS: tuple[str, ...] = get_args(Norms)
# a run id as the server makes them, as ``compare`` names one (the viewer accepts the same)
COMPARE_PATTERN = r"^[A-Za-z0-9_-]{1,64}$"
