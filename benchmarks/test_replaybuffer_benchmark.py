"""Replay-buffer benchmarks, with the workload names and sizes of TorchRL's ``test_replaybuffer_benchmark.py``.

Run with ``--backend tdrl`` (default) or ``--backend torchrl`` from the TorchRL venv. TorchRL 0.14.1's
prioritized sampler needs its C++ extension, which does not load on torch 2.13: those cases fail
there and run on tdrl only (``compare.py`` lists one-backend cases).
"""

from __future__ import annotations

import functools

import pytest
import torch
from _backend import BACKEND, sub
from tensordict import TensorDict

data = sub("data")


def _component(name: str):
    """The backend's class ``name``, or a stand-in with that name that skips the test when built."""
    cls = getattr(data, name, None)
    if cls is not None:
        return cls

    def missing(*args, **kwargs):
        pytest.skip(f"{BACKEND}.data has no {name}")

    missing.__name__ = name
    return missing


ListStorage = _component("ListStorage")
LazyMemmapStorage = _component("LazyMemmapStorage")
LazyTensorStorage = _component("LazyTensorStorage")
RandomSampler = _component("RandomSampler")
SamplerWithoutReplacement = _component("SamplerWithoutReplacement")
SliceSampler = _component("SliceSampler")
PrioritizedSampler = _component("PrioritizedSampler")
ReplayBuffer = _component("ReplayBuffer")
TensorDictReplayBuffer = _component("TensorDictReplayBuffer")

_TensorDictPrioritizedReplayBuffer = functools.partial(
    _component("TensorDictPrioritizedReplayBuffer"), alpha=1, beta=0.9
)
# pytest takes a parameter's ID from its __name__: this one reads "TensorDictPrioritizedReplayBuffer".
_TensorDictPrioritizedReplayBuffer.__name__ = "TensorDictPrioritizedReplayBuffer"


# A partial has no __name__: pytest names these parameters "sampler6" and "sampler7", as in TorchRL.
_slice_sampler = functools.partial(SliceSampler, num_slices=8, traj_key="traj")


def create_rb(rb, storage, sampler, populated, size=1_000_000):
    """A buffer of capacity ``size`` over ~3 KiB items; filled completely when ``populated``."""
    kwargs = {"batch_size": 256}
    if sampler is not None:
        kwargs["sampler"] = sampler()
    kwargs["storage"] = storage(size)
    rb = rb(**kwargs)
    td = TensorDict(
        {"a": torch.zeros(size, 5), ("b", "c"): torch.zeros(size, 3, 32, 32, dtype=torch.uint8)},
        batch_size=[size],
    )
    if sampler is _slice_sampler:
        td["traj"] = torch.arange(size) // 123
    if populated:
        rb.extend(td)
    return rb, td


def infinite_iter(rb):
    torch.manual_seed(0)
    while True:
        yield from iter(rb)


_SAMPLE_CASES = [
    [TensorDictReplayBuffer, ListStorage, RandomSampler, 4000],
    [TensorDictReplayBuffer, LazyMemmapStorage, RandomSampler, 10_000],
    [TensorDictReplayBuffer, LazyTensorStorage, RandomSampler, 10_000],
    [TensorDictReplayBuffer, ListStorage, SamplerWithoutReplacement, 4000],
    [TensorDictReplayBuffer, LazyMemmapStorage, SamplerWithoutReplacement, 10_000],
    [TensorDictReplayBuffer, LazyTensorStorage, SamplerWithoutReplacement, 10_000],
    [TensorDictReplayBuffer, LazyMemmapStorage, _slice_sampler, 10_000],
    [TensorDictReplayBuffer, LazyTensorStorage, _slice_sampler, 10_000],
    [_TensorDictPrioritizedReplayBuffer, ListStorage, None, 4000],
    [_TensorDictPrioritizedReplayBuffer, LazyMemmapStorage, None, 10_000],
    [_TensorDictPrioritizedReplayBuffer, LazyTensorStorage, None, 10_000],
]
_ITERATE_CASES = [case for case in _SAMPLE_CASES if case[2] is not _slice_sampler]
_POPULATE_CASES = [[rb, storage, sampler, 400] for rb, storage, sampler, _ in _ITERATE_CASES]


@pytest.mark.parametrize("rb,storage,sampler,size", _SAMPLE_CASES)
def test_rb_sample(benchmark, rb, storage, sampler, size):
    (rb, _) = create_rb(rb=rb, storage=storage, sampler=sampler, populated=True, size=size)
    torch.manual_seed(0)
    benchmark(rb.sample)


