"""Constructor options taken over from TorchRL 0.14.1: validation, errors and behaviour that the golden
checks (``test_golden_torchrl_extra.py``) do not show on their own."""

from __future__ import annotations

import pytest
import torch
from tensordict.nn import set_composite_lp_aggregate

from tdrl._utils import TDRLWarning
from tdrl.data import Unbounded
from tdrl.objectives import A2CLoss, ClipPPOLoss, IQLLoss, KLPENPPOLoss, PPOLoss, ReinforceLoss, SACLoss

from ._cases import (
    ACT,
    RunningScale,
    _composite_ppo,
    _composite_td,
    _no_advantage_td,
    actor,
    critic,
    offpolicy_td,
    onpolicy_td,
    qvalue,
)


def _sac(**kwargs) -> SACLoss:
    return SACLoss(actor(), qvalue(), action_spec=Unbounded((ACT,)), **kwargs)


class TestScalarOutputMode:
    def test_none_reduction_warns_and_excludes(self) -> None:
        with pytest.warns(TDRLWarning, match="scalar_output_mode"):
            loss = _sac(reduction="none")
        out = loss(offpolicy_td())
        assert "alpha" not in out.keys() and "entropy" not in out.keys()
        assert out["loss_actor"].shape == (offpolicy_td().shape[0],)

    def test_exclude_is_silent(self, recwarn: pytest.WarningsRecorder) -> None:
        loss = _sac(reduction="none", scalar_output_mode="exclude")
        assert not [w for w in recwarn if issubclass(w.category, TDRLWarning)]
        assert "alpha" not in loss(offpolicy_td()).keys()

    def test_non_tensor_reports_scalars(self) -> None:
        loss = _sac(reduction="none", scalar_output_mode="non_tensor")
        out = loss(offpolicy_td())
        assert float(out.get("alpha").data) == pytest.approx(1.0)
        assert torch.as_tensor(out.get("entropy").data).shape == ()
        iql = IQLLoss(actor(), qvalue(), critic(), reduction="none", scalar_output_mode="non_tensor")
        assert torch.isfinite(torch.as_tensor(iql(offpolicy_td()).get("entropy").data))

    def test_mean_reduction_ignores_the_mode(self) -> None:
        out = _sac(scalar_output_mode="non_tensor")(offpolicy_td())
        assert isinstance(out["alpha"], torch.Tensor) and out["alpha"].shape == ()

    def test_bad_mode(self) -> None:
        with pytest.raises(ValueError, match="non_tensor"):
            _sac(reduction="none", scalar_output_mode="drop")


class TestAdvantageNorm:
    def test_exclusive_with_normalize_advantage(self) -> None:
        with pytest.raises(ValueError, match="mutually exclusive"):
            ClipPPOLoss(actor(), critic(), normalize_advantage=True, advantage_norm=RunningScale())

    def test_needs_update_and_scale(self) -> None:
        with pytest.raises(TypeError, match="update"):
            PPOLoss(actor(), critic(), advantage_norm=object())
        with pytest.raises(TypeError, match="update"):
            A2CLoss(actor(), critic(), advantage_norm=torch.nn.Identity())

    @pytest.mark.parametrize("cls", [A2CLoss, ClipPPOLoss])
    def test_updates_only_when_advantage_computed_in_training(self, cls) -> None:
        norm = RunningScale()
        loss = cls(actor(), critic(), advantage_norm=norm).set_keys(sample_log_prob="action_log_prob")
        loss(onpolicy_td())  # advantage given: scale only
        assert float(norm.sq) == 1.0
        loss(_no_advantage_td())
        updated = float(norm.sq)
        assert updated != 1.0
        loss.eval()
        loss(_no_advantage_td())
        assert float(norm.sq) == updated

    def test_divides_by_scale(self) -> None:
        norm = RunningScale()
        norm.sq.fill_(4.0)
        td = onpolicy_td()
        scaled = A2CLoss(actor(), critic(), advantage_norm=norm).set_keys(sample_log_prob="action_log_prob")
        plain = A2CLoss(actor(), critic()).set_keys(sample_log_prob="action_log_prob")
        plain.load_state_dict(scaled.state_dict(), strict=False)
        torch.testing.assert_close(scaled(td.clone())["loss_objective"], plain(td.clone())["loss_objective"] / 2)


