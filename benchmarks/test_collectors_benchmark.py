"""Collector benchmarks, with the workload names of TorchRL's ``test_collectors_benchmark.py``.

Env: ``TransformedEnv(DMControlEnv("cheetah", "run"), StepCounter(50))`` with a ``RandomPolicy``,
``frames_per_batch=100``, ``total_frames=-1``; 11 warm-up batches, then ``next(iterator)`` is timed.
Extra cases: CartPole-v1 with 2 workers and a small MLP policy, collected by ``MultiSyncCollector`` and by a
hand-written gymnasium ``AsyncVectorEnv`` / ``SyncVectorEnv`` loop (same frames per call: 200), and the
start-up of a 2-worker collector (construction + first batch + shutdown), `Collector(trajs_per_batch=...)` on
CartPole-v1, and 8 actor threads served by an `InferenceServer`.
"""

from __future__ import annotations

import importlib.util
from concurrent.futures import ThreadPoolExecutor

import gymnasium as gym
import pytest
import torch
from _backend import BACKEND, sub
from tensordict import TensorDict
from tensordict.nn import TensorDictModule

collectors = sub("collectors")
envs = sub("envs")
data = sub("data")

_HAS_DMC = importlib.util.find_spec("dm_control") is not None
_needs_dmc = pytest.mark.skipif(not _HAS_DMC, reason="dm_control is not installed (the `dmc` extra)")
_FPB = 100
_CARTPOLE_STEPS = 100  # per env and call: 200 frames with 2 workers


def single_collector_setup():
    env = envs.TransformedEnv(envs.DMControlEnv("cheetah", "run"), envs.StepCounter(50))
    c = collectors.Collector(env, collectors.RandomPolicy(env.action_spec), total_frames=-1,
                             frames_per_batch=_FPB)
    it = iter(c)
    for _ in range(11):
        next(it)
    return ((c, it), {})


def _env_fn():
    return envs.TransformedEnv(envs.DMControlEnv("cheetah", "run"), envs.StepCounter(50))


def _multi_setup(cls, with_rb: bool = False, **kwargs):
    env = _env_fn()
    rb = data.ReplayBuffer(storage=data.LazyTensorStorage(10000)) if with_rb else None
    c = cls([_env_fn, _env_fn], collectors.RandomPolicy(env.action_spec), total_frames=-1,
            frames_per_batch=_FPB, replay_buffer=rb, **kwargs)
    env.close()
    it = iter(c)
    for _ in range(11):
        next(it)
    return ((c, it), {})


def single_collector_setup_with_rb():
    env = _env_fn()
    rb = data.ReplayBuffer(storage=data.LazyTensorStorage(10000))
    c = collectors.Collector(env, collectors.RandomPolicy(env.action_spec), total_frames=-1,
                             frames_per_batch=_FPB, replay_buffer=rb)
    it = iter(c)
    for _ in range(11):
        next(it)
    return ((c, it), {})


def execute_collector(c, it):
    next(it)


def _shutdown(c):
    c.shutdown()


@_needs_dmc
def test_single(benchmark):
    (c, it), _ = single_collector_setup()
    benchmark(execute_collector, c, it)
    _shutdown(c)


@_needs_dmc
def test_single_with_rb(benchmark):
    (c, it), _ = single_collector_setup_with_rb()
    benchmark(execute_collector, c, it)
    _shutdown(c)


@_needs_dmc
@pytest.mark.parametrize("with_rb", [False, True], ids=["", "with_rb"])
def test_sync(benchmark, with_rb):
    (c, it), _ = _multi_setup(collectors.MultiSyncCollector, with_rb)
    benchmark(execute_collector, c, it)
    _shutdown(c)


@_needs_dmc
@pytest.mark.parametrize("with_rb", [False, True], ids=["", "with_rb"])
def test_sync_preempt(benchmark, with_rb):
    (c, it), _ = _multi_setup(collectors.MultiSyncCollector, with_rb, preemptive_threshold=0.9,
                              cat_results="stack")
    benchmark(execute_collector, c, it)
    _shutdown(c)


@_needs_dmc
@pytest.mark.parametrize("with_rb", [False, True], ids=["", "with_rb"])
def test_async(benchmark, with_rb):
    (c, it), _ = _multi_setup(collectors.MultiAsyncCollector, with_rb)
    benchmark.pedantic(execute_collector, args=(c, it), iterations=10, rounds=10)
    _shutdown(c)


