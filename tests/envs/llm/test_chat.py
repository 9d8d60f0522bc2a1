"""ChatEnv / DatasetChatEnv: reset from a query, the step makes the full conversation the next prompt."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict, lazy_stack
from torch.utils.data import DataLoader

from tdrl.data.llm import History
from tdrl.envs import TransformedEnv
from tdrl.envs.llm import ChatEnv, DataLoadingPrimer, DatasetChatEnv, IncrementalTokenizer

from ._tiny import CHAT_TEMPLATE


def _reply(td, texts, mode="history"):
    prompt = td[mode].prompt
    replies = lazy_stack([History(role="assistant", content=t).unsqueeze(0) for t in texts])
    td[mode].full = prompt.extend(replies, inplace=False, dim=-1)
    return td


def test_reset_builds_system_and_user_turns():
    env = ChatEnv(batch_size=(2,), system_prompt="Be brief.")
    td = env.reset(TensorDict(query=["Hi", "Yo"], batch_size=(2,)))
    h = td["history"].prompt
    assert h.shape[:1] == (2,)
    assert list(h[0].role) == ["system", "user"] and list(h[1].content) == ["Be brief.", "Yo"]
    assert td["done"].shape == (2, 1) and not td["done"].any()


def test_multi_turn_rollout_carries_the_conversation():
    env = ChatEnv(batch_size=(1,))
    td = env.reset(TensorDict(query=["Hi"], batch_size=(1,)))
    for turn in range(3):
        td = env.step(_reply(td, [f"reply {turn}"]))
        td = env.step_mdp(td)
    roles = list(td["history"].prompt[0].role)
    assert roles == ["user", "assistant", "assistant", "assistant"]
    assert td["history"].prompt[0, -1].content == "reply 2"


def test_reset_accepts_chats_and_histories():
    env = ChatEnv(batch_size=(2,))
    chats = [[{"role": "user", "content": "a"}], [{"role": "user", "content": "b"}, {"role": "assistant", "content": "c"}]]
    td = env.reset(TensorDict(query=History.from_chats(chats), batch_size=(2,)))
    assert td["history"].prompt[1, -1].content == "c"
    one = History.from_chats([{"role": "user", "content": "shared"}])
    td = env.reset(TensorDict(query=one.unsqueeze(0).expand(2, 1), batch_size=(2,)))
    assert td["history"].prompt[1, 0].content == "shared"


def test_text_mode_applies_template(tokenizer):
    env = ChatEnv(batch_size=(1,), input_mode="text", tokenizer=tokenizer, system_prompt="S")
    td = env.reset(TensorDict(query=["Hi"], batch_size=(1,)))
    assert td["text"].prompt[0] == "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
    td["text"].full = [td["text"].prompt[0] + "Hello<|im_end|>\n"]
    td = env.step(td)
    assert td["next", "text"].prompt[0].endswith("Hello<|im_end|>\n")


def test_tokens_mode_and_template_kwargs(tokenizer):
    env = ChatEnv(batch_size=(2,), input_mode="tokens", tokenizer=tokenizer, template_kwargs={"chat_template_name": "llama"})
    td = env.reset(TensorDict(query=["Hi", "Hello there"], batch_size=(2,)))
    prompts = td["tokens"].get("prompt", as_list=True)
    assert len(prompts[0]) != len(prompts[1])  # ragged
    assert tokenizer.decode(prompts[0]).endswith("<|header_start|>assistant<|header_end|>\n\n")
    td["tokens"].full = [torch.cat([p, torch.tensor([5, 6])]) for p in prompts]
    td = env.step(td)
    assert torch.equal(td["next", "tokens"].get("prompt", as_list=True)[1][-2:], torch.tensor([5, 6]))


def test_errors():
    with pytest.raises(ValueError, match="at least one batch dimension"):
        ChatEnv(batch_size=())
    with pytest.raises(ValueError, match="needs a `tokenizer`"):
        ChatEnv(input_mode="text")
    with pytest.raises(ValueError, match="input_mode"):
        ChatEnv(input_mode="audio")
    env = ChatEnv(batch_size=(1,))
    with pytest.raises(RuntimeError, match="'query'"):
        env.reset()
    td = env.reset(TensorDict(query=["Hi"], batch_size=(1,)))
    with pytest.raises(KeyError, match="full"):
        env._step(td)
    with pytest.raises(ValueError, match="one string per env"):
        ChatEnv(batch_size=(2,)).reset(TensorDict(query=NotAList(), batch_size=(2,)))


class NotAList:
    """A query that is neither text nor a chat."""


def test_with_tokenizer_keeps_policy_tokens(tokenizer):
    env = ChatEnv.with_tokenizer(tokenizer, batch_size=(1,))
    assert isinstance(env, TransformedEnv) and isinstance(env.transform, IncrementalTokenizer)
    td = env.reset(TensorDict(query=["Hi"], batch_size=(1,)))
    expected = tokenizer.apply_chat_template([{"role": "user", "content": "Hi"}], add_generation_prompt=True,
                                             chat_template=CHAT_TEMPLATE, return_dict=True)["input_ids"]
    assert td["tokens", "prompt"][0].tolist() == expected
    full = torch.tensor(expected + [9, 9])
    td.set(("tokens", "full"), torch.nested.as_nested_tensor([full], layout=torch.jagged))
    td = env.step(_reply(td, ["x"]))
    assert td["next", "tokens", "prompt"][0].tolist() == full.tolist()  # the policy's tokens, not re-tokenized
    with pytest.raises(ValueError, match="tokenizer"):
        ChatEnv(with_tokenizer=True)


def test_dataset_chat_env_from_records_and_repeats():
    records = [{"query": f"q{i}", "answer": str(i)} for i in range(3)]
    env = DatasetChatEnv(dataset=records, shuffle=False, num_envs=2, repeats=2)
    first, second = env.reset(), env.reset()
    assert list(first["query"]) == ["q0", "q0"] and list(second["query"]) == ["q1", "q1"]
    third = env.reset()
    assert list(third["query"]) == ["q2", "q2"]
    assert list(env.reset()["query"]) == ["q0", "q0"]  # cycles when exhausted
    env.reset_dataloader()
    assert list(env.reset()["query"]) == ["q0", "q0"]


def test_dataset_chat_env_from_dataloader_and_text_key():
    records = [{"text": "hello", "answer": "1"}, {"text": "world", "answer": "2"}]
    from tdrl.envs.llm._data import default_collate_fn

    loader = DataLoader(records, batch_size=2, collate_fn=default_collate_fn)
    env = ChatEnv.from_dataloader(loader, batch_size=(2,), system_prompt="S")
    td = env.reset()
    assert list(td["query"]) == ["hello", "world"]
    assert isinstance(env.transform, DataLoadingPrimer)
    td = env.step(_reply(td, ["a", "b"]))
    assert list(td["next", "answer"]) == ["1", "2"]  # loaded entries ride along every step


def test_dataset_errors():
    with pytest.raises(ValueError, match="non-empty"):
        DatasetChatEnv(dataset=[])
    with pytest.raises(TypeError, match="list of records"):
        DatasetChatEnv(dataset={"query": "a"})
    with pytest.raises(ValueError, match="ray_backend"):
        DatasetChatEnv(dataset=[{"query": "a"}], ray_backend=True)


def test_torchrl_style_program():
    """ChatEnv + DataLoadingPrimer as TorchRL 0.14.1's docs wire them (imports swapped)."""
    import tensordict

    tensordict.set_list_to_stack(True).set()
    loader = [{"query": ["What is 2+2?", "Name a colour."]}]
    primer = DataLoadingPrimer(dataloader=loader, batch_size=2)
    env = TransformedEnv(ChatEnv(batch_size=(2,), system_prompt="You are helpful."), primer)
    td = env.reset()
    assert td["history"].prompt.shape[0] == 2
    rollout = env.rollout(2, lambda t: _reply(t, ["4", "blue"]))
    assert rollout.batch_size == (2, 2)
    assert list(rollout[0, 1]["history"].prompt.role) == ["system", "user", "assistant"]
