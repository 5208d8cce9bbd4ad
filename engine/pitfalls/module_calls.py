"""What the detectors follow of a model's calls: the mode each forward ran in.

:class:`ModeWatch` sees every call of a dropout or batch-norm layer and of a model called as
a whole (:meth:`ModeWatch.needs_calls_of`). From them it says train-mode-in-evaluation at
once, tells eval-mode-in-training at the next optimizer step (:meth:`ModeWatch.stepped`),
and keeps the forwards run in eval mode with gradients on for graph-built-in-evaluation
(:attr:`ModeWatch.eval_forwards`, judged at the end of the run in run_end.py). What the two
mode pitfalls say, and the source reading that keeps them quiet, is in modes.py.
"""

from __future__ import annotations

import functools
import re
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from ..source import named_tensors, snippet_frames
from .modes import (
    eval_left_on_report,
    not_an_evaluation,
    run_by_library,
    train_kept_on_purpose,
    train_mode_in_evaluation_explained,
)

if TYPE_CHECKING:
    from ..recorder import Recorder

__all__ = ["ModeWatch"]

_STOCHASTIC = (nn.modules.dropout._DropoutNd, nn.modules.batchnorm._BatchNorm)
_EVAL_WRITTEN = re.compile(r"\.eval\(\)")


_EVAL_REASON = re.compile(r"(?i)dropout|batch.?norm|\bbn\b|running (?:stat|mean|var)|freez|frozen|determinis")


def _eval_comment_explains(source_lines: list[str]) -> bool:
    """Whether a comment on a line that calls ``.eval()``, or on the comment lines right above
    it, speaks of dropout, batch norm, its running statistics, freezing or determinism: eval
    mode kept for training on purpose (batch norm on its pretrained statistics with a batch of
    one, a policy's log-probabilities without dropout)."""
    for at, line in enumerate(source_lines):
        if not _EVAL_WRITTEN.search(line):
            continue
        comments = [line.partition("#")[2]]
        above = at - 1
        while above >= 0 and source_lines[above].lstrip().startswith("#"):
            comments.append(source_lines[above])
            above -= 1
        if any(_EVAL_REASON.search(comment) for comment in comments):
            return True
    return False


def _switched_off(module: nn.Module) -> bool:
    """A dropout of p = 0: the same in either mode."""
    return isinstance(module, nn.modules.dropout._DropoutNd) and module.p == 0


