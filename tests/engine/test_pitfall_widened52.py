"""Misses of hunt 52, now told: an element-wise loss (l1_loss, smooth_l1_loss, huber_loss, and
mse_loss of more than two axes) given a ``(T, 1, 2)`` prediction and ``(T, 2)`` targets
(broadcast-in-loss); a segmentation output ``(N, C, H, W)`` cut into rows of class scores with
``logits.view(-1, C)`` (reshape-instead-of-permute); a sparsity penalty on ``h.detach()``
added to the loss (penalty-without-gradient); ``out[-1]`` of a batch-first LSTM, the last
sample where the last step was meant (rnn-last-step-from-batch-axis). Each with the clean twins
that must stay silent."""

from __future__ import annotations

import pytest
import torch

from tests.engine.snippets import recorded_silently, the_pitfall


def _edited(source: str, *edits: tuple[str, str]) -> str:
    """``source`` with each ``(old, new)`` replaced in turn; each ``old`` must occur exactly once,
    so that a clean twin never silently equals the snippet it copies."""
    for old, new in edits:
        assert source.count(old) == 1, (old, source.count(old))
        source = source.replace(old, new)
    return source


# broadcast-in-loss

_B_L1_ROWS = """import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
T = 8
net = nn.Linear(3, 2)
opt = torch.optim.SGD(net.parameters(), lr=0.1)
x = torch.randn(T, 1, 3)
target = torch.randn(T, 2)
for step in range(3):
    pred = net(x)
    loss = F.l1_loss(pred, target)
    opt.zero_grad()
    loss.backward()
    opt.step()
print(round(loss.item(), 4))
"""


@pytest.mark.parametrize("loss", ["l1_loss", "smooth_l1_loss", "huber_loss", "mse_loss"])
@pytest.mark.filterwarnings("ignore:Using a target size")  # PyTorch's own warning, as without gradwalk
def test_an_elementwise_loss_of_rows_with_a_size_1_axis_is_said_with_the_terms_it_averages(loss: str) -> None:
    said = the_pitfall(_edited(_B_L1_ROWS, ("F.l1_loss", f"F.{loss}")), "broadcast-in-loss", 13)
    assert said.title == "Shapes (8, 1, 2) and (8, 2) broadcast to (8, 8, 2)"
    assert (
        f"This {loss} combines 8 predictions of shape (8, 1, 2) with 8 targets of shape (8, 2)"
        in said.message
    )
    assert "every prediction with every target, giving 8×8×2 = 128 terms instead of 16" in said.message
    assert said.fix.startswith("Make the shapes match: pred.squeeze(1) (or target.unsqueeze(1))")


@pytest.mark.filterwarnings("ignore:Using a target size")
def test_a_smooth_l1_loss_of_a_column_and_a_vector_is_said_as_mse_loss_is() -> None:
    source = _edited(
        _B_L1_ROWS,
        ("x = torch.randn(T, 1, 3)", "x = torch.randn(T, 3)"),
        ("target = torch.randn(T, 2)", "target = torch.randn(T)"),
        ("nn.Linear(3, 2)", "nn.Linear(3, 1)"),
        ("F.l1_loss", "F.smooth_l1_loss"),
    )
    said = the_pitfall(source, "broadcast-in-loss", 13)
    assert "a column of 8 predictions (8, 1) with a vector of 8 targets (8,)" in said.message
    assert "8×8 = 64 terms instead of 8" in said.message
    assert "pred.squeeze(-1)" in said.fix


@pytest.mark.parametrize(
    "source",
    [
        _edited(_B_L1_ROWS, ("pred = net(x)", "pred = net(x).squeeze(1)")),
        _edited(_B_L1_ROWS, ("F.l1_loss(pred, target)", "F.l1_loss(pred, target.unsqueeze(1))")),
    ],
    ids=["squeezed", "target unsqueezed"],
)
def test_an_elementwise_loss_of_matching_rows_is_silent(source: str) -> None:
    recorded_silently(source)


# reshape-instead-of-permute

