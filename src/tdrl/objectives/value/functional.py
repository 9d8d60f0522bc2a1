"""Functional value estimators: GAE, TD(0), TD(1), TD(lambda), V-trace and reward-to-go.

Pure functions of tensors shaped ``[*batch, T, *feature]`` (time at ``time_dim``, default ``-2``), with
TorchRL's names and signatures. Conventions shared by all of them:

* ``done[t]`` ends the trajectory at step ``t``: nothing after ``t`` flows back into ``t``.
* ``terminated[t]`` (defaults to ``done``) says whether ``t`` ended in a terminal state: if so,
  ``next_state_value[t]`` is ignored (no bootstrap). A step that is done but not terminated is a
  truncation: the recursion restarts but ``next_state_value[t]`` still bootstraps the return. A terminated
  step is treated as done even where ``done`` is not set.
* ``gamma``/``lmbda`` are numbers, one-element tensors or tensors of the inputs' shape (one value per
  step: ``gamma[t]`` discounts what comes after step ``t``).

Every estimator is a backward linear recurrence ``y_t = b_t + c_t * y_{t+1}``. The plain forms
(``generalized_advantage_estimate``, ``td1_return_estimate``, ...) evaluate it step by step; the ``vec_``
forms with a logarithmic-depth scan (:mod:`._scan`). Both give the same values up to float rounding, and
``lmbda`` may be anything in ``[0, 1]``, including the end points.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from tdrl.objectives.value._scan import reverse_scan, reverse_scan_loop
from tdrl.objectives.value._td import (
    td1_advantage_estimate,
    td1_return_estimate,
    td_lambda_advantage_estimate,
    td_lambda_return_estimate,
    vec_td1_advantage_estimate,
    vec_td1_return_estimate,
    vec_td_lambda_advantage_estimate,
    vec_td_lambda_return_estimate,
)
from tdrl.objectives.value.utils import (
    check_done,
    check_time_dim,
    coefficient,
    from_time_last,
    not_mask,
    prepare_inputs,
    same_shape,
    to_time_last,
)

__all__ = [
    "generalized_advantage_estimate",
    "reward2go",
    "td0_advantage_estimate",
    "td0_return_estimate",
    "td1_advantage_estimate",
    "td1_return_estimate",
    "td_lambda_advantage_estimate",
    "td_lambda_return_estimate",
    "vec_generalized_advantage_estimate",
    "vec_td1_advantage_estimate",
    "vec_td1_return_estimate",
    "vec_td_lambda_advantage_estimate",
    "vec_td_lambda_return_estimate",
    "vtrace_advantage_estimate",
]

Scan = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


########################################################################
# GAE


def _gae(
    fn: str,
    scan: Scan,
    gamma: float | torch.Tensor,
    lmbda: float | torch.Tensor,
    state_value: torch.Tensor,
    next_state_value: torch.Tensor,
    reward: torch.Tensor,
    done: torch.Tensor,
    terminated: torch.Tensor | None,
    time_dim: int,
) -> tuple[torch.Tensor, torch.Tensor]:
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
    gamma = x.gamma
    # GAE (Schulman et al. 2016, eq. 16): delta_t bootstraps unless terminated; the lambda-trace stops at done.
    if isinstance(gamma, float):
        delta = torch.addcmul(x.reward, x.next_value, x.not_terminated, value=gamma)
    else:
        delta = torch.addcmul(x.reward, x.next_value, x.not_terminated * gamma)
    delta = delta.sub_(x.state_value(fn))
    advantage = from_time_last(scan(delta, x.not_done * (gamma * x.lmbda)), x.time_dim)
    return advantage, advantage + state_value


def generalized_advantage_estimate(
    gamma: float | torch.Tensor,
    lmbda: float | torch.Tensor,
    state_value: torch.Tensor,
    next_state_value: torch.Tensor,
    reward: torch.Tensor,
    done: torch.Tensor,
    terminated: torch.Tensor | None = None,
    *,
    time_dim: int = -2,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Generalized advantage estimate (GAE), computed step by step.

    Schulman et al., "High-Dimensional Continuous Control Using Generalized Advantage Estimation",
    https://arxiv.org/abs/1506.02438. With ``A_T = 0``::

        delta_t = reward_t + gamma_t * (1 - terminated_t) * next_state_value_t - state_value_t
        A_t     = delta_t + gamma_t * lmbda_t * (1 - done_t) * A_{t+1}
        value_target_t = A_t + state_value_t

    Args:
        gamma: discount, a number or a tensor of the inputs' shape.
        lmbda: GAE mixing parameter in ``[0, 1]``, a number or a tensor of the inputs' shape.
        state_value: ``V(s_t)``, shape ``[*B, T, *F]``.
        next_state_value: ``V(s_{t+1})``, same shape.
        reward: ``r_t``, same shape.
        done: boolean, the trajectory ends at ``t``.
        terminated: boolean, ``s_{t+1}`` is terminal (no bootstrap). Defaults to ``done``.
        time_dim: the time dimension. Defaults to ``-2``.

    Returns:
        ``(advantage, value_target)``, both with the inputs' shape.

    Examples:
        >>> import torch
        >>> v = torch.zeros(1, 3, 1)
        >>> done = torch.tensor([False, False, True]).view(1, 3, 1)
        >>> adv, target = generalized_advantage_estimate(0.5, 1.0, v, v, torch.ones(1, 3, 1), done)
        >>> adv.flatten()
        tensor([1.7500, 1.5000, 1.0000])
    """
    return _gae(
        "generalized_advantage_estimate",
        reverse_scan_loop,
        gamma,
        lmbda,
        state_value,
        next_state_value,
        reward,
        done,
        terminated,
        time_dim,
    )


