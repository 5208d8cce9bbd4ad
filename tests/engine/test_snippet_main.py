"""The snippet runs as a script's ``__main__``: what it defines is found by name while it
runs (pickle, torch.save of a whole model, dataclasses), so it fails, or not, where plain
Python does; the host's ``__main__`` is back afterwards. Error messages lose the terminal's
colour codes PyTorch puts in some (torch.load's)."""

from __future__ import annotations

import sys

from engine import queries as q
from engine import record
from tests.engine.snippets import plain_stdout, raised_as_plain

WHOLE_MODEL = """import io
import torch
import torch.nn as nn
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 1)
    def forward(self, x):
        return self.fc(x)
buf = io.BytesIO()
torch.save(Net(), buf)
print('saved', buf.tell() > 0)
buf.seek(0)
model = torch.load(buf)
"""


def test_a_whole_model_saves_and_the_load_is_what_fails_as_in_plain_python() -> None:
    err = raised_as_plain(WHOLE_MODEL, 14)  # torch.load's, not torch.save's (line 11)
    assert err.exc_type == "UnpicklingError"
    assert "\x1b" not in err.message and "\x1b" not in err.traceback
    assert "weights_only" in err.message


def test_classes_of_the_snippet_pickle_by_name_and_the_hosts_main_comes_back() -> None:
    source = (
        "import pickle, dataclasses\n@dataclasses.dataclass\nclass Point:\n    x: int\n    y: 'int'\n"
        "p = pickle.loads(pickle.dumps(Point(1, 2)))\nprint(p, __name__)\n"
    )
    before = sys.modules["__main__"]
    trace = record(source)
    assert sys.modules["__main__"] is before
    assert q.errors(trace) == []
    assert q.stdout(trace) == plain_stdout(source) == "Point(x=1, y=2) __main__\n"
