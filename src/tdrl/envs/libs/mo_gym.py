"""MO-Gymnasium (multi-objective gymnasium) environments: ``MOGymEnv`` (by id), ``MOGymWrapper`` (an instance).

They are gymnasium envs whose reward is a vector, one entry per objective: ``GymWrapper`` reads the env's
``reward_space``, so ``("next", "reward")`` has shape ``[*batch, n_objectives]`` (TorchRL path:
``torchrl.envs.libs.gym``). Everything else (keys, done flags, vector envs) is ``GymWrapper``'s.
"""

from __future__ import annotations

from typing import Any

from tdrl.envs.libs.gym import GymEnv, GymWrapper

__all__ = ["MOGymEnv", "MOGymWrapper"]

# MO-Gymnasium 1.3's ids, as TorchRL lists them (some need further extras: mujoco, highway-env, ...).
_MO_ENVS = [
    "deep-sea-treasure-v0",
    "deep-sea-treasure-concave-v0",
    "resource-gathering-v0",
    "fishwood-v0",
    "breakable-bottles-v0",
    "fruit-tree-v0",
    "water-reservoir-v0",
    "four-room-v0",
    "mo-mountaincar-v0",
    "mo-mountaincarcontinuous-v0",
    "mo-lunar-lander-v2",
    "minecart-v0",
    "mo-highway-v0",
    "mo-highway-fast-v0",
    "mo-supermario-v0",
    "mo-reacher-v4",
    "mo-hopper-v4",
    "mo-halfcheetah-v4",
]


def _mo_gymnasium() -> Any:
    try:
        import mo_gymnasium
    except ImportError as err:
        raise ImportError(
            "MOGymEnv/MOGymWrapper need mo-gymnasium: pip install 'tdrl[mogym]' (or mo-gymnasium)"
        ) from err
    return mo_gymnasium


class MOGymWrapper(GymWrapper):
    """Wraps an MO-Gymnasium env; the reward is the vector of its objectives.

    Args:
        env: the environment (``mo_gymnasium.make(...)``).
        categorical_action_encoding: discrete actions as indices instead of one-hot.
        **kwargs: as ``GymWrapper`` (``from_pixels``, ``frame_skip``, ``device``, ...).

    Examples:
        >>> import mo_gymnasium
        >>> env = MOGymWrapper(mo_gymnasium.make("deep-sea-treasure-v0"))
        >>> env.reward_spec.shape
        torch.Size([2])
    """

    git_url = "https://github.com/Farama-Foundation/MO-Gymnasium"
    libname = "mo-gymnasium"
    available_envs = _MO_ENVS


class MOGymEnv(GymEnv):
    """An MO-Gymnasium env built from its id: ``MOGymEnv("deep-sea-treasure-v0")``.

    Args:
        env_name: the MO-Gymnasium id (``available_envs``).
        **kwargs: as ``GymEnv`` but ``num_envs`` (``from_pixels``, ``frame_skip``, ...); the rest goes to
            ``mo_gymnasium.make``.

    Examples:
        >>> env = MOGymEnv("deep-sea-treasure-v0")
        >>> env.rollout(3, break_when_any_done=False)["next", "reward"].shape
        torch.Size([3, 2])
    """

    git_url = "https://github.com/Farama-Foundation/MO-Gymnasium"
    libname = "mo-gymnasium"
    available_envs = _MO_ENVS  # type: ignore[assignment]  # a list, as TorchRL's class attribute

    @property
    def lib(self) -> Any:
        """The ``mo_gymnasium`` module."""
        return _mo_gymnasium()

    def _check_kwargs(self, kwargs: dict[str, Any]) -> None:
        _mo_gymnasium()  # registers the MO ids in gymnasium's registry
        if kwargs.get("num_envs") is not None:
            # gymnasium's SyncVectorEnv stores scalar rewards and MO-Gymnasium's cannot reset a subset.
            raise ValueError(
                "MOGymEnv does not take num_envs (no vector env of MO-Gymnasium resets a subset of its "
                "sub-envs); batch MOGymEnv instances with SerialEnv or ParallelEnv instead"
            )
        super()._check_kwargs(kwargs)
