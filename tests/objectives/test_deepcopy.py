"""``copy.deepcopy(loss)`` gives an independent loss that trains its own parameters."""

import copy

import pytest
import torch

from ._cases import CASES, renamed


def _grads(loss, td):
    loss.zero_grad(set_to_none=True)
    torch.manual_seed(0)
    out = loss(td.clone())
    sum(v for k, v in out.items() if k.startswith("loss") and v.requires_grad).backward()
    return {n: p.grad for n, p in loss.named_parameters()}


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_deepcopy_trains_its_own_parameters(case):
    loss, td = case.make(), case.data()
    if case.rename:
        td = renamed(td, case.rename)
        loss.set_keys(**case.rename)
    twin = copy.deepcopy(loss)
    own = {id(p) for p in loss.parameters()}
    assert not own & {id(p) for p in twin.parameters()}, "the copy shares parameters with the original"
    ref, got = _grads(loss, td), _grads(twin, td)
    assert ref.keys() == got.keys()
    for name, grad in ref.items():
        if grad is None:
            assert got[name] is None, name
        else:
            assert got[name] is not None, f"{name}: no gradient in the copy"
            torch.testing.assert_close(got[name], grad, msg=name)
