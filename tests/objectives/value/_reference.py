"""Plain step-by-step reference implementations of the value estimators (time at dim -2).

Written for clarity, not speed: one Python iteration per time step, float64, no shared code with
``tdrl.objectives.value``. ``gamma``/``lmbda`` are floats or tensors of the inputs' shape.
"""

from __future__ import annotations

import torch


def _at(x, t):
    return x[..., t, :] if isinstance(x, torch.Tensor) and x.ndim else x


def _done(done, terminated):
    return done if terminated is None else done | terminated


def ref_gae(gamma, lmbda, value, next_value, reward, done, terminated=None):
    terminated = done if terminated is None else terminated
    done = _done(done, terminated)
    adv = torch.zeros_like(reward)
    nxt = torch.zeros_like(reward[..., 0, :])
    for t in reversed(range(reward.shape[-2])):
        g, lm = _at(gamma, t), _at(lmbda, t)
        boot = torch.where(terminated[..., t, :], 0.0, next_value[..., t, :])
        delta = reward[..., t, :] + g * boot - value[..., t, :]
        nxt = torch.where(done[..., t, :], 0.0, nxt)
        adv[..., t, :] = nxt = delta + g * lm * nxt
    return adv, adv + value


def _td_lambda_from(k, gamma_k, lmbda_k, next_value, reward, done, terminated, rolling):
    """Return from step k; rolling=False holds gamma/lmbda at their step-k values."""
    num_steps = reward.shape[-2]
    g = None
    for t in reversed(range(k, num_steps)):
        gt = _at(gamma_k, t) if rolling else gamma_k
        lt = _at(lmbda_k, t) if rolling else lmbda_k
        nv = torch.where(terminated[..., t, :], 0.0, next_value[..., t, :])
        if g is None:
            g = nv
        g = torch.where(done[..., t, :], nv, g)
        g = reward[..., t, :] + gt * ((1 - lt) * nv + lt * g)
    return g


def ref_td_lambda(gamma, lmbda, next_value, reward, done, terminated=None, rolling=True):
    terminated = done if terminated is None else terminated
    done = _done(done, terminated)
    out = torch.zeros_like(reward)
    num_steps = reward.shape[-2]
    if rolling:
        g = None
        for t in reversed(range(num_steps)):
            nv = torch.where(terminated[..., t, :], 0.0, next_value[..., t, :])
            g = nv if g is None else torch.where(done[..., t, :], nv, g)
            lt = _at(lmbda, t)
            out[..., t, :] = g = reward[..., t, :] + _at(gamma, t) * ((1 - lt) * nv + lt * g)
        return out
    for k in range(num_steps):
        out[..., k, :] = _td_lambda_from(
            k, _at(gamma, k), _at(lmbda, k), next_value, reward, done, terminated, rolling=False
        )
    return out


def ref_vtrace(gamma, log_pi, log_mu, value, next_value, reward, done, terminated=None, rho_thresh=1.0,
               c_thresh=1.0):  # fmt: skip
    terminated = done if terminated is None else terminated
    done = _done(done, terminated)
    num_steps = reward.shape[-2]
    rho = (log_pi - log_mu).exp()
    crho = rho.clamp(max=rho_thresh)
    cc = rho.clamp(max=c_thresh)
    vs = torch.zeros_like(reward)
    acc = torch.zeros_like(reward[..., 0, :])
    for t in reversed(range(num_steps)):
        g = _at(gamma, t)
        boot = torch.where(terminated[..., t, :], 0.0, next_value[..., t, :])
        delta = crho[..., t, :] * (reward[..., t, :] + g * boot - value[..., t, :])
        acc = torch.where(done[..., t, :], 0.0, acc)
        acc = delta + g * cc[..., t, :] * acc
        vs[..., t, :] = acc + value[..., t, :]
    adv = torch.zeros_like(reward)
    for t in range(num_steps):
        g = _at(gamma, t)
        if t == num_steps - 1:
            nxt = next_value[..., t, :]
        else:
            nxt = torch.where(done[..., t, :], next_value[..., t, :], vs[..., t + 1, :])
        nxt = torch.where(terminated[..., t, :], 0.0, nxt)
        adv[..., t, :] = crho[..., t, :] * (reward[..., t, :] + g * nxt - value[..., t, :])
    return adv, vs


def ref_reward2go(reward, done, gamma):
    out = torch.zeros_like(reward)
    acc = torch.zeros_like(reward[..., 0, :])
    for t in reversed(range(reward.shape[-2])):
        acc = torch.where(done[..., t, :], 0.0, acc)
        out[..., t, :] = acc = reward[..., t, :] + _at(gamma, t) * acc
    return out
