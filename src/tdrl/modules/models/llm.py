"""A GPT-2 reward model for RLHF: :class:`GPT2RewardModel` (the transformer trunk of ``transformers``'
``GPT2LMHeadModel`` with a scalar head) and its pairwise loss (Stiennon et al., 2020, "Learning to summarize
from human feedback", https://arxiv.org/abs/2009.01325)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["GPT2RewardModel"]

_HAS_TRANSFORMERS = importlib.util.find_spec("transformers") is not None
_TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.json")
_GPT2_EOS = 50256  # GPT-2's EOS id, the pad id of a class-level compute_reward_loss call (as in TorchRL)


def _first_pad(ids: torch.Tensor, pad_id: int) -> int:
    """The index of the first ``pad_id`` in a 1-D row, or its length when it has none."""
    hits = (ids == pad_id).nonzero()
    return int(hits[0]) if len(hits) else ids.shape[-1]


class GPT2RewardModel(nn.Module):
    """A GPT-2 transformer whose language-model head is replaced by a 1-output linear layer: the reward.

    ``forward(input_ids, attention_mask)`` returns ``(rewards, end_scores)``: the reward at every position
    ``[B, T]`` and the reward at each row's last token before its first pad ``[B]``.

    Args:
        model_path: a folder written by ``save_pretrained`` (or a model name in the local Hugging Face cache)
            for the GPT-2 trunk; ``None`` builds a randomly initialised default GPT-2.
        pad_token_id: the pad id that marks the end of a sequence; inferred from the tokenizer saved with
            the model (its pad, else EOS token), else from the model config, when ``None``.

    Examples:
        >>> from transformers import GPT2Config, GPT2LMHeadModel
        >>> import tempfile
        >>> path = tempfile.mkdtemp()
        >>> GPT2LMHeadModel(GPT2Config(n_layer=1, n_head=2, n_embd=8, vocab_size=16, n_positions=8)
        ...                 ).save_pretrained(path)
        >>> model = GPT2RewardModel(path, pad_token_id=0)
        >>> rewards, end_scores = model(torch.tensor([[3, 4, 0]]), torch.tensor([[1, 1, 0]]))
        >>> rewards.shape, end_scores.shape
        (torch.Size([1, 3]), torch.Size([1]))
    """

    def __init__(self, model_path: str | Path | None = None, pad_token_id: int | None = None) -> None:
        if not _HAS_TRANSFORMERS:
            raise ImportError("GPT2RewardModel needs transformers: pip install 'tdrl[llm]'")
        from transformers import GPT2LMHeadModel  # noqa: PLC0415 (optional extra `llm`; costs seconds)

        super().__init__()
        if model_path is not None:
            model = GPT2LMHeadModel.from_pretrained(model_path)
        else:
            model = GPT2LMHeadModel(GPT2LMHeadModel.config_class())
        self.config = model.config
        self.transformer = model.transformer
        self.lm_head = nn.Linear(self.config.n_embd, 1, bias=False)
        self.pad_id = self._get_pad_token_id(model, model_path, pad_token_id)

    @staticmethod
    def _get_pad_token_id(model: Any, model_path: str | Path | None, pad_token_id: int | None) -> int:
        if pad_token_id is not None:
            return pad_token_id
        tokenizer = None
        folder = Path(model_path) if model_path is not None else None
        # a folder without tokenizer files would give transformers' empty GPT-2 tokenizer (EOS id 0) in TorchRL
        saved = folder is not None and (not folder.is_dir() or any((folder / f).exists() for f in _TOKENIZER_FILES))
        if saved:
            try:
                from transformers import AutoTokenizer  # noqa: PLC0415 (optional extra `llm`)

                tokenizer = AutoTokenizer.from_pretrained(model_path)
            except (OSError, ValueError):  # no tokenizer saved with the model
                tokenizer = None
        # TorchRL 0.14.1 also tries the hub's "gpt2" tokenizer when model_path is None; tdrl never downloads
        for source, names in ((tokenizer, ("pad_token_id", "eos_token_id")),
                              (model.config, ("pad_token_id", "eos_token_id"))):
            for name in names:
                value = getattr(source, name, None) if source is not None else None
                if value is not None:
                    return int(value)
        raise ValueError("GPT2RewardModel could not infer a pad token id from the tokenizer or the model config; "
                         "pass pad_token_id=...")

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(rewards [B, T], end_scores [B])``: per-position rewards and the reward of each row's last token."""
        if input_ids.ndim != 2:
            raise ValueError(f"GPT2RewardModel expects input_ids of shape [B, T], got {tuple(input_ids.shape)}")
        hidden = self.transformer(input_ids=input_ids, attention_mask=attention_mask)[0]
        rewards = self.lm_head(hidden).squeeze(-1)
        ends = [_first_pad(row, self.pad_id) - 1 for row in input_ids]
        end_scores = torch.stack([rewards[i, end] for i, end in enumerate(ends)])
        return rewards, end_scores

    def compute_reward_loss(self: Any = None, chosen_batch: Any = None, rejected_batch: Any = None,
                            pad_token_id: int | None = None) -> torch.Tensor:
        """``-log sigmoid(r_chosen - r_rejected)``, averaged over the positions from where the two texts
        diverge to the end of the longer one, then over the pairs (identical pairs are skipped).

        The batches carry ``input_ids`` and ``rewards`` (e.g. ``RewardData`` scored by this model). Called on
        the class (``GPT2RewardModel.compute_reward_loss(chosen, rejected[, pad_token_id])``) the pad id
        defaults to GPT-2's EOS id, as in TorchRL.

        Examples:
            >>> from types import SimpleNamespace as B
            >>> chosen = B(input_ids=torch.tensor([[1, 2, 0]]), rewards=torch.tensor([[0.0, 1.0, 0.0]]))
            >>> rejected = B(input_ids=torch.tensor([[1, 3, 0]]), rewards=torch.tensor([[0.0, -1.0, 0.0]]))
            >>> GPT2RewardModel.compute_reward_loss(chosen, rejected, 0)
            tensor(0.1269)
        """
        if isinstance(self, GPT2RewardModel):
            pad_token_id = self.pad_id if pad_token_id is None else pad_token_id
        elif self is not None:  # a class-level call binds the chosen batch to ``self``
            if chosen_batch is None:
                raise TypeError("compute_reward_loss needs a rejected batch")
            if rejected_batch is not None:
                if pad_token_id is not None:
                    raise TypeError("compute_reward_loss got two values for pad_token_id")
                pad_token_id = rejected_batch
            self, chosen_batch, rejected_batch = None, self, chosen_batch
        if chosen_batch is None or rejected_batch is None:
            raise TypeError("compute_reward_loss needs a chosen and a rejected batch")
        return _pairwise_reward_loss(chosen_batch, rejected_batch, _GPT2_EOS if pad_token_id is None else pad_token_id)

    @classmethod
    def from_pretrained(cls, path: str | Path) -> GPT2RewardModel:
        """Loads a model written by :meth:`save_pretrained` (its weights), else builds one on the trunk at ``path``.

        Examples:
            >>> GPT2RewardModel.from_pretrained.__name__
            'from_pretrained'
        """
        folder = Path(path)
        if (folder / "reward_model.pt").exists():
            meta = torch.load(folder / "reward_model.pt", weights_only=True)
            model = cls(folder / "trunk", pad_token_id=int(meta["pad_id"]))
            model.lm_head.load_state_dict(meta["lm_head"])
            return model
        return cls(path)

    def save_pretrained(self, path: str | Path) -> None:
        """Writes the trunk (``path/trunk``, ``save_pretrained``) and the head and pad id (``reward_model.pt``).

        TorchRL pickles the whole module; tdrl writes tensors only, loaded with ``weights_only=True``.

        Examples:
            >>> GPT2RewardModel.save_pretrained.__name__
            'save_pretrained'
        """
        folder = Path(path)
        folder.mkdir(parents=True, exist_ok=True)
        self.transformer.save_pretrained(folder / "trunk")
        torch.save({"lm_head": self.lm_head.state_dict(), "pad_id": torch.tensor(self.pad_id)},
                   folder / "reward_model.pt")


def _pairwise_reward_loss(chosen: Any, rejected: Any, pad_token_id: int) -> torch.Tensor:
    losses = []
    for c_ids, r_ids, c_rew, r_rew in zip(chosen.input_ids, rejected.input_ids, chosen.rewards, rejected.rewards,
                                          strict=True):
        end = max(_first_pad(c_ids, pad_token_id), _first_pad(r_ids, pad_token_id))
        diverge = (c_ids != r_ids).nonzero()
        if not len(diverge):  # identical texts carry no preference
            continue
        start = int(diverge[0])
        losses.append(-F.logsigmoid(c_rew[start:end] - r_rew[start:end]).mean())
    if not losses:
        return chosen.rewards.sum() * 0.0 + rejected.rewards.sum() * 0.0
    return torch.stack(losses).mean()
