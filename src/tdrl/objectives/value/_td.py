"""TD(1) and TD(lambda) estimators (re-exported by :mod:`tdrl.objectives.value.functional`).

All tensors here have time on the last dimension; ``gamma``/``lmbda`` are floats, 0-d tensors or tensors
of the inputs' (time-last) shape, as :func:`tdrl.objectives.value.utils.coefficient` returns them.

The TD(lambda) return with truncation-aware bootstrapping is, with ``e_t = done_t`` except at the last
step where ``e_{T-1} = 1`` (the return bootstraps from the last next value) and
``v_t = (1 - terminated_t) * next_state_value_t``::

    G_t = reward_t + gamma_t * ((1 - lmbda_t) * v_t + lmbda_t * (e_t * v_t + (1 - e_t) * G_{t+1}))
        = b_t + c_t * G_{t+1},
    b_t = reward_t + gamma_t * v_t * (1 - lmbda_t * (1 - e_t)),    c_t = gamma_t * lmbda_t * (1 - e_t).
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from tdrl.objectives.value._scan import reverse_scan, reverse_scan_loop
from tdrl.objectives.value.utils import from_time_last, prepare_inputs

__all__ = [
    "non_rolling_td_lambda",
    "td1_advantage_estimate",
    "td1_return_estimate",
    "td_lambda_advantage_estimate",
    "td_lambda_return_estimate",
    "td_lambda_terms",
    "vec_td1_advantage_estimate",
    "vec_td1_return_estimate",
    "vec_td_lambda_advantage_estimate",
    "vec_td_lambda_return_estimate",
]

Scan = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


def _not_ends(not_done: torch.Tensor) -> torch.Tensor:
    # 1 - e_t: the last step always ends the recursion (it bootstraps from the last next value)
    not_ends = not_done.clone()
    not_ends[..., -1] = 0.0
    return not_ends


def td_lambda_terms(
    gamma: float | torch.Tensor,
    lmbda: float | torch.Tensor,
    next_value: torch.Tensor,
    reward: torch.Tensor,
    not_done: torch.Tensor,
    not_terminated: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The ``(b, c)`` of the TD(lambda) recurrence ``G_t = b_t + c_t * G_{t+1}`` (module docstring).

    Args:
        gamma: discount (float, 0-d or per-step tensor).
        lmbda: lambda (float, 0-d or per-step tensor).
        next_value: next state values, time last.
        reward: rewards, time last.
        not_done: float mask ``1 - (done | terminated)``, time last.
        not_terminated: float mask ``1 - terminated``, time last.

    Returns:
        ``(b, c)``, shaped like ``reward``.

    Examples:
        >>> import torch
        >>> ones = torch.ones(1, 2)
        >>> b, c = td_lambda_terms(0.5, 1.0, ones, ones, ones, ones)
        >>> b, c
        (tensor([[1.0000, 1.5000]]), tensor([[0.5000, 0.0000]]))
    """
    c = _not_ends(not_done) * (gamma * lmbda)
    # b = r + gamma * v * (1 - lmbda * (1 - e)) = r + v * (gamma - c), with v = (1 - terminated) * V'
    gamma_minus_c = torch.rsub(c, gamma) if isinstance(gamma, float) else gamma - c
    b = torch.addcmul(reward, next_value * not_terminated, gamma_minus_c)
    return b, c


