"""World models as TensorDict modules: ``WorldModelWrapper`` (transition + reward) and ``WorldModel``.

Both are what a :class:`~tdrl.envs.model_based.ModelBasedEnvBase` steps with; rollouts themselves belong to the
env (``env.rollout``), not to the model.
"""

from __future__ import annotations

from tensordict import TensorDictBase
from tensordict.nn import TensorDictModule, TensorDictModuleBase, TensorDictSequential

__all__ = ["WorldModel", "WorldModelWrapper"]


class WorldModelWrapper(TensorDictSequential):
    """A transition model followed by a reward model, run in sequence.

    Args:
        transition_model: writes the (next) world state, e.g. ``("state", "action") -> "state"``.
        reward_model: reads the world state and writes ``"reward"``.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from tensordict.nn import TensorDictModule
        >>> model = WorldModelWrapper(
        ...     TensorDictModule(torch.nn.Linear(3, 2), ["obs_action"], ["state"]),
        ...     TensorDictModule(torch.nn.Linear(2, 1), ["state"], ["reward"]),
        ... )
        >>> model(TensorDict({"obs_action": torch.randn(4, 3)}, [4]))["reward"].shape
        torch.Size([4, 1])
        >>> model.get_reward_operator() is model.module[1]
        True
    """

    def __init__(self, transition_model: TensorDictModule, reward_model: TensorDictModule) -> None:
        super().__init__(transition_model, reward_model)

    def get_transition_model_operator(self) -> TensorDictModule:
        """The transition model (observation -> world state, or world state -> next world state)."""
        return self.module[0]

    def get_reward_operator(self) -> TensorDictModule:
        """The reward model (world state -> reward)."""
        return self.module[1]


class WorldModel(TensorDictModuleBase):
    """Encoder, dynamics, reward head and optional done head and decoder, each called by key.

    ``forward`` runs them all; :meth:`encode`, :meth:`step` (dynamics and heads, no encoder) and
    :meth:`decode` run parts. :class:`~tdrl.envs.model_based.WorldModelEnv` steps with :attr:`step_module`.

    Args:
        encoder: observation -> latent.
        dynamics: ``(latent, "action") -> ("next", latent)``.
        reward_head: ``("next", latent) -> ("next", "reward")``.

    Keyword Args:
        done_head: ``("next", latent) -> ("next", "done")``.
        decoder: latent -> reconstructed observation (needed by :meth:`decode`).

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from tensordict.nn import TensorDictModule as Mod
        >>> wm = WorldModel(
        ...     Mod(torch.nn.Linear(3, 2), ["observation"], ["latent"]),
        ...     Mod(lambda z, a: z + a, ["latent", "action"], [("next", "latent")]),
        ...     Mod(torch.nn.Linear(2, 1), [("next", "latent")], [("next", "reward")]),
        ... )
        >>> out = wm(TensorDict({"observation": torch.randn(5, 3), "action": torch.randn(5, 2)}, [5]))
        >>> out["next", "reward"].shape
        torch.Size([5, 1])
    """

    def __init__(
        self,
        encoder: TensorDictModule,
        dynamics: TensorDictModule,
        reward_head: TensorDictModule,
        *,
        done_head: TensorDictModule | None = None,
        decoder: TensorDictModule | None = None,
    ) -> None:
        super().__init__()
        self.encoder = encoder
        self.dynamics = dynamics
        self.reward_head = reward_head
        self.done_head = done_head
        self.decoder = decoder
        heads = [m for m in (done_head, decoder) if m is not None]
        self._full_seq = TensorDictSequential(encoder, dynamics, reward_head, *heads)
        self._step_seq = TensorDictSequential(dynamics, reward_head, *heads)
        self.in_keys = self._full_seq.in_keys
        self.out_keys = self._full_seq.out_keys

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Encoder, dynamics, reward head, then the done head and decoder if given."""
        return self._full_seq(tensordict)

    def encode(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Runs the encoder only."""
        return self.encoder(tensordict)

    def step(self, tensordict: TensorDictBase) -> TensorDictBase:
        """One imagined step from the latent already in ``tensordict`` (the encoder is not run)."""
        return self._step_seq(tensordict)

    def decode(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Runs the decoder; raises ``RuntimeError`` when the model has none."""
        if self.decoder is None:
            raise RuntimeError("WorldModel.decode requires a decoder module. Pass decoder= at construction.")
        return self.decoder(tensordict)

    @property
    def step_module(self) -> TensorDictSequential:
        """Dynamics and heads without the encoder (what a model-based env steps with)."""
        return self._step_seq
