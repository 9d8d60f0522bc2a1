"""Configs for networks (group ``network``: ``mlp``, ``convnet``) and models (group ``model``).

Models wrap a network into a TensorDict module: ``tanh_normal`` and ``categorical`` policies, ``value``
and ``qvalue`` operators, a plain ``tensordict_module``. Sizes left as ``None`` (``in_features``,
``out_features``) are filled from the env specs by :func:`~tdrl.trainers.algorithms.configs.run_config`;
a network with ``in_features: null`` also works on its own (lazy first layer).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, cast

import torch
from omegaconf import MISSING
from tensordict.nn import InteractionType, TensorDictModule

from tdrl.data import Bounded
from tdrl.modules import (
    DreamerV3DiscreteActor,
    NormalParamExtractor,
    OneHotCategorical,
    ProbabilisticActor,
    QValueActor,
    RSSMStateEstimatorV3,
    TanhNormal,
    ValueOperator,
)
from tdrl.trainers.algorithms.configs.common import ConfigBase, build, normalize_key, normalize_keys
from tdrl.trainers.algorithms.configs.module_factories import (
    make_additive_gaussian_module,
    make_tanh_module,
    make_tensordict_sequential,
)

__all__ = [
    "ActivationConfig", "AggregatorConfig", "CategoricalModelConfig", "ConvNetConfig", "LayerConfig",
    "MLPConfig", "ModelConfig", "NetworkConfig", "NormConfig", "QValueModelConfig", "TanhNormalModelConfig",
    "TensorDictModuleConfig", "ValueModelConfig", "make_categorical_model", "make_dreamer_v3_discrete_actor",
    "make_qvalue_model", "make_rssm_state_estimator_v3", "make_tanh_normal_model", "make_tensordict_module", "make_value_model",
]


@dataclass
class _ClassConfig(ConfigBase):
    # A class handed to a network as a factory (``_partial_``), e.g. the activation.
    _target_: str = "torch.nn.Tanh"
    _partial_: bool = True


@dataclass
class ActivationConfig(_ClassConfig):
    """An activation class (default :class:`torch.nn.Tanh`), passed uninstantiated to the network.

    Examples:
        >>> from hydra.utils import instantiate
        >>> act_class = instantiate(ActivationConfig())
        >>> act_class().__class__.__name__
        'Tanh'
        >>> net = instantiate(MLPConfig(in_features=2, out_features=1, num_cells=[4], activation_class="torch.nn.ReLU"))
        >>> type(net[1]).__name__
        'ReLU'
    """


@dataclass
class LayerConfig(_ClassConfig):
    """A layer class (default :class:`torch.nn.Linear`).

    Examples:
        >>> from hydra.utils import instantiate
        >>> layer_class = instantiate(LayerConfig())
        >>> layer_class(3, 2).weight.shape
        torch.Size([2, 3])
    """

    _target_: str = "torch.nn.Linear"


@dataclass
class NormConfig(_ClassConfig):
    """A normalization class (default :class:`torch.nn.BatchNorm1d`).

    Examples:
        >>> from hydra.utils import instantiate
        >>> norm_class = instantiate(NormConfig())
        >>> type(norm_class(4)).__name__
        'BatchNorm1d'
    """

    _target_: str = "torch.nn.BatchNorm1d"


@dataclass
class AggregatorConfig(_ClassConfig):
    """The ConvNet aggregator class (default :class:`~tdrl.modules.models.utils.SquashDims`).

    Examples:
        >>> from hydra.utils import instantiate
        >>> import torch
        >>> squash = instantiate(AggregatorConfig())()
        >>> squash(torch.zeros(2, 3, 4, 4)).shape
        torch.Size([2, 48])
    """

    _target_: str = "tdrl.modules.models.utils.SquashDims"


@dataclass
class NetworkConfig(ConfigBase):
    """Parent of network configs.

    Examples:
        >>> from hydra.utils import instantiate
        >>> import torch
        >>> cfg = MLPConfig(in_features=3, out_features=1, num_cells=[4])
        >>> isinstance(cfg, NetworkConfig), cfg._partial_
        (True, False)
        >>> instantiate(cfg)(torch.zeros(2, 3)).shape
        torch.Size([2, 1])
    """

    _partial_: bool = False
    _convert_: str = "all"


@dataclass
class MLPConfig(NetworkConfig):
    """:class:`~tdrl.modules.MLP`.

    Examples:
        >>> from hydra.utils import instantiate
        >>> net = instantiate(MLPConfig(in_features=4, out_features=2, num_cells=[8]))
        >>> net(torch.zeros(3, 4)).shape
        torch.Size([3, 2])
    """

    in_features: int | None = None
    out_features: Any = None
    depth: int | None = None
    num_cells: Any = None
    activation_class: Any = field(default_factory=ActivationConfig)
    activation_kwargs: Any = None
    norm_class: Any = None
    norm_kwargs: Any = None
    dropout: float | None = None
    bias_last_layer: bool = True
    single_bias_last_layer: bool = False
    layer_class: Any = field(default_factory=LayerConfig)
    layer_kwargs: Any = None
    activate_last_layer: bool = False
    device: Any = None
    _target_: str = "tdrl.modules.MLP"

    def __post_init__(self) -> None:
        if isinstance(self.activation_class, str):
            self.activation_class = ActivationConfig(_target_=self.activation_class)
        if isinstance(self.layer_class, str):
            self.layer_class = LayerConfig(_target_=self.layer_class)


@dataclass
class ConvNetConfig(NetworkConfig):
    """:class:`~tdrl.modules.ConvNet`.

    Examples:
        >>> from hydra.utils import instantiate
        >>> net = instantiate(ConvNetConfig(num_cells=[4], kernel_sizes=3))
        >>> net(torch.zeros(2, 3, 8, 8)).shape
        torch.Size([2, 144])
    """

    in_features: int | None = None
    depth: int | None = None
    num_cells: Any = None
    kernel_sizes: Any = 3
    strides: Any = 1
    paddings: Any = 0
    activation_class: Any = field(default_factory=functools.partial(ActivationConfig, _target_="torch.nn.ELU"))
    activation_kwargs: Any = None
    norm_class: Any = None
    norm_kwargs: Any = None
    bias_last_layer: bool = True
    aggregator_class: Any = field(default_factory=AggregatorConfig)
    aggregator_kwargs: Any = None
    squeeze_output: bool = False
    device: Any = None
    _target_: str = "tdrl.modules.ConvNet"


@dataclass
class ModelConfig(ConfigBase):
    """Parent of model configs: a network wrapped in a TensorDict module reading ``in_keys``.

    Examples:
        >>> cfg = ValueModelConfig(network=MLPConfig(in_features=3, out_features=1), in_keys=["obs"])
        >>> isinstance(cfg, ModelConfig), cfg.in_keys
        (True, ['obs'])
    """

    _partial_: bool = False
    in_keys: Any = None
    out_keys: Any = None
    shared: bool = False


def _interaction_type(value: Any) -> InteractionType:
    if isinstance(value, InteractionType):
        return value
    return InteractionType[str(value).upper()]


def _finish(module: torch.nn.Module, shared: bool, eval_mode: bool = False) -> Any:
    if shared:
        module.share_memory()
    if eval_mode:
        module.eval()
    return module


@dataclass
class TensorDictModuleConfig(ModelConfig):
    """A :class:`~tensordict.nn.TensorDictModule` around ``module`` (a network config).

    Examples:
        >>> from hydra.utils import instantiate
        >>> module = instantiate(TensorDictModuleConfig(module=MLPConfig(in_features=3, out_features=2),
        ...                                             in_keys=["observation"], out_keys=["hidden"]))
        >>> module.in_keys, module.out_keys
        (['observation'], ['hidden'])
    """

    module: Any = MISSING
    _target_: str = "tdrl.trainers.algorithms.configs.modules.make_tensordict_module"


def make_tensordict_module(module: Any, in_keys: Any = None, out_keys: Any = None, shared: bool = False) -> Any:
    """Wraps ``module`` so it reads ``in_keys`` and writes ``out_keys``.

    Examples:
        >>> make_tensordict_module(torch.nn.Linear(2, 2), ["observation"], ["hidden"]).out_keys
        ['hidden']
    """
    # None passes through: TensorDictModule names the missing keys itself
    td_module = TensorDictModule(build(module), in_keys=cast(Any, normalize_keys(in_keys)),
                                 out_keys=cast(Any, normalize_keys(out_keys)))
    return _finish(td_module, shared)


@dataclass
class TanhNormalModelConfig(ModelConfig):
    """A :class:`~tdrl.modules.ProbabilisticActor` with a :class:`~tdrl.modules.TanhNormal` over ``[low, high]``.

    Examples:
        >>> from hydra.utils import instantiate
        >>> actor = instantiate(TanhNormalModelConfig(network=MLPConfig(in_features=3, out_features=2, num_cells=[8])))
        >>> from tensordict import TensorDict
        >>> actor(TensorDict(observation=torch.zeros(5, 3), batch_size=[5]))["action"].shape
        torch.Size([5, 1])
    """

    network: Any = MISSING
    eval_mode: bool = False
    extract_normal_params: bool = True
    scale_mapping: str = "biased_softplus_1.0"
    scale_lb: float = 1e-4
    low: Any = None
    high: Any = None
    tanh_loc: bool = False
    param_keys: Any = None
    exploration_type: Any = "RANDOM"
    return_log_prob: bool = False
    _target_: str = "tdrl.trainers.algorithms.configs.modules.make_tanh_normal_model"

    def __post_init__(self) -> None:
        self.in_keys = ["observation"] if self.in_keys is None else self.in_keys
        self.param_keys = ["loc", "scale"] if self.param_keys is None else self.param_keys
        self.out_keys = ["action"] if self.out_keys is None else self.out_keys


def _bound(value: Any) -> Any:
    if value is None or isinstance(value, (int, float)):
        return value
    return torch.as_tensor(list(value), dtype=torch.get_default_dtype())


def make_tanh_normal_model(
    network: Any,
    in_keys: Any = None,
    out_keys: Any = None,
    shared: bool = False,
    eval_mode: bool = False,
    extract_normal_params: bool = True,
    scale_mapping: str = "biased_softplus_1.0",
    scale_lb: float = 1e-4,
    low: Any = None,
    high: Any = None,
    tanh_loc: bool = False,
    param_keys: Any = None,
    exploration_type: Any = "RANDOM",
    return_log_prob: bool = False,
) -> ProbabilisticActor:
    """Builds a TanhNormal policy: ``network`` writes ``param_keys`` (loc, scale), then an action is sampled.

    Examples:
        >>> actor = make_tanh_normal_model(torch.nn.Linear(3, 4), low=-2.0, high=2.0, return_log_prob=True)
        >>> from tensordict import TensorDict
        >>> sorted(actor(TensorDict(observation=torch.zeros(3), batch_size=[])).keys())
        ['action', 'action_log_prob', 'loc', 'observation', 'scale']
    """
    net = build(network)
    if extract_normal_params:
        net = torch.nn.Sequential(net, NormalParamExtractor(scale_mapping=scale_mapping,
                                                                  scale_lb=cast(Any, scale_lb)))
    param_keys = normalize_keys(param_keys) or ["loc", "scale"]
    dist_kwargs: dict[str, Any] = {k: _bound(v) for k, v in (("low", low), ("high", high)) if v is not None}
    if tanh_loc:
        dist_kwargs["tanh_loc"] = True
    params = TensorDictModule(net, in_keys=normalize_keys(in_keys) or ["observation"], out_keys=param_keys)
    low_t, high_t = dist_kwargs.get("low"), dist_kwargs.get("high")
    # per-dimension bounds give the action shape: the actor then carries its spec (SAC's "auto" entropy reads it)
    spec = Bounded(low=low_t, high=high_t, shape=low_t.shape) if isinstance(low_t, torch.Tensor) and isinstance(
        high_t, torch.Tensor) and low_t.shape == high_t.shape else None
    actor = ProbabilisticActor(
        params, in_keys=param_keys, out_keys=normalize_keys(out_keys) or ["action"], distribution_class=TanhNormal,
        distribution_kwargs=dist_kwargs or None, return_log_prob=return_log_prob, spec=spec,
        default_interaction_type=_interaction_type(exploration_type),
    )
    return _finish(actor, shared, eval_mode)


@dataclass
class CategoricalModelConfig(ModelConfig):
    """A discrete-action :class:`~tdrl.modules.ProbabilisticActor`: ``network`` writes logits (tdrl addition).

    ``one_hot`` picks :class:`~tdrl.modules.OneHotCategorical` (one-hot actions, GymEnv's default encoding)
    or a categorical over indices (``categorical_action_encoding=True`` envs).

    Examples:
        >>> from hydra.utils import instantiate
        >>> actor = instantiate(CategoricalModelConfig(network=MLPConfig(in_features=4, out_features=2, num_cells=[8])))
        >>> from tensordict import TensorDict
        >>> actor(TensorDict(observation=torch.zeros(4), batch_size=[]))["action"].sum()
        tensor(1)
    """

    network: Any = MISSING
    one_hot: bool = True
    eval_mode: bool = False
    exploration_type: Any = "RANDOM"
    return_log_prob: bool = False
    _target_: str = "tdrl.trainers.algorithms.configs.modules.make_categorical_model"


def make_categorical_model(
    network: Any,
    in_keys: Any = None,
    out_keys: Any = None,
    shared: bool = False,
    one_hot: bool = True,
    eval_mode: bool = False,
    exploration_type: Any = "RANDOM",
    return_log_prob: bool = False,
) -> ProbabilisticActor:
    """Builds a categorical policy over the logits ``network`` writes.

    Examples:
        >>> actor = make_categorical_model(torch.nn.Linear(4, 3), one_hot=False)
        >>> from tensordict import TensorDict
        >>> actor(TensorDict(observation=torch.zeros(4), batch_size=[]))["action"].shape
        torch.Size([])
    """
    logits = TensorDictModule(build(network), in_keys=normalize_keys(in_keys) or ["observation"], out_keys=["logits"])
    actor = ProbabilisticActor(
        logits, in_keys=["logits"], out_keys=normalize_keys(out_keys) or ["action"],
        distribution_class=OneHotCategorical if one_hot else torch.distributions.Categorical, return_log_prob=return_log_prob,
        default_interaction_type=_interaction_type(exploration_type),
    )
    return _finish(actor, shared, eval_mode)


@dataclass
class ValueModelConfig(ModelConfig):
    """A :class:`~tdrl.modules.ValueOperator` (writes ``state_value`` by default).

    Examples:
        >>> from hydra.utils import instantiate
        >>> instantiate(ValueModelConfig(network=MLPConfig(in_features=3, out_features=1))).out_keys
        ['state_value']
    """

    network: Any = MISSING
    _target_: str = "tdrl.trainers.algorithms.configs.modules.make_value_model"


def make_value_model(network: Any, in_keys: Any = None, out_keys: Any = None, shared: bool = False) -> ValueOperator:
    """Wraps ``network`` in a :class:`~tdrl.modules.ValueOperator`.

    Examples:
        >>> make_value_model(torch.nn.Linear(3, 1)).in_keys
        ['observation']
    """
    value = ValueOperator(build(network), in_keys=normalize_keys(in_keys), out_keys=normalize_keys(out_keys))
    return _finish(value, shared)


@dataclass
class QValueModelConfig(ModelConfig):
    """A :class:`~tdrl.modules.QValueActor` (greedy action over the action values ``network`` writes).

    Examples:
        >>> from hydra.utils import instantiate
        >>> cfg = QValueModelConfig(network=MLPConfig(in_features=4, out_features=2), action_space="one_hot")
        >>> "action_value" in instantiate(cfg).out_keys
        True
    """

    network: Any = MISSING
    action_space: Any = None
    action_key: Any = None
    action_value_key: Any = None
    chosen_action_value_key: Any = None
    action_mask_key: Any = None
    _target_: str = "tdrl.trainers.algorithms.configs.modules.make_qvalue_model"


def make_qvalue_model(
    network: Any,
    in_keys: Any = None,
    out_keys: Any = None,
    shared: bool = False,
    action_space: Any = None,
    action_key: Any = None,
    action_value_key: Any = None,
    chosen_action_value_key: Any = None,
    action_mask_key: Any = None,
) -> QValueActor:
    """Builds a :class:`~tdrl.modules.QValueActor`; its output keys are fixed by the action keys.

    ``out_keys``, as TorchRL's example YAMLs write it, may name the network's output (one key): it is then the
    ``action_value`` key. Anything else is rejected, since the actor also writes the action and chosen value.

    Examples:
        >>> make_qvalue_model(torch.nn.Linear(4, 2), action_space="categorical").in_keys
        ['observation']
        >>> make_qvalue_model(torch.nn.Linear(4, 2), out_keys=["q"], action_space="one_hot").out_keys[1]
        'q'
    """
    if out_keys is not None:
        names = normalize_keys(out_keys) or []
        if len(names) != 1 or (action_value_key is not None and normalize_key(action_value_key) != names[0]):
            raise ValueError(
                f"a qvalue model's out_keys can only name its network output (the action_value key), got "
                f"{names}; it writes action/action_value/chosen_action_value: set action_key, "
                "action_value_key and chosen_action_value_key instead"
            )
        action_value_key = names[0]
    keys: dict[str, Any] = {name: normalize_key(value) for name, value in (
        ("action_key", action_key), ("action_value_key", action_value_key),
        ("chosen_action_value_key", chosen_action_value_key), ("action_mask_key", action_mask_key),
    ) if value is not None}
    actor = QValueActor(build(network), in_keys=normalize_keys(in_keys), action_space=action_space, **keys)
    return _finish(actor, shared)


def make_dreamer_v3_discrete_actor(
    in_features: int,
    out_features: int,
    depth: int = 3,
    num_cells: int = 1024,
    norm_eps: float = 1e-4,
    unimix: float = 0.01,
    in_keys: Any = None,
    action_key: Any = "action",
    logits_key: Any = "logits",
    log_prob_key: Any = "action_log_prob",
    device: Any = None,
) -> DreamerV3DiscreteActor:
    """:class:`~tdrl.modules.DreamerV3DiscreteActor` with YAML-list keys turned into nested keys.

    Examples:
        >>> make_dreamer_v3_discrete_actor(4, 2, depth=1, num_cells=8, action_key=["agent", "action"]).out_keys[-2]
        ('agent', 'action')
    """
    return DreamerV3DiscreteActor(
        in_features, out_features, depth=depth, num_cells=num_cells, norm_eps=norm_eps, unimix=unimix,
        in_keys=normalize_keys(in_keys), action_key=normalize_key(action_key), logits_key=normalize_key(logits_key),
        log_prob_key=normalize_key(log_prob_key), device=device,
    )


def make_rssm_state_estimator_v3(prior: Any, posterior: Any, in_keys: Any = None,
                                 out_keys: Any = None) -> RSSMStateEstimatorV3:
    """:class:`~tdrl.modules.RSSMStateEstimatorV3` with YAML-list keys turned into nested keys.

    Examples:
        >>> from tdrl.modules import RSSMPosteriorV3, RSSMPriorV3
        >>> prior = RSSMPriorV3(action_dim=2, hidden_dim=8, rnn_hidden_dim=8, num_categoricals=2, num_classes=2)
        >>> post = RSSMPosteriorV3(hidden_dim=8, rnn_hidden_dim=8, obs_embed_dim=4, num_categoricals=2, num_classes=2)
        >>> make_rssm_state_estimator_v3(prior, post, out_keys=[["next", "state"], "belief"]).out_keys
        [('next', 'state'), 'belief']
    """
    return RSSMStateEstimatorV3(prior, posterior, in_keys=normalize_keys(in_keys), out_keys=normalize_keys(out_keys))


# TorchRL's private factory names, so that a TorchRL YAML's ``_target_`` resolves here after the import swap.
_make_tensordict_module = make_tensordict_module
_make_tanh_normal_model = make_tanh_normal_model
_make_value_model = make_value_model
_make_qvalue_model = make_qvalue_model
_make_tensordict_sequential = make_tensordict_sequential
_make_tanh_module = make_tanh_module
_make_additive_gaussian_module = make_additive_gaussian_module
_make_dreamer_v3_discrete_actor = make_dreamer_v3_discrete_actor
_make_rssm_state_estimator_v3 = make_rssm_state_estimator_v3
