"""Policy and value operators: ``Actor``, ``ProbabilisticActor``, ``ValueOperator`` and actor-critic containers."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from tensordict import TensorDictBase
from tensordict.nn import CompositeDistribution, TensorDictModule, TensorDictSequential
from tensordict.utils import NestedKey
from torch import nn

from tdrl.data import Composite, TensorSpec
from tdrl.modules.distributions import Delta
from tdrl.modules.tensordict_module.common import SafeModule
from tdrl.modules.tensordict_module.decision_transformer import DecisionTransformerInferenceWrapper
from tdrl.modules.tensordict_module.multistep import MultiStepActorWrapper
from tdrl.modules.tensordict_module.probabilistic import (
    SafeProbabilisticModule,
    SafeProbabilisticTensorDictSequential,
)
from tdrl.modules.tensordict_module.qvalue import (
    DistributionalQValueActor,
    DistributionalQValueHook,
    DistributionalQValueModule,
    QValueActor,
    QValueHook,
    QValueModule,
)
from tdrl.modules.tensordict_module.sequence import SafeSequential
from tdrl.modules.tensordict_module.tanh import TanhModule

# QValue*, MultiStepActorWrapper and TanhModule live in their own files; they are re-exported here because TorchRL's import path
# is ``torchrl.modules.tensordict_module.actors``.
__all__ = [
    "DecisionTransformerInferenceWrapper",
    "DistributionalQValueActor",
    "DistributionalQValueHook",
    "MultiStepActorWrapper",
    "QValueHook",
    "DistributionalQValueModule",
    "QValueActor",
    "QValueModule",
    "TanhModule",
    "Actor",
    "ProbabilisticActor",
    "ValueOperator",
    "ActorValueOperator",
    "LMHeadActorValueOperator",
    "ActorCriticOperator",
    "ActorCriticWrapper",
]


class Actor(SafeModule):
    """A deterministic policy: reads ``["observation"]`` and writes ``["action"]`` by default.

    Args:
        module: the network.
        in_keys: input keys. Defaults to ``["observation"]``.
        out_keys: output keys. Defaults to ``["action"]``.

    Keyword Args:
        spec: the action spec (a leaf spec is stored under ``"action"``).
        **kwargs: ``safe`` and ``inplace``, see :class:`SafeModule`.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> actor = Actor(torch.nn.Linear(3, 2))
        >>> actor(TensorDict(observation=torch.zeros(4, 3), batch_size=[4]))["action"].shape
        torch.Size([4, 2])
    """

    def __init__(
        self,
        module: nn.Module,
        in_keys: Sequence[NestedKey] | None = None,
        out_keys: Sequence[NestedKey] | None = None,
        *,
        spec: TensorSpec | None = None,
        **kwargs: Any,
    ) -> None:
        in_keys = ["observation"] if in_keys is None else in_keys
        out_keys = ["action"] if out_keys is None else out_keys
        if "action" in out_keys and spec is not None and not isinstance(spec, Composite):
            spec = Composite(action=spec)
        super().__init__(module, in_keys=in_keys, out_keys=out_keys, spec=spec, **kwargs)

    def get_dist(self, tensordict: TensorDictBase) -> torch.distributions.Distribution:
        """Runs the actor and returns a :class:`~tdrl.modules.distributions.Delta` at its action.

        Args:
            tensordict: the input.

        Returns:
            The point-mass distribution.
        """
        return Delta(self(tensordict).get(self.out_keys[0]))


class ProbabilisticActor(SafeProbabilisticTensorDictSequential):
    """A stochastic policy: a network writing distribution parameters, then a sampling module.

    ``return_log_prob=True`` writes the sample's log-probability at ``"action_log_prob"`` (tensordict's
    ``f"{out_key}_log_prob"`` rule with ``composite_lp_aggregate()`` off, as in TorchRL 0.14); pass
    ``log_prob_key=`` to choose another key. Outside ``set_exploration_type``/``set_interaction_type`` the
    actor uses ``default_interaction_type`` (``DETERMINISTIC``: e.g. ``tanh(loc)`` for ``TanhNormal``).

    Args:
        module: a TensorDict module writing the distribution parameters (e.g. ``["loc", "scale"]``).
        in_keys: the parameter keys read by the distribution (list, or dict ``{dist_kwarg: key}``).
        out_keys: the sampled keys. Defaults to ``["action"]`` (or the composite distribution's keys).

    Keyword Args:
        spec: the action spec.
        **kwargs: forwarded to :class:`SafeProbabilisticModule` (``distribution_class``,
            ``distribution_kwargs``, ``return_log_prob``, ``default_interaction_type``, ``log_prob_key``,
            ``safe``, ``cache_dist``, ``num_samples``...).

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from tensordict.nn import NormalParamExtractor, TensorDictModule
        >>> from tdrl.modules import MLP, TanhNormal
        >>> net = TensorDictModule(torch.nn.Sequential(MLP(in_features=3, out_features=4, num_cells=[8]),
        ...                                            NormalParamExtractor()), ["observation"], ["loc", "scale"])
        >>> actor = ProbabilisticActor(net, in_keys=["loc", "scale"], distribution_class=TanhNormal,
        ...                            return_log_prob=True)
        >>> td = actor(TensorDict(observation=torch.zeros(5, 3), batch_size=[5]))
        >>> td["action"].shape, td["action_log_prob"].shape
        (torch.Size([5, 2]), torch.Size([5]))
    """

    def __init__(
        self,
        module: TensorDictModule,
        in_keys: NestedKey | Sequence[NestedKey],
        out_keys: Sequence[NestedKey] | None = None,
        *,
        spec: TensorSpec | None = None,
        **kwargs: Any,
    ) -> None:
        if out_keys is None:
            out_keys = _default_actor_out_keys(kwargs)
        if len(out_keys) == 1 and spec is not None and not isinstance(spec, Composite):
            spec = Composite({out_keys[0]: spec})
        super().__init__(module, SafeProbabilisticModule(in_keys=in_keys, out_keys=out_keys, spec=spec, **kwargs))


def _default_actor_out_keys(kwargs: dict) -> list[NestedKey]:
    if kwargs.get("distribution_class") is not CompositeDistribution:
        return ["action"]
    dist_kwargs = kwargs.get("distribution_kwargs") or {}
    if "distribution_map" not in dist_kwargs:
        raise KeyError("ProbabilisticActor: distribution_kwargs must hold 'distribution_map' for a "
                       "CompositeDistribution.")
    name_map = dist_kwargs.get("name_map")
    return list(name_map.values()) if name_map is not None else list(dist_kwargs["distribution_map"].keys())


class ValueOperator(TensorDictModule):
    """A value network: writes ``"state_value"``, or ``"state_action_value"`` when ``"action"`` is an input.

    Args:
        module: the network.
        in_keys: input keys. Defaults to ``["observation"]``.
        out_keys: output keys. Defaults to ``["state_value"]`` or ``["state_action_value"]``.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from tdrl.modules import MLP
        >>> q = ValueOperator(MLP(in_features=5, out_features=1, num_cells=[8]), in_keys=["observation", "action"])
        >>> td = TensorDict(observation=torch.zeros(4, 3), action=torch.zeros(4, 2), batch_size=[4])
        >>> q(td)["state_action_value"].shape
        torch.Size([4, 1])
    """

    def __init__(
        self,
        module: nn.Module,
        in_keys: Sequence[NestedKey] | None = None,
        out_keys: Sequence[NestedKey] | None = None,
    ) -> None:
        in_keys = ["observation"] if in_keys is None else in_keys
        if out_keys is None:
            out_keys = ["state_action_value"] if "action" in in_keys else ["state_value"]
        super().__init__(module=module, in_keys=in_keys, out_keys=out_keys)


class ActorValueOperator(SafeSequential):
    """A shared trunk followed by a policy head and a value head (both fed by the trunk).

    Args:
        common_operator: the shared trunk.
        policy_operator: the policy head.
        value_operator: the value head.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> common = SafeModule(torch.nn.Linear(3, 4), ["observation"], ["hidden"])
        >>> policy = Actor(torch.nn.Linear(4, 2), in_keys=["hidden"])
        >>> value = ValueOperator(torch.nn.Linear(4, 1), in_keys=["hidden"])
        >>> op = ActorValueOperator(common, policy, value)
        >>> td = TensorDict(observation=torch.zeros(5, 3), batch_size=[5])
        >>> sorted(op.get_policy_operator()(td.clone()).keys())
        ['action', 'hidden', 'observation']
        >>> op.get_value_operator()(td.clone())["state_value"].shape
        torch.Size([5, 1])
    """

    def __init__(
        self,
        common_operator: TensorDictModule,
        policy_operator: TensorDictModule,
        value_operator: TensorDictModule,
    ) -> None:
        super().__init__(common_operator, policy_operator, value_operator)

    def get_policy_operator(self) -> TensorDictSequential:
        """Returns trunk + policy head as a standalone policy."""
        if isinstance(self.module[1], SafeProbabilisticTensorDictSequential):
            return SafeProbabilisticTensorDictSequential(self.module[0], *self.module[1].module)
        return SafeSequential(self.module[0], self.module[1])

    def get_value_operator(self) -> TensorDictSequential:
        """Returns trunk + value head as a standalone value network."""
        return SafeSequential(self.module[0], self.module[2])

    def get_policy_head(self) -> TensorDictModule:
        """Returns the policy head alone."""
        return self.module[1]

    def get_value_head(self) -> TensorDictModule:
        """Returns the value head alone."""
        return self.module[2]


class ActorCriticOperator(ActorValueOperator):
    """Trunk, policy head, then a state-action critic that reads the action the policy wrote.

    The whole module is the critic operator (``get_critic_operator()`` returns ``self``).

    Args:
        common_operator: the shared trunk.
        policy_operator: the policy head.
        value_operator: the critic head; its output must not be ``"state_value"``.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> common = SafeModule(torch.nn.Linear(3, 4), ["observation"], ["hidden"])
        >>> policy = Actor(torch.nn.Linear(4, 2), in_keys=["hidden"])
        >>> critic = ValueOperator(lambda h, a: torch.cat([h, a], -1).sum(-1, keepdim=True),
        ...                        in_keys=["hidden", "action"])
        >>> op = ActorCriticOperator(common, policy, critic)
        >>> op(TensorDict(observation=torch.zeros(5, 3), batch_size=[5]))["state_action_value"].shape
        torch.Size([5, 1])
    """

    def __init__(
        self,
        common_operator: TensorDictModule,
        policy_operator: TensorDictModule,
        value_operator: TensorDictModule,
    ) -> None:
        super().__init__(common_operator, policy_operator, value_operator)
        if self.module[2].out_keys[0] == "state_value":
            raise RuntimeError(
                "ActorCriticOperator: the critic writes 'state_value'; it should write 'state_action_value' and "
                "read 'action'. Use ActorValueOperator for a state-value head."
            )

    def get_critic_operator(self) -> ActorCriticOperator:
        """Returns the full operator (trunk -> policy -> critic)."""
        return self

    def get_value_operator(self) -> TensorDictSequential:
        raise RuntimeError(
            "ActorCriticOperator computes a state-action value; use get_critic_operator() instead of "
            "get_value_operator()."
        )


class ActorCriticWrapper(SafeSequential):
    """A policy followed by a value network, with no shared trunk.

    Args:
        policy_operator: the policy.
        value_operator: the value network.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> op = ActorCriticWrapper(Actor(torch.nn.Linear(3, 2)), ValueOperator(torch.nn.Linear(3, 1)))
        >>> sorted(op(TensorDict(observation=torch.zeros(5, 3), batch_size=[5])).keys())
        ['action', 'observation', 'state_value']
    """

    def __init__(self, policy_operator: TensorDictModule, value_operator: TensorDictModule) -> None:
        super().__init__(policy_operator, value_operator)

    def get_policy_operator(self) -> TensorDictModule:
        """Returns the policy."""
        return self.module[0]

    def get_value_operator(self) -> TensorDictModule:
        """Returns the value network."""
        return self.module[1]

    get_policy_head = get_policy_operator
    get_value_head = get_value_operator


class _LastHidden(nn.Module):
    """The trunk's last hidden state at the last position: ``[B, T, H] -> [B, H]``."""

    def __init__(self, transformer: nn.Module) -> None:
        super().__init__()
        self.transformer = transformer

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        # [0] is the last hidden state whether the model returns a tuple or a ModelOutput; TorchRL 0.14.1 maps the
        # output onto two keys and fails on transformers 5, whose output holds one tensor (docs/differences.md)
        return self.transformer(input_ids=input_ids, attention_mask=attention_mask)[0][:, -1, :]


class LMHeadActorValueOperator(ActorValueOperator):
    """An actor-value operator built from a Hugging Face ``*LMHeadModel`` (a ``.transformer`` trunk and a
    linear ``.lm_head``).

    The trunk reads ``"input_ids"`` / ``"attention_mask"`` and writes ``"x"`` (the hidden state of the last
    position); the policy head is the model's ``lm_head`` giving ``"logits"``, sampled by a categorical into
    ``"action"`` (with its log-prob); the value head is a new bias-free linear layer writing ``"state_value"``.

    Args:
        base_model: the language model (e.g. ``transformers.GPT2LMHeadModel``).

    Examples:
        >>> from tensordict import TensorDict
        >>> class LM(nn.Module):  # the shape of a *LMHeadModel: .transformer and .lm_head
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.transformer = lambda input_ids, attention_mask: (torch.ones(*input_ids.shape, 4),)
        ...         self.lm_head = nn.Linear(4, 6)
        >>> op = LMHeadActorValueOperator(LM())
        >>> td = TensorDict(input_ids=torch.zeros(2, 3, dtype=torch.long), attention_mask=torch.ones(2, 3),
        ...                 batch_size=[2])
        >>> out = op(td)
        >>> out["action"].shape, out["state_value"].shape
        (torch.Size([2]), torch.Size([2, 1]))
    """

    def __init__(self, base_model: nn.Module) -> None:
        for name in ("transformer", "lm_head"):
            if not hasattr(base_model, name):
                raise TypeError(f"LMHeadActorValueOperator: base_model needs a .{name} attribute (a Hugging Face "
                                f"*LMHeadModel); got {type(base_model).__name__}")
        lm_head = base_model.lm_head
        if not isinstance(lm_head, nn.Linear):
            raise TypeError(f"LMHeadActorValueOperator: base_model.lm_head must be an nn.Linear, got "
                            f"{type(lm_head).__name__}")
        common = TensorDictModule(_LastHidden(base_model.transformer), in_keys=["input_ids", "attention_mask"],
                                  out_keys=["x"])
        policy = SafeProbabilisticTensorDictSequential(
            TensorDictModule(lm_head, in_keys=["x"], out_keys=["logits"]),
            SafeProbabilisticModule(in_keys=["logits"], out_keys=["action"],
                                    distribution_class=torch.distributions.Categorical, return_log_prob=True),
        )
        value = TensorDictModule(nn.Linear(lm_head.in_features, 1, bias=False), in_keys=["x"],
                                 out_keys=["state_value"])
        super().__init__(common, policy, value)
