"""DecisionTransformer / DTActor / OnlineDTActor shapes and errors, and the masking of
DecisionTransformerInferenceWrapper (its outputs are golden-tested in tests/objectives/test_golden_torchrl_seq.py)."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictModule as Mod

from tdrl.modules import DecisionTransformer, DecisionTransformerInferenceWrapper, DTActor, OnlineDTActor

CONFIG = DecisionTransformer.DTConfig(n_embd=8, n_layer=1, n_head=2, n_inner=16, n_positions=60)
KEYS = ["observation", "action", "return_to_go"]


def test_config_forms_and_defaults() -> None:
    assert DTActor.default_config().n_embd == 512 and DecisionTransformer.default_config().n_embd == 256
    from_dict = DecisionTransformer(3, 2, config=vars(CONFIG))
    assert from_dict.hidden_size == 8 and from_dict.transformer.config.n_inner == 16
    assert repr(CONFIG).startswith("DTConfig(n_embd: 8, n_layer: 1")
    with pytest.raises(TypeError, match="DTConfig or a dict"):
        DecisionTransformer(3, 2, config=3)


def test_shapes_and_std_range() -> None:
    obs, act, rtg = torch.randn(2, 3, 5, 4), torch.randn(2, 3, 5, 2), torch.randn(2, 3, 5, 1)
    assert DTActor(4, 2, transformer_config=CONFIG)(obs, act, rtg).shape == (2, 3, 5, 2)
    mu, std = OnlineDTActor(4, 2, transformer_config=CONFIG)(obs, act, rtg)
    assert mu.shape == std.shape == (2, 3, 5, 2)
    assert (std >= torch.exp(torch.tensor(-5.0)) - 1e-6).all() and (std <= torch.exp(torch.tensor(2.0)) + 1e-5).all()
    with pytest.raises(ValueError, match="share their leading"):
        DTActor(4, 2, transformer_config=CONFIG)(obs, act[:, :, :4], rtg)


def test_state_token_does_not_see_its_action() -> None:
    torch.manual_seed(0)
    model = DTActor(4, 2, transformer_config=CONFIG).eval()
    obs, act, rtg = torch.randn(1, 5, 4), torch.randn(1, 5, 2), torch.randn(1, 5, 1)
    changed = act.clone()
    changed[:, 3] += 1.0
    a, b = model(obs, act, rtg), model(obs, changed, rtg)
    torch.testing.assert_close(a[:, :4], b[:, :4])  # causal: steps <= 3 never see a_3
    assert not torch.allclose(a[:, 4], b[:, 4])


def _wrapper(ctx: int) -> tuple[DecisionTransformerInferenceWrapper, list[TensorDict]]:
    seen: list[TensorDict] = []

    class Spy(torch.nn.Module):
        def forward(self, obs, act, rtg):
            seen.append(TensorDict(observation=obs.clone(), action=act.clone(), return_to_go=rtg.clone()))
            return act + 1.0

    return DecisionTransformerInferenceWrapper(Mod(Spy(), KEYS, ["pred"]), inference_context=ctx), seen


def test_inference_masks_context_and_keeps_last_step() -> None:
    wrapper, seen = _wrapper(3)
    wrapper.set_tensor_keys(out_action="pred")
    obs, act, rtg = torch.randn(2, 6, 4), torch.randn(2, 6, 2), torch.randn(2, 6, 1)
    out = wrapper(TensorDict(observation=obs, action=act, return_to_go=rtg, batch_size=[2]))
    fed = seen[0]
    assert (fed["observation"][:, :3] == 0).all() and torch.equal(fed["observation"][:, 3:], obs[:, 3:])
    assert (fed["return_to_go"][:, :3] == 0).all()
    # Actions shift left by one with a zero appended; the last two known actions stay visible.
    assert (fed["action"][:, :3] == 0).all() and torch.equal(fed["action"][:, 3:5], act[:, 4:6])
    assert (fed["action"][:, 5] == 0).all()
    assert torch.equal(out["pred"], fed["action"][:, -1] + 1.0)
    assert torch.equal(out["observation"], obs) and torch.equal(out["return_to_go"], rtg[:, -1])
    assert wrapper.in_keys == KEYS and "pred" in wrapper.out_keys


def test_inference_errors() -> None:
    wrapper, _ = _wrapper(2)
    with pytest.raises(TypeError, match="unknown key"):
        wrapper.set_tensor_keys(obs="x")
    with pytest.raises(ValueError, match="not an output of the policy"):
        wrapper.set_tensor_keys(out_action="missing")
    with pytest.raises(ValueError, match="inference_context"):
        DecisionTransformerInferenceWrapper(wrapper.td_module, inference_context=0)
    td = TensorDict(observation=torch.randn(1, 4, 3), action=torch.randn(1, 5, 2), return_to_go=torch.randn(1, 4, 1),
                    batch_size=[1])
    wrapper.set_tensor_keys(out_action="pred")
    with pytest.raises(ValueError, match="share their"):
        wrapper(td)
