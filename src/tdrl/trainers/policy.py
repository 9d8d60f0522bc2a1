"""A trained policy from a run folder, for one's own code: :func:`load_policy`.

``tdrl.load_policy(RUN_DIR)`` rebuilds the run's policy from its ``config.yaml``, loads the weights of
``best.pt`` (or ``checkpoint.pt``) and returns a :class:`RunPolicy`: called on an observation tensor (or a
numpy array, as gymnasium returns it) it returns the action in the env's own format (an integer index for a
discrete gymnasium env, a float vector for a continuous one); called on a TensorDict it writes ``"action"`` as
a tdrl env reads it (one-hot for a discrete ``GymEnv``), so it is a policy for ``env.rollout``. The action
is deterministic by default (the mode of the policy's distribution).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch
from tensordict import TensorDict, TensorDictBase
from torch import nn

from tdrl.data.tensor_specs import MultiOneHot, OneHot, TensorSpec
from tdrl.envs import ExplorationType, set_exploration_type
from tdrl.trainers.checkpoint import get_rng_state, load_checkpoint, set_rng_state
from tdrl.trainers.run_parts import build_parts, load_run_config

__all__ = [
    "RunPolicy", "TensorPolicy", "load_policy", "policy_checkpoint"]

CHECKPOINT = "checkpoint.pt"
BEST = "best.pt"


class RunPolicy(nn.Module):
    """A run's policy: an observation in, an action out (see the module docstring for the two formats).

    Args:
        policy: the TensorDict policy of the run (reads ``in_keys``, writes ``"action"``).
        observation_spec: the spec of each entry the policy reads, for one env (no batch dims).
        action_spec: the env's action spec, for one env.
        deterministic: act with the mode of the policy's distribution (``False``: sample from it).
        source: the checkpoint the weights came from (for messages and ``repr``).

    Examples:
        >>> from tensordict.nn import TensorDictModule
        >>> from tdrl.data import Bounded, OneHot
        >>> net = TensorDictModule(nn.Linear(4, 2), ["observation"], ["action"])
        >>> spec = OneHot(2)
        >>> policy = RunPolicy(net, {"observation": Bounded(-1, 1, shape=(4,))}, spec)
        >>> policy(torch.zeros(4)).shape, policy(torch.zeros(3, 4)).dtype
        (torch.Size([]), torch.int64)
    """

    def __init__(self, policy: nn.Module, observation_spec: dict[Any, TensorSpec], action_spec: TensorSpec, *,
                 deterministic: bool = True, source: str | os.PathLike | None = None) -> None:
        super().__init__()
        self.policy = policy
        self.in_keys = list(observation_spec)
        # in_keys + out_keys: env.rollout and the collectors then call it on TensorDicts (TorchRL's rule).
        self.out_keys = list(getattr(policy, "out_keys", ["action"]))
        self.observation_spec = dict(observation_spec)
        self.action_spec = action_spec
        self.exploration_type = ExplorationType.DETERMINISTIC if deterministic else ExplorationType.RANDOM
        self.source = None if source is None else Path(source)
        self.eval()

    def extra_repr(self) -> str:
        return f"in_keys={self.in_keys}, exploration={self.exploration_type.name.lower()}, source={self.source}"

    def _to_env_action(self, action: torch.Tensor) -> torch.Tensor:
        # Gymnasium's Discrete / MultiDiscrete take indices; tdrl's GymEnv exchanges one-hot vectors.
        if isinstance(self.action_spec, (OneHot, MultiOneHot)):
            return self.action_spec.to_categorical(action)
        return action

    def act(self, observation: torch.Tensor) -> torch.Tensor:
        """One observation tensor (``(*batch, *obs_shape)``) to the env-format action; no grad handling here.

        This is the traceable core that :func:`~tdrl.trainers.policy_export.export_policy` exports.
        """
        if len(self.in_keys) != 1:
            raise ValueError(f"this policy reads {self.in_keys}: pass a TensorDict with these entries, not a tensor")
        key = self.in_keys[0]
        spec = self.observation_spec[key]
        n = len(spec.shape)
        if tuple(observation.shape[observation.ndim - n:]) != tuple(spec.shape) or observation.ndim < n:
            raise ValueError(f"observation of shape {tuple(observation.shape)}: expected (*batch, "
                             f"{', '.join(map(str, spec.shape))}) for entry {key!r}")
        observation = observation.to(spec.dtype)
        td = TensorDict({key: observation}, batch_size=observation.shape[: observation.ndim - n])
        with set_exploration_type(self.exploration_type):
            return self._to_env_action(self.policy(td)["action"])

    def forward(self, observation: torch.Tensor | np.ndarray | TensorDictBase) -> torch.Tensor | TensorDictBase:
        """The action for ``observation`` (tensor/array in: action tensor out; TensorDict in: ``"action"`` set)."""
        with torch.no_grad():
            if isinstance(observation, TensorDictBase):
                missing = [k for k in self.in_keys if k not in observation.keys(True)]
                if missing:
                    raise KeyError(f"the TensorDict lacks {missing}; this policy reads {self.in_keys}")
                with set_exploration_type(self.exploration_type):
                    return self.policy(observation)
            return self.act(torch.as_tensor(observation))


class TensorPolicy(nn.Module):
    """``observation tensor -> action tensor``: a :class:`RunPolicy` with one signature, for exporting.

    Examples:
        >>> from tensordict.nn import TensorDictModule
        >>> from tdrl.data import Unbounded
        >>> net = TensorDictModule(nn.Linear(3, 1), ["observation"], ["action"])
        >>> TensorPolicy(RunPolicy(net, {"observation": Unbounded(3)}, Unbounded(1)))(torch.zeros(2, 3)).shape
        torch.Size([2, 1])
    """

    def __init__(self, policy: RunPolicy) -> None:
        super().__init__()
        self.run_policy = policy

    def forward(self, observation: torch.Tensor) -> torch.Tensor:
        return self.run_policy.act(observation)


def _listing(path: Path) -> str:
    names = sorted(p.name + ("/" if p.is_dir() else "") for p in path.iterdir()) if path.is_dir() else []
    return ", ".join(names[:20]) + (", ..." if len(names) > 20 else "") if names else "nothing"


def _run_folder(run_dir: str | os.PathLike) -> Path:
    path = Path(run_dir)
    if not path.is_dir():
        parent = path.parent
        if not parent.is_dir():
            raise FileNotFoundError(f"no run folder at {path} (and no folder {parent})")
        runs = sorted(p.name for p in parent.iterdir() if (p / "config.yaml").is_file())
        shown = ", ".join(runs[:10]) + (", ..." if len(runs) > 10 else "") if runs else "none"
        raise FileNotFoundError(f"no run folder at {path} (run folders in {parent}: {shown})")
    if not (path / "config.yaml").exists():
        raise FileNotFoundError(f"{path} is not a run folder: it has no config.yaml (it holds: {_listing(path)})")
    return path


def policy_checkpoint(run_dir: str | os.PathLike, which: Literal["best", "last"] = "best") -> Path:
    """The checkpoint :func:`load_policy` reads: ``best.pt`` for ``"best"`` when the run kept one, else ``checkpoint.pt``.

    Raises:
        FileNotFoundError: no run folder, or no checkpoint in it; the message lists what the folder holds.
    """
    if which not in ("best", "last"):
        raise ValueError(f"which must be 'best' or 'last', got {which!r}")
    path = _run_folder(run_dir)
    candidates = [path / BEST, path / CHECKPOINT] if which == "best" else [path / CHECKPOINT]
    for candidate in candidates:
        # load_checkpoint falls back to <file>.prev, so a folder with only the previous copy still loads.
        if candidate.exists() or candidate.with_name(candidate.name + ".prev").exists():
            return candidate
    wanted = " nor ".join(c.name for c in candidates)
    raise FileNotFoundError(f"{path} has no {wanted} (it holds: {_listing(path)}); the run may have stopped "
                            "before its first checkpoint")


def _specs(env: Any, in_keys: list[Any]) -> tuple[dict[Any, TensorSpec], TensorSpec]:
    n = len(env.batch_size)
    # One env's specs: a batched env (a TorchRL-format config's vectorised env) has its batch dims in front.
    obs = {k: env.observation_spec[k][(0,) * n] if n else env.observation_spec[k] for k in in_keys}
    action = env.action_spec[(0,) * n] if n else env.action_spec
    return obs, action


def load_policy(run_dir: str | os.PathLike, which: Literal["best", "last"] = "best", *,
                deterministic: bool = True) -> RunPolicy:
    """The trained policy of a run folder, as a module from observation to action.

    Args:
        run_dir: a folder written by ``tdrl train`` (either config format).
        which: ``"best"``: the best periodically evaluated policy (``best.pt``) when the run kept one, else the
            last checkpoint; ``"last"``: the last checkpoint (``checkpoint.pt``).
        deterministic: the mode of the policy's distribution (``False``: sample, as during training).

    Returns:
        A :class:`RunPolicy` in eval mode.

    Raises:
        FileNotFoundError: no run folder or no checkpoint; the message names the path and what it holds.

    Examples:
        >>> import tdrl
        >>> tdrl.load_policy("no/such/run")
        Traceback (most recent call last):
        ...
        FileNotFoundError: no run folder at no/such/run (and no folder no/such)
    """
    source = policy_checkpoint(run_dir, which)
    cfg = load_run_config(source.parent)
    rng = get_rng_state()  # building the parts seeds the global RNGs with the run's seed: not the caller's
    try:
        parts = build_parts(cfg, with_trainer=False)
        env = parts.make_eval_env(1)
    finally:
        set_rng_state(rng)
    try:
        in_keys = [k for k in parts.policy.in_keys if k in env.observation_spec.keys(True)]
        obs_spec, action_spec = _specs(env, in_keys)
    finally:
        env.close()
        if parts.trainer is not None:  # a TorchRL-format config builds its trainer (and collector) whole
            parts.trainer.collector.shutdown()
    parts.loss.load_state_dict(load_checkpoint(source)["loss_module"])
    return RunPolicy(parts.policy, obs_spec, action_spec, deterministic=deterministic, source=source)
