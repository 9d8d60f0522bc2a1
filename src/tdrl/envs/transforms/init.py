"""Episode-start transforms: ``InitTracker`` (marks first steps), ``TensorDictPrimer`` (fills states) and
``gSDENoise`` (the per-episode noise of gSDE exploration)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from tensordict import TensorDictBase
from tensordict.utils import NestedKey

from tdrl.data.tensor_specs import Categorical, Composite, Unbounded
from tdrl.envs.transforms._base import Transform
from tdrl.envs.transforms._utils import done_prefixes, prefixed, reset_mask

__all__ = ["InitTracker", "TensorDictPrimer", "gSDENoise"]


class InitTracker(Transform):
    """Writes ``is_init``: True on the first step of an episode (reset output), False after.

    Args:
        init_key: the name of the flag, written next to each ``done`` entry.

    Examples:
        >>> from tdrl.envs import PendulumEnv, TransformedEnv
        >>> env = TransformedEnv(PendulumEnv(seed=0), InitTracker())
        >>> env.rollout(3)["is_init"].squeeze(-1)
        tensor([ True, False, False])
    """

    def __init__(self, init_key: str = "is_init") -> None:
        if not isinstance(init_key, str):
            raise TypeError(f"InitTracker: init_key must be a str, got {init_key!r}")
        self.init_key = init_key
        super().__init__()
        self._set_prefixes([()])

    def _set_prefixes(self, prefixes: list[tuple[str, ...]]) -> None:
        self._groups = [
            (prefixed(p, self.init_key), prefixed(p, "done"), prefixed(p, "_reset")) for p in prefixes
        ]

    @property
    def out_keys(self) -> list[NestedKey]:
        return [g[0] for g in self._groups] if hasattr(self, "_groups") else []

    @out_keys.setter
    def out_keys(self, value: Any) -> None:
        pass

    def _added_keys(self) -> list[NestedKey]:
        return self.out_keys

    def _reset(self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase) -> TensorDictBase:
        for init_key, done_key, reset_key in self._groups:
            done = tensordict_reset.get(done_key, None)
            shape = done.shape if done is not None else (*tensordict_reset.batch_size, 1)
            device = done.device if done is not None else tensordict_reset.device
            mask = reset_mask(tensordict, reset_key, torch.Size(shape), device)
            flag = torch.ones(shape, dtype=torch.bool, device=device) if mask is None else mask.clone()
            tensordict_reset.set(init_key, flag)
        return tensordict_reset

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        for init_key, done_key, _ in self._groups:
            done = next_tensordict.get(done_key, None)
            shape = done.shape if done is not None else (*next_tensordict.batch_size, 1)
            device = done.device if done is not None else next_tensordict.device
            next_tensordict.set(init_key, torch.zeros(shape, dtype=torch.bool, device=device))
        return next_tensordict

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """On plain data there is no episode start to see: the data is returned unchanged."""
        return tensordict

    def transform_output_spec(self, output_spec: Any) -> Any:
        output_spec = output_spec.clone()
        done_spec = output_spec["full_done_spec"]
        self._set_prefixes(done_prefixes(done_spec))
        obs_spec = output_spec["full_observation_spec"]
        for init_key, done_key, _ in self._groups:
            leaf = done_spec[done_key]
            obs_spec[init_key] = Categorical(2, shape=leaf.shape, dtype=torch.bool, device=leaf.device)
        output_spec["full_observation_spec"] = obs_spec
        return output_spec

    def __repr__(self) -> str:
        return f"InitTracker(init_key={self.init_key!r})"


class TensorDictPrimer(Transform):
    """Adds entries (e.g. recurrent states) to reset outputs so that policies find them in the input.

    Args:
        primers: a ``Composite`` or a dict of specs, one per entry (or given as keyword arguments).
        random: fill with ``spec.rand()`` instead of ``default_value``.
        default_value: a value or a callable (per key with a dict), used on reset.
        reset_key: the ``_reset`` entry selecting which batch elements are reset.
        expand_specs: ``True``: the specs are unbatched and get the env's batch size in front; ``False``: they
            already carry it; ``None`` (default): a ``Composite`` of primers whose shape is the env's batch
            size is taken as batched, otherwise a spec gets the batch size in front when its shape does not
            start with it.
        single_default_value: use ``default_value`` (a dict) as-is for every key.
        call_before_env_reset: fill the reset input (before the base env resets) rather than its output.
        **kwargs: specs by name.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from tdrl.data import Unbounded
        >>> p = TensorDictPrimer(hidden=Unbounded((3,)), default_value=1.0)
        >>> p(TensorDict({}, [2]))["hidden"]
        tensor([[1., 1., 1.],
                [1., 1., 1.]])
    """

    def __init__(
        self,
        primers: dict | Composite | None = None,
        random: bool | None = None,
        default_value: float | Callable | dict[NestedKey, float] | dict[NestedKey, Callable] | None = None,
        reset_key: NestedKey | None = None,
        expand_specs: bool | None = None,
        single_default_value: bool = False,
        call_before_env_reset: bool = False,
        **kwargs: Any,
    ) -> None:
        if primers is not None and kwargs:
            raise ValueError(
                f"TensorDictPrimer: pass primers or keyword specs, not both (got {sorted(kwargs)})"
            )
        primers = kwargs if primers is None else primers
        if not isinstance(primers, Composite):
            primers = Composite(dict(primers))
        if random and default_value is not None:
            raise ValueError("TensorDictPrimer: random=True and default_value are mutually exclusive")
        self.primers = primers
        self.random = bool(random)
        keys = list(primers.keys(True, True))
        if isinstance(default_value, dict) and not single_default_value:
            missing = [k for k in keys if k not in default_value]
            if missing:
                raise KeyError(f"TensorDictPrimer: default_value has no entry for primer keys {missing}")
        self.default_value = 0.0 if default_value is None else default_value
        self.reset_key = reset_key
        self.expand_specs = expand_specs
        self.call_before_env_reset = call_before_env_reset
        super().__init__(in_keys=[], out_keys=keys)

    def _default(self, key: NestedKey) -> Any:
        value = self.default_value
        return value[key] if isinstance(value, dict) else value

    def _needs_batch(self, shape: torch.Size, batch_size: torch.Size) -> bool:
        # The primers' own batch shape decides first: a shape-only test cannot tell a batched [2, 3] spec
        # from an unbatched one whose first dim happens to equal the batch size (gSDE's [action_dim,
        # state_dim] noise on 2 envs with action_dim=2).
        if len(batch_size) and tuple(self.primers.shape) == tuple(batch_size):
            return False
        if self.expand_specs and not len(self.primers.shape):
            return True
        return tuple(shape[: len(batch_size)]) != tuple(batch_size)

    def _fill(self, key: NestedKey, batch_size: torch.Size) -> torch.Tensor:
        spec = self.primers[key]
        shape = spec.shape
        if self._needs_batch(shape, batch_size):
            shape = torch.Size([*batch_size, *shape])
        if self.random:
            return (spec if shape == spec.shape else spec.expand(*shape)).rand()
        value = self._default(key)
        if callable(value):
            out = value()
            return torch.as_tensor(out, dtype=spec.dtype, device=spec.device).expand(shape).clone()
        return torch.full(shape, value, dtype=spec.dtype, device=spec.device)

    def _prime(self, tensordict: TensorDictBase, previous: TensorDictBase | None) -> TensorDictBase:
        for key in self.out_keys:
            fresh = self._fill(key, tensordict.batch_size)
            prev = None if previous is None else previous.get(key, None)
            reset_key = self.reset_key or "_reset"
            mask = None if prev is None else reset_mask(previous, reset_key, prev.shape, prev.device)
            tensordict.set(key, fresh if mask is None else torch.where(mask, fresh, prev))
        return tensordict

    def _reset(self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase) -> TensorDictBase:
        if self.call_before_env_reset:
            return tensordict_reset
        return self._prime(tensordict_reset, tensordict)

    def _reset_env_preprocess(self, tensordict: TensorDictBase | None) -> TensorDictBase | None:
        if self.call_before_env_reset and tensordict is not None:
            return self._prime(tensordict, tensordict.copy())
        return tensordict

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        # Entries that the policy did not update are carried over from the step input.
        for key in self.out_keys:
            if key not in next_tensordict.keys(True, True):
                value = tensordict.get(key, None)
                if value is not None:
                    next_tensordict.set(key, value)
        return next_tensordict

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        for key in self.out_keys:
            if tensordict.get(key, None) is None:
                tensordict.set(key, self._fill(key, tensordict.batch_size))
        return tensordict

    def _expanded(self, spec: Any, batch_size: torch.Size) -> Any:
        if self.expand_specs is False or not self._needs_batch(spec.shape, batch_size):
            return spec
        return spec.expand(*batch_size, *spec.shape)

    def transform_observation_spec(self, observation_spec: Any) -> Any:
        batch_size = observation_spec.shape
        for key in self.out_keys:
            observation_spec[key] = self._expanded(self.primers[key].clone(), batch_size)
        return observation_spec

    def transform_state_spec(self, state_spec: Any) -> Any:
        batch_size = state_spec.shape
        for key in self.out_keys:
            state_spec[key] = self._expanded(self.primers[key].clone(), batch_size)
        return state_spec

    def _inv_call(self, tensordict: TensorDictBase) -> TensorDictBase:
        return tensordict

    def __repr__(self) -> str:
        return f"TensorDictPrimer(keys={self.out_keys}, random={self.random})"


class gSDENoise(TensorDictPrimer):  # noqa: N801 - TorchRL's name
    """Primes ``"_eps_gSDE"``, the noise matrix of :class:`~tdrl.modules.gSDEModule`, on every reset.

    With ``state_dim`` and ``action_dim`` the entry is ``[*shape, action_dim, state_dim]`` and a reset
    draws a fresh standard-normal matrix (the episode's noise). Without them it is a ``[*shape, 1]`` zero
    placeholder, which tells the module to draw the matrix itself.

    Args:
        state_dim: state dimension read by the gSDE module.
        action_dim: action dimension.
        shape: leading (batch) shape of the entry (default ``()``).
        **kwargs: passed to :class:`TensorDictPrimer` (``reset_key``, ``expand_specs``, ...).

    Examples:
        >>> from tensordict import TensorDict
        >>> gSDENoise(state_dim=3, action_dim=2)._reset(TensorDict({}, []), TensorDict({}, []))["_eps_gSDE"].shape
        torch.Size([2, 3])
    """

    def __init__(
        self, state_dim: int | None = None, action_dim: int | None = None, shape: tuple[int, ...] | None = None,
        **kwargs: Any,
    ) -> None:
        self.state_dim, self.action_dim = state_dim, action_dim
        shape = tuple(shape) if shape is not None else ()
        sized = state_dim is not None and action_dim is not None
        tail = (action_dim, state_dim) if sized else (1,)
        primers = Composite({"_eps_gSDE": Unbounded(shape=(*shape, *tail))}, shape=shape)
        # Unbatched noise (shape ()) always gets the env's batch size in front, whatever action_dim is.
        kwargs.setdefault("expand_specs", True if not shape else None)
        super().__init__(primers=primers, random=sized, **kwargs)
