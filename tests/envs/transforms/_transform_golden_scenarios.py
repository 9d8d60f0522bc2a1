"""Scenarios run identically on TorchRL 0.14.1 (by ``record_torchrl_golden.py``) and on tdrl (by
``test_golden_torchrl.py``): ``lib`` holds the library's ``envs`` and ``data`` modules."""

from __future__ import annotations

from typing import Any

import torch
from tensordict import TensorDict

LOW = [-1.0, 0.0, -3.0]
HIGH = [1.0, 2.0, 3.0]


def make_env(lib: Any, steps: int = 30) -> Any:
    """A deterministic 3-dim env: ``observation`` follows a fixed curve plus the action; reward = obs[0]."""

    class CurveEnv(lib.envs.EnvBase):
        def __init__(self) -> None:
            super().__init__(batch_size=())
            data = lib.data
            self.observation_spec = data.Composite(observation=data.Unbounded((3,)))
            self.action_spec = data.Bounded(torch.tensor(LOW), torch.tensor(HIGH), (3,))
            self.reward_spec = data.Unbounded((1,))
            self.t = 0

        def _obs(self, action: torch.Tensor) -> torch.Tensor:
            t = torch.tensor(float(self.t))
            return torch.stack([t.sin() * 2 + 1, (0.5 * t).cos() * 3, 0.1 * t]) + 0.1 * action

        def _reset(self, tensordict: Any) -> TensorDict:
            self.t = 0
            done = torch.zeros(1, dtype=torch.bool)
            return TensorDict(observation=self._obs(torch.zeros(3)), done=done, terminated=done.clone())

        def _step(self, tensordict: Any) -> TensorDict:
            self.t += 1
            obs = self._obs(tensordict["action"])
            done = torch.tensor([self.t >= steps])
            return TensorDict(observation=obs, reward=obs[:1].clone(), done=done, terminated=done.clone())

        def _set_seed(self, seed: Any) -> None:
            pass

    return CurveEnv()


def _constant_policy(td: TensorDict) -> TensorDict:
    return td.set("action", torch.tensor([0.5, -0.25, 1.0]))


def action_discretizer(lib: Any) -> dict[str, torch.Tensor]:
    """Grids and inverse maps of ActionDiscretizer for each sampling strategy and per-dim counts."""
    out: dict[str, torch.Tensor] = {}
    cls = lib.envs.ActionDiscretizer
    index = torch.tensor([[0, 1, 3], [3, 2, 0]])
    for name in ("LOW", "MEDIAN", "HIGH"):
        env = lib.envs.TransformedEnv(make_env(lib), cls(4, sampling=getattr(cls.SamplingStrategy, name)))
        env.action_spec  # noqa: B018 (TorchRL builds the grid when the specs are first read)
        out[f"intervals_{name}"] = env.transform.intervals.clone()
        out[f"inv_{name}"] = env.transform.inv(TensorDict(action=index, batch_size=[2]))["action"]
    env = lib.envs.TransformedEnv(make_env(lib), cls(torch.tensor([2, 3, 5])))
    env.action_spec  # noqa: B018
    intervals = env.transform.intervals
    counts = env.transform.nvec.tolist()
    out["rows_per_dim"] = torch.cat([torch.as_tensor(row).reshape(-1)[:n] for row, n in zip(intervals, counts)])
    # Unbatched: TorchRL's per-dim grids fail on a batched index (tdrl takes both).
    out["inv_per_dim"] = env.transform.inv(TensorDict(action=torch.tensor([1, 2, 4])))["action"]
    onehot = lib.envs.TransformedEnv(make_env(lib), cls(4, categorical=False))
    onehot.action_spec  # noqa: B018
    code = torch.zeros(2, 12, dtype=torch.bool)
    code[0, [1, 4, 11]] = True
    code[1, [3, 6, 8]] = True
    out["inv_onehot"] = onehot.transform.inv(TensorDict(action=code, batch_size=[2]))["action"]
    return out


