"""``StepPlan``: the per-layout constants of the step pipeline, computed once per env and spec layout.

``EnvBase.step`` runs four stages (see ``docs/architecture.md``):

1. input stage, :meth:`~tdrl.envs.EnvBase.check_step_input`: batch size and action entries;
2. the env's dynamics, ``_step`` (the method a subclass implements, TorchRL's override name);
3. the post-processing stage, :meth:`~tdrl.envs.EnvBase.complete_step`: reward shapes, done completion,
   optional type checks; it runs exactly once per step of every (sub-)env;
4. ``step_mdp`` (in ``step_and_maybe_reset`` and the rollout engine): the next step's input.

Every stage reads the same :class:`StepPlan`, built by :meth:`StepPlan.from_env` the first time a step
needs it and dropped with the env's other cached key lists (``env.empty_cache()``, which every spec setter
calls), so a spec change rebuilds it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from tensordict import TensorDictBase
from tensordict.utils import NestedKey

from tdrl.envs._input_checks import ActionCheck
from tdrl.envs._samplers import action_sampler
from tdrl.envs.step_mdp import make_step_mdp

__all__ = ["StepPlan"]


@dataclass(frozen=True, slots=True)
class StepPlan:
    """What the step pipeline of one env needs, computed once per spec layout.

    The ``flat_*`` fields are the fast path: root-level keys checked with one dict look-up each; the
    ``nested_*`` fields go through the slower ``TensorDict.get`` checks. The action entries are checked by
    ``check_actions`` (:class:`~tdrl.envs._input_checks.ActionCheck`, which has its own fast path).

    Attributes:
        batch_size: the env's batch size.
        strict_batch: whether an input's batch size must equal ``batch_size`` (batch-locked or batched env).
        actions: ``(key, spec)`` of every action leaf.
        check_actions: the input check of the action entries (presence, shape, dtype, discrete domains).
        rewards: ``(key, shape without the batch dims)`` of every reward leaf.
        flat_reward_shapes: ``(key, full shape)`` of the root-level reward leaves.
        nested_rewards: the nested reward leaves (always checked by the general path).
        flat_done_keys: the root-level done leaves.
        done_flat: whether every done leaf is at the root.
        simple_done: whether ``"done"`` alone says when to reset (every done leaf at the root, among
            ``done``/``terminated``/``truncated``).
        step_mdp: the env's ``step_mdp``, bound to its key lists.
        samplers: ``(key, sampler)`` of every action leaf, for ``rand_action``.

    Examples:
        >>> from tdrl.envs import PendulumEnv
        >>> plan = PendulumEnv().step_plan
        >>> [key for key, _ in plan.actions], plan.flat_done_keys, plan.simple_done
        (['action'], ('done', 'terminated'), True)
    """

    batch_size: torch.Size
    strict_batch: bool
    actions: list[tuple[NestedKey, Any]]
    check_actions: ActionCheck
    rewards: list[tuple[NestedKey, torch.Size]]
    flat_reward_shapes: list[tuple[str, torch.Size]]
    nested_rewards: list[tuple[NestedKey, torch.Size]]
    flat_done_keys: tuple[str, ...]
    done_flat: bool
    simple_done: bool
    step_mdp: Callable[[TensorDictBase], TensorDictBase]
    samplers: list[tuple[NestedKey, Callable[[torch.Size], torch.Tensor]]]

    @classmethod
    def from_env(cls, env: Any) -> StepPlan:
        """Builds the plan of ``env`` (an ``EnvBase``) from its current specs."""
        nb = len(env.batch_size)
        batch = env.batch_size
        full_action = env.full_action_spec
        rewards = [(k, env.full_reward_spec[k].shape[nb:]) for k in env.reward_keys]
        done_keys = env.done_keys
        actions = [(k, full_action[k]) for k in env.action_keys]
        return cls(
            batch_size=batch,
            strict_batch=env.batch_locked or bool(batch),
            actions=actions,
            check_actions=ActionCheck(type(env).__name__, actions, batch_locked=env.batch_locked, batch_dims=nb,
                                      full=env.run_type_checks),
            rewards=rewards,
            flat_reward_shapes=[(k, torch.Size((*batch, *sh))) for k, sh in rewards if isinstance(k, str)],
            nested_rewards=[r for r in rewards if not isinstance(r[0], str)],
            flat_done_keys=tuple(k for k in done_keys if isinstance(k, str)),
            done_flat=all(isinstance(k, str) for k in done_keys),
            simple_done="done" in done_keys and set(done_keys) <= {"done", "terminated", "truncated"},
            step_mdp=make_step_mdp(
                exclude_action=False,
                reward_keys=env.reward_keys,
                done_keys=done_keys,
                action_keys=env.action_keys,
                next_keys=[*env.observation_keys, *env.state_keys, *done_keys],
            ),
            samplers=[(k, action_sampler(spec)) for k, spec in full_action.items(True, True)],
        )
