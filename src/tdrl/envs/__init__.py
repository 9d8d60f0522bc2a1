"""tdrl.envs: environments, ``step_mdp`` and environment utilities."""

from tdrl.envs.common import EnvBase, _EnvWrapper
from tdrl.envs.custom import PendulumEnv
from tdrl.envs.env_creator import EnvCreator, EnvMetaData, env_creator, get_env_metadata
from tdrl.envs.gym_like import default_info_dict_reader
from tdrl.envs.libs import (
    DMControlEnv,
    DMControlWrapper,
    GymEnv,
    GymWrapper,
    gym_backend,
    set_gym_backend,
)
from tdrl.envs.step_mdp import step_mdp
from tdrl.envs.utils import (
    ExplorationType,
    MarlGroupMapType,
    check_env_specs,
    check_marl_grouping,
    exploration_type,
    make_composite_from_td,
    set_exploration_type,
    terminated_or_truncated,
)

__all__: list[str] = [
    "MarlGroupMapType",
    "check_marl_grouping",
    "DMControlEnv",
    "DMControlWrapper",
    "EnvBase",
    "EnvCreator",
    "EnvMetaData",
    "GymEnv",
    "GymWrapper",
    "ExplorationType",
    "PendulumEnv",
    "_EnvWrapper",
    "check_env_specs",
    "default_info_dict_reader",
    "env_creator",
    "exploration_type",
    "get_env_metadata",
    "gym_backend",
    "make_composite_from_td",
    "set_exploration_type",
    "set_gym_backend",
    "step_mdp",
    "terminated_or_truncated",
]

# Transforms and batched envs (issue 3).
from tdrl.envs.batched import ParallelEnv, SerialEnv  # noqa: E402
from tdrl.envs.transforms import *  # noqa: E402, F403
from tdrl.envs.transforms import __all__ as _transforms_all  # noqa: E402

__all__ += ["ParallelEnv", "SerialEnv", *_transforms_all]