# ---------------------------------------------------------------------- CartPole, 2 workers, MLP policy
class MLPPolicy(torch.nn.Module):
    """obs -> one-hot greedy action of a small MLP (the same net drives the collector and the gym loop)."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.net = torch.nn.Sequential(torch.nn.Linear(4, 64), torch.nn.Tanh(), torch.nn.Linear(64, 2))

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.one_hot(self.net(obs).argmax(-1), 2)


def _cartpole():
    return envs.GymEnv("CartPole-v1")


def test_sync_cartpole_mlp(benchmark):
    """Frames per call: 200 (2 workers x 100 steps); compare with test_gym_vector_*."""
    policy = TensorDictModule(MLPPolicy(), in_keys=["observation"], out_keys=["action"])
    c = collectors.MultiSyncCollector([_cartpole, _cartpole], policy, total_frames=-1,
                                      frames_per_batch=2 * _CARTPOLE_STEPS)
    it = iter(c)
    for _ in range(3):
        next(it)
    benchmark(execute_collector, c, it)
    _shutdown(c)


def _gym_loop_setup(vector_cls):
    venv = vector_cls([lambda: gym.make("CartPole-v1")] * 2)
    net = MLPPolicy().net
    obs, _ = venv.reset(seed=0)
    return venv, net, [obs]


def _gym_loop(venv, net, state):
    obs = state[0]
    with torch.no_grad():
        for _ in range(_CARTPOLE_STEPS):
            action = net(torch.as_tensor(obs, dtype=torch.float32)).argmax(-1).numpy()
            obs, _reward, _term, _trunc, _info = venv.step(action)
    state[0] = obs


@pytest.mark.skipif(BACKEND != "tdrl", reason="library-independent reference loop: measured once")
@pytest.mark.parametrize("vector_cls", [gym.vector.AsyncVectorEnv, gym.vector.SyncVectorEnv],
                         ids=["async", "sync"])
def test_gym_vector(benchmark, vector_cls):
    venv, net, state = _gym_loop_setup(vector_cls)
    _gym_loop(venv, net, state)
    benchmark(_gym_loop, venv, net, state)
    venv.close()


# ---------------------------------------------------------------------- start-up
def _startup():
    c = collectors.MultiSyncCollector([_cartpole, _cartpole], None, total_frames=-1, frames_per_batch=20)
    next(iter(c))
    c.shutdown()


def test_startup_sync(benchmark):
    """A 2-worker MultiSyncCollector: construction, first batch and shutdown."""
    benchmark.pedantic(_startup, iterations=1, rounds=3)


# ---------------------------------------------------------------------- whole trajectories
def test_single_trajs_per_batch(benchmark):
    """``Collector(trajs_per_batch=4, traj_format="cat")`` on CartPole-v1: reassembly of whole episodes."""
    c = collectors.Collector(_cartpole(), None, total_frames=-1, frames_per_batch=64, trajs_per_batch=4,
                             traj_format="cat")
    it = iter(c)
    for _ in range(3):
        next(it)
    benchmark(next, it)
    c.shutdown()


# ---------------------------------------------------------------------- batched policy inference
_ACTORS, _REQUESTS = 8, 16


def test_inference_server_threads(benchmark):
    """8 actor threads x 16 single requests through an ``InferenceServer`` (``ThreadingTransport``, MLP)."""
    inference = sub("modules.inference_server")
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(4, 64), torch.nn.Tanh(), torch.nn.Linear(64, 2))
    policy = TensorDictModule(net, in_keys=["observation"], out_keys=["action"])
    transport = inference.ThreadingTransport()
    server = inference.InferenceServer(policy, transport, max_batch_size=_ACTORS, timeout=0.001).start()
    clients = [transport.client() for _ in range(_ACTORS)]
    obs = torch.randn(4)

    def actor(client):
        for _ in range(_REQUESTS):
            client(TensorDict({"observation": obs}))

    with ThreadPoolExecutor(_ACTORS) as pool:
        def round_trip():
            list(pool.map(actor, clients))

        round_trip()
        benchmark(round_trip)
    server.shutdown()
