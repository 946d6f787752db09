"""The stages of `keras-bert demo`, one function each, in the order the demo runs them:
corpus, vocab, TFRecords, pretraining, held-out evaluation, fine-tuning (from the
pretrained and from a random encoder), export with serve_text, pictures (the summary
is `demo.summarize`). Each prints its header and progress, adds its numbers to
`job.report`, and returns what a later stage needs."""

from __future__ import annotations

import json
import os
import shutil

from keras_bert.core.errors import DataError
from keras_bert.core.fileio import write_json
from keras_bert.pipelines.demo.corpus import (
    corpus_documents,
    is_held_out,
    read_documents,
    task_examples,
    write_documents,
)
from keras_bert.pipelines.demo.evaluation import (
    guesses,
    heldout_evaluation,
    masked_examples,
    training_label_statistics,
)
from keras_bert.pipelines.demo.job import EXPORT_NAME, DemoJob
from keras_bert.pipelines.plumbing import emit, json_progress_callback, say
from keras_bert.text.vocab import VOCAB_FILE


def _fraction(part: int, whole: int) -> float:
    return round(part / whole, 4) if whole else 0.0


def build_corpus(job: DemoJob) -> None:
    """1. The training and held-out documents and the derived task's train/dev files
    (or those of an earlier run into the same directory): report["corpus"]."""
    settings, paths = job.settings, job.paths
    job.stages.start(1, "corpus", "Corpus: docstrings of " + ", ".join(settings.sources)
                     + " (one document per module)")
    corpus_record = os.path.join(job.out, "corpus", "corpus.json")
    if os.path.exists(corpus_record):
        say(f"  reusing {os.path.dirname(paths['corpus'])}")
        with open(corpus_record, encoding="utf-8") as f:
            job.report["corpus"] = json.load(f)
    else:
        corpus = corpus_documents(settings.sources, int(settings.max_corpus_mb * 1e6),
                                  progress=job.progress)
        found = {s: len(d) for s, d in corpus.items()}
        if min(found.values()) < 10:
            raise DataError(f"too few multi-sentence docstring documents per source "
                            f"({found}); choose --sources that are installed and "
                            "documented.")
        documents = [d for ds in corpus.values() for d in ds]
        train = [d for ds in corpus.values() for i, d in enumerate(ds) if not is_held_out(i)]
        heldout = [d for ds in corpus.values() for i, d in enumerate(ds) if is_held_out(i)]
        train_task, dev_task = task_examples(corpus, settings.task_examples_per_class,
                                             settings.seed)
        if len(dev_task) < 10 * len(settings.sources):
            raise DataError(f"the held-out documents give only {len(dev_task)} task "
                            "sentences; raise --max_corpus_mb.")
        from keras_bert.tasks.glue.table import write_table

        os.makedirs(paths["task_data"], exist_ok=True)
        write_table(os.path.join(paths["task_data"], "train.tsv"), train_task)
        write_table(os.path.join(paths["task_data"], "dev.tsv"), dev_task)
        write_documents(train, paths["corpus"])
        write_documents(heldout, paths["heldout_corpus"])
        job.report["corpus"] = {
            "documents": len(documents), "heldout_documents": len(heldout),
            "sentences": sum(len(d) for d in documents),
            "sentences_per_document": round(sum(len(d) for d in documents)
                                            / len(documents), 2),
            "per_source": {s: {"documents": len(ds), "sentences": sum(len(d) for d in ds)}
                           for s, ds in corpus.items()},
            "task_train_examples": len(train_task), "task_dev_examples": len(dev_task)}
        write_json(corpus_record, job.report["corpus"], sort_keys=False)
    c = job.report["corpus"]
    say(f"  {c['documents']} documents, {c['sentences']} sentences "
        f"({c['sentences_per_document']} per document); {c['heldout_documents']} "
        "documents held out")
    for source, counts in c["per_source"].items():
        say(f"    {source:<12} {counts['documents']:>5} documents {counts['sentences']:>6} "
            "sentences")
    say(f"  -> {paths['corpus']}\n  -> {paths['heldout_corpus']}")


