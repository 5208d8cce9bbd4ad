"""gradient-leaked-from-other-loss: one optimizer's step follows a gradient another network's
loss left in its parameters' ``.grad``, because its ``zero_grad()`` ran too early.

NOTE [Leaked gradients]: a GAN that calls ``opt_d.zero_grad(); opt_g.zero_grad()`` at the
top of its iteration and builds ``d_loss`` from the undetached ``fake = G(z)``: the
backward of ``d_loss`` fills G's gradients as well as D's, ``opt_d.step()`` uses D's, and
G's stay in ``.grad``, where ``g_loss.backward()`` adds to them; ``opt_g.step()`` follows
both losses, the discriminator's pushing G toward fakes that look fake. An actor-critic
whose ``actor_loss = -critic(s, actor(s)).mean()`` backward fills the critic's gradients
before ``critic_loss.backward(); opt_critic.step()`` is the same mistake.

Each backward() is a *walk*; each parameter of an optimizer remembers the walks added into
its ``.grad`` since it was last cleared (a ``.grad`` seen as another tensor, or changed in
place, between two backward calls is cleared, as in NOTE [Stale gradients]; clipped in
place between a backward and a step it is the same gradient), and each walk the optimizers
that stepped on a gradient it added to. At a step of optimizer B, a parameter of B that
holds a walk an optimizer A not holding it stepped on, *and* a walk of B's own (stepped on
by no such optimizer) that came after A's step, followed a leaked gradient. A parameter a
step over it already used (B's own earlier step, or a shared parameter A steps too) is
missing-zero-grad's, never both. B's own walk is checked again at the next backward() and
at the end of the run: a trunk stepped by its own optimizer after each task head stepped
on its own loss (``loss1.backward(); opt_h1.step(); loss2.backward(); opt_trunk.step();
opt_h2.step()``) has no own walk, every loss it follows is a head's as well: accumulated on
purpose, silent. Two optimizers stepping on one loss (an encoder's and a decoder's) have no
second walk, and gradient accumulation no other optimizer's step between its walks.

It is said at the leaking backward() (``d_loss.backward()``): the line that put the wrong
gradient in, where the fix that saves work (``D(fake.detach())``) goes; the message names
the step that used it and the line where the ``zero_grad()`` belongs. The number is real:
a parameter that holds only leaked walks when a backward() starts is copied then, and again
after that backward() added to it (a loop that zeroes each optimizer's gradients before its
own backward() copies nothing); the two copies split the step's gradient into the leaked part and B's own,
with their norms and cosine (a GAN's two parts point against each other, cosine near -1).
An encoder stepped on a decoder's loss plus its own looks the same and may be meant: where
the parts do not pull apart, the fix also says how to write that in one backward().

Cheap: nothing runs until two optimizers over different parameters have stepped (a plain
loop never gets that far), so a snippet of a single iteration is not judged; then each
backward() reads each optimizer parameter's ``.grad`` twice, as missing-zero-grad does for
the parameters of the last step, and the detector stops once it has spoken (once a run).
"""

from __future__ import annotations

import math
import re
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import torch

from ..source import quoted_code
from .hook_calls import known

if TYPE_CHECKING:
    from ..recorder import Recorder

__all__ = ["LeakedGradients"]

KIND = "gradient-leaked-from-other-loss"
_BACKWARD_OF = re.compile(r"([^\W\d][\w.]*)\.backward\(|autograd\.backward\(\s*([^\W\d][\w.]*)")


class _Walk:
    """One backward() call: its index, line, and the steps that used what it added."""

    __slots__ = ("index", "line", "steppers")

    def __init__(self, index: int, line: int | None) -> None:
        self.index = index
        self.line = line
        # (optimizer key, backward calls made by then, label, step line) of each step on it
        self.steppers: list[tuple[int, int, str, int | None]] = []


class _Held:
    """What one optimizer parameter's ``.grad`` holds: the tensor, its version, the walks
    added into it since it was cleared, and (while a leak is pending) a copy of it."""

    __slots__ = ("after", "before", "grad", "param", "version", "walks")

    def __init__(self, param: torch.Tensor) -> None:
        self.param = weakref.ref(param)
        self.grad: weakref.ref[torch.Tensor] | None = None
        self.version = -1
        self.walks: list[_Walk] = []
        self.before: torch.Tensor | None = None
        self.after: torch.Tensor | None = None  # (and of the sum after the next backward)
        self.seen(param.grad)

    def seen(self, grad: torch.Tensor | None) -> None:
        self.grad = None if grad is None else weakref.ref(grad)
        self.version = -1 if grad is None else grad._version

    def changed(self, grad: torch.Tensor | None) -> bool:
        if grad is None:
            return self.grad is not None
        return self.grad is None or self.grad() is not grad or grad._version != self.version