class ModeWatch:
    """The modes of one run's dropout, batch-norm and whole-model calls.

    ``say`` is the watch's emitter (``PitfallWatch._say``): it takes a kind, a line and
    the title, message and fix.
    """

    def __init__(self, rec: Recorder, say: Callable[..., None]) -> None:
        self._rec = rec
        self._say = say
        # eval-mode-in-training: dropout and batch-norm layers seen in training mode, and the
        # class of one that, with gradients on, last ran before the coming step in eval mode
        # (with the model called as a whole that holds it, if known: a step that does not update
        # that model, G's beside a discriminator put in eval for it, is not trained in eval mode)
        self._trained: weakref.WeakSet[nn.Module] = weakref.WeakSet()
        self._eval_since_step: tuple[str, weakref.ref[nn.Module], weakref.ref[nn.Module] | None] | None = None
        self._root_training = False  # the mode of the last model called as a whole with grad on
        self._root_now_training = True  # the mode of the last model called as a whole
        self._root_frozen = False  # that model in eval, all frozen (a linear probe's backbone)
        self._root: weakref.ref[nn.Module] | None = None  # that model
        # eval-mode-in-training before any training-mode call (model.eval() and then a fine-tuning
        # loop): the class of a dropout that ran in eval mode, with gradients on, in the model
        # called as a whole, with every parameter trainable; said if the coming step updates it
        self._eval_from_start: tuple[str, weakref.ref[nn.Module]] | None = None
        # graph-built-in-evaluation: (line, backward calls at that time) of each forward of a
        # whole model in eval mode with gradients on and a parameter that requires grad (a
        # frozen model's forward records no graph), and the lines of such forwards a backward
        # came right after (before the next model call): an attack's or a probe's loop
        self._eval_forwards: list[tuple[int | None, int]] = []
        self._backed_lines: set[int | None] = set()
        self._last_eval_forward: tuple[int | None, int] | None = None  # until the next model call

    @staticmethod
    def needs_calls_of(module: nn.Module, is_root: bool) -> bool:
        """Whether :meth:`on_module_call` must see ``module``'s calls: dropout and batch norm,
        and models with parameters called as a whole (a loss module, also called as a whole,
        holds no graph of its own worth flagging)."""
        if isinstance(module, _STOCHASTIC):
            return True
        return is_root and next(named_tensors(module, "_parameters"), None) is not None

    def on_module_call(self, module: nn.Module, is_root: bool) -> None:
        """Look at ``module`` about to run its forward (``is_root``: called as a whole)."""
        grad_on = torch.is_grad_enabled()
        if is_root:
            self._root_now_training = module.training
        if not grad_on and module.training and isinstance(module, _STOCHASTIC):
            self._trained_in_evaluation(module, is_root)
        if is_root and grad_on:
            self._root_training = module.training
            self._root_frozen = not module.training and not any(p.requires_grad for p in module.parameters())
            self._root = weakref.ref(module)
        if is_root and grad_on:
            self._note_backed_forward()
        if is_root and grad_on and not module.training and any(p.requires_grad for p in module.parameters()):
            _, _, top, _ = snippet_frames()
            self._last_eval_forward = (top, self._rec.backward.calls)
            self._eval_forwards.append(self._last_eval_forward)
        if grad_on and isinstance(module, _STOCHASTIC):
            # the last such call before a step tells the mode that step's forward ran in
            if module.training:
                self._trained.add(module)
                self._eval_since_step = self._eval_from_start = None
            elif not self._trained:
                self._untrained_in_eval(module)
            elif module in self._trained and not (
                _switched_off(module) or self._root_training or self._root_frozen
            ):
                # (a layer put in eval mode inside a model that trains: batch norm frozen on purpose)
                self._eval_since_step = (type(module).__name__, weakref.ref(module), self._root)

    @property
    def eval_forwards(self) -> list[tuple[int | None, int]]:
        """Each forward of a whole model run in eval mode with gradients on and a parameter
        that requires grad: its line and the backward() calls made by then. Left out: a forward
        no backward came after, on a line where an earlier forward had a backward right after
        it (before the next model call): the last turn of a loop that stops before its
        backward, an attack that already flipped the prediction."""
        self._note_backed_forward()
        calls = self._rec.backward.calls
        return [
            (line, made)
            for line, made in self._eval_forwards
            if not (made == calls and line in self._backed_lines)
        ]

    def _note_backed_forward(self) -> None:
        """At a model call (or the run's end): note the line of the eval-mode forward that was
        the last model call if a backward came after it."""
        if self._last_eval_forward is not None:
            line, made = self._last_eval_forward
            if self._rec.backward.calls > made:
                self._backed_lines.add(line)
            self._last_eval_forward = None

    def stepped(self, step: int, line: int | None, params: list[torch.Tensor]) -> None:
        """An optimizer's step ``step``, at ``line``, over ``params``: say
        eval-mode-in-training if the forward before it ran a layer, trained before, in eval
        mode, or (no layer having trained yet) a dropout of a model in eval mode whose
        parameters this step updates: ``model.eval()`` before a fine-tuning loop."""
        since_step, self._eval_since_step = self._eval_since_step, None
        from_start, self._eval_from_start = self._eval_from_start, None
        stepped = {id(p) for p in params}
        kind = None
        if since_step is not None:
            name, layer, root = since_step[0], since_step[1](), self._model(since_step[2])
            # the model called as a whole at that call, where it holds the layer (looked up once
            # a step, not at each of the layer's calls)
            held = root is not None and layer is not None and any(m is layer for m in root.modules())
            updated = root is not None and any(id(p) in stepped for p in root.parameters())
            if not held or updated:
                kind = name
        if kind is None and from_start is not None:
            root = from_start[1]()
            if root is not None and any(id(p) in stepped for p in root.parameters()):
                kind = from_start[0]
        if kind is not None:
            report = eval_left_on_report(kind, step, line, self._rec.statement_lines)
            self._say("eval-mode-in-training", *report)

    @functools.cached_property
    def _eval_unexplained(self) -> bool:
        """Whether the snippet writes ``.eval()`` with no comment there saying why (dropout, batch
        norm…): :func:`_eval_comment_explains`; its source read once."""
        source = self._rec.source_lines
        written = any(_EVAL_WRITTEN.search(line) for line in source)
        return written and not _eval_comment_explains(source)

    @staticmethod
    def _model(ref: weakref.ref[nn.Module] | None) -> nn.Module | None:
        return ref() if ref is not None else None

    def _untrained_in_eval(self, module: nn.Module) -> None:
        """Note ``module``, in eval mode with gradients on before any layer ran in training
        mode, where it is a dropout inside a model in eval that the snippet switched with
        ``.eval()`` and trains whole. Batch norm is left alone (frozen on purpose while
        fine-tuning), as are a model with frozen parts (its eval mode keeps a backbone as it
        is), a forward whose model no step updates (an attack on the input), and a snippet
        whose comment at its ``.eval()`` says why (:func:`_eval_comment_explains`)."""
        root = self._model(self._root)
        if (
            not isinstance(module, nn.modules.dropout._DropoutNd)
            or _switched_off(module)
            or root is None
            or root.training
            or not self._eval_unexplained
            or not all(p.requires_grad for p in root.parameters())
        ):
            return
        self._eval_from_start = (type(module).__name__, weakref.ref(root))

    def _trained_in_evaluation(self, module: Any, is_root: bool) -> None:
        """A dropout or batch-norm ``module`` in training mode, called with gradients off."""
        # a layer put back in training inside a model in eval (Monte-Carlo dropout by a helper
        # that calls m.train() on each nn.Dropout), or a library's own pass (SWA's update_bn)
        on_purpose = (not is_root and not self._root_now_training) or run_by_library()
        source = self._rec.source_lines
        if on_purpose or _switched_off(module) or train_kept_on_purpose(source) or not_an_evaluation(source):
            return
        _, _, top, _ = snippet_frames()
        self._say("train-mode-in-evaluation", top, *train_mode_in_evaluation_explained(type(module).__name__))
