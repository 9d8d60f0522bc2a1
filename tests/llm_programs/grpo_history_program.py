"""A TorchRL 0.14.1-style LLM program (GRPO on chat histories), written with ``torchrl`` imports.

``test_torchrl_programs.py`` runs this file after the import swap (``torchrl`` -> ``tdrl``). Nothing is
downloaded: the tokenizer is trained in-process and the model is a random-weight Llama config. Run as it is in
the TorchRL 0.14.1 venv (``python tests/llm_programs/grpo_history_program.py`` from the repository root), it
gets through History, ChatEnv + DataLoadingPrimer, generation and MCAdvantage and stops in ``GRPOLoss``: its
history scorer re-renders the decoded history (42 tokens against the 38 sampled: "The size of tensor a (42)
must match the size of tensor b (38)"), and with a tokens scorer it finds no ``("log_probs", "full")``, since
its generation writes only the response log-probs (see docs/differences.md).
"""

import torch
import transformers
from torch.utils.data import DataLoader
from torchrl.data import LazyStackStorage, ReplayBuffer
from torchrl.data.llm import History
from torchrl.envs.llm import ChatEnv
from torchrl.envs.llm.transforms import DataLoadingPrimer
from torchrl.modules.llm import TransformersWrapper
from torchrl.objectives.llm import GRPOLoss, MCAdvantage

from tests.envs.llm._tiny import tiny_tokenizer


def run() -> dict:
    torch.manual_seed(0)
    tokenizer = tiny_tokenizer()
    # Llama, not GPT-2: TorchRL 0.14.1 passes the mask positionally, into GPT-2's cache argument
    config = transformers.LlamaConfig(
        num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=1, hidden_size=16, intermediate_size=32,
        vocab_size=len(tokenizer), max_position_embeddings=256,
    )
    model = transformers.LlamaForCausalLM(config).eval()

    # History: build a chat and render it with the tokenizer's template
    chat = History.from_chats([[{"role": "user", "content": "What is 2 + 3?"}]])
    prompt_text = chat.apply_chat_template(tokenizer=tokenizer, add_generation_prompt=True)

    # queries from a dataloader, each repeated twice (a GRPO group of 2 answers)
    questions = ["What is 2 + 3?", "Hello, how are you?"]
    dataloader = DataLoader([{"query": q} for q in questions], batch_size=1, shuffle=False)
    env = ChatEnv(batch_size=(2,), tokenizer=tokenizer, system_prompt="You are a helpful assistant.")
    env = env.append_transform(DataLoadingPrimer(dataloader=dataloader, repeats=2, batch_size=(2,)))

    policy = TransformersWrapper(
        model, tokenizer=tokenizer, input_mode="history", generate=True, return_log_probs=True,
        generate_kwargs={"max_new_tokens": 4, "do_sample": True},
    )
    buffer = ReplayBuffer(storage=LazyStackStorage(16), batch_size=4)
    buffer.append_transform(MCAdvantage(grpo_size=2))
    for _ in range(2):  # two prompts, two answers each
        td = env.reset()
        td = env.step(policy(td))
        # a toy verifiable reward: the length of the reply, so the two answers of a group differ
        texts = td["history", "full"][..., -1].content
        reward = torch.tensor([[float(len(t))] for t in texts]).unsqueeze(-1)
        td["next", "reward"] = reward
        td["next", "done"] = torch.ones(2, 1, dtype=torch.bool)
        buffer.extend(td.reshape(-1))

    # score the sampled tokens themselves (prefer_tokens): re-rendering the history is not always the identity
    scorer = TransformersWrapper(model, tokenizer=tokenizer, input_mode="history", generate=False, prefer_tokens=True)
    loss_fn = GRPOLoss(scorer, clip_epsilon=0.2)
    batch = buffer.sample()
    loss = loss_fn(batch)
    loss.loss_objective.backward()
    grad = sum(p.grad.abs().sum() for p in model.parameters() if p.grad is not None)
    return {
        "prompt_text": prompt_text,
        "buffer_len": len(buffer),
        "advantage_shape": tuple(batch["advantage"].shape),
        "loss": float(loss.loss_objective.detach()),
        "grad": float(grad),
        "log_probs_first": float(td["log_probs"].response[0][0]),
        "advantage_abs": float(batch["advantage"].abs().sum()),
    }


if __name__ == "__main__":
    print(run())
