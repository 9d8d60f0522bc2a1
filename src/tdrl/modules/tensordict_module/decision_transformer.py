"""``DecisionTransformerInferenceWrapper``: runs a Decision Transformer policy on a masked context window and
keeps the last step's action (TorchRL's path: ``torchrl.modules.tensordict_module.actors``)."""

from __future__ import annotations

import torch
from tensordict import TensorDictBase, unravel_key
from tensordict.nn import TensorDictModule, TensorDictModuleWrapper
from tensordict.utils import NestedKey

from tdrl.data import Composite, TensorSpec

__all__ = ["DecisionTransformerInferenceWrapper"]


class DecisionTransformerInferenceWrapper(TensorDictModuleWrapper):
    """Masks a Decision Transformer's input sequences to the last ``inference_context`` steps, runs the policy
    and returns a copy whose action and return-to-go are those of the last step.

    Observations and returns-to-go older than the context are zeroed; actions are shifted one step left
    (the action of the last step is not known yet, so a zero is appended) and zeroed outside the context.
    The output holds the unmasked observation sequence, ``action [*B, action_dim]``, ``return_to_go
    [*B, 1]`` and the policy's other outputs; when the time dimension is part of the tensordict's batch
    size it is dropped from it.

    Args:
        policy: the policy, reading the observation, action and return-to-go keys.

    Keyword Args:
        inference_context: how many of the latest steps stay visible (default 5).
        spec: spec of the output (default: the policy's spec).
        device: where the spec is placed.

    Keys are changed with :meth:`set_tensor_keys` (``observation``, ``action``, ``return_to_go``,
    ``out_action``).

    Examples:
        >>> from tensordict import TensorDict
        >>> from tdrl.modules import DecisionTransformer, DTActor
        >>> config = DecisionTransformer.DTConfig(n_embd=16, n_layer=1, n_head=2, n_inner=32, n_positions=60)
        >>> net = TensorDictModule(DTActor(4, 2, transformer_config=config),
        ...                        ["observation", "action", "return_to_go"], ["action"])
        >>> policy = DecisionTransformerInferenceWrapper(net, inference_context=3)
        >>> td = TensorDict({"observation": torch.randn(1, 20, 4), "action": torch.randn(1, 20, 2),
        ...                  "return_to_go": torch.randn(1, 20, 1)}, [1])
        >>> out = policy(td)
        >>> out["action"].shape, out["return_to_go"].shape, out["observation"].shape
        (torch.Size([1, 2]), torch.Size([1, 1]), torch.Size([1, 20, 4]))
    """

    def __init__(
        self,
        policy: TensorDictModule,
        *,
        inference_context: int = 5,
        spec: TensorSpec | None = None,
        device: torch.device | None = None,
    ) -> None:
        super().__init__(policy)
        if inference_context < 1:
            raise ValueError(f"DecisionTransformerInferenceWrapper: inference_context must be >= 1, got {inference_context}")
        self.observation_key: NestedKey = "observation"
        self.action_key: NestedKey = "action"
        self.out_action_key: NestedKey = "action"
        self.return_to_go_key: NestedKey = "return_to_go"
        self.inference_context = inference_context
        if spec is not None:
            if not isinstance(spec, Composite) and len(self.out_keys) >= 1:
                spec = Composite({self.action_key: spec}, shape=spec.shape[:-1])
        else:
            inner = getattr(self.td_module, "_spec", None) or getattr(self.td_module, "spec", None)
            if inner is not None:
                spec = inner.clone()
                if self.action_key not in spec.keys():
                    spec[self.action_key] = None
            else:
                spec = Composite({key: None for key in policy.out_keys})
        self._spec = spec.to(device) if device is not None else spec
        self.checked = False

    @property
    def spec(self) -> TensorSpec:
        """The output spec."""
        return self._spec

    @property
    def in_keys(self) -> list[NestedKey]:  # type: ignore[override]
        return [self.observation_key, self.action_key, self.return_to_go_key]

    @property
    def out_keys(self) -> list[NestedKey]:  # type: ignore[override]
        keys = set(self.td_module.out_keys) | {self.observation_key, self.action_key, self.return_to_go_key}
        return sorted(keys, key=str)

    def set_tensor_keys(self, **kwargs: NestedKey) -> None:
        """Sets ``observation``, ``action`` (the network's input), ``return_to_go`` and ``out_action`` (the
        network's output action, one of the policy's out_keys)."""
        unknown = set(kwargs) - {"observation", "action", "return_to_go", "out_action"}
        if unknown:
            raise TypeError(
                f"DecisionTransformerInferenceWrapper.set_tensor_keys: unknown key(s) {sorted(unknown)}; "
                "accepted: 'observation', 'action', 'return_to_go', 'out_action'"
            )
        out_action = unravel_key(kwargs.get("out_action", self.out_action_key))
        if out_action not in self.td_module.out_keys:
            raise ValueError(
                f"DecisionTransformerInferenceWrapper: out_action {out_action!r} is not an output of the policy "
                f"(its out_keys are {self.td_module.out_keys})"
            )
        self.observation_key = unravel_key(kwargs.get("observation", self.observation_key))
        self.action_key = unravel_key(kwargs.get("action", self.action_key))
        self.return_to_go_key = unravel_key(kwargs.get("return_to_go", self.return_to_go_key))
        self.out_action_key = out_action

    def step(self, frames: int = 1) -> None:
        """No annealed state (kept for the exploration-module interface)."""

    def mask_context(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Writes the masked observation, shifted action and return-to-go sequences into ``tensordict``."""
        obs = tensordict.get(self.observation_key).clone()
        action = tensordict.get(self.action_key).clone()
        rtg = tensordict.get(self.return_to_go_key).clone()
        if not rtg.shape[:-1] == obs.shape[:-1] == action.shape[:-1]:
            raise ValueError(
                "DecisionTransformerInferenceWrapper: return_to_go, observation and action must share their "
                f"[*B, T] dimensions, got {tuple(rtg.shape)}, {tuple(obs.shape)}, {tuple(action.shape)}"
            )
        ctx = self.inference_context
        obs[..., :-ctx, :] = 0
        rtg[..., :-ctx, :] = 0
        # The shift appends a zero for the unknown current action: one fewer past action stays visible.
        action[..., : -(ctx - 1), :] = 0
        pad = torch.zeros(*action.shape[:-2], 1, action.shape[-1], device=action.device, dtype=action.dtype)
        tensordict.set(self.observation_key, obs)
        tensordict.set(self.action_key, torch.cat([action[..., 1:, :], pad], dim=-2))
        tensordict.set(self.return_to_go_key, rtg)
        return tensordict

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:  # type: ignore[override]
        """The policy's output for the last step of the (masked) context."""
        if not self.checked:
            self.set_tensor_keys()
            self.checked = True
        tensordict = tensordict.clone(False)
        obs = tensordict.get(self.observation_key)
        tensordict = self.td_module.forward(self.mask_context(tensordict))
        out_action = tensordict.get(self.out_action_key)
        if tensordict.ndim == out_action.ndim - 1:
            tensordict.batch_size = tensordict.batch_size[:-1]
        tensordict.set(self.out_action_key, out_action[..., -1, :])
        tensordict.set(self.return_to_go_key, tensordict.get(self.return_to_go_key)[..., -1, :])
        tensordict.set(self.observation_key, obs)
        return tensordict
