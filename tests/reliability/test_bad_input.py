"""Bad input across the library: each case asserts that the error names the offending key, shape or value,
and that the object still works afterwards with its data intact.

Areas: envs (action checks at step entry), batched envs and collectors, specs, replay buffers and samplers,
value estimators (``check_finite`` and missing inputs), losses (missing inputs, ``check_finite``), the
config system and the CLI.
"""

from __future__ import annotations

import re

import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictModule as Mod

from tdrl.collectors import Collector
from tdrl.data import (
    Binary,
    Bounded,
    Categorical,
    Composite,
    LazyTensorStorage,
    OneHot,
    PrioritizedSampler,
    ReplayBuffer,
    SliceSampler,
    TensorDictReplayBuffer,
    Unbounded,
)
from tdrl.envs import EnvBase, ParallelEnv
from tdrl.objectives import ClipPPOLoss, DQNLoss, KLPENPPOLoss, SACLoss, check_finite
from tdrl.objectives.value import GAE, TD0Estimator, TD1Estimator, TDLambdaEstimator, VTrace
from tdrl.trainers.algorithms.configs.presets import compose_run_config as compose_config
from tests.objectives._cases import actor, critic, onpolicy_td, qvalue


def raises(exc: type[BaseException], *fragments: str, call) -> str:
    """Runs ``call``, expects ``exc``, and checks that its message holds every fragment (plain text)."""
    with pytest.raises(exc) as info:
        call()
    message = str(info.value.args[0]) if info.value.args else str(info.value)
    for fragment in fragments:
        assert fragment in message, f"{fragment!r} not in the message:\n{message}"
    return message


# ---------------------------------------------------------------------------------------------- envs


class DiscreteEnv(EnvBase):
    """One action leaf of the given spec; the observation counts steps (data to check stays intact)."""

    def __init__(self, spec, **kwargs) -> None:
        super().__init__(**kwargs)
        self.observation_spec = Composite(count=Unbounded(shape=(1,)))
        self.action_spec = spec
        self.reward_spec = Unbounded(shape=(1,))

    def _reset(self, tensordict=None, **kwargs):
        return TensorDict({"count": torch.zeros(1)}, [])

    def _step(self, tensordict):
        return TensorDict({"count": tensordict["count"] + 1, "reward": torch.ones(1),
                           "done": torch.zeros(1, dtype=torch.bool), "terminated": torch.zeros(1, dtype=torch.bool)}, [])

    def _set_seed(self, seed):
        pass


SPECS = {
    "onehot": lambda: OneHot(3, dtype=torch.int64),
    "categorical": lambda: Categorical(3),
    "binary": lambda: Binary(2),
    "bounded_discrete": lambda: Bounded(0, 4, shape=(1,), dtype=torch.int64),
}


def _still_steps(env: EnvBase) -> None:
    """The env takes a valid action afterwards and its state moved by exactly one step."""
    td = env.reset()
    out = env.step(env.rand_action(td))
    assert out["next", "count"].item() == 1.0


@pytest.mark.parametrize(
    "spec, action, exc, fragments",
    [
        ("onehot", torch.tensor([0.2, 0.3, 0.5]), TypeError, ["'action'", "torch.float32", "OneHot(n=3", "0.2"]),
        ("categorical", torch.tensor(1.0), TypeError, ["'action'", "torch.float32", "Categorical(n=3"]),
        ("categorical", torch.tensor(3), ValueError, ["'action'", "holds 3", "Categorical(n=3", "[0, 2]"]),
        ("categorical", torch.tensor(-1), ValueError, ["'action'", "holds -1", "[0, 2]"]),
        ("categorical", torch.tensor([1, 2]), ValueError, ["'action'", "shape (2,)", "expected ()"]),
        ("onehot", torch.tensor([1, 0]), ValueError, ["'action'", "shape (2,)", "expected (3,)"]),
        ("binary", torch.tensor([0.0, 1.0]), TypeError, ["'action'", "torch.float32", "Binary"]),
        ("bounded_discrete", torch.tensor([5]), ValueError, ["'action'", "holds 5", "index (0,)", "[0, 4]"]),
    ],
    ids=["float_into_onehot", "float_into_categorical", "categorical_too_high", "categorical_negative",
         "categorical_wrong_shape", "onehot_wrong_shape", "float_into_binary", "bounded_discrete_out_of_range"],
)
def test_env_rejects_bad_actions(spec, action, exc, fragments):
    env = DiscreteEnv(SPECS[spec]())
    td = env.reset()
    td["action"] = action
    raises(exc, "DiscreteEnv.step()", *fragments, call=lambda: env.step(td))
    _still_steps(env)


