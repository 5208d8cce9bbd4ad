"""Warnings a snippet records itself (``warnings.catch_warnings(record=True)``) carry the place
they carry without gradwalk: the snippet's line, or the library's, never gradwalk's tape mode
(NOTE [Warnings raised through the tape mode])."""

from __future__ import annotations

from tests.engine.snippets import assert_as_plain

# what the snippet reads of each warning it caught: its line, its category, and whether it
# names the snippet's own file (plain.py without gradwalk, the snippet's internal name with it)
READ = """
print([(w.lineno, w.category.__name__, w.filename == here) for w in caught])
"""


def test_a_caught_warning_from_pytorchs_cpp_names_the_snippets_line() -> None:
    # it named engine/tape.py, line 207: the tape mode's frame, which called into C++
    assert_as_plain(
        """import inspect, warnings
import torch
here = inspect.currentframe().f_code.co_filename
x = torch.tensor([1.0, 2.0], requires_grad=True)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    z = torch.tensor(x * 3)
    y = x * 2
    print(y.grad)
"""
        + READ,
        pitfalls=("tensor-copied-off-graph",),
    )


def test_a_caught_warning_from_pytorchs_python_names_the_line_that_called_it() -> None:
    # F.mse_loss warns with stacklevel=2: the line that called it, twice from one line in a loop
    # (under "always") and once more from another line
    assert_as_plain(
        """import inspect, warnings
import torch
import torch.nn.functional as F
here = inspect.currentframe().f_code.co_filename
pred, target = torch.randn(4, 1), torch.randn(4)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    for _ in range(2):
        a = F.mse_loss(pred, target)
    b = F.mse_loss(pred, target)
"""
        + READ
    )


def test_a_caught_warning_keeps_pythons_default_of_once_per_place() -> None:
    # without a filter of its own, the same warning from one line shows once and from another
    # line again: gradwalk's tape mode kept one place for both, so the second was lost
    assert_as_plain(
        """import inspect, warnings
import torch
here = inspect.currentframe().f_code.co_filename
x = torch.ones(2, requires_grad=True)
y = x * 2
with warnings.catch_warnings(record=True) as caught:
    for _ in range(3):
        g = y.grad
    g = y.grad
"""
        + READ
    )
