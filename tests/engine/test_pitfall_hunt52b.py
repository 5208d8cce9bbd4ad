"""A false-alarm hunt on activation-applied-twice, data-edit-hidden-from-autograd and
parameter-never-initialised over 226 correct snippets that come close to each. Activations
applied twice on purpose or nearly (attention over attention, capsule routing, gates of gates,
expert-choice routing, Gumbel-softmax, label smoothing, distillation at a temperature, Sinkhorn
in both domains, hierarchical softmax, sparsemax, calibrated sigmoids and ``torch.special.expit``
read by a threshold, temperature and Platt scaling, the chain rule checked by hand); ``.data`` in
old and legitimate code (optimizers and momentum by hand, the WGAN clip, weight norm, spectral
norm and pruning masks before the forward, EMA, mean teachers, BYOL, DINO, DQN and DDPG targets,
the neural-style L-BFGS closure in its old and new forms, gradient penalties, FGSM, SAM, MAML,
Reptile, SWA, Lookahead, SGLD, binary weights, ``param.data = param.data.half()``, truncated
BPTT, a MoCo queue); and ``torch.empty`` or ``torch.Tensor(sizes)`` filled before
it is read (``out=`` ops, ``index_put_``, ``scatter_``, ``bernoulli_`` masks, ``reset_parameters``
from ``__init__``, from a parent or a mixin, ``self.apply``, ``nn.init`` on ``.data``, NoisyNet,
positional encodings, ``torch.Tensor(list)``, ``load_state_dict``, parametrizations, a
``torch.empty(0)`` grown by ``torch.cat``). The corpus is ``pitfall_hunt52b_snippets.txt``.

False alarms found, each now silent, its bug still told:

- activation-applied-twice (activation_twice.py), of sigmoids stacked on purpose: a loop that
  squashes its own output six times to show the gradient vanishing (into ``mse_loss``), or thirty
  times to find sigmoid's fixed point (read by ``> 0.5``). An activation applied to an output
  already squashed twice makes the stack deliberate, and none of its lines is said;
- parameter-never-initialised (uninitialised.py), of ``vector_to_parameters(vec, m.parameters())``
  into a layer made with ``torch.empty``: its ``vec[i:j].view_as(param)`` reads only the shape of
  ``param`` before it writes ``param.data``. ``view_as``, ``expand_as``, ``reshape_as`` and
  ``type_as`` read the values of their first tensor only;
- parameter-never-initialised (uninitialised_sites.py), of ``t = torch.empty(3)`` filled through
  NumPy (``t.numpy()[:] = arr``, an alias ``a = t.numpy()`` written by rows, ``np.copyto``): the
  tape sees no such write and no version moves. The tensor is not said where the source writes
  through its ``.numpy()``;
- data-edit-hidden-from-autograd (data_edit.py), of a replay buffer that gets a new row through
  ``buf.data[n] = x`` while a graph holds ``buf[:n]``: the write is kept with the bytes it wrote
  (``memory.UnseenWrite.span``), and a saved tensor is said only where they meet its own;
- data-edit-hidden-from-autograd, of an IndRNN cell that clips its recurrent weight at every call
  (``self.w_hh.data.clamp_(-1, 1)``), run at each time step, and of cells that mask their weight
  (``self.W.data.mul_(self.mask)``) or zero a row (``self.emb.data[0] = 0.0``) so: a write that
  changes nothing made twice (data_edit_writes.py: a clamp, a fill, a 0/1 mask, a copy of an
  unchanged tensor), made as the last write to that memory was, with the same arguments and no
  optimizer step between, changes nothing;
- data-edit-hidden-from-autograd, of a cell that renormalises its weight's rows at every call
  (``self.W.data.div_(norm.clamp(min=1.0))``), run at each time step: a multiplication or division
  by exactly 1, or an addition of exactly 0, everywhere, changes nothing;
- data-edit-hidden-from-autograd, of probabilities clamped for the log through
  ``p.data.clamp_(1e-7, 1 - 1e-7)`` that none reached: a clamp after which no value sits at a
  bound changed none;
- data-edit-hidden-from-autograd, of a frozen convolution's input clamped after the forward: a
  product-like node (multiplication, matrix products, convolution) keeps each operand for the
  others' gradients only, and none of them needs one.

Other kinds met on the way (a true positive of a snippet first written wrong, rewritten, aside):
loss-diverging at a learning rate too large for inputs near 3. Left to their own modules, and out
of the corpus (silent since hunt 52c, test_pitfall_hunt52c.py): loss-tensor-accumulated of capsule routing's ``b = b + agreement`` over three
iterations; parameter-not-optimized of a head replaced by model surgery and of an A3C-style local
model whose gradients are copied to a shared one; missing-zero-grad of a GAN updated by hand in
the DCGAN order; and data-edit-hidden-from-autograd of a weight centred through ``.data`` at
every call of a layer run twice in one graph (``w.data.sub_(w.data.mean(…))``: after the first
call only rounding changes it: hunt 52c reads the size of the change from the write's operand).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.engine.snippets import corpus, recorded_silently, the_pitfall

_SNIPPETS = corpus(Path(__file__).with_name("pitfall_hunt52b_snippets.txt"))


@pytest.mark.parametrize("name", sorted(_SNIPPETS))
def test_each_correct_snippet_of_the_corpus_stays_silent(name: str) -> None:
    recorded_silently(_SNIPPETS[name])


# two sigmoids written out, read by a loss: the output activation applied twice
SIGMOID_TWICE_INTO_A_LOSS = """\
import torch, torch.nn.functional as F
x = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)
y = torch.sigmoid(torch.sigmoid(x))
loss = F.mse_loss(y, torch.zeros(3))
loss.backward()
print(x.grad)
"""


@pytest.mark.parametrize("name", ["a51_sigmoid_chain_vanishing_mse", "a52_fixed_point_of_sigmoid"])
def test_sigmoids_stacked_on_purpose_are_not_an_activation_applied_twice(name: str) -> None:
    recorded_silently(_SNIPPETS[name])


def test_two_sigmoids_read_by_a_loss_are_still_said() -> None:
    said = the_pitfall(SIGMOID_TWICE_INTO_A_LOSS, "activation-applied-twice", 3)
    assert "mse_loss at line 4" in said.message


# a view of a vector shaped like a parameter never filled, then the parameter read
VIEW_AS_THEN_READ = """\
import torch, torch.nn as nn
torch.manual_seed(0)
w = nn.Parameter(torch.empty(3, 2))
part = torch.randn(6).view_as(w)
out = part + w
out.sum().backward()
print(w.grad.shape)
"""


def test_a_tensor_read_for_its_shape_by_view_as_before_it_is_filled_is_not_said() -> None:
    recorded_silently(_SNIPPETS["u55_vector_to_parameters"])


def test_a_tensor_never_filled_is_still_said_where_it_is_read_after_view_as() -> None:
    said = the_pitfall(VIEW_AS_THEN_READ, "parameter-never-initialised", 3)
    assert "It is first used at line 5 (out = part + w)" in said.message


# a NumPy alias taken, never written: the tensor is read as the allocator left it
NUMPY_ALIAS_NOT_WRITTEN = """\
import numpy as np, torch
t = torch.empty(3)
a = t.numpy()
print(a.shape, (t * 0).shape)
"""


@pytest.mark.parametrize("name", ["u60_numpy_view_write", "u85_numpy_alias_write", "u86_numpy_copyto"])
def test_a_tensor_filled_through_numpy_is_not_said(name: str) -> None:
    recorded_silently(_SNIPPETS[name])


def test_a_tensor_whose_numpy_alias_is_only_taken_is_still_said() -> None:
    the_pitfall(NUMPY_ALIAS_NOT_WRITTEN, "parameter-never-initialised", 2)


# a row inside the rows the graph holds, changed through .data before backward()
BUFFER_ROW_INSIDE_THE_BATCH = """\
import torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0)
buf = torch.randn(16, 4)
net = nn.Linear(4, 1)
batch = buf[:8]
loss = F.mse_loss(net(batch), batch.sum(1, keepdim=True))
buf.data[3] = torch.zeros(4)
loss.backward()
print(net.weight.grad)
"""


def test_a_row_written_outside_the_rows_a_graph_saved_is_not_said() -> None:
    recorded_silently(_SNIPPETS["d58_replay_buffer_disjoint_row"])


def test_a_row_written_inside_the_rows_a_graph_saved_is_still_said() -> None:
    said = the_pitfall(BUFFER_ROW_INSIDE_THE_BATCH, "data-edit-hidden-from-autograd", 7)
    assert "the backward() at line 8" in said.message


# the cell clips its recurrent weight after using it, from a start outside the bounds, and the
# first step's input needs a gradient, so the first use saved the weight as it was
CLIP_AFTER_USE = """\
import torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0)
class IndRNNCell(nn.Module):
    def __init__(self, i, h):
        super().__init__()
        self.w_ih = nn.Linear(i, h)
        self.w_hh = nn.Parameter(torch.rand(h) * 4 - 2)
    def forward(self, x, h):
        out = F.relu(self.w_ih(x) + self.w_hh * h)
        self.w_hh.data.clamp_(-1.0, 1.0)
        return out
