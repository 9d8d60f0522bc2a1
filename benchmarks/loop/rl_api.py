"""The loop benchmark written once against TorchRL 0.14.1's public API, run on tdrl or on TorchRL.

``--backend tdrl`` imports ``tdrl.*``, ``--backend torchrl`` imports ``torchrl.*`` (from the anchor venv): the
same program, which is the drop-in promise measured. Each run prints one ``LOOP_RESULT`` line (``common.py``).

    python benchmarks/loop/rl_api.py ppo_cartpole --backend tdrl [--seed 0] [--set total_frames=2048]
"""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import torch
from tensordict.nn import NormalParamExtractor, TensorDictModule
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import PhaseTimer, emit, parse_overrides, workload  # noqa: E402 - the sibling module


def load(backend: str) -> SimpleNamespace:
    """The public names both programs use, from ``backend``'s packages."""
    mods = {m: importlib.import_module(f"{backend}.{m}") for m in
            ("collectors", "data", "envs", "modules", "objectives", "objectives.value", "envs.utils")}
    names = {
        "collectors": ["Collector"],
        "data": ["LazyTensorStorage", "ReplayBuffer", "SamplerWithoutReplacement"],
        "envs": ["GymEnv"],
        "envs.utils": ["ExplorationType", "set_exploration_type"],
        "modules": ["MLP", "OneHotCategorical", "ProbabilisticActor", "TanhNormal", "ValueOperator"],
        "objectives": ["ClipPPOLoss", "SACLoss", "SoftUpdate"],
        "objectives.value": ["GAE"],
    }
    ns = SimpleNamespace(version=importlib.import_module(backend).__version__)
    for mod, attrs in names.items():
        for attr in attrs:
            setattr(ns, attr, getattr(mods[mod], attr))
    return ns


def evaluate(rl: SimpleNamespace, env: Any, policy: Any, episodes: int, max_steps: int) -> list[float]:
    returns = []
    with torch.no_grad(), rl.set_exploration_type(rl.ExplorationType.DETERMINISTIC):
        for _ in range(episodes):
            traj = env.rollout(max_steps, policy)
            returns.append(traj["next", "reward"].sum().item())
    return returns


