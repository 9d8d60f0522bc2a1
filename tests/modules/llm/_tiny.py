"""Tiny offline tokenizers and causal LMs for the LLM tests (no download, ever).

``tiny_tokenizer()`` trains a byte-level BPE in-process (a few ms) and wraps it as a
``PreTrainedTokenizerFast`` with a ChatML chat template; ``tiny_model(arch)`` builds a 2-layer, hidden-32
random-weight GPT-2, Llama, Qwen2 or OPT. Other test packages may import these builders.
"""

from __future__ import annotations

import functools
import os

import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")

ARCHS = ("gpt2", "llama", "qwen2", "opt")

CHATML_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)

_CORPUS = [
    "the quick brown fox jumps over the lazy dog",
    "hello world, how are you today? I am fine, thank you.",
    "what is 2 + 3? the answer is 5. what is 7 + 1? the answer is 8.",
    "user assistant system: reply with a short answer.",
    "0 1 2 3 4 5 6 7 8 9 + - * / = ( ) <answer> </answer>",
] * 4

SPECIALS = ["<pad>", "<eos>", "<|im_start|>", "<|im_end|>"]


@functools.lru_cache(maxsize=4)
def _bpe(vocab_size: int) -> object:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=SPECIALS, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    tok.train_from_iterator(_CORPUS, trainer=trainer)
    return tok


def tiny_tokenizer(pad_is_eos: bool = False, vocab_size: int = 300, padding_side: str = "left"):  # noqa: ANN201
    """A ``PreTrainedTokenizerFast`` (vocab ~300) with ``<pad>``/``<eos>`` and a ChatML template.

    ``pad_is_eos=True`` makes the pad token the EOS token, as many real checkpoints do.
    """
    from transformers import PreTrainedTokenizerFast

    tok = PreTrainedTokenizerFast(
        tokenizer_object=_bpe(vocab_size),
        eos_token="<eos>",
        pad_token="<eos>" if pad_is_eos else "<pad>",
        padding_side=padding_side,
    )
    tok.chat_template = CHATML_TEMPLATE
    return tok


def tiny_model(arch: str, vocab_size: int = 300, seed: int = 0, eos_token_id: int = 1, pad_token_id: int = 0):  # noqa: ANN201
    """A random-weight causal LM: 2 layers, hidden 32, 2 heads, 128 positions, in eval mode, float32."""
    import transformers as tf

    common = {"vocab_size": vocab_size, "eos_token_id": eos_token_id, "pad_token_id": pad_token_id}
    if arch == "gpt2":
        cfg = tf.GPT2Config(n_layer=2, n_head=2, n_embd=32, n_positions=128, bos_token_id=eos_token_id, **common)
        cls = tf.GPT2LMHeadModel
    elif arch == "llama":
        cfg = tf.LlamaConfig(
            num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1, hidden_size=32,
            intermediate_size=64, max_position_embeddings=128, bos_token_id=eos_token_id, **common,
        )
        cls = tf.LlamaForCausalLM
    elif arch == "qwen2":
        cfg = tf.Qwen2Config(
            num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1, hidden_size=32,
            intermediate_size=64, max_position_embeddings=128, bos_token_id=eos_token_id, **common,
        )
        cls = tf.Qwen2ForCausalLM
    elif arch == "opt":
        cfg = tf.OPTConfig(
            num_hidden_layers=2, num_attention_heads=2, hidden_size=32, ffn_dim=64, word_embed_proj_dim=32,
            max_position_embeddings=128, bos_token_id=eos_token_id, **common,
        )
        cls = tf.OPTForCausalLM
    else:
        raise ValueError(f"unknown arch {arch!r}; expected one of {ARCHS}")
    cfg._attn_implementation = "sdpa"
    torch.manual_seed(seed)
    return cls(cfg).eval()


def bias_token(model, token_id: int, bias: float) -> None:  # noqa: ANN001
    """Adds ``bias`` to the logit of ``token_id`` at every position (a forward hook on the output head), so
    generation emits that token often; scoring and generation both see the same biased model."""

    def hook(module, args, output):  # noqa: ANN001, ANN202
        output = output.clone()
        output[..., token_id] += bias
        return output

    model.get_output_embeddings().register_forward_hook(hook)


def teacher_forced(model, seq: torch.Tensor) -> torch.Tensor:  # noqa: ANN001
    """Reference log-probs of one unpadded sequence: ``lp[0] = 0``, ``lp[i] = log p(seq[i] | seq[:i])``."""
    with torch.no_grad():
        logits = model(input_ids=seq[None]).logits[0].float()
    lp = logits[:-1].log_softmax(-1).gather(-1, seq[1:, None]).squeeze(-1)
    return torch.cat([torch.zeros(1), lp])