cell = IndRNNCell(3, 5)
xs = torch.randn(4, 8, 3)
h = torch.zeros(8, 5, requires_grad=True)
for t in range(4):
    h = cell(xs[t], h)
h.sum().backward()
print(cell.w_hh.grad.shape)
"""


def test_a_weight_clipped_to_the_same_bounds_at_every_call_is_not_said() -> None:
    recorded_silently(_SNIPPETS["d57_indrnn_recurrent_clip_per_step"])


def test_a_weight_clipped_after_a_use_that_saved_it_unclipped_is_still_said() -> None:
    said = the_pitfall(CLIP_AFTER_USE, "data-edit-hidden-from-autograd", 10)
    assert "after MulBackward0 (line 9) saved" in said.message


# one probability saturates at exactly 1.0, which the clamp moves to its bound
SATURATED_PROBABILITY_CLAMPED = """\
import torch
z = torch.tensor([0.0, 40.0], requires_grad=True)
p = torch.sigmoid(z)
p.data.clamp_(1e-7, 1 - 1e-7)
loss = -torch.log(p).sum()
loss.backward()
print(z.grad)
"""


def test_a_clamp_that_changed_no_value_is_not_said() -> None:
    recorded_silently(_SNIPPETS["d69_probs_clamped_through_data"])


def test_a_clamp_that_moved_a_value_to_its_bound_is_still_said() -> None:
    said = the_pitfall(SATURATED_PROBABILITY_CLAMPED, "data-edit-hidden-from-autograd", 4)
    assert "after SigmoidBackward0 (line 3) saved it" in said.message


# the frozen convolution's weight, which its input's gradient needs, changed after the forward
FROZEN_WEIGHT_CHANGED = """\
import torch, torch.nn as nn
torch.manual_seed(0)
net = nn.Conv2d(3, 2, 3, padding=1)
for p in net.parameters():
    p.requires_grad_(False)
