from __future__ import annotations

import pytest
import torch
from tensordict.nn import TensorDictModule, TensorDictSequential

from tdrl.collectors import (
    AsyncCollector,
    MultiAsyncCollector,
    MultiaSyncDataCollector,
    MultiSyncCollector,
    MultiSyncDataCollector,
    aSyncDataCollector,
)
from tdrl.data import LazyTensorStorage, ReplayBuffer
from tdrl.envs import (
    Compose,
    ExplorationType,
    GymEnv,
    InitTracker,
    ParallelEnv,
    PendulumEnv,
    SerialEnv,
    TransformedEnv,
)
from tdrl.modules import LSTMModule
from tests.collectors._helpers import ExplorationProbe, cartpole, gym_pendulum, linear_policy, pendulum

pytestmark = pytest.mark.timeout(120)

KEYS = [("next", "reward"), ("next", "done"), ("next", "terminated"), "action", ("collector", "traj_ids")]


def test_aliases():
    assert MultiSyncDataCollector is MultiSyncCollector
    assert MultiaSyncDataCollector is MultiAsyncCollector
    assert aSyncDataCollector is AsyncCollector


@pytest.mark.parametrize("make_env", [pendulum, cartpole], ids=["pendulum", "cartpole"])
def test_sync_layout_stack_and_cat(make_env):
    with MultiSyncCollector([make_env, make_env], frames_per_batch=20, total_frames=40) as c:
        batches = list(c)
        assert len(c) == 2
    assert [b.shape for b in batches] == [torch.Size([2, 10])] * 2
    obs_key = "th" if make_env is pendulum else "observation"
    for key in [*KEYS, obs_key, ("next", obs_key)]:
        assert key in batches[0].keys(True), key
    assert batches[0].names[-1] == "time"
    with MultiSyncCollector(make_env, num_workers=2, frames_per_batch=20, total_frames=20, cat_results=-1) as c:
        (batch,) = list(c)
    assert batch.shape == torch.Size([20])


def test_async_layout_and_total_frames():
    with MultiAsyncCollector([pendulum, pendulum], frames_per_batch=8, total_frames=40) as c:
        shapes = [b.shape for b in c]
        assert len(c) == 5
    assert shapes == [torch.Size([8])] * 5
    with AsyncCollector(pendulum, frames_per_batch=6, total_frames=12) as c:
        assert [b.shape for b in c] == [torch.Size([6])] * 2
    with AsyncCollector(pendulum, frames_per_batch=6, total_frames=6, track_traj_ids=False,
                        return_same_td=True) as c:
        assert ("collector", "traj_ids") not in c.next().keys(True)


def test_batched_envs_inside_collectors():
    serial = lambda: SerialEnv(2, PendulumEnv)  # noqa: E731
    with MultiSyncCollector([serial, serial], frames_per_batch=16, total_frames=16) as c:
        (batch,) = list(c)
    assert batch.shape == torch.Size([2, 2, 4])
    ids = batch["collector", "traj_ids"][..., 0].flatten()
    assert len(set(ids.tolist())) == 4  # one trajectory per sub-env of each worker
    parallel = lambda: ParallelEnv(2, PendulumEnv)  # noqa: E731
    with MultiAsyncCollector([parallel], frames_per_batch=8, total_frames=16) as c:
        shapes = [b.shape for b in c]
    assert shapes == [torch.Size([2, 4])] * 2


def test_traj_ids_unique_across_workers_and_batches():
    with MultiSyncCollector([pendulum, pendulum], frames_per_batch=24, total_frames=72,
                            max_frames_per_traj=5) as c:
        batches = list(c)
    per_worker: list[list[int]] = [[], []]
    for b in batches:
        ids = b["collector", "traj_ids"]
        for w in range(2):
            per_worker[w].extend(ids[w].tolist())
    assert not set(per_worker[0]) & set(per_worker[1])
    for ids in per_worker:
        # ids never come back once left, and each trajectory is at most 5 steps long
        runs = [ids[0]] + [b for a, b in zip(ids, ids[1:]) if a != b]
        assert len(runs) == len(set(runs))
        assert max(ids.count(i) for i in set(ids)) <= 5


def test_max_frames_reset_at_each_iter_and_split_trajs():
    with MultiSyncCollector([pendulum, pendulum], frames_per_batch=20, total_frames=40, max_frames_per_traj=4,
                            reset_at_each_iter=True) as c:
        for batch in c:
            steps = batch["step_count"]
            assert int(steps.max()) < 4
            assert (steps[:, 0] == 0).all()
    with MultiSyncCollector([pendulum, pendulum], frames_per_batch=20, total_frames=20, max_frames_per_traj=4,
                            split_trajs=True) as c:
        (batch,) = list(c)
    assert ("collector", "mask") in batch.keys(True)
    assert int(batch["collector", "mask"].sum()) == 20
    assert batch.shape[-1] == 4