def vecnorm_v2(lib: Any) -> dict[str, torch.Tensor]:
    """VecNormV2 outputs and statistics along a deterministic rollout, for several decays."""
    out: dict[str, torch.Tensor] = {}
    for decay in (0.9, 0.99, 1.0):
        t = lib.envs.VecNormV2(in_keys=["observation", "reward"], decay=decay, eps=1e-4)
        env = lib.envs.TransformedEnv(make_env(lib), t)
        rollout = env.rollout(25, _constant_policy)
        out[f"obs_{decay}"] = rollout["next", "observation"]
        out[f"root_obs_{decay}"] = rollout["observation"]
        out[f"reward_{decay}"] = rollout["next", "reward"]
        out[f"loc_{decay}"] = t.loc["observation"]
        out[f"scale_{decay}"] = t.scale["observation"]
        out[f"reward_loc_{decay}"] = t.loc["reward"]
    return out


def _chunk(start: int, length: int, done_at: tuple[int, ...]) -> TensorDict:
    t = torch.arange(start, start + length, dtype=torch.float32).unsqueeze(-1)
    done = torch.zeros(length, 1, dtype=torch.bool)
    done[list(done_at)] = True
    return TensorDict({"obs": t, ("next", "obs"): t + 1, ("next", "reward"): (t + 1) * torch.tensor([1.0, -0.5]),
                       ("next", "done"): done, ("next", "terminated"): done.clone()}, [length])


def multi_step(lib: Any) -> dict[str, torch.Tensor]:
    """What a replay buffer with a MultiStepTransform holds after three writes (one short, two dones)."""
    out: dict[str, torch.Tensor] = {}
    for n_steps, gamma in ((1, 0.9), (3, 0.9), (4, 0.5)):
        rb = lib.data.ReplayBuffer(storage=lib.data.LazyTensorStorage(100),
                                   transform=lib.envs.MultiStepTransform(n_steps, gamma))
        sizes = []
        for start, length, done_at in ((0, 2, ()), (2, 7, (3,)), (9, 6, (4, 5))):
            rb.extend(_chunk(start, length, done_at))
            sizes.append(len(rb))
        data = rb[:]
        tag = f"{n_steps}_{gamma}"
        out[f"sizes_{tag}"] = torch.tensor(sizes)
        for key in ("obs", ("next", "obs"), ("next", "reward"), ("next", "original_reward"), "steps_to_next_obs",
                    "gamma", "nonterminal", ("next", "done")):
            out[f"{tag}_{'.'.join(key) if isinstance(key, tuple) else key}"] = data[key]
    return out


SCENARIOS = {"action_discretizer": action_discretizer, "multi_step": multi_step, "vecnorm_v2": vecnorm_v2}


def next_obs(lib: Any) -> dict[str, torch.Tensor]:
    """NextObservationDelta's stored deltas and rebuilt next observations; NextStateReconstructor's fill."""
    t = lib.envs.transforms
    env = lib.envs.TransformedEnv(make_env(lib), t.NextObservationDelta())
    rollout = env.rollout(8, _constant_policy)
    out = {"delta": rollout["next", "delta", "observation"].float(),
           "has_next_obs": torch.tensor(("next", "observation") in rollout.keys(True, True))}
    rebuilt = t.NextObservationDelta(in_keys=["observation"])(rollout.clone())
    out["rebuilt"] = rebuilt["next", "observation"]
    batch = TensorDict({"observation": torch.arange(12.0).reshape(6, 2),
                        ("next", "done"): torch.tensor([[False], [True], [False], [False], [False], [False]]),
                        ("collector", "traj_ids"): torch.tensor([3, 3, 3, 4, 4, 4]),
                        "count": torch.tensor([0, 1, 0, 0, 2, 3])}, [6])
    out["reconstructed"] = t.NextStateReconstructor()(batch.clone())["next", "observation"]
    out["reconstructed_count"] = t.NextStateReconstructor(step_count_key="count", fill_value=-7.0)(
        batch.clone())["next", "observation"]
    return out


SCENARIOS["next_obs"] = next_obs


