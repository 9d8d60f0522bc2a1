"""Tests for LSTMModule / GRUModule: step-by-step equals sequence mode, is_init resets, TorchRL golden numbers."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictModule, TensorDictSequential

from tdrl.envs.transforms import TensorDictPrimer
from tdrl.modules import (
    MLP,
    GRUModule,
    LSTMModule,
    get_primers_from_module,
    recurrent_mode,
    set_recurrent_mode,
)
from tests.modules._golden import det, golden


def make(cls, **kwargs):
    return cls(input_size=3, hidden_size=4, in_key="obs", out_key="feat", **kwargs)


def state_keys(module):
    return module.in_keys[1:-1]


def run_step_by_step(module, obs, is_init):
    """Feeds one step at a time, carrying ("next", state) -> state like a collector's step_mdp."""
    n, t = obs.shape[:2]
    td = TensorDict(obs=obs[:, 0], is_init=is_init[:, 0], batch_size=[n])
    feats = []
    for step in range(t):
        td["obs"], td["is_init"] = obs[:, step], is_init[:, step]
        td = module(td)
        feats.append(td["feat"])
        for key in state_keys(module):
            td[key] = td["next", key]
    return torch.stack(feats, 1)


@pytest.mark.parametrize("cls", [LSTMModule, GRUModule])
class TestRecurrentModules:
    def test_sequence_mode_equals_step_by_step(self, cls):
        module = make(cls, num_layers=2)
        obs = torch.randn(3, 7, 3)
        is_init = torch.zeros(3, 7, 1, dtype=torch.bool)
        is_init[:, 0] = True
        is_init[1, 4] = True  # a second trajectory packed in row 1
        is_init[2, 1] = True
        stepwise = run_step_by_step(module, obs, is_init)
        with set_recurrent_mode(True):
            seq = module(TensorDict(obs=obs, is_init=is_init, batch_size=[3, 7]))
        torch.testing.assert_close(seq["feat"], stepwise, rtol=1e-5, atol=1e-5)
        # final states sit at the last step of each trajectory, zeros elsewhere
        key = ("next", state_keys(module)[0])
        assert seq[key][1, 3].abs().sum() > 0 and seq[key][1, 2].abs().sum() == 0

    def test_is_init_resets_hidden_state(self, cls):
        module = make(cls)
        obs = torch.randn(2, 3)
        states = {key: torch.randn(2, 1, 4) for key in state_keys(module)}
        fresh = module(TensorDict(obs=obs, is_init=torch.ones(2, 1, dtype=torch.bool), batch_size=[2]))
        reset = module(TensorDict(obs=obs, is_init=torch.ones(2, 1, dtype=torch.bool), batch_size=[2], **states))
        kept = module(TensorDict(obs=obs, is_init=torch.zeros(2, 1, dtype=torch.bool), batch_size=[2], **states))
        torch.testing.assert_close(reset["feat"], fresh["feat"])
        assert not torch.allclose(kept["feat"], fresh["feat"])

    def test_modes_shapes_and_primer(self, cls):
        module = make(cls, default_recurrent_mode=True)
        assert module.recurrent_mode and recurrent_mode() is None
        with set_recurrent_mode(False):
            assert not module.recurrent_mode
        td = module(TensorDict(obs=torch.randn(2, 4, 5, 3), batch_size=[2, 4, 5]))
        assert td["feat"].shape == (2, 4, 5, 4)
        assert td["next", state_keys(module)[0]].shape == (2, 4, 5, 1, 4)
        copy = module.set_recurrent_mode(False)
        assert not copy.recurrent_mode and copy.rnn is module.rnn
        primer = module.make_tensordict_primer()
        assert isinstance(primer, TensorDictPrimer)
        with set_recurrent_mode(True), pytest.raises(ValueError, match="time batch dimension"):
            module(TensorDict(obs=torch.randn(3), batch_size=[]))

    def test_bad_keys(self, cls):
        with pytest.raises(ValueError, match="exactly one of in_key"):
            cls(input_size=3, hidden_size=4, out_key="feat")
        with pytest.raises(ValueError, match="expects"):
            cls(input_size=3, hidden_size=4, in_keys=["obs"], out_key="feat")
        with pytest.raises(ValueError, match="hidden_size"):
            cls(input_size=3, in_key="obs", out_key="feat")


def test_matches_torchrl_recorded_outputs():
    lstm = LSTMModule(input_size=3, hidden_size=4, num_layers=2, in_key="obs", out_key="feat")
    gru = GRUModule(input_size=3, hidden_size=4, in_key="obs", out_key="feat")
    with torch.no_grad():
        for i, p in enumerate(list(lstm.parameters()) + list(gru.parameters())):
            p.copy_(det(*p.shape, scale=0.5, phase=float(i)))
    is_init = torch.zeros(2, 5, 1, dtype=torch.bool)
    is_init[:, 0] = True
    is_init[1, 2] = True
    td = TensorDict(obs=det(2, 5, 3), is_init=is_init, batch_size=[2, 5])
    with set_recurrent_mode(True):
        out = lstm(td.clone())
        torch.testing.assert_close(out["feat"], golden("lstm_feat"))
        torch.testing.assert_close(out["next", "recurrent_state_h"], golden("lstm_h"))
        torch.testing.assert_close(out["next", "recurrent_state_c"], golden("lstm_c"))
        out = gru(td.clone())
        torch.testing.assert_close(out["feat"], golden("gru_feat"))
        torch.testing.assert_close(out["next", "recurrent_state"], golden("gru_h"))


def test_get_primers_from_module_collects_all_states():
    policy = TensorDictSequential(
        LSTMModule(input_size=3, hidden_size=4, in_key="obs", out_key="h1"),
        GRUModule(input_size=4, hidden_size=5, in_keys=["h1", "gru_state", "is_init"],
                  out_keys=["h2", ("next", "gru_state")]),
        TensorDictModule(MLP(in_features=5, out_features=2, num_cells=[]), ["h2"], ["action"]),
    )
    primers = get_primers_from_module(policy)
    assert [list(p.primers.keys()) for p in primers] == [["recurrent_state_h", "recurrent_state_c"], ["gru_state"]]
    assert primers[1].primers["gru_state"].shape == (1, 5)
    with pytest.warns(UserWarning, match="No primers"):
        assert get_primers_from_module(MLP(in_features=2, out_features=2)) is None


@pytest.mark.parametrize("cls", [LSTMModule, GRUModule])
def test_python_based_matches_torch_nn(cls):
    fast = cls(input_size=3, hidden_size=4, num_layers=2, in_key="obs", out_key="feat")
    slow = cls(input_size=3, hidden_size=4, num_layers=2, in_key="obs", out_key="feat", python_based=True)
    slow.load_state_dict(fast.state_dict())
    is_init = torch.zeros(2, 6, 1, dtype=torch.bool)
    is_init[:, 0] = True
    is_init[0, 3] = True
    td = TensorDict(obs=torch.randn(2, 6, 3), is_init=is_init, batch_size=[2, 6])
    with set_recurrent_mode(True):
        expected, got = fast(td.clone()), slow(td.clone())
    for key in expected.keys(True, True):
        torch.testing.assert_close(got[key], expected[key], rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(slow(td[:, 0].clone())["feat"], fast(td[:, 0].clone())["feat"], rtol=1e-5, atol=1e-5)
