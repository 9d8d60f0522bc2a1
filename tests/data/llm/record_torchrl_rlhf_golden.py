"""Records TorchRL 0.14.1's RLHF tokenizing recipes (``TensorDictTokenizer``, ``PromptTensorDictTokenizer``)
and ``PromptData.mask_label`` on the local records of ``_rlhf_records.py`` (run by hand)::

    ~/.cache/torchrl-anchor-venv/bin/python tests/data/llm/record_torchrl_rlhf_golden.py

writes ``golden_rlhf_torchrl_0_14_1.json``. TorchRL's ``TokenizedDatasetLoader`` needs the ``datasets``
package, absent from the reference venv, so the loaders themselves are checked by hand in the tests.
"""

from __future__ import annotations

import json
import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parents[1] / "envs" / "llm")]

from _rlhf_records import MAX_LENGTH, PROMPTS, TEXTS, gpt2_like  # noqa: E402
from _tiny import tiny_tokenizer  # noqa: E402


def main() -> None:
    import torch
    import torchrl
    from torchrl.data.llm import PromptData, PromptTensorDictTokenizer, TensorDictTokenizer

    tok = gpt2_like(tiny_tokenizer())
    golden = {"torchrl_version": torchrl.__version__}
    out = TensorDictTokenizer(tok, MAX_LENGTH)({"text": TEXTS})
    golden["text"] = {k: out[k].tolist() for k in out.keys()}
    single = TensorDictTokenizer(tok, MAX_LENGTH)({"text": TEXTS[0]})
    golden["text_single"] = {"batch_size": list(single.batch_size), "input_ids": single["input_ids"].tolist()}
    columns = {k: [r[k] for r in PROMPTS] for k in ("prompt", "label")}
    out = PromptTensorDictTokenizer(tok, MAX_LENGTH)(columns)
    golden["prompt"] = {k: out[k].tolist() for k in out.keys()}
    data = PromptData(input_ids=out["input_ids"], attention_mask=out["attention_mask"],
                      prompt_rindex=out["prompt_rindex"], batch_size=out.batch_size)
    masked = data.mask_label(pad_token_id=tok.eos_token_id)
    golden["mask_label"] = {"input_ids": masked.input_ids.tolist(), "attention_mask": masked.attention_mask.tolist()}
    assert isinstance(masked.input_ids, torch.Tensor)
    path = HERE / "golden_rlhf_torchrl_0_14_1.json"
    path.write_text(json.dumps(golden) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
