"""Configs for environment transforms (group ``transform``), one per tdrl transform with its constructor's fields.

Each config converts YAML lists to plain lists (``_convert_: all``) so transforms receive ``list`` keys.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from omegaconf import MISSING

from tdrl.envs import (
    Compose,
    ExcludeTransform,
    NoopResetEnv,
    RewardSum,
    SelectTransform,
    ToTensorImage,
    Transform,
)
from tdrl.trainers.algorithms.configs.common import ConfigBase, build, normalize_keys

__all__ = [
    "ActionDiscretizerConfig", "ActionMaskConfig", "DiscreteActionProjectionConfig", "MultiStepTransformConfig", "TargetReturnConfig", "UnaryTransformConfig", "VecNormV2Config", "CatFramesConfig", "CatTensorsConfig", "ClipTransformConfig", "ComposeConfig",
    "DeviceCastTransformConfig", "DoubleToFloatConfig", "ExcludeTransformConfig", "FlattenObservationConfig",
    "FrameSkipTransformConfig", "GrayScaleConfig", "InitTrackerConfig", "NoopResetEnvConfig",
    "ObservationNormConfig", "RenameTransformConfig", "ResizeConfig", "RewardClippingConfig",
    "RewardScalingConfig", "RewardSumConfig", "SelectTransformConfig", "SqueezeTransformConfig",
    "StepCounterConfig", "ToTensorImageConfig", "TransformConfig", "UnsqueezeTransformConfig", "VecNormConfig",
    "make_compose", "make_exclude", "make_noop_reset_env", "make_reward_sum_transform", "make_select", "make_to_tensor_image",
    "parse_dtype",
]

_ENVS = "tdrl.envs."


@dataclass
class TransformConfig(ConfigBase):
    """Parent of transform configs.

    Examples:
        >>> isinstance(DoubleToFloatConfig(), TransformConfig), TransformConfig()._convert_
        (True, 'all')
    """

    _partial_: bool = False
    _convert_: str = "all"


@dataclass
class _KeysConfig(TransformConfig):
    in_keys: Any = None
    out_keys: Any = None


@dataclass
class _InvKeysConfig(_KeysConfig):
    in_keys_inv: Any = None
    out_keys_inv: Any = None


@dataclass
class NoopResetEnvConfig(TransformConfig):
    """:class:`~tdrl.envs.NoopResetEnv`: random no-op steps after reset.

    Examples:
        >>> from hydra.utils import instantiate
        >>> t = instantiate(NoopResetEnvConfig(noops=5, random=False))
        >>> type(t).__name__, t.noops
        ('NoopResetEnv', 5)
    """

    noops: int = 30
    random: bool = True
    _target_: str = _ENVS + "NoopResetEnv"


def make_noop_reset_env(noops: int = 30, random: bool = True) -> NoopResetEnv:
    """Builds a :class:`~tdrl.envs.NoopResetEnv` (the factory name TorchRL's transform YAML examples use).

    Examples:
        >>> make_noop_reset_env(noops=5).noops
        5
    """
    return NoopResetEnv(noops=noops, random=random)


@dataclass
class StepCounterConfig(TransformConfig):
    """:class:`~tdrl.envs.StepCounter`: counts steps, truncates after ``max_steps``.

    Examples:
        >>> from hydra.utils import instantiate
        >>> instantiate(StepCounterConfig(max_steps=10)).max_steps
        10
    """

    max_steps: int | None = None
    truncated_key: str | None = "truncated"
    step_count_key: str | None = "step_count"
    update_done: bool = True
    _target_: str = _ENVS + "StepCounter"


@dataclass
class ComposeConfig(TransformConfig):
    """:class:`~tdrl.envs.Compose` of ``transforms`` (a list of transform configs).

    Examples:
        >>> from hydra.utils import instantiate
        >>> len(instantiate(ComposeConfig(transforms=[StepCounterConfig(), InitTrackerConfig()])))
        2
    """

    transforms: Any = None
    _target_: str = "tdrl.trainers.algorithms.configs.transforms.make_compose"


def make_compose(transforms: Any = None) -> Compose:
    """Builds a :class:`~tdrl.envs.Compose` from a list of transforms or transform configs.

    Examples:
        >>> from tdrl.envs import StepCounter
        >>> len(make_compose([StepCounter()]))
        1
    """
    items: list[Transform] = [build(t) for t in (transforms or [])]
    return Compose(*items)


@dataclass
class DoubleToFloatConfig(_InvKeysConfig):
    """:class:`~tdrl.envs.DoubleToFloat`.

    Examples:
        >>> from hydra.utils import instantiate
        >>> t = instantiate(DoubleToFloatConfig(in_keys=["observation"]))
        >>> type(t).__name__, t.in_keys
        ('DoubleToFloat', ['observation'])
    """

    _target_: str = _ENVS + "DoubleToFloat"


@dataclass
class ToTensorImageConfig(_KeysConfig):
    """:class:`~tdrl.envs.ToTensorImage`; ``dtype`` is a name such as ``"torch.float32"`` or ``"float16"``.

    Examples:
        >>> from hydra.utils import instantiate
        >>> instantiate(ToTensorImageConfig(dtype="torch.float16")).dtype
        torch.float16
    """

    from_int: bool | None = None
    unsqueeze: bool = False
    dtype: str | None = None
    shape_tolerant: bool = False
    _target_: str = "tdrl.trainers.algorithms.configs.transforms.make_to_tensor_image"


def parse_dtype(value: str | torch.dtype, where: str) -> torch.dtype:
    """A torch dtype from its YAML name (``"torch.float32"`` or ``"float32"``); ``where`` names the field in errors.

    Examples:
        >>> parse_dtype("torch.float16", "x"), parse_dtype("int64", "x")
        (torch.float16, torch.int64)
    """
    if isinstance(value, torch.dtype):
        return value
    resolved = getattr(torch, str(value).removeprefix("torch."), None)
    if not isinstance(resolved, torch.dtype):
        raise ValueError(f"{where}: {value!r} is not a torch dtype (e.g. 'torch.float32')")
    return resolved


def make_to_tensor_image(
    from_int: bool | None = None,
    unsqueeze: bool = False,
    dtype: str | torch.dtype | None = None,
    *,
    in_keys: Any = None,
    out_keys: Any = None,
    shape_tolerant: bool = False,
) -> ToTensorImage:
    """Builds a :class:`~tdrl.envs.ToTensorImage`, reading ``dtype`` from its YAML name."""
    if dtype is not None:
        dtype = parse_dtype(dtype, "to_tensor_image.dtype")
    return ToTensorImage(from_int, unsqueeze, dtype, in_keys=normalize_keys(in_keys),
                         out_keys=normalize_keys(out_keys), shape_tolerant=shape_tolerant)


@dataclass
class ClipTransformConfig(_InvKeysConfig):
    """:class:`~tdrl.envs.ClipTransform`.

    Examples:
        >>> import torch
        >>> from hydra.utils import instantiate
        >>> from tensordict import TensorDict
        >>> t = instantiate(ClipTransformConfig(in_keys=["observation"], low=-1.0, high=1.0))
        >>> t(TensorDict(observation=torch.tensor([-3.0, 0.5, 2.0])))["observation"]
        tensor([-1.0000,  0.5000,  1.0000])
    """

    low: float | None = None
    high: float | None = None
    _target_: str = _ENVS + "ClipTransform"


@dataclass
class ResizeConfig(_KeysConfig):
    """:class:`~tdrl.envs.Resize`.

    Examples:
        >>> import torch
        >>> from hydra.utils import instantiate
        >>> from tensordict import TensorDict
        >>> t = instantiate(ResizeConfig(in_keys=["pixels"], w=4, h=4))
        >>> t(TensorDict(pixels=torch.rand(3, 8, 8)))["pixels"].shape
        torch.Size([3, 4, 4])
    """

    w: int = 84
    h: int = 84
    interpolation: str = "bilinear"
    _target_: str = _ENVS + "Resize"


@dataclass
class FlattenObservationConfig(_KeysConfig):
    """:class:`~tdrl.envs.FlattenObservation` (``first_dim``/``last_dim`` are required, as in the transform).

    Examples:
        >>> import torch
        >>> from hydra.utils import instantiate
        >>> from tensordict import TensorDict
        >>> t = instantiate(FlattenObservationConfig(in_keys=["pixels"], first_dim=-3, last_dim=-1))
        >>> t(TensorDict(pixels=torch.rand(3, 4, 4)))["pixels"].shape
        torch.Size([48])
    """

    first_dim: int = MISSING
    last_dim: int = MISSING
    allow_positive_dim: bool = False
    _target_: str = _ENVS + "FlattenObservation"


@dataclass
class GrayScaleConfig(_KeysConfig):
    """:class:`~tdrl.envs.GrayScale`.

    Examples:
        >>> import torch
        >>> from hydra.utils import instantiate
        >>> from tensordict import TensorDict
        >>> t = instantiate(GrayScaleConfig(in_keys=["pixels"]))
        >>> t(TensorDict(pixels=torch.rand(3, 4, 4)))["pixels"].shape
        torch.Size([1, 4, 4])
    """

    _target_: str = _ENVS + "GrayScale"


@dataclass
class ObservationNormConfig(_InvKeysConfig):
    """:class:`~tdrl.envs.ObservationNorm`.

    Examples:
        >>> import torch
        >>> from hydra.utils import instantiate
        >>> from tensordict import TensorDict
        >>> t = instantiate(ObservationNormConfig(in_keys=["observation"], loc=1.0, scale=2.0))
        >>> t(TensorDict(observation=torch.tensor([1.0, 2.0])))["observation"]
        tensor([3., 5.])
    """

    loc: float = 0.0
    scale: float = 1.0
    standard_normal: bool = False
    eps: float = 1e-8
    _target_: str = _ENVS + "ObservationNorm"


@dataclass
class CatFramesConfig(_KeysConfig):
    """:class:`~tdrl.envs.CatFrames`.

    Examples:
        >>> from hydra.utils import instantiate
        >>> t = instantiate(CatFramesConfig(in_keys=["pixels"], N=2))
        >>> (t.N, t.dim, t.in_keys)
        (2, -3, ['pixels'])
    """

    N: int = 4
    dim: int = -3
    padding: str = "same"
    padding_value: float = 0.0
    as_inverse: bool = False
    reset_key: Any = None
    done_key: Any = None
    future: bool = False
    mask_key: Any = None
    _target_: str = _ENVS + "CatFrames"


@dataclass
class RewardClippingConfig(_KeysConfig):
    """:class:`~tdrl.envs.RewardClipping`.

    Examples:
        >>> import torch
        >>> from hydra.utils import instantiate
        >>> from tensordict import TensorDict
        >>> t = instantiate(RewardClippingConfig(clamp_min=-1.0, clamp_max=1.0))
        >>> t(TensorDict(reward=torch.tensor([[-5.0], [0.5], [5.0]])))["reward"].flatten()
        tensor([-1.0000,  0.5000,  1.0000])
    """

    clamp_min: float | None = None
    clamp_max: float | None = None
    _target_: str = _ENVS + "RewardClipping"


@dataclass
class RewardScalingConfig(_KeysConfig):
    """:class:`~tdrl.envs.RewardScaling`.

    Examples:
        >>> import torch
        >>> from hydra.utils import instantiate
        >>> from tensordict import TensorDict
        >>> t = instantiate(RewardScalingConfig(loc=1.0, scale=2.0))
        >>> t(TensorDict(reward=torch.tensor([[1.0], [2.0]])))["reward"].flatten()
        tensor([3., 5.])
    """

    loc: float = 0.0
    scale: float = 1.0
    standard_normal: bool = False
    _target_: str = _ENVS + "RewardScaling"


@dataclass
class VecNormConfig(_KeysConfig):
    """:class:`~tdrl.envs.VecNorm`.

    Examples:
        >>> from hydra.utils import instantiate
        >>> t = instantiate(VecNormConfig(in_keys=["observation"], decay=0.9))
        >>> type(t).__name__, t.in_keys
        ('VecNorm', ['observation'])
    """

    decay: float = 0.99
    eps: float = 1e-8
    _target_: str = _ENVS + "VecNorm"


@dataclass
class FrameSkipTransformConfig(TransformConfig):
    """:class:`~tdrl.envs.FrameSkipTransform`.

    Examples:
        >>> from hydra.utils import instantiate
        >>> instantiate(FrameSkipTransformConfig(frame_skip=2)).frame_skip
        2
    """

    frame_skip: int = 4
    _target_: str = _ENVS + "FrameSkipTransform"


@dataclass
class DeviceCastTransformConfig(_InvKeysConfig):
    """:class:`~tdrl.envs.DeviceCastTransform`.

    Examples:
        >>> import torch
        >>> from hydra.utils import instantiate
        >>> from tensordict import TensorDict
        >>> t = instantiate(DeviceCastTransformConfig(device="cpu"))
        >>> t(TensorDict(observation=torch.zeros(2))).device
        device(type='cpu')
    """

    device: str = "cpu"
    orig_device: Any = None
    _target_: str = _ENVS + "DeviceCastTransform"


@dataclass
class UnsqueezeTransformConfig(_InvKeysConfig):
    """:class:`~tdrl.envs.UnsqueezeTransform` (dims count from the end: the default is the last one).

    Examples:
        >>> import torch
        >>> from hydra.utils import instantiate
        >>> from tensordict import TensorDict
        >>> t = instantiate(UnsqueezeTransformConfig(in_keys=["observation"], dim=-1))
        >>> t(TensorDict(observation=torch.zeros(3)))["observation"].shape
        torch.Size([3, 1])
    """

    dim: int = -1
    allow_positive_dim: bool = False
    _target_: str = _ENVS + "UnsqueezeTransform"


@dataclass
class SqueezeTransformConfig(_InvKeysConfig):
    """:class:`~tdrl.envs.SqueezeTransform` (dims count from the end: the default is the last one).

    Examples:
        >>> import torch
        >>> from hydra.utils import instantiate
        >>> from tensordict import TensorDict
        >>> t = instantiate(SqueezeTransformConfig(in_keys=["observation"], dim=-1))
        >>> t(TensorDict(observation=torch.zeros(3, 1)))["observation"].shape
        torch.Size([3])
    """

    dim: int = -1
    _target_: str = _ENVS + "SqueezeTransform"


@dataclass
class CatTensorsConfig(TransformConfig):
    """:class:`~tdrl.envs.CatTensors`.

    Examples:
        >>> import torch
        >>> from hydra.utils import instantiate
        >>> from tensordict import TensorDict
        >>> t = instantiate(CatTensorsConfig(in_keys=["a", "b"], out_key="ab"))
        >>> t(TensorDict(a=torch.zeros(2), b=torch.ones(1)))["ab"]
        tensor([0., 0., 1.])
    """

    in_keys: Any = None
    out_key: Any = "observation_vector"
    dim: int = -1
    del_keys: bool = True
    unsqueeze_if_oor: bool = False
    sort: bool = True
    _target_: str = _ENVS + "CatTensors"


@dataclass
class RewardSumConfig(_KeysConfig):
    """:class:`~tdrl.envs.RewardSum`: the episode return in ``out_keys`` (default ``episode_reward``).

    Examples:
        >>> from hydra.utils import instantiate
        >>> instantiate(RewardSumConfig(in_keys=["reward"], out_keys=["reward_sum"])).out_keys
        ['reward_sum']
    """

    reset_keys: Any = None
    reward_spec: bool = False
    _target_: str = "tdrl.trainers.algorithms.configs.transforms.make_reward_sum_transform"


def make_reward_sum_transform(
    in_keys: Any = None, out_keys: Any = None, reset_keys: Any = None, *, reward_spec: bool = False
) -> RewardSum:
    """Builds a :class:`~tdrl.envs.RewardSum`, reading YAML lists as (nested) keys.

    Examples:
        >>> make_reward_sum_transform(in_keys=[["agents", "reward"]]).in_keys
        [('agents', 'reward')]
    """
    return RewardSum(in_keys=normalize_keys(in_keys), out_keys=normalize_keys(out_keys),
                     reset_keys=normalize_keys(reset_keys), reward_spec=reward_spec)


@dataclass
class ExcludeTransformConfig(TransformConfig):
    """:class:`~tdrl.envs.ExcludeTransform` of ``exclude_keys``.

    Examples:
        >>> import torch
        >>> from hydra.utils import instantiate
        >>> from tensordict import TensorDict
        >>> t = instantiate(ExcludeTransformConfig(exclude_keys=["pixels"]))
        >>> sorted(t(TensorDict(pixels=torch.zeros(1), observation=torch.zeros(1))).keys())
        ['observation']
    """

    exclude_keys: Any = None
    inverse: bool = False
    _target_: str = "tdrl.trainers.algorithms.configs.transforms.make_exclude"


def make_exclude(exclude_keys: Any = None, inverse: bool = False) -> ExcludeTransform:
    """Builds an :class:`~tdrl.envs.ExcludeTransform` from a key list.

    Examples:
        >>> make_exclude(["pixels"]).excluded_keys
        ['pixels']
    """
    return ExcludeTransform(*(normalize_keys(exclude_keys) or []), inverse=inverse)


@dataclass
class SelectTransformConfig(TransformConfig):
    """:class:`~tdrl.envs.SelectTransform` of ``include_keys``.

    Examples:
        >>> import torch
        >>> from hydra.utils import instantiate
        >>> from tensordict import TensorDict
        >>> t = instantiate(SelectTransformConfig(include_keys=["observation"]))
        >>> sorted(t(TensorDict(pixels=torch.zeros(1), observation=torch.zeros(1))).keys())
        ['observation']
    """

    include_keys: Any = None
    keep_rewards: bool = True
    keep_dones: bool = True
    _target_: str = "tdrl.trainers.algorithms.configs.transforms.make_select"


def make_select(include_keys: Any = None, keep_rewards: bool = True, keep_dones: bool = True) -> SelectTransform:
    """Builds a :class:`~tdrl.envs.SelectTransform` from a key list.

    Examples:
        >>> make_select(["observation"]).selected_keys
        ['observation']
    """
    keys = normalize_keys(include_keys) or []
    return SelectTransform(*keys, keep_rewards=keep_rewards, keep_dones=keep_dones)


@dataclass
class InitTrackerConfig(TransformConfig):
    """:class:`~tdrl.envs.InitTracker`.

    Examples:
        >>> from hydra.utils import instantiate
        >>> instantiate(InitTrackerConfig(init_key="first")).init_key
        'first'
    """

    init_key: str = "is_init"
    _target_: str = _ENVS + "InitTracker"


@dataclass
class RenameTransformConfig(_InvKeysConfig):
    """:class:`~tdrl.envs.RenameTransform` (``in_keys`` -> ``out_keys``).

    Examples:
        >>> import torch
        >>> from hydra.utils import instantiate
        >>> from tensordict import TensorDict
        >>> t = instantiate(RenameTransformConfig(in_keys=["a"], out_keys=["b"]))
        >>> sorted(t(TensorDict(a=torch.zeros(1))).keys())
        ['b']
    """

    in_keys: Any = MISSING
    out_keys: Any = MISSING
    create_copy: bool = False
    _target_: str = _ENVS + "RenameTransform"


@dataclass
class ActionMaskConfig(TransformConfig):
    """:class:`~tdrl.envs.ActionMask`.

    Examples:
        >>> from hydra.utils import instantiate
        >>> t = instantiate(ActionMaskConfig(mask_key="mask"))
        >>> type(t).__name__, t.in_keys
        ('ActionMask', ['action', 'mask'])
    """

    action_key: Any = "action"
    mask_key: Any = "action_mask"
    _target_: str = _ENVS + "ActionMask"


@dataclass
class VecNormV2Config(_KeysConfig):
    """:class:`~tdrl.envs.VecNormV2` (TorchRL's config defaults: ``decay=0.99``, ``eps=1e-8``).

    Examples:
        >>> from hydra.utils import instantiate
        >>> instantiate(VecNormV2Config(in_keys=["observation"], decay=0.9)).decay
        0.9
    """

    decay: float = 0.99
    eps: float = 1e-8
    reduce_batch_dims: bool = False
    _target_: str = _ENVS + "VecNormV2"


@dataclass
class ActionDiscretizerConfig(TransformConfig):
    """:class:`~tdrl.envs.ActionDiscretizer`.

    Examples:
        >>> from hydra.utils import instantiate
        >>> instantiate(ActionDiscretizerConfig(num_intervals=5)).num_intervals
        5
    """

    num_intervals: int = 10
    action_key: Any = "action"
    out_action_key: Any = None
    sampling: Any = None
    categorical: bool = True
    _target_: str = _ENVS + "ActionDiscretizer"


@dataclass
class DiscreteActionProjectionConfig(TransformConfig):
    """:class:`~tdrl.envs.DiscreteActionProjection` (the constructor's fields; TorchRL's config has a
    ``num_actions`` field its own class rejects).

    Examples:
        >>> from hydra.utils import instantiate
        >>> type(instantiate(DiscreteActionProjectionConfig(num_actions_effective=2, max_actions=4))).__name__
        'DiscreteActionProjection'
    """

    num_actions_effective: int = MISSING
    max_actions: int = MISSING
    action_key: Any = "action"
    include_forward: bool = True
    _target_: str = _ENVS + "DiscreteActionProjection"


@dataclass
class MultiStepTransformConfig(TransformConfig):
    """:class:`~tdrl.envs.MultiStepTransform` (a replay-buffer transform; TorchRL's config also lists
    ``in_keys``/``out_keys``, which its own class rejects).

    Examples:
        >>> from hydra.utils import instantiate
        >>> type(instantiate(MultiStepTransformConfig(n_steps=2, gamma=0.9))).__name__
        'MultiStepTransform'
    """

    n_steps: int = 3
    gamma: float = 0.99
    reward_keys: Any = None
    done_key: Any = None
    done_keys: Any = None
    mask_key: Any = None
    _target_: str = _ENVS + "MultiStepTransform"


@dataclass
class TargetReturnConfig(_KeysConfig):
    """:class:`~tdrl.envs.TargetReturn`.

    Examples:
        >>> from hydra.utils import instantiate
        >>> type(instantiate(TargetReturnConfig(target_return=200.0, out_keys=["return_to_go"]))).__name__
        'TargetReturn'
    """

    target_return: float = 10.0
    mode: str = "reduce"
    reset_key: Any = None
    _target_: str = _ENVS + "TargetReturn"


@dataclass
class UnaryTransformConfig(_InvKeysConfig):
    """:class:`~tdrl.envs.UnaryTransform` (``fn``/``inv_fn``: callables, e.g. a ``_target_`` node).

    Examples:
        >>> from hydra.utils import instantiate
        >>> cfg = UnaryTransformConfig(in_keys=["observation"], out_keys=["neg"], fn={"_target_": "torch.neg", "_partial_": True})
        >>> type(instantiate(cfg)).__name__
        'UnaryTransform'
    """

    fn: Any = MISSING
    inv_fn: Any = None
    use_raw_nontensor: bool = False
    _target_: str = _ENVS + "UnaryTransform"


# TorchRL's private factory name: a TorchRL YAML's ``_target_`` after the import swap resolves here.
_make_reward_sum_transform = make_reward_sum_transform
