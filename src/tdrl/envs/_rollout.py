"""``EnvBase.rollout``: run a policy (random actions by default) and stack the steps along time.

The loop itself is the rollout engine (:func:`tdrl.envs.rollout_engine.run_rollout`), shared with the
collectors and the batched-env workers; this mixin turns ``rollout``'s TorchRL arguments into a
:class:`~tdrl.envs.rollout_engine.RolloutLoop`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sized
from typing import TYPE_CHECKING, Any

import torch
from tensordict import TensorDictBase

from tdrl.envs.rollout_engine import RolloutLoop, as_td_policy, mark_last_truncated, run_rollout

__all__ = ["RolloutMixin"]


class RolloutMixin:
    """``rollout`` for ``EnvBase`` (relies on its ``reset``, ``step``, ``step_and_maybe_reset`` ...)."""

    if TYPE_CHECKING:  # provided by EnvBase

        @property
        def done_keys(self) -> list: ...
        @property
        def action_keys(self) -> list: ...
        def reset(self, tensordict: TensorDictBase | None = None, **kwargs: Any) -> TensorDictBase: ...
        def maybe_reset(self, tensordict: TensorDictBase) -> TensorDictBase: ...

    def rollout(
        self,
        max_steps: int,
        policy: Callable[[TensorDictBase], TensorDictBase] | None = None,
        callback: Callable[..., Any] | None = None,
        *,
        actions: Iterable[Any] | None = None,
        auto_reset: bool = True,
        auto_cast_to_device: bool = False,
        break_when_any_done: bool | None = None,
        break_when_all_done: bool | None = None,
        return_contiguous: bool | None = False,
        tensordict: TensorDictBase | None = None,
        set_truncated: bool = False,
        out: TensorDictBase | None = None,
        trust_policy: bool = False,
        storing_device: Any = None,
        set_state: bool | None = None,
    ) -> TensorDictBase:
        """Runs up to ``max_steps`` steps and returns them stacked along a new last batch dim ("time").

        Args:
            max_steps: number of steps.
            policy: ``td -> td`` writing the action(s); random actions (``rand_action``) when ``None``.
            callback: called as ``callback(env, td)`` after each step but the last.
            actions: a sequence of actions to play instead of a policy.
            auto_reset: reset first (else ``tensordict`` is the first input, reset where done).
            auto_cast_to_device: move data between the policy's and the env's devices.
            break_when_any_done: stop at the first done (default, unless ``break_when_all_done``).
            break_when_all_done: stop when every sub-env was done once (finished ones stop stepping).
            return_contiguous: always stack densely (the default stacks densely when layouts allow).
            tensordict: first input when ``auto_reset=False`` (or given to ``reset``).
            set_truncated: mark the last step truncated (needs a ``truncated`` done key).
            out: destination of the stack.
            trust_policy: call ``policy`` as is, without wrapping plain modules.
            storing_device: device where the steps are stored.
            set_state: forwarded to ``reset``.

        Returns:
            A tensordict of batch size ``(*env.batch_size, T)``, last dim named ``"time"``.

        Examples:
            >>> from tdrl.envs import PendulumEnv
            >>> env = PendulumEnv(seed=0, batch_size=[2])
            >>> data = env.rollout(4, break_when_any_done=False)
            >>> data.batch_size, data.names
            (torch.Size([2, 4]), [None, 'time'])
        """
        if break_when_any_done is None:
            break_when_any_done = not break_when_all_done
        break_when_all_done = bool(break_when_all_done)
        if break_when_all_done and break_when_any_done:
            raise TypeError("break_when_all_done and break_when_any_done cannot both be True")
        policy, policy_device, max_steps = self._rollout_policy(
            policy, actions, max_steps, trust_policy, auto_cast_to_device
        )
        if auto_reset:
            tensordict = self.reset(tensordict, set_state=set_state)
        elif tensordict is None:
            raise RuntimeError("rollout(auto_reset=False) needs the first input as tensordict=")
        else:
            tensordict = self.maybe_reset(tensordict)
        loop = RolloutLoop(
            max_steps=max_steps,
            policy=policy,
            policy_device=policy_device,
            cast=auto_cast_to_device,
            storing_device=torch.device(storing_device) if storing_device is not None else None,
            callback=callback,
            stop="all_done" if break_when_all_done else ("any_done" if break_when_any_done else "never"),
        )
        result = run_rollout(self, tensordict, loop, out=out, contiguous=bool(return_contiguous)).data
        if set_truncated:
            mark_last_truncated(result, self.done_keys)
        result.refine_names(*([None] * len(tensordict.batch_size)), "time")
        return result

    def _rollout_policy(
        self, policy: Any, actions: Iterable[Any] | None, max_steps: int, trust_policy: bool, cast: bool
    ) -> tuple[Callable | None, torch.device | None, int]:
        """The rollout's policy (``None``: random actions), its device (with ``cast``) and step count."""
        if actions is not None:
            if policy is not None:
                raise ValueError("rollout(): pass either policy or actions, not both")
            policy, max_steps = self._actions_policy(actions, max_steps)
            trust_policy = True
        policy_device = None
        if policy is not None:
            policy = as_td_policy(self, policy, trust_policy=trust_policy)
            if cast and isinstance(policy, torch.nn.Module):
                policy_device = next((p.device for p in policy.parameters()), None)
        return policy, policy_device, max_steps

    def _actions_policy(self, actions: Iterable[Any], max_steps: int) -> tuple[Callable, int]:
        key = self.action_keys[0]
        iterator = iter(actions)

        def play(td: TensorDictBase) -> TensorDictBase:
            td.set(key, next(iterator))
            return td

        if isinstance(actions, Sized):
            max_steps = min(max_steps, len(actions))
        return play, max_steps
