"""Tests of ``tdrl.modules.mcts``: golden scores against TorchRL 0.14.1, keys, signatures and errors."""

from __future__ import annotations

import inspect
import json
import math
import sys
from pathlib import Path

import pytest
import torch
from tensordict import TensorDict

import tdrl.modules
from tdrl.modules import EXP3Score, MCTSScore, MCTSScores, PUCTScore, UCB1TunedScore, UCBScore
from tdrl.modules.mcts import scores as scores_module

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
from _mcts_cases import compute  # noqa: E402

GOLDEN = json.loads((HERE / "mcts_scores_torchrl_0_14_1.json").read_text())


def _close(a, b) -> bool:
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_close(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    return a == b


def test_scores_match_torchrl_golden():
    ours = compute(tdrl.modules)
    assert ours.keys() == GOLDEN.keys()
    bad = [k for k in GOLDEN if not _close(ours[k], GOLDEN[k])]
    assert not bad, f"scores differ from TorchRL 0.14.1 for {bad}"


def test_puct_formula_by_hand():
    node = TensorDict(win_count=torch.tensor([[2.0, 0.0]]), visits=torch.tensor([[4.0, 1.0]]),
                      total_visits=torch.tensor([9.0]), prior_prob=torch.tensor([[0.25, 0.75]]), batch_size=[1])
    out = PUCTScore(c=2.0)(node)["score"]
    expected = torch.tensor([[0.5 + 2 * 0.25 * 3 / 5, 0.0 + 2 * 0.75 * 3 / 2]])
    torch.testing.assert_close(out, expected)
    ucb = UCBScore(c=2.0)(node.clone())["score"]
    torch.testing.assert_close(ucb, torch.tensor([[0.5 + 2 * 3 / 5, 2 * 3 / 2]]))


def test_ucb1_tuned_unvisited_first_and_by_hand():
    node = TensorDict(win_count=torch.tensor([3.0, 0.0]), visits=torch.tensor([4.0, 0.0]),
                      total_visits=torch.tensor(4.0), sum_squared_rewards=torch.tensor([3.0, 0.0]))
    score = UCB1TunedScore()(node)["score"]
    log_n = math.log(4.0)
    var = 3 / 4 - 0.75**2 + math.sqrt(2 * log_n / 4)
    assert score[0].item() == pytest.approx(0.75 + math.sqrt(log_n / 4 * min(0.25, var)), rel=1e-6)
    assert score[1].item() == pytest.approx(torch.finfo(torch.float32).max / 10)
    assert int(score.argmax()) == 1


def test_signatures_and_keys_match_torchrl():
    params = inspect.signature(PUCTScore).parameters
    assert [p.kind for p in params.values()] == [inspect.Parameter.KEYWORD_ONLY] * 6
    assert params["c"].default is inspect.Parameter.empty
    assert PUCTScore(c=1).in_keys == ["win_count", "prior_prob", "total_visits", "visits"]
    assert UCBScore(c=1).in_keys == ["win_count", "total_visits", "visits"]
    assert UCB1TunedScore().in_keys == ["win_count", "visits", "total_visits", "sum_squared_rewards"]
    assert EXP3Score().in_keys == ["weights", "num_actions"]
    for module in (PUCTScore(c=1), UCBScore(c=1), UCB1TunedScore(), EXP3Score()):
        assert module.out_keys == ["score"]
    assert inspect.signature(EXP3Score).parameters["gamma"].default == 0.1
    assert inspect.signature(UCB1TunedScore).parameters["exploration_constant"].default == 2.0


def test_enum_members_and_import_paths():
    assert [m.name for m in MCTSScores] == ["PUCT", "UCB", "UCB1_TUNED", "EXP3"]
    assert MCTSScores.UCB.value().c == pytest.approx(math.sqrt(2))
    assert MCTSScores.EXP3.value().gamma == 0.1
    assert isinstance(MCTSScores.UCB1_TUNED.value(), UCB1TunedScore)
    assert scores_module.PUCTScore is tdrl.modules.PUCTScore is tdrl.modules.mcts.PUCTScore
    with pytest.raises(TypeError):
        MCTSScore()


def test_missing_key_names_it():
    with pytest.raises(KeyError, match="prior_prob"):
        PUCTScore(c=1.0)(TensorDict(win_count=torch.ones(2), visits=torch.ones(2), total_visits=torch.tensor(2.0)))
    with pytest.raises(KeyError, match="num_actions"):
        EXP3Score()(TensorDict(weights=torch.ones(2)))


def test_exp3_errors_and_warnings():
    with pytest.raises(ValueError, match="gamma"):
        EXP3Score(gamma=1.5)
    with pytest.raises(ValueError, match="3 actions"):
        EXP3Score()(TensorDict(weights=torch.ones(3), num_actions=torch.tensor(2)))
    exp3 = EXP3Score(gamma=0.0)
    node = exp3(TensorDict(weights=torch.tensor([0.0, 1.0]), num_actions=2))
    with pytest.warns(UserWarning, match="not positive"):
        exp3.update_weights(node, action_idx=0, reward=1.0)
    assert node["weights"].tolist() == [0.0, 1.0]
    with pytest.warns(UserWarning, match="outside"):
        exp3.update_weights(node, action_idx=1, reward=2.0)
    assert node["weights"][1].item() == pytest.approx(1.0)  # gamma = 0: exp(0)
