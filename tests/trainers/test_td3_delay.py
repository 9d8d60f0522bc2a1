"""TD3's delayed policy update: the builder wires a TD3OptimizationStepper (trainer.policy_update_delay)."""

from __future__ import annotations

import pytest
import torch

from tdrl.trainers.algorithms import TD3OptimizationStepper
from tdrl.trainers.algorithms.configs import compose_run_config
from tdrl.trainers.checkpoint import load_checkpoint
from tdrl.trainers.run import build_run

TINY = ["preset=td3_pendulum", "collector.frames_per_batch=50", "collector.total_frames=100",
        "replay.init_random_frames=50", "trainer.optim_steps_per_batch=6", "network.num_cells=[16]",
        "eval.interval=0", "trainer.progress_bar=false", "logger.tensorboard=false"]


def _snapshot(params):
    return [p.detach().clone() for p in params.values(True, True)]


def _changed(before, params):
    return any(not torch.equal(b, p) for b, p in zip(before, params.values(True, True)))


@pytest.mark.parametrize("delay", [2, 3])
def test_actor_and_targets_move_every_nth_step_critics_every_step(delay, tmp_path):
    run = build_run(compose_run_config([*TINY, f"trainer.policy_update_delay={delay}", f"run_dir={tmp_path}"]))
    stepper = run.trainer.optimization_stepper
    assert isinstance(stepper, TD3OptimizationStepper) and stepper.policy_update_delay == delay
    loss = run.loss
    tracked = {"actor": loss.actor_network_params, "critic": loss.qvalue_network_params,
               "target_actor": loss.target_actor_network_params, "target_critic": loss.target_qvalue_network_params}
    state = {name: _snapshot(p) for name, p in tracked.items()}
    moved: dict[str, list[bool]] = {name: [] for name in tracked}

    def record():  # runs after each optimisation step (post_optim), target update included
        for name, params in tracked.items():
            moved[name].append(_changed(state[name], params))
            state[name] = _snapshot(params)

    run.trainer.register_op("post_optim", record)
    run.trainer.train()
    steps = len(moved["actor"])
    assert steps == 6 * 2  # both batches (the first ends the random warm-up), 6 steps each
    expected = [(i + 1) % delay == 0 for i in range(steps)]
    assert moved["actor"] == expected
    assert moved["target_actor"] == expected and moved["target_critic"] == expected
    assert all(moved["critic"])


def test_default_delay_is_torchrl_s_two_and_checkpoint_keeps_the_counter(tmp_path):
    run = build_run(compose_run_config([*TINY, f"run_dir={tmp_path}"]))
    assert run.trainer.optimization_stepper.policy_update_delay == 2
    run.trainer.train()
    state = load_checkpoint(tmp_path / "checkpoint.pt")["modules"]["optimization_stepper"]
    assert state["update_counter"] == 12
    assert {"optimizer_actor", "optimizer_critic"} <= set(state)


def test_delay_must_be_positive():
    with pytest.raises(ValueError, match="policy_update_delay must be >= 1"):
        TD3OptimizationStepper(torch.optim.SGD([torch.nn.Parameter(torch.ones(1))], lr=1.0),
                               torch.optim.SGD([torch.nn.Parameter(torch.ones(1))], lr=1.0), policy_update_delay=0)


def test_losses_with_value_and_actor_methods_step_the_critic_first():
    # TorchRL's TD3Loss exposes value_loss/actor_loss: the actor loss then reads the updated critic.
    a, q = torch.nn.Parameter(torch.ones(1)), torch.nn.Parameter(torch.ones(1))
    seen = []

    class Loss:
        def value_loss(self, td):
            return (2 * q).sum(), {}

        def actor_loss(self, td):
            seen.append(q.item())
            return (a * q.detach()).sum(), {}

    class Trainer:
        clip_grad_norm, clip_norm, replay_buffer, loss_module = True, None, None, Loss()

        def compute_loss(self, td, method=None):
            return getattr(self.loss_module, method)(td)

    stepper = TD3OptimizationStepper(torch.optim.SGD([a], lr=1.0), torch.optim.SGD([q], lr=0.25))
    out = [stepper.step(Trainer(), None) for _ in range(4)]
    assert seen == [0.0, -1.0]  # after the 2nd and 4th critic steps (q: 1 -> 0.5 -> 0 -> -0.5 -> -1)
    assert [float(o["loss_actor"]) for o in out] == [0.0, 0.0, 0.0, -1.0]  # a * q at steps 2 and 4
    assert a.item() == 2.0  # actor gradients q = 0, then q = -1: a = 1 - 0 - (-1)
