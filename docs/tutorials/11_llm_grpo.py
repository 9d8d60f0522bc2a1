"""LLM text environment and GRPO on a tiny model

Reinforcement learning on tokens, all on CPU and offline: a character tokenizer built in-process, a small
GPT-2 with random weights, a text environment over a local list of question/answer records, a policy that
generates with exact token log-probabilities, and GRPO (group-relative advantages, clipped ratio) written as
an explicit loop. The task: one-digit sums modulo 10 (`"3+4="` -> `"7"`).
"""

# %%
# ## A tokenizer and a model, built here
# Nothing is downloaded: the tokenizer is a `tokenizers` word-level model over 14 symbols, the model a
# 2-layer GPT-2 from its config. The chat template writes the messages back to back (the prompt, then the
# reply and EOS), so a dialog is just `"3+4=7<eos>"`.
import os

import torch
from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

from tdrl.collectors.llm import LLMCollector
from tdrl.data import LazyStackStorage, ReplayBuffer
from tdrl.envs.llm import DatasetChatEnv
from tdrl.envs.llm.reward import AnswerRewardParser
from tdrl.modules.llm import TransformersWrapper
from tdrl.objectives.llm import GRPOLoss, MCAdvantage

os.environ.setdefault("HF_HUB_OFFLINE", "1")
TINY = os.environ.get("TDRL_TUTORIAL_TINY") == "1"
WARMUP_STEPS, ITERATIONS = (20, 2) if TINY else (300, 30)
PROMPTS, GROUP = 16, 8  # prompts per batch, answers per prompt (the GRPO group)
torch.manual_seed(0)
torch.set_num_threads(1)

vocab = {"<pad>": 0, "<eos>": 1, **{c: i + 2 for i, c in enumerate("0123456789+=")}}
core = Tokenizer(models.WordLevel(vocab, unk_token="<pad>"))
core.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
core.decoder = decoders.Fuse()
tokenizer = PreTrainedTokenizerFast(tokenizer_object=core, pad_token="<pad>", eos_token="<eos>", padding_side="left")
template = "{% for m in messages %}{{ m['content'] }}{% if m['role'] == 'assistant' %}<eos>{% endif %}{% endfor %}"
tokenizer.chat_template = template
config = GPT2Config(vocab_size=len(vocab), n_layer=2, n_head=2, n_embd=64, n_positions=64,
                    eos_token_id=1, pad_token_id=0, bos_token_id=1)
model = GPT2LMHeadModel(config).eval()
records = [{"query": f"{a}+{b}=", "answer": str((a + b) % 10)} for a in range(10) for b in range(10)]
print(len(records), "records, e.g.", records[23], "| tokens of '2+3=':", tokenizer("2+3=")["input_ids"])

# %%
# ## A short supervised warm-up
# From random weights every reply is wrong and every reward 0, which gives GRPO nothing to compare. A few
# hundred teacher-forced steps on half of the sums teach the answer format (and some answers).
train_ids = torch.tensor([tokenizer(r["query"] + r["answer"])["input_ids"] + [1] for r in records[::2]])
warmup = torch.optim.Adam(model.parameters(), lr=3e-3)
for _ in range(WARMUP_STEPS):
    batch = train_ids[torch.randint(len(train_ids), (32,))]
    logits = model(input_ids=batch).logits[:, :-1]
    target = batch[:, 1:].clone()
    target[:, :-2] = -100  # supervise the answer digit and EOS only
    loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), target.reshape(-1))
    warmup.zero_grad()
    loss.backward()
    warmup.step()
model.eval()
print(f"warm-up loss {loss.item():.3f}")

# %%
# ## Generation with exact log-probabilities
# `TransformersWrapper` generates and returns `log_probs.response`: the log-probability of each sampled
# token under the model's raw logits (not the sampling post-processor's scores), the first generated token
# included. Scoring the same tokens with teacher forcing (`generate=False`) gives the same numbers; that is
# what makes the PPO/GRPO ratio exactly 1 before the first update.
policy = TransformersWrapper(model, tokenizer=tokenizer, input_mode="text", return_log_probs=True,
                             generate_kwargs={"max_new_tokens": 2, "do_sample": True, "temperature": 1.0})
scorer = policy.get_new_version(generate=False, input_mode="tokens")


class SumReward(AnswerRewardParser):
    """1.0 when the reply after `=` is the reference digit, else 0.0."""

    def score(self, response: str, reference: str) -> dict[str, float | bool]:
        reply = response.split("=", 1)[1] if "=" in response else response
        right = float(reply.strip() == reference.strip())
        return {"reward_answer": 1.0, "reward_think": 0.0, "reward_right": right, "reward": right,
                "success": bool(right)}


env = DatasetChatEnv(dataset=records, num_envs=PROMPTS, repeats=GROUP, group_repeats=True, seed=0,
                     tokenizer=tokenizer, input_mode="text", template_kwargs={"chat_template": template})
env = env.append_transform(SumReward(tokenizer=tokenizer, input_mode="text"))
step = policy(env.reset())
rescored = scorer(step.copy())
generated = step["log_probs"].get("response", as_padded_tensor=True)
teacher = rescored["log_probs"].get("response", as_padded_tensor=True)
print("first prompts:", step["text"].prompt[:2], "| replies:", step["text"].response[:2])
print(f"max |generation - teacher forcing| = {(generated - teacher).abs().max().item():.2e}")

# %%
# ## GRPO as an explicit loop
# The collector plays one turn per prompt (`PROMPTS * GROUP` answers) into a buffer whose `MCAdvantage`
# transform writes each answer's advantage: its reward minus its group's mean, over the group's std. The
# loss scores the sampled tokens with the current weights (`scorer` shares the model) and clips the ratio.
buffer = ReplayBuffer(storage=LazyStackStorage(PROMPTS * GROUP))
buffer.append_transform(MCAdvantage(grpo_size=GROUP))
collector = LLMCollector(env, policy=policy, dialog_turns_per_batch=PROMPTS * GROUP, replay_buffer=buffer)
loss_module = GRPOLoss(scorer, clip_epsilon=0.2, entropy_bonus=False)
optimizer = torch.optim.Adam(model.parameters(), lr=2e-3)
rewards = []
for _ in collector:
    if len(buffer) == 0:  # a group is written once all its answers are in
        continue
    batch = buffer[:]
    rewards.append(batch.get(("next", "reward"), as_padded_tensor=True).float().mean().item())
    out = loss_module(batch)
    loss = out.loss_objective  # a GRPOLossOutput tensorclass; no KL-to-reference term here
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    buffer.empty()
    if len(rewards) >= ITERATIONS:
        break
collector.shutdown()
k = max(1, len(rewards) // 3)
print(f"{len(rewards)} iterations: mean reward {sum(rewards[:k]) / k:.3f} (first {k}) -> "
      f"{sum(rewards[-k:]) / k:.3f} (last {k})")
