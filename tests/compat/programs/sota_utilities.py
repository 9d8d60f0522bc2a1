"""(w) What the sota-implementations scripts use around their training loop: device and compile helpers,
timeit.printevery, get_logger with wandb_kwargs on a CSV backend, a VideoRecorder dumped through env.apply,
TrajCounter, RandomCropTensorDict in a buffer, and tdrl.checkpoint."""

import os
import tempfile

import torch
from tensordict.nn import TensorDictModule

from tdrl import set_auto_unwrap_transformed_env
from tdrl._utils import compile_with_warmup, get_available_device, timeit
from tdrl._utils import logger as torchrl_logger
from tdrl.checkpoint import Checkpoint, GlobalRNGState
from tdrl.data import LazyTensorStorage, ReplayBuffer
from tdrl.envs import (
    Compose,
    DoubleToFloat,
    GymEnv,
    RewardSum,
    StepCounter,
    TrajCounter,
    TransformedEnv,
    set_gym_backend,
)
from tdrl.envs.transforms import RandomCropTensorDict
from tdrl.envs.utils import ExplorationType, MarlGroupMapType, check_marl_grouping, set_exploration_type
from tdrl.modules import MLP
from tdrl.record import CSVLogger, VideoRecorder
from tdrl.record.loggers import generate_exp_name, get_logger

set_gym_backend("gymnasium").set()
set_auto_unwrap_transformed_env(True).set()
device = get_available_device()
with tempfile.TemporaryDirectory() as tmp:
    logger = get_logger("csv", logger_name=tmp, experiment_name=generate_exp_name("SAC", "x"),
                        wandb_kwargs={"mode": "offline", "config": {}, "project": "p", "group": "g"})
    assert isinstance(logger, CSVLogger)
    video_logger = CSVLogger("videos", log_dir=tmp, video_format="pt")

    def dump_video(module):
        if isinstance(module, VideoRecorder):
            module.dump()

    env = TransformedEnv(GymEnv("Pendulum-v1", from_pixels=True, pixels_only=False, device=device),
                         Compose(StepCounter(10), RewardSum(), DoubleToFloat(), TrajCounter()))
    env = env.append_transform(VideoRecorder(video_logger, tag="rendered", in_keys=["pixels"]))
    policy = TensorDictModule(MLP(in_features=3, out_features=1, num_cells=[8]), in_keys=["observation"],
                              out_keys=["action"])
    double = compile_with_warmup(lambda x: x * 2, warmup=2, backend="eager")
    total = 4
    for _ in range(total):
        timeit.printevery(num_prints=2, total_count=total, erase=True)
        with timeit("collect"), set_exploration_type(ExplorationType.DETERMINISTIC), torch.no_grad():
            data = env.rollout(12, policy, break_when_any_done=False)
        assert torch.equal(double(torch.ones(1)), torch.full((1,), 2.0))
        logger.log_scalar("reward", data["next", "reward"].mean().item())
    env.apply(dump_video)
    assert data["next", "traj_count"].max() >= 1  # StepCounter(10) ends an episode inside 12 steps
    videos = os.listdir(os.path.join(tmp, "videos", "videos"))
    assert len(videos) == 1, videos
    video = torch.load(os.path.join(tmp, "videos", "videos", videos[0]), weights_only=True)
    assert video.shape[0] == 1 and video.shape[2] == 3 and video.dtype == torch.uint8, video.shape
    torchrl_logger.info(f"video of shape {tuple(video.shape)}")

    rb = ReplayBuffer(storage=LazyTensorStorage(8), transform=RandomCropTensorDict(5), batch_size=2)
    rb.extend(data.unsqueeze(0).expand(3, *data.shape).clone())
    assert rb.sample().shape == (2, 5)

    ckpt = Checkpoint(policy=policy, rng=GlobalRNGState(), progress={"iterations": total})
    path = ckpt.save(os.path.join(tmp, "ckpt"))
    restored = TensorDictModule(MLP(in_features=3, out_features=1, num_cells=[8]), in_keys=["observation"],
                                out_keys=["action"])
    result = Checkpoint(policy=restored).load(path, components={"policy"})
    assert result.loaded == {"policy"} and result.unrequested == {"rng", "progress"}
    for a, b in zip(policy.parameters(), restored.parameters()):
        assert torch.equal(a, b)
    check_marl_grouping(MarlGroupMapType.ALL_IN_ONE_GROUP.get_group_map(["a", "b"]), ["a", "b"])
    assert "collect" in timeit.todict()
    env.close()
print("OK sota_utilities")
