"""A false-alarm hunt over 228 correct snippets in genres no earlier hunt covered: adversarial
examples (FGSM, PGD through ``delta.data``, ``x.detach().requires_grad_()``, TRADES, free and
fast adversarial training, C&W, DeepFool), input-gradient methods (saliency, integrated
gradients, SmoothGrad, Grad-CAM and Grad-CAM++ with hooks and ``retain_grad``, guided
backprop, deep dream, class visualisation), neural style transfer (L-BFGS with a closure,
``input_img.data.clamp_(0, 1)``, Gram matrices, loss modules that keep a detached target,
AdaIN), energy-based models (Langevin and SGLD, replay buffers, JEM, score matching denoising
and sliced, noise-contrastive estimation, RBMs, a PINN fit through its derivatives),
segmentation (U-Net, dice, ``ignore_index``, class weights, per-pixel masks), detection heads
(smooth L1, focal loss by hand, IoU and GIoU losses, anchor matching, OHEM), recommenders
(matrix factorization, BPR, negative sampling, ``sparse=True`` with ``SparseAdam``, FM,
EmbeddingBag), forecasting (teacher forcing, scheduled sampling, TCNs, truncated BPTT),
tabular (entity embeddings, ``pos_weight``, weighted samplers, wide and deep), mixture density
networks, ordinal and quantile regression, survival (Cox, discrete hazards), sparse and
denoising autoencoders, hypernetworks, neural ODEs by hand, custom initialisation
(``_init_weights``, ``apply``, ``reset_parameters``, ``torch.empty`` then ``nn.init``), sigmoid
and softmax used twice on purpose (gates, attention over attention, pointer-generator), and
``.data`` used as old code does (updates after backward, clamps before the forward, WGAN
clipping, BinaryConnect, EMA and SWA by hand). The corpus is ``pitfall_hunt52_snippets.txt``.

False alarms found, each now silent, its bug still told:

- graph-built-in-evaluation (module_calls.py), of a frozen model (every parameter
  ``requires_grad=False``) run in eval mode with gradients on: its forward records no graph
  unless its input requires grad. A model with no parameter that requires grad is not
  counted (one run on an input that requires grad, with no backward after it, goes untold);
- graph-built-in-evaluation, of an attack loop that stops once the prediction flips
  (DeepFool's ``if out.argmax() != label: break``): its last forward is built for a backward
  the loop then skips. A forward no backward came after, on a line where an earlier forward
  had a backward right after it (before the next model call), is not counted; a validation
  forward on the training line (the next model call comes before any backward) still is;
- parameter-without-gradient (ungraded.py), of the last bias of an energy trained by
  denoising score matching, and of a Hamiltonian network fit by its derivatives (the loss
  is made of ``autograd.grad(E.sum(), x, create_graph=True)``): the derivative of the
  output by the input drops the bias added last, while the layer's weight trains. A bias whose own weight had gradients, in a snippet that takes a derivative
  with ``create_graph=True``, is not said.

Fixed from hunt 51's list: reshape-instead-of-permute (axis_order.py) of the sequence-first
heads merge written over two lines under ``torch.no_grad()`` (``o = o.transpose(0, 1)
.contiguous()``, then ``o = o.view(T, B, C)``): with no graph to show the transpose, the line
that last assigned the view's input is read instead; a permute undone by a view is still told.

The rest are guards: a buggy variant of each genre, told.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from engine import queries as q
from engine import record
from tests.engine.snippets import corpus, recorded_silently, the_pitfall

_SNIPPETS = corpus(Path(__file__).with_name("pitfall_hunt52_snippets.txt"))


@pytest.mark.parametrize("name", sorted(_SNIPPETS))
def test_each_correct_snippet_of_the_corpus_stays_silent(name: str) -> None:
    recorded_silently(_SNIPPETS[name])


# a linear probe on a frozen backbone, whose features are also looked at after training in
# eval mode with gradients on: no parameter of the backbone requires grad, so no graph is built
FROZEN_BACKBONE_PROBE = """\
import torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0)
backbone = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 8))
backbone.requires_grad_(False)
backbone.eval()
probe = nn.Linear(8, 2)
opt = torch.optim.SGD(probe.parameters(), lr=0.1)
X, y = torch.randn(32, 6), torch.randint(0, 2, (32,))
for step in range(5):
    loss = F.cross_entropy(probe(backbone(X)), y)
    opt.zero_grad(); loss.backward(); opt.step()
feats = backbone(X[:4])
print(feats.shape)
"""

# DeepFool: each turn takes the gradient of the forward it ran, and the loop stops at the
# turn whose prediction flipped, before that gradient
DEEPFOOL_STOPS_EARLY = """\
import torch, torch.nn as nn
torch.manual_seed(0)
net = nn.Sequential(nn.Linear(3, 6), nn.Tanh(), nn.Linear(6, 2)).eval()
x0 = torch.randn(1, 3)
x = x0.clone()
with torch.no_grad():
    label = net(x0).argmax().item()
