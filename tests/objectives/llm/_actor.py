"""A tiny causal token model with the LLM wrappers' ``get_dist`` interface, and hand-built token batches.

Imports neither tdrl nor torchrl: the TorchRL recorder and the tdrl tests build the same actor and data.
The distribution class is injected (TorchRL's ``LLMMaskedCategorical`` in the recorder, the test's
``MaskedTokenDist`` here), both scoring ``-cross_entropy`` with ignore index -100 and giving the entropy
of the mask-filled logits.

Layout of a padded batch (TorchRL's convention): ``tokens.full = [left-padded prompt | right-padded
response]``; the prompt occupies the first ``P = tokens.prompt.shape[-1]`` columns.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

VOCAB = 11


class MaskedTokenDist(torch.distributions.Distribution):
    """Position-masked categorical over tokens: ``log_prob`` is 0 at masked positions."""

    arg_constraints: dict = {}

    def __init__(self, logits: torch.Tensor, mask: torch.Tensor) -> None:
        self.logits, self.mask = logits, mask
        super().__init__(batch_shape=logits.shape[:-1], event_shape=logits.shape[-1:], validate_args=False)

    def log_prob(self, value: torch.Tensor) -> torch.Tensor:
        value = value.masked_fill(~self.mask, -100)
        flat = F.cross_entropy(self.logits.reshape(-1, self.logits.shape[-1]), value.reshape(-1),
                               reduction="none", ignore_index=-100)
        return -flat.reshape(value.shape)

    def entropy(self) -> torch.Tensor:
        filled = self.logits.masked_fill(~self.mask.unsqueeze(-1), torch.finfo(self.logits.dtype).min)
        return torch.distributions.Categorical(logits=filled).entropy()


class TinyTokenActor(nn.Module):
    """``logits[:, i]`` predicts token ``i`` from the tokens before it; ``logits[:, 0] = 0``."""

    def __init__(self, dist_cls=MaskedTokenDist, seed: int = 0, hidden: int = 8) -> None:
        super().__init__()
        gen = torch.Generator().manual_seed(seed)
        self.embed = nn.Parameter(torch.randn(VOCAB, hidden, generator=gen))
        self.head = nn.Parameter(torch.randn(hidden, VOCAB, generator=gen) * 0.7)
        self.bias = nn.Parameter(torch.randn(VOCAB, generator=gen) * 0.1)
        self.dist_cls = dist_cls
        self.in_keys = [("tokens", "full")]

    def logits(self, tokens: torch.Tensor) -> torch.Tensor:
        emb = self.embed[tokens.clamp_min(0)]
        # causal running mean of the embeddings before each position
        ctx = emb.cumsum(-2) / torch.arange(1, tokens.shape[-1] + 1, dtype=emb.dtype).unsqueeze(-1)
        shifted = torch.tanh(ctx[..., :-1, :]) @ self.head + self.bias
        return torch.cat([torch.zeros_like(shifted[..., :1, :]), shifted], -2)

    def forward(self, td):
        """Scores ``("tokens", "full")`` into ``("log_probs", "full")`` (0 at position 0 and at pads)."""
        tokens = td["tokens", "full"]
        lp = torch.log_softmax(self.logits(tokens), -1).gather(-1, tokens.unsqueeze(-1)).squeeze(-1)
        valid = td.get(("masks", "all_attention_mask"), torch.ones_like(tokens, dtype=torch.bool))
        lp = torch.where(valid.bool(), lp, 0.0)
        td["log_probs", "full"] = torch.cat([torch.zeros_like(lp[..., :1]), lp[..., 1:]], -1)
        return td

    def _dist(self, td, mask: torch.Tensor):
        return self.dist_cls(logits=self.logits(td["tokens", "full"]), mask=mask)

    def _get_sft_dist(self, td, **kwargs):
        mask = td["masks", "all_attention_mask"].bool().clone()
        mask[..., : td["tokens", "prompt"].shape[-1]] = False
        return self._dist(td, mask)

    def _get_rlhf_dist(self, td, **kwargs):
        return self._dist(td, td["masks", "all_assistant_mask"].bool())

    def _get_generic_dist(self, td, **kwargs):
        return self._dist(td, td["masks", "all_attention_mask"].bool())

    def get_dist(self, td, **kwargs):
        return self._get_generic_dist(td)


def token_batch(seed: int = 0, batch: int = 4, prompt: int = 3, response: int = 4, noise: float = 0.4):
    """A dict of plain tensors describing a padded token batch (no tensordict, so it can be saved).

    Prompts are left-padded, responses right-padded, with varied lengths; stored log-probs are the actor's
    (seed 0) plus noise on the response tokens so that some weights leave the clip range.
    """
    gen = torch.Generator().manual_seed(seed)
    p_len = torch.randint(1, prompt + 1, (batch,), generator=gen)
    r_len = torch.randint(1, response + 1, (batch,), generator=gen)
    p_len[0], r_len[0] = prompt, response
    T = prompt + response
    tokens = torch.randint(0, VOCAB, (batch, T), generator=gen)
    pos = torch.arange(T)
    prompt_valid = (pos < prompt) & (pos >= prompt - p_len.unsqueeze(-1))
    resp_valid = (pos >= prompt) & (pos < prompt + r_len.unsqueeze(-1))
    attention = prompt_valid | resp_valid
    tokens = tokens.masked_fill(~attention, 0)
    # assistant mask: the response plus, for multi-turn flavour, the last prompt token of odd rows
    assistant = resp_valid.clone()
    assistant[1::2, prompt - 1] = True
    with torch.no_grad():
        actor = TinyTokenActor()
        lp = torch.log_softmax(actor.logits(tokens), -1).gather(-1, tokens.unsqueeze(-1)).squeeze(-1)
    lp = torch.where(attention, lp, 0.0)
    lp[:, 0] = 0.0
    stored = lp + noise * torch.randn(lp.shape, generator=gen) * resp_valid
    ref = lp + 0.3 * torch.randn(lp.shape, generator=gen) * attention
    adv_seq = torch.randn(batch, 1, 1, generator=gen)
    adv_tok = torch.randn(batch, T, 1, generator=gen)
    return {
        "tokens_full": tokens,
        "tokens_prompt": tokens[:, :prompt],
        "attention": attention,
        "assistant": assistant,
        "log_probs": stored,
        "ref_log_probs": ref,
        "advantage": adv_seq,
        "advantage_token": adv_tok,
    }


def to_tensordict(raw: dict, td_cls, per_token_advantage: bool = False):
    """The batch as the nested tensordict the losses read."""
    b = raw["tokens_full"].shape[0]
    return td_cls(
        {
            ("tokens", "full"): raw["tokens_full"],
            ("tokens", "prompt"): raw["tokens_prompt"],
            ("masks", "all_attention_mask"): raw["attention"],
            ("masks", "all_assistant_mask"): raw["assistant"],
            ("log_probs", "full"): raw["log_probs"],
            ("next", "ref_log_probs", "full"): raw["ref_log_probs"],
            "advantage": raw["advantage_token"] if per_token_advantage else raw["advantage"],
        },
        batch_size=[b],
    )
