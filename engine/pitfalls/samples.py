"""A reparameterisable draw taken with ``sample()`` where the model trains through it
(sample-instead-of-rsample).

A VAE's ``z = torch.distributions.Normal(mu, std).sample()`` then ``recon = decoder(z)``:
``Distribution.sample()`` runs under ``torch.no_grad()``, so ``z`` comes out with no graph
(``requires_grad=False``) however much ``mu`` and ``std`` carry one. The reconstruction loss
then sends no gradient through ``z`` to ``mu``, ``std`` or the encoder behind them: only the
terms computed from ``mu`` and ``std`` themselves (the KL) train the encoder, which learns
to match the prior and nothing about the data. Nothing raises. ``rsample()`` (or ``mu + std
* torch.randn_like(std)`` by hand) draws through the reparameterisation trick and keeps the
graph.

The rule. library_calls.py wraps ``sample`` of each class of ``torch.distributions`` and
hands this detector each call of the snippet's own that ran with gradients on, on a
distribution that has ``rsample`` (``has_rsample``) and a parameter that requires grad
(``loc``, ``scale``…, those of an ``Independent``'s base too). At the next backward(), while
the drawn tensor is still alive, it is told at the ``sample()`` line.

Silent: ``rsample()`` and the trick by hand; a draw under ``torch.no_grad()`` (generation,
evaluation, a rollout); a distribution without ``rsample`` (``Categorical``, ``Bernoulli``),
whose draws have no gradient to lose; parameters that need none (fixed noise,
``Normal(0, 1)``); and a snippet that scores its draws, as REINFORCE and every policy
gradient do (``loss = -dist.log_prob(a) * R``: the sample is meant to be a constant there),
known by its source calling ``log_prob`` or speaking of rewards, advantages or an ``env``;
and a ``sample()`` of a distribution the snippet has already drawn from with ``rsample()``
(library_calls.py hands those on too): it trains through that one, and the later draw is
meant as a constant (a classifier probing a trained VAE's latents, ``clf(q.sample())``).
"""

from __future__ import annotations

import re
import sys
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from types import FrameType
from typing import Any

import torch

from ..source import assigned_name, find_name, quoted_code
from .kinds import Said

__all__ = ["SampleDraws"]

_MOST_CALLS = 200  # sample() calls looked at in a run; later ones run as they are
# a snippet that scores its draws (REINFORCE, a policy gradient, PPO): its samples are constants
_SCORED = re.compile(r"\.log_prob\(|\breward|\badvantage|\benv\b")


@dataclass
class _Draw:
    """One ``sample()`` of a distribution whose parameters carry a graph."""

    drawn: weakref.ref[torch.Tensor]
    line: int
    name: str | None  # the snippet's name of the distribution (q in q.sample())
    kind: str  # its class: Normal
    params: list[tuple[str, str | None]]  # (attribute, the snippet's name) of each requiring grad


class SampleDraws:
    """The snippet's ``sample()`` calls since the last backward() that lost a graph."""

    def __init__(self, source_lines: Sequence[str]) -> None:
        self._source = source_lines
        self._draws: list[_Draw] = []
        self._scored: bool | None = None  # read from the source at the first draw
        self.calls_left = _MOST_CALLS  # (library_calls.py hands no more calls on at 0)
        # the distributions the snippet drew from with rsample(), while they live
        self.rsampled: weakref.WeakSet[Any] = weakref.WeakSet()

    def sampled(self, dist: Any, drawn: Any, frame: FrameType) -> None:
        """Look at ``dist.sample(…)`` that returned ``drawn``, called from snippet ``frame``
        with gradients on."""
        self.calls_left -= 1
        if (
            not isinstance(drawn, torch.Tensor)
            or drawn.requires_grad
            or not getattr(dist, "has_rsample", False)
            or dist in self.rsampled
        ):
            return
        if self._scored is None:
            self._scored = any(_SCORED.search(line.split("#", 1)[0]) for line in self._source)
        if self._scored:
            self.calls_left = 0
            return
        if len(self._draws) >= 8:
            return
        params = [
            (
                attribute,
                find_name(value, frame)
                or (find_name(value._base, frame) if value._base is not None else None),
            )
            for attribute, value in _parameters(dist)
        ]
        if not params:
            return
        name = find_name(dist, frame)
        self._draws.append(_Draw(weakref.ref(drawn), frame.f_lineno, name, type(dist).__name__, params))

    def before_backward(self) -> list[Said]:
        """Each draw since the last backward() still alive as this one starts."""
        draws, self._draws = self._draws, []
        return [self._report(d) for d in draws if d.drawn() is not None]

    def _report(self, draw: _Draw) -> Said:
        code = quoted_code(self._source, draw.line, sys.maxsize) or ""
        z = assigned_name(code) or "the sample"
        dist = draw.name or draw.kind
        named = [name or f"{dist}.{attribute}" for attribute, name in draw.params]
        params = " and ".join(dict.fromkeys(named))
        quoted = quoted_code(self._source, draw.line)
        at = f"Line {draw.line} ({quoted})" if quoted else f"Line {draw.line}"
        fixed = code.replace(".sample(", ".rsample(", 1) if ".sample(" in code else f"{z} = {dist}.rsample()"
        return Said(
            "sample-instead-of-rsample",
            draw.line,
            f"{z} is drawn with sample(): no gradient reaches {params} through it",
            f"{at} draws {z} from a {draw.kind} whose {params} require{'s' if len(named) == 1 else ''} grad, "
            f"but sample() runs under torch.no_grad(): {z} came out with requires_grad=False and no graph. "
            f"Whatever the loss computes from {z} (a decoder's reconstruction) sends no gradient back to "
            f"{params} or to the layers that made them; only terms that read {params} directly (a KL term) "
            "train them, so the encoder learns to match the prior and nothing about the data. Nothing raises.",
            f"Draw with the reparameterisation trick, which keeps the graph: {fixed} (or by hand, "
            f"mu + std * torch.randn_like(std)). Keep sample() for draws that are meant to be constants: "
            "generation under torch.no_grad(), or REINFORCE's a = dist.sample() scored by dist.log_prob(a).",
            [],
        )


def _parameters(dist: Any) -> list[tuple[str, torch.Tensor]]:
    """The tensors of ``dist`` (and of a distribution it wraps, as Independent does) that
    require grad, by attribute."""
    found: list[tuple[str, torch.Tensor]] = []
    for owner in (dist, getattr(dist, "base_dist", None)):
        for attribute, value in vars(owner).items() if owner is not None else ():
            wanted = isinstance(value, torch.Tensor) and value.requires_grad and not attribute.startswith("_")
            if wanted and all(value is not v for _, v in found):
                found.append((attribute, value))
    return found
