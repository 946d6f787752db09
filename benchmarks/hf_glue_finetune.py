"""The Hugging Face side of `glue_finetune.py`, in a process of its own (no TensorFlow):
`BertForSequenceClassification` (transformers on PyTorch, CPU) fine-tuned on GLUE TSV
files, sharing no code with keras_bert (its own TSV reader, the checkpoint's fast
tokenizer, scipy/scikit-learn metrics). The loop is what `Trainer` does for
`run_glue.py`: AdamW without decay on biases and LayerNorm, linear warmup and decay,
clipping to global norm 1.0. `padding`: "max_length" (run_glue's default), "dynamic"
(`DataCollatorWithPadding`) or "grouped" (dynamic over Trainer's `group_by_length`).

    python benchmarks/hf_glue_finetune.py JOB.json   # a job dict from glue_finetune.py
"""

from __future__ import annotations

import json
import math
import os
import resource
import sys
import time

from harness import step_stats

_STARTED = time.perf_counter()
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

# The GLUE files' layouts: directory, header or the headerless column names, text
# columns, label column and label set (None: a regression score).
TASKS = {
    "sst2": {"dir": "SST-2", "columns": None, "text": ("sentence",), "label": "label",
             "labels": ("0", "1")},
    "mrpc": {"dir": "MRPC", "columns": None, "text": ("#1 String", "#2 String"),
             "label": "Quality", "labels": ("0", "1")},
    "rte": {"dir": "RTE", "columns": None, "text": ("sentence1", "sentence2"),
            "label": "label", "labels": ("entailment", "not_entailment")},
    "stsb": {"dir": "STS-B", "columns": None, "text": ("sentence1", "sentence2"),
             "label": "score", "labels": None},
    "cola": {"dir": "CoLA", "columns": ("source", "label", "original_mark", "sentence"),
             "text": ("sentence",), "label": "label", "labels": ("0", "1")},
}


def read_tsv(path: str, spec: dict) -> tuple[list[list[str]], list]:
    """(text columns, labels) of a GLUE TSV: tab-separated, no quoting, only "\\n" ends
    a row; a header names the columns except in CoLA's train/dev files."""
    with open(path, encoding="utf-8-sig", newline="") as f:
        lines = [line.removesuffix("\r") for line in f.read().split("\n")]
    lines = [line for line in lines if line]
    if spec["columns"] is None:
        names, rows = lines[0].split("\t"), lines[1:]
    else:
        names, rows = list(spec["columns"]), lines
    text_index = [names.index(c) for c in spec["text"]]
    label_index = names.index(spec["label"])
    texts = [[] for _ in text_index]
    labels = []
    for number, line in enumerate(rows):
        row = line.split("\t")
        if len(row) != len(names):
            raise ValueError(f"{path}: row {number} has {len(row)} columns, expected "
                             f"{len(names)}")
        for column, i in zip(texts, text_index):
            column.append(row[i])
        raw = row[label_index]
        labels.append(float(raw) if spec["labels"] is None else spec["labels"].index(raw))
    return texts, labels


def glue_scores(task: str, gold, predicted) -> dict:
    """The official dev metrics, computed with scipy/scikit-learn (not keras_bert's)."""
    import numpy as np

    gold, predicted = np.asarray(gold), np.asarray(predicted)
    if task == "stsb":
        from scipy import stats

        return {"pearson": float(stats.pearsonr(gold, predicted)[0]),
                "spearmanr": float(stats.spearmanr(gold, predicted)[0])}
    if task == "cola":
        from sklearn.metrics import matthews_corrcoef

        return {"matthews_corrcoef": float(matthews_corrcoef(gold, predicted))}
    scores = {"accuracy": float(np.mean(gold == predicted))}
    if task == "mrpc":
        from sklearn.metrics import f1_score

        scores["f1"] = float(f1_score(gold, predicted, pos_label=1))
    return scores


def _decay_groups(model, weight_decay: float) -> list[dict]:
    """Trainer's parameter groups: no weight decay on biases and LayerNorm weights."""
    import torch

    no_decay = set()
    for module_name, module in model.named_modules():
        for name, _ in module.named_parameters(recurse=False):
            full = f"{module_name}.{name}" if module_name else name
            if isinstance(module, torch.nn.LayerNorm) or name.endswith("bias"):
                no_decay.add(full)
    params = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    return [{"params": [p for n, p in params if n not in no_decay],
             "weight_decay": weight_decay},
            {"params": [p for n, p in params if n in no_decay], "weight_decay": 0.0}]


