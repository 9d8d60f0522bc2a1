from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictModule

from tdrl.collectors import Collector, RandomPolicy, SyncDataCollector, split_trajectories
from tdrl.data import LazyTensorStorage, ReplayBuffer
from tdrl.envs import ExplorationType, GymEnv, PendulumEnv, exploration_type
from tdrl.modules import LSTMModule


def cartpole():
    return GymEnv("CartPole-v1")


class ConstantPolicy(torch.nn.Module):
    """Always pushes right; records the exploration type it ran under."""

    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(()))
        self.seen = set()

    def forward(self, td):
        self.seen.add(exploration_type())
        action = torch.zeros(*td.batch_size, 2)
        action[..., 1] = self.weight.detach().clamp(0, 1)
        action[..., 0] = 1 - action[..., 1]
        td.set("action", action.to(torch.long))
        return td


def test_alias_and_single_env_layout():
    assert SyncDataCollector is Collector
    with Collector(cartpole(), frames_per_batch=40, total_frames=120) as collector:
        batches = list(collector)
    assert len(batches) == 3 == len(collector)
    for batch in batches:
        assert batch.batch_size == (40,)
        assert batch.names[-1] == "time"
        for key in ["observation", "action", ("next", "observation"), ("next", "reward"), ("next", "done"),
                    ("next", "terminated"), ("next", "truncated"), ("collector", "traj_ids")]:
            assert key in batch.keys(True), key


def test_batched_env_layout_and_rounding():
    env = GymEnv("CartPole-v1", num_envs=3)
    with pytest.warns(Warning, match="not divisible by the env batch numel"):
        collector = Collector(env, frames_per_batch=10, total_frames=24)
    batch = collector.next()
    assert batch.batch_size == (3, 4)
    assert collector.requested_frames_per_batch == 12
    collector.shutdown()


def test_traj_ids_unique_and_change_exactly_after_done():
    collector = Collector(cartpole(), frames_per_batch=64, total_frames=256)
    data = torch.cat(list(collector), 0)
    ids = data["collector", "traj_ids"]
    done = data["next", "done"].squeeze(-1)
    changed = ids[1:] != ids[:-1]
    assert torch.equal(changed, done[:-1])
    # ids only grow: never reused across batches
    assert (ids[1:] >= ids[:-1]).all()
    split = split_trajectories(data)
    assert split["collector", "mask"].sum() == data.numel()


def test_traj_ids_unique_across_sub_envs():
    collector = Collector(lambda: GymEnv("CartPole-v1", num_envs=2), frames_per_batch=200, total_frames=200)
    batch = collector.next()
    ids0, ids1 = batch["collector", "traj_ids"].unbind(0)
    assert set(ids0.tolist()).isdisjoint(ids1.tolist())


def test_max_frames_per_traj_truncates():
    collector = Collector(PendulumEnv(), frames_per_batch=25, total_frames=25, max_frames_per_traj=10)
    batch = collector.next()
    truncated = batch["next", "truncated"].squeeze(-1)
    assert truncated.nonzero().squeeze(-1).tolist() == [9, 19]
    assert batch["next", "step_count"].max() == 10


def test_reset_at_each_iter_starts_each_batch_fresh():
    collector = Collector(PendulumEnv(), frames_per_batch=5, total_frames=15, max_frames_per_traj=100,
                          reset_at_each_iter=True)
    for batch in collector:
        assert batch["step_count"][0] == 0


def test_init_random_frames_then_policy_and_exploration_type():
    policy = ConstantPolicy()  # a td -> td module, called as is
    collector = Collector(cartpole(), policy=policy, frames_per_batch=200, total_frames=400,
                          init_random_frames=150, trust_policy=True,
                          exploration_type=ExplorationType.DETERMINISTIC)
    first, second = list(collector)
    assert (first["action"].argmax(-1) == 0).any()  # random actions push left sometimes
    assert (second["action"].argmax(-1) == 1).all()
    assert policy.seen == {ExplorationType.DETERMINISTIC}


def test_plain_module_policy_is_wrapped():
    env = GymEnv("Pendulum-v1")
    batch = Collector(env, policy=torch.nn.Linear(3, 1), frames_per_batch=4, total_frames=4).next()
    assert batch["action"].shape == (4, 1)


def test_postproc_and_replay_buffer():
    rb = ReplayBuffer(storage=LazyTensorStorage(100))
    seen = []

    def postproc(batch):
        seen.append(batch.shape)
        return batch

    collector = Collector(PendulumEnv(), frames_per_batch=10, total_frames=30, postproc=postproc, replay_buffer=rb)
    out = list(collector)
    assert out == [None, None, None]
    assert len(rb) == 30 and seen == [torch.Size([10])] * 3


