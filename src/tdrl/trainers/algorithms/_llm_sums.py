"""The built-in tiny verifiable task of ``tdrl train algo=grpo``: one-digit sums modulo 10.

The prompt is ``"a+b="`` and the right reply is the digit ``(a + b) % 10`` followed by EOS. A character
tokenizer (14 tokens) and a small random GPT-2 keep generation fast on one CPU thread; the env is a
``DatasetChatEnv`` (text mode) over the 100 records with a chat template that writes the messages back to back.
Needs the ``llm`` extra (transformers, tokenizers); imported lazily by the GRPO trainer's builders.
"""

from __future__ import annotations

from typing import Any

import torch

from tdrl.envs.llm import DatasetChatEnv
from tdrl.envs.llm.reward import AnswerRewardParser

__all__ = ["SumRewardParser", "make_sums_env", "sft_warmup", "sums_records", "sums_tokenizer", "tiny_gpt2"]

_CHARS = "0123456789+="
# The prompt, then each reply followed by EOS: "3+4=" -> "3+4=7<eos>".
_TEMPLATE = "{% for m in messages %}{{ m['content'] }}{% if m['role'] == 'assistant' %}<eos>{% endif %}{% endfor %}"


def sums_records(modulo: int = 10) -> list[dict[str, str]]:
    """The 100 records ``{"query": "a+b=", "answer": str((a + b) % modulo)}``.

    Examples:
        >>> sums_records()[23]
        {'query': '2+3=', 'answer': '5'}
    """
    return [{"query": f"{a}+{b}=", "answer": str((a + b) % modulo)} for a in range(10) for b in range(10)]


def sums_tokenizer() -> Any:  # noqa: ANN401
    """A character-level ``PreTrainedTokenizerFast``: ``<pad>`` (0), ``<eos>`` (1), digits, ``+`` and ``=``."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {"<pad>": 0, "<eos>": 1, **{c: i + 2 for i, c in enumerate(_CHARS)}}
    core = Tokenizer(models.WordLevel(vocab, unk_token="<pad>"))
    core.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    core.decoder = decoders.Fuse()
    tok = PreTrainedTokenizerFast(tokenizer_object=core, pad_token="<pad>", eos_token="<eos>", padding_side="left")
    tok.chat_template = _TEMPLATE
    return tok


def tiny_gpt2(vocab_size: int = len(_CHARS) + 2, *, n_layer: int = 2, n_embd: int = 64, seed: int = 0) -> Any:  # noqa: ANN401
    """A random-weight GPT-2 (``n_layer`` x ``n_embd``, 2 heads, 64 positions) in eval mode."""
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(seed)
    cfg = GPT2Config(vocab_size=vocab_size, n_layer=n_layer, n_head=2, n_embd=n_embd, n_positions=64,
                     eos_token_id=1, pad_token_id=0, bos_token_id=1)
    return GPT2LMHeadModel(cfg).eval()


class SumRewardParser(AnswerRewardParser):
    """Reward 1.0 when the reply (what follows the prompt's ``=``, EOS stripped) is exactly the reference digit,
    else 0.0; every reply ends the dialog (one turn per prompt).

    Examples:
        >>> SumRewardParser(input_mode="text").score("3+4=7", "7")["reward"], SumRewardParser().score("17", "7")["reward"]
        (1.0, 0.0)
    """

    def score(self, response: str, reference: str) -> dict[str, float | bool]:
        reply = response.split("=", 1)[1] if "=" in response else response
        correct = reply.strip() == reference.strip()
        value = self.correct_reward if correct else 0.0
        return {"reward_answer": 1.0, "reward_think": 0.0, "reward_right": value, "reward": value, "success": correct}


def make_sums_env(tokenizer: Any, *, num_prompts: int, group_size: int, seed: int = 0) -> DatasetChatEnv:  # noqa: ANN401
    """``num_prompts`` random sums per reset, each repeated ``group_size`` times side by side (GRPO groups),
    scored by :class:`SumRewardParser`."""
    env = DatasetChatEnv(dataset=sums_records(), num_envs=num_prompts, repeats=group_size, group_repeats=True,
                         seed=seed, tokenizer=tokenizer, input_mode="text", template_kwargs={"chat_template": _TEMPLATE})
    return env.append_transform(SumRewardParser(tokenizer=tokenizer, input_mode="text"))


def sft_warmup(model: Any, tokenizer: Any, *, steps: int, lr: float = 3e-3, batch_size: int = 32,  # noqa: ANN401
               fraction: float = 0.5, seed: int = 0) -> float:
    """Teacher-forced next-token training on ``fraction`` of the records (``"a+b=c<eos>"``, loss on ``c`` and
    EOS only), so that the policy answers in the right format and sometimes right before RL. Returns the
    last batch's loss. The model is left in eval mode (GRPO scores with the sampling-time behaviour)."""
    gen = torch.Generator().manual_seed(seed)
    records = sums_records()
    keep = torch.randperm(len(records), generator=gen)[: max(1, int(fraction * len(records)))]
    seqs = torch.tensor([tokenizer(records[i]["query"] + records[i]["answer"])["input_ids"] + [1] for i in keep])
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    loss = torch.zeros(())
    for _ in range(steps):
        batch = seqs[torch.randint(len(seqs), (batch_size,), generator=gen)]
        logits = model(input_ids=batch).logits[:, :-1]
        target = batch[:, 1:].clone()
        target[:, : target.shape[1] - 2] = -100  # only the answer digit and EOS are supervised
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), target.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    return float(loss.detach())
