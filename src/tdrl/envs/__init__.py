"""tdrl.envs: environments, ``step_mdp`` and environment utilities."""

from tdrl.envs import transforms
from tdrl.envs.batched import ParallelEnv, SerialEnv
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
from tdrl.envs.transforms import (
    ActionMask,
    CatFrames,
    CatTensors,
    ClipTransform,
    Compose,
    DeviceCastTransform,
    DoubleToFloat,
    DTypeCastTransform,
    ExcludeTransform,
    FlattenObservation,
    FrameSkipTransform,
    GrayScale,
    InitTracker,
    NoopResetEnv,
    ObservationNorm,
    RenameTransform,
    Resize,
    RewardClipping,
    RewardScaling,
    RewardSum,
    SelectTransform,
    SqueezeTransform,
    StepCounter,
    TensorDictPrimer,
    ToTensorImage,
    Transform,
    TransformedEnv,
    UnsqueezeTransform,
    VecNorm,
    cat_frames,
)
from tdrl.envs.utils import (
    ExplorationType,
    check_env_specs,
    exploration_type,
    make_composite_from_td,
    set_exploration_type,
    terminated_or_truncated,
)

__all__: list[str] = [
    *transforms.__all__,
    "DMControlEnv",
    "DMControlWrapper",
    "EnvBase",
    "EnvCreator",
    "EnvMetaData",
    "GymEnv",
    "GymWrapper",
    "ExplorationType",
    "ParallelEnv",
    "PendulumEnv",
    "SerialEnv",
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
