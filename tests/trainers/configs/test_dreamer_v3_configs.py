"""DreamerV3 configs: registered under TorchRL's ConfigStore names, and instantiating a learner from them."""

from __future__ import annotations

import torch
from hydra.core.config_store import ConfigStore
from hydra.utils import instantiate

from tdrl.modules import DreamerV3DiscreteActor, DreamerV3ImageEncoder, DreamerV3SeededPolicy
from tdrl.objectives import DreamerV3Loss, SoftUpdate
from tdrl.trainers.algorithms import DreamerV3OptimizationStepper, DreamerV3Optimizer, DreamerV3UpdateRatio
from tdrl.trainers.algorithms.configs import (
    DreamerV3DiscreteActorConfig,
    DreamerV3ImageEncoderConfig,
    DreamerV3LossConfig,
    DreamerV3OptimizationStepperConfig,
    DreamerV3OptimizerConfig,
    DreamerV3SeededPolicyConfig,
    DreamerV3UpdateRatioConfig,
)
from tests.objectives._dreamer_v3_scenario import batch, build, learner_parameters


def test_registered_names() -> None:
    store = ConfigStore.instance()
    assert {"dreamer_v3_mlp.yaml", "dreamer_v3_seeded_policy.yaml", "dreamer_v3_discrete_actor.yaml",
            "rssm_state_estimator_v3.yaml", "dreamer_v3_image_encoder.yaml",
            "dreamer_v3_image_decoder.yaml"} <= set(store.list("network"))
    assert "dreamer_v3.yaml" in store.list("loss") and "dreamer_v3.yaml" in store.list("optimizer")
    assert "dreamer_v3_optimization.yaml" in store.list("hook")


def test_networks_from_configs() -> None:
    encoder = instantiate(DreamerV3ImageEncoderConfig(depth=2, mults=[1, 2], kernel_size=3))
    assert isinstance(encoder, DreamerV3ImageEncoder) and encoder.num_stages == 2
    policy = instantiate(DreamerV3SeededPolicyConfig(
        module=DreamerV3DiscreteActorConfig(in_features=6, out_features=3, depth=1, num_cells=8,
                                            in_keys=["s", ["nested", "b"]]), seed=5))
    assert isinstance(policy, DreamerV3SeededPolicy) and isinstance(policy.module, DreamerV3DiscreteActor)
    assert policy.in_keys == ["s", ("nested", "b")]


def test_learner_from_configs_takes_a_step() -> None:
    torch.manual_seed(0)
    parts = build("tdrl")
    loss = instantiate(DreamerV3LossConfig(model_loss=parts.model_loss, actor_loss=parts.actor_loss,
                                           value_loss=parts.value_loss), _convert_="none")
    assert isinstance(loss, DreamerV3Loss)
    optimizer = instantiate(DreamerV3OptimizerConfig(lr=1e-3, warmup_steps=0))(learner_parameters(parts))
    assert isinstance(optimizer, DreamerV3Optimizer)
    stepper = instantiate(DreamerV3OptimizationStepperConfig(
        loss_module=loss, optimizer=optimizer, target_updater=SoftUpdate(parts.value_loss, tau=0.1),
        compile_train_step=False, cudagraph=False), _convert_="none")
    assert isinstance(stepper, DreamerV3OptimizationStepper)
    ratio = instantiate(DreamerV3UpdateRatioConfig(ratio=0.5))
    assert isinstance(ratio, DreamerV3UpdateRatio)
    for _ in range(ratio(0)):
        metrics = stepper.step(None, batch())
    assert torch.isfinite(metrics["loss_actor"])
