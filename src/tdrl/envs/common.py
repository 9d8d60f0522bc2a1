"""``EnvBase``: the environment interface (TorchRL's semantics) and ``_EnvWrapper`` for library wrappers.

Subclasses implement ``_reset(tensordict, **kwargs)``, ``_step(tensordict)`` and ``_set_seed(seed)`` and
declare their specs in ``__init__``; ``EnvBase`` provides ``reset``/``step``/``rollout``/
``step_and_maybe_reset``, done-spec completion, partial resets through ``"_reset"`` masks and the checks
that name the offending key. Hot-path work (key lists, samplers, the bound ``step_mdp``) is computed once
per spec layout and cached (see ``empty_cache``).
"""

from __future__ import annotations

from typing import Any, ClassVar, cast

import torch
from tensordict import TensorDict, TensorDictBase

from tdrl._utils import seed_generator
from tdrl.data import Composite, TensorSpec
from tdrl.envs._env_extras import EnvExtrasMixin
from tdrl.envs._env_specs import EnvSpecsMixin
from tdrl.envs._reset import ResetMixin
from tdrl.envs._rollout import RolloutMixin
from tdrl.envs._samplers import NO_SHAPE
from tdrl.envs.step_plan import StepPlan
from tdrl.envs.utils import complete_done

__all__ = ["EnvBase", "_EnvWrapper"]


class _EnvPostInit(type):  # nn.Module's metaclass is plain ``type``
    """Runs ``_post_init`` once the subclass ``__init__`` has declared its specs."""

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        instance = super().__call__(*args, **kwargs)
        instance._post_init()
        return instance


def _as_device(device: Any) -> torch.device | None:
    if device is None:
        return None
    device = torch.device(device)
    if device.type == "cuda" and device.index is None:
        device = torch.device("cuda", torch.cuda.current_device())
    return device


