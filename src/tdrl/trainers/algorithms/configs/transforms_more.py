"""Transform configs (group ``transform``) for control-flow, bookkeeping and action transforms.

Names and fields are TorchRL 0.14.1's where it has the config. Where TorchRL's config declares fields its
transform does not take (``in_keys``/``out_keys`` of ``PinMemoryTransform``, ``FiniteTensorDictCheck``,
``VecGymEnvTransform``, ``BurnInTransform``; ``out_keys`` of ``Stack``), the ``_target_`` is a factory
that maps them (or rejects a value it cannot honour, naming the field) instead of the TypeError TorchRL
raises. Callables (``cond``, ``policy``, ``module``...) are given as ``_target_`` configs or objects.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tdrl.envs import (
    BurnInTransform,
    ConditionalPolicySwitch,
    ConditionalSkip,
    ExpandAs,
    FiniteTensorDictCheck,
    ModuleTransform,
    NextObservationDelta,
    PinMemoryTransform,
    Stack,
    TerminateTransform,
    VecGymEnvTransform,
)
from tdrl.trainers.algorithms.configs.common import build, normalize_key, normalize_keys
from tdrl.trainers.algorithms.configs.transforms import TransformConfig, _InvKeysConfig, parse_dtype

__all__ = [
    "ActionScalingConfig", "AutoResetTransformConfig", "BatchSizeTransformConfig", "BurnInTransformConfig",
    "ConditionalPolicySwitchConfig", "ConditionalSkipConfig", "EndOfLifeTransformConfig", "ExpandAsConfig",
    "FiniteTensorDictCheckConfig", "FlattenActionConfig", "HashConfig", "MeanActionSelectorConfig",
    "ModuleTransformConfig", "MultiActionConfig", "NextObservationDeltaConfig", "NextStateReconstructorConfig",
    "PinMemoryTransformConfig", "StackConfig", "SuccessRewardConfig", "TerminateTransformConfig",
    "VecGymEnvTransformConfig", "make_burn_in", "make_conditional_policy_switch", "make_conditional_skip",
    "make_expand_as", "make_finite_tensordict_check", "make_module_transform", "make_next_observation_delta",
    "make_pin_memory", "make_stack", "make_terminate", "make_vec_gym_env_transform",
]

_ENVS = "tdrl.envs."
_HERE = "tdrl.trainers.algorithms.configs.transforms_more."


def _no_keys(name: str, **keys: Any) -> None:
    for field, value in keys.items():
        if value not in (None, []):
            raise ValueError(f"{name} takes no {field} (it acts on every entry); got {field}={value!r}")


@dataclass
class AutoResetTransformConfig(TransformConfig):
    """:class:`~tdrl.envs.AutoResetTransform` (to be held by an :class:`~tdrl.envs.AutoResetEnv`).

    Examples:
        >>> from hydra.utils import instantiate
        >>> instantiate(AutoResetTransformConfig(fill_int=0)).fill_int
        0
    """

    replace: bool | None = None
    fill_float: Any = "nan"
    fill_int: int | None = -1
    fill_bool: bool | None = False
    _target_: str = _ENVS + "AutoResetTransform"


@dataclass
class BatchSizeTransformConfig(TransformConfig):
    """:class:`~tdrl.envs.BatchSizeTransform` (``batch_size`` or a ``reshape_fn`` callable).

    Examples:
        >>> from hydra.utils import instantiate
        >>> instantiate(BatchSizeTransformConfig(batch_size=[4])).batch_size
        torch.Size([4])
    """

    batch_size: Any = None
    reshape_fn: Any = None
    reset_func: Any = None
    env_kwarg: bool = False
    _target_: str = _ENVS + "BatchSizeTransform"


@dataclass
class StackConfig(TransformConfig):
    """:class:`~tdrl.envs.Stack` of ``in_keys`` into one entry (``out_key``, or TorchRL's one-item ``out_keys``).

    ``dim`` defaults to -1: the transform refuses a positive dim unless ``allow_positive_dim``.

    Examples:
        >>> from hydra.utils import instantiate
        >>> instantiate(StackConfig(in_keys=["a", "b"], out_keys=["ab"])).out_keys
        ['ab']
    """

    dim: int = -1
    in_keys: Any = None
    out_keys: Any = None
    out_key: Any = None
    allow_positive_dim: bool = False
    del_keys: bool = True
    _target_: str = _HERE + "make_stack"


def make_stack(
    in_keys: Any = None, out_keys: Any = None, out_key: Any = None, dim: int = -1, allow_positive_dim: bool = False,
    del_keys: bool = True,
) -> Stack:
    """Builds a :class:`~tdrl.envs.Stack`; ``out_keys`` (TorchRL's config field) must hold one key.

    Examples:
        >>> make_stack(["a", "b"], out_key="ab").out_keys
        ['ab']
    """
    if out_key is None:
        keys = normalize_keys(out_keys) or []
        if len(keys) != 1:
            raise ValueError(f"StackConfig: give out_key, or out_keys with exactly one key; got out_keys={out_keys!r}")
        out_key = keys[0]
    keys_in = normalize_keys(in_keys)
    if not keys_in:
        raise ValueError(f"StackConfig: in_keys (the entries to stack) is required; got in_keys={in_keys!r}")
    return Stack(keys_in, normalize_key(out_key), dim=dim, allow_positive_dim=allow_positive_dim, del_keys=del_keys)


@dataclass
class PinMemoryTransformConfig(TransformConfig):
    """:class:`~tdrl.envs.PinMemoryTransform` (TorchRL's ``in_keys``/``out_keys`` fields must stay empty).

    Examples:
        >>> from hydra.utils import instantiate
        >>> type(instantiate(PinMemoryTransformConfig())).__name__
        'PinMemoryTransform'
    """

    in_keys: Any = None
    out_keys: Any = None
    _target_: str = _HERE + "make_pin_memory"


def make_pin_memory(in_keys: Any = None, out_keys: Any = None) -> PinMemoryTransform:
    """Builds a :class:`~tdrl.envs.PinMemoryTransform`.

    Examples:
        >>> type(make_pin_memory()).__name__
        'PinMemoryTransform'
    """
    _no_keys("PinMemoryTransform", in_keys=in_keys, out_keys=out_keys)
    return PinMemoryTransform()


@dataclass
class FiniteTensorDictCheckConfig(TransformConfig):
    """:class:`~tdrl.envs.FiniteTensorDictCheck` (TorchRL's ``in_keys``/``out_keys`` fields must stay empty).

    Examples:
        >>> from hydra.utils import instantiate
        >>> type(instantiate(FiniteTensorDictCheckConfig())).__name__
        'FiniteTensorDictCheck'
    """

    in_keys: Any = None
    out_keys: Any = None
    _target_: str = _HERE + "make_finite_tensordict_check"


def make_finite_tensordict_check(in_keys: Any = None, out_keys: Any = None) -> FiniteTensorDictCheck:
    """Builds a :class:`~tdrl.envs.FiniteTensorDictCheck`.

    Examples:
        >>> type(make_finite_tensordict_check()).__name__
        'FiniteTensorDictCheck'
    """
    _no_keys("FiniteTensorDictCheck", in_keys=in_keys, out_keys=out_keys)
    return FiniteTensorDictCheck()


@dataclass
class VecGymEnvTransformConfig(TransformConfig):
    """:class:`~tdrl.envs.VecGymEnvTransform` (TorchRL's ``in_keys``/``out_keys`` fields must stay empty).

    Examples:
        >>> from hydra.utils import instantiate
        >>> instantiate(VecGymEnvTransformConfig(final_name="last")).final_name
        'last'
    """

    in_keys: Any = None
    out_keys: Any = None
    final_name: str = "final"
    missing_obs_value: Any = float("nan")
    native_autoreset: bool = False
    _target_: str = _HERE + "make_vec_gym_env_transform"


def make_vec_gym_env_transform(
    in_keys: Any = None, out_keys: Any = None, final_name: str = "final", missing_obs_value: Any = float("nan"),
    native_autoreset: bool = False,
) -> VecGymEnvTransform:
    """Builds a :class:`~tdrl.envs.VecGymEnvTransform`.

    Examples:
        >>> make_vec_gym_env_transform().final_name
        'final'
    """
    _no_keys("VecGymEnvTransform", in_keys=in_keys, out_keys=out_keys)
    return VecGymEnvTransform(final_name, missing_obs_value, native_autoreset=native_autoreset)


@dataclass
class BurnInTransformConfig(TransformConfig):
    """:class:`~tdrl.envs.BurnInTransform` of ``modules`` (a module or list, objects or configs).

    The modules' ``in_keys`` are the inputs: TorchRL's ``in_keys`` field must stay empty.

    Examples:
        >>> from hydra.utils import instantiate
        >>> from tensordict.nn import TensorDictModule
        >>> import torch
        >>> m = TensorDictModule(torch.nn.GRU(2, 3, batch_first=True), ["obs"], ["out", "hidden"])
        >>> instantiate(BurnInTransformConfig(modules=[m], burn_in=2, out_keys=["hidden"])).burn_in
        2
    """

    modules: Any = None
    burn_in: int = 10
    in_keys: Any = None
    out_keys: Any = None
    _target_: str = _HERE + "make_burn_in"
    _convert_: str = "none"


def make_burn_in(modules: Any = None, burn_in: int = 10, in_keys: Any = None, out_keys: Any = None) -> BurnInTransform:
    """Builds a :class:`~tdrl.envs.BurnInTransform`.

    Examples:
        >>> import torch
        >>> from tensordict.nn import TensorDictModule
        >>> m = TensorDictModule(torch.nn.GRU(2, 3, batch_first=True), ["obs"], ["out", "hidden"])
        >>> make_burn_in(m, 3, out_keys=["hidden"]).burn_in
        3
    """
    if modules is None:
        raise ValueError("BurnInTransformConfig: modules is required (the recurrent module(s) to burn in)")
    _no_keys("BurnInTransform", in_keys=in_keys)
    if isinstance(modules, (list, tuple)) or type(modules).__name__ == "ListConfig":
        mods: Any = [build(m) for m in modules]
    else:
        mods = build(modules)
    return BurnInTransform(mods, burn_in, out_keys=normalize_keys(list(out_keys)) if out_keys is not None else None)


@dataclass
class ConditionalSkipConfig(TransformConfig):
    """:class:`~tdrl.envs.ConditionalSkip` with ``cond`` (a callable or a ``_target_`` config of one).

    Examples:
        >>> from hydra.utils import instantiate
        >>> type(instantiate(ConditionalSkipConfig(cond=bool))).__name__
        'ConditionalSkip'
    """

    cond: Any = None
    _target_: str = _HERE + "make_conditional_skip"
    _convert_: str = "none"


def make_conditional_skip(cond: Any = None) -> ConditionalSkip:
    """Builds a :class:`~tdrl.envs.ConditionalSkip`.

    Examples:
        >>> make_conditional_skip(bool).cond is bool
        True
    """
    if cond is None:
        raise ValueError("ConditionalSkipConfig: cond is required (a callable td -> bool)")
    return ConditionalSkip(cond)


@dataclass
class ConditionalPolicySwitchConfig(TransformConfig):
    """:class:`~tdrl.envs.ConditionalPolicySwitch` with ``policy`` and ``condition`` (callables or configs).

    Examples:
        >>> from hydra.utils import instantiate
        >>> cfg = ConditionalPolicySwitchConfig(policy=lambda td: td, condition=lambda td: False)
        >>> type(instantiate(cfg)).__name__
        'ConditionalPolicySwitch'
    """

    policy: Any = None
    condition: Any = None
    _target_: str = _HERE + "make_conditional_policy_switch"
    _convert_: str = "none"


def make_conditional_policy_switch(policy: Any = None, condition: Any = None) -> ConditionalPolicySwitch:
    """Builds a :class:`~tdrl.envs.ConditionalPolicySwitch`.

    Examples:
        >>> type(make_conditional_policy_switch(lambda td: td, bool)).__name__
        'ConditionalPolicySwitch'
    """
    if policy is None or condition is None:
        raise ValueError("ConditionalPolicySwitchConfig: policy and condition are both required")
    return ConditionalPolicySwitch(policy=policy, condition=condition)


@dataclass
class MultiActionConfig(TransformConfig):
    """:class:`~tdrl.envs.MultiAction`.

    Examples:
        >>> from hydra.utils import instantiate
        >>> instantiate(MultiActionConfig(stack_rewards=False)).stack_rewards
        False
    """

    dim: int = 1
    stack_rewards: bool = True
    stack_observations: bool = False
    action_key: Any = None
    chunk_key: Any = None
    _target_: str = _ENVS + "MultiAction"


@dataclass
class EndOfLifeTransformConfig(TransformConfig):
    """:class:`~tdrl.envs.EndOfLifeTransform` (Atari lives).

    Examples:
        >>> from hydra.utils import instantiate
        >>> instantiate(EndOfLifeTransformConfig(eol_key="eol")).eol_key
        'eol'
    """

    eol_key: str = "end-of-life"
    lives_key: str = "lives"
    done_key: str = "done"
    eol_attribute: str = "unwrapped.ale.lives"
    _target_: str = _ENVS + "EndOfLifeTransform"


@dataclass
class HashConfig(_InvKeysConfig):
    """:class:`~tdrl.envs.Hash` of ``in_keys`` into ``out_keys``.

    Examples:
        >>> from hydra.utils import instantiate
        >>> instantiate(HashConfig(in_keys=["obs"], out_keys=["h"])).out_keys
        ['h']
    """

    hash_fn: Any = None
    seed: Any = None
    use_raw_nontensor: bool = False
    repertoire: Any = None
    _target_: str = _ENVS + "Hash"


@dataclass
class ModuleTransformConfig(TransformConfig):
    """:class:`~tdrl.envs.ModuleTransform` of ``module`` (an object or a ``_target_`` config).

    Examples:
        >>> import torch
        >>> from hydra.utils import instantiate
        >>> from tensordict.nn import TensorDictModule
        >>> m = TensorDictModule(torch.nn.Identity(), ["x"], ["y"])
        >>> type(instantiate(ModuleTransformConfig(module=m))).__name__
        'ModuleTransform'
    """

    module: Any = None
    module_factory: Any = None
    device: Any = None
    no_grad: bool = False
    inverse: bool = False
    _target_: str = _HERE + "make_module_transform"
    _convert_: str = "none"


def make_module_transform(
    module: Any = None, module_factory: Any = None, device: Any = None, no_grad: bool = False, inverse: bool = False
) -> ModuleTransform:
    """Builds a :class:`~tdrl.envs.ModuleTransform` (a config ``module`` is instantiated first).

    Examples:
        >>> import torch
        >>> from tensordict.nn import TensorDictModule
        >>> make_module_transform(TensorDictModule(torch.nn.Identity(), ["x"], ["y"]), no_grad=True).no_grad
        True
    """
    return ModuleTransform(
        module=None if module is None else build(module), module_factory=module_factory, device=device,
        no_grad=no_grad, inverse=inverse,
    )


@dataclass
class ExpandAsConfig(TransformConfig):
    """:class:`~tdrl.envs.ExpandAs`: ``in_key`` expanded to the shape of ``ref_key`` (YAML lists are nested keys).

    Examples:
        >>> from hydra.utils import instantiate
        >>> instantiate(ExpandAsConfig(in_key="r", ref_key=["next", "obs"])).ref_key
        ('next', 'obs')
    """

    ref_key: Any = None
    in_key: Any = None
    out_key: Any = None
    _target_: str = _HERE + "make_expand_as"


def make_expand_as(ref_key: Any = None, in_key: Any = None, out_key: Any = None) -> ExpandAs:
    """Builds an :class:`~tdrl.envs.ExpandAs`.

    Examples:
        >>> make_expand_as(["obs"], "r").ref_key
        'obs'
    """
    if ref_key is None or in_key is None:
        raise ValueError(f"ExpandAsConfig: ref_key and in_key are required; got ref_key={ref_key!r}, in_key={in_key!r}")
    return ExpandAs(normalize_key(in_key), normalize_key(ref_key), None if out_key is None else normalize_key(out_key))


# ----------------------------------------------------------------------- transforms TorchRL has no config for
@dataclass
class NextObservationDeltaConfig(TransformConfig):
    """:class:`~tdrl.envs.NextObservationDelta`; dtypes are names such as ``"float16"``.

    Examples:
        >>> from hydra.utils import instantiate
        >>> instantiate(NextObservationDeltaConfig(in_keys=["observation"], delta_dtype="float32")).delta_dtype
        torch.float32
    """

    in_keys: Any = None
    delta_dtype: Any = "float16"
    restore_dtype: Any = "root"
    drop_delta: bool = True
    _target_: str = _HERE + "make_next_observation_delta"


def make_next_observation_delta(
    in_keys: Any = None, delta_dtype: Any = "float16", restore_dtype: Any = "root", drop_delta: bool = True
) -> NextObservationDelta:
    """Builds a :class:`~tdrl.envs.NextObservationDelta` from dtype names.

    Examples:
        >>> make_next_observation_delta(["observation"], restore_dtype="float32").restore_dtype
        torch.float32
    """
    restore = restore_dtype if restore_dtype == "root" else parse_dtype(restore_dtype, "restore_dtype")
    return NextObservationDelta(
        normalize_keys(in_keys), delta_dtype=parse_dtype(delta_dtype, "delta_dtype"), restore_dtype=restore, drop_delta=drop_delta
    )


@dataclass
class NextStateReconstructorConfig(TransformConfig):
    """:class:`~tdrl.envs.NextStateReconstructor` (YAML lists for nested keys).

    Examples:
        >>> from hydra.utils import instantiate
        >>> type(instantiate(NextStateReconstructorConfig(keys=["observation"]))).__name__
        'NextStateReconstructor'
    """

    keys: Any = ("observation",)
    traj_key: Any = ("collector", "traj_ids")
    done_key: Any = ("next", "done")
    step_count_key: Any = None
    fill_value: float = float("nan")
    strict: bool = True
    _target_: str = _ENVS + "NextStateReconstructor"

    def __post_init__(self) -> None:
        self.keys = normalize_keys(list(self.keys))
        for name in ("traj_key", "done_key", "step_count_key"):
            value = getattr(self, name)
            if value is not None:
                setattr(self, name, normalize_key(list(value) if isinstance(value, tuple) else value))


@dataclass
class TerminateTransformConfig(TransformConfig):
    """:class:`~tdrl.envs.TerminateTransform` with ``stop`` (a callable or a ``_target_`` config).

    Examples:
        >>> from hydra.utils import instantiate
        >>> instantiate(TerminateTransformConfig(stop=bool, write_done=False)).write_done
        False
    """

    stop: Any = None
    write_done: bool = True
    _target_: str = _HERE + "make_terminate"
    _convert_: str = "none"


def make_terminate(stop: Any = None, write_done: bool = True) -> TerminateTransform:
    """Builds a :class:`~tdrl.envs.TerminateTransform`.

    Examples:
        >>> make_terminate(bool).write_done
        True
    """
    if stop is None:
        raise ValueError("TerminateTransformConfig: stop is required (a callable td -> bool)")
    return TerminateTransform(stop, write_done=write_done)


@dataclass
class SuccessRewardConfig(TransformConfig):
    """:class:`~tdrl.envs.SuccessReward`.

    Examples:
        >>> from hydra.utils import instantiate
        >>> instantiate(SuccessRewardConfig(scale=2.0)).scale
        2.0
    """

    success_key: Any = "success"
    reward_key: Any = "reward"
    scale: float = 1.0
    _target_: str = _ENVS + "SuccessReward"


@dataclass
class ActionScalingConfig(_InvKeysConfig):
    """:class:`~tdrl.envs.ActionScaling` (``loc``/``scale`` numbers or lists).

    Examples:
        >>> from hydra.utils import instantiate
        >>> instantiate(ActionScalingConfig(standard_normal=False)).standard_normal
        False
    """

    loc: Any = None
    scale: Any = None
    standard_normal: bool = True
    _target_: str = _ENVS + "ActionScaling"


@dataclass
class FlattenActionConfig(_InvKeysConfig):
    """:class:`~tdrl.envs.FlattenAction`.

    Examples:
        >>> from hydra.utils import instantiate
        >>> instantiate(FlattenActionConfig(action_shape=[2, 3])).first_dim
        -2
    """

    first_dim: int = -2
    last_dim: int = -1
    allow_positive_dim: bool = False
    action_shape: Any = None
    _target_: str = _ENVS + "FlattenAction"


@dataclass
class MeanActionSelectorConfig(TransformConfig):
    """:class:`~tdrl.envs.MeanActionSelector`.

    Examples:
        >>> from hydra.utils import instantiate
        >>> type(instantiate(MeanActionSelectorConfig())).__name__
        'MeanActionSelector'
    """

    observation_key: str = "observation"
    action_key: str = "action"
    _target_: str = _ENVS + "MeanActionSelector"