def learn_wordpiece_vocab(job: DemoJob) -> None:
    """2. vocab.txt learned from the training documents."""
    settings, paths = job.settings, job.paths
    job.stages.start(2, "vocab", f"WordPiece vocab of {settings.vocab_size} tokens")
    if os.path.exists(paths["vocab"]):
        say(f"  reusing {paths['vocab']}")
    else:
        from keras_bert.text.vocab_learning import learn_vocab, write_vocab

        write_vocab(learn_vocab(paths["corpus"], settings.vocab_size, num_unused=10,
                                min_count=2, progress=job.progress), paths["vocab"])
    say(f"  -> {paths['vocab']}")


def write_tfrecords(job: DemoJob) -> None:
    """3. Masked-LM / next-sentence TFRecords of the training and held-out documents,
    and their next-sentence label balance: report["nsp_label_balance"]."""
    settings, paths = job.settings, job.paths
    job.stages.start(3, "data", "Masked-LM / next-sentence TFRecords")
    from keras_bert.data.options import PretrainingDataOptions
    from keras_bert.data.pretraining import create_pretraining_data

    data_options = PretrainingDataOptions(
        max_seq_length=settings.max_seq_length,
        max_predictions_per_seq=settings.max_predictions_per_seq,
        dupe_factor=settings.dupe_factor, random_seed=settings.seed,
        # google-research/bert shortens 10% of the pairs (to match short fine-tuning
        # inputs). Docstring sentences are short, so such a pair's chunk is often one
        # sentence, which is always paired with a random next one: the labels would
        # drift from the paper's 50/50. Here every pair fills the sequence.
        short_seq_prob=0.0)
    balance = {}
    for corpus_key, target in (("corpus", "train_data"), ("heldout_corpus", "heldout_data")):
        totals = create_pretraining_data(paths[corpus_key], paths[target], paths["vocab"],
                                         data_options, num_workers=1,
                                         progress=job.progress)["totals"]
        split = "train" if target == "train_data" else "heldout"
        instances, random_next = totals.get("instances", 0), totals.get(
            "random_next_instances", 0)
        balance[split] = {"instances": instances, "random_next": random_next,
                          "random_next_fraction": _fraction(random_next, instances)}
        say(f"  {split:<8} {instances:>6} instances, next-sentence labels: "
            f"{100 * _fraction(random_next, instances):.1f}% random next, "
            f"{100 - 100 * _fraction(random_next, instances):.1f}% actual next "
            f"-> {paths[target]}")
    job.report["nsp_label_balance"] = balance
    say("  (the paper: 50% / 50%)")


