"""vLLMUpdater pushes trainer weights into a (stand-in) vLLM engine."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict, lazy_stack

pytest.importorskip("transformers", reason="the llm extra (transformers) is not installed")

from tdrl.collectors.llm.weight_update import vLLMUpdater  # noqa: E402
from tdrl.modules.llm import Tokens, TransformersWrapper, vLLMWrapper  # noqa: E402
from tests.modules.llm._fake_vllm import FakeLLM  # noqa: E402
from tests.modules.llm._tiny import teacher_forced, tiny_model, tiny_tokenizer  # noqa: E402


class _Collector:
    def __init__(self, policy: vLLMWrapper) -> None:
        self.policy = policy


def test_push_from_training_wrapper() -> None:
    tok = tiny_tokenizer()
    engine = FakeLLM(tiny_model("gpt2", seed=1), tok)
    policy = vLLMWrapper(engine, input_mode="tokens", generate=False)
    trainer = TransformersWrapper(tiny_model("gpt2", seed=2), tokenizer=tok, input_mode="tokens", generate=False)
    updater = vLLMUpdater()
    collector = _Collector(policy)  # the updater holds it weakly
    updater.register_collector(collector)
    updater.init(vLLMUpdater.get_model_metadata(trainer))
    updater.push_weights(trainer)
    seq = torch.tensor([4, 5, 6, 7, 8])
    scored = policy(lazy_stack([TensorDict(tokens=Tokens(full=seq))]))
    torch.testing.assert_close(scored["log_probs"][0].full, teacher_forced(trainer.model, seq), atol=1e-5, rtol=0)
    assert engine.prefix_resets == 1


def test_metadata_mismatch_is_reported() -> None:
    tok = tiny_tokenizer()
    engine = FakeLLM(tiny_model("gpt2"), tok)
    updater = vLLMUpdater(model_metadata={"lm_head.weight": (torch.float16, torch.Size([300, 32]))}, vllm_engine=engine)
    with pytest.raises(ValueError, match="lm_head.weight"):
        updater.push_weights(tiny_model("gpt2").state_dict())
    with pytest.raises(RuntimeError, match="no engine"):
        vLLMUpdater().push_weights(tiny_model("gpt2").state_dict())
