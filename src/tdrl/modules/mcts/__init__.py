"""Monte-Carlo tree search selection scores (TorchRL's ``torchrl.modules.mcts``)."""

from tdrl.modules.mcts.scores import EXP3Score, MCTSScore, MCTSScores, PUCTScore, UCB1TunedScore, UCBScore

__all__ = ["EXP3Score", "MCTSScore", "MCTSScores", "PUCTScore", "UCB1TunedScore", "UCBScore"]
