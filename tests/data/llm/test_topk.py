"""TopKRewardSelector and create_infinite_iterator (``tdrl.data.llm``).

The 10-prompt case is TorchRL 0.14.1's own docstring example, run in the anchor venv: it writes 20 items
(the two answers of each group of 5 above the median), not the 30 its docstring states."""

from __future__ import annotations

from itertools import islice

import pytest
import torch
from tensordict import TensorDict, lazy_stack

from tdrl.data import LazyStackStorage, ReplayBuffer
from tdrl.data.llm import TopKRewardSelector, create_infinite_iterator


def _step(reward: float, prompt: str, tokens: int = 3, done: bool = True) -> TensorDict:
    return TensorDict(
        {
            ("next", "done"): torch.full((1, 1), done),
            ("next", "reward"): torch.full((tokens, 1), float(reward)),
            "text": prompt,
        }
    )


def _buffer(selector: TopKRewardSelector, size: int = 100) -> ReplayBuffer:
    rb = ReplayBuffer(storage=LazyStackStorage(size))
    rb.append_transform(selector)
    return rb


def test_keeps_the_best_above_median_of_each_group() -> None:
    # TorchRL's example: 50 answers, 10 prompts x 5, reward i with i + 5 reward tokens
    data = lazy_stack([_step(i, f"Prompt {i // 5}", tokens=i + 5) for i in range(50)])
    rb = _buffer(TopKRewardSelector(total_dialog_turns=5, topk_size=3, prompt_key="text", verbose=False))
    for chunk in data.chunk(25):
        rb.extend(chunk)
    assert len(rb) == 20  # measured with TorchRL 0.14.1 as well
    rewards = rb[:].get(("next", "reward"), as_padded_tensor=True)[:, 0, 0]
    assert rewards.tolist() == [r for g in range(10) for r in (5.0 * g + 4, 5.0 * g + 3)]


def test_topk_caps_the_selection_and_equal_rewards_write_nothing() -> None:
    rb = _buffer(TopKRewardSelector(6, 1, prompt_key="text", verbose=False))
    rb.extend(lazy_stack([_step(r, "a") for r in [0, 5, 1, 4, 2, 3]]))
    assert rb[:].get(("next", "reward"), as_padded_tensor=True)[:, 0, 0].tolist() == [5.0]
    rb.extend(lazy_stack([_step(1.0, "b") for _ in range(6)]))
    assert len(rb) == 1


def test_a_group_is_written_once() -> None:
    # TorchRL 0.14.1 slides a window over the answers of a prompt: 7 answers, groups of 5 -> 6 writes
    rb = _buffer(TopKRewardSelector(5, 3, prompt_key="text", verbose=False))
    for r in range(7):
        rb.extend(lazy_stack([_step(r, "P")]))
    assert len(rb) == 2
    for r in range(7, 10):
        rb.extend(lazy_stack([_step(r, "P")]))
    assert len(rb) == 4  # answers 5..9 made the second group


def test_multi_step_trajectories_are_queued_whole() -> None:
    rb = _buffer(TopKRewardSelector(2, 1, prompt_key="text", verbose=False))
    traj = lambda a, b: [_step(a, "q", done=False), _step(b, "q")]  # noqa: E731
    rb.extend(lazy_stack(traj(0.0, 3.0) + traj(1.0, 1.0)))
    # the first trajectory (mean 1.5) is written whole, both steps; TorchRL 0.14.1 would keep its 2nd step only
    assert rb[:].get(("next", "reward"), as_padded_tensor=True)[:, 0, 0].tolist() == [0.0, 3.0]


def test_errors_name_the_problem() -> None:
    with pytest.raises(ValueError, match="topk_size must be smaller"):
        TopKRewardSelector(2, 3)
    sel = TopKRewardSelector(2, 1, prompt_key="text", verbose=False)
    with pytest.raises(RuntimeError, match="not done"):
        sel.inv(lazy_stack([_step(0, "q", done=False)]))
    with pytest.raises(TypeError, match="expected a string at 'missing'"):
        TopKRewardSelector(2, 1, prompt_key="missing", verbose=False).inv(lazy_stack([_step(0, "q")]))


def test_create_infinite_iterator_cycles_and_refuses_a_spent_iterator() -> None:
    assert list(islice(create_infinite_iterator(range(3)), 7)) == [0, 1, 2, 0, 1, 2, 0]
    with pytest.raises(ValueError, match="yielded nothing"):
        list(islice(create_infinite_iterator(iter([1])), 3))