class TestRemovedArguments:
    @pytest.mark.parametrize("cls", [PPOLoss, ClipPPOLoss, KLPENPPOLoss, A2CLoss, ReinforceLoss])
    def test_ctor_keys_point_to_set_keys(self, cls) -> None:
        with pytest.raises(RuntimeError, match=r"set_keys\(advantage="):
            cls(actor(), critic(), advantage_key="adv")

    @pytest.mark.parametrize("cls", [PPOLoss, ClipPPOLoss, A2CLoss])
    def test_coef_spelling_and_unknown_kwargs(self, cls) -> None:
        with pytest.raises(TypeError, match="critic_coeff"):
            cls(actor(), critic(), critic_coef=1.0)
        with pytest.raises(TypeError, match="entropy_coeff"):
            cls(actor(), critic(), entropy_coef=0.1)
        with pytest.raises(TypeError, match="clip_epsilonn"):
            cls(actor(), critic(), clip_epsilonn=0.1)


class TestClipOptions:
    def test_asymmetric_buffers(self) -> None:
        loss = ClipPPOLoss(actor(), critic(), clip_epsilon=(0.1, 0.3))
        assert float(loss.clip_epsilon_low) == pytest.approx(0.1)
        assert float(loss.clip_epsilon_high) == pytest.approx(0.3)
        assert "clip_epsilon" not in dict(loss.named_buffers())

    @pytest.mark.parametrize("eps", [(0.1,), (-0.1, 0.2), (1.0, 0.2)])
    def test_asymmetric_validation(self, eps) -> None:
        with pytest.raises(ValueError, match="clip_epsilon"):
            ClipPPOLoss(actor(), critic(), clip_epsilon=eps)

    def test_clip_value_true_needs_symmetric(self) -> None:
        with pytest.raises(ValueError, match="clip_value"):
            ClipPPOLoss(actor(), critic(), clip_epsilon=(0.1, 0.3), clip_value=True)

    def test_max_importance_ratio_positive(self) -> None:
        with pytest.raises(ValueError, match="max_importance_ratio"):
            ClipPPOLoss(actor(), critic(), max_importance_ratio=0.0)

    def test_max_importance_ratio_caps_weight(self) -> None:
        td = onpolicy_td()
        td["action_log_prob"] = td["action_log_prob"] - 30.0  # large ratios pi / pi_behav
        loss = PPOLoss(actor(), critic(), max_importance_ratio=1.5).set_keys(sample_log_prob="action_log_prob")
        loss.reduction = "none"
        capped = loss(td.clone())["loss_objective"]
        torch.testing.assert_close(capped.abs(), (td["advantage"].squeeze(-1) * 1.5).abs(), rtol=1e-5, atol=1e-5)


class TestComposite:
    def test_missing_head_coefficient(self) -> None:
        loss = ClipPPOLoss(_composite_ppo().actor_network, critic(), entropy_coeff={"cont_entropy": 0.1})
        with pytest.raises(KeyError, match="disc_entropy"):
            loss(_composite_td())

    def test_aggregated_log_probs(self) -> None:
        with set_composite_lp_aggregate(True):
            # As in TorchRL, the keys must name every head when log-probs are aggregated.
            loss = _composite_ppo().set_keys(action=["cont", "disc"], sample_log_prob="sample_log_prob")
            td = _composite_td()
            td["sample_log_prob"] = td["cont_log_prob"] + td["disc_log_prob"]
            out = loss(td)
        assert "composite_entropy" not in out.keys()
        assert torch.isfinite(out["loss_entropy"]) and torch.isfinite(out["loss_objective"])

    def test_per_head_entropy_reported(self) -> None:
        out = _composite_ppo()(_composite_td())
        heads = out["composite_entropy"]
        assert sorted(heads.keys()) == ["cont_entropy", "disc_entropy"]
        total = sum(v.mean() for v in heads.values())
        torch.testing.assert_close(out["entropy"], total)

    def test_a2c_sums_head_log_probs(self) -> None:
        # TorchRL 0.14.1's A2CLoss raises on composite actions (no golden): check against the definition.
        ppo = _composite_ppo()
        loss = A2CLoss(ppo.actor_network, critic())
        td = _composite_td()
        loss.reduction = "none"
        out = loss(td.clone())
        with torch.no_grad():
            dist = ppo.actor_network.get_dist(td.clone())
            lp = dist.log_prob(td.select("cont", "disc"))
            log_prob = lp["cont_log_prob"] + lp["disc_log_prob"]
        expected = -(log_prob.unsqueeze(-1) * td["advantage"]).squeeze(-1)
        torch.testing.assert_close(out["loss_objective"].detach(), expected)


