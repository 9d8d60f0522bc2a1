"""A TorchRL program using the env core runs on tdrl once ``torchrl`` is replaced by ``tdrl`` in its imports."""

from __future__ import annotations

import importlib.util
import textwrap

import pytest

PROGRAM = textwrap.dedent(
    """
    import torch
    from tensordict.nn import TensorDictModule
    from torchrl.envs import EnvCreator, GymEnv, PendulumEnv, check_env_specs, step_mdp
    from torchrl.envs.common import EnvBase
    from torchrl.envs.libs.gym import GymWrapper
    from torchrl.envs.utils import ExplorationType, set_exploration_type, terminated_or_truncated

    env = GymEnv("Pendulum-v1")
    assert isinstance(env, EnvBase)
    check_env_specs(env)
    env.set_seed(0)
    torch.manual_seed(0)

    # hand-written loop: reset, act, step, step_mdp
    td = env.reset()
    total = 0.0
    for _ in range(10):
        td = env.rand_action(td)
        td = env.step(td)
        total += td["next", "reward"].item()
        td = step_mdp(td)
    assert td["observation"].shape == (3,)

    # rollout with a policy module, under an exploration type
    policy = TensorDictModule(
        torch.nn.Sequential(torch.nn.Linear(3, 1), torch.nn.Tanh()), in_keys=["observation"], out_keys=["action"]
    )
    with set_exploration_type(ExplorationType.DETERMINISTIC), torch.no_grad():
        data = env.rollout(20, policy)
    assert data.batch_size == (20,)
    assert set(data.keys()) >= {"observation", "action", "done", "terminated", "truncated", "next"}
    assert data["next", "reward"].shape == (20, 1)
    assert not terminated_or_truncated(data["next"][:5].clone())

    # batched gymnasium env and the done/terminated/truncated triplet
    vec = GymEnv("CartPole-v1", num_envs=2)
    data = vec.rollout(30, break_when_any_done=False)
    assert data.batch_size == (2, 30)
    assert (data["next", "done"] == (data["next", "terminated"] | data["next", "truncated"])).all()

    # a custom pure-torch env and an env factory
    creator = EnvCreator(lambda: PendulumEnv())
    pend = creator()
    td = pend.reset(pend.gen_params(batch_size=[4]))
    td = pend.rand_step(td)
    assert td["next", "th"].shape == (4,)
    print("ok", round(total, 3))
    """
)


def test_torchrl_program_runs_with_tdrl_imports(capsys):
    code = PROGRAM.replace("torchrl", "tdrl")
    exec(compile(code, "<torchrl-program>", "exec"), {"__name__": "__compat__"})
    assert capsys.readouterr().out.startswith("ok")


@pytest.mark.skipif(importlib.util.find_spec("dm_control") is None, reason="dm_control is not installed")
def test_torchrl_dm_control_snippet():
    code = textwrap.dedent(
        """
        from torchrl.envs.libs.dm_control import DMControlEnv
        from torchrl.envs import check_env_specs
        env = DMControlEnv("cheetah", "run")
        check_env_specs(env)
        data = env.rollout(10, break_when_any_done=False)
        assert data["next", "velocity"].shape == (10, 9)
        """
    ).replace("torchrl", "tdrl")
    exec(compile(code, "<torchrl-dmc>", "exec"), {})
