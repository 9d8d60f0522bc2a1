"""History: construction, stacking, append/extend, item access, rendering options, parsing, specs."""

from __future__ import annotations

import pytest
import torch
from tensordict import LazyStackedTensorDict, TensorDict, lazy_stack

from tdrl.data import Composite
from tdrl.data import History as HistoryFromData
from tdrl.data.llm import ContentBase, History, _templates, add_chat_template

CHAT = [
    {"role": "system", "content": "Be nice."},
    {"role": "user", "content": "What is 2 + 3?"},
    {"role": "assistant", "content": "The answer is 5."},
]


def test_exported_from_tdrl_data():
    assert HistoryFromData is History


def test_from_chats_batch_of_different_lengths_is_lazy():
    h = History.from_chats([CHAT, CHAT[:2]])
    assert isinstance(h._tensordict, LazyStackedTensorDict)
    assert h[0].shape == (3,) and h[1].shape == (2,)
    assert list(h[1].role) == ["system", "user"]
    assert h[0, 2].content == "The answer is 5."
    with pytest.raises(ValueError, match="empty"):
        History.from_chats([])


def test_torch_stack_of_messages():
    h = torch.stack([History(role="user", content="a"), History(role="assistant", content="b")])
    assert list(h.role) == ["user", "assistant"]
    assert h.is_complete == [True, True] or list(h.is_complete) == [True, True]


@pytest.mark.parametrize("inplace", [True, False])
def test_append_one_message(inplace):
    h = History.from_chats(CHAT[:2])
    out = h.append(History(role="assistant", content="5"), inplace=inplace)
    assert out.shape == (3,)
    assert out[-1].content == "5"
    assert (h is out) == inplace
    assert h.shape == ((3,) if inplace else (2,))


def test_append_to_batch_along_last_dim():
    h = History.from_chats([CHAT[:2], CHAT[:2]])
    reply = lazy_stack([History(role="assistant", content="x"), History(role="assistant", content="y")])
    h.append(reply, dim=-1)
    assert h.shape == (2, 3)
    assert [h[0, -1].content, h[1, -1].content] == ["x", "y"]


def test_append_and_extend_check_dims():
    h = History.from_chats(CHAT)
    with pytest.raises(RuntimeError, match="one dimension fewer"):
        h.append(h)
    with pytest.raises(RuntimeError, match="batchless"):
        History(role="user", content="a").append(History(role="user", content="b"))
    with pytest.raises(RuntimeError, match="as many dimensions"):
        h.extend(History(role="user", content="b"))


@pytest.mark.parametrize("inplace", [True, False])
def test_extend(inplace):
    h = History.from_chats(CHAT[:1])
    out = h.extend(History.from_chats(CHAT[1:]), inplace=inplace)
    assert list(out.role) == ["system", "user", "assistant"]
    assert (h is out) == inplace


def test_extend_batch_dim0():
    h = History.from_chats([CHAT, CHAT])
    out = h.extend(History.from_chats([CHAT]), inplace=False, dim=0)
    assert out.shape[0] == 3


def test_tool_fields_round_trip():
    msg = History(role="assistant", content="", tool_calls=[{"name": "f", "arguments": {}}])
    h = History.from_chats(CHAT[:2]).append(msg)
    assert h[-1].tool_calls == [{"name": "f", "arguments": {}}]
    assert h[0].tool_calls is None


def test_content_base_parts():
    parts = lazy_stack([ContentBase(type="text", text="hi"), ContentBase(type="image", url="a.png")])
    h = History(role="user", content=parts, batch_size=())
    assert h.content.type == ["text", "image"] or list(h.content.type) == ["text", "image"]
    assert h.content[1].url == "a.png"


def test_default_spec_shape_and_cls():
    spec = History.default_spec()
    assert isinstance(spec, Composite)
    assert spec.shape == () and spec["role"].shape == (-1,)
    assert spec.data_cls is History
    assert set(spec.keys()) == {"role", "content", "is_complete", "tool_calls", "tool_responses"}
    assert History.default_spec(shape=(2, -1)).shape == (2,)


def test_apply_chat_template_batch_returns_list(tokenizer):
    h = History.from_chats([CHAT, CHAT[:2]])
    texts = h.apply_chat_template(tokenizer=tokenizer, add_generation_prompt=True)
    assert isinstance(texts, list) and len(texts) == 2
    assert texts[1].endswith("<|im_start|>user\nWhat is 2 + 3?<|im_end|>\n<|im_start|>assistant\n")


def test_apply_chat_template_tokens(tokenizer):
    h = History.from_chats(CHAT)
    ids = h.apply_chat_template(tokenizer=tokenizer, tokenize=True, add_generation_prompt=False)
    assert isinstance(ids, torch.Tensor) and ids.shape[0] == 1
    text = h.apply_chat_template(tokenizer=tokenizer, add_generation_prompt=False)
    assert tokenizer.decode(ids[0]) == text
    batch = History.from_chats([CHAT, CHAT[:2]]).apply_chat_template(
        tokenizer=tokenizer, return_assistant_tokens_mask=True, add_generation_prompt=False
    )
    assert isinstance(batch, LazyStackedTensorDict) and batch.batch_size == (2,)
    # Assistant mask: exactly the tokens of the assistant content.
    masked = batch[0]["input_ids"][batch[0]["assistant_masks"].bool()]
    assert tokenizer.decode(masked) == "The answer is 5."
    assert batch[1]["assistant_masks"].sum() == 0


