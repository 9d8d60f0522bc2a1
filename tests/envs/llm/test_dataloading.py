"""DataLoadingPrimer (batches, repeats, grouping, cycling, partial resets, stack methods) and AddThinkingPrompt."""

from __future__ import annotations

import pickle

import pytest
import torch
from tensordict import TensorDict, lazy_stack

from tdrl.data.llm import History
from tdrl.envs import TransformedEnv
from tdrl.envs.llm import AddThinkingPrompt, ChatEnv, DataLoadingPrimer, as_nested_tensor, as_padded_tensor
from tdrl.envs.transforms import Compose


def _records(n):
    return [{"query": [f"q{i}"], "answer": [str(i)]} for i in range(n)]


def test_batches_repeats_and_cycling():
    primer = DataLoadingPrimer(_records(2), batch_size=2, repeats=3)
    seen = [list(primer(TensorDict(batch_size=[2]))["query"]) for _ in range(4)]
    assert seen == [["q0", "q0"], ["q0", "q1"], ["q1", "q1"], ["q0", "q0"]]


def test_group_repeats_multiplies_the_batch():
    primer = DataLoadingPrimer(_records(3), batch_size=1, repeats=4, group_repeats=True)
    assert primer.batch_size == (4,)
    assert list(primer(TensorDict(batch_size=[4]))["query"]) == ["q0"] * 4


def test_dataloader_factory_and_reset():
    primer = DataLoadingPrimer(dataloader_factory=lambda: _records(3), batch_size=1)
    primer(TensorDict(batch_size=[1]))
    primer.reset_dataloader()
    assert list(primer(TensorDict(batch_size=[1]))["query"]) == ["q0"]
    with pytest.raises(ValueError, match="exactly one"):
        DataLoadingPrimer()
    with pytest.raises(ValueError, match="0-d or 1-d"):
        DataLoadingPrimer(_records(1), batch_size=(1, 2))
    with pytest.raises(ValueError, match="stack_method"):
        DataLoadingPrimer(_records(1), stack_method="zip")
    with pytest.raises(TypeError, match="dicts"):
        DataLoadingPrimer([["not", "a", "dict"]])
    with pytest.raises(ValueError, match="different lengths"):
        DataLoadingPrimer([{"query": ["a", "b"], "answer": ["1"]}])


def test_partial_reset_refreshes_only_the_reset_envs():
    env = TransformedEnv(ChatEnv(batch_size=(2,)), DataLoadingPrimer(_records(5), batch_size=2))
    td = env.reset()
    assert list(td["query"]) == ["q0", "q1"]
    td.set("_reset", torch.tensor([[False], [True]]))
    td = env.reset(td)
    prompts = td["history"].prompt
    assert [prompts[0, -1].content, prompts[1, -1].content] == ["q0", "q2"]


def test_tensor_records_with_stack_methods():
    loader = [lazy_stack([TensorDict(ids=torch.tensor([1, 2, 3])), TensorDict(ids=torch.tensor([4]))])]
    padded = DataLoadingPrimer(loader, batch_size=2, stack_method="as_padded_tensor")(TensorDict(batch_size=[2]))
    assert padded["ids"].tolist() == [[1, 2, 3], [0, 0, 4]]
    nested = DataLoadingPrimer(loader, batch_size=2, stack_method=as_nested_tensor)(TensorDict(batch_size=[2]))
    assert nested["ids"].is_nested and [t.tolist() for t in nested["ids"].unbind()] == [[1, 2, 3], [4]]
    ragged = DataLoadingPrimer(loader, batch_size=2)(TensorDict(batch_size=[2]))
    assert [t.tolist() for t in ragged.get("ids", as_list=True)] == [[1, 2, 3], [4]]


def test_as_padded_tensor_dim_and_errors():
    tds = [TensorDict(x=torch.ones(2, 3)), TensorDict(x=torch.ones(1, 3))]
    assert as_padded_tensor(tds)["x"].shape == (2, 2, 3)
    with pytest.raises(ValueError, match="dim"):
        as_padded_tensor(tds, dim=-1)


def test_primer_clones_and_pickles_share_no_generator_state():
    primer = DataLoadingPrimer(_records(3), batch_size=1)
    clone = primer.clone()
    assert list(clone(TensorDict(batch_size=[1]))["query"]) == ["q0"]
    restored = pickle.loads(pickle.dumps(primer))
    assert list(restored(TensorDict(batch_size=[1]))["query"]) == ["q0"]


def _reply(td, texts):
    replies = lazy_stack([History(role="assistant", content=t).unsqueeze(0) for t in texts])
    td["history"].full = td["history"].prompt.extend(replies, inplace=False, dim=-1)
    return td


def test_add_thinking_prompt_edits_the_last_turn():
    wrong = AddThinkingPrompt(cond=lambda td: "42" not in td["history"].prompt[-1].content, prompt="Think again.")
    env = TransformedEnv(ChatEnv(batch_size=(2,)), Compose(DataLoadingPrimer(_records(4), batch_size=2), wrong))
    td = env.step(_reply(env.reset(), ["<think>a</think> <answer>41</answer>", "<answer>42</answer>"]))
    nxt = td["next"]
    assert nxt["history"].prompt[0, -1].content == "<think>a</think> Think again."
    assert nxt["history"].prompt[1, -1].content == "<answer>42</answer>"
    assert nxt["history"].prompt[0].shape == nxt["history"].prompt[1].shape  # the turn is edited, not added


def test_add_thinking_prompt_appends_a_user_turn_and_checks_mode(tokenizer):
    t = AddThinkingPrompt(cond=lambda td: True, role="user", edit_last_turn=False)
    env = TransformedEnv(ChatEnv(batch_size=(1,)), Compose(DataLoadingPrimer(_records(1), batch_size=1), t))
    td = env.step(_reply(env.reset(), ["<answer>1</answer>"]))
    last = td["next", "history"].prompt[0, -1]
    assert last.role == "user" and last.content == AddThinkingPrompt.DEFAULT_PROMPTS_COG[0]
    with pytest.raises(ValueError, match="edit_last_turn"):
        AddThinkingPrompt(cond=lambda td: True, role="user")
    text_env = TransformedEnv(ChatEnv(batch_size=(1,), input_mode="text", tokenizer=tokenizer),
                              AddThinkingPrompt(cond=lambda td: True))
    td = text_env.reset(TensorDict(query=["a"], batch_size=(1,)))
    td["text"].full = ["x"]
    with pytest.raises(RuntimeError, match="history mode"):
        text_env.step(td)


def test_policy_version_tags_resets_and_steps():
    from tdrl.envs.llm.transforms import PolicyVersion

    version = PolicyVersion()
    env = TransformedEnv(ChatEnv(batch_size=(2,)), Compose(DataLoadingPrimer(_records(4), batch_size=2), version))
    td = env.reset()
    assert td["policy_version"].tolist() == [0, 0]
    version.increment_version()
    td = env.step(_reply(td, ["a", "b"]))
    assert td["next", "policy_version"].tolist() == [1, 1]
    assert [c.new_version for c in version.version_history] == [0, 1]
    uid = PolicyVersion("uuid")
    first = uid.version
    uid.increment_version()
    assert isinstance(uid.version, str) and uid.version != first
    with pytest.raises(ValueError, match="version_type"):
        PolicyVersion("float")
