"""``ActionMask``: keeps the action spec's mask in sync with the env's ``action_mask`` observation."""

from __future__ import annotations

from tensordict import TensorDictBase, unravel_key
from tensordict.utils import NestedKey

from tdrl.envs.transforms._base import Transform
from tdrl.envs.transforms._utils import enclosing_env

__all__ = ["ActionMask"]


class ActionMask(Transform):
    """Updates the mask of a discrete action spec from the ``mask_key`` entry of each reset/step output.

    Random actions (``env.rand_action``, rollouts without a policy) are then drawn among allowed actions.

    Args:
        action_key: the action entry (its spec must be ``Categorical``/``OneHot``-like with ``update_mask``).
        mask_key: the boolean mask entry written by the env.

    Examples:
        >>> t = ActionMask()
        >>> t.in_keys
        ['action', 'action_mask']
    """

    def __init__(self, action_key: NestedKey = "action", mask_key: NestedKey = "action_mask") -> None:
        self.action_key = unravel_key(action_key)
        self.mask_key = unravel_key(mask_key)
        super().__init__(in_keys=[self.action_key, self.mask_key])

    def _call(self, next_tensordict: TensorDictBase) -> TensorDictBase:
        mask = next_tensordict.get(self.mask_key, None)
        if mask is None:
            self._missing(self.mask_key, next_tensordict)
            return next_tensordict
        env = enclosing_env(self)
        if env is None:
            return next_tensordict
        spec = env.full_action_spec[self.action_key]
        if not hasattr(spec, "update_mask"):
            raise TypeError(
                f"ActionMask: the spec of {self.action_key!r} ({type(spec).__name__}) has no update_mask; "
                "use a Categorical/OneHot/MultiCategorical/MultiOneHot action spec"
            )
        spec.update_mask(mask.clone())
        return next_tensordict

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Outside an env: checks that the actions in ``tensordict`` are allowed by its mask."""
        action, mask = tensordict.get(self.action_key, None), tensordict.get(self.mask_key, None)
        if action is None or mask is None:
            return tensordict
        allowed = (
            mask.gather(-1, action.long().unsqueeze(-1)).squeeze(-1)
            if action.shape != mask.shape
            else (mask | ~action.bool()).all(-1)
        )
        if not bool(allowed.all()):
            raise ValueError(
                f"ActionMask: some {self.action_key!r} entries are not allowed by {self.mask_key!r}"
            )
        return tensordict

    def _required_keys(self) -> list[NestedKey]:
        return [self.mask_key]

    def __repr__(self) -> str:
        return f"ActionMask(action_key={self.action_key!r}, mask_key={self.mask_key!r})"
