"""``EnvRunner``: what one sub-env of a batched env does per command, in-process or in a worker.

The runner keeps the sub-env's current root tensordict (observations, states, transform entries such as
``step_count`` or stacked frames) between steps, so only the actions travel from the parent each step.
``SerialEnv`` calls runners in turn; each ``ParallelEnv`` worker owns one runner and copies its results
into shared-memory buffers.
"""

from __future__ import annotations

from typing import Any

import torch
from tensordict import TensorDictBase
from tensordict.utils import NestedKey

from tdrl.envs.rollout_engine import RolloutLoop, run_rollout

__all__ = ["EnvRunner", "Layout"]


class Layout:
    """The key lists of a batched env, computed once from a sub-env's specs.

    Attributes:
        action_keys: inputs sent by the parent each step.
        next_keys: entries of a step's ``"next"`` (observations, rewards, dones).
        root_keys: entries of a reset output / next step input (observations, dones, states).
    """

    def __init__(self, env: Any) -> None:
        self.action_keys: list[NestedKey] = list(env.action_keys)
        obs, done, state = list(env.observation_keys), list(env.done_keys), list(env.state_keys)
        self.next_keys: list[NestedKey] = _unique(obs + list(env.reward_keys) + done)
        self.root_keys: list[NestedKey] = _unique(obs + done + state)
        self.flat = all(isinstance(k, str) for k in self.next_keys + self.root_keys + self.action_keys)


def _unique(keys: list[NestedKey]) -> list[NestedKey]:
    seen: set = set()
    out = []
    for k in keys:
        if k not in seen:
            seen.add(k)
            out.append(k)
    return out


class EnvRunner:
    """Runs reset/step commands on one sub-env and keeps its current root tensordict.

    Args:
        env: the sub-env.

    Examples:
        >>> from tdrl.envs import PendulumEnv
        >>> runner = EnvRunner(PendulumEnv())
        >>> root = runner.reset()
        >>> nxt, root = runner.step_and_maybe_reset({"action": root["th"].new_zeros(1)})
        >>> sorted(nxt.keys())[:3]
        ['done', 'params', 'reward']
    """

    def __init__(self, env: Any) -> None:
        self.env = env
        self.layout = Layout(env)
        self.root: TensorDictBase | None = None

    def _load_actions(self, actions: Any) -> TensorDictBase:
        root = self.root
        if root is None:
            raise RuntimeError("batched env: step() called before reset()")
        for key in self.layout.action_keys:
            root.set(key, actions[key] if isinstance(actions, dict) else actions.get(key))
        return root

    def reset(
        self, tensordict: TensorDictBase | None = None, mask: torch.Tensor | None = None, **kwargs: Any
    ) -> TensorDictBase:
        """Resets the sub-env; ``mask`` (shaped like the sub-env's done) selects a part of a batched one."""
        if mask is not None and self.root is not None and self.env.batch_size and not bool(mask.all()):
            root = self.root.copy()
            root.set("_reset", mask)
            self.root = self.env.reset(root, select_reset_only=True, **kwargs)
        else:
            self.root = self.env.reset(tensordict, **kwargs)
        return self.root

    def step(self, actions: Any) -> TensorDictBase:
        """One step; returns the ``"next"`` tensordict and moves the root forward (no reset)."""
        data = self.env.step(self._load_actions(actions))
        nxt = data.get("next")
        self.root = self.env.step_mdp(data)
        return nxt

    def step_and_maybe_reset(self, actions: Any) -> tuple[TensorDictBase, TensorDictBase]:
        """One step, then a reset of what is done; returns ``(next, root for the next step)``."""
        data, root = self.env.step_and_maybe_reset(self._load_actions(actions))
        self.root = root
        return data.get("next"), root

    def set_seed(self, seed: int | None, static_seed: bool = False) -> int | None:
        return self.env.set_seed(seed, static_seed=static_seed)

    def rollout(self, max_steps: int, action_seed: int) -> TensorDictBase:
        """A random-action rollout of ``max_steps`` steps from a fresh reset, with auto-resets.

        The actions are drawn up front from the sub-env's action spec with ``action_seed`` (the global RNG
        state is restored afterwards). Returns the steps stacked along a new last batch dim, holding the
        layout's root, action and ``"next"`` entries.
        """
        env, layout = self.env, self.layout
        root = env.reset()
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(action_seed)
            actions = env.full_action_spec.rand(torch.Size([max_steps]))
        loop = RolloutLoop(max_steps=max_steps, policy=_ActionPlayer(actions, layout.action_keys),
                           final_carry="step_mdp")
        data, self.root = run_rollout(env, root, loop)
        keys = [*layout.root_keys, *layout.action_keys, *(("next", *_path(k)) for k in layout.next_keys)]
        return data.select(*keys)


class _ActionPlayer:
    """A policy writing precomputed actions, one time index per call."""

    def __init__(self, actions: TensorDictBase, keys: list[NestedKey]) -> None:
        self.per_step = [(key, actions.get(key).unbind(0)) for key in keys]
        self.t = 0

    def __call__(self, td: TensorDictBase) -> TensorDictBase:
        t = self.t
        for key, values in self.per_step:
            td.set(key, values[t])
        self.t = t + 1
        return td


def _path(key: NestedKey) -> tuple[str, ...]:
    return (key,) if isinstance(key, str) else tuple(key)


def copy_into(dest: dict[NestedKey, torch.Tensor], src: TensorDictBase) -> None:
    """Copies the entries of ``src`` into the preallocated tensors of ``dest`` (same keys)."""
    for key, buffer in dest.items():
        value = src.get(key, None)
        if value is None:
            raise KeyError(f"batched env: the sub-env output lacks {key!r}, declared in its specs")
        buffer.copy_(value)