class _Leak:
    """A step that followed a leaked gradient, said once no other optimizer claims its own walks."""

    __slots__ = ("own", "owners", "said")

    def __init__(self, owners: frozenset[int], own: list[_Walk], said: tuple[Any, ...]) -> None:
        self.owners, self.own, self.said = owners, own, said


class LeakedGradients:
    """Follow which backward() filled which optimizer's gradients (NOTE [Leaked gradients]);
    ``say(kind, line, title, message, fix)`` reports."""

    def __init__(self, rec: Recorder, say: Callable[..., None]) -> None:
        self._rec = rec
        self._say = say
        # the optimizers met, by id(): (the optimizer, its parameters' ids, its label)
        self._opts: dict[int, tuple[weakref.ref[torch.optim.Optimizer], frozenset[int], str]] = {}
        self._held: dict[int, _Held] = {}  # by id(param), once two optimizers stepped
        self._walk: _Walk | None = None
        self._pending: _Leak | None = None
        self._done = False

    def before_backward(self) -> None:
        """Forget what was cleared since the last backward; copy gradients a leak may add to."""
        if not self._held or self._done:
            return
        self._confirm()
        for h in self._held.values():
            p = h.param()
            g = None if p is None else p.grad
            if h.changed(g):
                h.walks, h.before, h.after = [], None, None
                h.seen(g)
            elif g is not None and h.walks and all(self._foreign(w, id(p)) for w in h.walks):
                with torch.no_grad():
                    h.before = g.detach().clone()
        self._walk = _Walk(self._rec.backward.calls - 1, None)

    def after_backward(self, line: Any) -> None:
        """Note the parameters the backward that returned added into (its line: ``line``)."""
        walk, self._walk = self._walk, None
        if walk is None:
            return
        for h in self._held.values():
            p = h.param()
            g = None if p is None else p.grad
            if g is not None and h.changed(g):
                h.walks.append(walk)
                h.seen(g)
                if h.before is not None:  # the sum, before a clip or unscale changes it in place
                    with torch.no_grad():
                        h.after = g.detach().clone()
        walk.line = known(line)

    def stepped(self, opt: torch.optim.Optimizer, params: list[torch.Tensor], line: int | None) -> None:
        """Note a step of ``opt`` over ``params`` (at ``line``): which walks it used, and
        whether it followed a leaked gradient."""
        if self._done:
            return
        key = id(opt)
        met = self._opts.get(key)
        if met is None or met[0]() is not opt or len(met[1]) != len(params):
            self._met(opt, params)
            met = self._opts.get(key)
        if not self._held or met is None:
            return
        calls, opts = self._rec.backward.calls, self._opts
        leaked: list[tuple[_Held, list[_Walk], list[_Walk]]] = []
        used: dict[int, _Walk] = {}
        for p in params:
            h = self._held.get(id(p))
            if h is None:
                continue
            g = p.grad
            if g is None or h.grad is None or h.grad() is not g:
                h.walks, h.before, h.after = [], None, None
                h.seen(g)
                continue
            h.version = g._version  # (clipped in place: the same gradient)
            # (a step over it used it already: missing-zero-grad's, stale_grads.py)
            stale = any(s[0] in opts and id(p) in opts[s[0]][1] for w in h.walks for s in w.steppers)
            foreign = [] if stale else [w for w in h.walks if self._foreign(w, id(p))]
            own = [w for w in h.walks if w not in foreign]
            # (B's own backward() came after the other optimizer's step on the leaked one)
            stepped_at = min((s[1] for w in foreign for s in w.steppers if s[0] != key), default=None)
            if stepped_at is not None and any(o.index >= stepped_at for o in own):
                leaked.append((h, foreign, own))
            used.update((id(w), w) for w in h.walks)
        for w in used.values():  # (after the loop: a walk is shared by many parameters)
            if all(s[0] != key for s in w.steppers):
                w.steppers.append((key, calls, met[2], line))
        if leaked and self._pending is None:
            said = self._explained(met[2], line, params, leaked)
            self._pending = _Leak(met[1], [w for _, _, own in leaked for w in own], said)

    def finished(self) -> None:
        """Say a leak still pending at the end of the run."""
        if self._held and not self._done:
            self._confirm()

    # --- helpers --------------------------------------------------------------------------

    def _foreign(self, walk: _Walk, pid: int) -> bool:
        """Whether an optimizer that does not hold parameter ``pid`` stepped on ``walk``."""
        opts = self._opts
        return any(s[0] in opts and pid not in opts[s[0]][1] for s in walk.steppers)

    def _met(self, opt: torch.optim.Optimizer, params: list[torch.Tensor]) -> None:
        """Take in ``opt`` (new, or its parameters changed); start following the gradients
        once two optimizers over different parameters have stepped."""
        self._opts = {k: v for k, v in self._opts.items() if v[0]() is not None}
        label = (self._rec.training.label_of(opt) or "opt").split(" ", 1)[0]
        self._opts[id(opt)] = (weakref.ref(opt), frozenset(map(id, params)), label)
        if len({ids for _, ids, _ in self._opts.values()}) < 2:
            return
        live: dict[int, torch.Tensor] = {}
        for ref, _, _ in self._opts.values():
            o = ref()
            for group in o.param_groups if o is not None else ():
                for p in group["params"]:
                    live[id(p)] = p
        held = {k: h for k, h in self._held.items() if k in live and h.param() is live[k]}
        for k, p in live.items():
            if k not in held:
                held[k] = h = _Held(p)
                if p.grad is not None:  # (what it holds was added before: count it as stepped on)
                    owner = next(o for o, (_, ids, _) in self._opts.items() if k in ids)
                    h.walks.append(_Walk(-1, None))
                    h.walks[0].steppers.append((owner, 0, "", None))
        self._held = held

    def _confirm(self) -> None:
        """Say the pending leak, unless another optimizer has since stepped on its own walks."""
        leak, self._pending = self._pending, None
        if leak is None:
            return
        opts = self._opts
        claimed = any(
            s[0] in opts and not (opts[s[0]][1] & leak.owners) for w in leak.own for s in w.steppers
        )
        if not claimed:
            self._done = True
            self._held = {}
            self._say(KIND, *leak.said)

    def _explained(
        self,
        label: str,
        line: int | None,
        params: list[torch.Tensor],
        leaked: list[tuple[_Held, list[_Walk], list[_Walk]]],
    ) -> tuple[int | None, str, str, str]:
        """``(line, title, message, fix)`` for the step of ``label`` at ``line`` over
        ``params``, whose ``leaked`` parameters (with their foreign and own walks) followed
        a leaked gradient."""
        rec = self._rec
        source = rec.statement_lines
        first = min((w for _, foreign, _ in leaked for w in foreign), key=lambda w: w.index)
        mine = max((w for _, _, own in leaked for w in own), key=lambda w: w.index)
        pid = next(id(h.param()) for h, foreign, _ in leaked if first in foreign)
        theirs_key, _, other, other_line = next(
            s for s in first.steppers if s[0] in self._opts and pid not in self._opts[s[0]][1]
        )
        bad, good = _loss_of(source, first.line), _loss_of(source, mine.line)
        every = rec.modules.all_params()
        names = {id(p): n for p, n in every}
        model = _model_of(names, params)
        theirs = self._opts.get(theirs_key)
        other_model = _model_of(names, [p for p, _ in every if theirs is not None and id(p) in theirs[1]])
        numbers = _split([(h.before, h.after) for h, _, _ in leaked])
        title = f"{label}.step() also followed {bad}'s gradient"
        filled = f"the gradients of {model}" if model else f"gradients of {label}'s parameters"
        if other_model:
            filled += f" as well as {other_model}'s"
        kept = f"{model}'s" if model else "those"
        callers = "|".join(re.escape(c) for c in (label, *model.split(" and ")) if c)
        zero, zeroer = _line_of(source, rf"\b({callers})\.zero_grad\(", range(first.line or 0, 0, -1))
        cleared = (
            f"since {zeroer}.zero_grad() (line {zero}) ran before that backward(), not after it"
            if zero is not None
            else "and nothing cleared them after it"
        )
        calls = len({w.index for _, foreign, _ in leaked for w in foreign if w.line == first.line})
        message = (
            f"{bad}.backward() at line {first.line}{f' ({calls} calls of it)' if calls > 1 else ''} "
            f"filled {filled}; {other}.step() at line "
            f"{other_line} used its own and left {kept} in .grad, {cleared}. "
            f"{good}.backward() at line {mine.line} added to "
            f"them, so {label}.step() at line {line} followed the sum of both losses' gradients."
        )
        if numbers is not None:
            leak_norm, own_norm, cosine = numbers
            message += (
                f" Of what it followed, {bad}'s part has norm {leak_norm:.3g} and {good}'s {own_norm:.3g}"
            )
            if cosine < -0.2:
                message += f", pointing against it (cosine {cosine:.2f}): {bad}'s part undoes {good}'s."
            else:
                message += (
                    f" (cosine {cosine:.2f}): {bad}'s part steers {model or 'them'} toward {bad}'s goal."
                )
        where = f"before {good}.backward() (line {mine.line}), after {other}.step() (line {other_line})"
        fix = (
            f"Move {zeroer}.zero_grad() from line {zero} to just {where}"
            if zero is not None
            else f"Call {label}.zero_grad() {where}"
        )
        fix += f": {label}.step() then follows {good} alone."
        made, _ = _line_of(source, rf"^\s*{re.escape(bad)}\s*=", range(first.line or 0, 0, -1))
        code = quoted_code(source, made, 10_000) if made is not None else None
        if code is not None and model and _fed_to(code, model.split(" and "), other_model.split(" and ")):
            fix += (
                f" Better still, keep {bad} off {model}: compute it from a .detach()ed copy of what "
                f"{model} made (a GAN's D(fake.detach())), which also saves the backward through {model}."
            )
        if bad.isidentifier() and good.isidentifier() and (numbers is None or numbers[2] >= -0.2):
            fix += (
                f" (If {label} is meant to follow {bad} too, say so in one backward(): "
                f"({bad} + {good}).backward(), then step both optimizers.)"
            )
        return first.line if first.line is not None else line, title, message, fix


