"""eval-mode-in-training from the start: ``model.eval()`` (to check a loaded model, say)
and then a fine-tuning loop with no ``model.train()``, so dropout drops nothing for the whole
run. No layer ever ran in training mode, so it is told at the first optimizer step that
updates the model in eval mode. Each silent near miss is one edit away from the snippet
that is said."""

from __future__ import annotations

import pytest

from tests.engine.snippets import recorded_silently, the_pitfall

_FINETUNE = """import torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Dropout(0.3), nn.Linear(32, 2))
model.load_state_dict({k: v.clone() for k, v in model.state_dict().items()})
model.eval()
with torch.no_grad():
    print("before:", model(torch.randn(4, 8)).argmax(1).tolist())
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
for step in range(6):
    x, y = torch.randn(16, 8), torch.randint(0, 2, (16,))
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
print(round(loss.item(), 4))
"""


def test_a_model_switched_to_eval_and_then_fine_tuned_is_said_at_its_eval_call() -> None:
    said = the_pitfall(_FINETUNE, "eval-mode-in-training", 5)
    assert said.title == "Training in eval mode: Dropout is switched off"
    assert said.message.startswith(
        "model.eval() at line 5 switched Dropout to its evaluation behaviour, and nothing switched "
        "it back: at optimizer step 1 the model trains in eval mode"
    )
    assert "dropout no longer drops anything" in said.message
    assert "Call model.train()" in said.fix


@pytest.mark.parametrize(
    ("wrong", "right"),
    [
        # switched back before training
        ("opt = torch.optim", "model.train()\nopt = torch.optim"),
        # a dropout that drops nothing either way
        ("nn.Dropout(0.3), nn.Linear(32, 2))\nmodel.load", "nn.Dropout(0.0), nn.Linear(32, 2))\nmodel.load"),
        # batch norm, frozen on purpose while fine-tuning
        (
            "nn.Dropout(0.3), nn.Linear(32, 2))\nmodel.load",
            "nn.BatchNorm1d(32), nn.Linear(32, 2))\nmodel.load",
        ),
        # the first layer frozen: eval mode keeps the frozen part as it is
        ("model.eval()\n", "model.eval()\nmodel[0].requires_grad_(False)\n"),
    ],
)
def test_eval_mode_kept_on_purpose_or_undone_stays_silent(wrong: str, right: str) -> None:
    assert wrong in _FINETUNE
    source = _FINETUNE.replace(wrong, right)
    recorded_silently(source)


def test_a_teacher_in_eval_run_with_gradients_on_beside_a_student_stays_silent() -> None:
    # the model in eval mode is not the one the step updates (distillation, an attack on the input)
    source = _FINETUNE.replace("model = nn.Sequential(", "teacher = nn.Sequential(", 1)
    source = source.replace(
        "model.load_state_dict({k: v.clone() for k, v in model.",
        "teacher.load_state_dict({k: v.clone() for k, v in teacher.",
    )
    source = source.replace("model.eval()", "teacher.eval()\nmodel = nn.Linear(8, 2)")
    source = source.replace(
        "    loss = F.cross_entropy(model(x), y)\n",
        "    soft = teacher(x).detach().softmax(1)\n    loss = F.cross_entropy(model(x), soft)\n",
    )
    assert "teacher(x).detach()" in source and "teacher.eval()" in source
    recorded_silently(source)
