"""Sparse tensors are described as the dense tensors they stand for (NOTE [Sparse values] in
engine/values.py): whole when small, with statistics over every element when large."""

from __future__ import annotations

import pytest
import torch

from engine import queries as q
from engine import record
from engine.values import to_value

_STATS = ("numel", "min", "max", "mean", "std", "norm", "nan", "inf")


def _sparse_gradient(rows: int) -> torch.Tensor:
    emb = torch.nn.Embedding(rows, 3, sparse=True)
    emb(torch.tensor([1, 2, 1])).sum().backward()
    assert emb.weight.grad is not None and emb.weight.grad.layout is torch.sparse_coo
    return emb.weight.grad


def test_a_small_sparse_tensor_travels_whole_as_its_dense_form() -> None:
    grad = _sparse_gradient(10)
    assert to_value(grad, 64) == to_value(grad.to_dense(), 64)


@pytest.mark.filterwarnings("ignore:Sparse CSR tensor support is in beta state")
@pytest.mark.parametrize("layout", ["coo", "csr"])
def test_a_large_sparse_tensors_statistics_are_its_dense_forms(layout: str) -> None:
    dense = torch.zeros(100, 3)
    dense[5] = torch.tensor([-2.0, 0.5, 3.0])
    dense[7, 1] = float("nan")
    sparse = dense.to_sparse() if layout == "coo" else dense.to_sparse_csr()
    got, want = to_value(sparse, 64), to_value(dense, 64)
    assert got["kind"] == "summary" and got["shape"] == [100, 3]
    assert {k: got[k] for k in _STATS} == pytest.approx({k: want[k] for k in _STATS})
    assert sum(got["hist"]) == 3  # over the stored finite values (NOTE [Sparse values])


def test_an_uncoalesced_sparse_gradient_is_summed_where_indices_repeat() -> None:
    grad = _sparse_gradient(100)  # row 1 is stored twice
    got, want = to_value(grad, 64), to_value(grad.to_dense(), 64)
    assert {k: got[k] for k in _STATS} == pytest.approx({k: want[k] for k in _STATS})


def test_a_sparse_gradient_is_recorded_with_its_values() -> None:
    source = """
import torch
emb = torch.nn.Embedding(10, 3, sparse=True)
emb(torch.tensor([1, 2, 1])).sum().backward()
"""
    trace = record(source)
    want = _sparse_gradient(10).to_dense().reshape(-1).tolist()
    assert q.final_grads(trace) == {"emb.weight": want}
    assert q.accumulations(trace, "emb.weight") == [(None, want, want)]


def test_a_complex_tensor_is_described_by_its_magnitudes_and_says_so() -> None:
    # a 2-element complex gradient read as statistics of |z| with nothing to say so: the
    # summary line printed `z.grad = norm 7.746 [2]` beside the snippet's tensor([2.+4.j, 6.-2.j])
    source = (
        "import torch\nz = torch.tensor([1 + 2j, 3 - 1j], requires_grad=True)\n"
        "(z * z.conj()).real.sum().backward()\nprint(z.grad)\n"
    )
    trace = record(source)
    final = next(e for e in q.events_of(trace, "tensor_final") if e.name == "z")
    plain = torch.tensor([1 + 2j, 3 - 1j], requires_grad=True)
    (plain * plain.conj()).real.sum().backward()
    assert plain.grad is not None
    magnitudes = plain.grad.abs()
    assert final.grad.kind == "summary" and final.grad.of == "abs"
    assert final.grad.min == pytest.approx(float(magnitudes.min()))
    assert final.grad.max == pytest.approx(float(magnitudes.max()))
    assert final.grad.norm == pytest.approx(float(torch.linalg.vector_norm(plain.grad)))
    assert to_value(torch.tensor([1.0, 2.0]), 64) == {"kind": "full", "shape": [2], "flat": [1.0, 2.0]}
    assert to_value(torch.randn(100), 64).get("of", "value") == "value"  # real summaries unmarked