def _loss_of(source: Any, line: int | None) -> str:
    """The name of the tensor the backward() at ``line`` starts from, or ``the loss of line N``."""
    code = quoted_code(source, line, 10_000) if line is not None else None
    found = _BACKWARD_OF.search(code) if code is not None else None
    if found is None:
        return f"the loss of line {line}"
    return found.group(1) or found.group(2)


def _fed_to(code: str, models: list[str], others: list[str]) -> bool:
    """Whether ``code`` (the leaked loss's line) reaches ``models`` only through what they
    made: it calls none of them, or each call sits inside a call of one of ``others``
    (``C(G(z))``: detaching G's output cuts it, where ``-critic(s, actor(s))`` cannot)."""
    for m in models:
        for found in re.finditer(rf"\b{re.escape(m)}\(", code):
            enclosing: list[str] = []
            for call in re.finditer(r"([^\W\d][\w.]*)?\(|\)", code[: found.start()]):
                if call.group(0) == ")":
                    if enclosing:
                        enclosing.pop()
                else:
                    enclosing.append(call.group(1) or "")
            if not any(o and o in enclosing for o in others):
                return False
    return True


def _line_of(source: Any, pattern: str, lines: range) -> tuple[int | None, str]:
    """The first of ``lines`` whose code matches ``pattern``, with the match's first group
    (or all of it); ``(None, "")`` where none does."""
    compiled = re.compile(pattern)
    for at in lines:
        code = quoted_code(source, at, 10_000)
        found = compiled.search(code) if code is not None else None
        if found is not None:
            return at, found.group(1) if compiled.groups else found.group(0)
    return None, ""


def _model_of(names: dict[int, str], params: list[torch.Tensor]) -> str:
    """The models ``params`` belong to, by the first part of their names (``G``, ``q1 and q2``)."""
    roots = list(dict.fromkeys(names[id(p)].split(".", 1)[0] for p in params if id(p) in names))
    return " and ".join(roots[:3]) if 0 < len(roots) <= 3 else ""


def _split(parts: list[tuple[torch.Tensor | None, torch.Tensor | None]]) -> tuple[float, float, float] | None:
    """The norms of the leaked and the own part of the leaked parameters' gradients, and their
    cosine, from each one's gradient before and after its own backward() (``None`` where one
    was not copied)."""
    leak_sq = own_sq = dot = 0.0
    with torch.no_grad():
        for before, after in parts:
            if before is None or after is None:
                return None
            b = before.double()
            own = after.double() - b
            leak_sq += float(b.pow(2).sum())
            own_sq += float(own.pow(2).sum())
            dot += float((b * own).sum())
    if leak_sq == 0 or own_sq == 0:
        return None
    return math.sqrt(leak_sq), math.sqrt(own_sq), dot / math.sqrt(leak_sq * own_sq)