def non_rolling_td_lambda(
    gamma: float | torch.Tensor,
    lmbda: float | torch.Tensor,
    next_value: torch.Tensor,
    reward: torch.Tensor,
    not_done: torch.Tensor,
    not_terminated: torch.Tensor,
) -> torch.Tensor:
    """TD(lambda) where the ``gamma_k``/``lmbda_k`` of the start step ``k`` discount its whole future.

    ``G_k`` runs the recursion of the module docstring from the end of ``k``'s trajectory back to ``k``
    with ``gamma_t = gamma_k`` and ``lmbda_t = lmbda_k`` for every ``t >= k`` (TorchRL's
    ``rolling_gamma=False``). With ``x_k = gamma_k * lmbda_k`` and ``W[k, t] = x_k ** (t - k)`` for the
    steps ``t >= k`` of the same trajectory (0 elsewhere)::

        G_k = sum_t W[k, t] * (reward_t + gamma_k * v_t * (1 - lmbda_k * (1 - e_t)))

    This is a ``[..., T, T]`` contraction: memory grows with ``T**2``.

    Args:
        gamma: discount (float, 0-d or per-step tensor).
        lmbda: lambda (float, 0-d or per-step tensor).
        next_value: next state values, time last.
        reward: rewards, time last.
        not_done: float mask ``1 - (done | terminated)``, time last.
        not_terminated: float mask ``1 - terminated``, time last.

    Returns:
        the returns, shaped like ``reward``.

    Examples:
        >>> import torch
        >>> ones = torch.ones(1, 2)
        >>> gamma = torch.tensor([[0.5, 0.1]])
        >>> non_rolling_td_lambda(gamma, 1.0, ones, ones, ones, ones)
        tensor([[1.7500, 1.1000]])
    """
    ends = 1.0 - _not_ends(not_done)
    num_steps = reward.shape[-1]
    steps = torch.arange(num_steps, device=reward.device)
    offset = steps - steps.unsqueeze(-1)  # [k, t] -> t - k
    # Steps k and t belong to the same trajectory iff no trajectory ends in [k, t).
    segment = torch.cumsum(ends, -1) - ends
    same = (segment.unsqueeze(-1) == segment.unsqueeze(-2)) & (offset >= 0)
    gamma_k = _per_step(gamma, reward)
    lmbda_k = _per_step(lmbda, reward)
    powers = torch.pow((gamma_k * lmbda_k).unsqueeze(-1), offset.clamp(min=0).to(reward.dtype))
    weights = torch.where(same, powers, 0.0)
    next_value = next_value * not_terminated
    # G_k = W @ r + gamma_k * (1 - lmbda_k) * W @ v + gamma_k * lmbda_k * W @ (e * v)
    rhs = torch.stack([reward, next_value, next_value * ends], -1)
    parts = (weights @ rhs).unbind(-1)
    return parts[0] + gamma_k * ((1.0 - lmbda_k) * parts[1] + lmbda_k * parts[2])