for it in range(5):
    x = x.detach().requires_grad_(True)
    out = net(x)
    if out.argmax().item() != label:
        break
    f = out[0, 1 - label] - out[0, label]
    g, = torch.autograd.grad(f, x)
    r = (abs(f.item()) + 1e-4) / (g.norm() ** 2 + 1e-8) * g
    x = x + 1.02 * r
print(it, x.detach().shape)
"""

# denoising score matching with an energy: the loss reads only dE/dx, which no bias of the
# last layer changes
SCORE_MATCHING_ENERGY = _SNIPPETS["ebm04_score_matching_denoising"]


@pytest.mark.parametrize(
    "source",
    [
        FROZEN_BACKBONE_PROBE,
        _SNIPPETS["sal11_class_visualization_adam"],
        DEEPFOOL_STOPS_EARLY,
        SCORE_MATCHING_ENERGY,
    ],
    ids=["frozen probe", "class visualisation", "DeepFool", "score matching"],
)
def test_the_false_alarms_found_stay_silent(source: str) -> None:
    recorded_silently(source)


def test_a_trained_probe_evaluated_with_gradients_on_is_still_said() -> None:
    source = FROZEN_BACKBONE_PROBE.replace(
        "feats = backbone(X[:4])", "probe.eval()\nfeats = probe(backbone(X[:4]))"
    )
    p = the_pitfall(source, "graph-built-in-evaluation", 13)
    assert p.title == "eval() mode with gradients on: graphs built and never used"


def test_a_forward_after_the_attack_loop_is_still_said() -> None:
    source = DEEPFOOL_STOPS_EARLY.replace("print(it, x.detach().shape)", "print(it, net(x).argmax().item())")
    the_pitfall(source, "graph-built-in-evaluation", 17)


def test_validation_on_the_training_line_is_still_said() -> None:
    # one function trains and validates, the forward on one line: a validation forward has
    # the next training forward, not a backward, right after it (said at the call of the run)
    the_pitfall(
        """\
import torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
Xtr, ytr = torch.randn(24, 4), torch.randint(0, 2, (24,))
Xva, yva = torch.randn(8, 4), torch.randint(0, 2, (8,))
def run(X, y, train):
    model.train(train)
    loss = F.cross_entropy(model(X), y)
    if train:
        opt.zero_grad(); loss.backward(); opt.step()
    return loss.item()
for epoch in range(3):
    tr = run(Xtr, ytr, True)
    va = run(Xva, yva, False)
print(round(tr, 4), round(va, 4))
""",
        "graph-built-in-evaluation",
        15,
    )


def test_a_layer_left_out_of_the_energy_is_still_said() -> None:
    # a layer stepped beside the energy and never called: its weight gets no gradient either
    source = SCORE_MATCHING_ENERGY.replace(
        "opt = torch.optim.Adam(energy.parameters(), lr=1e-3)",
        "extra = nn.Linear(2, 1)\nopt = torch.optim.Adam([*energy.parameters(), *extra.parameters()], lr=1e-3)",
    )
    trace = record(source)
    assert [(p.kind, p.title) for p in q.pitfalls(trace)] == [
        ("parameter-without-gradient", "extra never trains: no gradient reaches it")
    ]


def test_a_bias_left_out_with_no_derivative_taken_is_still_said() -> None:
    p = the_pitfall(
        """\
import torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0)
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.hidden = nn.Linear(3, 8)
        self.out = nn.Linear(8, 1)
    def forward(self, x):
        return F.linear(torch.tanh(self.hidden(x)), self.out.weight)