def pretrain(job: DemoJob):
    """4. The pretrained model, and a random initialisation of the same model (saved as
    the random_init checkpoint that fine-tuning starts from)."""
    import keras

    from keras_bert.model.config import BertConfig
    from keras_bert.model.encoder import BertEncoder
    from keras_bert.model.models import BertPretrainer
    from keras_bert.training import Pretraining, PretrainingOptions, pretraining_losses

    settings, paths = job.settings, job.paths
    job.stages.start(4, "pretrain", f"Pretraining a tiny BERT (L2/H{settings.hidden_size}) "
                     f"for {settings.num_train_steps} steps of {settings.train_batch_size} "
                     "sequences")
    config = BertConfig.from_preset("tiny", vocab_size=settings.vocab_size,
                                    max_position_embeddings=settings.max_seq_length,
                                    hidden_size=settings.hidden_size,
                                    intermediate_size=settings.intermediate_size,
                                    num_heads=settings.num_heads)
    options = PretrainingOptions(
        train_batch_size=settings.train_batch_size, num_train_steps=settings.num_train_steps,
        num_warmup_steps=settings.num_train_steps // 10,
        learning_rate=settings.learning_rate,
        save_checkpoints_steps=max(1, settings.num_train_steps // 5),
        log_steps=max(1, settings.num_train_steps // 30), seed=settings.seed)
    pretraining = Pretraining(os.path.join(paths["train_data"], "*.tfrecord"),
                              paths["pretrain_run"], config, options,
                              vocab_file=paths["vocab"], progress=job.progress)
    # A random initialisation of the same model: the "untrained" side of every comparison.
    keras.utils.set_random_seed(settings.seed)
    untrained = BertPretrainer(BertEncoder(config))
    untrained.compile(loss=pretraining_losses(), metrics="auto")
    callback = json_progress_callback("pretrain", settings.num_train_steps,
                                      every=max(1, settings.num_train_steps // 30))
    pretraining.fit(callbacks=[callback] if callback else [])
    random_init_vocab = os.path.join(paths["random_init"], VOCAB_FILE)
    if not os.path.exists(random_init_vocab):
        from keras_bert.checkpoints import save_encoder

        save_encoder(untrained.encoder, paths["random_init"])
        shutil.copyfile(paths["vocab"], random_init_vocab)
    say(f"  -> {paths['pretrain_run']} (checkpoints/, the encoder, metrics.json, "
        "TensorBoard logs/)")
    return pretraining.model, untrained


def evaluate_heldout(job: DemoJob, pretrained, untrained):
    """5. Held-out accuracy of both models next to the baselines, and their masked-word
    guesses: report["heldout"] and report["masked_word_guesses"]. Returns the
    tokenizer."""
    settings, paths = job.settings, job.paths
    job.stages.start(5, "heldout", "Held-out masked-LM and next-sentence accuracy, "
                     "untrained -> pretrained, against trivial baselines")
    from keras_bert.text.tokenizer import BertTokenizer

    tokenizer = BertTokenizer(paths["vocab"], lower_case=True)
    statistics = training_label_statistics(os.path.join(paths["train_data"], "*.tfrecord"),
                                           settings)
    heldout = heldout_evaluation({"untrained": untrained, "pretrained": pretrained},
                                 os.path.join(paths["heldout_data"], "*.tfrecord"), settings,
                                 statistics)
    frequent = tokenizer.id_to_token(statistics["most_frequent_token_id"])
    nsp_majority = ("random next" if statistics["majority_next_sentence_label"]
                    else "actual next")
    heldout["baselines"]["most_frequent_token"] = frequent
    heldout["baselines"]["majority_next_sentence_label"] = nsp_majority
    b = heldout["baselines"]
    say(f"  {heldout['instances']} held-out instances, {heldout['masked_positions']} masked "
        "positions")
    rows = [(f"baseline: always {frequent!r} / {nsp_majority!r}",
             b["most_frequent_token_mlm_accuracy"], b["majority_class_nsp_accuracy"])]
    rows += [(f"{name} BERT", heldout[name]["masked_lm_accuracy"],
              heldout[name]["next_sentence_accuracy"]) for name in ("untrained", "pretrained")]
    width = max(len(row[0]) for row in rows) + 2
    print(f"  {'':<{width}}{'masked-LM acc':>14}{'next-sentence acc':>19}")
    for label, mlm, nsp in rows:
        print(f"  {label:<{width}}{mlm:>14.3f}{nsp:>19.3f}")
    examples = masked_examples([s for d in read_documents(paths["heldout_corpus"])
                                for s in d], tokenizer,
                               max_tokens=min(40, settings.max_seq_length - 2))
    shown = []
    if examples:
        before = guesses(untrained, tokenizer, examples)
        after = guesses(pretrained, tokenizer, examples)
        print(f"\n  Masked words in held-out sentences: top 3 guesses, and the rank of the "
              f"answer among the {settings.vocab_size} tokens")
        for example, b_guess, a_guess in zip(examples, before, after):
            left = tokenizer.detokenize([example["ids"][:example["position"]]])[0].numpy()
            right = tokenizer.detokenize([example["ids"][example["position"] + 1:]])[0].numpy()
            print(f"\n  {left.decode()} [MASK] {right.decode()}")
            print(f"    answer {example['answer']!r}: untrained {', '.join(b_guess['top'])} "
                  f"(answer #{b_guess['answer_rank']}); pretrained "
                  f"{', '.join(a_guess['top'])} (answer #{a_guess['answer_rank']})")
            shown.append({"sentence": example["sentence"], "answer": example["answer"],
                          "untrained": b_guess, "pretrained": a_guess})
    job.report["heldout"] = heldout
    job.report["masked_word_guesses"] = shown
    return tokenizer


def finetune(job: DemoJob):
    """6. The derived task fine-tuned from the pretrained and from the random encoder
    with the same budget (or their finished runs reused): report["finetune"]. Returns
    the task."""
    from keras_bert.core.run_files import METRICS
    from keras_bert.tasks.finetuning import FinetuneOptions, Finetuning
    from keras_bert.tasks.glue.classification import TextClassificationTask

    settings, paths, c = job.settings, job.paths, job.report["corpus"]
    # The generic `classification` task, its classes in --sources order.
    task = TextClassificationTask(settings.sources, pair=False)
    job.stages.start(6, "finetune", "Fine-tuning \"which library is this docstring sentence "
                     "from?\" from the pretrained and from a random encoder (same budget)")
    finetune_options = FinetuneOptions(
        max_seq_length=settings.max_seq_length, train_batch_size=32,
        learning_rate=settings.finetune_learning_rate,
        num_train_epochs=settings.finetune_epochs, seed=settings.seed)
    finetuned = {}
    for init, checkpoint, target in (
            ("pretrained", paths["pretrain_run"], paths["finetune_pretrained"]),
            ("random_init", paths["random_init"], paths["finetune_random"])):
        metrics_path = os.path.join(target, METRICS)
        if os.path.exists(metrics_path):
            say(f"  reusing {target}")
            with open(metrics_path, encoding="utf-8") as f:
                finetuned[init] = json.load(f)
            continue
        say(f"  from the {init.replace('_', ' ')} encoder ({checkpoint}):")
        finetuning = Finetuning(task, paths["task_data"], target, checkpoint=checkpoint,
                                options=finetune_options, overwrite=True,
                                progress=job.progress)
        steps = finetuning.steps_per_epoch()
        callback = json_progress_callback(
            f"finetune {init}", round(steps * settings.finetune_epochs), every=steps)
        finetuned[init] = finetuning.run(callbacks=[callback] if callback else [])
        emit("progress", stage="finetune", init=init,
             accuracy=float(finetuned[init]["accuracy"]))
    task_examples_count = {"train": c["task_train_examples"], "dev": c["task_dev_examples"]}
    majority = round(1 / len(settings.sources), 4)  # the classes are balanced
    job.report["finetune"] = {
        "task": "which library a docstring sentence comes from",
        "labels": list(settings.sources), "train_examples": task_examples_count["train"],
        "dev_examples": task_examples_count["dev"],
        "majority_class_accuracy": majority,
        "pretrained_accuracy": round(float(finetuned["pretrained"]["accuracy"]), 4),
        "random_init_accuracy": round(float(finetuned["random_init"]["accuracy"]), 4),
        "learning_rate": settings.finetune_learning_rate,
        "epochs": settings.finetune_epochs, "seed": settings.seed}
    f = job.report["finetune"]
    print(f"  {task_examples_count['train']} training and {task_examples_count['dev']} "
          f"held-out sentences, {len(settings.sources)} balanced classes")
    print(f"  held-out accuracy: majority class {majority:.3f}, random init "
          f"{f['random_init_accuracy']:.3f}, pretrained {f['pretrained_accuracy']:.3f}")
    return task


def serve(version_dir: str, sentences: list[str]) -> list[dict]:
    """Reloads an exported SavedModel (TensorFlow alone) and classifies `sentences`
    through its `serve_text` signature: label and probability of each."""
    import tensorflow as tf

    loaded = tf.saved_model.load(version_dir)
    outputs = loaded.signatures["serve_text"](text=tf.constant(sentences))
    labels = [v.decode() for v in outputs["label"].numpy()]
    probabilities = outputs["probabilities"].numpy()
    return [{"sentence": s, "label": label, "probability": round(float(p.max()), 4)}
            for s, label, p in zip(sentences, labels, probabilities)]


def export_and_serve(job: DemoJob, task):
    """7. The fine-tuned classifier exported, reloaded and asked about two held-out
    sentences through serve_text: report["export"] and report["serve_text"]. Returns
    the SavedModel's directory and the two examples."""
    paths = job.paths
    job.stages.start(7, "export", "Export the fine-tuned classifier as a SavedModel, reload it, "
                     "classify through serve_text")
    from keras_bert.export import export_saved_model, serving_api_available
    from keras_bert.tasks.export_sources import load_export_source

    # As `keras-bert export --checkpoint RUN` does it; the warmup file is an extra.
    warmup = serving_api_available()
    version_dir, card = export_saved_model(
        load_export_source(paths["finetune_pretrained"]), job.export_dir, EXPORT_NAME,
        warmup=warmup)
    version_dir = os.path.abspath(version_dir)
    say(f"  -> {version_dir}")
    dev = task.read_examples(os.path.join(paths["task_data"], "dev.tsv"))
    # Two short held-out sentences from different libraries (short: readable heat maps).
    short = [e for e in dev if len(e.text_a.split()) <= 14] or dev
    picked = [short[0]] + [e for e in short if e.label != short[0].label][:1]
    served = serve(version_dir, [e.text_a for e in picked])
    for example, result in zip(picked, served):
        result["truth"] = example.label
        print(f"  serve_text({example.text_a!r})\n    -> {result['label']} "
              f"(p={result['probability']:.2f}; it is from {example.label})")
    job.report["export"] = {"path": version_dir, "version": card.get("version"),
                            "signatures": sorted(card.get("signatures", {})), "warmup": warmup}
    job.report["serve_text"] = served
    return version_dir, picked


def draw_pictures(job: DemoJob, tokenizer, sentence: str) -> None:
    """8. The attention of `sentence` in the pretrained encoder and the training curves of
    the three runs: report["pictures"] (the PNG files)."""
    settings, paths = job.settings, job.paths
    job.stages.start(8, "pictures", "Pictures: attention of one sentence, training curves")
    pictures = {}
    try:
        from keras_bert.checkpoints import load_encoder
        from keras_bert.plotting import (
            attention_maps,
            read_training_curves,
            write_attention_plots,
            write_training_plots,
        )

        maps = attention_maps(load_encoder(paths["pretrain_run"]), tokenizer, sentence,
                              max_seq_length=settings.max_seq_length)
        pictures["attention"] = write_attention_plots(
            maps, paths["attention"], {"model": paths["pretrain_run"], "text": sentence})
        for name, run_dir in (("pretrain", paths["pretrain_run"]),
                              ("finetune_pretrained", paths["finetune_pretrained"]),
                              ("finetune_random_init", paths["finetune_random"])):
            pictures[name] = write_training_plots(read_training_curves(run_dir),
                                                  os.path.join(paths["plots"], name))
        say(f"  attention of {sentence!r}: {maps.num_layers} layers x {maps.num_heads} heads")
        for files in pictures.values():
            for path in files:
                if path.endswith(".png"):
                    say(f"  -> {path}")
    except ImportError as e:  # matplotlib is an optional extra
        print(f"  (no pictures: {e})")
    job.report["pictures"] = {k: [p for p in v if p.endswith(".png")]
                              for k, v in pictures.items()}
