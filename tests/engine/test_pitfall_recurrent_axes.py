"""rnn-last-step-from-batch-axis: ``out[:, -1]`` of an nn.LSTM (GRU, RNN) made without
``batch_first=True`` takes the last sequence of the batch at every time step, not the last
step of each sequence. Said at the indexing, with the input's sizes as the layer read them
and the layer's line rewritten; a batch-first layer, ``out[-1]``, ``h_n[-1]`` and packed
sequences stay silent."""

from __future__ import annotations

import pytest
import torch

from tests.engine.snippets import recorded_silently, the_pitfall

_CLASSIFIER = """import torch
import torch.nn as nn

torch.manual_seed(0)
X = torch.randn(16, 10, 3)  # 16 sequences of 10 steps, 3 features each
y = torch.randint(0, 2, (16,))

class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(input_size=3, hidden_size=8)
        self.head = nn.Linear(8, 2)

    def forward(self, x):
        out, _ = self.lstm(x)
        return self.head(out[:, -1, :])

model = Classifier()
opt = torch.optim.Adam(model.parameters(), lr=0.01)
for epoch in range(5):
    opt.zero_grad()
    loss = nn.functional.cross_entropy(model(X), y)
    loss.backward()
    opt.step()
print(round(loss.item(), 4))
"""


def test_the_last_step_read_from_a_time_first_lstm_is_said_with_the_sizes_it_read() -> None:
    said = the_pitfall(_CLASSIFIER, "rnn-last-step-from-batch-axis", 16)
    assert said.title == "out[:, -1] of a time-first LSTM: the last sequence of the batch, not the last step"
    assert (
        "out[:, -1, :] at line 16 takes the last position of dim 1 of the LSTM's output (line 15)"
        in said.message
    )
    assert "its 16×10×3 input as 16 time steps of a batch of 10" in said.message
    assert "carrying its state from one sample into the next" in said.message
    assert "line 11: self.lstm = nn.LSTM(input_size=3, hidden_size=8, batch_first=True)" in said.fix
    assert "take out[-1]" in said.fix


def test_what_the_message_says_is_what_pytorch_does() -> None:
    # out[:, -1] of the time-first layer is the last sequence at every step; batch_first=True
    # reads the same data as 16 sequences, and its out[:, -1] is each one's last step
    torch.manual_seed(0)
    x = torch.randn(16, 10, 3)
    time_first = torch.nn.LSTM(3, 8)
    batch_first = torch.nn.LSTM(3, 8, batch_first=True)
    batch_first.load_state_dict(time_first.state_dict())
    out_t, _ = time_first(x)
    out_b, _ = batch_first(x)
    assert out_t[:, -1].shape == out_b[:, -1].shape == (16, 8)
    assert torch.equal(out_t[:, -1], out_t.transpose(0, 1)[-1])  # one sequence, 16 steps
    assert not torch.allclose(out_t[:, -1], out_b[:, -1])


@pytest.mark.parametrize(
    ("edit", "layer", "written"),
    [
        (
            ("nn.LSTM(input_size=3, hidden_size=8)", "nn.GRU(input_size=3, hidden_size=8)"),
            "GRU",
            "[:, -1, :]",
        ),
        (("nn.LSTM(input_size=3, hidden_size=8)", "nn.RNN(3, 8, nonlinearity='relu')"), "RNN", "[:, -1, :]"),
        (("out[:, -1, :]", "out[:, 9]"), "LSTM", "[:, 9]"),  # the last position written as a number
        (("hidden_size=8)", "hidden_size=8, bidirectional=True)"), "LSTM", "[:, -1, :]"),
    ],
)
def test_other_time_first_layers_and_ways_of_writing_it_are_said(
    edit: tuple[str, str], layer: str, written: str
) -> None:
    source = _CLASSIFIER.replace(*edit)
    if "bidirectional" in edit[1]:
        source = source.replace("nn.Linear(8, 2)", "nn.Linear(16, 2)")
    said = the_pitfall(source, "rnn-last-step-from-batch-axis", 16)
    assert f"out{written} at line 16 takes the last position of dim 1 of the {layer}'s output" in said.message
    assert f"nn.{layer}(" in said.fix and "batch_first=True" in said.fix


_BATCH_FIRST = ("hidden_size=8)", "hidden_size=8, batch_first=True)")


@pytest.mark.parametrize(
    "edits",
    [
        [_BATCH_FIRST],  # the fix
        # time-first data, and the last time step, right for a time-first layer
        [("self.lstm(x)", "self.lstm(x.transpose(0, 1))"), ("out[:, -1, :]", "out[-1]")],
        # the last layer's final hidden state
        [_BATCH_FIRST, ("out, _ = self.lstm(x)", "_, (h, _) = self.lstm(x)"), ("out[:, -1, :]", "h[-1]")],
    ],
)
def test_reading_the_last_step_the_right_way_is_silent(edits: list[tuple[str, str]]) -> None:
    source = _CLASSIFIER
    for old, new in edits:
        assert old in source
        source = source.replace(old, new)
    recorded_silently(source)


def test_packed_sequences_are_left_alone() -> None:
    recorded_silently(
        """import torch
import torch.nn as nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

torch.manual_seed(0)
lstm = nn.LSTM(3, 4)
x = torch.randn(5, 2, 3)
packed = pack_padded_sequence(x, torch.tensor([5, 3]))
out, _ = lstm(packed)
padded, lengths = pad_packed_sequence(out)
print(padded[:, -1].shape, lengths)
"""
    )