def structural(lib: Any) -> dict[str, torch.Tensor]:
    """Stack (forward, inverse, specs), ExpandAs, Hash and ConditionalSkip outputs."""
    t, out = lib.envs.transforms, {}
    data = TensorDict({"a": torch.arange(6.0).reshape(2, 3), ("n", "b"): -torch.arange(6.0).reshape(2, 3)}, [2])
    stacked = t.Stack(in_keys=["a", ("n", "b")], out_key="ab", in_key_inv="ab", out_keys_inv=["a", "c"], dim=-2)
    res = stacked(data.clone())
    out["stack"] = res["ab"]
    out["stack_keys"] = torch.tensor(len(list(res.keys(True, True))))
    inv = stacked.inv(TensorDict(ab=res["ab"], batch_size=[2]))
    out["stack_inv_a"], out["stack_inv_c"] = inv["a"], inv["c"]
    twice = t.UnaryTransform(in_keys=["observation"], out_keys=["twice"], fn=lambda x: x * 2)
    env = lib.envs.TransformedEnv(make_env(lib), t.Compose(twice, t.Stack(in_keys=["observation", "twice"],
                                                                          out_key="obs_reward", dim=-2)))
    out["stack_spec_shape"] = torch.tensor(env.observation_spec["obs_reward"].shape)
    out["stack_rollout"] = env.rollout(3, _constant_policy)["next", "obs_reward"]
    env = lib.envs.TransformedEnv(make_env(lib), t.ExpandAs("done", ref_key="observation", out_key="done_wide"))
    out["expand_spec_shape"] = torch.tensor(env.observation_spec["done_wide"].shape)
    rollout = env.rollout(4, _constant_policy)
    out["expand_next"] = rollout["next", "done_wide"]
    out["expand_root"] = rollout["done_wide"]
    hashed = t.Hash(in_keys=["s"], out_keys=["h"])(TensorDict(s="some text"))
    out["hash"] = hashed["h"]
    out["hash_seeded"] = t.Hash(in_keys=["s"], out_keys=["h"], seed="seed:")(TensorDict(s="some text"))["h"]
    penv = lib.envs.TransformedEnv(make_env(lib), t.ConditionalSkip(lambda td: td["observation"][0] > 2.5))
    rollout = penv.rollout(10, _constant_policy)
    out["skip_obs"] = rollout["next", "observation"]
    out["skip_reward"] = rollout["next", "reward"]
    return out


SCENARIOS["structural"] = structural


def action_maps(lib: Any) -> dict[str, torch.Tensor]:
    """ActionScaling (spec-derived and explicit, both boxes) and FlattenAction on plain data."""
    t, out = lib.envs.transforms, {}
    for unit in (True, False):
        env = lib.envs.TransformedEnv(make_env(lib), t.ActionScaling(standard_normal=unit))
        spec = env.action_spec
        out[f"low_{unit}"], out[f"high_{unit}"] = spec.space.low, spec.space.high
        rollout = env.rollout(5, _constant_policy)
        out[f"obs_{unit}"] = rollout["next", "observation"]
        out[f"loc_{unit}"], out[f"scale_{unit}"] = env.transform.loc, env.transform.scale
        data = TensorDict(action=torch.tensor([[0.5, 1.0, -2.0], [-1.0, 0.0, 3.0]]), batch_size=[2])
        out[f"forward_{unit}"] = env.transform(data)["action"]
        explicit = t.ActionScaling(loc=torch.tensor([0.0, 1.0, 0.5]), scale=2.0, standard_normal=unit)
        env = lib.envs.TransformedEnv(make_env(lib), explicit)
        out[f"explicit_low_{unit}"], out[f"explicit_high_{unit}"] = env.action_spec.space.low, env.action_spec.space.high
        out[f"explicit_obs_{unit}"] = env.rollout(3, _constant_policy)["next", "observation"]
    stats = t.ActionScaling.from_stats(low=torch.tensor([-2.0, 0.0]), high=torch.tensor([2.0, 1.0]), in_keys_inv=[],
                                       in_keys=["a"])
    out["from_stats"] = stats(TensorDict(a=torch.tensor([1.0, 0.25])))["a"]
    flat = t.FlattenAction(action_shape=(2, 3))
    out["flat_inv"] = flat.inv(TensorDict(action=torch.arange(12.0).reshape(2, 6), batch_size=[2]))["action"]
    out["flat_fwd"] = flat(TensorDict(action=torch.arange(12.0).reshape(2, 2, 3), batch_size=[2]))["action"]
    return out


SCENARIOS["action_maps"] = action_maps