@pytest.mark.parametrize(
    "spec, action, fragments",
    [
        ("onehot", torch.tensor([1, 1, 0]), ["'action'", "[1, 1, 0]", "one-hot"]),
        ("onehot", torch.tensor([0, 0, 0]), ["'action'", "[0, 0, 0]", "one-hot"]),
        ("binary", torch.tensor([0, 2], dtype=torch.int8), ["'action'", "holds 2", "index (1,)", "0 or 1"]),
    ],
    ids=["onehot_two_hot", "onehot_none_hot", "binary_value_2"],
)
def test_env_with_type_checks_rejects_invalid_discrete_values(spec, action, fragments):
    env = DiscreteEnv(SPECS[spec](), run_type_checks=True)
    td = env.reset()
    td["action"] = action.to(env.action_spec.dtype)
    raises(ValueError, *fragments, call=lambda: env.step(td))
    _still_steps(env)


def test_env_missing_action_names_the_key_and_spec():
    env = DiscreteEnv(SPECS["categorical"]())
    raises(KeyError, "no action entry 'action'", "torch.int64", "rand_action", call=lambda: env.step(env.reset()))
    _still_steps(env)


@pytest.mark.timeout(60)
def test_parallel_env_rejects_a_float_action_in_the_parent_and_keeps_its_workers():
    env = ParallelEnv(2, lambda: DiscreteEnv(Categorical(3)))
    try:
        td = env.reset()
        pids = env.worker_pids
        td["action"] = torch.tensor([0.5, 1.0])
        raises(TypeError, "ParallelEnv.step()", "'action'", "torch.float32", call=lambda: env.step(td))
        wrong = TensorDict({"count": torch.zeros(3, 1), "action": torch.zeros(3, dtype=torch.long)}, [3])
        raises(RuntimeError, "batch_size == env.batch_size (2,)", "got batch_size (3,)", call=lambda: env.step(wrong))
        td = env.reset()
        out = env.step(env.rand_action(td))
        assert out["next", "count"].flatten().tolist() == [1.0, 1.0]
        assert env.worker_pids == pids  # the same workers, still serving
    finally:
        env.close()