def run_job(job: dict, import_seconds: float) -> dict:
    import numpy as np
    import torch
    import transformers
    from torch.utils.data import DataLoader, RandomSampler
    from transformers import (
        AutoTokenizer,
        BertForSequenceClassification,
        DataCollatorWithPadding,
        get_linear_schedule_with_warmup,
    )
    from transformers.trainer_pt_utils import LengthGroupedSampler

    load_before = os.getloadavg()
    torch.set_num_threads(job["threads"])
    task, spec = job["task"], TASKS[job["task"]]
    seq, padding = job["max_seq_length"], job["padding"]

    # --- reading and tokenization -----------------------------------------------------
    start = time.perf_counter()
    tokenizer = AutoTokenizer.from_pretrained(job["checkpoint"])
    splits = {}
    for split in ("train", "dev"):
        texts, labels = read_tsv(os.path.join(job["data_dir"], f"{split}.tsv"), spec)
        encoded = tokenizer(*texts, truncation="longest_first", max_length=seq)
        rows = [{"input_ids": encoded["input_ids"][i],
                 "token_type_ids": encoded["token_type_ids"][i],
                 "attention_mask": encoded["attention_mask"][i], "labels": labels[i]}
                for i in range(len(labels))]
        splits[split] = (rows, labels)
    prepare_seconds = time.perf_counter() - start
    train_rows, _ = splits["train"]
    dev_rows, dev_labels = splits["dev"]

    # --- model ------------------------------------------------------------------------
    start = time.perf_counter()
    transformers.set_seed(job["seed"])
    num_labels = 1 if spec["labels"] is None else len(spec["labels"])
    model = BertForSequenceClassification.from_pretrained(
        job["checkpoint"], num_labels=num_labels, dtype=torch.float32)
    load_seconds = time.perf_counter() - start

    if padding == "max_length":
        collate = DataCollatorWithPadding(tokenizer, padding="max_length", max_length=seq)
    else:
        collate = DataCollatorWithPadding(tokenizer)
    generator = torch.Generator().manual_seed(job["seed"])
    if padding == "grouped":
        sampler = LengthGroupedSampler(job["batch_size"],
                                       lengths=[len(r["input_ids"]) for r in train_rows],
                                       generator=generator)
    else:
        sampler = RandomSampler(train_rows, generator=generator)
    loader = DataLoader(train_rows, batch_size=job["batch_size"], sampler=sampler,
                        collate_fn=collate, num_workers=0)
    dev_loader = DataLoader(dev_rows, batch_size=job["eval_batch_size"], shuffle=False,
                            collate_fn=collate, num_workers=0)

    steps_per_epoch = math.ceil(len(train_rows) / job["batch_size"])
    total = max(1, round(steps_per_epoch * job["epochs"]))
    warmup = int(total * job["warmup_proportion"])
    optimizer = torch.optim.AdamW(_decay_groups(model, job["weight_decay"]),
                                  lr=job["learning_rate"], betas=(0.9, 0.999),
                                  eps=job["adam_epsilon"])
    if job["schedule"] == "bert":  # keras_bert's (google-research/bert's) decay from step 0
        scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda t: (
            t / warmup if t < warmup else max(0.0, 1.0 - t / total)))
    else:
        scheduler = get_linear_schedule_with_warmup(optimizer, warmup, total)

    # mixed_bfloat16: float32 weights and optimizer, the forward pass under CPU autocast
    # to bfloat16 (what Trainer's bf16=True does on a CPU).
    bf16 = job.get("precision") == "mixed_bfloat16"

    def evaluate():
        model.eval()
        outputs = []
        with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16,
                                                    enabled=bf16):
            for batch in dev_loader:
                batch.pop("labels", None)
                outputs.append(model(**batch).logits.float().numpy())
        model.train()
        logits = np.concatenate(outputs)
        predicted = logits[:, 0] if num_labels == 1 else logits.argmax(axis=-1)
        return glue_scores(task, dev_labels, predicted)

    # --- training: the epoch loops alone are timed --------------------------------------
    epoch_seconds, epoch_cpu_seconds, step_seconds, history = [], [], [], []
    eval_seconds, step, losses = 0.0, 0, []
    model.train()
    for epoch in range(max(1, math.ceil(job["epochs"]))):
        start, cpu_start = time.perf_counter(), time.process_time()
        step_start = time.perf_counter()
        for batch in loader:
            if step >= total:
                break
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
                loss = model(**batch).loss
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad(set_to_none=True)
            losses.append(loss.item())
            step += 1
            step_seconds.append(time.perf_counter() - step_start)
            step_start = time.perf_counter()
        epoch_seconds.append(time.perf_counter() - start)
        epoch_cpu_seconds.append(time.process_time() - cpu_start)
        start = time.perf_counter()
        dev = evaluate()
        eval_seconds += time.perf_counter() - start
        history.append({"epoch": epoch + 1, "loss": round(float(np.mean(losses)), 4),
                        "dev": dev})
        losses = []

    train_seconds = sum(epoch_seconds)
    sequences = min(total * job["batch_size"], len(train_rows) * job["epochs"])
    cpu_seconds = sum(epoch_cpu_seconds)
    return {
        "side": "hf", "impl": "transformers BertForSequenceClassification (PyTorch)",
        "task": task, "padding": padding, "precision": job.get("precision", "float32"),
        "train_examples": len(train_rows), "dev_examples": len(dev_rows),
        "epochs": job["epochs"], "max_seq_length": seq, "batch_size": job["batch_size"],
        "learning_rate": job["learning_rate"], "schedule": job["schedule"],
        "adam_epsilon": job["adam_epsilon"], "steps": total, "warmup_steps": warmup,
        "dev": history[-1]["dev"], "history": history,
        "train_seconds": round(train_seconds, 2),
        "epoch_seconds": [round(s, 2) for s in epoch_seconds],
        "train_seq_per_s": round(sequences / train_seconds, 2),
        "steps_timing": step_stats(step_seconds, job["batch_size"]),
        "train_cpu_seconds": round(cpu_seconds, 2),
        "train_seq_per_cpu_s": round(sequences / cpu_seconds, 2) if cpu_seconds else None,
        "prepare_seconds": round(prepare_seconds, 2), "load_seconds": round(load_seconds, 2),
        "eval_seconds": round(eval_seconds, 2), "import_seconds": round(import_seconds, 2),
        "threads": torch.get_num_threads(),
        "attn_implementation": getattr(model.config, "_attn_implementation", None),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "load_avg_before": [round(x, 2) for x in load_before],
        "load_avg_after": [round(x, 2) for x in os.getloadavg()],
        "versions": {"torch": torch.__version__, "transformers": transformers.__version__},
    }


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        job = json.load(f)
    import transformers

    transformers.logging.set_verbosity_error()
    print(json.dumps(run_job(job, time.perf_counter() - _STARTED)), flush=True)


if __name__ == "__main__":
    main()
