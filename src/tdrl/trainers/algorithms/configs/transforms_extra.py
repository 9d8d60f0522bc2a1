"""More transform configs (group ``transform``): reward shaping, cropping, timing and bookkeeping transforms.

Field names are TorchRL's. Where TorchRL's own config names a field its transform does not take
(``center_crop``'s ``height``/``width``, ``dtype_cast``'s ``dtype``, ``random_crop_tensordict``'s
``crop_size``, ``tensordict_primer``'s ``primer_spec``), the ``_target_`` is a small factory that maps the
field onto the transform's argument, so the TorchRL field works here (it raises a TypeError on TorchRL 0.14.1;
``docs/differences.md``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tdrl.data import Composite
from tdrl.envs import CenterCrop, Crop, DTypeCastTransform, RandomCropTensorDict, TensorDictPrimer, Tokenizer
from tdrl.trainers.algorithms.configs.common import normalize_key, normalize_keys
from tdrl.trainers.algorithms.configs.transforms import TransformConfig, _KeysConfig, parse_dtype

__all__ = [
    "BinarizeRewardConfig", "CenterCropConfig", "CropConfig", "DTypeCastTransformConfig", "LineariseRewardsConfig",
    "PermuteTransformConfig", "RandomCropTensorDictConfig", "RemoveEmptySpecsConfig", "Reward2GoTransformConfig",
    "SignTransformConfig", "TensorDictPrimerConfig", "TimeMaxPoolConfig", "TimerConfig", "TokenizerConfig",
    "TrajCounterConfig", "make_center_crop", "make_crop", "make_dtype_cast", "make_random_crop_tensordict",
    "make_tensordict_primer", "make_tokenizer",
]

_ENVS = "tdrl.envs."
_HERE = "tdrl.trainers.algorithms.configs.transforms_extra."


@dataclass
class BinarizeRewardConfig(_KeysConfig):
    """:class:`~tdrl.envs.BinarizeReward`: the reward becomes ``reward > 0``.

    Examples:
        >>> from hydra.utils import instantiate
        >>> type(instantiate(BinarizeRewardConfig())).__name__
        'BinarizeReward'
    """

    _target_: str = _ENVS + "BinarizeReward"


@dataclass
class SignTransformConfig(_KeysConfig):
    """:class:`~tdrl.envs.SignTransform`: the sign of each entry (``-1``, ``0``, ``1``).

    Examples:
        >>> import torch
        >>> from hydra.utils import instantiate
        >>> from tensordict import TensorDict
        >>> t = instantiate(SignTransformConfig(in_keys=["observation"]))
        >>> t(TensorDict(observation=torch.tensor([-2.0, 0.0, 3.0])))["observation"]
        tensor([-1.,  0.,  1.])
    """

    _target_: str = _ENVS + "SignTransform"


@dataclass
class LineariseRewardsConfig(_KeysConfig):
    """:class:`~tdrl.envs.LineariseRewards`: a weighted sum of a multi-objective reward.

    Examples:
        >>> from hydra.utils import instantiate
        >>> instantiate(LineariseRewardsConfig(in_keys=["reward"], weights=[1.0, 2.0])).weights.tolist()
        [1.0, 2.0]
    """

    weights: Any = None
    _target_: str = _ENVS + "LineariseRewards"


@dataclass
class Reward2GoTransformConfig(_KeysConfig):
    """:class:`~tdrl.envs.Reward2GoTransform`: discounted reward-to-go over stored trajectories.

    Examples:
        >>> from hydra.utils import instantiate
        >>> t = instantiate(Reward2GoTransformConfig(gamma=0.5, in_keys=["reward"], out_keys=["reward_to_go"]))
        >>> t.gamma.item(), t.out_keys
        (0.5, ['reward_to_go'])
    """

    gamma: float = 0.99
    done_key: Any = "done"
    _target_: str = _ENVS + "Reward2GoTransform"


@dataclass
class PermuteTransformConfig(_KeysConfig):
    """:class:`~tdrl.envs.PermuteTransform`: permutes the trailing dims (``dims`` is required, negative indices).

    Examples:
        >>> from hydra.utils import instantiate
        >>> instantiate(PermuteTransformConfig(dims=[-1, -3, -2], in_keys=["pixels"])).dims
        (-1, -3, -2)
    """

    dims: Any = None
    in_keys_inv: Any = None
    out_keys_inv: Any = None
    _target_: str = _ENVS + "PermuteTransform"


@dataclass
class TimeMaxPoolConfig(_KeysConfig):
    """:class:`~tdrl.envs.TimeMaxPool`: the max over the last ``T`` observations.

    TorchRL's config field ``dim`` is not an argument of the transform; ``T`` is.

    Examples:
        >>> from hydra.utils import instantiate
        >>> t = instantiate(TimeMaxPoolConfig(in_keys=["observation"], T=3))
        >>> type(t).__name__, t.T, t.in_keys
        ('TimeMaxPool', 3, ['observation'])
    """

    T: int = 1
    reset_key: Any = None
    _target_: str = _ENVS + "TimeMaxPool"


@dataclass
class TimerConfig(TransformConfig):
    """:class:`~tdrl.envs.Timer`: wall-clock time spent in the policy and in the env per step.

    Examples:
        >>> from hydra.utils import instantiate
        >>> t = instantiate(TimerConfig(time_key="t"))
        >>> type(t).__name__, t.time_key
        ('Timer', 't')
    """

    out_keys: Any = None
    time_key: str = "time"
    _target_: str = _ENVS + "Timer"


@dataclass
class TrajCounterConfig(TransformConfig):
    """:class:`~tdrl.envs.TrajCounter`: a trajectory id written at each reset.

    Examples:
        >>> from hydra.utils import instantiate
        >>> instantiate(TrajCounterConfig(out_key="traj")).out_keys
        ['traj']
    """

    out_key: Any = "traj_count"
    repeats: int | None = None
    _target_: str = _ENVS + "TrajCounter"


@dataclass
class RemoveEmptySpecsConfig(TransformConfig):
    """:class:`~tdrl.envs.RemoveEmptySpecs`: drops empty ``Composite`` entries from specs and data.

    Examples:
        >>> import torch
        >>> from hydra.utils import instantiate
        >>> from tensordict import TensorDict
        >>> t = instantiate(RemoveEmptySpecsConfig())
        >>> list(t(TensorDict(observation=torch.zeros(2), empty=TensorDict())).keys())
        ['observation']
    """

    _target_: str = _ENVS + "RemoveEmptySpecs"


@dataclass
class CenterCropConfig(_KeysConfig):
    """:class:`~tdrl.envs.CenterCrop` of ``height`` x ``width`` pixels (TorchRL's config fields).

    Examples:
        >>> from hydra.utils import instantiate
        >>> crop = instantiate(CenterCropConfig(height=32, width=48))
        >>> crop.h, crop.w
        (32, 48)
    """

    height: int = 84
    width: int = 84
    _target_: str = _HERE + "make_center_crop"


def make_center_crop(height: int = 84, width: int = 84, in_keys: Any = None, out_keys: Any = None) -> CenterCrop:
    """Builds a :class:`~tdrl.envs.CenterCrop` from TorchRL's config fields (``w=width``, ``h=height``).

    Examples:
        >>> make_center_crop(10, 12).w
        12
    """
    return CenterCrop(width, height, in_keys=normalize_keys(in_keys), out_keys=normalize_keys(out_keys))


@dataclass
class CropConfig(_KeysConfig):
    """:class:`~tdrl.envs.Crop`: a ``height`` x ``width`` window whose top-left corner is ``(top, left)``.

    Examples:
        >>> import torch
        >>> from hydra.utils import instantiate
        >>> from tensordict import TensorDict
        >>> t = instantiate(CropConfig(in_keys=["pixels"], top=1, left=2, height=3, width=4))
        >>> t(TensorDict(pixels=torch.rand(3, 8, 8)))["pixels"].shape
        torch.Size([3, 3, 4])
    """

    top: int = 0
    left: int = 0
    height: int = 84
    width: int = 84
    _target_: str = _HERE + "make_crop"


def make_crop(
    top: int = 0, left: int = 0, height: int = 84, width: int = 84, in_keys: Any = None, out_keys: Any = None
) -> Crop:
    """Builds a :class:`~tdrl.envs.Crop` from TorchRL's config fields.

    Examples:
        >>> c = make_crop(top=2, left=3, height=4, width=5)
        >>> c.top, c.left, c.h, c.w
        (2, 3, 4, 5)
    """
    return Crop(width, height, top=top, left=left, in_keys=normalize_keys(in_keys), out_keys=normalize_keys(out_keys))


@dataclass
class DTypeCastTransformConfig(_KeysConfig):
    """:class:`~tdrl.envs.DTypeCastTransform`: entries of ``dtype_in`` are cast to ``dtype`` (TorchRL's field).

    Examples:
        >>> from hydra.utils import instantiate
        >>> t = instantiate(DTypeCastTransformConfig(dtype="torch.float16", dtype_in="torch.float32"))
        >>> t.dtype_in, t.dtype_out
        (torch.float32, torch.float16)
    """

    dtype: str = "torch.float32"
    dtype_in: str = "torch.float64"
    in_keys_inv: Any = None
    out_keys_inv: Any = None
    _target_: str = _HERE + "make_dtype_cast"


def make_dtype_cast(
    dtype: Any = "torch.float32",
    dtype_in: Any = "torch.float64",
    in_keys: Any = None,
    out_keys: Any = None,
    in_keys_inv: Any = None,
    out_keys_inv: Any = None,
) -> DTypeCastTransform:
    """Builds a :class:`~tdrl.envs.DTypeCastTransform` casting ``dtype_in`` entries to ``dtype``.

    Examples:
        >>> make_dtype_cast("float16").dtype_out
        torch.float16
    """
    return DTypeCastTransform(
        parse_dtype(dtype_in, "dtype_cast.dtype_in"), parse_dtype(dtype, "dtype_cast.dtype"),
        in_keys=normalize_keys(in_keys), out_keys=normalize_keys(out_keys),
        in_keys_inv=normalize_keys(in_keys_inv), out_keys_inv=normalize_keys(out_keys_inv),
    )


@dataclass
class RandomCropTensorDictConfig(TransformConfig):
    """:class:`~tdrl.envs.RandomCropTensorDict`: random sub-trajectories of ``crop_size`` steps (TorchRL's field).

    Examples:
        >>> from hydra.utils import instantiate
        >>> instantiate(RandomCropTensorDictConfig(crop_size=4)).sub_seq_len
        4
    """

    crop_size: int | None = None
    sample_dim: int = -1
    mask_key: Any = None
    _target_: str = _HERE + "make_random_crop_tensordict"


def make_random_crop_tensordict(
    crop_size: int | None = None, sample_dim: int = -1, mask_key: Any = None
) -> RandomCropTensorDict:
    """Builds a :class:`~tdrl.envs.RandomCropTensorDict` of ``crop_size`` steps.

    Raises:
        ValueError: ``crop_size`` is not set.

    Examples:
        >>> make_random_crop_tensordict(3).sub_seq_len
        3
    """
    if crop_size is None:
        raise ValueError("random_crop_tensordict.crop_size must be set (the length of the sampled sub-trajectories)")
    key = normalize_key(mask_key) if mask_key is not None else None
    return RandomCropTensorDict(crop_size, sample_dim=sample_dim, mask_key=key)


@dataclass
class TensorDictPrimerConfig(TransformConfig):
    """:class:`~tdrl.envs.TensorDictPrimer` of ``primer_spec`` (TorchRL's field: a ``Composite`` or a dict of specs).

    Examples:
        >>> from hydra.utils import instantiate
        >>> from tdrl.data import Unbounded
        >>> t = instantiate(TensorDictPrimerConfig(primer_spec={"hidden": Unbounded(shape=(3,))}))
        >>> type(t).__name__, list(t.primers.keys())
        ('TensorDictPrimer', ['hidden'])
    """

    primer_spec: Any = None
    random: bool | None = None
    default_value: Any = None
    reset_key: Any = None
    expand_specs: bool | None = None
    _target_: str = _HERE + "make_tensordict_primer"


def make_tensordict_primer(
    primer_spec: Any = None,
    random: bool | None = None,
    default_value: Any = None,
    reset_key: Any = None,
    expand_specs: bool | None = None,
) -> TensorDictPrimer:
    """Builds a :class:`~tdrl.envs.TensorDictPrimer` priming the entries of ``primer_spec``.

    Examples:
        >>> from tdrl.data import Unbounded
        >>> list(make_tensordict_primer({"hidden": Unbounded(shape=(3,))}).primers.keys())
        ['hidden']
    """
    primers = primer_spec if primer_spec is None or isinstance(primer_spec, Composite) else dict(primer_spec)
    key = normalize_key(reset_key) if reset_key is not None else None
    return TensorDictPrimer(primers, random=random, default_value=default_value, reset_key=key,
                            expand_specs=expand_specs)


@dataclass
class TokenizerConfig(_KeysConfig):
    """:class:`~tdrl.envs.Tokenizer`; ``tokenizer`` is a transformers tokenizer or a local path.

    TorchRL's config field ``vocab_size`` is not an argument of the transform (its vocabulary is the tokenizer's).

    Examples:
        >>> cfg = TokenizerConfig(in_keys=["text"], out_keys=["tokens"], max_length=16)
        >>> cfg._target_.rsplit(".", 1)[-1], cfg.max_length, cfg.padding
        ('make_tokenizer', 16, True)
    """

    tokenizer: Any = None
    in_keys_inv: Any = None
    out_keys_inv: Any = None
    use_raw_nontensor: bool = False
    additional_tokens: Any = None
    skip_special_tokens: bool = True
    add_special_tokens: bool = False
    padding: bool = True
    max_length: int | None = None
    return_attention_mask: bool = True
    missing_tolerance: bool = True
    call_before_reset: bool = False
    _target_: str = _HERE + "make_tokenizer"


def make_tokenizer(
    tokenizer: Any = None,
    in_keys: Any = None,
    out_keys: Any = None,
    in_keys_inv: Any = None,
    out_keys_inv: Any = None,
    *,
    use_raw_nontensor: bool = False,
    additional_tokens: Any = None,
    skip_special_tokens: bool = True,
    add_special_tokens: bool = False,
    padding: bool = True,
    max_length: int | None = None,
    return_attention_mask: bool = True,
    missing_tolerance: bool = True,
    call_before_reset: bool = False,
) -> Tokenizer:
    """Builds a :class:`~tdrl.envs.Tokenizer`; a YAML list of ``additional_tokens`` becomes a plain list."""
    return Tokenizer(
        normalize_keys(in_keys), normalize_keys(out_keys), normalize_keys(in_keys_inv), normalize_keys(out_keys_inv),
        tokenizer=tokenizer, use_raw_nontensor=use_raw_nontensor,
        additional_tokens=None if additional_tokens is None else list(additional_tokens),
        skip_special_tokens=skip_special_tokens, add_special_tokens=add_special_tokens, padding=padding,
        max_length=max_length, return_attention_mask=return_attention_mask, missing_tolerance=missing_tolerance,
        call_before_reset=call_before_reset,
    )
