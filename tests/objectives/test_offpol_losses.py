"""Behaviours of CrossQLoss, TQCLoss, BCLoss and RNDLoss beyond the golden values and the contract suite."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictModule as Mod
from torch import nn

import tdrl.objectives
import tdrl.objectives.sac
from tdrl.data import Unbounded
from tdrl.objectives import BCLoss, RNDLoss, TQCLoss

from ._cases import ACT, OBS, _Cat, _crossq, actor, det_actor, offpolicy_td


def test_discrete_sac_is_importable_from_sac_module_as_in_torchrl() -> None:
    assert tdrl.objectives.sac.DiscreteSACLoss is tdrl.objectives.DiscreteSACLoss


def _renorm_layers(loss):
    return [m for m in loss.qvalue_network.modules() if type(m).__name__ == "BatchRenorm1d"]


def test_crossq_moves_running_stats_once_per_call_and_restores_train_mode() -> None:
    loss = _crossq()
    count = loss.qvalue_network_params["module", "net", "0", "num_batches_tracked"]
    mean = loss.qvalue_network_params["module", "net", "0", "running_mean"].clone()
    loss(offpolicy_td())
    # One training-mode critic call (the joint batch) per member; the actor loss reads running statistics.
    assert count.tolist() == [1, 1]
    assert not torch.equal(mean, loss.qvalue_network_params["module", "net", "0", "running_mean"])
    assert all(m.training for m in _renorm_layers(loss))
    loss.qvalue_network.eval()
    loss(offpolicy_td())
    assert not any(m.training for m in _renorm_layers(loss))  # a user's eval mode is kept


def test_crossq_has_no_target_network_and_reports_td_error() -> None:
    loss = _crossq()
    assert not [n for n, _ in loss.named_children() if n.startswith("target_")]
    td = offpolicy_td()
    out = loss(td)
    torch.testing.assert_close(td["td_error"], out["td_error"])
    assert out["log_prob"].shape == td.shape and not out["log_prob"].requires_grad


def _tqc(**kwargs) -> TQCLoss:
    critic = Mod(_Cat(OBS + ACT, 4), ["observation", "action"], ["state_action_value"])
    return TQCLoss(actor(), critic, action_spec=Unbounded((ACT,)), **kwargs)


def test_tqc_target_drops_the_largest_pooled_quantiles() -> None:
    loss = _tqc(num_qvalue_nets=2, top_quantiles_to_drop_per_net=1)
    target = loss.compute_target(offpolicy_td())
    assert target.shape == (8, 2 * 4 - 2)
    assert (target.diff(dim=-1) >= 0).all()  # sorted, the top two removed


def test_tqc_rejects_bad_arguments_and_critics() -> None:
    with pytest.raises(ValueError, match="num_qvalue_nets"):
        _tqc(num_qvalue_nets=0)
    with pytest.raises(ValueError, match="top_quantiles_to_drop_per_net"):
        _tqc(top_quantiles_to_drop_per_net=-1)
    with pytest.raises(ValueError, match="number of quantiles"):
        _tqc(num_qvalue_nets=2, top_quantiles_to_drop_per_net=4)(offpolicy_td())
    with pytest.raises(ValueError, match="TD0"):
        _tqc().make_value_estimator(tdrl.objectives.ValueEstimators.TDLambda)


def test_bc_errors_name_what_is_wrong() -> None:
    with pytest.raises(ValueError, match="unsupported loss_function 'huber'"):
        BCLoss(det_actor(), loss_function="huber")
    silent = Mod(nn.Linear(OBS, ACT), ["observation"], ["other"])
    with pytest.raises(RuntimeError, match="wrote no prediction at 'action'"):
        BCLoss(silent, loss_function="l1")(offpolicy_td())
    with pytest.raises(KeyError, match="missing input entry"):
        BCLoss(det_actor())(offpolicy_td().exclude("action"))


def test_bc_pad_mask_drops_padding_and_callable_loss() -> None:
    td = offpolicy_td()
    td["pad"] = torch.arange(8) % 4 == 0
    loss = BCLoss(det_actor(), loss_function="l1", reduction="none")
    full = loss(td.clone())["loss_bc"]
    loss.set_keys(pad_mask="pad")
    kept = loss(td.clone())["loss_bc"]
    torch.testing.assert_close(kept, full[~td["pad"]].reshape(-1))
    custom = BCLoss(det_actor(), loss_function=lambda p, e: (p - e).abs() * 2)
    custom.load_state_dict(loss.state_dict())
    loss.reduction = "mean"
    loss.set_keys(pad_mask=None)
    torch.testing.assert_close(custom(td)["loss_bc"], 2 * loss(td)["loss_bc"])


def test_rnd_trains_only_the_predictor_and_samples_a_fraction() -> None:
    predictor, target = nn.Linear(OBS, 4), nn.Linear(OBS, 4)
    loss = RNDLoss(predictor, target, reduction="none")
    assert not any(p.requires_grad for p in target.parameters())
    td = TensorDict({("next", "observation"): torch.randn(4000, OBS)}, [4000])
    torch.manual_seed(0)
    per_sample = loss(td)["loss_predictor"]
    assert 0.2 < (per_sample > 0).float().mean() < 0.3  # update_fraction=0.25
    per_sample.sum().backward()
    assert all(p.grad is not None for p in predictor.parameters())
    assert all(p.grad is None for p in target.parameters())
    with pytest.raises(ValueError, match=r"update_fraction must be in \[0, 1\]"):
        RNDLoss(predictor, target, update_fraction=1.5)


def test_tqc_without_terminated_bootstraps_on_done() -> None:
    loss = _tqc(num_qvalue_nets=2)
    td = offpolicy_td()
    td["next", "done"][:3] = True
    td["next", "terminated"] = td["next", "done"].clone()
    torch.manual_seed(0)
    ref = loss.compute_target(td.clone())
    torch.manual_seed(0)
    torch.testing.assert_close(loss.compute_target(td.exclude(("next", "terminated"))), ref)
