"""LLMCollector: windows of turns, completed dialogs, last steps, replay buffers, factories, weights."""

from __future__ import annotations

import queue

import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictModule

from tdrl.collectors.llm import LLMCollector
from tdrl.data import Composite, LazyStackStorage, ReplayBuffer, Unbounded
from tdrl.envs import EnvBase
from tdrl.objectives.llm import MCAdvantage


class DialogEnv(EnvBase):
    """Two parallel dialogs of 2 and 3 turns; the prompt id identifies the dialog's group (``"query"``)."""

    def __init__(self, lengths=(2, 3)):
        super().__init__(batch_size=(len(lengths),))
        n = len(lengths)
        self.lengths = torch.tensor(lengths).reshape(n, 1)
        self.observation_spec = Composite(turn=Unbounded((n, 1)), query=Unbounded((n, 1)), shape=(n,))
        self.action_spec = Unbounded((n, 1))
        self.reward_spec = Unbounded((n, 1))
        self.turn = torch.zeros(n, 1)
        self.prompt = 0

    def _reset(self, td, **kwargs):
        mask = None if td is None else td.get("_reset", None)
        mask = torch.ones_like(self.turn, dtype=torch.bool) if mask is None else mask.reshape(self.turn.shape)
        self.turn = torch.where(mask, 0.0, self.turn)
        # each reset pair of dialogs asks prompt 0 then 1 then 0...: groups of answers per prompt
        query = torch.full_like(self.turn, float(self.prompt % 2))
        self.prompt += int(mask.any())
        return TensorDict(turn=self.turn.clone(), query=query, batch_size=self.batch_size)

    def _step(self, td):
        self.turn = self.turn + 1
        done = self.turn >= self.lengths
        return TensorDict(turn=self.turn.clone(), query=td["query"], reward=td["action"].clone(), done=done,
                          batch_size=self.batch_size)

    def _set_seed(self, seed):
        return seed


def _policy():
    return TensorDictModule(torch.nn.Linear(1, 1), ["turn"], ["action"])


def test_windows_of_turns():
    collector = LLMCollector(DialogEnv(), policy=_policy(), dialog_turns_per_batch=6, total_dialog_turns=12)
    batches = list(collector)
    assert [b.shape for b in batches] == [torch.Size([2, 3])] * 2
    assert ("collector", "traj_ids") in batches[0].keys(True)
    flat = next(iter(LLMCollector(DialogEnv(), policy=_policy(), dialog_turns_per_batch=4, flatten_data=True)))
    assert flat.shape == (4,)


def test_completed_trajectories_and_last_steps():
    collector = LLMCollector(DialogEnv(), policy=_policy(), yield_completed_trajectories=True,
                             dialog_turns_per_batch=1, total_dialog_turns=5)
    batches = list(collector)
    assert [b.shape[0] for b in batches] == [2, 3]  # the short dialog ends first, then the long one
    assert all(bool(b["next", "done"][-1].all()) for b in batches)
    last = LLMCollector(DialogEnv(), policy=_policy(), yield_only_last_steps=True, total_dialog_turns=5)
    batches = list(last)
    assert [b.shape[0] for b in batches] == [1, 1]  # 2 dialogs, 5 turns ran: the dropped turns count
    assert all(bool(b["next", "done"].all()) for b in batches)


def test_replay_buffer_with_mc_advantage():
    rb = ReplayBuffer(storage=LazyStackStorage(100))
    rb.append_transform(MCAdvantage(grpo_size=2))
    collector = LLMCollector(DialogEnv(lengths=(1, 1)), policy=_policy(), yield_completed_trajectories=True,
                             replay_buffer=rb, total_dialog_turns=8)
    assert all(b is None for b in collector)
    assert len(rb) == 8 and "advantage" in rb[:].keys()


def test_policy_factory_queue_weights_and_versions():
    q = queue.Queue()
    policy = _policy()
    collector = LLMCollector(DialogEnv(), policy_factory=lambda: policy, dialog_turns_per_batch=2,
                             total_dialog_turns=4, queue=q, track_policy_version=True)
    assert collector.policy is policy and collector.dialog_turns_per_batch == 2
    it = iter(collector)
    assert next(it) is None and int(q.get()["policy_version"].max()) == 0
    new = _policy()
    collector.update_policy_weights_(new)
    torch.testing.assert_close(policy.module.weight, new.module.weight)
    assert next(it) is None and int(q.get()["policy_version"].min()) == 1


def test_errors():
    with pytest.raises(TypeError, match="dialog_turns_per_batch"):
        LLMCollector(DialogEnv(), policy=_policy())
    with pytest.raises(TypeError, match="yield_completed_trajectories"):
        LLMCollector(DialogEnv(), policy=_policy(), yield_only_last_steps=True, yield_completed_trajectories=False)
    with pytest.raises(ValueError, match="AsyncEnvPool"):
        LLMCollector(DialogEnv(), policy=_policy(), dialog_turns_per_batch=2, async_envs=True)
    with pytest.raises(TypeError, match="not both"):
        LLMCollector(DialogEnv(), policy=_policy(), policy_factory=_policy, dialog_turns_per_batch=2)
