"""The rollout engine: the one loop that steps a policy and an env for N steps with a carry.

``env.rollout``, ``Collector`` batches (and through them the collector workers) and the batched-env
workers' random rollouts all call :func:`run_rollout` with a :class:`RolloutLoop` saying what to do; it
returns a :class:`Trajectory` (the steps stacked along a new time dim, and the carry: the input of the
next step). Python overhead is kept out of the loop: the per-step work is the policy call, one
``step_and_maybe_reset`` (one ``step`` + bound ``step_mdp`` without resets) and an append; the stack
happens once at the end, leaf by leaf when every step has the same key layout (:func:`stack_steps`).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple, cast

import torch
from tensordict import LazyStackedTensorDict, TensorDict, TensorDictBase
from tensordict.nn import TensorDictModule, TensorDictModuleBase

from tdrl.envs._fast_td import fast_td
from tdrl.envs.utils import terminated_or_truncated

__all__ = [
    "RolloutLoop",
    "Trajectory",
    "apply_policy",
    "as_td_policy",
    "mark_last_truncated",
    "run_rollout",
    "stack_steps",
]

Policy = Callable[[TensorDictBase], TensorDictBase]


@dataclass(frozen=True, slots=True)
class RolloutLoop:
    """What one call of :func:`run_rollout` does.

    Attributes:
        max_steps: number of steps (fewer when ``stop`` or ``interrupt`` ends the loop early).
        policy: ``td -> td`` writing the action(s); ``None`` draws them with ``env.rand_action``.
        policy_device: the device the policy runs on (with ``cast``).
        cast: move each input to ``policy_device`` (or clear its device) before the policy, and back to
            the env's device after it.
        storing_device: device each step is moved to before it is stored (``None``: as produced).
        callback: ``callback(env, td)`` after every step but the last (``td``: that step's data when
            ``stop="never"``, the next input otherwise, as TorchRL's ``rollout``).
        stop: ``"never"``; ``"any_done"``: end after the first step where a sub-env is done;
            ``"all_done"``: finished sub-envs stop stepping (a ``"_step"`` mask) and repeat their last
            transition until every one was done once.
        reset_when_done: reset the sub-envs that are done before the next step (``stop="never"``).
        final_carry: what the last step leaves as carry: ``"none"`` (TorchRL's ``rollout``: no
            ``step_mdp``, no reset), ``"step_mdp"`` (no reset) or ``"maybe_reset"`` (as every other step:
            what a collector carries to its next batch).
        fill: entries written into each input before the policy runs (e.g. zeros standing for a real
            policy's outputs during random frames), or ``None``.
        on_step: called with each step's data before it is stored (e.g. trajectory-id tracking).
        interrupt: checked after each step; ``True`` ends the loop (preemption).

    Examples:
        >>> from tdrl.envs import PendulumEnv
        >>> env = PendulumEnv(seed=0)
        >>> traj = run_rollout(env, env.reset(), RolloutLoop(max_steps=3, final_carry="maybe_reset"))
        >>> traj.data.batch_size, traj.carry.batch_size
        (torch.Size([3]), torch.Size([]))
    """

    max_steps: int
    policy: Policy | None = None
    policy_device: torch.device | None = None
    cast: bool = False
    storing_device: torch.device | None = None
    callback: Callable[[Any, TensorDictBase], Any] | None = None
    stop: Literal["never", "any_done", "all_done"] = "never"
    reset_when_done: bool = True
    final_carry: Literal["none", "step_mdp", "maybe_reset"] = "none"
    fill: TensorDictBase | None = None
    on_step: Callable[[TensorDictBase], Any] | None = None
    interrupt: Callable[[], bool] | None = None


class Trajectory(NamedTuple):
    """What :func:`run_rollout` returns.

    Attributes:
        data: the steps stacked along a new last batch dim (``(*batch, T)``), not yet named.
        carry: the input of the next step (``None`` when ``final_carry="none"``).
    """

    data: TensorDictBase
    carry: TensorDictBase | None


def run_rollout(
    env: Any,
    carry: TensorDictBase,
    loop: RolloutLoop,
    *,
    out: TensorDictBase | None = None,
    contiguous: bool = False,
) -> Trajectory:
    """Steps ``env`` (an ``EnvBase``) with ``loop.policy`` from ``carry`` and stacks the steps.

    Args:
        env: the environment.
        carry: the first input (a reset output, or the carry of a previous call).
        loop: the loop's settings.
        out: destination of the stack, as for ``torch.stack``.
        contiguous: stack with ``torch.stack`` (else :func:`stack_steps`: dense when layouts allow).

    Returns:
        The stacked steps and the carry.

    Examples:
        >>> from tdrl.envs import PendulumEnv
        >>> env = PendulumEnv(seed=0, batch_size=[2])
        >>> traj = run_rollout(env, env.reset(), RolloutLoop(max_steps=4, final_carry="step_mdp"))
        >>> traj.data.batch_size, traj.carry.batch_size
        (torch.Size([2, 4]), torch.Size([2]))
    """
    if loop.max_steps < 1:
        raise ValueError(f"run_rollout: max_steps must be >= 1, got {loop.max_steps}")
    dim = len(carry.batch_size)
    if loop.stop == "never":
        steps, carry_out = _run_nonstop(env, carry, loop)
    else:
        steps, carry_out = _run_stop_early(env, carry, loop)
    data = _torch_stack(steps, dim, out) if contiguous else stack_steps(steps, dim, out=out)
    return Trajectory(data, carry_out)


def _torch_stack(tds: list[TensorDictBase], dim: int, out: TensorDictBase | None) -> TensorDictBase:
    # tensordict implements torch.stack through __torch_function__; torch's stubs only know tensors.
    return torch.stack(tds, dim, out=out)  # type: ignore[arg-type, return-value]


def _run_nonstop(
    env: Any, td: TensorDictBase, loop: RolloutLoop
) -> tuple[list[TensorDictBase], TensorDictBase | None]:
    # The hot loop of every rollout and collector batch: bound methods and flags are read once.
    steps: list[TensorDictBase] = []
    append = steps.append
    fill, on_step, callback, interrupt = loop.fill, loop.on_step, loop.callback, loop.interrupt
    storing = loop.storing_device
    act = _actor(env, loop)
    step, step_mdp = env.step, env.step_mdp
    advance = env.step_and_maybe_reset if loop.reset_when_done else None
    last = loop.max_steps - 1
    final = loop.final_carry
    # Transforms with post-step_mdp hooks (NextObservationDelta) trim the stored step there: run it last too.
    trim_last = bool(getattr(env, "__dict__", {}).get("_needs_post_mdp", False))
    for i in range(loop.max_steps):
        if fill is not None:
            td.update(fill)
        result = act(td)
        if result is not td and result is not None:
            td.update(result)
        if i < last or final == "maybe_reset":
            if advance is not None:
                data, td = advance(td)
            else:
                data = step(td)
                td = step_mdp(data)
        else:
            data = step(td)
            if final == "step_mdp" or trim_last:
                td = step_mdp(data)
        if on_step is not None:
            on_step(data)
        append(data if storing is None else data.to(storing))
        if callback is not None and i < last:
            callback(env, data)
        if interrupt is not None and interrupt():
            break
    return steps, (None if final == "none" else td)


def _actor(env: Any, loop: RolloutLoop) -> Policy:
    """The per-step policy call: ``env.rand_action`` (in place), the policy, or the policy with casts."""
    policy = env.rand_action if loop.policy is None else loop.policy
    if not loop.cast:
        return policy
    # The cast copy comes back on the env's device; the loop merges it into the step input.
    return lambda td: apply_policy(env, td, policy, loop.policy_device, cast=True)


def _run_stop_early(
    env: Any, td: TensorDictBase, loop: RolloutLoop
) -> tuple[list[TensorDictBase], TensorDictBase | None]:
    steps: list[TensorDictBase] = []
    running: torch.Tensor | None = None
    done_spec = env.full_done_spec
    policy = env.rand_action if loop.policy is None else loop.policy
    storing, all_done = loop.storing_device, loop.stop == "all_done"
    next_td: TensorDictBase | None = None
    for i in range(loop.max_steps):
        if loop.fill is not None:
            td.update(loop.fill)
        td = apply_policy(env, td, policy, loop.policy_device, cast=loop.cast)
        data = env.step(td)
        next_td = env.step_mdp(data)
        stored = data if storing is None else data.to(storing)
        if running is not None and not bool(running.all()):
            # Finished sub-envs repeat their last transition instead of recording garbage.
            stored = torch.where(running.view(stored.shape), stored.exclude("_step"), steps[-1])
        if loop.on_step is not None:
            loop.on_step(stored)
        steps.append(stored)
        if i == loop.max_steps - 1 or (loop.interrupt is not None and loop.interrupt()):
            break
        td = next_td
        if not all_done:
            if terminated_or_truncated(td, full_done_spec=done_spec, key=None):
                break
        else:
            terminated_or_truncated(td, full_done_spec=done_spec, key="_neg_step")
            finished = cast("torch.Tensor | None", td.pop("_neg_step", None))
            if finished is not None:
                still = ~finished.reshape(td.batch_size)
                running = still if running is None else running & still
            if running is not None:
                if not bool(running.any()):
                    break
                td.set("_step", running)
        if loop.callback is not None:
            loop.callback(env, td)
    return steps, (next_td if loop.final_carry != "none" else None)


def apply_policy(
    env: Any, td: TensorDictBase, policy: Policy, policy_device: torch.device | None = None, *, cast: bool = False
) -> TensorDictBase:
    """Runs ``policy`` on ``td`` and merges its output into ``td``.

    Args:
        env: the env ``td`` belongs to (its device is where ``td`` goes back to with ``cast``).
        td: the step input.
        policy: ``td -> td``; a policy returning another tensordict has it merged into ``td``.
        policy_device: where the policy runs (with ``cast``; ``None`` clears the device).
        cast: move ``td`` to the policy's device and back.

    Returns:
        ``td`` (or its copy on the env's device) holding the action.

    Examples:
        >>> from tdrl.envs import PendulumEnv
        >>> env = PendulumEnv()
        >>> apply_policy(env, env.reset(), env.rand_action)["action"].shape
        torch.Size([1])
    """
    if cast:
        td = td.to(policy_device) if policy_device is not None else td.clear_device_()
    result = policy(td)
    if result is not td and result is not None:
        td.update(result)
    if cast and env.device is not None:
        td = td.to(env.device)
    return td


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


def as_td_policy(env: Any, policy: Any, *, trust_policy: bool = False) -> Policy:
    """``policy`` as a ``td -> td`` callable for ``env``: plain tensor modules read the observations.

    Args:
        env: the env whose observation and action keys a plain module is wired to.
        policy: a tensordict module or ``td -> td`` callable (returned as is), or an ``nn.Module`` over
            tensors (wrapped in a ``TensorDictModule`` from the observation keys to the action keys).
        trust_policy: return ``policy`` as is.

    Examples:
        >>> import torch
        >>> from tdrl.envs import PendulumEnv
        >>> type(as_td_policy(PendulumEnv(), torch.nn.Linear(3, 1))).__name__
        'TensorDictModule'
    """
    if trust_policy or _is_td_policy(policy):
        return policy
    return TensorDictModule(policy, in_keys=list(env.observation_spec.keys()), out_keys=list(env.action_keys))


def mark_last_truncated(data: TensorDictBase, done_keys: list) -> TensorDictBase:
    """Marks the last time step of ``data`` truncated (and done) under every ``truncated`` done key.

    Args:
        data: a stacked trajectory, time last.
        done_keys: the env's done keys; at least one must end in ``"truncated"``.

    Returns:
        ``data``, modified in place.

    Examples:
        >>> from tdrl.envs import PendulumEnv, StepCounter, TransformedEnv
        >>> env = TransformedEnv(PendulumEnv(), StepCounter(max_steps=10))
        >>> data = env.rollout(3)
        >>> mark_last_truncated(data, env.done_keys)["next", "truncated"].squeeze(-1).tolist()
        [False, False, True]
    """
    found = False
    for key in done_keys:
        path = (key,) if isinstance(key, str) else tuple(key)
        if path[-1] != "truncated":
            continue
        trunc = data.get(("next", *path)).clone()
        trunc[(slice(None),) * (data.ndim - 1) + (-1,)] = True
        data.set(("next", *path), trunc)
        done_path = ("next", *path[:-1], "done")
        data.set(done_path, data.get(done_path) | trunc)
        found = True
    if not found:
        raise RuntimeError(
            "set_truncated=True needs a 'truncated' done key; call env.add_truncated_keys() first "
            f"(done keys: {list(done_keys)})"
        )
    return data


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
        return _torch_stack(tds, dim, out)
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