@pytest.mark.parametrize("rb,storage,sampler,size", _ITERATE_CASES)
def test_rb_iterate(benchmark, rb, storage, sampler, size):
    (rb, _) = create_rb(rb=rb, storage=storage, sampler=sampler, populated=True, size=size)
    gen = infinite_iter(rb)
    benchmark(next, gen)


def _populate(rb, td):
    rb.extend(td)


@pytest.mark.parametrize("rb,storage,sampler,size", _POPULATE_CASES)
def test_rb_populate(benchmark, rb, storage, sampler, size):
    benchmark.pedantic(
        _populate,
        setup=lambda: (create_rb(rb=rb, storage=storage, sampler=sampler, populated=False, size=size), {}),
        iterations=1,
        rounds=50,
    )


def create_compiled_tensor_rb(rb, storage, sampler, storage_size, data_size, iters, compilable):
    rb = rb(
        storage=storage(storage_size, compilable=compilable),
        sampler=sampler(),
        batch_size=3,
        compilable=compilable,
    )
    td = torch.randn(data_size, 1)
    return (rb, td, iters), {}


def extend_and_sample(rb, td, iters):
    for _ in range(iters):
        rb.extend(td)
        rb.sample()


def extend_and_sample_compiled(rb, td, iters):
    @torch.compile
    def fn(td):
        rb.extend(td)
        rb.sample()

    for _ in range(iters):
        fn(td)


@pytest.mark.parametrize(
    "rb,storage,sampler,storage_size,data_size,iters,compilable",
    [
        [ReplayBuffer, LazyTensorStorage, RandomSampler, 10_000, 10_000, 100, True],
        [ReplayBuffer, LazyTensorStorage, RandomSampler, 100_000, 10_000, 100, True],
        [ReplayBuffer, LazyTensorStorage, RandomSampler, 1_000_000, 10_000, 100, True],
        [ReplayBuffer, LazyTensorStorage, RandomSampler, 10_000, 10_000, 100, False],
        [ReplayBuffer, LazyTensorStorage, RandomSampler, 100_000, 10_000, 100, False],
        [ReplayBuffer, LazyTensorStorage, RandomSampler, 1_000_000, 10_000, 100, False],
    ],
)
def test_rb_extend_sample(benchmark, rb, storage, sampler, storage_size, data_size, iters, compilable):
    if compilable:
        torch._dynamo.reset_code_caches()
    benchmark.pedantic(
        extend_and_sample_compiled if compilable else extend_and_sample,
        setup=functools.partial(
            create_compiled_tensor_rb,
            rb=rb,
            storage=storage,
            sampler=sampler,
            storage_size=storage_size,
            data_size=data_size,
            iters=iters,
            compilable=compilable,
        ),
        iterations=1,
        warmup_rounds=10,
        rounds=50,
    )


@pytest.mark.skipif(BACKEND != "tdrl", reason="tdrl-only: TorchRL's prioritized sampler needs its C++ extension")
def test_prb_sample_update_1m(benchmark):
    """Prioritized ``sample(256)`` + ``update_priority`` on a full 1M-item buffer (bar: < 1 ms)."""
    size = 1_000_000
    rb = ReplayBuffer(
        storage=LazyTensorStorage(size),
        sampler=PrioritizedSampler(size, alpha=0.7, beta=0.5),
        batch_size=256,
    )
    rb.extend(torch.zeros(size, 4))
    torch.manual_seed(0)

    def step():
        _, info = rb.sample(return_info=True)
        rb.update_priority(info["index"], torch.rand(256) + 0.01)

    benchmark(step)


