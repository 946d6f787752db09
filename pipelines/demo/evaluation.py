"""The demo's held-out evaluation: masked-LM and next-sentence accuracy of the untrained
and the pretrained model on held-out TFRecords, next to the trivial baselines learned
from the training TFRecords (always the most frequent masked token; always the majority
next-sentence label), and the models' guesses for masked words of held-out sentences."""

from __future__ import annotations

import collections

import numpy as np

from keras_bert.pipelines.demo.corpus import FUNCTION_WORDS
from keras_bert.pipelines.demo.job import DemoSettings


def masked_examples(sentences, tokenizer, count: int = 5, max_tokens: int = 40):
    """Held-out sentences with one word to guess: a word of 4+ letters that is one token
    in the vocab and not a function word, near the middle of the sentence."""
    examples = []
    for sentence in sentences:
        ids = np.asarray(tokenizer.tokenize([sentence])[0])
        if not 8 <= len(ids) <= max_tokens:
            continue
        pieces = [tokenizer.id_to_token(int(i)) for i in ids]
        candidates = [i for i, p in enumerate(pieces)
                      if p.isalpha() and len(p) >= 4 and p not in FUNCTION_WORDS
                      and (i + 1 == len(pieces) or not pieces[i + 1].startswith("##"))]
        if not candidates:
            continue
        position = min(candidates, key=lambda i: abs(i - len(pieces) / 2))
        examples.append({"sentence": sentence, "ids": ids, "position": position,
                         "answer": pieces[position]})
        if len(examples) == count:
            break
    return examples


def guesses(model, tokenizer, examples, k: int = 3) -> list[dict]:
    """The model's top-k tokens for the masked word of each example, and the rank of
    the right answer among all the vocab's tokens (1: the model's first choice)."""
    length = max(len(e["ids"]) for e in examples) + 2
    ids = np.zeros((len(examples), length), "int32")
    mask = np.zeros_like(ids)
    for row, e in enumerate(examples):
        tokens = [tokenizer.cls_id, *e["ids"], tokenizer.sep_id]
        tokens[1 + e["position"]] = tokenizer.mask_id
        ids[row, :len(tokens)] = tokens
        mask[row, :len(tokens)] = 1
    positions = np.array([[1 + e["position"]] for e in examples], "int32")
    logits = np.asarray(model({"input_word_ids": ids, "input_mask": mask,
                               "input_type_ids": np.zeros_like(ids),
                               "masked_lm_positions": positions},
                              training=False)["masked_lm"])[:, 0, :]
    results = []
    for row, e in enumerate(examples):
        answer = int(e["ids"][e["position"]])
        order = np.argsort(-logits[row])
        results.append({"top": [tokenizer.id_to_token(int(i)) for i in order[:k]],
                        "answer_rank": int(np.nonzero(order == answer)[0][0]) + 1})
    return results


def _records(pattern: str, settings: DemoSettings, batch_size: int = 256):
    from keras_bert.data.tfrecords import pretraining_dataset

    return pretraining_dataset(pattern, batch_size, max_seq_length=settings.max_seq_length,
                               max_predictions_per_seq=settings.max_predictions_per_seq,
                               is_training=False, drop_remainder=False)


def training_label_statistics(pattern: str, settings: DemoSettings) -> dict:
    """What the trivial baselines learn from the training TFRecords: the most frequent
    masked token (real masked positions only) and the majority next-sentence label."""
    token_counts = collections.Counter()
    labels = collections.Counter()
    for batch in _records(pattern, settings):
        ids = batch["masked_lm_ids"].numpy()
        weights = batch["masked_lm_weights"].numpy()
        token_counts.update(ids[weights > 0].tolist())
        labels.update(batch["next_sentence_labels"].numpy().ravel().tolist())
    token, _ = token_counts.most_common(1)[0]
    majority, _ = labels.most_common(1)[0]
    return {"most_frequent_token_id": int(token), "majority_next_sentence_label": int(majority),
            "masked_tokens": int(sum(token_counts.values())),
            "random_next_fraction": labels[1] / max(1, sum(labels.values()))}


def heldout_evaluation(models: dict, pattern: str, settings: DemoSettings,
                       statistics: dict, max_instances: int = 4096) -> dict:
    """Masked-LM and next-sentence accuracy of each model and of the two trivial
    baselines on the same held-out instances (the first `max_instances`) and the same
    masked positions."""
    import tensorflow as tf

    batch = 64
    instances = _records(pattern, settings, batch).unbatch().take(max_instances)
    dataset = instances.batch(batch).cache()
    total, hits, nsp_total, nsp_hits, steps = 0.0, 0.0, 0, 0, 0
    for features in dataset:
        steps += 1
        weights = features["masked_lm_weights"].numpy()
        ids = features["masked_lm_ids"].numpy()
        total += weights.sum()
        hits += (weights * (ids == statistics["most_frequent_token_id"])).sum()
        labels = features["next_sentence_labels"].numpy().ravel()
        nsp_total += labels.size
        nsp_hits += int((labels == statistics["majority_next_sentence_label"]).sum())
    results = {"instances": nsp_total, "masked_positions": int(total),
               "baselines": {"most_frequent_token_mlm_accuracy": round(float(hits / total), 4),
                             "majority_class_nsp_accuracy": round(nsp_hits / nsp_total, 4)}}
    for name, model in models.items():
        split = dataset.map(model.split_features, num_parallel_calls=tf.data.AUTOTUNE)
        scores = model.evaluate(split, steps=steps, verbose=0, return_dict=True)
        results[name] = {k: round(float(v), 4) for k, v in scores.items()}
    return results
