"""Records TorchRL 0.14.1's chat-template renderings, parses and KL-controller updates (run by hand).

    ~/.cache/torchrl-anchor-venv/bin/python tests/data/llm/record_torchrl_golden.py

writes ``tests/data/llm/golden_torchrl_0_14_1.json``; ``test_golden.py`` checks tdrl against it. The
tokenizer is the tests' in-process one, so both sides render with the same special tokens.
"""

from __future__ import annotations

import json
import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parents[1] / "envs" / "llm")]

from _conversations import CONVERSATIONS, KL_UPDATES, PARSE_TEXTS, TEMPLATE_NAMES, TOOLS  # noqa: E402
from _tiny import tiny_tokenizer  # noqa: E402


def _jsonable(x):
    if isinstance(x, dict):
        return {k: _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    return x


FIELDS = ("role", "content", "is_complete", "tool_calls", "tool_responses")


def _history_fields(h):
    return [{f: _jsonable(getattr(h[i], f)) for f in FIELDS} for i in range(h.shape[0])]


def main() -> None:
    import torchrl
    from torchrl.data.llm import AdaptiveKLController, ConstantKLController, History

    tok = tiny_tokenizer()
    out = {"torchrl": torchrl.__version__, "render": {}, "masks": {}, "parse": {}, "kl": {}}
    for conv_name, chat in CONVERSATIONS.items():
        h = History.from_chats([chat])[0]
        for name in TEMPLATE_NAMES + [None]:
            for gen in (True, False):
                kwargs = {"tools": TOOLS} if conv_name == "tools" and name == "qwen" else {}
                text = h.apply_chat_template(
                    tokenizer=tok, chat_template_name=name, add_generation_prompt=gen, **kwargs
                )
                out["render"][f"{conv_name}|{name}|{gen}"] = text
        res = h.apply_chat_template(
            tokenizer=tok, chat_template_name="chatml_format", add_generation_prompt=False,
            return_assistant_tokens_mask=True,
        )
        out["masks"][conv_name] = {k: res[k].tolist() for k in ("input_ids", "attention_mask", "assistant_masks")}
    for name, texts in PARSE_TEXTS.items():
        out["parse"][name] = []
        for text in texts:
            try:
                out["parse"][name].append(_history_fields(History.from_text(text, chat_template_name=name)))
            except RuntimeError as err:  # recorded: tdrl's test states where it parses and TorchRL cannot
                out["parse"][name].append({"error": str(err)[:80]})
    ada = AdaptiveKLController(init_kl_coef=0.2, target=0.1, horizon=100)
    const = ConstantKLController(kl_coef=0.3)
    out["kl"]["adaptive"] = [float(ada.update(v)) for v in KL_UPDATES]
    out["kl"]["constant"] = [float(const.update(v)) for v in KL_UPDATES]
    (HERE / "golden_torchrl_0_14_1.json").write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
