"""Pretraining data on Apache Beam (issue 11): the DirectRunner, in this process and with
worker processes, writes the shards the local path writes for the same seed, and
`keras_bert.data`'s reader reads them; a shard depends only on the text, not on how the
input is split into files. Skips when apache-beam (the `beam` extra) is not installed."""

import collections
import glob
import json
import os
import subprocess
import sys

import numpy as np
import pytest
from conftest import MAX_PRED, MAX_SEQ, make_corpus, read_records, shard_bytes

from keras_bert.data import PretrainingDataOptions, create_pretraining_data, pretraining_dataset
from keras_bert.data import documents as documents_lib

OPTIONS = PretrainingDataOptions(dupe_factor=2, shard_size_mb=0.02, do_whole_word_mask=True,
                                 random_seed=11)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """Four files of different sizes (one gzip, one empty), about 5 shards in all, and a
    document longer than a shard (split in pieces that skip a chunk number)."""
    import gzip

    directory = tmp_path_factory.mktemp("corpus")
    texts = [make_corpus(n, seed=i) for i, n in enumerate((12, 25, 8))]
    (directory / "a.txt").write_text(texts[0], encoding="utf-8")
    long_document = "\n".join(f"Sentence {i} of the long one is in it." for i in range(900))
    (directory / "b.txt").write_text(texts[1] + "\n" + long_document + "\n", encoding="utf-8")
    (directory / "c.txt").write_text("", encoding="utf-8")
    with gzip.open(directory / "d.txt", "wt", encoding="utf-8") as f:
        f.write(texts[2])
    return str(directory / "*.txt")


@pytest.fixture(scope="module")
def local_run(corpus, vocab_file, tmp_path_factory):
    out = tmp_path_factory.mktemp("local")
    summary = create_pretraining_data(corpus, str(out), vocab_file, OPTIONS, num_workers=2,
                                      progress=False)
    return summary, out


def instance_set(directory) -> collections.Counter:
    """The examples of a directory's shards as a multiset of their feature bytes."""
    records = read_records(glob.glob(os.path.join(directory, "*.tfrecord")))
    rows = zip(*(records[name] for name in sorted(records)))
    return collections.Counter(b"|".join(np.ascontiguousarray(v).tobytes() for v in row)
                               for row in rows)


