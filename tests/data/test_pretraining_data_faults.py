"""Pretraining data on bad input and interruptions (issue 13): worker processes die with
their parent, stale temporaries are cleared, next sentence prediction never labels a
segment of the same document "random next", and every bad argument, input or output
directory is a typed error (keras_bert.core.errors) before any work, naming what was wrong.

The corpus and vocab come from conftest.py's generators.
"""

import collections
import glob
import gzip
import json
import logging
import os
import random
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf
from conftest import MAX_PRED, MAX_SEQ, REPO, make_corpus, read_records, shard_bytes

from keras_bert.core.errors import (
    ArgumentError,
    DataError,
    InputNotFoundError,
    OutputError,
    UserInputError,
)
from keras_bert.core.fileio import is_temporary
from keras_bert.data import (
    PretrainingDataOptions,
    create_instances,
    create_instances_from_document,
    create_pretraining_data,
    pretraining_dataset,
)

CLS, SEP = 2, 3


def _run(inputs, output_dir, vocab_file, **options):
    kwargs = {k: options.pop(k) for k in ("num_workers", "shard_index", "num_shards")
              if k in options}
    return create_pretraining_data(inputs, str(output_dir), vocab_file,
                                   PretrainingDataOptions(**{"dupe_factor": 1, **options}),
                                   **{"num_workers": 1, **kwargs}, progress=False)


# --- interruptions ---------------------------------------------------------------------


def _processes() -> dict[int, tuple[int, str, str]]:
    """pid -> (parent pid, state, command line) of every process /proc shows."""
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="utf-8", errors="replace") as f:
                stat = f.read()
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:  # ended meanwhile
            continue
        state, ppid = stat.rpartition(")")[2].split()[:2]
        found[int(entry)] = (int(ppid), state, cmdline)
    return found