def test_none_role_is_dropped(tokenizer):
    padded = History.from_chats(CHAT[:2]).append(History(role="<none>", content=""))
    assert padded.apply_chat_template(tokenizer=tokenizer) == History.from_chats(CHAT[:2]).apply_chat_template(
        tokenizer=tokenizer
    )


def test_template_resolution(tokenizer):
    h = History.from_chats(CHAT[1:2])
    own = h.apply_chat_template(tokenizer=tokenizer, add_generation_prompt=False)
    assert own == tokenizer.apply_chat_template(CHAT[1:2], tokenize=False)
    # A model family in the tokenizer name selects its template.
    tokenizer.name_or_path = "Qwen/Qwen2.5-0.5B"
    try:
        assert h.apply_chat_template(tokenizer=tokenizer).startswith("<|im_start|>system\nYou are a helpful")
    finally:
        tokenizer.name_or_path = "tiny-chatml"
    custom = "{% for m in messages %}[{{ m['content'] }}]{% endfor %}"
    assert h.apply_chat_template(tokenizer=tokenizer, chat_template=custom) == "[What is 2 + 3?]"
    with pytest.raises(KeyError, match="registered templates"):
        h.apply_chat_template(tokenizer=tokenizer, chat_template_name="nope")
    with pytest.raises(RuntimeError, match="tokenizer"):
        h.apply_chat_template(tokenizer=None)


def test_tokenizer_template_without_generation_falls_back_to_chatml():
    pytest.importorskip("transformers")
    from _tiny import tiny_tokenizer

    tok = tiny_tokenizer(chat_template="{% for m in messages %}{{ m['content'] }}{% endfor %}")
    text = History.from_chats(CHAT[1:2]).apply_chat_template(tokenizer=tok, add_generation_prompt=False)
    assert text == "<|im_start|>user\nWhat is 2 + 3?<|im_end|>\n"


@pytest.mark.parametrize("name", ["chatml_format", "qwen", "falcon", "deepseek", "llama", "dialogpt"])
def test_from_text_round_trip(tokenizer, name):
    h = History.from_chats(CHAT if name != "dialogpt" else CHAT[1:])
    text = h.apply_chat_template(tokenizer=tokenizer, chat_template_name=name, add_generation_prompt=False)
    back = History.from_text(text, chat_template_name=name, tokenizer=tokenizer)
    assert list(back.content) == [m["content"] for m in (CHAT if name != "dialogpt" else CHAT[1:])]
    assert list(back.role) == [m["role"] for m in (CHAT if name != "dialogpt" else CHAT[1:])]


def test_from_text_list_and_errors():
    texts = ["<|im_start|>user\nA<|im_end|>\n", "<|im_start|>user\nB<|im_end|>\n<|im_start|>assistant\nC"]
    h = History.from_text(texts)
    assert h.shape[0] == 2 and h[1, 1].is_complete is False
    with pytest.raises(RuntimeError, match="skip_special_tokens"):
        History.from_text("plain text, no markers")
    with pytest.raises(ValueError, match="inverse parser"):
        History.from_text("x", chat_template_name="nope")


def test_add_chat_template_with_parser_and_family(tokenizer):
    template = (
        "{% for m in messages %}{% if m['role'] == 'assistant' %}{% generation %}{{ m['content'] }}"
        "{% endgeneration %}{% else %}{{ m['content'] }}{% endif %}|{% endfor %}"
    )

    def parse(text):
        parts = [p for p in text.split("|") if p]
        return lazy_stack([History(role="user" if i % 2 == 0 else "assistant", content=p) for i, p in enumerate(parts)])

    add_chat_template("pipes", template, inverse_parser=parse, model_family_keywords=["pipe-model"])
    try:
        h = History.from_chats(CHAT[1:])
        tokenizer.name_or_path = "org/Pipe-Model-7b"
        text = h.apply_chat_template(tokenizer=tokenizer, add_generation_prompt=False)
        assert text == "What is 2 + 3?|The answer is 5.|"
        assert list(History.from_text(text, tokenizer=tokenizer).content) == ["What is 2 + 3?", "The answer is 5."]
        res = h.apply_chat_template(tokenizer=tokenizer, return_assistant_tokens_mask=True, add_generation_prompt=False)
        assert tokenizer.decode(res["input_ids"][res["assistant_masks"].bool()]) == "The answer is 5."
    finally:
        tokenizer.name_or_path = "tiny-chatml"
        _templates.CHAT_TEMPLATES.pop("pipes")
        _templates.INVERSE_PARSERS.pop("pipes")
        _templates._CUSTOM_FAMILIES.pop("pipes")
    with pytest.raises(ValueError, match="generation"):
        add_chat_template("bad", "{{ messages }}")


def test_torchrl_style_program(tokenizer):
    """The calls a TorchRL 0.14.1 program makes with History (docs' History example, import swapped)."""
    history0 = History(role="system", content="CONTENT\nThis is the setup")
    history1 = History(role="user", content="CONTENT\nThis is the first user prompt")
    history2 = History(role="assistant", content="CONTENT\nThis is the second prompt, the first for the assistant.")
    history = torch.stack([history0, history1, history2])
    assert history.role == ["system", "user", "assistant"]
    parsed = history.apply_chat_template(tokenizer=tokenizer, add_generation_prompt=True)
    assert parsed.endswith("<|im_end|>\n<|im_start|>assistant\n")
    result = History.from_chats([CHAT]).apply_chat_template(
        tokenizer=tokenizer, add_generation_prompt=False, return_dict=True, return_assistant_tokens_mask=True
    )
    assert int(result["assistant_masks"].sum()) > 0
    td = TensorDict(history=History.from_chats([CHAT]), batch_size=(1,))
    assert td["history"][0, -1].role == "assistant"
