"""Request batching on the LLM wrappers: threads submitting single requests share model calls."""

from __future__ import annotations

import threading
import time
from concurrent.futures import CancelledError, ThreadPoolExecutor

import pytest
import torch
from tensordict import TensorDict

pytest.importorskip("transformers", reason="the llm extra (transformers) is not installed")

from tdrl.modules.llm import Tokens, TransformersWrapper  # noqa: E402
from tests.modules.llm._tiny import teacher_forced, tiny_model, tiny_tokenizer  # noqa: E402

SEQS = [[5, 6, 7], [8, 9, 10, 11, 12], [13, 14], [15, 16, 17, 18]]


@pytest.fixture(scope="module")
def model():  # noqa: ANN201
    return tiny_model("gpt2")


def _scorer(model, **batching) -> TransformersWrapper:  # noqa: ANN001, ANN003
    return TransformersWrapper(model, tokenizer=tiny_tokenizer(), input_mode="tokens", generate=False, **batching)


def _one(seq: list[int]) -> TensorDict:
    return TensorDict(tokens=Tokens(full=torch.tensor(seq)))  # a 0-d request: one sample


def _submit_all(policy: TransformersWrapper, seqs: list[list[int]]) -> list[TensorDict]:
    with ThreadPoolExecutor(len(seqs)) as pool:
        return list(pool.map(lambda s: policy(_one(s)), seqs))


def test_single_requests_from_threads_run_as_one_batch(model) -> None:  # noqa: ANN001
    policy = _scorer(model, batching=True, min_batch_size=4, batching_timeout=60.0)
    assert policy.batching
    outs = _submit_all(policy, SEQS)
    assert policy.get_batching_state()["batches_run"] == 1
    for seq, out in zip(SEQS, outs):
        assert out.batch_dims == 0
        torch.testing.assert_close(out["log_probs"].full, teacher_forced(model, torch.tensor(seq)), atol=1e-5, rtol=0)


def test_max_batch_size_caps_each_call(model) -> None:  # noqa: ANN001
    policy = _scorer(model, min_batch_size=2, max_batch_size=2, batching_timeout=60.0)
    outs = _submit_all(policy, SEQS)
    assert policy.get_batching_state()["batches_run"] == 2
    assert [o["tokens"].full.numel() for o in outs] == [len(s) for s in SEQS]


def test_timeout_runs_an_incomplete_batch(model) -> None:  # noqa: ANN001
    # TorchRL 0.14.1 waits forever here; the documented timeout applies
    policy = _scorer(model, batching=True, min_batch_size=3, batching_timeout=0.2)
    t0 = time.monotonic()
    out = policy(_one(SEQS[0]))
    assert time.monotonic() - t0 < 10
    torch.testing.assert_close(out["log_probs"].full, teacher_forced(model, torch.tensor(SEQS[0])), atol=1e-5, rtol=0)


def test_generation_requests_and_1d_inputs(model) -> None:  # noqa: ANN001
    policy = TransformersWrapper(
        model, tokenizer=tiny_tokenizer(), input_mode="tokens", batching=True, min_batch_size=3,
        generate_kwargs={"max_new_tokens": 3, "do_sample": False},
    )
    one = TensorDict(tokens=Tokens(prompt=torch.tensor([5, 6])))
    two = torch.stack([TensorDict(tokens=Tokens(prompt=torch.tensor([7, 8]))) for _ in range(2)])
    with ThreadPoolExecutor(2) as pool:
        a, b = pool.submit(policy, one), pool.submit(policy, two)
        a, b = a.result(), b.result()
    assert a.batch_dims == 0 and b.batch_size == (2,)
    assert a["tokens"].response.numel() == 3 and policy.get_batching_state()["batches_run"] == 1


def _wait_queued(policy: TransformersWrapper, n: int) -> None:
    deadline = time.monotonic() + 30
    while policy.get_batching_state()["queue_size"] < n:
        assert time.monotonic() < deadline, "the request never reached the queue"
        time.sleep(0.01)


@pytest.mark.parametrize("flush", [False, True])
def test_cleanup_batching_cancels_or_flushes(model, flush: bool) -> None:  # noqa: ANN001
    policy = _scorer(model, batching=True, min_batch_size=2, batching_timeout=None)
    result: dict = {}

    def call() -> None:
        try:
            result["out"] = policy(_one(SEQS[1]))
        except CancelledError as err:
            result["err"] = err

    thread = threading.Thread(target=call)
    thread.start()
    _wait_queued(policy, 1)
    policy.cleanup_batching(flush=flush)
    thread.join(30)
    assert ("out" in result) is flush and ("err" in result) is not flush
    assert policy.get_batching_state()["queue_size"] == 0


def test_batching_argument_errors(model) -> None:  # noqa: ANN001
    with pytest.raises(ValueError, match="must be None if batching is False"):
        _scorer(model, batching=False, min_batch_size=2)
    with pytest.raises(ValueError, match=r"min_batch_size \(4\) must be <= max_batch_size \(2\)"):
        _scorer(model, min_batch_size=4, max_batch_size=2)
    with pytest.raises(ValueError, match="max_batch_size must be an int >= 1"):
        _scorer(model, batching=True, max_batch_size=0)
    policy = _scorer(model, batching=True)
    two_d = torch.stack([torch.stack([_one([5, 6])] * 2)] * 2)
    with pytest.raises(ValueError, match="0-d or 1-d inputs"):
        policy(two_d)
    assert _scorer(model).get_batching_state() == {"batching_enabled": False}