def vec_generalized_advantage_estimate(
    gamma: float | torch.Tensor,
    lmbda: float | torch.Tensor,
    state_value: torch.Tensor,
    next_state_value: torch.Tensor,
    reward: torch.Tensor,
    done: torch.Tensor,
    terminated: torch.Tensor | None = None,
    *,
    time_dim: int = -2,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Generalized advantage estimate, computed with a parallel scan over time.

    Same recursion, arguments and results as :func:`generalized_advantage_estimate` (exact, no truncated
    geometric series), in ``ceil(log2 T)`` vectorized rounds.

    Examples:
        >>> import torch
        >>> v = torch.zeros(1, 3, 1)
        >>> done = torch.tensor([False, False, True]).view(1, 3, 1)
        >>> adv, target = vec_generalized_advantage_estimate(0.5, 1.0, v, v, torch.ones(1, 3, 1), done)
        >>> adv.flatten()
        tensor([1.7500, 1.5000, 1.0000])
    """
    return _gae(
        "vec_generalized_advantage_estimate",
        reverse_scan,
        gamma,
        lmbda,
        state_value,
        next_state_value,
        reward,
        done,
        terminated,
        time_dim,
    )


########################################################################
# TD(0)


def td0_return_estimate(
    gamma: float | torch.Tensor,
    next_state_value: torch.Tensor,
    reward: torch.Tensor,
    terminated: torch.Tensor | None = None,
    *,
    done: torch.Tensor | None = None,
) -> torch.Tensor:
    """One-step (TD(0)) return: ``reward_t + gamma_t * (1 - terminated_t) * next_state_value_t``.

    Args:
        gamma: discount, a number or a tensor of the inputs' shape.
        next_state_value: ``V(s_{t+1})``, any shape.
        reward: ``r_t``, same shape.
        terminated: boolean, ``s_{t+1}`` is terminal.
        done: accepted in place of ``terminated`` (TorchRL's deprecated spelling); used only when
            ``terminated`` is not given.

    Returns:
        the returns, shaped like ``reward``.

    Examples:
        >>> import torch
        >>> td0_return_estimate(0.5, torch.ones(3), torch.ones(3), torch.tensor([False, False, True]))
        tensor([1.5000, 1.5000, 1.0000])
    """
    fn = "td0_return_estimate"
    if terminated is None:
        terminated = done
    if terminated is None:
        raise TypeError(f"{fn}: pass `terminated` (or the deprecated `done`)")
    shape = same_shape(fn, next_state_value=next_state_value, reward=reward, terminated=terminated)
    check_done(fn, terminated=terminated)
    if isinstance(gamma, (int, float)) and not isinstance(gamma, bool):
        # the uint8 mask is promoted inside the kernel: the output is the only full-size allocation
        return torch.addcmul(reward, next_state_value, not_mask(terminated), value=gamma)
    gamma = coefficient(fn, "gamma", gamma, shape, len(shape) - 1, reward)
    return torch.addcmul(reward, next_state_value, not_mask(terminated, reward) * gamma)


def td0_advantage_estimate(
    gamma: float | torch.Tensor,
    state_value: torch.Tensor,
    next_state_value: torch.Tensor,
    reward: torch.Tensor,
    done: torch.Tensor,
    terminated: torch.Tensor | None = None,
) -> torch.Tensor:
    """One-step (TD(0)) advantage: :func:`td0_return_estimate` minus ``state_value``.

    Args:
        gamma: discount, a number or a tensor of the inputs' shape.
        state_value: ``V(s_t)``, any shape.
        next_state_value: ``V(s_{t+1})``, same shape.
        reward: ``r_t``, same shape.
        done: boolean end-of-trajectory flag (used as ``terminated`` when that is not given).
        terminated: boolean, ``s_{t+1}`` is terminal. Defaults to ``done``.

    Returns:
        the advantages, shaped like ``reward``.

    Examples:
        >>> import torch
        >>> done = torch.tensor([False, True])
        >>> td0_advantage_estimate(0.5, torch.ones(2), torch.ones(2), torch.ones(2), done)
        tensor([0.5000, 0.0000])
    """
    fn = "td0_advantage_estimate"
    same_shape(
        fn,
        state_value=state_value,
        next_state_value=next_state_value,
        reward=reward,
        done=done,
        terminated=terminated,
    )
    check_done(fn, done=done)
    terminated = done if terminated is None else terminated
    return td0_return_estimate(gamma, next_state_value, reward, terminated) - state_value


########################################################################
# V-trace


def vtrace_advantage_estimate(
    gamma: float | torch.Tensor,
    log_pi: torch.Tensor,
    log_mu: torch.Tensor,
    state_value: torch.Tensor,
    next_state_value: torch.Tensor,
    reward: torch.Tensor,
    done: torch.Tensor,
    terminated: torch.Tensor | None = None,
    rho_thresh: float | torch.Tensor = 1.0,
    c_thresh: float | torch.Tensor = 1.0,
    time_dim: int = -2,
) -> tuple[torch.Tensor, torch.Tensor]:
    """V-trace off-policy value targets and advantages.

    Espeholt et al., "IMPALA: Scalable Distributed Deep-RL with Importance Weighted Actor-Learner
    Architectures", https://arxiv.org/abs/1802.01561. With ``rho_t = exp(log_pi_t - log_mu_t)``,
    ``nt_t = 1 - terminated_t`` and ``(vs - V)_T = 0``::

        delta_t   = min(rho_t, rho_thresh) * (reward_t + gamma * nt_t * next_state_value_t - state_value_t)
        (vs - V)_t = delta_t + gamma * (1 - done_t) * min(rho_t, c_thresh) * (vs - V)_{t+1}
        vs'_t     = next_state_value_t if done_t or t = T - 1 else vs_{t+1}
        advantage_t = min(rho_t, rho_thresh) * (reward_t + gamma * nt_t * vs'_t - state_value_t)

    Args:
        gamma: discount, a number or a tensor of the inputs' shape.
        log_pi: log-probabilities of the actions under the policy being evaluated (TorchRL's argument
            order: ``rho = exp(log_pi - log_mu)``).
        log_mu: log-probabilities of the actions under the behaviour policy.
        state_value: ``V(s_t)``, shape ``[*B, T, *F]``.
        next_state_value: ``V(s_{t+1})``, same shape.
        reward: ``r_t``, same shape.
        done: boolean, the trajectory ends at ``t``.
        terminated: boolean, ``s_{t+1}`` is terminal (no bootstrap). Defaults to ``done``.
        rho_thresh: clipping of the importance weights in the TD errors.
        c_thresh: clipping of the importance weights in the trace.
        time_dim: the time dimension. Defaults to ``-2``.

    Returns:
        ``(advantage, vs)``: the policy-gradient advantages and the value targets.

    Examples:
        >>> import torch
        >>> zeros, done = torch.zeros(2, 1), torch.zeros(2, 1, dtype=torch.bool)
        >>> adv, vs = vtrace_advantage_estimate(0.5, zeros, zeros, zeros, zeros, torch.ones(2, 1), done)
        >>> vs.flatten(), adv.flatten()
        (tensor([1.5000, 1.0000]), tensor([1.5000, 1.0000]))
    """
    fn = "vtrace_advantage_estimate"
    x = prepare_inputs(
        fn,
        time_dim,
        gamma=gamma,
        state_value=state_value,
        next_state_value=next_state_value,
        reward=reward,
        done=done,
        terminated=terminated,
    )
    for name, logp in (("log_pi", log_pi), ("log_mu", log_mu)):
        coefficient(fn, name, logp, x.shape, x.time_dim, reward)  # shape check only
    rho = to_time_last(torch.exp(log_pi - log_mu).expand(x.shape), x.time_dim)
    rho_clipped = torch.clamp(rho, max=_thresh(rho_thresh, rho))
    c_clipped = torch.clamp(rho, max=_thresh(c_thresh, rho))
    bootstrap, value = x.not_terminated * x.gamma, x.state_value(fn)
    deltas = rho_clipped * (x.reward + bootstrap * x.next_value - value)
    vs = reverse_scan(deltas, x.not_done * x.gamma * c_clipped) + value
    # IMPALA's v_{s+1} (Espeholt et al. 2018, eq. 1): the next step's corrected value, V(s_T) after the last.
    vs_next = torch.cat([vs[..., 1:], x.next_value[..., -1:]], -1)
    # at a trajectory end the next entry belongs to another trajectory: bootstrap from V(s_{t+1})
    vs_next = vs_next * x.not_done + x.next_value * (1.0 - x.not_done)
    advantage = rho_clipped * (x.reward + bootstrap * vs_next - value)
    return from_time_last(advantage, x.time_dim), from_time_last(vs, x.time_dim)


def _thresh(value: float | torch.Tensor, like: torch.Tensor) -> float | torch.Tensor:
    if isinstance(value, torch.Tensor):
        return value.to(device=like.device, dtype=like.dtype)
    return float(value)


########################################################################
# Reward to go


def reward2go(
    reward: torch.Tensor,
    done: torch.Tensor,
    gamma: float | torch.Tensor,
    *,
    time_dim: int = -2,
) -> torch.Tensor:
    """Discounted sum of the future rewards of each trajectory (Monte-Carlo return, no bootstrap).

    With ``R_T = 0``: ``R_t = reward_t + gamma_t * (1 - done_t) * R_{t+1}``.

    Args:
        reward: ``r_t``, shape ``[*B, T, *F]``.
        done: boolean, the trajectory ends at ``t``.
        gamma: discount, a number or a tensor of the inputs' shape.
        time_dim: the time dimension. Defaults to ``-2``.

    Returns:
        the rewards-to-go, shaped like ``reward``.

    Examples:
        >>> import torch
        >>> done = torch.tensor([False, True, False, True]).view(4, 1)
        >>> reward2go(torch.ones(4, 1), done, 0.5).flatten()
        tensor([1.5000, 1.0000, 1.5000, 1.0000])
    """
    fn = "reward2go"
    shape = same_shape(fn, reward=reward, done=done)
    check_done(fn, done=done)
    td = check_time_dim(fn, time_dim, shape)
    gamma = coefficient(fn, "gamma", gamma, shape, td, reward)
    reward = to_time_last(reward, td)
    rtg = reverse_scan(reward, not_mask(to_time_last(done, td), reward) * gamma)
    return from_time_last(rtg, td)