class _FloatOnce(torch.nn.Module):
    """A policy that writes a float action on its first call, valid indices afterwards."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def forward(self, count):
        self.calls += 1
        action = torch.ones(count.shape[:-1])
        return action if self.calls == 1 else action.long()


def test_collector_with_a_policy_writing_float_actions_into_a_discrete_env():
    policy = Mod(_FloatOnce(), ["count"], ["action"])
    collector = Collector(lambda: DiscreteEnv(Categorical(3)), policy, frames_per_batch=4, total_frames=-1)
    try:
        raises(TypeError, "'action'", "torch.float32", "Categorical(n=3", call=collector.next)
        batch = collector.next()  # the collector goes on once the policy is fixed
        assert batch["action"].dtype == torch.int64 and batch.numel() == 4
    finally:
        collector.shutdown()


# ---------------------------------------------------------------------------------------------- specs


@pytest.mark.parametrize(
    "build, exc, fragments",
    [
        (lambda: Bounded(low=1.0, high=0.0, shape=(2,)), ValueError, ["low", "high", "tensor([1., 1.])"]),
        (lambda: OneHot(3).encode(torch.tensor(5)), ValueError, ["index 5", "[0, 2]"]),
        (lambda: Categorical(3).update_mask(torch.ones(4, dtype=torch.bool)), ValueError, ["(4,)", "(3,)"]),
        (lambda: Composite(a=Unbounded(shape=(3,)), shape=(4,)), ValueError, ["'a'", "(3,)", "(4,)"]),
        (lambda: Unbounded(shape=(2,), dtype="flot"), TypeError, ["'flot'"]),
    ],
    ids=["bounded_low_above_high", "onehot_encode_out_of_range", "mask_wrong_shape", "composite_child_shape",
         "unknown_dtype"],
)
def test_spec_errors_name_the_value(build, exc, fragments):
    raises(exc, *fragments, call=build)
    assert Categorical(3).rand().item() in (0, 1, 2)  # the spec classes are unharmed


# ---------------------------------------------------------------------------------------------- buffers


def _filled_buffer(**kwargs) -> tuple[TensorDictReplayBuffer, torch.Tensor]:
    rb = TensorDictReplayBuffer(storage=LazyTensorStorage(10), batch_size=2, **kwargs)
    obs = torch.arange(12.0).view(3, 4)
    rb.extend(TensorDict({"obs": obs}, [3]))
    return rb, obs


def _intact(rb, obs: torch.Tensor) -> None:
    assert len(rb) == 3
    assert torch.equal(rb[:3]["obs"], obs)
    assert rb.sample(2)["obs"].shape == (2, 4)


@pytest.mark.parametrize(
    "action, exc, fragments",
    [
        (lambda rb: rb.extend(TensorDict({"obs": torch.ones(3, 5)}, [3])), ValueError, ["'obs'", "(3, 5)", "(4,)"]),
        (lambda rb: rb.extend(TensorDict({"other": torch.ones(3, 4)}, [3])), KeyError, ["'obs'", "'other'"]),
        (lambda rb: rb.sample(-1), ValueError, ["batch_size", "-1"]),
        (lambda rb: rb[50], IndexError, ["50", "length 3"]),
        (lambda rb: rb.storage.get(torch.tensor([50])), IndexError, ["[50, 50]", "filled size of 3"]),
    ],
    ids=["extend_wrong_shape", "extend_wrong_keys", "negative_batch_size", "index_out_of_range",
         "storage_get_out_of_range"],
)
def test_buffer_errors_name_key_or_shape_and_keep_the_data(action, exc, fragments):
    rb, obs = _filled_buffer()
    raises(exc, *fragments, call=lambda: action(rb))
    _intact(rb, obs)


def test_empty_buffer_and_zero_capacity():
    raises(RuntimeError, "empty replay buffer", call=lambda: ReplayBuffer(storage=LazyTensorStorage(10)).sample(2))
    raises(ValueError, "max_size", "got 0", call=lambda: LazyTensorStorage(0))


@pytest.mark.parametrize(
    "index, priority, exc, fragments",
    [
        ([0, 1], [1.0, 2.0, 3.0], ValueError, ["shape (3,)", "2 indices"]),
        ([0, 1], [1.0, float("nan")], ValueError, ["finite", "nan"]),
        ([0, 1], [1.0, -2.0], ValueError, [">= 0", "-2."]),
        ([0, 11], [1.0, 2.0], IndexError, ["index 11", "max_capacity=10"]),
    ],
    ids=["priority_length", "priority_nan", "priority_negative", "priority_index_out_of_range"],
)
def test_prioritized_sampler_errors_keep_the_priorities(index, priority, exc, fragments):
    rb, obs = _filled_buffer(sampler=PrioritizedSampler(10, alpha=0.7, beta=0.5))
    rb.update_priority(torch.tensor([0, 1, 2]), torch.tensor([1.0, 2.0, 3.0]))
    tree = rb.sampler._sum_tree
    before = [tree[i] for i in range(3)]
    raises(exc, *fragments, call=lambda: rb.update_priority(torch.tensor(index), torch.tensor(priority)))
    assert [tree[i] for i in range(3)] == before  # a rejected update changes no priority
    _intact(rb, obs)


def test_prioritized_sampler_rejects_negative_alpha():
    raises(ValueError, "alpha", "-1", call=lambda: PrioritizedSampler(10, alpha=-1, beta=0.5))


def test_slice_sampler_errors_name_the_keys_and_sizes():
    rb = TensorDictReplayBuffer(storage=LazyTensorStorage(20), sampler=SliceSampler(num_slices=2, traj_key="episode"),
                                batch_size=4)
    rb.extend(TensorDict({"obs": torch.ones(10, 1)}, [10]))
    raises(KeyError, "'episode'", "('next', 'done')", "['obs']", call=rb.sample)
    assert len(rb) == 10
    rb = TensorDictReplayBuffer(storage=LazyTensorStorage(20), sampler=SliceSampler(num_slices=3, traj_key="episode"),
                                batch_size=4)
    rb.extend(TensorDict({"obs": torch.arange(10.0).unsqueeze(-1), "episode": torch.zeros(10, dtype=torch.long)},
                         [10]))
    raises(RuntimeError, "batch_size=4", "num_slices=3", call=rb.sample)
    assert rb.sample(6)["obs"].shape == (6, 1)


# ---------------------------------------------------------------------------------------------- estimators


def _trajectory(b: int = 4, t: int = 8) -> TensorDict:
    return TensorDict(
        {"observation": torch.randn(b, t, 3), "state_value": torch.randn(b, t, 1),
         "sample_log_prob": torch.randn(b, t), "action_log_prob": torch.randn(b, t),
         "next": {"observation": torch.randn(b, t, 3), "reward": torch.randn(b, t, 1),
                  "state_value": torch.randn(b, t, 1),
                  "done": torch.zeros(b, t, 1, dtype=torch.bool), "terminated": torch.zeros(b, t, 1, dtype=torch.bool)}},
        [b, t],
    )


ESTIMATORS = {
    "GAE": lambda: GAE(gamma=0.9, lmbda=0.95, value_network=None, check_finite=True),
    "TD0": lambda: TD0Estimator(gamma=0.9, value_network=None, check_finite=True),
    "TD1": lambda: TD1Estimator(gamma=0.9, value_network=None, check_finite=True),
    "TDLambda": lambda: TDLambdaEstimator(gamma=0.9, lmbda=0.95, value_network=None, check_finite=True),
}


@pytest.mark.parametrize("name", list(ESTIMATORS))
@pytest.mark.parametrize("key, value, kind", [(("next", "reward"), float("nan"), "NaN"),
                                              ("state_value", float("inf"), "inf")])
def test_estimator_check_finite_names_key_and_first_bad_index(name, key, value, kind):
    estimator = ESTIMATORS[name]()
    data = _trajectory()
    data[key][3, 7, 0] = value
    data[key][3, 5, 0] = value  # (3, 5) comes first in row-major order
    raises(ValueError, f"{key!r} has {kind} at index (3, 5, 0)", "2 of 32", call=lambda: estimator(data.clone()))
    clean = _trajectory()
    assert torch.isfinite(estimator(clean)["advantage"]).all()


def test_vtrace_check_finite_names_the_reward():
    estimator = VTrace(gamma=0.9, value_network=None, actor_network=actor(), check_finite=True)
    data = _trajectory()
    data["action"] = torch.rand(4, 8, 2) * 0.5
    data["loc"], data["scale"] = torch.zeros(4, 8, 2), torch.ones(4, 8, 2)
    data["next", "reward"][0, 2, 0] = float("nan")
    raises(ValueError, "('next', 'reward') has NaN at index (0, 2, 0)", call=lambda: estimator(data.clone()))


def test_check_finite_is_off_by_default_and_on_in_the_context():
    data = _trajectory()
    data["next", "reward"][1, 1, 0] = float("nan")
    estimator = GAE(gamma=0.9, lmbda=0.95, value_network=None)
    assert torch.isnan(estimator(data.clone())["advantage"]).any()  # the silent spread the guard prevents
    with check_finite():
        raises(ValueError, "('next', 'reward') has NaN at index (1, 1, 0)", call=lambda: estimator(data.clone()))


@pytest.mark.parametrize("missing", [("next", "done"), ("next", "reward"), "next"])
def test_estimator_missing_input_names_the_key(missing):
    estimator = GAE(gamma=0.9, lmbda=0.95, value_network=critic())
    data = _trajectory()
    expected = "('next', 'reward')" if missing == "next" else repr(missing)
    raises(KeyError, f"missing input entry {expected}", "trajectory",
           call=lambda: estimator(data.clone().exclude(missing)))
    assert estimator(data)["advantage"].shape == (4, 8, 1)


def test_estimator_without_time_dim():
    estimator = GAE(gamma=0.9, lmbda=0.95, value_network=None)
    raises(RuntimeError, "time dimension", "batch_size ()", call=lambda: estimator(_trajectory()[0, 0]))


# ---------------------------------------------------------------------------------------------- losses


def test_ppo_without_next_and_advantage_says_how_to_produce_it():
    loss = ClipPPOLoss(actor(), critic())
    data = onpolicy_td().exclude("advantage", "value_target", "next")
    raises(KeyError, "no 'advantage' entry", "('next', 'reward')", "loss.value_estimator(td)", "GAE",
           call=lambda: loss(data.clone()))
    assert torch.isfinite(loss(onpolicy_td())["loss_objective"])


def test_ppo_without_critic_or_advantage():
    loss = ClipPPOLoss(actor())
    raises(KeyError, "no 'advantage' entry", "GAE(", call=lambda: loss(onpolicy_td().exclude("advantage")))


def test_ppo_without_log_prob_says_where_it_comes_from():
    loss = ClipPPOLoss(actor(), critic())
    data = onpolicy_td().exclude("sample_log_prob", "action_log_prob")
    raises(KeyError, "missing input entry", "_log_prob", "return_log_prob=True", call=lambda: loss(data))
    assert torch.isfinite(loss(onpolicy_td())["loss_objective"])


def test_klpen_without_old_distribution_params():
    loss = KLPENPPOLoss(actor(), critic())
    raises(KeyError, "old distribution ['loc']", "['loc', 'scale']", call=lambda: loss(onpolicy_td().exclude("loc")))
    assert torch.isfinite(loss(onpolicy_td())["loss_objective"])


def _offpolicy() -> TensorDict:
    return TensorDict(
        {"observation": torch.randn(8, 3), "action": torch.rand(8, 2) * 0.5,
         "next": {"observation": torch.randn(8, 3), "reward": torch.randn(8, 1),
                  "done": torch.zeros(8, 1, dtype=torch.bool), "terminated": torch.zeros(8, 1, dtype=torch.bool)}},
        [8],
    )


def test_sac_missing_next_observation_names_it():
    loss = SACLoss(actor(), qvalue(), action_spec=Bounded(-1.0, 1.0, shape=(2,)))
    data = _offpolicy()
    raises(KeyError, "['observation'] are missing", "('next', 'observation')", "Collector",
           call=lambda: loss(data.clone().exclude(("next", "observation"))))
    assert torch.isfinite(loss(data)["loss_actor"])


def test_dqn_missing_action_names_it():
    net = Mod(torch.nn.Linear(3, 2), ["observation"], ["action_value"])
    from tdrl.modules import QValueActor

    loss = DQNLoss(QValueActor(net, in_keys=["observation"], spec=OneHot(2)), action_space="one-hot")
    data = _offpolicy()
    data["action"] = torch.nn.functional.one_hot(torch.randint(2, (8,)), 2)
    raises(KeyError, "'action'", call=lambda: loss(data.clone().exclude("action")))
    assert torch.isfinite(loss(data)["loss"])


def test_loss_check_finite_names_the_input_and_index():
    loss = ClipPPOLoss(actor(), critic())
    loss.check_finite = True
    data = onpolicy_td()
    data["advantage"][2] = float("nan")
    raises(ValueError, "input 'advantage' has NaN at index (2,", call=lambda: loss(data))
    assert torch.isfinite(loss(onpolicy_td())["loss_objective"])


def test_loss_set_keys_unknown_name_lists_the_accepted_ones():
    loss = ClipPPOLoss(actor(), critic())
    raises(ValueError, "'advantag'", "ClipPPOLoss", "['advantage', 'value_target'",
           call=lambda: loss.set_keys(advantag="adv"))
    assert torch.isfinite(loss(onpolicy_td())["loss_objective"])


# ---------------------------------------------------------------------------------------------- configs, CLI


def test_config_typo_lists_the_valid_keys():
    raises(Exception, "optim.'lrr'", "Did you mean optim.'lr'", "['anneal_lr'",
           call=lambda: compose_config(["optim.lrr=0.1"]))
    assert compose_config(["optim.lr=0.001"]).optim.lr == 0.001


def test_config_bad_integer_names_the_key_and_value():
    raises(Exception, "collector.frames_per_batch", "'abc'", call=lambda: compose_config(["collector.frames_per_batch=abc"]))


def test_config_override_without_equals_sign():
    raises(Exception, "KEY=VALUE", "'optim.lr'", call=lambda: compose_config(["optim.lr"]))


def test_config_float_override_of_the_wrong_type_names_key_type_and_value():
    with pytest.raises(Exception) as info:
        compose_config(["optim.lr=abc"])
    assert re.search(r"optim\.lr.*float.*'abc'|optim\.lr.*'abc'.*float", str(info.value))


def test_cli_reports_a_bad_override_without_a_traceback(capsys, tmp_path, monkeypatch):
    from tdrl.trainers.cli import main

    monkeypatch.chdir(tmp_path)
    assert main(["train", "optim.lrr=0.1"]) == 2
    err = capsys.readouterr().err
    assert "optim.'lrr'" in err and "Traceback" not in err
    assert not any(tmp_path.iterdir()), "a run folder was created for a config that does not validate"