def test_scheduling_the_other_clip_threshold_is_refused() -> None:
    asym = ClipPPOLoss(actor(), critic(), clip_epsilon=(0.1, 0.3))
    with pytest.raises(AttributeError, match="clip_epsilon_low"):
        asym.clip_epsilon = 0.2
    sym = ClipPPOLoss(actor(), critic())
    with pytest.raises(AttributeError, match="'clip_epsilon'"):
        sym.clip_epsilon_high = 0.2
    sym.clip_epsilon = torch.tensor(0.1)  # a buffer: a tensor replaces its value
    assert float(sym.clip_epsilon) == pytest.approx(0.1)


@pytest.mark.parametrize("bc", [False, True])
def test_td3_actor_loss_and_value_loss_are_the_terms_of_forward(bc: bool) -> None:
    """TorchRL's TD3Loss.actor_loss / value_loss: each term alone, equal to forward's, training only its
    own network (the TD3 stepper calls them for delayed actor updates)."""
    from tdrl.objectives import TD3BCLoss, TD3Loss

    from ._cases import det_actor, offpolicy_td, qvalue

    torch.manual_seed(0)
    cls = TD3BCLoss if bc else TD3Loss
    loss = cls(det_actor(), qvalue(), bounds=(-1.0, 1.0))
    td = offpolicy_td()
    torch.manual_seed(1)
    full = loss(td.clone())
    torch.manual_seed(1)
    actor_loss, actor_meta = loss.actor_loss(td.clone())
    value_loss, value_meta = loss.value_loss(td.clone())
    torch.testing.assert_close(actor_loss, full["loss_actor"])
    torch.testing.assert_close(value_loss, full["loss_qvalue"])
    expected_actor = {"state_action_value_actor"} | ({"bc_loss", "lmbd"} if bc else set())
    assert set(actor_meta) == expected_actor
    assert set(value_meta) == {"td_error", "next_state_value", "pred_value", "target_value"}
    assert value_meta["td_error"].shape == (2, td.shape[0])
    torch.testing.assert_close(value_meta["pred_value"], full["pred_value"])
    for term, owner in ((actor_loss, "actor_network"), (value_loss, "qvalue_network")):
        loss.zero_grad(set_to_none=True)
        term.backward()
        moved = {n.split("_params")[0] for n, p in loss.named_parameters() if p.grad is not None and p.grad.any()}
        assert moved == {owner}


def test_auto_target_entropy_without_action_shape_names_the_fix() -> None:
    # An actor built without spec= carries Composite(action=None): "auto" cannot size the action.
    from tensordict.nn import NormalParamExtractor, TensorDictModule

    from tdrl.modules import ProbabilisticActor, TanhNormal

    net = TensorDictModule(torch.nn.Sequential(torch.nn.Linear(3, 2), NormalParamExtractor()),
                           ["observation"], ["loc", "scale"])
    no_spec = ProbabilisticActor(net, in_keys=["loc", "scale"], distribution_class=TanhNormal)
    with pytest.raises(RuntimeError, match="pass action_spec= or target_entropy="):
        SACLoss(no_spec, qvalue())
    assert float(SACLoss(no_spec, qvalue(), target_entropy=-1.0).target_entropy) == -1.0
