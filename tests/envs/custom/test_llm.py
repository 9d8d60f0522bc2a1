"""LLMHashingEnv: chained reproducible hashes, TorchRL 0.14.1's layout (reset / step / rollout keys and shapes),
decoded text, make_tensordict and errors."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from tensordict import TensorDict

from tdrl.envs import LLMHashingEnv
from tdrl.envs.custom.llm import row_hash
from tdrl.envs.llm import LLMHashingEnv as FromLLM

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "llm"))


@pytest.fixture(scope="module")
def tokenizer():
    pytest.importorskip("transformers", reason="the decoded-text path needs the `llm` extra (transformers)")
    from _tiny import tiny_tokenizer

    return tiny_tokenizer()


def _reset(env, tokens):
    return env.reset(TensorDict(observation=torch.tensor(tokens), batch_size=[len(tokens)]))


def test_hashes_chain_and_name_equal_chains_equally():
    assert FromLLM is LLMHashingEnv
    env = LLMHashingEnv(vocab_size=20, text_output=False)
    td = _reset(env, [[1, 2], [1, 2], [2, 1]])
    assert td["hashing"].shape == (3, 1) and td["hashing"][0] == td["hashing"][1] != td["hashing"][2]
    torch.testing.assert_close(td["hashing"].squeeze(-1), row_hash(torch.tensor([[1, 2], [1, 2], [2, 1]])))
    td["action"] = torch.tensor([[3], [4], [3]])
    nxt = env.step(td)["next"]
    assert nxt["observation"].tolist() == [[1, 2, 3], [1, 2, 4], [2, 1, 3]]
    expected = row_hash(torch.cat([td["hashing"], td["action"]], -1))
    torch.testing.assert_close(nxt["hashing"].squeeze(-1), expected)
    assert nxt["hashing"][0] != nxt["hashing"][1]
    assert not nxt["done"].any() and (nxt["reward"] == 0).all()


def test_rollout_layout_matches_torchrl():
    env = LLMHashingEnv(vocab_size=20, text_output=False)
    rollout = env.rollout(3, lambda td: td.set("action", torch.tensor([[9]])), auto_reset=False,
                          tensordict=_reset(env, [[5, 6, 7]]))
    assert rollout.batch_size == (1, 3)
    assert set(rollout.keys()) == {"action", "done", "hashing", "next", "observation", "terminated"}
    assert rollout[0][-1]["next", "observation"].tolist() == [5, 6, 7, 9, 9, 9]
    assert rollout["action"].shape == (1, 3, 1) and rollout["hashing"].shape == (1, 3, 1)


def test_hash_is_the_same_in_another_process():
    code = ("import torch; from tdrl.envs.custom.llm import row_hash; "
            "print(row_hash(torch.tensor([[1, 2, 3]])).item())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONHASHSEED": "123"})
    assert int(out.stdout.strip().splitlines()[-1]) == row_hash(torch.tensor([[1, 2, 3]])).item()


def test_text_output_and_make_tensordict(tokenizer):
    env = LLMHashingEnv(tokenizer=tokenizer)
    assert env.full_action_spec["action"].space.n == tokenizer.vocab_size
    ids = tokenizer(["Hello world"])["input_ids"]
    td = _reset(env, ids)
    assert list(td["text"]) == tokenizer.batch_decode(torch.tensor(ids))
    td["action"] = torch.tensor([[ids[0][0]]])
    assert env.step(td)["next", "text"][0] == tokenizer.decode(ids[0] + [ids[0][0]])
    single = env.make_tensordict("Hello")
    assert single.batch_size == () and single["text"] == tokenizer.decode(tokenizer("Hello")["input_ids"])


def test_errors():
    with pytest.raises(TypeError, match="vocab_size"):
        LLMHashingEnv()
    with pytest.raises(TypeError, match="tokenizer"):
        LLMHashingEnv(vocab_size=5)
    env = LLMHashingEnv(vocab_size=5, text_output=False)
    with pytest.raises(RuntimeError, match="'observation'"):
        env.reset(TensorDict(batch_size=[1]))
    with pytest.raises(ValueError, match=r"\[batch, features\]"):
        row_hash(torch.zeros(2, 2, 2))
