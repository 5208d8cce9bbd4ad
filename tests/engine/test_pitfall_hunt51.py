"""A false-alarm hunt over 272 correct snippets in genres earlier hunts skipped: diffusion
and score models (DDPM noise prediction and sampling, DDIM, flow matching, classifier-free
guidance), contrastive learning (SimCLR, CLIP, MoCo, BYOL, SupCon, triplets), normalizing flows
(RealNVP, planar, Glow), PINNs (``autograd.grad`` with ``create_graph``, L-BFGS, ``vmap`` of a
hessian), NeRF-style MLPs (positional encodings, SIREN, Fourier features, hierarchical
sampling), graph networks by hand (``index_add``, ``scatter_add``, GAT, an edge softmax),
MAML (``functional_call``, ``torch.func.grad``, first-order, Reptile), RL (REINFORCE with a
baseline, PPO with GAE and value clipping, A2C, DQN and DDPG soft updates, SAC's alpha),
distillation (``kl_div`` with temperature, hints, attention transfer), VAEs (the KL written a
dozen ways), attention written by hand (einsum, ``unflatten``, heads first, sequence first,
multi-query, grouped-query, RoPE, windows, cross attention), fine-tuning with ``eval()`` on
purpose, every scheduler, optimizers rebuilt on purpose, hooks removed in the loop, softmax
over dim 0 on purpose, AMP, accumulation, checkpointing, custom ``autograd.Function``,
``torch.func``, early stopping, EMA, weight tying, pruning and fake quantization. The corpus
is ``pitfall_hunt51_snippets.txt``; the false alarms found are written out below.

False alarms found, each now silent, its bug still told:

- reshape-instead-of-permute (axis_order.py), of heads folded into the batch axis as
  ``nn.MultiheadAttention`` does, ``q.reshape(T, B * H, D).transpose(0, 1)`` and
  ``o.transpose(0, 1).contiguous().view(T, B, C)`` (on one line or two), whose toy sizes
  (``B * H == C``, ``D == B``) are the input's in another order: a line that moves the axes
  right before or after its reshape, or a view of the ``.contiguous()`` copy of a transpose
  that does not put the sizes back, only regroups neighbours;
- reshape-instead-of-permute, of neighbouring frames stacked with ``x.reshape(B, n_pairs,
  2 * D)`` or ``x.reshape(B, -1, 2 * D)`` of ``(B, T, D)``: a whole number times the size the
  axis had is a regrouping, as ``T // 2`` already was;
- functional-dropout-in-eval (functional_dropout.py), of Monte-Carlo dropout switched by a flag,
  ``F.dropout(h, p, training=self.training or mc)`` and ``F.dropout(h, p) if self.training or
  mc else h``: a line that passes or reads the mode chose it;
- train-mode-in-evaluation (modes.py), of test-time adaptation, batch norm run in training
  mode on the test batch under ``no_grad()`` once, its ``model.train()`` commented with why.

The seq-first heads merge of two lines run under ``torch.no_grad()`` (no graph shows the
transpose), left told here, is silent since hunt 52 (test_pitfall_hunt52.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.engine.snippets import corpus, recorded_silently, the_pitfall

_SNIPPETS = corpus(Path(__file__).with_name("pitfall_hunt51_snippets.txt"))


@pytest.mark.parametrize("name", sorted(_SNIPPETS))
def test_each_correct_snippet_of_the_corpus_stays_silent(name: str) -> None:
    recorded_silently(_SNIPPETS[name])


# heads folded into the batch axis, sequence first, as F.multi_head_attention_forward does; the
# merge back on one line (reshape-instead-of-permute: (B * H, T, D) moved to (T, B * H, D) and
# viewed (T, B, C), whose toy sizes (6, 8, 2) and (6, 2, 8) are one another's in another order)
HEADS_FOLDED_ONE_LINE = """\
import torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0)
# sequence-first layout (T, B, C) as nn.MultiheadAttention's default
T, B, C, H = 6, 2, 8, 4
in_proj = nn.Linear(C, 3 * C); out_proj = nn.Linear(C, C)
opt = torch.optim.Adam([*in_proj.parameters(), *out_proj.parameters()], lr=1e-3)
x = torch.randn(T, B, C)
for i in range(5):
    q, k, v = in_proj(x).chunk(3, -1)
    q = q.contiguous().view(T, B * H, C // H).transpose(0, 1)
    k = k.contiguous().view(T, B * H, C // H).transpose(0, 1)
    v = v.contiguous().view(T, B * H, C // H).transpose(0, 1)
    w = torch.bmm(q, k.transpose(1, 2)) / (C // H) ** 0.5
    w = F.softmax(w, dim=-1)
    o = torch.bmm(w, v).transpose(0, 1).contiguous().view(T, B, C)
    loss = out_proj(o).pow(2).mean()
    opt.zero_grad(); loss.backward(); opt.step()
print(round(loss.item(), 5))
"""

# the same written over lines: q, k, v split then moved on the line (.transpose after the
# reshape), the heads merged back from the .contiguous() copy of a transpose made a line above
HEADS_FOLDED_OVER_LINES = """\
import torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0)
# nn.functional.multi_head_attention_forward, written out: heads folded into the batch axis
T, B, C, H = 6, 2, 8, 4
in_proj = nn.Linear(C, 3 * C); out_proj = nn.Linear(C, C)
opt = torch.optim.Adam([*in_proj.parameters(), *out_proj.parameters()], lr=1e-3)
x = torch.randn(T, B, C)
head_dim = C // H
for i in range(5):
    q, k, v = in_proj(x).chunk(3, -1)
    q = q.reshape(T, B * H, head_dim).transpose(0, 1)
    k = k.reshape(T, B * H, head_dim).transpose(0, 1)
    v = v.reshape(T, B * H, head_dim).transpose(0, 1)
    attn = torch.softmax(q @ k.transpose(1, 2) * head_dim ** -0.5, dim=-1)
    o = torch.bmm(attn, v)                 # (B*H, T, head_dim)
    o = o.transpose(0, 1).contiguous()     # (T, B*H, head_dim)
    o = o.view(T, B, C)
    loss = out_proj(o).pow(2).mean()
    opt.zero_grad(); loss.backward(); opt.step()
print(round(loss.item(), 5))
"""

# a pyramidal encoder stacking neighbouring frames: (3, 4, 2) into (3, 2, 4), with the halved
# time axis named on another line (n_pairs) and the features written 2 * D
FRAMES_STACKED_NAMED = """\
import torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0)
# pyramidal encoder: stack neighbouring frames, halving the time axis each layer
B, T, D = 3, 4, 2
x = torch.randn(B, T, D)
proj = nn.Linear(2 * D, D)
opt = torch.optim.SGD(proj.parameters(), lr=0.1)
n_pairs = T // 2
for step in range(4):
    stacked = x.reshape(B, n_pairs, 2 * D)
    loss = proj(stacked).pow(2).mean()
    opt.zero_grad(); loss.backward(); opt.step()
print(round(loss.item(), 4))
"""

FRAMES_STACKED_MINUS_ONE = """\
import torch, torch.nn as nn
torch.manual_seed(0)
B, T, D = 3, 4, 2
x = torch.randn(B, T, D)
proj = nn.Linear(2 * D, 3)
opt = torch.optim.SGD(proj.parameters(), lr=0.1)
for step in range(4):
    h = proj(x.reshape(B, -1, 2 * D))       # pairs of neighbouring frames side by side
    loss = h.pow(2).mean()
    opt.zero_grad(); loss.backward(); opt.step()
print(round(loss.item(), 4))
"""

# Monte-Carlo dropout asked for by a flag, passed as training= (functional-dropout-in-eval)
MC_DROPOUT_BY_FLAG = """\
import torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0)
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 16); self.fc2 = nn.Linear(16, 1)
    def forward(self, x, mc=False):
        h = F.relu(self.fc1(x))
        h = F.dropout(h, p=0.2, training=self.training or mc)
        return self.fc2(h)