net = Net()
opt = torch.optim.Adam(net.parameters(), lr=1e-2)
x, y = torch.randn(20, 3), torch.randn(20, 1)
for step in range(4):
    loss = F.mse_loss(net(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
print(round(loss.item(), 4))
""",
        "parameter-without-gradient",
        7,
    )
    assert p.title == "net.out never trains: no gradient reaches it"


# each genre's bug, made in one of its correct snippets: (snippet, edits, kind, line)
_BUGGY = [
    ("adv05_adversarial_training_madry", [("        opt.zero_grad()\n", "")], "missing-zero-grad", 22),
    ("adv03_pgd_delta_data", [("        delta.grad.zero_()\n", "")], "missing-zero-grad", 14),
    (
        "adv01_fgsm_tutorial",
        [("with torch.no_grad():\n    adv_pred = model(perturbed)", "adv_pred = model(perturbed.detach())")],
        "graph-built-in-evaluation",
        24,
    ),
    (
        "sal06_gradcam_hooks",
        [
            (
                "model.zero_grad()\nlogits[0, cls].backward()",
                "for k in range(3):\n    h = target_layer.register_forward_hook(fwd_hook)\n"
                "    out = model(img)\n    model.zero_grad()\n    out[0, cls].backward()",
            )
        ],
        "hook-registered-in-loop",
        24,
    ),
    (
        "sal03_integrated_gradients",
        [("with torch.no_grad():\n    gap", "if True:\n    gap")],
        "graph-built-in-evaluation",
        15,
    ),
    ("nst04_tv_loss", [("    opt.zero_grad()\n", "")], "missing-zero-grad", 13),
    (
        "ebm02_sgld_noise_under_no_grad",
        [
            (
                "    loss = -(f(real).mean() - f(x_fake).mean())\n",
                "    loss = -(f(real).mean() - f(x_k).mean())\n    x_k.data += 0.01 * torch.randn_like(x_k)\n",
            )
        ],
        "data-edit-hidden-from-autograd",
        14,
    ),
    (
        "seg01_unet_tiny_ce",
        [("F.cross_entropy(logits, mask)", "F.cross_entropy(logits.softmax(1), mask)")],
        "probabilities-into-cross-entropy",
        24,
    ),
    (
        "det02_sigmoid_focal_loss_by_hand",
        [("binary_cross_entropy_with_logits(inputs, targets", "binary_cross_entropy_with_logits(p, targets")],
        "sigmoid-into-bce-with-logits",
        5,
    ),
    (
        "det07_centerness_bce_sigmoid_heads",
        [("with_logits(ct, ctr_t)", "with_logits(torch.sigmoid(ct), ctr_t)")],
        "sigmoid-into-bce-with-logits",
        21,
    ),
    (
        "rec01_matrix_factorization",
        [
            (
                "        return dot + self.user_bias(u).squeeze(1) + self.item_bias(i).squeeze(1)",
                "        return (dot + self.user_bias(u).squeeze(1) + self.item_bias(i).squeeze(1)).unsqueeze(1)",
            )
        ],
        "broadcast-in-loss",
        19,
    ),
    ("rec03_sparse_adam", [("    opt.zero_grad()\n", "")], "missing-zero-grad", 11),
    (
        "ts04_windows_from_series",
        [("pred = model(X).squeeze(-1)", "pred = model(X)")],
        "broadcast-in-loss",
        12,
    ),
    (
        "tab02_pos_weight_bce",
        [("logits = model(X).squeeze(1)", "logits = torch.sigmoid(model(X).squeeze(1))")],
        "sigmoid-into-bce-with-logits",
        12,
    ),
    (
        "tab05_standardize_then_mlp",
        [("with torch.no_grad():\n    val = F.mse_loss", "net.eval()\nval = F.mse_loss")],
        "graph-built-in-evaluation",
        13,
    ),
    (
        "mdn01_mixture_density",
        [("pi = F.softmax(self.z_pi(z_h), -1)", "pi = F.softmax(F.softmax(self.z_pi(z_h), -1), -1)")],
        "activation-applied-twice",
        13,
    ),
    (
        "surv01_cox_partial_likelihood",
        [("opt.zero_grad(); loss.backward()", "loss.backward()")],
        "missing-zero-grad",
        18,
    ),
    (
        "ae04_denoising_masking_dropout",
        [("    dae.train()\n", "    dae.eval()\n")],
        "eval-mode-in-training",
        15,
    ),
    # (uninitialised memory differs from run to run: the bug's run prints no value of it)
    (
        "init04_reset_parameters_override",
        [("        self.reset_parameters()\n", ""), ("print(round(loss.item(), 4))", "print(loss.shape)")],
        "parameter-never-initialised",
        8,
    ),
    (
        "init11_parameter_tensor_uniform_inplace",
        [
            ("        self.W.data.uniform_(-0.1, 0.1)\n", ""),
            ("print(round(loss.item(), 4))", "print(loss.shape)"),
        ],
        "parameter-never-initialised",
        6,
    ),
    (
        "init01_init_weights_apply",
        [("torch.nn.init.xavier_uniform_(m.weight)", "torch.nn.init.constant_(m.weight, 0.1)")],
        "symmetric-weights",
        5,
    ),
    (
        "act01_lstm_gates_by_hand",
        [("outgate = torch.sigmoid(outgate)", "outgate = torch.sigmoid(torch.sigmoid(outgate))")],
        "activation-applied-twice",
        15,
    ),
    (
        "near15_sigmoid_model_round_threshold",
        [("crit(out, y)", "crit(torch.sigmoid(out), y)")],
        "activation-applied-twice",
        9,
    ),
    (
        "near16_softmax_model_log_nll",
        [("F.nll_loss(torch.log(probs + 1e-8), y)", "F.nll_loss(F.log_softmax(probs, dim=1), y)")],
        "activation-applied-twice",
        8,
    ),
    (
        "near03_masked_weight_data_before_use",
        [
            (
                "        self.weight.data *= self.mask\n        return F.linear(x, self.weight, self.bias)",
                "        h = x @ self.weight.t()\n        self.weight.data *= self.mask\n        return h + self.bias",
            )
        ],
        "data-edit-hidden-from-autograd",
        9,
    ),
    ("old02_p_data_add_alpha", [("    model.zero_grad()\n", "")], "missing-zero-grad", 8),
    (
        "hyp02_task_conditioned_hypernet",
        [("    opt.zero_grad(); loss.backward(); opt.step()", "    loss.backward(); opt.step()")],
        "missing-zero-grad",
        16,
    ),
    (
        "ord02_coral_ordinal",
        [
            (
                "with_logits(logits, levels_from_labels(y))",
                "with_logits(torch.sigmoid(logits), levels_from_labels(y))",
            )
        ],
        "sigmoid-into-bce-with-logits",
        19,
    ),
    (
        "mdn02_logsumexp_stable",
        [("opt.zero_grad(); nll.backward()", "nll.backward()")],
        "missing-zero-grad",
        14,
    ),
    (
        "old06_wgan_clip_after_step",
        [
            (
                "    loss_D.backward()\n    opt_D.step()\n    for p in D.parameters():\n        p.data.clamp_(-clip_value, clip_value)",
                "    for p in D.parameters():\n        p.data.clamp_(-clip_value, clip_value)\n    loss_D.backward()\n    opt_D.step()",
            )
        ],
        "data-edit-hidden-from-autograd",
        14,
    ),
    (
        "old09_manual_momentum_data",
        [
            (
                "    for p, v in zip(model.parameters(), velocity):\n        v.mul_(mom).add_(p.grad.data)\n        p.data.sub_(lr * v)",
                "    for p in model.parameters():\n        p = p - lr * p.grad",
            )
        ],
        "loop-variable-rebound",
        12,
    ),
]


@pytest.mark.parametrize(("name", "edits", "kind", "line"), _BUGGY, ids=[b[0] for b in _BUGGY])
def test_each_genre_s_bug_is_told(name: str, edits: list[tuple[str, str]], kind: str, line: int) -> None:
    source = _SNIPPETS[name]
    for wrong, buggy in edits:
        assert wrong in source, wrong
        source = source.replace(wrong, buggy)
    the_pitfall(source, kind, line)


# the heads merged back over two lines with no graph to read the transpose from (hunt 51 left
# it told): the line that last assigned o moves the axes, and the view regroups neighbours
HEADS_MERGED_UNDER_NO_GRAD = """\
import torch, torch.nn as nn
torch.manual_seed(0)
T, B, C, H = 6, 2, 8, 4
in_proj = nn.Linear(C, 3 * C); out_proj = nn.Linear(C, C)
x = torch.randn(T, B, C)
head_dim = C // H
with torch.no_grad():
    q, k, v = in_proj(x).chunk(3, -1)
    q = q.reshape(T, B * H, head_dim).transpose(0, 1)
    k = k.reshape(T, B * H, head_dim).transpose(0, 1)
    v = v.reshape(T, B * H, head_dim).transpose(0, 1)
    attn = torch.softmax(q @ k.transpose(1, 2) * head_dim ** -0.5, dim=-1)
    o = torch.bmm(attn, v)                 # (B*H, T, head_dim)
    o = o.transpose(0, 1).contiguous()     # (T, B*H, head_dim)
    o = o.view(T, B, C)
    print(out_proj(o).shape)
"""


def test_heads_merged_over_lines_under_no_grad_stay_silent() -> None:
    recorded_silently(HEADS_MERGED_UNDER_NO_GRAD)


def test_heads_merged_under_no_grad_without_the_transpose_are_still_said() -> None:
    source = HEADS_MERGED_UNDER_NO_GRAD.replace("o = o.transpose(0, 1).contiguous()", "o = o.contiguous()")
    p = the_pitfall(source, "reshape-instead-of-permute", 15)
    assert p.title == "view reorders no axis: (8, 6, 2) cut into (6, 2, 8)"


def test_a_permute_undone_by_a_view_under_no_grad_is_still_said() -> None:
    p = the_pitfall(
        """\
import torch, torch.nn as nn
torch.manual_seed(0)
conv = nn.Conv2d(3, 2, 1)
imgs = torch.randn(4, 3, 5, 6)
with torch.no_grad():
    f = conv(imgs)                                  # (N, C, H, W)
    nhwc = f.permute(0, 2, 3, 1).contiguous()       # channels last
    back = nhwc.view(4, 2, 5, 6)
print(back.shape)
""",
        "reshape-instead-of-permute",
        8,
    )
    assert p.title == "view reorders no axis: (4, 5, 6, 2) cut into (4, 2, 5, 6)"