def _alive(pid: int, processes) -> bool:
    return pid in processes and processes[pid][1] not in ("Z", "X")  # zombies are dead


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_killing_the_command_kills_its_workers_and_a_rerun_completes(vocab_file, tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(make_corpus(300, seed=0), encoding="utf-8")
    killed = tmp_path / f"killed-{uuid.uuid4().hex[:8]}"  # names this run's processes
    options = {"dupe_factor": 2, "shard_size_mb": 0.01}
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), *sys.path])}
    process = subprocess.Popen(
        [sys.executable, "-m", "keras_bert", "create-pretraining-data",
         f"--input_file={corpus}", f"--output_dir={killed}", f"--vocab_file={vocab_file}",
         "--dupe_factor=2", "--shard_size_mb=0.01", "--num_workers=3", "--progress=false"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True)  # its own process group, for the clean-up below
    try:
        deadline = time.monotonic() + 180
        workers: list[int] = []
        while time.monotonic() < deadline:
            assert process.poll() is None, "the run ended before it could be killed"
            workers = [pid for pid, (ppid, _, _) in _processes().items()
                       if ppid == process.pid]
            if len(workers) >= 2 and glob.glob(str(killed / "*.tfrecord")):
                break
            time.sleep(0.02)
        assert len(workers) >= 2, "no worker processes appeared"
        process.send_signal(signal.SIGKILL)  # the parent only, not its group
        process.wait()
        deadline = time.monotonic() + 5
        while True:
            processes = _processes()
            survivors = [pid for pid in workers if _alive(pid, processes)]
            survivors += [pid for pid, (_, _, cmdline) in processes.items()
                          if str(killed) in cmdline and _alive(pid, processes)
                          and pid not in survivors]
            if not survivors or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert not survivors, {pid: processes[pid] for pid in survivors}
    finally:
        try:
            os.killpg(process.pid, signal.SIGKILL)  # only if this test failed
        except ProcessLookupError:
            pass
        process.wait()

    # What a kill leaves: complete shards, the sidecar, maybe a hidden temporary.
    stale = killed / ".part-00000.tfrecord.tmp-deadbeef"
    stale.write_bytes(b"half a shard")
    assert json.loads((killed / "pretraining_data.json").read_text())["complete"] is False
    resumed = _run(str(corpus), killed, vocab_file, **options)
    complete = _run(str(corpus), tmp_path / "complete", vocab_file, **options)
    assert not [name for name in os.listdir(killed) if is_temporary(name)]
    assert shard_bytes(killed) == shard_bytes(tmp_path / "complete")
    assert len(shard_bytes(killed)) > 10 and resumed["totals"] == complete["totals"]


def test_a_worker_whose_parent_is_gone_ends_at_once():
    # The check right after arming the death signal: a parent that died before it.
    from multiprocessing import get_context

    from keras_bert.data.workers import _die_with_parent

    child = get_context("fork").Process(target=_die_with_parent, args=(os.getpid() + 10**6,))
    child.start()
    child.join(10)
    assert child.exitcode == 1
    child = get_context("fork").Process(target=_die_with_parent, args=(os.getpid(),))
    child.start()
    child.join(10)
    assert child.exitcode == 0


def test_stale_temporaries_of_other_slices_are_left_alone(vocab_file, small_corpus, tmp_path):
    # Machines writing slices into one directory at once must not delete each other's
    # files in progress: a run clears only its own shards' and sidecar's temporaries.
    names = {".part-00000.tfrecord.tmp-11111111": False,  # slice 0: stale, removed
             ".part-00002.tfrecord.tmp": False,  # the old naming
             ".pretraining_data-00000-of-00002.json.tmp-22222222": False,
             ".part-00001.tfrecord.tmp-33333333": True,  # slice 1: kept
             ".pretraining_data-00001-of-00002.json.tmp-44444444": True,
             ".vocab.txt.tmp-55555555": True}  # not the run's
    for name in names:
        (tmp_path / name).write_bytes(b"x")
    _run(small_corpus, tmp_path, vocab_file, shard_size_mb=0.03, shard_index=0, num_shards=2)
    assert {name for name in names if (tmp_path / name).exists()} == {
        name for name, kept in names.items() if kept}


# --- next sentence prediction with too few documents -------------------------------------


def test_random_next_never_comes_from_the_same_document():
    # Two documents: the original's 10 draws all hit A's own document once in 1024
    # random-next pairs, and then it labels a segment of that document random next.
    documents = [[[100 * d + s] * 3 for s in range(12)] for d in (1, 2)]
    rng = random.Random(0)
    random_next = 0
    for _ in range(3000):
        for index in (0, 1):
            for inst in create_instances_from_document(
                    documents, index, max_seq_length=12, short_seq_prob=0.0, cls_id=CLS,
                    sep_id=SEP, rng=rng):
                a = inst.tokens[1:inst.segment_a_length - 1]
                b = inst.tokens[inst.segment_a_length:-1]
                same = {t // 100 for t in a} == {t // 100 for t in b}
                assert same != inst.is_random_next
                random_next += inst.is_random_next
    assert random_next > 5000  # about 2 of the 1024-in-a-row cases happen here


def test_a_single_document_pool_makes_actual_next_pairs_or_drops_the_chunk():
    document = [[10 * s + 10, 10 * s + 11] for s in range(9)]
    stats = collections.Counter()
    instances = create_instances([document], max_seq_length=9, short_seq_prob=0.0,
                                 dupe_factor=5, next_sentence_prediction=True, cls_id=CLS,
                                 sep_id=SEP, rng=random.Random(1), stats=stats)
    assert instances and not any(inst.is_random_next for inst in instances)
    for inst in instances:  # B follows A in the document
        a = inst.tokens[1:inst.segment_a_length - 1]
        b = inst.tokens[inst.segment_a_length:-1]
        assert a[-1] < b[0]
    assert stats["nsp_actual_next_fallbacks"] > 0
    # The original's output for one sentence: A and B both that sentence, "random next".
    stats = collections.Counter()
    assert create_instances_from_document([[[5, 6, 7]]], 0, max_seq_length=16,
                                          short_seq_prob=0.0, cls_id=CLS, sep_id=SEP,
                                          rng=random.Random(0), stats=stats) == []
    assert stats == {"nsp_dropped_chunks": 1}


def test_a_one_document_corpus_has_no_random_next_labels_and_warns(vocab_file, tmp_path,
                                                                   caplog):
    text = make_corpus(30, seed=3).replace("\n\n", "\n")  # one document of ~600 sentences
    (tmp_path / "one.txt").write_text(text, encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="keras_bert"):
        summary = _run(str(tmp_path / "one.txt"), tmp_path / "out", vocab_file)
    totals = summary["totals"]
    assert totals["documents"] == 1 and totals["nsp_single_document_shards"] == 1
    assert totals["instances"] > 50 and totals["random_next_instances"] == 0
    assert totals["nsp_actual_next_fallbacks"] > 0.3 * totals["instances"]
    data = read_records(glob.glob(str(tmp_path / "out" / "*.tfrecord")))
    assert not data["next_sentence_labels"].any()
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING
                and r.name.startswith("keras_bert")]
    assert len(warnings) == 1 and "Too few documents" in warnings[0].getMessage()
    assert "blank line" in warnings[0].getMessage()


def test_a_corpus_without_blank_lines_warns_per_shard_pool(vocab_file, tmp_path, caplog):
    # Without blank lines the file is one document, split at every shard boundary: each
    # shard's pool holds one piece, so no pair can have a random next segment.
    text = make_corpus(40, seed=1).replace("\n\n", "\n")
    (tmp_path / "no-blank-lines.txt").write_text(text, encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="keras_bert"):
        summary = _run(str(tmp_path / "no-blank-lines.txt"), tmp_path / "out", vocab_file,
                       shard_size_mb=0.02)
    totals = summary["totals"]
    assert len(summary["shards"]) >= 3 and summary["input_stats"]["split_documents"] >= 2
    assert totals["nsp_single_document_shards"] == len(summary["shards"])
    assert totals["random_next_instances"] == 0 and totals["instances"] > 50
    assert any("Too few documents" in r.getMessage() for r in caplog.records)


def test_an_ordinary_corpus_keeps_its_random_next_share_without_warnings(vocab_file, tmp_path,
                                                                        caplog):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(make_corpus(120, seed=4), encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="keras_bert"):
        summary = _run(str(corpus), tmp_path / "out", vocab_file, dupe_factor=3)
    totals = summary["totals"]
    assert not [key for key in totals if key.startswith("nsp_")]
    assert 0.5 < totals["random_next_instances"] / totals["instances"] < 0.62
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


# --- no instances ------------------------------------------------------------------------


def test_no_instances_is_an_error_that_leaves_nothing_behind(vocab_file, tmp_path):
    (tmp_path / "empty.txt").write_text("\n\n  \n", encoding="utf-8")
    (tmp_path / "binary.txt").write_bytes(bytes(range(256)))
    out = tmp_path / "out"
    with pytest.raises(DataError, match=r"No pretraining instances .*2 files.*binary_files=1"
                                        r".*holds no text"):
        _run(f"{tmp_path}/empty.txt,{tmp_path}/binary.txt", out, vocab_file)
    assert not out.exists()
    out.mkdir()  # a directory that was there stays, empty
    with pytest.raises(DataError):
        _run(str(tmp_path / "empty.txt"), out, vocab_file)
    assert os.listdir(out) == []


def test_a_one_sentence_corpus_cannot_make_nsp_pairs(vocab_file, tmp_path):
    # The original writes instances whose A and B are this same sentence, "random next".
    (tmp_path / "one.txt").write_text("The only sentence of the corpus.\n", encoding="utf-8")
    with pytest.raises(DataError, match="single document.*next_sentence_prediction=False"):
        _run(str(tmp_path / "one.txt"), tmp_path / "nsp", vocab_file)
    assert not (tmp_path / "nsp").exists()
    summary = _run(str(tmp_path / "one.txt"), tmp_path / "packed", vocab_file,
                   next_sentence_prediction=False)
    assert summary["totals"]["instances"] == 1


# --- arguments ----------------------------------------------------------------------------


@pytest.mark.parametrize("field, value", [
    ("max_seq_length", 4), ("max_seq_length", "128"), ("max_predictions_per_seq", 0),
    ("masked_lm_prob", 0.0), ("masked_lm_prob", 1.5), ("short_seq_prob", -0.1),
    ("dupe_factor", 0), ("dupe_factor", 2.5), ("shard_size_mb", 0),
    ("shard_size_mb", float("nan")), ("do_lower_case", "false"), ("random_seed", None)])
def test_options_out_of_range_name_the_field(field, value):
    with pytest.raises(ArgumentError, match=field) as caught:
        PretrainingDataOptions(**{field: value})
    assert caught.value.field == field and "--" not in str(caught.value)
    assert isinstance(caught.value, ValueError)


@pytest.mark.parametrize("field, arguments", [
    ("num_workers", {"num_workers": 0}), ("num_workers", {"num_workers": -3}),
    ("num_workers", {"num_workers": 1.5}), ("shard_index", {"shard_index": -1}),
    ("shard_index", {"shard_index": 3, "num_shards": 3}), ("num_shards", {"num_shards": 0}),
    ("options", {"options": {"dupe_factor": 1}})])
def test_arguments_out_of_range_fail_before_any_work(vocab_file, small_corpus, tmp_path, field,
                                                     arguments):
    out = tmp_path / "out"
    with pytest.raises(ArgumentError, match=field) as caught:
        create_pretraining_data(small_corpus, str(out), vocab_file, progress=False,
                                **arguments)
    assert caught.value.field == field and "--" not in str(caught.value)
    assert not out.exists()


def test_an_input_pattern_naming_a_directory_says_which_glob_to_use(vocab_file, tmp_path):
    (tmp_path / "corpus").mkdir()
    (tmp_path / "corpus" / "a.txt").write_text("One sentence.\n", encoding="utf-8")
    with pytest.raises(InputNotFoundError, match=r"is a directory.*corpus/\*"):
        _run(str(tmp_path / "corpus"), tmp_path / "out", vocab_file)
    with pytest.raises(InputNotFoundError, match="vocab.txt"):
        _run(str(tmp_path / "corpus" / "a.txt"), tmp_path / "out", str(tmp_path))
    assert not (tmp_path / "out").exists()


# --- output directories --------------------------------------------------------------------


def test_shards_without_their_sidecar_are_refused(vocab_file, small_corpus, tmp_path):
    out = tmp_path / "out"
    _run(small_corpus, out, vocab_file, shard_size_mb=0.03)
    shards = shard_bytes(out)
    (out / "pretraining_data.json").unlink()
    # A new run would write over some shards and leave others: refuse, before any work.
    with pytest.raises(OutputError, match=r"part-00000\.tfrecord.*Remove them") as caught:
        _run(small_corpus, out, vocab_file, shard_size_mb=0.03)
    assert "--" not in str(caught.value)
    assert shard_bytes(out) == shards and not (out / "pretraining_data.json").exists()
    # PretrainingDataError, the old name, still catches it.
    from keras_bert.data import PretrainingDataError
    assert PretrainingDataError is UserInputError
    with pytest.raises(PretrainingDataError):
        _run(small_corpus, out, vocab_file, dupe_factor=2)


def test_slices_refuse_shards_of_a_slice_without_its_sidecar(vocab_file, small_corpus,
                                                             tmp_path):
    for index in (0, 1):
        _run(small_corpus, tmp_path, vocab_file, shard_size_mb=0.03, shard_index=index,
             num_shards=2)
    (tmp_path / "pretraining_data-00000-of-00002.json").unlink()
    with pytest.raises(OutputError, match=r"part-00000\.tfrecord"):
        _run(small_corpus, tmp_path, vocab_file, shard_size_mb=0.03, shard_index=1,
             num_shards=2)


def test_overwrite_replaces_an_earlier_run_once_the_checks_pass(vocab_file, small_corpus,
                                                                tmp_path):
    out = tmp_path / "out"
    _run(small_corpus, out, vocab_file, shard_size_mb=0.03)
    old = shard_bytes(out)
    with pytest.raises(OutputError, match="dupe_factor: 1 → 2.*overwrite=True"):
        _run(small_corpus, out, vocab_file, shard_size_mb=0.03, dupe_factor=2)
    # A failing check (here a missing vocab) removes nothing, even with overwrite.
    with pytest.raises(InputNotFoundError):
        create_pretraining_data(small_corpus, str(out), str(tmp_path / "no-vocab.txt"),
                                PretrainingDataOptions(dupe_factor=2, shard_size_mb=0.03),
                                num_workers=1, progress=False, overwrite=True)
    assert shard_bytes(out) == old
    # Shards without a sidecar and a stale temporary go too; the result is a fresh run's.
    (out / "pretraining_data.json").unlink()
    (out / ".part-00007.tfrecord.tmp-0123abcd").write_bytes(b"half")
    kwargs = dict(shard_size_mb=0.03, dupe_factor=2)
    replaced = create_pretraining_data(small_corpus, str(out), vocab_file,
                                       PretrainingDataOptions(**kwargs), num_workers=1,
                                       progress=False, overwrite=True)
    fresh = _run(small_corpus, tmp_path / "fresh", vocab_file, **kwargs)
    assert shard_bytes(out) == shard_bytes(tmp_path / "fresh") != old
    assert replaced["totals"] == fresh["totals"] and replaced["settings"]["dupe_factor"] == 2
    assert sorted(os.listdir(out)) == sorted(os.listdir(tmp_path / "fresh"))


def test_overwrite_of_a_slice_leaves_the_other_slices_alone(vocab_file, small_corpus,
                                                            tmp_path):
    for index in (0, 1):
        _run(small_corpus, tmp_path, vocab_file, shard_size_mb=0.03, shard_index=index,
             num_shards=2)
    before = shard_bytes(tmp_path)
    create_pretraining_data(small_corpus, str(tmp_path), vocab_file,
                            PretrainingDataOptions(dupe_factor=2, shard_size_mb=0.03),
                            num_workers=1, shard_index=1, num_shards=2, progress=False,
                            overwrite=True)
    after = shard_bytes(tmp_path)
    assert set(after) == set(before)
    for name in before:
        changed = after[name] != before[name]
        assert changed == (int(name[5:10]) % 2 == 1), name


def test_cli_overwrite_flag_and_message(vocab_file, small_corpus, tmp_path, capsys):
    from keras_bert.cli import main

    out = tmp_path / "out"
    args = ["create-pretraining-data", "--input_file", small_corpus, "--output_dir", str(out),
            "--vocab_file", vocab_file, "--num_workers", "1", "--noprogress",
            "--shard_size_mb", "0.03"]
    assert main([*args, "--dupe_factor", "1"]) == 0
    capsys.readouterr()
    assert main([*args, "--dupe_factor", "2"]) == 2
    err = capsys.readouterr().err.strip()
    assert "dupe_factor: 1 → 2" in err and "pass --overwrite" in err and "\n" not in err
    assert main([*args, "--dupe_factor", "2", "--overwrite"]) == 0
    assert json.loads((out / "pretraining_data.json").read_text())["settings"][
        "dupe_factor"] == 2


# --- reading -------------------------------------------------------------------------------


def test_a_corpus_on_a_remote_filesystem_gives_the_same_shards(vocab_file, small_corpus,
                                                                tmp_path):
    # ram:// is one of tf.io.gfile's non-local filesystems, as gs:// is.
    root = f"ram://corpus-{uuid.uuid4().hex[:8]}"
    text = Path(small_corpus).read_bytes()
    half = len(text) // 2
    half = text.index(b"\n\n", half) + 2  # two files: one plain, one gzip
    local = tmp_path / "local"
    local.mkdir()
    (local / "a.txt").write_bytes(text[:half])
    (local / "b.txt.gz").write_bytes(gzip.compress(text[half:]))
    tf.io.gfile.makedirs(root)
    for name in ("a.txt", "b.txt.gz"):
        with tf.io.gfile.GFile(f"{root}/{name}", "wb") as f:
            f.write((local / name).read_bytes())
    with tf.io.gfile.GFile(f"{root}-vocab.txt", "wb") as f:
        f.write(Path(vocab_file).read_bytes())
    remote = _run(f"{root}/*.txt,{root}/*.gz", tmp_path / "from-remote", f"{root}-vocab.txt",
                  shard_size_mb=0.03)
    here = _run(f"{local}/*.txt,{local}/*.gz", tmp_path / "from-local", vocab_file,
                shard_size_mb=0.03)
    assert [record["path"] for record in remote["inputs"]] == [f"{root}/a.txt",
                                                               f"{root}/b.txt.gz"]
    assert remote["totals"] == here["totals"] and remote["vocab"] == here["vocab"]
    assert len(shard_bytes(tmp_path / "from-remote")) > 1
    assert shard_bytes(tmp_path / "from-remote") == shard_bytes(tmp_path / "from-local")


def test_a_truncated_shard_is_named_before_training(vocab_file, small_corpus, tmp_path):
    _run(small_corpus, tmp_path, vocab_file, shard_size_mb=0.03)
    shard = tmp_path / "part-00001.tfrecord"
    shard.write_bytes(shard.read_bytes()[:-100])  # an interrupted copy

    def dataset():
        return pretraining_dataset(str(tmp_path / "*.tfrecord"), 8, max_seq_length=MAX_SEQ,
                                   max_predictions_per_seq=MAX_PRED, is_training=False)

    with pytest.raises(DataError, match=r"part-00001\.tfrecord: has \d+ bytes, but "
                                        r"pretraining_data\.json beside it records"):
        dataset()
    # Without a sidecar it cannot be checked up front; TensorFlow's error names no file.
    (tmp_path / "pretraining_data.json").unlink()
    with pytest.raises(tf.errors.DataLossError):
        for _ in dataset():
            pass
    assert np.all(read_records([str(tmp_path / "part-00000.tfrecord")])["input_mask"][:, 0])