def test_offsets_do_not_depend_on_how_the_text_is_split_into_files():
    # The Beam pipeline reads each file on its own and shifts its documents' offsets by
    # the characters of the files before it; that must give the local path's documents.
    lines = ["a b.", "c d.", None, "e f.", None, "g h.", "i j.", "k l.", "m n.", None, "o p."]
    whole = list(documents_lib.documents_with_offsets(lines, 8, collections.Counter()))
    shifted, start = [], 0
    for part in (lines[:3], lines[3:5], lines[5:]):
        for offset, document in documents_lib.documents_with_offsets(
                part, 8, collections.Counter()):
            shifted.append((start + offset, document))
        start = shifted[-1][0] + documents_lib.document_chars(shifted[-1][1])
    assert shifted == whole
    # The 4-line document is split before its third line (its first two fill a chunk),
    # and each piece goes to the chunk its first character falls in: chunk 2 holds none.
    assert [(offset // 8, document) for offset, document in whole] == [
        (0, ["a b.", "c d."]), (1, ["e f."]), (1, ["g h.", "i j."]), (3, ["k l.", "m n."]),
        (4, ["o p."])]
    assert list(documents_lib.chunk_documents(lines, 8, collections.Counter())) == [
        [["a b.", "c d."]], [["e f."], ["g h.", "i j."]], [["k l.", "m n."]], [["o p."]]]


def test_local_shards_do_not_depend_on_how_the_corpus_is_split_into_files(
        corpus, vocab_file, local_run, tmp_path):
    # One file holding the same text (the documents in the same order) gives the same
    # shards: a shard is a function of the text, not of the file boundaries.
    import gzip

    text = ""
    for path in sorted(glob.glob(corpus)):
        with open(path, "rb") as f:
            data = f.read()
        if data[:2] == b"\x1f\x8b":
            data = gzip.decompress(data)
        text += data.decode("utf-8").rstrip("\n") + "\n\n" if data else ""
    (tmp_path / "one.txt").write_text(text, encoding="utf-8")
    summary = create_pretraining_data(str(tmp_path / "one.txt"), str(tmp_path / "out"),
                                      vocab_file, OPTIONS, num_workers=1, progress=False)
    assert shard_bytes(tmp_path / "out") == shard_bytes(local_run[1])
    assert summary["shards"] == local_run[0]["shards"]


@pytest.mark.parametrize("beam_options", [
    ["--runner=DirectRunner", "--direct_running_mode=in_memory", "--direct_num_workers=1"],
    pytest.param(["--runner=DirectRunner", "--direct_running_mode=multi_processing",
                  "--direct_num_workers=2"], marks=pytest.mark.slow),  # long (CI time)
], ids=["in_memory", "multi_processing_2_workers"])
def test_the_direct_runner_writes_the_local_paths_instances(corpus, vocab_file, local_run,
                                                             tmp_path, beam_options):
    pytest.importorskip("apache_beam")
    from keras_bert.data import beam as beam_lib
    local_summary, local_out = local_run
    assert len(local_summary["shards"]) >= 4 and local_summary["input_stats"]["split_documents"]
    summary = beam_lib.create_pretraining_data_beam(corpus, str(tmp_path), vocab_file, OPTIONS,
                                                    beam_options=beam_options)
    # The same set of instances (and in fact the same shards, byte for byte), and the
    # same sidecar: settings, inputs, per-shard and input counts.
    assert instance_set(tmp_path) == instance_set(local_out)
    assert shard_bytes(tmp_path) == shard_bytes(local_out)
    assert summary == local_summary
    assert json.loads((tmp_path / "pretraining_data.json").read_text())["complete"]
    # The library's reader reads them as it reads the local path's shards.
    dataset = pretraining_dataset(str(tmp_path / "*.tfrecord"), 16, max_seq_length=MAX_SEQ,
                                  max_predictions_per_seq=MAX_PRED, is_training=False,
                                  drop_remainder=False)
    read = sum(int(batch["input_word_ids"].shape[0]) for batch in dataset)
    assert read == summary["totals"]["instances"] > 100


def test_a_beam_rerun_keeps_the_shards_and_refuses_other_settings(corpus, vocab_file,
                                                                  local_run, tmp_path):
    pytest.importorskip("apache_beam")
    from keras_bert.core.errors import OutputError
    from keras_bert.data import beam as beam_lib

    out = tmp_path / "out"
    first = beam_lib.create_pretraining_data_beam(corpus, str(out), vocab_file, OPTIONS)
    times = {f: os.stat(f).st_mtime_ns for f in glob.glob(str(out / "*.tfrecord"))}
    # A rerun of the same settings resumes: the completed shards stay as they are.
    assert beam_lib.create_pretraining_data_beam(corpus, str(out), vocab_file, OPTIONS) == first
    assert {f: os.stat(f).st_mtime_ns for f in glob.glob(str(out / "*.tfrecord"))} == times
    # And the local path resumes a Beam run (it is the same run).
    assert create_pretraining_data(corpus, str(out), vocab_file, OPTIONS, num_workers=1,
                                   progress=False) == first
    other = PretrainingDataOptions(**{**OPTIONS.__dict__, "dupe_factor": 3})
    with pytest.raises(OutputError, match="dupe_factor: 2 → 3"):
        beam_lib.create_pretraining_data_beam(corpus, str(out), vocab_file, other)


def test_the_command_runs_beam_and_refuses_local_only_flags(corpus, vocab_file, local_run,
                                                            tmp_path, capsys):
    pytest.importorskip("apache_beam")
    from keras_bert import cli

    common = ["create-pretraining-data", f"--input_file={corpus}", f"--vocab_file={vocab_file}",
              "--dupe_factor=2", "--shard_size_mb=0.02", "--do_whole_word_mask",
              "--random_seed=11", "--runner", "beam"]
    code = cli.main([*common, f"--output_dir={tmp_path / 'out'}",
                     "--beam_options=--runner=DirectRunner --direct_num_workers=1"])
    out = capsys.readouterr().out
    assert code == 0 and "Masked: " in out and "Next sentence random: " in out
    assert shard_bytes(tmp_path / "out") == shard_bytes(local_run[1])
    for extra, field in ((["--num_workers=2"], "--num_workers"),
                         (["--num_shards=2", "--shard_index=1"], "--shard_index, --num_shards"),
                         (["--beam_options=--runner='Direct"], "--beam_options"),
                         (["--beam_options=--runer=DataflowRunner"], "did you mean --runner?")):
        code = cli.main([*common, f"--output_dir={tmp_path / 'refused'}", *extra])
        assert code == 2 and field in capsys.readouterr().err
    code = cli.main([*common[:-2], f"--output_dir={tmp_path / 'refused'}",
                     "--beam_options=--runner=DirectRunner"])
    assert code == 2 and "--beam_options is for --runner beam" in capsys.readouterr().err
    assert not (tmp_path / "refused").exists()


def test_without_apache_beam_the_command_names_the_extra(corpus, vocab_file, tmp_path):
    # A process where apache_beam cannot be imported: a usage error (exit 2) naming the
    # extra, before any work; and `import keras_bert.data` never imports Beam.
    script = (
        "import sys; sys.modules['apache_beam'] = None\n"
        "import keras_bert.data, keras_bert.pipelines.create_pretraining_data\n"
        "assert 'keras_bert.data.beam' not in sys.modules\n"
        "from keras_bert import cli\n"
        f"sys.exit(cli.main(['create-pretraining-data', '--input_file={corpus}', "
        f"'--output_dir={tmp_path / 'out'}', '--vocab_file={vocab_file}', '--runner=beam']))\n")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}, timeout=300)
    assert result.returncode == 2, result.stderr
    assert 'pip install -e ".[beam]"' in result.stderr
    assert not (tmp_path / "out").exists()


def test_beam_reads_and_writes_a_remote_filesystem(corpus, vocab_file, local_run):
    # ram:// is one of tf.io.gfile's non-local filesystems, as gs:// is; the in-process
    # DirectRunner shares it with this process.
    pytest.importorskip("apache_beam")
    import uuid

    import tensorflow as tf

    from keras_bert.data import beam as beam_lib

    root = f"ram://beam-{uuid.uuid4().hex[:8]}"
    for path in glob.glob(corpus):
        tf.io.gfile.copy(path, f"{root}/in/{os.path.basename(path)}", overwrite=True)
    tf.io.gfile.copy(vocab_file, f"{root}/vocab.txt")
    summary = beam_lib.create_pretraining_data_beam(f"{root}/in/*.txt", f"{root}/out",
                                                    f"{root}/vocab.txt", OPTIONS)
    names = sorted(n for n in tf.io.gfile.listdir(f"{root}/out") if n.endswith(".tfrecord"))
    remote = {}
    for name in names:
        with tf.io.gfile.GFile(f"{root}/out/{name}", "rb") as f:
            remote[name] = f.read()
    assert remote == shard_bytes(local_run[1])
    assert summary["shards"] == local_run[0]["shards"]
    assert summary["totals"] == local_run[0]["totals"]