def test_update_policy_weights():
    policy = TensorDictModule(torch.nn.Linear(3, 1), in_keys=["observation"], out_keys=["action"])
    collector = Collector(GymEnv("Pendulum-v1"), policy=policy, frames_per_batch=4, total_frames=-1)
    new = torch.nn.Linear(3, 1)
    torch.nn.init.zeros_(new.weight)
    torch.nn.init.zeros_(new.bias)
    collector.update_policy_weights_(TensorDictModule(new, in_keys=["observation"], out_keys=["action"]))
    assert (collector.next()["action"] == 0).all()
    collector.update_policy_weights_({"module.weight": torch.ones(1, 3), "module.bias": torch.zeros(1)})
    assert (collector.next()["action"] != 0).any()
    with pytest.raises(KeyError, match="missing"):
        collector.update_policy_weights_(torch.nn.Sequential(torch.nn.Linear(3, 1)))
    with pytest.raises(RuntimeError, match="endless"):
        len(collector)


def test_seed_reproducibility_and_state_dict():
    def run(seed):
        collector = Collector(cartpole(), frames_per_batch=20, total_frames=40)
        collector.set_seed(seed)
        torch.manual_seed(seed)
        return torch.cat(list(collector), 0)

    a, b = run(3), run(3)
    assert torch.equal(a["observation"], b["observation"]) and torch.equal(a["action"], b["action"])
    collector = Collector(cartpole(), frames_per_batch=20, total_frames=60)
    collector.next()
    state = collector.state_dict()
    other = Collector(cartpole(), frames_per_batch=20, total_frames=60)
    other.load_state_dict(state)
    assert len(list(other)) == 2  # 20 of the 60 frames were already collected


def test_recurrent_policy_without_primer_is_an_error():
    lstm = LSTMModule(input_size=3, hidden_size=4, in_key="observation", out_key="features")
    with pytest.raises(KeyError, match="make_tensordict_primer"):
        Collector(GymEnv("Pendulum-v1"), policy=lstm, frames_per_batch=4)


def test_bad_arguments():
    with pytest.raises(TypeError, match="MultiSyncCollector"):
        Collector([cartpole, cartpole], frames_per_batch=4)
    with pytest.raises(ValueError, match="frames_per_batch"):
        Collector(cartpole(), frames_per_batch=0)
    with pytest.raises(TypeError, match="policy or policy_factory"):
        Collector(cartpole(), policy=RandomPolicy(), policy_factory=RandomPolicy, frames_per_batch=4)
    with pytest.raises(TypeError, match="create_env_kwargs"):
        Collector(cartpole(), frames_per_batch=4, create_env_kwargs={"x": 1})


def test_policy_factory_and_create_env_kwargs():
    collector = Collector(GymEnv, policy_factory=RandomPolicy, frames_per_batch=5, total_frames=5,
                          create_env_kwargs={"env_name": "CartPole-v1"})
    assert collector.next().batch_size == (5,)


def test_random_frames_carry_the_policy_outputs_so_a_storage_accepts_every_batch():
    from tdrl.modules import MLP, NormalParamExtractor, ProbabilisticActor, TanhNormal

    net = torch.nn.Sequential(MLP(in_features=3, out_features=2, num_cells=[8]), NormalParamExtractor())
    actor = ProbabilisticActor(
        TensorDictModule(net, in_keys=["observation"], out_keys=["loc", "scale"]),
        in_keys=["loc", "scale"],
        distribution_class=TanhNormal,
        return_log_prob=True,
    )
    rb = ReplayBuffer(storage=LazyTensorStorage(100))
    collector = Collector(GymEnv("Pendulum-v1"), policy=actor, frames_per_batch=10, total_frames=30,
                          init_random_frames=10, replay_buffer=rb)
    assert list(collector) == [None] * 3
    first = rb[:10]
    assert (first["action_log_prob"] == 0).all() and (first["loc"] == 0).all()
    assert (rb[10:]["scale"] > 0).all()


@pytest.mark.parametrize("layout", [True, torch.strided, torch.jagged])
def test_split_trajectories_as_nested_matches_padded(layout):
    # collector_trajectory_assembly tutorial: split_trajectories(batch, as_nested=True)
    ids = torch.tensor([[0, 0, 1, 1, 1], [2, 2, 2, 3, 3]])
    batch = TensorDict({"obs": torch.arange(20.0).view(2, 5, 2), ("collector", "traj_ids"): ids}, [2, 5])
    nested = split_trajectories(batch, as_nested=layout)
    padded = split_trajectories(batch)
    assert nested.batch_size == (4, -1)
    assert nested["obs"].is_nested
    assert nested["obs"].layout == (torch.strided if layout is True else layout)
    mask = padded["collector", "mask"]
    for row, (traj, valid) in enumerate(zip(nested["obs"].unbind(), mask)):
        assert torch.equal(traj, padded["obs"][row][valid])
