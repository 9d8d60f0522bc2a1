"""RayLLMCollector: the wrapper is built inside the Ray actor by policy_factory, batches come back, a local
replay buffer is filled, and update_policy_weights_ reaches the actor's model (local ray, 2 CPUs)."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict

ray = pytest.importorskip("ray")
pytest.importorskip("transformers", reason="the llm extra (transformers) is not installed")

from tdrl.collectors.llm import RayLLMCollector  # noqa: E402
from tdrl.data import LazyStackStorage, ReplayBuffer  # noqa: E402
from tdrl.modules.llm import TransformersWrapper  # noqa: E402
from tdrl.objectives.llm import MCAdvantage  # noqa: E402
from tdrl.trainers.algorithms._llm_sums import make_sums_env, sums_tokenizer, tiny_gpt2  # noqa: E402

PROMPTS, GROUP = 2, 2


def make_env():  # noqa: ANN201
    return make_sums_env(sums_tokenizer(), num_prompts=PROMPTS, group_size=GROUP, seed=0)


def make_policy() -> TransformersWrapper:
    # runs in the actor: the model is created there, never pickled
    tokenizer = sums_tokenizer()
    return TransformersWrapper(
        tiny_gpt2(len(tokenizer), n_layer=1, n_embd=16, seed=0), tokenizer=tokenizer, input_mode="text",
        generate_kwargs={"max_new_tokens": 2, "do_sample": True},
    )


@pytest.mark.integration
@pytest.mark.slow  # a Ray cluster start and an actor building a model: minutes on a loaded machine
@pytest.mark.timeout(400)
def test_policy_factory_in_actor_buffer_background_and_weights() -> None:
    turns = PROMPTS * GROUP
    buffer = ReplayBuffer(storage=LazyStackStorage(4 * turns))
    buffer.append_transform(MCAdvantage(grpo_size=GROUP))
    collector = RayLLMCollector(
        make_env, policy_factory=make_policy, dialog_turns_per_batch=turns, total_dialog_turns=3 * turns,
        replay_buffer=buffer, track_policy_version=True, sync_iter=False,
        ray_init_config={"num_cpus": 2, "include_dashboard": False, "log_to_driver": False},
        remote_config={"num_cpus": 1},
    )
    try:
        # one batch on request: the actor's batch is written into this process's buffer
        assert collector.next() is None and len(buffer) == turns
        assert ("log_probs", "full") in buffer[:].keys(True) and "advantage" in buffer.sample(turns).keys()
        assert collector.policy_version == 0
        with pytest.raises(ValueError, match="policy_factory"):
            collector.update_policy_weights_()
        new = TensorDict.from_module(make_policy()).data.clone().apply(lambda t: t + 0.5)
        collector.update_policy_weights_(new)
        assert collector.policy_version == 1
        remote = ray.get(collector.remote_collector.policy_weights.remote())
        assert all(torch.equal(remote[k], new[k]) for k in new.keys(True, True))
        # the rest of the budget in the background
        collector.start()
        collector._thread.join(300)
        assert not collector.is_running()
        assert len(buffer) == 3 * turns
        with pytest.raises(StopIteration):
            collector.next()
    finally:
        collector.shutdown()
        ray.shutdown()


def test_errors_before_any_actor() -> None:
    with pytest.raises(TypeError, match="exactly one of policy or policy_factory"):
        RayLLMCollector(make_env, dialog_turns_per_batch=2)
