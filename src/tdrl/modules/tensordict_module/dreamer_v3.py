"""DreamerV3 policies: the discrete one-hot actor and a wrapper drawing its samples from its own seeded stream.

Hafner et al., "Mastering Diverse Domains through World Models" (2023), https://arxiv.org/abs/2301.04104.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import torch
from tensordict import TensorDictBase
from tensordict.nn import (
    InteractionType,
    ProbabilisticTensorDictModule,
    ProbabilisticTensorDictSequential,
    TensorDictModule,
    TensorDictModuleBase,
)
from tensordict.utils import NestedKey
from torch import nn

from tdrl.modules.distributions import OneHotCategorical
from tdrl.modules.models.dreamer_v3 import DreamerV3MLP, dreamer_v3_init
from tdrl.modules.models.two_hot import unimix_probs

__all__ = ["DreamerV3DiscreteActor", "DreamerV3SeededPolicy"]


class _DiscreteActorNet(nn.Module):
    """``(state, belief) -> log(unimix(softmax(logits)))``: the backbone reads the belief first."""

    def __init__(self, in_features: int, out_features: int, depth: int, num_cells: int, norm_eps: float,
                 unimix: float, device) -> None:
        super().__init__()
        self.backbone = DreamerV3MLP(in_features, None, depth=depth, num_cells=num_cells, norm_eps=norm_eps,
                                     device=device)
        self.logits_head = nn.Linear(num_cells, out_features, device=device)
        dreamer_v3_init(self.logits_head)
        with torch.no_grad():
            self.logits_head.weight.mul_(0.01)
        self.unimix = unimix

    def forward(self, state: torch.Tensor, belief: torch.Tensor) -> torch.Tensor:
        logits = self.logits_head(self.backbone(belief, state)).float()
        return unimix_probs(logits, self.unimix).log()


class DreamerV3DiscreteActor(ProbabilisticTensorDictSequential):
    """DreamerV3's one-hot categorical policy over the stochastic state and the belief.

    An RMS-normalised SiLU MLP (belief concatenated before state) with a ``0.01``-scaled output layer writes
    the uniform-mixed log-probabilities to ``logits_key``; a :class:`~tdrl.modules.OneHotCategorical` samples
    ``action_key`` (randomly by default, following :func:`~tdrl.envs.set_exploration_type`) and its
    ``log_prob_key``. ``get_dist(td).rsample()`` gives straight-through samples.

    Args:
        in_features: state plus belief widths.
        out_features: number of actions.

    Keyword Args:
        depth: hidden layers (positive, default 3).
        num_cells: hidden width (default 1024).
        norm_eps: RMS-norm epsilon (default ``1e-4``).
        unimix: uniform fraction in ``[0, 1)`` (default 0.01).
        in_keys: the state and belief keys, in that order (default ``["state", "belief"]``).
        action_key: the one-hot action (default ``"action"``).
        logits_key: the mixed log-probabilities (default ``"logits"``).
        log_prob_key: the sampled action's log-probability (default ``"action_log_prob"``).
        device: parameter device.

    Examples:
        >>> from tensordict import TensorDict
        >>> from tdrl.envs import ExplorationType, set_exploration_type
        >>> actor = DreamerV3DiscreteActor(12, 3, depth=2, num_cells=32)
        >>> data = TensorDict({"state": torch.randn(4, 8), "belief": torch.randn(4, 4)}, [4])
        >>> with set_exploration_type(ExplorationType.DETERMINISTIC):
        ...     result = actor(data)
        >>> result["action"].sum(-1).tolist()
        [1, 1, 1, 1]
        >>> actor.get_dist(data).log_prob(actor.get_dist(data).rsample()).shape
        torch.Size([4])
    """

    def __init__(
        self,
        in_features: int,
        out_features: int,
        *,
        depth: int = 3,
        num_cells: int = 1024,
        norm_eps: float = 1e-4,
        unimix: float = 0.01,
        in_keys: Sequence[NestedKey] | None = None,
        action_key: NestedKey = "action",
        logits_key: NestedKey = "logits",
        log_prob_key: NestedKey = "action_log_prob",
        device: torch.device | str | None = None,
    ) -> None:
        keys = list(in_keys) if in_keys is not None else ["state", "belief"]
        if len(keys) != 2:
            raise ValueError(f"in_keys must be the state and belief keys, in that order, got {keys}")
        if depth < 1:
            raise ValueError(f"depth must be positive, got {depth}")
        if not 0 <= unimix < 1:
            raise ValueError(f"unimix must be in [0, 1), got {unimix}")
        net = _DiscreteActorNet(in_features, out_features, depth, num_cells, norm_eps, unimix, device)
        super().__init__(
            TensorDictModule(net, in_keys=keys, out_keys=[logits_key]),
            ProbabilisticTensorDictModule(
                in_keys={"logits": logits_key},
                out_keys=[action_key],
                distribution_class=OneHotCategorical,
                default_interaction_type=InteractionType.RANDOM,
                return_log_prob=True,
                log_prob_key=log_prob_key,
            ),
        )


class DreamerV3SeededPolicy(TensorDictModuleBase):
    """Runs a policy on its own checkpointable random stream, leaving the caller's RNG state untouched.

    Call ``n`` seeds torch from ``numpy.random.default_rng([seed, n, 0])`` (the same derivation as TorchRL
    0.14.1, so both libraries draw the same actions); ``seed`` and the call count are saved in the state dict.

    Args:
        module: the policy (with ``in_keys`` and ``out_keys``).
        seed: non-negative initial seed.

    Examples:
        >>> from tensordict import TensorDict
        >>> policy = DreamerV3SeededPolicy(DreamerV3DiscreteActor(6, 3, depth=1, num_cells=8), seed=7)
        >>> data = TensorDict({"state": torch.zeros(2, 4), "belief": torch.zeros(2, 2)}, [2])
        >>> saved = policy.state_dict()
        >>> first = policy(data.clone())["action"]
        >>> _ = policy.load_state_dict(saved)
        >>> torch.equal(policy(data.clone())["action"], first)
        True
    """

    def __init__(self, module: TensorDictModuleBase, seed: int) -> None:
        super().__init__()
        if int(seed) < 0:
            raise ValueError(f"seed must be non-negative, got {seed}")
        self.module = module
        self.seed = int(seed)
        self.counter = 0
        self.in_keys = module.in_keys
        self.out_keys = module.out_keys

    def get_extra_state(self) -> dict[str, int]:
        """The seed and the call count (saved with the parameters)."""
        return {"seed": self.seed, "counter": self.counter}

    def set_extra_state(self, state: Mapping[str, int]) -> None:
        """Restores the seed and the call count."""
        self.seed = int(state["seed"])
        self.counter = int(state["counter"])

    def reset_counter(self) -> None:
        """Restarts the call count (e.g. after a setup call that ran the policy before step 0)."""
        self.counter = 0

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        reference = tensordict.get("state", None)
        if reference is None:
            reference = tensordict.get(self.in_keys[0])
        device = reference.device
        devices = [device] if device.type != "cpu" else []
        with torch.random.fork_rng(devices=devices, device_type=device.type):
            words = np.random.default_rng(seed=[self.seed, self.counter, 0]).integers(
                0, np.iinfo(np.uint32).max, (2,), np.uint32
            )
            seed = (int(words[0]) << 32) | int(words[1])
            torch.random.default_generator.manual_seed(seed)
            if devices:
                getattr(torch, device.type).set_rng_state(
                    torch.Generator(device=device).manual_seed(seed).get_state(), device
                )
            self.counter += 1
            return self.module(tensordict)