net = Net(); opt = torch.optim.Adam(net.parameters(), lr=1e-2)
X, y = torch.randn(40, 4), torch.randn(40, 1)
for step in range(6):
    loss = F.mse_loss(net(X), y)
    opt.zero_grad(); loss.backward(); opt.step()
net.eval()
with torch.no_grad():
    point = net(X[:3])
    samples = torch.stack([net(X[:3], mc=True) for _ in range(10)])
print(point.shape, samples.var(0).shape)
"""

# the same, the flag read on the line in a conditional expression
MC_DROPOUT_BY_CONDITION = MC_DROPOUT_BY_FLAG.replace(
    "F.dropout(h, p=0.2, training=self.training or mc)", "F.dropout(h, p=0.2) if self.training or mc else h"
)

# test-time adaptation: batch norm on the test batch's statistics, said so at model.train()
TEST_TIME_ADAPTATION = """\
import torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 3))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
X, y = torch.randn(32, 4), torch.randint(0, 3, (32,))
for step in range(5):
    loss = F.cross_entropy(model(X), y)
    opt.zero_grad(); loss.backward(); opt.step()
Xtest = torch.randn(16, 4) * 2 + 1
# test-time adaptation: batch norm on the test batch's own statistics (train mode on purpose)
model.train()
with torch.no_grad():
    preds = model(Xtest).argmax(1)
