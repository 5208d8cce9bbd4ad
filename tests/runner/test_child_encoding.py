"""The child writes the recorder's events unvalidated (NOTE [Events validated once, by the
pool] in runner/child.py): what the pool then validates must be exactly what validating in
the child gave, for every kind of event the worked examples produce."""

from __future__ import annotations

import json
import math

import pytest

from engine.events import event_adapter
from engine.run import record_stream
from runner.child import _encode
from tests.conftest import CASES_DIR, case_source
from tests.runner.conftest import PoolDriver, finished

# every example, plus what stresses the JSON: NaN and infinities in values, gradients,
# constants and the loss; big and negative integers; text with quotes, newlines and
# characters beyond ASCII; bools in a tensor; a metric logged with a NumPy step
EXTRA = {
    "non-finite": """
import torch
x = torch.tensor([1.0, float('nan'), float('inf'), -float('inf')], requires_grad=True)
y = (x * float('inf') + 10**30 - (-7)).sum()
y.backward()
print('quotes " and \\\\ and \\n newline, ünïcödé ✓')
b = torch.tensor([True, False])
""",
    "training with logged metrics": case_source("rent_regression.py")
    .replace("401", "31")
    .replace(
        "    opt.step()",
        "    opt.step()\n    import gradwalk, numpy as np\n    gradwalk.log('acc (%)', np.float32(0.5), step=np.int64(epoch))",
    ),
    "nan loss": case_source("pitfall_nan_loss.py"),
}
SNIPPETS = {p.name: p.read_text() for p in sorted(CASES_DIR.glob("*.py"))} | EXTRA


def _canonical(model: object) -> object:
    # models compare NaN unequal to itself; their JSON does not
    return json.loads(model.model_dump_json())  # type: ignore[attr-defined]


@pytest.mark.parametrize("name", sorted(SNIPPETS))
def test_the_pool_validates_what_validating_in_the_child_gave(name: str) -> None:
    events: list[dict] = []
    record_stream(SNIPPETS[name], events.append, validate=False)
    assert events[-1]["type"] == "run_finished"
    for event in events:
        in_child = event_adapter.validate_python(event)
        by_pool = event_adapter.validate_json(_encode(event))
        assert _canonical(by_pool) == _canonical(in_child), event["type"]


def test_what_json_cannot_write_goes_through_the_event_model() -> None:
    import numpy as np

    # a NumPy integer (gradwalk.log's step may be one): to_json refuses it, the model takes it
    event = {
        "type": "metric",
        "seq": 3,
        "t": 0.5,
        "name": "x",
        "value": math.nan,
        "step": np.int64(4),
        "line": 2,
    }
    assert json.loads(_encode(event)) == {**event, "step": 4, "value": "NaN"}
    # a lone surrogate (no UTF-8 for it): written as its escape, as Python's stderr shows it
    event = {"type": "output", "seq": 4, "t": 0.5, "stream": "stderr", "text": "a" + chr(0xD800)}
    assert json.loads(_encode(event))["text"] == "a\\ud800"


def test_an_error_whose_message_json_cannot_write_ends_the_run_as_an_error(driver: PoolDriver) -> None:
    # it ended the run as "crashed" (the child's process died writing the event)
    events, handle = driver.run("gradwalk_x = 1\nraise ValueError('bad ' + chr(0xD801))\n")
    (error,) = [e for e in events if e.type == "error"]
    assert error.message == "bad \\ud801" and error.line == 2 and "bad \\ud801" in error.traceback
    assert handle.status == "error" and finished(events).message == "ValueError: bad \\ud801"


def test_a_logged_step_must_be_a_whole_number(driver: PoolDriver) -> None:
    # 2.5 passed the child unvalidated and the pool refused the frame, ending the run
    events, handle = driver.run("import gradwalk\ngradwalk.log('acc', 0.5, step=2.5)\n")
    (error,) = [e for e in events if e.type == "error"]
    assert error.exc_type == "TypeError" and error.line == 2
    assert error.message == "gradwalk.log: step must be a whole number, not 2.5"
    assert handle.status == "error"
