"""``EnvBase.rollout``: run a policy (random actions by default) and stack the steps along time.

The loop keeps Python overhead low: random actions come from samplers precomputed per action leaf, each
step is ``step_and_maybe_reset`` with a bound ``step_mdp``, and the stacking happens once at the end,
leaf by leaf, when every step has the same key layout (the usual case); otherwise tensordict's
``maybe_dense_stack`` handles heterogeneous steps.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

import torch
from tensordict import LazyStackedTensorDict, TensorDict, TensorDictBase
from tensordict.nn import TensorDictModule, TensorDictModuleBase

from tdrl.envs._fast_td import fast_td
from tdrl.envs.utils import terminated_or_truncated

__all__ = ["RolloutMixin", "stack_steps"]


def stack_steps(tds: list[TensorDictBase], dim: int, out: TensorDictBase | None = None) -> TensorDictBase:
    """Stacks step tensordicts along ``dim``: leaf by leaf when layouts match, else tensordict's stack.

    Args:
        tds: the steps (non-empty).
        dim: the new (time) dim.
        out: optional destination, as for ``torch.stack``.

    Returns:
        A dense ``TensorDict`` when possible, a ``LazyStackedTensorDict`` otherwise.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> steps = [TensorDict({"a": torch.zeros(2), "n": {"b": torch.ones(2)}}, [2]) for _ in range(3)]
        >>> stack_steps(steps, 1)["n", "b"].shape
        torch.Size([2, 3])
    """
    if out is not None:
        return torch.stack(tds, dim, out=out)
    fast = _stack_same_layout(tds, dim)
    if fast is not None:
        return fast
    return LazyStackedTensorDict.maybe_dense_stack(tds, dim)


def _stack_same_layout(tds: list[TensorDictBase], dim: int) -> TensorDict | None:
    first = tds[0]
    if type(first) is not TensorDict:
        return None
    keys = tuple(first._tensordict)
    batch = first.batch_size
    device = first.device
    for td in tds:
        if type(td) is not TensorDict or tuple(td._tensordict) != keys or td.batch_size != batch:
            return None
    out: dict[str, Any] = {}
    for key in keys:
        values = [td._tensordict[key] for td in tds]
        head = values[0]
        if isinstance(head, torch.Tensor):
            try:
                out[key] = torch.stack(values, dim)
            except (RuntimeError, TypeError):  # shapes differ or a non-tensor slipped in
                return None
        elif type(head) is TensorDict:
            sub = _stack_same_layout(values, dim)
            if sub is None:
                return None
            out[key] = sub
        else:
            return None
    new_batch = torch.Size([*batch[:dim], len(tds), *batch[dim:]])
    return fast_td(out, new_batch, device)


class _Loop(NamedTuple):
    """Settings of one rollout loop."""

    max_steps: int
    policy: Callable[[TensorDictBase], TensorDictBase]
    policy_device: torch.device | None
    cast: bool
    storing_device: torch.device | None
    callback: Callable[..., Any] | None
    all_done: bool


def _is_td_policy(policy: Any) -> bool:
    """TorchRL's rule: a tensordict module, or a callable whose only argument is ``tensordict``/``td`` or is
    annotated as a tensordict. Plain callables that are not modules are trusted as is."""
    if isinstance(policy, TensorDictModuleBase) or not isinstance(policy, torch.nn.Module):
        return True
    if hasattr(policy, "in_keys") and hasattr(policy, "out_keys"):
        return True
    try:
        params = inspect.signature(policy.forward).parameters
    except (TypeError, ValueError):
        return True
    names = list(params)
    if set(names) in ({"tensordict"}, {"td"}):
        return True
    if len(names) == 1:
        annotation = params[names[0]].annotation
        if isinstance(annotation, str):
            return annotation.split(".")[-1] in ("TensorDictBase", "TensorDict")
        return isinstance(annotation, type) and issubclass(annotation, TensorDictBase)
    return False


class RolloutMixin:
    """``rollout`` for ``EnvBase`` (relies on its ``reset``, ``step``, ``step_and_maybe_reset`` ...)."""

    def _make_policy(self, policy: Any, trust_policy: bool) -> Callable[[TensorDictBase], TensorDictBase]:
        if trust_policy or _is_td_policy(policy):
            return policy
        # A plain module over tensors: feed it the observations, write its output to the action key(s).
        return TensorDictModule(
            policy, in_keys=list(self.observation_spec.keys()), out_keys=list(self.action_keys)
        )

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
        if actions is not None:
            if policy is not None:
                raise ValueError("rollout(): pass either policy or actions, not both")
            policy, max_steps = self._actions_policy(actions, max_steps)
            trust_policy = True
        policy_device = None
        if policy is None:
            policy = self.rand_action
        else:
            policy = self._make_policy(policy, trust_policy)
            if auto_cast_to_device and isinstance(policy, torch.nn.Module):
                policy_device = next((p.device for p in policy.parameters()), None)
        if auto_reset:
            tensordict = self.reset(tensordict, set_state=set_state)
        elif tensordict is None:
            raise RuntimeError("rollout(auto_reset=False) needs the first input as tensordict=")
        else:
            tensordict = self.maybe_reset(tensordict)
        storing_device = torch.device(storing_device) if storing_device is not None else None
        run = (
            self._rollout_stop_early
            if (break_when_any_done or break_when_all_done)
            else self._rollout_nonstop
        )
        loop = _Loop(
            max_steps,
            policy,
            policy_device,
            auto_cast_to_device,
            storing_device,
            callback,
            break_when_all_done,
        )
        steps = run(tensordict, loop)
        dim = len(tensordict.batch_size)
        result = torch.stack(steps, dim, out=out) if return_contiguous else stack_steps(steps, dim, out=out)
        if set_truncated:
            self._set_truncated(result)
        result.refine_names(*([None] * dim), "time")
        return result

    def _actions_policy(self, actions: Iterable[Any], max_steps: int) -> tuple[Callable, int]:
        key = self.action_keys[0]
        iterator = iter(actions)

        def play(td: TensorDictBase) -> TensorDictBase:
            td.set(key, next(iterator))
            return td

        if hasattr(actions, "__len__"):
            max_steps = min(max_steps, len(actions))
        return play, max_steps

    def _apply_policy(
        self, td: TensorDictBase, policy: Callable, policy_device: Any, cast: bool
    ) -> TensorDictBase:
        if cast:
            td = td.to(policy_device) if policy_device is not None else td.clear_device_()
        result = policy(td)
        if result is not td and result is not None:
            td.update(result)
        if cast and self.device is not None:
            td = td.to(self.device)
        return td

    def _rollout_nonstop(self, td: TensorDictBase, loop: _Loop) -> list[TensorDictBase]:
        max_steps, policy, policy_device, cast, storing_device, callback, _ = loop
        steps = []
        fast_policy = policy == self.rand_action and not cast
        for i in range(max_steps):
            if fast_policy:
                self.rand_action(td)
            else:
                td = self._apply_policy(td, policy, policy_device, cast)
            if i == max_steps - 1:
                data = self.step(td)
            else:
                data, td = self.step_and_maybe_reset(td)
            steps.append(data if storing_device is None else data.to(storing_device))
            if i < max_steps - 1 and callback is not None:
                callback(self, data)
        return steps

    def _rollout_stop_early(self, td: TensorDictBase, loop: _Loop) -> list[TensorDictBase]:
        max_steps, policy, policy_device, cast, storing_device, callback, all_done = loop
        steps: list[TensorDictBase] = []
        running: torch.Tensor | None = None
        done_spec = self.full_done_spec
        for i in range(max_steps):
            td = self._apply_policy(td, policy, policy_device, cast)
            data = self.step(td)
            next_td = self.step_mdp(data)
            stored = data if storing_device is None else data.to(storing_device)
            if running is not None and not bool(running.all()):
                # Finished sub-envs repeat their last transition instead of recording garbage.
                stored = torch.where(running.view(stored.shape), stored.exclude("_step"), steps[-1])
            steps.append(stored)
            if i == max_steps - 1:
                break
            td = next_td
            if not all_done:
                if terminated_or_truncated(td, full_done_spec=done_spec, key=None):
                    break
            else:
                terminated_or_truncated(td, full_done_spec=done_spec, key="_neg_step")
                finished = td.pop("_neg_step", None)
                if finished is not None:
                    still = ~finished.reshape(td.batch_size)
                    running = still if running is None else running & still
                if running is not None:
                    if not bool(running.any()):
                        break
                    td.set("_step", running)
            if callback is not None:
                callback(self, td)
        return steps

    def _set_truncated(self, result: TensorDictBase) -> None:
        found = False
        for key in self.done_keys:
            last = key if isinstance(key, str) else key[-1]
            if last != "truncated":
                continue
            done_key = "done" if isinstance(key, str) else (*key[:-1], "done")
            trunc = result.get(("next", *((key,) if isinstance(key, str) else key))).clone()
            trunc[(slice(None),) * (result.ndim - 1) + (-1,)] = True
            result.set(("next", *((key,) if isinstance(key, str) else key)), trunc)
            done_path = ("next", *((done_key,) if isinstance(done_key, str) else done_key))
            result.set(done_path, result.get(done_path) | trunc)
            found = True
        if not found:
            raise RuntimeError(
                "rollout(set_truncated=True) needs a 'truncated' done key; call env.add_truncated_keys() first"
            )