_A_SEGMENTATION = """import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
C = 3
net = nn.Conv2d(1, C, 3, padding=1)
opt = torch.optim.Adam(net.parameters(), lr=1e-2)
x = torch.randn(4, 1, 6, 6)
y = torch.randint(0, C, (4, 6, 6))
for step in range(3):
    logits = net(x)
    loss = F.cross_entropy(logits.view(-1, C), y.view(-1))
    opt.zero_grad()
    loss.backward()
    opt.step()
print(round(loss.item(), 4))
"""


def test_segmentation_scores_cut_into_rows_by_a_view_are_said_with_what_row_0_holds() -> None:
    said = the_pitfall(_A_SEGMENTATION, "reshape-instead-of-permute", 13)
    assert said.title == "view reorders no axis: (4, 3, 6, 6) cut into (144, 3), classes mixed with positions"
    assert (
        "makes logits of shape (4, 3, 6, 6) into (144, 3): 144 rows of 3 scores, but the 3 classes are dim 1"
        in (said.message)
    )
    assert (
        "So row 0 holds logits[0, 0, 0, 0] to logits[0, 0, 0, 2] (class 0 at 3 neighbouring positions)"
        in (said.message)
    )
    assert "would give logits[0, 0, 0, 0] to logits[0, 2, 0, 0]" in said.message
    assert said.fix.startswith(
        "Move the class axis last before the view: "
        "loss = F.cross_entropy(logits.permute(0, 2, 3, 1).reshape(-1, C), y.view(-1))"
    )


def test_a_conv1d_output_reshaped_into_rows_of_its_channels_is_said() -> None:
    source = _edited(
        _A_SEGMENTATION,
        ("nn.Conv2d(1, C, 3, padding=1)", "nn.Conv1d(1, C, 3, padding=1)"),
        ("x = torch.randn(4, 1, 6, 6)", "x = torch.randn(4, 1, 10)"),
        ("(4, 6, 6))", "(4, 10))"),
        ("logits.view(-1, C)", "logits.reshape(-1, C)"),
    )
    said = the_pitfall(source, "reshape-instead-of-permute", 13)
    assert said.title.startswith("reshape reorders no axis: (4, 3, 10) cut into (40, 3)")
    assert "logits.permute(0, 2, 1).reshape(-1, C)" in said.fix


@pytest.mark.parametrize(
    "source",
    [
        _edited(_A_SEGMENTATION, ("logits.view(-1, C)", "logits.permute(0, 2, 3, 1).reshape(-1, C)")),
        _edited(
            _A_SEGMENTATION, ("F.cross_entropy(logits.view(-1, C), y.view(-1))", "F.cross_entropy(logits, y)")
        ),
        _edited(
            _A_SEGMENTATION,
            ("logits = net(x)", "logits = net(x).permute(0, 2, 3, 1).contiguous()"),
        ),
    ],
    ids=["permuted on the line", "cross_entropy of (N, C, H, W)", "permuted on the line above"],
)
def test_segmentation_scores_with_the_classes_moved_last_are_silent(source: str) -> None:
    recorded_silently(source)


# penalty-without-gradient

_P_DETACHED_SPARSITY = """import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
enc = nn.Linear(10, 32)
dec = nn.Linear(32, 10)
opt = torch.optim.Adam([*enc.parameters(), *dec.parameters()], lr=1e-3)
x = torch.randn(64, 10)
lam = 1e-3
for epoch in range(3):
    h = torch.relu(enc(x))
    recon = F.mse_loss(dec(h), x)
    loss = recon + lam * h.detach().abs().mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
print(round(loss.item(), 4))
"""


def test_a_sparsity_penalty_on_a_detached_activation_is_said_with_its_worth() -> None:
    said = the_pitfall(_P_DETACHED_SPARSITY, "penalty-without-gradient", 14)
    torch.manual_seed(0)
    enc = torch.nn.Linear(10, 32)
    torch.nn.Linear(32, 10)
    worth = 1e-3 * torch.relu(enc(torch.randn(64, 10))).abs().mean().item()  # the first step's
    assert (
        said.title
        == "The penalty on h reads it through .detach(): it adds to the loss and nothing to the gradients"
    )
    assert f"This line adds a term worth {worth:.6g} to the loss, computed from h.detach()" in said.message
    assert "the penalty never pulls h (nor the weights that make it) towards zero" in said.message
    assert said.fix == "Compute it from h itself: loss = recon + lam * h.abs().mean()"