class EnvBase(EnvSpecsMixin, EnvExtrasMixin, ResetMixin, RolloutMixin, torch.nn.Module, metaclass=_EnvPostInit):
    """Base class of tdrl environments.

    Args:
        device: device of the tensors the env reads and writes (``None``: left as produced).
        batch_size: leading dims of every spec and tensordict (``()`` for a single env).
        run_type_checks: check the dtype of every observation, reward and done at each step, and that
            one-hot and binary actions hold valid values.
        allow_done_after_reset: do not raise when a reset returns a done state.
        spec_locked: lock the specs against in-place edits (use the spec setters instead).
        auto_reset: the env resets itself when done; ``step_and_maybe_reset`` then skips resets.

    Examples:
        >>> from tdrl.envs import PendulumEnv
        >>> env = PendulumEnv(seed=0)
        >>> td = env.rollout(3)
        >>> td["next", "reward"].shape
        torch.Size([3, 1])
    """

    _transformed_env_cls: ClassVar[type | None] = None

    #: Whether the batch size of input tensordicts must equal ``batch_size``.
    batch_locked: bool = True
    #: Whether ``_reset`` honors a state given in the input tensordict (``reset(td, set_state=True)``).
    _supports_set_state: bool = False
    #: Complete done specs with ``terminated`` (or ``done``) after ``__init__``.
    auto_complete_done_specs: bool = True

    def __new__(cls, *args: Any, **kwargs: Any) -> EnvBase:
        # Subclasses written for TorchRL forward their constructor arguments: super().__new__(cls, *args, **kwargs).
        return super().__new__(cls)

    def __init__(
        self,
        *,
        device: Any = None,
        batch_size: tuple | torch.Size | None = None,
        run_type_checks: bool = False,
        allow_done_after_reset: bool = False,
        spec_locked: bool = True,
        auto_reset: bool = False,
    ) -> None:
        torch.nn.Module.__init__(self)
        d = self.__dict__
        d["_device"] = _as_device(device)
        d["_batch_size"] = torch.Size(() if batch_size is None else batch_size)
        d["_cache"] = {}
        d["run_type_checks"] = run_type_checks
        d["_allow_done_after_reset"] = allow_done_after_reset
        d["_spec_locked"] = spec_locked
        d["auto_reset"] = auto_reset
        d["is_closed"] = False
        self._init_specs()

    def _post_init(self) -> None:
        if self.auto_complete_done_specs:
            self._complete_done_specs()
        self.empty_cache()

    # ------------------------------------------------------------------ shape / device
    @property
    def batch_size(self) -> torch.Size:
        """Leading dims of the env's specs and tensordicts."""
        return self.__dict__["_batch_size"]

    @batch_size.setter
    def batch_size(self, value: Any) -> None:
        value = torch.Size(value)
        self.__dict__["_batch_size"] = value
        if "_output_spec" in self.__dict__:
            # Rebuild both containers: empty parts take the new shape, filled ones must already fit it.
            for attr in ("_output_spec", "_input_spec"):
                parent = self.__dict__[attr]
                parts = {}
                for name, part in parent.items():
                    if part.is_empty():
                        part = Composite(shape=value, device=part.device)
                    else:
                        part.shape = value
                    parts[name] = part
                self.__dict__[attr] = Composite(parts, shape=value, device=parent.device)
        self.empty_cache()

    @property
    def shape(self) -> torch.Size:
        """Alias of ``batch_size``."""
        return self.batch_size

    @property
    def batch_dims(self) -> int:
        """Number of batch dims."""
        return len(self.batch_size)

    ndim = batch_dims

    def ndimension(self) -> int:
        """Number of batch dims."""
        return len(self.batch_size)

    def numel(self) -> int:
        """Number of sub-environments (product of ``batch_size``)."""
        return self.batch_size.numel()

    @property
    def device(self) -> torch.device | None:
        """The env's device."""
        return self.__dict__["_device"]

    @device.setter
    def device(self, value: Any) -> None:
        self.__dict__["_device"] = _as_device(value)

    def to(self, device: Any) -> EnvBase:  # type: ignore[override]  # TorchRL's EnvBase.to takes a device only
        """Moves the specs (and any module state) to ``device``."""
        device = _as_device(device)
        if device == self.device:
            return self
        self.__dict__["_input_spec"] = self.input_spec.to(device)
        self.__dict__["_output_spec"] = self.output_spec.to(device)
        self.__dict__["_device"] = device
        self.empty_cache()
        return torch.nn.Module.to(self, device)

    @property
    def is_spec_locked(self) -> bool:
        """Whether ``spec_locked`` was requested (specs are replaced through the setters)."""
        return self.__dict__["_spec_locked"]

    def set_spec_lock_(self, mode: bool = True) -> EnvBase:
        """Records whether specs should only change through their setters."""
        self.__dict__["_spec_locked"] = bool(mode)
        return self

    # ------------------------------------------------------------------ to implement
    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        raise TypeError(f"{type(self).__name__} must implement _step(tensordict) -> next tensordict")

    def _reset(self, tensordict: TensorDictBase | None, **kwargs: Any) -> TensorDictBase:
        raise TypeError(f"{type(self).__name__} must implement _reset(tensordict, **kwargs) -> tensordict")

    def _set_seed(self, seed: int | None) -> None:
        raise TypeError(f"{type(self).__name__} must implement _set_seed(seed)")

    # ------------------------------------------------------------------ seeding
    def set_seed(self, seed: int | None = None, static_seed: bool = False) -> int | None:
        """Seeds the env; returns the seed for the next env (``seed`` itself when ``static_seed``)."""
        self._set_seed(seed)
        if seed is not None and not static_seed:
            return seed_generator(seed)
        return seed

    # ------------------------------------------------------------------ step pipeline
    @property
    def step_plan(self) -> StepPlan:
        """The :class:`~tdrl.envs.step_plan.StepPlan` of the current spec layout (rebuilt after a spec change)."""
        # Read several times per step: the cache dict directly, one call less than _cached.
        plan = self.__dict__["_cache"].get("step_plan")
        if plan is None:
            plan = self._cached("step_plan", self._build_step_plan)
        return plan

    def _build_step_plan(self) -> StepPlan:
        return StepPlan.from_env(self)

    def step(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Runs one step with the action in ``tensordict``; writes the result under ``"next"``.

        The pipeline: :meth:`check_step_input` (input stage) -> :meth:`compute_next` (``_step``, then the
        post-processing stage :meth:`complete_step`, once) -> the result stored under ``"next"``.
        ``step_mdp`` then builds the next input (see :meth:`step_and_maybe_reset`).

        Args:
            tensordict: holds the action (and state) entries; its ``"next"`` entries, if any, override
                the computed ones. A boolean ``"_step"`` mask skips the sub-envs where it is False.

        Returns:
            ``tensordict`` with a new ``"next"`` entry.
        """
        plan = self.step_plan
        partial = self.check_step_input(tensordict, plan)
        if partial is not None and self.batch_locked and not bool(partial.all()):
            if not bool(partial.any()):
                tensordict.set("next", self._skip_step(tensordict))
                return tensordict
            tensordict.set("_step", partial)
        plain = type(tensordict) is TensorDict
        preset = tensordict._tensordict.get("next") if plain else tensordict.get("next", None)
        next_td = self.compute_next(tensordict)
        if preset is not None:
            next_td.update(preset.exclude(*next_td.keys(True, True)))
        if plain and next_td.batch_size == tensordict._batch_size:
            tensordict._tensordict["next"] = next_td
        else:
            tensordict.set("next", next_td)
        return tensordict

    def check_step_input(self, tensordict: TensorDictBase, plan: StepPlan | None = None) -> torch.Tensor | None:
        """Input stage of :meth:`step`: checks the batch size and the action entries, pops ``"_step"``.

        Args:
            tensordict: the step input.
            plan: the env's :attr:`step_plan` (looked up when ``None``).

        Returns:
            The ``"_step"`` mask popped from ``tensordict`` (``None`` when absent).

        Raises:
            KeyError: an action entry is missing. ValueError: an action has the wrong shape.
            RuntimeError: the batch size differs from a batch-locked env's.
        """
        if plan is None:
            plan = self.step_plan
        if type(tensordict) is TensorDict:
            d = tensordict._tensordict
            if tensordict._batch_size != plan.batch_size and plan.strict_batch:
                self._assert_tensordict_shape(tensordict)
            plan.check_actions(tensordict)
            # No cast() here (a call per step): the "_step" entry is a boolean mask tensor.
            return d.pop("_step", None)
        self._assert_tensordict_shape(tensordict)
        plan.check_actions(tensordict)
        return cast("torch.Tensor | None", tensordict.pop("_step", None))

    def compute_next(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Stages 2 and 3 of :meth:`step`: ``_step`` (the env's dynamics), then :meth:`complete_step`.

        Wrappers override this to compose: ``TransformedEnv`` runs its base env's ``compute_next`` then the
        transforms, batched envs stack the already completed outputs of their sub-envs. Either way the
        post-processing stage runs once per step of each (sub-)env.

        Args:
            tensordict: the checked step input.

        Returns:
            The ``"next"`` tensordict.
        """
        # TorchRL runs this stage (its _step_proc_data) in the base env and again after the transforms and in
        # batched parents; once is enough, since every later stage receives completed entries (differences.md).
        return self.complete_step(self._step(tensordict))

    def complete_step(self, next_tensordict: TensorDictBase, plan: StepPlan | None = None) -> TensorDictBase:
        """Post-processing stage of :meth:`step`: reward shapes, done completion, optional type checks.

        Rewards whose size matches the spec are reshaped to ``(*batch, *spec.shape)``; missing ``done`` /
        ``terminated`` leaves are completed from their siblings (``done = terminated | truncated``); with
        ``run_type_checks`` every observation, reward and done entry is checked against its spec. On the
        common layout (root-level keys, right shapes) this costs one dict look-up per key.

        Args:
            next_tensordict: what ``_step`` returned (modified in place).
            plan: the env's :attr:`step_plan` (looked up when ``None``).

        Returns:
            ``next_tensordict``.
        """
        if not isinstance(next_tensordict, TensorDictBase):
            raise TypeError(
                f"{type(self).__name__}._step must return a TensorDict, got {type(next_tensordict).__name__}"
            )
        if plan is None:
            plan = self.step_plan
        nd = next_tensordict._tensordict if type(next_tensordict) is TensorDict else None
        if nd is not None and next_tensordict._batch_size == plan.batch_size:
            for key, expected in plan.flat_reward_shapes:
                reward = nd.get(key)
                if reward is None or reward.shape != expected:
                    self._fix_rewards(next_tensordict, plan)
                    break
            if plan.nested_rewards:
                self._fix_rewards(next_tensordict, plan)
            for key in plan.flat_done_keys:
                if key not in nd:
                    complete_done(self.full_done_spec, next_tensordict)
                    break
            if not plan.done_flat:
                complete_done(self.full_done_spec, next_tensordict)
        else:
            self._fix_rewards(next_tensordict, plan)
            complete_done(self.full_done_spec, next_tensordict)
        if self.run_type_checks:
            self.check_step_types(next_tensordict)
        return next_tensordict

    def _skip_step(self, tensordict: TensorDictBase) -> TensorDictBase:
        """The "next" data of a step where every sub-env is masked out: the current data, cloned."""
        keys = [*self.observation_keys, *self.done_keys, *self.state_keys]
        out = tensordict.select(*keys, strict=False).clone()
        for key, _ in self.step_plan.rewards:
            out.set(key, self.full_reward_spec[key].zero())
        return out

    def _assert_tensordict_shape(self, tensordict: TensorDictBase) -> None:
        if tensordict.batch_size != self.batch_size and (self.batch_locked or self.batch_size):
            raise RuntimeError(
                f"Expected a tensordict with batch_size == env.batch_size {tuple(self.batch_size)}, "
                f"got batch_size {tuple(tensordict.batch_size)}"
            )

    def _fix_rewards(self, next_td: TensorDictBase, plan: StepPlan) -> None:
        """Checks every reward entry and reshapes it to ``(*batch, *spec.shape)`` when the sizes agree."""
        lead = next_td.batch_size
        for key, shape in plan.rewards:
            reward = next_td.get(key, None)
            if reward is None:
                raise KeyError(f"{type(self).__name__}._step did not write the reward entry {key!r}")
            expected = (*lead, *shape)
            if reward.shape != expected:
                if -1 in shape:
                    continue  # per-token rewards of LLM envs (ragged, e.g. nested): only the batch dims are fixed
                if reward.numel() != torch.Size(expected).numel():
                    raise ValueError(
                        f"reward {key!r}: _step returned shape {tuple(reward.shape)}, spec expects {expected}"
                    )
                next_td.set(key, reward.reshape(expected))

    def check_step_types(self, next_td: TensorDictBase) -> None:
        """Checks every observation, reward and done entry of a step output against its spec."""
        for spec in (self.full_observation_spec, self.full_reward_spec, self.full_done_spec):
            for key, leaf in spec.items(True, True):
                value = next_td.get(key, None)
                if value is None:
                    raise KeyError(f"{type(self).__name__}: _step output lacks {key!r} declared in the specs")
                cast("TensorSpec", leaf).type_check(value, key)

    @classmethod
    def _complete_done(cls, done_spec: Composite, data: TensorDictBase) -> TensorDictBase:
        return complete_done(done_spec, data)

    # ------------------------------------------------------------------ random actions
    def rand_action(self, tensordict: TensorDictBase | None = None) -> TensorDictBase:
        """Writes a uniform sample of ``full_action_spec`` into ``tensordict`` (or returns a new one)."""
        shape = NO_SHAPE
        if not self.batch_locked and not self.batch_size and tensordict is not None:
            shape = tensordict.batch_size
        if tensordict is None:
            return self.full_action_spec.rand(shape)
        td_dict = tensordict._tensordict if type(tensordict) is TensorDict else None
        for key, sample in self.step_plan.samplers:
            value = sample(shape)
            if td_dict is not None and type(key) is str:
                td_dict[key] = value
            else:
                tensordict.set(key, value)
        return tensordict

    def rand_step(self, tensordict: TensorDictBase | None = None) -> TensorDictBase:
        """``step`` with a random action."""
        if tensordict is None:
            tensordict = TensorDict(batch_size=self.batch_size, device=self.device)
        return self.step(self.rand_action(tensordict))

    # ------------------------------------------------------------------ step + reset
    def step_mdp(self, next_tensordict: TensorDictBase) -> TensorDictBase:
        """The env's ``step_mdp``: next entries to the root, reward dropped, action kept."""
        return self.step_plan.step_mdp(next_tensordict)

    def step_and_maybe_reset(self, tensordict: TensorDictBase) -> tuple[TensorDictBase, TensorDictBase]:
        """Steps, then builds the next input (``step_mdp``) and resets the sub-envs that are done.

        Returns:
            ``(tensordict with "next", input for the next step)``.
        """
        if self.device is not None and tensordict.device != self.device:
            tensordict = tensordict.to(self.device)
        tensordict = self.step(tensordict)
        tensordict_ = self.step_plan.step_mdp(tensordict)
        if not self.auto_reset:
            tensordict_ = self.maybe_reset(tensordict_)
        return tensordict, tensordict_

    def add_truncated_keys(self) -> EnvBase:
        """Adds a ``truncated`` leaf next to every ``done`` leaf of the done spec."""
        spec = self.full_done_spec
        done_keys = [k for k in self.done_keys if (k if isinstance(k, str) else k[-1]) == "done"]
        if not done_keys:
            raise KeyError(f"add_truncated_keys: no 'done' leaf in the done spec {list(self.done_keys)}")
        for key in done_keys:
            trunc = "truncated" if isinstance(key, str) else (*key[:-1], "truncated")
            spec[trunc] = spec[key].clone()
        self.empty_cache()
        return self

    # ------------------------------------------------------------------ misc
    def fake_tensordict(self) -> TensorDictBase:
        """A zero-filled tensordict with every key, shape and dtype a rollout step produces."""
        obs = self.full_observation_spec.zero()
        done = self.full_done_spec.zero()
        fake = self.full_state_spec.zero()
        fake.update(self.full_action_spec.zero())
        fake.update(obs)
        fake.update(done.clone())
        nxt = obs.clone()
        nxt.update(self.full_reward_spec.zero())
        nxt.update(done)
        fake.set("next", nxt)
        return fake.to(self.device) if self.device is not None else fake

    def append_transform(self, transform: Any) -> EnvBase:
        """Returns ``TransformedEnv(self, transform)``; a ``td -> td`` callable is accepted as a transform.

        Examples:
            >>> from tdrl.envs import PendulumEnv, StepCounter
            >>> type(PendulumEnv().append_transform(StepCounter())).__name__
            'TransformedEnv'
        """
        # ``tdrl.envs.transforms`` builds on this module and registers TransformedEnv here when imported
        # (``import tdrl.envs`` always does), which keeps the layering one-way.
        cls = EnvBase._transformed_env_cls
        if cls is None:
            raise RuntimeError("append_transform needs tdrl.envs.transforms; import tdrl.envs first")
        return cls(self).append_transform(transform)

    def close(self, *, raise_if_closed: bool = True) -> None:
        """Releases the env's resources."""
        self.__dict__["is_closed"] = True

    def __del__(self) -> None:
        # Interpreter shutdown or a failed __init__ can leave the env half-built: closing is best effort.
        if self.__dict__.get("is_closed") is False:
            try:
                self.close()
            except Exception:  # noqa: BLE001
                pass

    def __repr__(self) -> str:
        return f"{type(self).__name__}(batch_size={self.batch_size}, device={self.device})"

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError(
            f"{type(self).__name__} is not callable as a module: use step(), reset() or rollout()"
        )


_NO_SHAPE = torch.Size(())


class _EnvWrapper(EnvBase):
    """Base of library wrappers: builds the wrapped env (``_build_env``), checks kwargs, makes specs.

    Subclasses implement ``_check_kwargs(kwargs)``, ``_build_env(**kwargs)`` (when built from a name),
    ``_make_specs(env)`` and ``_init_env()``. Attributes the wrapper lacks are looked up on the wrapped
    env (``wrapper.some_attr`` -> ``wrapper._env.some_attr``).

    Args:
        *args: positional arguments forwarded to ``_build_env``.
        device: see ``EnvBase``.
        batch_size: see ``EnvBase``.
        allow_done_after_reset: see ``EnvBase``.
        spec_locked: see ``EnvBase``.
        frame_skip: repeat each action this many times (rewards summed; stops when done).
        **kwargs: ``env=`` (an env instance to wrap) or arguments of ``_build_env``.
    """

    git_url: str = ""
    available_envs: dict[str, Any] | list = {}
    libname: str = ""

    def __init__(
        self,
        *args: Any,
        device: Any = None,
        batch_size: tuple | torch.Size | None = None,
        allow_done_after_reset: bool = False,
        spec_locked: bool = True,
        frame_skip: int | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(
            device=device,
            batch_size=batch_size,
            allow_done_after_reset=allow_done_after_reset,
            spec_locked=spec_locked,
        )
        if frame_skip is not None and (not isinstance(frame_skip, int) or frame_skip < 1):
            raise ValueError(f"frame_skip must be a positive int, got {frame_skip!r}")
        self.wrapper_frame_skip = frame_skip or 1
        self._constructor_kwargs = dict(kwargs)
        self._check_kwargs(kwargs)
        self._env = self._build_env(*args, **kwargs)
        self._make_specs(self._env)
        self._init_env()

    def _check_kwargs(self, kwargs: dict[str, Any]) -> None:
        pass

    def _build_env(self, *args: Any, **kwargs: Any) -> Any:
        env = kwargs.pop("env", None)
        if env is None:
            raise TypeError(f"{type(self).__name__} needs env=<the {self.libname or 'library'} env to wrap>")
        return env

    def _make_specs(self, env: Any) -> None:
        raise TypeError(f"{type(self).__name__} must implement _make_specs(env)")

    def _init_env(self) -> int | None:
        return None

    def __getattr__(self, attr: str) -> Any:
        try:
            return super().__getattr__(attr)
        except AttributeError:
            pass
        if attr.startswith("__") or "_env" not in self.__dict__:
            raise AttributeError(f"{type(self).__name__} has no attribute {attr!r}")
        return getattr(self.__dict__["_env"], attr)

    def close(self, *, raise_if_closed: bool = True) -> None:
        """Closes the wrapped env."""
        env = self.__dict__.get("_env")
        if env is not None and hasattr(env, "close"):
            env.close()
        super().close(raise_if_closed=raise_if_closed)