def test_init_random_frames_then_policy():
    policy = TensorDictModule(lambda obs: torch.full((*obs.shape[:-1], 1), 0.5), ["observation"], ["action"])
    with MultiSyncCollector([gym_pendulum, gym_pendulum], policy, frames_per_batch=10, total_frames=30,
                            init_random_frames=10) as c:
        first, second, third = [b["action"] for b in c]
    assert not (first == 0.5).all()
    assert (second == 0.5).all() and (third == 0.5).all()


def test_exploration_type_and_postproc():
    policy = TensorDictModule(ExplorationProbe(), ["observation"], ["action"])
    seen = []

    def postproc(batch):
        seen.append(batch.shape)
        batch.set("tag", torch.ones(batch.shape))
        return batch

    with MultiAsyncCollector([gym_pendulum, gym_pendulum], policy, frames_per_batch=5, total_frames=10, postproc=postproc,
                             exploration_type=ExplorationType.DETERMINISTIC) as c:
        for batch in c:
            assert (batch["action"] == 1).all()
            assert "tag" in batch.keys()
    assert seen == [torch.Size([5])] * 2


@pytest.mark.parametrize("cls", [MultiSyncCollector, MultiAsyncCollector])
def test_replay_buffer_feeding(cls):
    rb = ReplayBuffer(storage=LazyTensorStorage(100))
    with cls([pendulum, pendulum], frames_per_batch=10, total_frames=30, replay_buffer=rb) as c:
        out = list(c)
    assert out == [None] * 3
    assert len(rb) == 30
    assert rb.sample(4)["next", "reward"].shape == torch.Size([4, 1])


def test_preemption_marks_missing_steps():
    with MultiSyncCollector([pendulum, pendulum], frames_per_batch=20, total_frames=20,
                            preemptive_threshold=0.5) as c:
        batch = c.next()  # preempted frames are not counted: more batches may follow
    mask = batch["collector", "mask"]
    assert mask.shape == batch.shape and mask[:, 0].all()
    assert ((batch["collector", "traj_ids"] == -1) == ~mask).all()


def test_state_dict_round_trip_and_seed():
    def first_batch(seed):
        with MultiSyncCollector([gym_pendulum, gym_pendulum], frames_per_batch=10, total_frames=10) as c:
            c.set_seed(seed)
            return next(iter(c))

    a, b, other = first_batch(3), first_batch(3), first_batch(4)
    assert torch.equal(a["action"], b["action"]) and torch.equal(a["next", "observation"], b["next", "observation"])
    assert not torch.equal(a["action"], other["action"])
    with MultiSyncCollector([gym_pendulum, gym_pendulum], linear_policy(), frames_per_batch=10, total_frames=40) as c:
        it = iter(c)
        next(it)
        state = c.state_dict()
    assert state["frames"] == 10 and {"worker0", "worker1"} <= set(state)
    with MultiSyncCollector([gym_pendulum, gym_pendulum], linear_policy(), frames_per_batch=10, total_frames=40) as c:
        c.load_state_dict(state)
        assert len(list(c)) == 3


def test_bad_arguments():
    with pytest.raises(TypeError, match="num_workers"):
        MultiSyncCollector(pendulum, frames_per_batch=10)
    with pytest.raises(ValueError, match="num_workers=3"):
        MultiSyncCollector([gym_pendulum, gym_pendulum], num_workers=3, frames_per_batch=10)
    with pytest.raises(ValueError, match="frames_per_batch"):
        MultiSyncCollector([gym_pendulum], frames_per_batch=0)
    with pytest.raises(KeyError, match="'critic'"):
        MultiSyncCollector([gym_pendulum], frames_per_batch=4, weight_sync_schemes={"critic": None})
    with pytest.raises(TypeError, match="policy or policy_factory"):
        MultiSyncCollector([gym_pendulum], linear_policy(), policy_factory=linear_policy, frames_per_batch=4)


def _recurrent_policy():
    lstm = LSTMModule(input_size=3, hidden_size=4, in_key="observation", out_key="features")
    head = TensorDictModule(torch.nn.Linear(4, 1), in_keys=["features"], out_keys=["action"])
    return TensorDictSequential(lstm, head), lstm


def test_recurrent_policy_state_is_carried_and_primer_is_required():
    policy, lstm = _recurrent_policy()
    primer = lstm.make_tensordict_primer()

    def env_with_primer():
        return TransformedEnv(GymEnv("Pendulum-v1"), Compose(InitTracker(), primer.clone()))

    with MultiSyncCollector([env_with_primer, env_with_primer], policy, frames_per_batch=16, total_frames=32) as c:
        first, second = list(c)
    h, next_h = first["recurrent_state_h"], first["next", "recurrent_state_h"]
    assert (h[:, 0] == 0).all() and not (next_h == 0).all()
    assert torch.equal(h[:, 1:], next_h[:, :-1])  # each step starts from the previous step's state
    assert torch.equal(second["recurrent_state_h"][:, 0], next_h[:, -1])  # and across batches
    with pytest.raises(RuntimeError, match="make_tensordict_primer"):
        MultiSyncCollector([gym_pendulum, gym_pendulum], policy, frames_per_batch=8)