def _per_step(value: float | torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    if isinstance(value, torch.Tensor):
        return value.expand_as(like)
    return torch.full_like(like, value)


########################################################################
# TD(lambda) and TD(1)


def _td_lambda(
    fn: str,
    scan: Scan,
    gamma: float | torch.Tensor,
    lmbda: float | torch.Tensor,
    next_state_value: torch.Tensor,
    reward: torch.Tensor,
    done: torch.Tensor,
    terminated: torch.Tensor | None,
    rolling_gamma: bool | None,
    time_dim: int,
    state_value: torch.Tensor | None = None,
) -> torch.Tensor:
    x = prepare_inputs(
        fn,
        time_dim,
        gamma=gamma,
        lmbda=lmbda,
        state_value=state_value,
        next_state_value=next_state_value,
        reward=reward,
        done=done,
        terminated=terminated,
    )
    if rolling_gamma is None or rolling_gamma:
        returns = scan(
            *td_lambda_terms(x.gamma, x.lmbda, x.next_value, x.reward, x.not_done, x.not_terminated)
        )
    else:
        if not any(isinstance(v, torch.Tensor) and v.ndim for v in (x.gamma, x.lmbda)):
            raise RuntimeError(
                f"{fn}: rolling_gamma=False needs gamma or lmbda given per step (a tensor of the "
                f"inputs' shape {tuple(x.shape)}); with scalars use rolling_gamma=None or True"
            )
        returns = non_rolling_td_lambda(
            x.gamma, x.lmbda, x.next_value, x.reward, x.not_done, x.not_terminated
        )
    returns = from_time_last(returns, x.time_dim)
    return returns if state_value is None else returns - state_value


def td1_return_estimate(
    gamma: float | torch.Tensor,
    next_state_value: torch.Tensor,
    reward: torch.Tensor,
    done: torch.Tensor,
    terminated: torch.Tensor | None = None,
    rolling_gamma: bool | None = None,
    *,
    time_dim: int = -2,
) -> torch.Tensor:
    """TD(1) (discounted Monte-Carlo, bootstrapped at truncations) return, computed step by step.

    With ``v_t = (1 - terminated_t) * next_state_value_t`` and ``e_t = done_t`` (``e_{T-1} = 1``)::

        G_t = reward_t + gamma_t * (e_t * v_t + (1 - e_t) * G_{t+1})

    Args:
        gamma: discount, a number or a tensor of the inputs' shape.
        next_state_value: ``V(s_{t+1})``, shape ``[*B, T, *F]``.
        reward: ``r_t``, same shape.
        done: boolean, the trajectory ends at ``t``.
        terminated: boolean, ``s_{t+1}`` is terminal (no bootstrap). Defaults to ``done``.
        rolling_gamma: ``True``/``None`` (default): ``gamma_t`` discounts the step after ``t`` (products
            ``gamma_k gamma_{k+1} ...``). ``False``: the return from ``k`` uses ``gamma_k`` for its whole
            future (powers ``gamma_k ** n``); needs a per-step ``gamma``.
        time_dim: the time dimension. Defaults to ``-2``.

    Returns:
        the returns, with the inputs' shape.

    Examples:
        >>> import torch
        >>> done = torch.tensor([False, True, False]).view(3, 1)
        >>> td1_return_estimate(0.5, torch.full((3, 1), 2.0), torch.ones(3, 1), done).flatten()
        tensor([1.5000, 1.0000, 2.0000])
    """
    return _td_lambda(
        "td1_return_estimate", reverse_scan_loop, gamma, 1.0, next_state_value, reward, done,
        terminated, rolling_gamma, time_dim,
    )  # fmt: skip


def vec_td1_return_estimate(
    gamma: float | torch.Tensor,
    next_state_value: torch.Tensor,
    reward: torch.Tensor,
    done: torch.Tensor,
    terminated: torch.Tensor | None = None,
    rolling_gamma: bool | None = None,
    time_dim: int = -2,
) -> torch.Tensor:
    """TD(1) return computed with a parallel scan.

    Arguments, recursion and result: see :func:`td1_return_estimate` (exact, to float rounding).

    Examples:
        >>> import torch
        >>> done = torch.tensor([False, True, False]).view(3, 1)
        >>> vec_td1_return_estimate(0.5, torch.full((3, 1), 2.0), torch.ones(3, 1), done).flatten()
        tensor([1.5000, 1.0000, 2.0000])
    """
    return _td_lambda(
        "vec_td1_return_estimate", reverse_scan, gamma, 1.0, next_state_value, reward, done,
        terminated, rolling_gamma, time_dim,
    )  # fmt: skip


def td1_advantage_estimate(
    gamma: float | torch.Tensor,
    state_value: torch.Tensor,
    next_state_value: torch.Tensor,
    reward: torch.Tensor,
    done: torch.Tensor,
    terminated: torch.Tensor | None = None,
    rolling_gamma: bool | None = None,
    time_dim: int = -2,
) -> torch.Tensor:
    """TD(1) advantage: :func:`td1_return_estimate` minus ``state_value``.

    Args:
        gamma: discount, a number or a tensor of the inputs' shape.
        state_value: ``V(s_t)``, shape ``[*B, T, *F]``.
        next_state_value: ``V(s_{t+1})``, same shape.
        reward: ``r_t``, same shape.
        done: boolean, the trajectory ends at ``t``.
        terminated: boolean, ``s_{t+1}`` is terminal (no bootstrap). Defaults to ``done``.
        rolling_gamma: see :func:`td1_return_estimate`.
        time_dim: the time dimension. Defaults to ``-2``.

    Returns:
        the advantages, with the inputs' shape.

    Examples:
        >>> import torch
        >>> done = torch.tensor([False, True]).view(2, 1)
        >>> td1_advantage_estimate(0.5, torch.ones(2, 1), torch.ones(2, 1), torch.ones(2, 1), done).flatten()
        tensor([0.5000, 0.0000])
    """
    return _td_lambda(
        "td1_advantage_estimate", reverse_scan_loop, gamma, 1.0, next_state_value, reward, done,
        terminated, rolling_gamma, time_dim, state_value,
    )  # fmt: skip


def vec_td1_advantage_estimate(
    gamma: float | torch.Tensor,
    state_value: torch.Tensor,
    next_state_value: torch.Tensor,
    reward: torch.Tensor,
    done: torch.Tensor,
    terminated: torch.Tensor | None = None,
    rolling_gamma: bool | None = None,
    time_dim: int = -2,
) -> torch.Tensor:
    """TD(1) advantage computed with a parallel scan.

    Arguments, recursion and result: see :func:`td1_advantage_estimate` (exact, to float rounding).

    Examples:
        >>> import torch
        >>> done = torch.tensor([False, True]).view(2, 1)
        >>> ones = torch.ones(2, 1)
        >>> vec_td1_advantage_estimate(0.5, ones, ones, ones, done).flatten()
        tensor([0.5000, 0.0000])
    """
    return _td_lambda(
        "vec_td1_advantage_estimate", reverse_scan, gamma, 1.0, next_state_value, reward, done,
        terminated, rolling_gamma, time_dim, state_value,
    )  # fmt: skip


def td_lambda_return_estimate(
    gamma: float | torch.Tensor,
    lmbda: float | torch.Tensor,
    next_state_value: torch.Tensor,
    reward: torch.Tensor,
    done: torch.Tensor,
    terminated: torch.Tensor | None = None,
    rolling_gamma: bool | None = None,
    *,
    time_dim: int = -2,
) -> torch.Tensor:
    """TD(lambda) return, computed step by step.

    Sutton & Barto, "Reinforcement Learning: An Introduction", ch. 12 (http://incompleteideas.net/book/).
    With ``v_t = (1 - terminated_t) * next_state_value_t`` and ``e_t = done_t`` (``e_{T-1} = 1``)::

        G_t = reward_t + gamma_t * ((1 - lmbda_t) * v_t + lmbda_t * (e_t * v_t + (1 - e_t) * G_{t+1}))

    ``lmbda = 0`` gives the TD(0) return, ``lmbda = 1`` the TD(1) return.

    Args:
        gamma: discount, a number or a tensor of the inputs' shape.
        lmbda: lambda in ``[0, 1]``, a number or a tensor of the inputs' shape.
        next_state_value: ``V(s_{t+1})``, shape ``[*B, T, *F]``.
        reward: ``r_t``, same shape.
        done: boolean, the trajectory ends at ``t``.
        terminated: boolean, ``s_{t+1}`` is terminal (no bootstrap). Defaults to ``done``.
        rolling_gamma: see :func:`td1_return_estimate` (``False`` also holds ``lmbda_k`` fixed).
        time_dim: the time dimension. Defaults to ``-2``.

    Returns:
        the returns, with the inputs' shape.

    Examples:
        >>> import torch
        >>> done = torch.zeros(2, 1, dtype=torch.bool)
        >>> td_lambda_return_estimate(0.5, 0.5, torch.ones(2, 1), torch.ones(2, 1), done).flatten()
        tensor([1.6250, 1.5000])
    """
    return _td_lambda(
        "td_lambda_return_estimate", reverse_scan_loop, gamma, lmbda, next_state_value, reward,
        done, terminated, rolling_gamma, time_dim,
    )  # fmt: skip


def vec_td_lambda_return_estimate(
    gamma: float | torch.Tensor,
    lmbda: float | torch.Tensor,
    next_state_value: torch.Tensor,
    reward: torch.Tensor,
    done: torch.Tensor,
    terminated: torch.Tensor | None = None,
    rolling_gamma: bool | None = None,
    *,
    time_dim: int = -2,
) -> torch.Tensor:
    """TD(lambda) return computed with a parallel scan.

    Arguments, recursion and result: see :func:`td_lambda_return_estimate` (exact, to float rounding).

    Examples:
        >>> import torch
        >>> done = torch.zeros(2, 1, dtype=torch.bool)
        >>> vec_td_lambda_return_estimate(0.5, 0.5, torch.ones(2, 1), torch.ones(2, 1), done).flatten()
        tensor([1.6250, 1.5000])
    """
    return _td_lambda(
        "vec_td_lambda_return_estimate", reverse_scan, gamma, lmbda, next_state_value, reward,
        done, terminated, rolling_gamma, time_dim,
    )  # fmt: skip


def td_lambda_advantage_estimate(
    gamma: float | torch.Tensor,
    lmbda: float | torch.Tensor,
    state_value: torch.Tensor,
    next_state_value: torch.Tensor,
    reward: torch.Tensor,
    done: torch.Tensor,
    terminated: torch.Tensor | None = None,
    rolling_gamma: bool | None = None,
    time_dim: int = -2,
) -> torch.Tensor:
    """TD(lambda) advantage: :func:`td_lambda_return_estimate` minus ``state_value``.

    Args:
        gamma: discount, a number or a tensor of the inputs' shape.
        lmbda: lambda in ``[0, 1]``, a number or a tensor of the inputs' shape.
        state_value: ``V(s_t)``, shape ``[*B, T, *F]``.
        next_state_value: ``V(s_{t+1})``, same shape.
        reward: ``r_t``, same shape.
        done: boolean, the trajectory ends at ``t``.
        terminated: boolean, ``s_{t+1}`` is terminal (no bootstrap). Defaults to ``done``.
        rolling_gamma: see :func:`td1_return_estimate`.
        time_dim: the time dimension. Defaults to ``-2``.

    Returns:
        the advantages, with the inputs' shape.

    Examples:
        >>> import torch
        >>> done = torch.zeros(2, 1, dtype=torch.bool)
        >>> ones = torch.ones(2, 1)
        >>> td_lambda_advantage_estimate(0.5, 0.5, ones, ones, ones, done).flatten()
        tensor([0.6250, 0.5000])
    """
    return _td_lambda(
        "td_lambda_advantage_estimate", reverse_scan_loop, gamma, lmbda, next_state_value, reward,
        done, terminated, rolling_gamma, time_dim, state_value,
    )  # fmt: skip


def vec_td_lambda_advantage_estimate(
    gamma: float | torch.Tensor,
    lmbda: float | torch.Tensor,
    state_value: torch.Tensor,
    next_state_value: torch.Tensor,
    reward: torch.Tensor,
    done: torch.Tensor,
    terminated: torch.Tensor | None = None,
    rolling_gamma: bool | None = None,
    time_dim: int = -2,
) -> torch.Tensor:
    """TD(lambda) advantage computed with a parallel scan.

    Arguments, recursion and result: see :func:`td_lambda_advantage_estimate` (exact, to float rounding).

    Examples:
        >>> import torch
        >>> done = torch.zeros(2, 1, dtype=torch.bool)
        >>> ones = torch.ones(2, 1)
        >>> vec_td_lambda_advantage_estimate(0.5, 0.5, ones, ones, ones, done).flatten()
        tensor([0.6250, 0.5000])
    """
    return _td_lambda(
        "vec_td_lambda_advantage_estimate", reverse_scan, gamma, lmbda, next_state_value, reward,
        done, terminated, rolling_gamma, time_dim, state_value,
    )  # fmt: skip
