"""MultiStep: golden values from TorchRL 0.14.1 and a plain reference loop."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict

from tdrl.data import MultiStep


def _batch(done: list[int], batch: int = 1) -> TensorDict:
    T = len(done)
    obs = torch.arange(T, dtype=torch.float).view(1, T, 1).expand(batch, T, 1).clone()
    done_t = torch.tensor(done, dtype=torch.bool).view(1, T, 1).expand(batch, T, 1).clone()
    return TensorDict(
        {
            "obs": obs,
            "done": torch.zeros(batch, T, 1, dtype=torch.bool),
            ("next", "obs"): obs + 1,
            ("next", "reward"): obs + 1,
            ("next", "done"): done_t,
            ("next", "terminated"): done_t.clone(),
            ("next", "truncated"): torch.zeros(batch, T, 1, dtype=torch.bool),
        },
        [batch, T],
    )


def test_matches_torchrl_golden():
    # Output of torchrl.data.MultiStep(0.9, 2) on the same batch (TorchRL 0.14.1).
    out = MultiStep(0.9, 2)(_batch([0, 0, 1, 0, 0, 0]))
    assert out["next", "obs"].flatten().tolist() == [2.0, 3.0, 3.0, 5.0, 6.0, 6.0]
    assert out["next", "original_reward"].flatten().tolist() == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    torch.testing.assert_close(out["next", "reward"].flatten(), torch.tensor([2.8, 4.7, 3.0, 8.5, 10.4, 6.0]))
    assert out["steps_to_next_obs"].tolist() == [[2, 2, 1, 2, 2, 1]]
    torch.testing.assert_close(out["gamma"], torch.tensor([[0.81, 0.81, 0.9, 0.81, 0.81, 0.9]]))
    assert out["nonterminal"].tolist() == [[True, True, False, True, True, False]]
    assert out["next", "done"].flatten().tolist() == [False, False, True, False, False, False]


def _reference(reward: list[float], done: list[int], gamma: float, n: int) -> tuple[list[float], list[int]]:
    T, returns, steps = len(reward), [], []
    for t in range(T):
        total, k = 0.0, 0
        while k < n and t + k < T:
            total += gamma**k * reward[t + k]
            k += 1
            if done[t + k - 1]:
                break
        returns.append(total)
        steps.append(k)
    return returns, steps


@pytest.mark.parametrize("n_steps", [1, 3, 5])
def test_matches_reference_loop(n_steps):
    torch.manual_seed(0)
    done = (torch.rand(12) < 0.25).int().tolist()
    td = _batch(done, batch=2)
    td["next", "reward"] = torch.randn(2, 12, 1)
    out = MultiStep(0.95, n_steps)(td)
    for b in range(2):
        ret, steps = _reference(td["next", "reward"][b].flatten().tolist(), done, 0.95, n_steps)
        torch.testing.assert_close(out["next", "reward"][b].flatten(), torch.tensor(ret))
        assert out["steps_to_next_obs"][b].tolist() == steps
        idx = torch.arange(12) + torch.tensor(steps) - 1
        assert torch.equal(out["next", "obs"][b].flatten(), td["next", "obs"][b].flatten()[idx])


def test_mask_and_errors():
    td = _batch([0, 0, 0, 0])
    td["collector", "mask"] = torch.tensor([[True, False, True, True]])
    assert MultiStep(0.9, 2)(td)["nonterminal"].tolist() == [[True, False, True, False]]
    with pytest.raises(ValueError):
        MultiStep(0.9, 0)
    with pytest.raises(ValueError):
        MultiStep(1.5, 2)
    with pytest.raises(KeyError, match="done"):
        MultiStep(0.9, 2)(td.exclude(("next", "done")))
