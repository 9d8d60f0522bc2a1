"""tdrl.envs.transforms: environment and data transforms, ``TransformedEnv``."""

from tdrl.envs.transforms._base import Compose, ObservationTransform, Transform
from tdrl.envs.transforms.action_maps import ActionScaling, FlattenAction
from tdrl.envs.transforms.actions import ActionDiscretizer, DiscreteActionProjection
from tdrl.envs.transforms.auto_reset import AutoResetEnv, AutoResetTransform, VecGymEnvTransform
from tdrl.envs.transforms.batch_size import BatchSizeTransform
from tdrl.envs.transforms.burn_in import BurnInTransform
from tdrl.envs.transforms.checks import FiniteTensorDictCheck, PinMemoryTransform
from tdrl.envs.transforms.conditional import ConditionalPolicySwitch, ConditionalSkip
from tdrl.envs.transforms.crop import CenterCrop, Crop
from tdrl.envs.transforms.dtype import DeviceCastTransform, DoubleToFloat, DTypeCastTransform
from tdrl.envs.transforms.elementwise import BinarizeReward, LineariseRewards, PermuteTransform, SignTransform
from tdrl.envs.transforms.episode import EndOfLifeTransform, SuccessReward, TerminateTransform
from tdrl.envs.transforms.frames import CatFrames, FrameSkipTransform, NoopResetEnv
from tdrl.envs.transforms.functional import cat_frames
from tdrl.envs.transforms.hashing import Hash
from tdrl.envs.transforms.image import GrayScale, Resize, ToTensorImage
from tdrl.envs.transforms.init import InitTracker, TensorDictPrimer, gSDENoise
from tdrl.envs.transforms.keys import ExcludeTransform, RenameTransform, SelectTransform
from tdrl.envs.transforms.llm import Tokenizer
from tdrl.envs.transforms.mask import ActionMask
from tdrl.envs.transforms.mean_action import MeanActionSelector
from tdrl.envs.transforms.module import ModuleTransform
from tdrl.envs.transforms.multi_action import MultiAction
from tdrl.envs.transforms.next_obs import NextObservationDelta, NextStateReconstructor
from tdrl.envs.transforms.norm import ObservationNorm, VecNorm
from tdrl.envs.transforms.pooling import TimeMaxPool
from tdrl.envs.transforms.rb_transforms import MultiStepTransform
from tdrl.envs.transforms.returns import Reward2GoTransform, TargetReturn
from tdrl.envs.transforms.reward import RewardClipping, RewardScaling, RewardSum
from tdrl.envs.transforms.rnd import RNDTransform, RunningMeanStd
from tdrl.envs.transforms.stacking import ExpandAs, Stack
from tdrl.envs.transforms.step_counter import StepCounter
from tdrl.envs.transforms.structure import RemoveEmptySpecs
from tdrl.envs.transforms.tensor import (
    CatTensors,
    ClipTransform,
    FlattenObservation,
    SqueezeTransform,
    UnsqueezeTransform,
)
from tdrl.envs.transforms.timing import Timer
from tdrl.envs.transforms.trajectory import RandomCropTensorDict, RandomTruncationTransform, TrajCounter
from tdrl.envs.transforms.transformed_env import TransformedEnv
from tdrl.envs.transforms.unary import UnaryTransform
from tdrl.envs.transforms.vecnorm_v2 import VecNormV2

__all__ = [
    "ActionDiscretizer",
    "ActionMask",
    "ActionScaling",
    "AutoResetEnv",
    "AutoResetTransform",
    "BatchSizeTransform",
    "BinarizeReward",
    "BurnInTransform",
    "CatFrames",
    "CatTensors",
    "CenterCrop",
    "ClipTransform",
    "Compose",
    "ConditionalPolicySwitch",
    "ConditionalSkip",
    "Crop",
    "DTypeCastTransform",
    "DeviceCastTransform",
    "DiscreteActionProjection",
    "DoubleToFloat",
    "EndOfLifeTransform",
    "ExcludeTransform",
    "ExpandAs",
    "FiniteTensorDictCheck",
    "FlattenAction",
    "FlattenObservation",
    "FrameSkipTransform",
    "GrayScale",
    "Hash",
    "InitTracker",
    "LineariseRewards",
    "MeanActionSelector",
    "ModuleTransform",
    "MultiAction",
    "MultiStepTransform",
    "NextObservationDelta",
    "NextStateReconstructor",
    "NoopResetEnv",
    "ObservationNorm",
    "ObservationTransform",
    "PermuteTransform",
    "PinMemoryTransform",
    "RNDTransform",
    "RandomCropTensorDict",
    "RandomTruncationTransform",
    "RemoveEmptySpecs",
    "RenameTransform",
    "Resize",
    "Reward2GoTransform",
    "RewardClipping",
    "RewardScaling",
    "RewardSum",
    "RunningMeanStd",
    "SelectTransform",
    "SignTransform",
    "SqueezeTransform",
    "Stack",
    "StepCounter",
    "SuccessReward",
    "TargetReturn",
    "TensorDictPrimer",
    "TerminateTransform",
    "TimeMaxPool",
    "Timer",
    "ToTensorImage",
    "Tokenizer",
    "TrajCounter",
    "Transform",
    "TransformedEnv",
    "UnaryTransform",
    "UnsqueezeTransform",
    "VecGymEnvTransform",
    "VecNorm",
    "VecNormV2",
    "cat_frames",
    "gSDENoise",
]