print(preds.shape)
"""


@pytest.mark.parametrize(
    "source",
    [
        HEADS_FOLDED_ONE_LINE,
        HEADS_FOLDED_OVER_LINES,
        FRAMES_STACKED_NAMED,
        FRAMES_STACKED_MINUS_ONE,
        MC_DROPOUT_BY_FLAG,
        MC_DROPOUT_BY_CONDITION,
        TEST_TIME_ADAPTATION,
    ],
    ids=["heads one line", "heads over lines", "frames named", "frames -1", "MC flag", "MC condition", "TTA"],
)
def test_the_false_alarms_found_stay_silent(source: str) -> None:
    recorded_silently(source)


def test_heads_merged_without_the_transpose_are_still_said() -> None:
    # bmm's (B * H, T, D) cut straight into (T, B, C): each position a mix of heads and steps
    source = HEADS_FOLDED_ONE_LINE.replace(
        "torch.bmm(w, v).transpose(0, 1).contiguous().view(T, B, C)", "torch.bmm(w, v).view(T, B, C)"
    )
    p = the_pitfall(source, "reshape-instead-of-permute", 15)
    assert p.title == "view reorders no axis: (8, 6, 2) cut into (6, 2, 8)"


def test_heads_merged_over_lines_without_the_transpose_are_still_said() -> None:
    # the .contiguous() copy of bmm's output is no transpose: nothing was moved
    source = HEADS_FOLDED_OVER_LINES.replace("o = o.transpose(0, 1).contiguous()", "o = o.contiguous()")
    p = the_pitfall(source, "reshape-instead-of-permute", 17)
    assert p.title == "view reorders no axis: (8, 6, 2) cut into (6, 2, 8)"


def test_a_permute_undone_by_a_view_is_still_said() -> None:
    # channels moved last, then "moved back" by a view: the sizes put back as they were
    p = the_pitfall(
        """\
import torch, torch.nn as nn
torch.manual_seed(0)
conv = nn.Conv2d(3, 2, 1)
head = nn.Conv2d(2, 1, 1)
opt = torch.optim.SGD([*conv.parameters(), *head.parameters()], lr=0.1)
imgs = torch.randn(4, 3, 5, 6)
for step in range(3):
    f = conv(imgs)                                  # (N, C, H, W)
    nhwc = f.permute(0, 2, 3, 1).contiguous()       # channels last
    back = nhwc.view(4, 2, 5, 6)
    loss = head(back).pow(2).mean()
    opt.zero_grad(); loss.backward(); opt.step()
print(round(loss.item(), 4))
""",
        "reshape-instead-of-permute",
        10,
    )
    assert p.title == "view reorders no axis: (4, 5, 6, 2) cut into (4, 2, 5, 6)"
    assert p.fix.startswith("Move the axes with .permute(0, 3, 1, 2)")


def test_another_axis_named_as_a_product_is_still_said() -> None:
    # tokens (N, H * W, C) viewed as channels first: H * W names the tokens' axis, not a
    # multiple of the channels one, though H == C here
    p = the_pitfall(
        """\
import torch, torch.nn as nn
torch.manual_seed(0)
N, C, H, W = 2, 2, 2, 2
tokens = torch.randn(N, H * W, C)
conv = nn.Conv1d(C, 3, 1)
opt = torch.optim.SGD(conv.parameters(), lr=0.1)
for step in range(3):
    x = tokens.view(N, C, H * W)
    loss = conv(x).pow(2).mean()
    opt.zero_grad(); loss.backward(); opt.step()
print(round(loss.item(), 4))
""",
        "reshape-instead-of-permute",
        8,
    )
    assert p.title == "view reorders no axis: (2, 4, 2) cut into (2, 2, 4)"


def test_frames_and_features_swapped_are_still_said() -> None:
    p = the_pitfall(
        """\
import torch, torch.nn as nn
torch.manual_seed(0)
B, T, D = 3, 4, 2
x = torch.randn(B, T, D)
conv = nn.Conv1d(D, 3, 1)
opt = torch.optim.SGD(conv.parameters(), lr=0.1)
for step in range(4):
    h = conv(x.reshape(B, D, T))
    loss = h.pow(2).mean()
    opt.zero_grad(); loss.backward(); opt.step()
print(round(loss.item(), 4))
""",
        "reshape-instead-of-permute",
        8,
    )
    assert p.title == "reshape reorders no axis: (3, 4, 2) cut into (3, 2, 4)"


def test_dropout_that_neither_passes_nor_reads_the_mode_is_still_said() -> None:
    source = MC_DROPOUT_BY_FLAG.replace(
        "F.dropout(h, p=0.2, training=self.training or mc)", "F.dropout(h, p=0.2)"
    )
    p = the_pitfall(source, "functional-dropout-in-eval", 9)
    assert p.title == "F.dropout keeps dropping after model.eval()"


def test_training_mode_under_no_grad_with_no_reason_given_is_still_said() -> None:
    # the no_grad()-is-not-eval() mistake: one pass in training mode, nothing says why
    source = "".join(
        line for line in TEST_TIME_ADAPTATION.splitlines(keepends=True) if "adaptation" not in line
    )
    p = the_pitfall(source, "train-mode-in-evaluation", 12)
    assert p.title == "BatchNorm1d still in training mode under no_grad()"