img = torch.rand(1, 3, 5, 5, requires_grad=True)
act = net(img)
net.weight.data.mul_(2)
act.pow(2).mean().backward()
print(img.grad.abs().sum() > 0)
"""
# x * x keeps x for x's own gradient
SQUARE_CHANGED = """\
import torch
x = torch.tensor([1.0, 2.0], requires_grad=True)
y = (x * x).sum()
x.data.mul_(3)
y.backward()
print(x.grad)
"""


def test_an_operand_saved_only_for_a_frozen_operand_s_gradient_is_not_said() -> None:
    recorded_silently(_SNIPPETS["d70_conv_frozen_input_clamped_after_forward"])


@pytest.mark.parametrize(("source", "line"), [(FROZEN_WEIGHT_CHANGED, 8), (SQUARE_CHANGED, 4)])
def test_an_operand_saved_for_a_gradient_backward_computes_is_still_said(source: str, line: int) -> None:
    the_pitfall(source, "data-edit-hidden-from-autograd", line)


# the cell masks its weight after using it, from a weight not masked yet, and the first step's
# input needs a gradient, so the first use saved the weight unmasked
MASK_AFTER_USE = """\
import torch, torch.nn as nn
torch.manual_seed(0)
class SparseCell(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.W = nn.Parameter(torch.randn(d, d) * 0.3)
        self.register_buffer("mask", (torch.rand(d, d) > 0.5).float())
    def forward(self, x, h):
        out = torch.tanh(x + h @ self.W)
        self.W.data.mul_(self.mask)
        return out
cell = SparseCell(5)
xs = torch.randn(4, 3, 5)
h = torch.zeros(3, 5, requires_grad=True)
for t in range(4):
    h = cell(xs[t], h)
h.pow(2).mean().backward()
print(cell.W.grad.shape)
"""


@pytest.mark.parametrize(
    "name", ["d71_sparse_rnn_mask_in_forward_each_step", "d72_fixed_row_reset_each_call"]
)
def test_a_mask_or_a_fill_made_again_at_every_call_is_not_said(name: str) -> None:
    recorded_silently(_SNIPPETS[name])


def test_a_mask_applied_after_a_use_that_saved_the_weight_unmasked_is_still_said() -> None:
    said = the_pitfall(MASK_AFTER_USE, "data-edit-hidden-from-autograd", 10)
    assert "after MmBackward0 (line 9) saved" in said.message


# the cell renormalises its rows after using them, from rows of norm above 1, and the first
# step's input needs a gradient, so the first use saved them as they were
RENORMALISED_AFTER_USE = """\
import torch, torch.nn as nn
torch.manual_seed(0)
class NormCell(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.W = nn.Parameter(torch.randn(d, d) * 2)
    def forward(self, h):
        out = torch.tanh(h @ self.W.t())
        self.W.data.div_(self.W.data.norm(dim=1, keepdim=True).clamp(min=1.0))
        return out
cell = NormCell(4)
h = torch.randn(8, 4, requires_grad=True)
for t in range(3):
    h = cell(h)
h.pow(2).mean().backward()
print(cell.W.grad.shape)
"""


def test_a_division_by_exactly_one_is_not_said() -> None:
    recorded_silently(_SNIPPETS["d60_weightnorm_in_forward_rnn_steps"])


def test_rows_renormalised_after_a_use_that_saved_them_are_still_said() -> None:
    said = the_pitfall(RENORMALISED_AFTER_USE, "data-edit-hidden-from-autograd", 9)
    assert "after MmBackward0 (line 8) saved" in said.message
