"""Produces tests/fixtures/embeddings/loss_refs.npz: sentence-transformers' own loss
values (`compute_loss_from_embeddings` of `MultipleNegativesRankingLoss`, `CoSENTLoss`
and `CosineSimilarityLoss`, default scales) on seeded random embeddings, the
independent reference tests/tasks/test_embedding_training.py compares
`keras_bert.tasks.embedding.losses` against. Made with sentence-transformers 6.2.0,
torch 2.13.0+cpu; neither is needed by keras_bert or its tests.

    pip install torch==2.13.0 sentence-transformers
    python scripts/make_embedding_loss_refs.py
"""

import os

import numpy as np
import torch
from sentence_transformers.sentence_transformer import losses

OUT = os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures", "embeddings",
                   "loss_refs.npz")


def main():
    rng = np.random.default_rng(7)
    batch, width = 8, 16
    pairs = rng.normal(size=(batch, 2, width)).astype(np.float32)
    triplets = rng.normal(size=(batch, 3, width)).astype(np.float32)
    scores = rng.uniform(0, 1, size=batch).astype(np.float32)
    scores[3] = scores[5]  # a tie: neither order is asked for

    def columns(x):
        return [torch.from_numpy(x[:, k].copy()) for k in range(x.shape[1])]

    mnrl = losses.MultipleNegativesRankingLoss(model=None)
    cosent = losses.CoSENTLoss(model=None)
    cosine = losses.CosineSimilarityLoss(model=None)
    labels = torch.from_numpy(scores)
    with torch.no_grad():
        out = {
            "pairs": pairs, "triplets": triplets, "scores": scores,
            "mnrl_pairs": mnrl.compute_loss_from_embeddings(columns(pairs), None).numpy(),
            "mnrl_triplets": mnrl.compute_loss_from_embeddings(columns(triplets),
                                                               None).numpy(),
            "cosent": cosent.compute_loss_from_embeddings(columns(pairs), labels).numpy(),
            "cosine": cosine.compute_loss_from_embeddings(columns(pairs), labels).numpy(),
        }
    np.savez(OUT, **out)
    print({k: float(v) for k, v in out.items() if v.ndim == 0})


if __name__ == "__main__":
    main()