@pytest.mark.parametrize("size", [10_000, 1_000_000])
def test_slice_sampler_scaling(benchmark, size):
    """``SliceSampler(num_slices=8, traj_key="traj").sample(storage, 256)`` alone, on a full storage.

    tdrl refreshes trajectory boundaries from the reported writes, so the cost stays flat as the
    buffer grows; TorchRL 0.14.1 rescans the trajectory key on every call.
    """
    rb = TensorDictReplayBuffer(
        storage=LazyTensorStorage(size), sampler=SliceSampler(num_slices=8, traj_key="traj"), batch_size=256
    )
    rb.extend(TensorDict({"a": torch.zeros(size, 5), "traj": torch.arange(size) // 123}, batch_size=[size]))
    sampler, storage = rb._sampler, rb._storage
    torch.manual_seed(0)
    benchmark(sampler.sample, storage, 256)


@pytest.mark.parametrize("boundary", ["pad", "stop", "include_reset"])
def test_rb_sample_sequence_unit(benchmark, boundary):
    """``sample()`` of 64 ``Sequence(length=8, burn_in=2, bootstrap=1)`` windows from a full 100k storage."""
    size = 100_000
    Sequence = sub("data.replay_buffers").Sequence
    rb = TensorDictReplayBuffer(
        storage=LazyTensorStorage(size),
        batch_size=64,
        sample_unit=Sequence(length=8, burn_in=2, bootstrap=1, episode_boundary=boundary),
    )
    done = (torch.arange(size) % 200 == 199).unsqueeze(-1)
    rb.extend(TensorDict({"a": torch.zeros(size, 5), ("next", "done"): done}, batch_size=[size]))
    torch.manual_seed(0)
    benchmark(rb.sample)


def test_offline_to_online_sample(benchmark):
    """A 50/50 batch of 256 from a 100k-row offline buffer and a 10k-row online one (TED-like rows)."""
    OfflineToOnlineReplayBuffer = _component("OfflineToOnlineReplayBuffer")

    def rows(n):
        return TensorDict({"observation": torch.randn(n, 17), "action": torch.randn(n, 6),
                           ("next", "reward"): torch.randn(n, 1), ("next", "observation"): torch.randn(n, 17)}, [n])

    offline = ReplayBuffer(storage=LazyTensorStorage(100_000))
    offline.extend(rows(100_000))
    rb = OfflineToOnlineReplayBuffer(offline, online_capacity=10_000, offline_fraction=0.5, batch_size=256)
    rb.extend(rows(10_000))
    rb.sample()
    benchmark(rb.sample)


@pytest.mark.parametrize("strategy", ["future", "final"])
def test_her_sample(benchmark, strategy):
    """``HERReplayBuffer.sample(256)`` from a full 100k storage of 50-step goal episodes (her_ratio=0.8)."""
    size = 100_000
    t = torch.arange(size)

    def reward_fn(td):
        return -(td["achieved_goal"] - td["desired_goal"]).norm(dim=-1, keepdim=True)

    rb = _component("HERReplayBuffer")(reward_fn, strategy=strategy, storage=LazyTensorStorage(size), batch_size=256)
    rb.extend(
        TensorDict(
            {"observation": torch.zeros(size, 8), "desired_goal": torch.zeros(size, 3),
             "achieved_goal": torch.rand(size, 3),
             ("next", "reward"): torch.zeros(size, 1), ("next", "done"): (t % 50 == 49).unsqueeze(-1)},
            batch_size=[size],
        )
    )
    torch.manual_seed(0)
    rb.sample()  # builds the episode-boundary cache once, as in a training loop between writes
    benchmark(rb.sample)


def test_staleness_sampler_sample(benchmark):
    """``StalenessAwareSampler(max_staleness=20).sample(storage, 256)`` on a full 100k storage."""
    size = 100_000
    staleness_cls = getattr(sub("data.replay_buffers.samplers"), "StalenessAwareSampler", None)
    if staleness_cls is None:
        pytest.skip(f"{BACKEND} has no StalenessAwareSampler")
    sampler = staleness_cls(max_staleness=20)
    rb = TensorDictReplayBuffer(storage=LazyTensorStorage(size), sampler=sampler, batch_size=256)
    rb.extend(TensorDict({"a": torch.zeros(size, 5), "policy_version": torch.arange(size) // 1000}, batch_size=[size]))
    sampler.consumer_version = size // 1000
    torch.manual_seed(0)
    benchmark(sampler.sample, rb._storage, 256)


def test_sampler_ensemble_sample(benchmark):
    """``SamplerEnsemble`` of 4 random samplers drawing 256 indices (4 members of 64) from 4 x 100k storages."""
    storages = [LazyTensorStorage(100_000) for _ in range(4)]
    for s in storages:
        s.set(torch.arange(100_000), TensorDict(a=torch.zeros(100_000, 5), batch_size=[100_000]))
    storage = _component("StorageEnsemble")(*storages)
    sampler = _component("SamplerEnsemble")(*(RandomSampler() for _ in range(4)), num_buffer_sampled=4)
    torch.manual_seed(0)
    benchmark(sampler.sample, storage, 256)