def ppo(rl: SimpleNamespace, hp: Any, seed: int) -> tuple[int, dict[str, float], list[float]]:
    env = rl.GymEnv(hp.env, num_envs=hp.num_envs)
    env.set_seed(seed)
    n_obs, n_act = env.observation_spec["observation"].shape[-1], env.action_spec.shape[-1]
    logits = rl.MLP(in_features=n_obs, out_features=n_act, num_cells=[hp.hidden] * 2, activation_class=nn.Tanh)
    actor = rl.ProbabilisticActor(TensorDictModule(logits, ["observation"], ["logits"]), in_keys=["logits"],
                                  distribution_class=rl.OneHotCategorical, spec=env.action_spec,
                                  return_log_prob=True)
    value = rl.MLP(in_features=n_obs, out_features=1, num_cells=[hp.hidden] * 2, activation_class=nn.Tanh)
    critic = rl.ValueOperator(value, in_keys=["observation"])
    advantage = rl.GAE(gamma=hp.gamma, lmbda=hp.lmbda, value_network=critic)
    loss_module = rl.ClipPPOLoss(actor, critic, clip_epsilon=hp.clip_epsilon, entropy_coeff=0.0,
                                 critic_coeff=hp.critic_coef, loss_critic_type="l2", normalize_advantage=True)
    optimizer = torch.optim.Adam(loss_module.parameters(), lr=hp.lr, fused=hp.fused_adam or None)
    n_batches = hp.total_frames // hp.frames_per_batch
    scheduler = torch.optim.lr_scheduler.LinearLR(optimizer, 1.0, 0.0, total_iters=n_batches)
    collector = rl.Collector(env, actor, frames_per_batch=hp.frames_per_batch, total_frames=hp.total_frames)
    buffer = rl.ReplayBuffer(storage=rl.LazyTensorStorage(hp.frames_per_batch),
                             sampler=rl.SamplerWithoutReplacement(), batch_size=hp.minibatch_size)
    timer = PhaseTimer()
    timer.watch_policy(actor)
    frames, batches = 0, iter(collector)
    while True:
        with timer.phase("collect"):
            batch = next(batches, None)
        if batch is None:
            break
        frames += batch.numel()
        with timer.phase("advantage"), torch.no_grad():
            advantage(batch)
        buffer.extend(batch.reshape(-1))
        with timer.phase("update"):
            for _ in range(hp.num_epochs):
                for _ in range(hp.frames_per_batch // hp.minibatch_size):
                    losses = loss_module(buffer.sample())
                    loss = losses["loss_objective"] + losses["loss_critic"] + losses["loss_entropy"]
                    optimizer.zero_grad()
                    loss.backward()
                    nn.utils.clip_grad_norm_(loss_module.parameters(), hp.max_grad_norm)
                    optimizer.step()
        scheduler.step()
    split = timer.split()
    collector.shutdown()
    eval_env = rl.GymEnv(hp.env)
    eval_env.set_seed(seed + 10_000)
    return frames, split, evaluate(rl, eval_env, actor, hp.eval_episodes, max_steps=500)


def sac(rl: SimpleNamespace, hp: Any, seed: int) -> tuple[int, dict[str, float], list[float]]:
    env = rl.GymEnv(hp.env)
    env.set_seed(seed)
    n_obs, n_act = env.observation_spec["observation"].shape[-1], env.action_spec.shape[-1]
    net = nn.Sequential(rl.MLP(in_features=n_obs, out_features=2 * n_act, num_cells=[hp.hidden] * 2),
                        NormalParamExtractor())
    actor = rl.ProbabilisticActor(TensorDictModule(net, ["observation"], ["loc", "scale"]), in_keys=["loc", "scale"],
                                  spec=env.action_spec, distribution_class=rl.TanhNormal,
                                  distribution_kwargs={"low": env.action_spec.low, "high": env.action_spec.high},
                                  return_log_prob=True)
    qnet = rl.MLP(in_features=n_obs + n_act, out_features=1, num_cells=[hp.hidden] * 2)
    qvalue = rl.ValueOperator(qnet, in_keys=["observation", "action"])
    loss_module = rl.SACLoss(actor_network=actor, qvalue_network=qvalue, num_qvalue_nets=2, loss_function="l2",
                             delay_actor=False, delay_qvalue=True, alpha_init=1.0)
    loss_module.make_value_estimator(gamma=hp.gamma)
    target = rl.SoftUpdate(loss_module, tau=hp.tau)
    optimizer = torch.optim.Adam(loss_module.parameters(), lr=hp.lr)
    collector = rl.Collector(env, actor, frames_per_batch=1, total_frames=hp.total_frames,
                             init_random_frames=hp.init_random_frames)
    buffer = rl.ReplayBuffer(storage=rl.LazyTensorStorage(hp.buffer_size), batch_size=hp.batch_size)
    timer = PhaseTimer()
    timer.watch_policy(actor)
    frames, batches = 0, iter(collector)
    while True:
        with timer.phase("collect"):
            batch = next(batches, None)
        if batch is None:
            break
        frames += batch.numel()
        buffer.extend(batch.reshape(-1))
        if frames < hp.init_random_frames:
            continue
        with timer.phase("update"):
            losses = loss_module(buffer.sample())
            loss = losses["loss_actor"] + losses["loss_qvalue"] + losses["loss_alpha"]
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            target.step()
    split = timer.split()
    collector.shutdown()
    eval_env = rl.GymEnv(hp.env)
    eval_env.set_seed(seed + 10_000)
    return frames, split, evaluate(rl, eval_env, actor, hp.eval_episodes, max_steps=200)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workload", choices=["ppo_cartpole", "sac_pendulum"])
    parser.add_argument("--backend", choices=["tdrl", "torchrl"], required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override a hyperparameter")
    args = parser.parse_args(argv)
    hp = workload(args.workload, parse_overrides(args.set))
    torch.manual_seed(args.seed)
    torch.set_num_threads(1)  # networks this small: thread-pool overhead outweighs parallelism (all three impls)
    rl = load(args.backend)
    frames, split, returns = (ppo if args.workload == "ppo_cartpole" else sac)(rl, hp, args.seed)
    emit(impl=args.backend, name=args.workload, hp=hp, frames=frames, split=split, returns=returns,
         versions={args.backend: rl.version, "torch": torch.__version__})
    return 0


if __name__ == "__main__":
    sys.exit(main())
