"""Spec properties of environments: ``input_spec``/``output_spec``, their ``full_*`` parts and short forms.

An environment keeps two ``Composite`` specs, as TorchRL does:

* ``output_spec`` with ``full_observation_spec``, ``full_reward_spec`` and ``full_done_spec``;
* ``input_spec`` with ``full_action_spec`` and ``full_state_spec``.

Every spec's leading dims are the env's ``batch_size``. Key lists (``action_keys``, ``done_keys``, ...) are
derived from the specs once and cached; the setters clear that cache. A spec edited in place
(``env.full_done_spec["x"] = ...``) needs ``env.empty_cache()`` afterwards.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar, cast

import torch
from tensordict.utils import NestedKey

from tdrl.data import Categorical, Composite, TensorSpec, Unbounded

__all__ = ["EnvSpecsMixin", "replace_last", "sort_by_depth"]

_OUTPUT_PARTS = ("full_observation_spec", "full_reward_spec", "full_done_spec")
_INPUT_PARTS = ("full_action_spec", "full_state_spec")
_SpecT = TypeVar("_SpecT", bound=TensorSpec)


def sort_by_depth(keys: Any) -> list[NestedKey]:
    """Sorts nested keys by depth, then by name (TorchRL's key order)."""
    return sorted(keys, key=lambda k: (0, (k,)) if isinstance(k, str) else (len(k) - 1, k))


def replace_last(key: NestedKey, new_end: str) -> NestedKey:
    """``("a", "done") -> ("a", new_end)``; ``"done" -> new_end``."""
    if isinstance(key, str):
        return new_end
    return (*key[:-1], new_end)


def _done_leaf(shape: torch.Size, device: torch.device | None) -> Categorical:
    return Categorical(n=2, shape=(*shape, 1), dtype=torch.bool, device=device)


class EnvSpecsMixin:
    """Spec storage, spec properties/setters and cached key lists shared by all environments.

    Subclasses provide ``batch_size``, ``device`` and a ``_cache`` dict in ``__dict__``.
    """

    if TYPE_CHECKING:  # provided by EnvBase (properties there)
        batch_size: torch.Size
        device: torch.device | None

    # ------------------------------------------------------------------ storage
    def _init_specs(self) -> None:
        shape, device = self.batch_size, self.device
        self.__dict__["_output_spec"] = Composite(
            full_observation_spec=Composite(shape=shape, device=device),
            full_reward_spec=Composite(shape=shape, device=device),
            full_done_spec=Composite(shape=shape, device=device),
            shape=shape,
            device=device,
        )
        self.__dict__["_input_spec"] = Composite(
            full_state_spec=Composite(shape=shape, device=device),
            full_action_spec=Composite(shape=shape, device=device),
            shape=shape,
            device=device,
        )

    @property
    def output_spec(self) -> Composite:
        """``Composite`` holding ``full_observation_spec``, ``full_reward_spec`` and ``full_done_spec``."""
        return self.__dict__["_output_spec"]

    @output_spec.setter
    def output_spec(self, value: Composite) -> None:
        self._check_composite("output_spec", value, _OUTPUT_PARTS)
        self.__dict__["_output_spec"] = value
        self.empty_cache()

    @property
    def input_spec(self) -> Composite:
        """``Composite`` holding ``full_action_spec`` and ``full_state_spec``."""
        return self.__dict__["_input_spec"]

    @input_spec.setter
    def input_spec(self, value: Composite) -> None:
        self._check_composite("input_spec", value, _INPUT_PARTS)
        self.__dict__["_input_spec"] = value
        self.empty_cache()

    @property
    def specs(self) -> Composite:
        """All specs of the env in one ``Composite`` (``output_spec`` and ``input_spec`` entries)."""
        return Composite(output_spec=self.output_spec, input_spec=self.input_spec, shape=self.batch_size)

    def _check_composite(self, name: str, value: Any, parts: tuple[str, ...]) -> None:
        if not isinstance(value, Composite):
            raise TypeError(f"{name} must be a Composite with entries {parts}, got {type(value).__name__}")
        unknown = [k for k in value.keys() if k not in parts]
        if unknown:
            raise KeyError(f"{name} accepts only the entries {parts}; got unexpected {unknown}")

    def _check_batched(self, name: str, value: Any) -> None:
        if not isinstance(value, TensorSpec):
            raise TypeError(f"{name} must be a TensorSpec, got {type(value).__name__}")
        batch = self.batch_size
        if tuple(value.shape[: len(batch)]) != tuple(batch):
            raise ValueError(
                f"{name}: the spec's shape {tuple(value.shape)} must start with the env batch size "
                f"{tuple(batch)} (use the *_unbatched setter to give a spec without batch dims)"
            )

    def _as_composite(self, value: TensorSpec, leaf_names: tuple[str, ...]) -> Composite:
        if isinstance(value, Composite):
            out = value
        else:
            out = Composite({name: value.clone() for name in leaf_names}, shape=self.batch_size)
        return out.to(self.device) if self.device is not None else out

    # ------------------------------------------------------------------ full specs
    @property
    def full_action_spec(self) -> Composite:
        """All action entries (a ``Composite`` with the env's batch size)."""
        return self.input_spec["full_action_spec"]

    @full_action_spec.setter
    def full_action_spec(self, value: Composite) -> None:
        self.action_spec = value

    @property
    def full_state_spec(self) -> Composite:
        """All non-action inputs of ``step`` (a ``Composite``)."""
        return self.input_spec["full_state_spec"]

    @full_state_spec.setter
    def full_state_spec(self, value: Composite) -> None:
        self.state_spec = value

    @property
    def full_observation_spec(self) -> Composite:
        """All observation entries (a ``Composite``)."""
        return self.output_spec["full_observation_spec"]

    @full_observation_spec.setter
    def full_observation_spec(self, value: Composite) -> None:
        self.observation_spec = value

    @property
    def full_reward_spec(self) -> Composite:
        """All reward entries; an ``Unbounded((*batch, 1))`` ``"reward"`` is created if there is none."""
        spec = self.output_spec["full_reward_spec"]
        if spec.is_empty():
            self.reward_spec = Unbounded(shape=(*self.batch_size, 1), device=self.device)
            spec = self.output_spec["full_reward_spec"]
        return spec

    @full_reward_spec.setter
    def full_reward_spec(self, value: Composite) -> None:
        self.reward_spec = value

    @property
    def full_done_spec(self) -> Composite:
        """All done entries (``done``/``terminated``/``truncated``, possibly nested)."""
        return self.output_spec["full_done_spec"]

    @full_done_spec.setter
    def full_done_spec(self, value: Composite) -> None:
        self.done_spec = value

    # ------------------------------------------------------------------ short forms
    def _short(self, full: Composite, keys: list[NestedKey], default: str) -> TensorSpec:
        if len(keys) == 1 and keys[0] == default:
            return full[default]
        return full

    @property
    def action_spec(self) -> TensorSpec:
        """The ``"action"`` leaf spec when it is the only action, else ``full_action_spec``."""
        return self._short(self.full_action_spec, self.action_keys, "action")

    @action_spec.setter
    def action_spec(self, value: TensorSpec) -> None:
        self._check_batched("action_spec", value)
        self.input_spec["full_action_spec"] = self._as_composite(value, ("action",))
        self.empty_cache()

    @property
    def reward_spec(self) -> TensorSpec:
        """The ``"reward"`` leaf spec when it is the only reward, else ``full_reward_spec``."""
        return self._short(self.full_reward_spec, self.reward_keys, "reward")

    @reward_spec.setter
    def reward_spec(self, value: TensorSpec) -> None:
        self._check_batched("reward_spec", value)
        spec = self._as_composite(value, ("reward",))
        for key, leaf in spec.items(True, True):
            if leaf is not None and leaf.ndim == 0:
                raise ValueError(
                    f"reward_spec: the leaf {key!r} has an empty shape; give rewards a trailing singleton "
                    "dim, e.g. Unbounded(shape=(*batch_size, 1))"
                )
        self.output_spec["full_reward_spec"] = spec
        self.empty_cache()

    @property
    def done_spec(self) -> Composite:
        """The full done spec (as in TorchRL 0.14, the composite with all done leaves)."""
        return self.full_done_spec

    @done_spec.setter
    def done_spec(self, value: TensorSpec) -> None:
        self._check_batched("done_spec", value)
        spec = self._as_composite(value, ("done", "terminated"))
        for key, leaf in spec.items(True, True):
            if leaf is not None and leaf.ndim == 0:
                raise ValueError(
                    f"done_spec: the leaf {key!r} has an empty shape; done entries need a trailing singleton "
                    "dim, e.g. Categorical(2, shape=(*batch_size, 1), dtype=torch.bool)"
                )
        self.output_spec["full_done_spec"] = spec
        self._complete_done_specs()
        self.empty_cache()

    @property
    def observation_spec(self) -> Composite:
        """The observation ``Composite`` (same object as ``full_observation_spec``)."""
        return self.full_observation_spec

    @observation_spec.setter
    def observation_spec(self, value: Composite) -> None:
        self._check_batched("observation_spec", value)
        # A bare leaf is the "observation" entry (TorchRL wraps it the same way).
        value = self._as_composite(value, ("observation",))
        self.output_spec["full_observation_spec"] = value
        self.empty_cache()

    @property
    def state_spec(self) -> Composite:
        """The state ``Composite``: inputs of ``step`` that are not actions."""
        return self.full_state_spec

    @state_spec.setter
    def state_spec(self, value: Composite | None) -> None:
        if value is None:
            value = Composite(shape=self.batch_size, device=self.device)
        if not isinstance(value, Composite):
            raise TypeError(f"state_spec must be a Composite, got {type(value).__name__}")
        self._check_batched("state_spec", value)
        self.input_spec["full_state_spec"] = value.to(self.device) if self.device is not None else value
        self.empty_cache()

    # ------------------------------------------------------------------ unbatched views
    def _unbatched(self, spec: _SpecT) -> _SpecT:
        if not self.batch_size:
            return spec
        # Indexing a spec keeps its class (a Composite stays a Composite).
        return cast(_SpecT, spec[(0,) * len(self.batch_size)])

    def _batched(self, spec: _SpecT) -> _SpecT:
        return cast(_SpecT, spec.expand(*self.batch_size, *spec.shape))

    @property
    def full_action_spec_unbatched(self) -> Composite:
        """``full_action_spec`` without the batch dims."""
        return self._unbatched(self.full_action_spec)

    @full_action_spec_unbatched.setter
    def full_action_spec_unbatched(self, value: Composite) -> None:
        self.action_spec = self._batched(value)

    @property
    def action_spec_unbatched(self) -> TensorSpec:
        """``action_spec`` without the batch dims."""
        return self._unbatched(self.action_spec)

    @action_spec_unbatched.setter
    def action_spec_unbatched(self, value: TensorSpec) -> None:
        self.action_spec = self._batched(value)

    @property
    def full_observation_spec_unbatched(self) -> Composite:
        """``full_observation_spec`` without the batch dims."""
        return self._unbatched(self.full_observation_spec)

    @full_observation_spec_unbatched.setter
    def full_observation_spec_unbatched(self, value: Composite) -> None:
        self.observation_spec = self._batched(value)

    observation_spec_unbatched = full_observation_spec_unbatched

    @property
    def full_reward_spec_unbatched(self) -> Composite:
        """``full_reward_spec`` without the batch dims."""
        return self._unbatched(self.full_reward_spec)

    @full_reward_spec_unbatched.setter
    def full_reward_spec_unbatched(self, value: Composite) -> None:
        self.reward_spec = self._batched(value)

    @property
    def full_done_spec_unbatched(self) -> Composite:
        """``full_done_spec`` without the batch dims."""
        return self._unbatched(self.full_done_spec)

    @full_done_spec_unbatched.setter
    def full_done_spec_unbatched(self, value: Composite) -> None:
        self.done_spec = self._batched(value)

    @property
    def full_state_spec_unbatched(self) -> Composite:
        """``full_state_spec`` without the batch dims."""
        return self._unbatched(self.full_state_spec)

    @full_state_spec_unbatched.setter
    def full_state_spec_unbatched(self, value: Composite) -> None:
        self.state_spec = self._batched(value)

    # ------------------------------------------------------------------ done-spec completion
    def _complete_done_specs(self) -> None:
        """Adds ``terminated`` next to a lone ``done`` (and the reverse); fills an empty done spec.

        TorchRL does this after ``__init__`` so that every env reports both signals.
        """
        full = self.output_spec["full_done_spec"]
        if full.is_empty():
            full["done"] = _done_leaf(self.batch_size, self.device)
            full["terminated"] = _done_leaf(self.batch_size, self.device)
            return
        self._complete_done_level(full)

    def _complete_done_level(self, spec: Composite) -> None:
        names = set(spec.keys())
        for key, item in list(spec.items()):
            if isinstance(item, Composite):
                self._complete_done_level(item)
            elif item is None:
                continue
            elif key == "done" and "terminated" not in names:
                spec["terminated"] = item.clone()
            elif key == "terminated" and "done" not in names:
                spec["done"] = item.clone()

    # ------------------------------------------------------------------ cached key lists
    def empty_cache(self) -> None:
        """Forgets the cached key lists (call it after editing a spec in place)."""
        self.__dict__["_cache"] = {}

    def _cached(self, name: str, build: Any) -> Any:
        cache = self.__dict__["_cache"]
        value = cache.get(name)
        if value is None:
            value = cache[name] = build()
        return value

    @property
    def action_keys(self) -> list[NestedKey]:
        """Leaf keys of ``full_action_spec``, sorted by depth."""
        return self._cached("action_keys", lambda: sort_by_depth(self.full_action_spec.keys(True, True)))

    @property
    def action_key(self) -> NestedKey:
        """The single action key (raises ``KeyError`` if the env has several)."""
        return self._single("action", self.action_keys)

    @property
    def reward_keys(self) -> list[NestedKey]:
        """Leaf keys of ``full_reward_spec``, sorted by depth."""
        return self._cached("reward_keys", lambda: sort_by_depth(self.full_reward_spec.keys(True, True)))

    @property
    def reward_key(self) -> NestedKey:
        """The single reward key (raises ``KeyError`` if the env has several)."""
        return self._single("reward", self.reward_keys)

    @property
    def done_keys(self) -> list[NestedKey]:
        """Leaf keys of ``full_done_spec`` (``done``, ``terminated``, ``truncated``...), sorted by depth."""
        return self._cached("done_keys", lambda: sort_by_depth(self.full_done_spec.keys(True, True)))

    @property
    def done_key(self) -> NestedKey:
        """The ``"done"`` key when there is exactly one, else raises ``KeyError``."""
        keys = [k for k in self.done_keys if (k if isinstance(k, str) else k[-1]) == "done"]
        return self._single("done", keys)

    @property
    def observation_keys(self) -> list[NestedKey]:
        """Leaf keys of ``full_observation_spec``, sorted by depth."""
        return self._cached(
            "observation_keys", lambda: sort_by_depth(self.full_observation_spec.keys(True, True))
        )

    @property
    def state_keys(self) -> list[NestedKey]:
        """Leaf keys of ``full_state_spec``, sorted by depth."""
        return self._cached("state_keys", lambda: sort_by_depth(self.full_state_spec.keys(True, True)))

    @property
    def done_keys_groups(self) -> list[list[NestedKey]]:
        """Done keys grouped by the sub-tensordict that holds them (one group per reset key)."""
        return self._cached("done_keys_groups", self._build_done_groups)

    def _build_done_groups(self) -> list[list[NestedKey]]:
        groups: dict[tuple, list[NestedKey]] = {}
        for key in self.done_keys:
            root = () if isinstance(key, str) else key[:-1]
            groups.setdefault(root, []).append(key)
        return list(groups.values())

    @property
    def reset_keys(self) -> list[NestedKey]:
        """``"_reset"`` keys, one per done group (``("agents", "_reset")`` for nested dones)."""
        return self._cached(
            "reset_keys", lambda: sort_by_depth(replace_last(g[0], "_reset") for g in self.done_keys_groups)
        )

    def _single(self, what: str, keys: list[NestedKey]) -> NestedKey:
        if len(keys) != 1:
            raise KeyError(f"{what}_key requested but the env has {len(keys)} {what} keys: {keys}")
        return keys[0]