@pytest.mark.parametrize(
    "source",
    [
        _edited(_P_DETACHED_SPARSITY, ("h.detach().abs()", "h.abs()")),
        # a straight-through estimator: the detached difference is added element by element
        _edited(
            _P_DETACHED_SPARSITY,
            ("    recon = F.mse_loss(dec(h), x)\n", "    hq = h + (torch.round(h) - h).detach()\n"),
            ("loss = recon + lam * h.detach().abs().mean()", "loss = F.mse_loss(dec(hq), x)"),
        ),
        # the detached norm only scales the penalty: the term keeps its graph
        _edited(
            _P_DETACHED_SPARSITY,
            ("lam * h.detach().abs().mean()", "lam * h.abs().mean() / h.detach().norm()"),
        ),
    ],
    ids=["penalty of h", "straight-through", "detached scale"],
)
def test_a_penalty_with_its_graph_and_a_straight_through_estimator_are_silent(source: str) -> None:
    recorded_silently(source)


# rnn-last-step-from-batch-axis

_R_BATCH_FIRST_LAST = """import torch
import torch.nn as nn

torch.manual_seed(0)

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(3, 8, batch_first=True)
        self.head = nn.Linear(8, 1)

    def forward(self, x):
        out, _ = self.lstm(x)
        return self.head(out[-1])

model = Model()
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
x = torch.randn(6, 6, 3)
y = torch.randn(6, 1)
for epoch in range(3):
    loss = nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
print(round(loss.item(), 4))
"""

_R_TOP_LEVEL = """import torch
import torch.nn as nn

torch.manual_seed(0)
lstm = nn.LSTM(input_size=4, hidden_size=5, batch_first=True)
head = nn.Linear(5, 2)
opt = torch.optim.SGD([*lstm.parameters(), *head.parameters()], lr=0.1)
x = torch.randn(7, 3, 4)
y = torch.randn(3, 2)
for it in range(3):
    output, (h_n, c_n) = lstm(x)
    loss = ((head(output[-1]).mean(0) - y.mean(0)) ** 2).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
print(round(loss.item(), 4))
"""


@pytest.mark.parametrize("index", ["out[-1]", "out[-1, :, :]", "out[5]"])
def test_the_last_sample_of_a_batch_first_lstm_is_said_as_not_the_last_step(index: str) -> None:
    said = the_pitfall(_edited(_R_BATCH_FIRST_LAST, ("out[-1]", index)), "rnn-last-step-from-batch-axis", 14)
    written = index.removeprefix("out")
    assert (
        said.title == f"out{written} of a batch-first LSTM: the last sample of the batch, not the last step"
    )
    assert (
        f"out{written} at line 14 takes the last position of dim 0 of the LSTM's output (line 13)"
        in said.message
    )
    assert "its 6×6×3 input as a batch of 6 sequences of 6 time steps" in said.message
    assert said.fix.startswith("Take out[:, -1] (or out[:, -1, :]), each sequence's last step")


def test_output_minus_1_of_a_top_level_batch_first_lstm_is_said_with_its_sizes() -> None:
    said = the_pitfall(_R_TOP_LEVEL, "rnn-last-step-from-batch-axis", 12)
    assert said.title.startswith("output[-1] of a batch-first LSTM")
    assert "its 7×3×4 input as a batch of 7 sequences of 3 time steps" in said.message
    assert "the last sample's output (of 7) at every one of its 3 time steps" in said.message


@pytest.mark.parametrize(
    "source",
    [
        _edited(_R_BATCH_FIRST_LAST, ("out[-1]", "out[:, -1]")),
        _edited(_R_BATCH_FIRST_LAST, ("out[-1]", "out[:, -1, :]")),
        _edited(_R_BATCH_FIRST_LAST, ("nn.LSTM(3, 8, batch_first=True)", "nn.LSTM(3, 8)")),  # time-first
        _edited(_R_TOP_LEVEL, ("head(output[-1])", "head(h_n[-1])")),
    ],
    ids=["[:, -1]", "[:, -1, :]", "time-first [-1]", "h_n[-1]"],
)
def test_the_last_step_of_a_batch_first_lstm_is_silent(source: str) -> None:
    recorded_silently(source)