class _Ale:
    def __init__(self) -> None:
        self.count = 3

    def lives(self) -> int:
        return self.count


def episode(lib: Any) -> dict[str, torch.Tensor]:
    """TerminateTransform (done written or not), SuccessReward and EndOfLifeTransform along rollouts."""
    t, out = lib.envs.transforms, {}
    for write_done in (True, False):
        env = lib.envs.TransformedEnv(make_env(lib), t.TerminateTransform(lambda td: td["observation"][..., 2] > 0.45,
                                                                          write_done=write_done))
        rollout = env.rollout(10, _constant_policy, break_when_any_done=False)
        out[f"terminated_{write_done}"] = rollout["next", "terminated"]
        out[f"done_{write_done}"] = rollout["next", "done"]
    success = t.Compose(t.UnaryTransform(in_keys=["observation"], out_keys=["success"], fn=lambda x: x[..., :1] > 2.0),
                        t.SuccessReward(scale=-3.0))
    env = lib.envs.TransformedEnv(make_env(lib), success)
    out["success_low"], out["success_high"] = env.reward_spec.space.low, env.reward_spec.space.high
    out["success_reward"] = env.rollout(6, _constant_policy)["next", "reward"]
    base = make_env(lib)
    ale = _Ale()
    base.unwrapped = type("Unwrapped", (), {"ale": ale})()
    env = lib.envs.TransformedEnv(base, t.EndOfLifeTransform())
    out["eol_spec_shape"] = torch.tensor(env.observation_spec["end-of-life"].shape)
    td = env.reset()
    eol, lives = [td["end-of-life"]], [td["lives"]]
    for step in range(4):
        ale.count = 3 - (step >= 2)
        td = env.step(td.set("action", torch.zeros(3)))
        eol.append(td["next", "end-of-life"])
        lives.append(td["next", "lives"])
        td = lib.envs.step_mdp(td)
    out["eol"], out["lives"] = torch.stack(eol), torch.stack(lives)
    return out


SCENARIOS["episode"] = episode


def burn_in(lib: Any) -> dict[str, torch.Tensor]:
    """BurnInTransform over a fixed two-module chain, with and without the carried entry in the sample."""
    from tensordict.nn import TensorDictModule

    lin = torch.nn.Linear(3, 2)
    with torch.no_grad():
        lin.weight.copy_(torch.tensor([[0.5, -1.0, 0.25], [1.0, 0.0, -0.5]]))
        lin.bias.copy_(torch.tensor([0.1, -0.2]))
    first = TensorDictModule(lin, in_keys=["obs"], out_keys=["feat"])
    mix = torch.nn.Linear(4, 2)
    with torch.no_grad():
        mix.weight.copy_(torch.arange(8.0).reshape(2, 4) / 10)
        mix.bias.zero_()
    second = TensorDictModule(lambda f, h: torch.tanh(mix(torch.cat([f, h], -1))), in_keys=["feat", "hidden"],
                              out_keys=[("next", "hidden")])
    second.mix = mix
    data = TensorDict({"obs": torch.linspace(-1, 1, 2 * 6 * 3).reshape(2, 6, 3),
                       "hidden": torch.linspace(0, 1, 2 * 6 * 2).reshape(2, 6, 2)}, [2, 6])
    out = {}
    res = lib.envs.transforms.BurnInTransform([first, second], burn_in=3)(data.clone())
    out["hidden"], out["obs"], out["shape"] = res["hidden"], res["obs"], torch.tensor(res.batch_size)
    return out


SCENARIOS["burn_in"] = burn_in


def mean_action(lib: Any) -> dict[str, torch.Tensor]:
    """MeanActionSelector: belief observations along a rollout whose policy writes ("action", "mean")."""
    env = lib.envs.TransformedEnv(make_env(lib), lib.envs.transforms.MeanActionSelector())

    def policy(td: TensorDict) -> TensorDict:
        return td.set(("action", "mean"), td["observation", "mean"] * 0.5)

    rollout = env.rollout(4, policy)
    return {"mean": rollout["next", "observation", "mean"], "var": rollout["next", "observation", "var"],
            "var_spec": torch.tensor(env.observation_spec["observation", "var"].shape)}


SCENARIOS["mean_action"] = mean_action
