"""BERT pretraining data on Apache Beam: the shards `create_pretraining_data` writes, made
by a Beam pipeline that runs here on the DirectRunner and at scale on Dataflow, Flink or
Spark (`keras-bert create-pretraining-data --runner beam --beam_options "..."`).

Apache Beam is an optional extra (`pip install -e ".[beam]"`); `import keras_bert` never
imports this module.

The pipeline writes the same `part-NNNNN.tfrecord` shards, byte for byte, and the same
JSON sidecar as the local path for the same input, vocab and settings, whichever runner
and however many workers: a shard is a function of the text alone
(`keras_bert.data.pretraining`'s module docstring). Each document belongs to chunk
`offset // chunk_chars`, `offset` counting the characters of the whole input before it;
the shards are numbered in the order of their non-empty chunks; each shard's instances,
next-sentence pairs and masks are drawn from a seed derived from `random_seed` and the
shard number, by the local path's own code (`ShardWriter`, `build_shard`). The steps:

1. The launcher makes the local path's checks (inputs, vocab, output directory, an
   earlier run's sidecar) and writes the starting sidecar, before any work.
2. Each input file is read by one worker (`documents.read_file_lines`, local or any
   `tf.io.gfile` filesystem: gs://, ...), giving its documents with their offsets in the
   file, its character count and its input counts (bad lines, files skipped). A corpus
   should therefore come as many files (Wikipedia dumps do), not one large one.
3. Every document's offset in the whole input is its offset in its file plus the
   characters of the files before it (a side input of per-file counts); documents are
   grouped by chunk (a `GroupByKey`) and sorted by offset within it.
4. Each chunk becomes its shard (`ShardWriter`: tokenize, make the instances, mask,
   serialize), written all or nothing through `tf.io.gfile` (a retried bundle rewrites
   the same bytes). Shards an earlier run of the same settings completed are kept.
5. The shards' counts and the input counts are summed into the sidecar (instances,
   tokens, masked-LM predictions, random-next share, ...), which the launcher completes.

Workers need keras_bert and TensorFlow installed (on Dataflow: `--setup_file` pointing at
this repository's setup.py, or a custom container, `--sdk_container_image`); the vocab
travels inside the pipeline, so workers need no access to the launcher's files.

Example:

>>> summary = create_pretraining_data_beam(  # doctest: +SKIP
...     "gs://bucket/wiki/*.txt", "gs://bucket/pretraining", "uncased_L-12_H-768_A-12/vocab.txt",
...     PretrainingDataOptions(dupe_factor=5),
...     beam_options=["--runner=DataflowRunner", "--project=my-project",
...                   "--region=us-central1", "--temp_location=gs://bucket/tmp"])
"""

from __future__ import annotations

import collections
import difflib
import os

try:
    import apache_beam as beam
    from apache_beam.options.pipeline_options import PipelineOptions
except ImportError as e:  # the optional extra
    raise ImportError(
        f"The Beam pipeline needs Apache Beam, which is not installed ({e}): "
        "pip install -e \".[beam]\" (or pip install \"apache-beam>=2.77,<3\").") from e

from keras_bert.core import fileio
from keras_bert.core.errors import ArgumentError
from keras_bert.data import documents as documents_lib
from keras_bert.data.options import PretrainingDataOptions
from keras_bert.data.pretraining import chunk_chars, finish_run, start_run
from keras_bert.data.run_state import Sidecar, sidecar_file_name
from keras_bert.data.shards import ShardWriter, shard_file_name

_DEFAULT_OPTIONS = PretrainingDataOptions()


class _ReadFile(beam.DoFn):
    """(file index, path) -> (file index, offset in the file, document), and on tagged
    outputs the file's character count and its input counts."""

    CHARS, STATS = "chars", "stats"

    def __init__(self, chunk_chars: int):
        self.chunk_chars = chunk_chars

    def process(self, element):
        index, path = element
        stats: collections.Counter = collections.Counter()
        chars = 0
        for offset, document in documents_lib.documents_with_offsets(
                documents_lib.read_file_lines(path, stats), self.chunk_chars, stats):
            chars = offset + documents_lib.document_chars(document)
            yield index, offset, document
        yield beam.pvalue.TaggedOutput(self.CHARS, (index, chars))
        yield beam.pvalue.TaggedOutput(self.STATS, dict(stats))


def _file_starts(chars_per_file: list[tuple[int, int]]) -> dict[int, int]:
    """file index -> characters of the files before it."""
    starts, total = {}, 0
    for index, chars in sorted(chars_per_file):
        starts[index] = total
        total += chars
    return starts


def _shard_ids(chunk_ids: list[int]) -> dict[int, int]:
    """chunk -> shard number: the shards are the non-empty chunks, numbered in order."""
    return {chunk_id: shard_id for shard_id, chunk_id in enumerate(sorted(chunk_ids))}


class _BuildShard(beam.DoFn):
    """(chunk, [(offset, document)]) -> (shard name, counts), the shard written into
    `output_dir` by the local path's `ShardWriter`."""

    def __init__(self, vocab: list[str], options: PretrainingDataOptions, output_dir: str,
                 done: dict[str, dict]):
        self.vocab = vocab
        self.options = options
        self.output_dir = output_dir
        self.done = done
        self.writer = None

    def setup(self):
        import tensorflow as tf

        # One shard per core at a time: TensorFlow's own thread pools would only spin
        # against the runner's other workers (as `keras-bert create-pretraining-data`).
        try:
            tf.config.threading.set_intra_op_parallelism_threads(1)
            tf.config.threading.set_inter_op_parallelism_threads(1)
        except RuntimeError:  # TensorFlow already started in this process
            pass
        self.writer = ShardWriter(self.vocab, self.options)

    def process(self, element, shard_ids):
        chunk_id, located = element
        name = shard_file_name(shard_ids[chunk_id])
        path = os.path.join(self.output_dir, name)
        if name in self.done and fileio.exists(path):
            yield name, self.done[name]
            return
        text_documents = [document for _, document in sorted(located, key=lambda x: x[0])]
        stats = self.writer(shard_ids[chunk_id], text_documents, path)
        # Lets the reader name a shard truncated later (`tfrecords.check_shard_sizes`).
        yield name, {**stats, "file_bytes": fileio.file_size(path)}


def _sum_counts(counts) -> dict:
    total: collections.Counter = collections.Counter()
    for count in counts:
        total.update(count)
    return dict(sorted(total.items()))


def _write_sidecar(_, path: str, identity: dict, shards: dict, input_stats: dict) -> None:
    sidecar = Sidecar(path, identity)
    sidecar.shards = dict(shards)
    sidecar.write(input_stats, complete=False, force=True)


def build_pipeline(pipeline: beam.Pipeline, files: list[str], vocab: list[str],
                   options: PretrainingDataOptions, output_dir: str, identity: dict,
                   done: dict[str, dict] | None = None) -> None:
    """Adds the steps that write the shards of `files` and their sidecar (not yet
    marked complete) into `output_dir` to `pipeline`.

    Args:
        pipeline: a `beam.Pipeline`.
        files: the input files, in the order their text comes in.
        vocab: the WordPiece vocab's tokens (they travel to the workers).
        options: `PretrainingDataOptions`.
        output_dir: where the shards and the sidecar go (local or `tf.io.gfile`).
        identity: the sidecar's settings, vocab and inputs (checked on resume).
        done: shard name -> counts of shards an earlier run completed (kept as they are).
    """
    chars_per_chunk = chunk_chars(options)
    read = (pipeline
            | "Files" >> beam.Create(list(enumerate(files)))
            | "SpreadFiles" >> beam.Reshuffle()  # one file per worker, not all on one
            | "ReadFiles" >> beam.ParDo(_ReadFile(chars_per_chunk)).with_outputs(
                _ReadFile.CHARS, _ReadFile.STATS, main="documents"))
    file_starts = beam.pvalue.AsSingleton(
        read[_ReadFile.CHARS] | "AllFileChars" >> beam.combiners.ToList()
        | "FileStarts" >> beam.Map(_file_starts))
    chunks = (read.documents
              | "ByChunk" >> beam.Map(
                  lambda located, starts: ((starts[located[0]] + located[1]) // chars_per_chunk,
                                           (starts[located[0]] + located[1], located[2])),
                  file_starts)
              | "GroupChunks" >> beam.GroupByKey())
    shard_ids = beam.pvalue.AsSingleton(
        chunks | "ChunkIds" >> beam.Keys() | "AllChunkIds" >> beam.combiners.ToList()
        | "ShardIds" >> beam.Map(_shard_ids))
    shard_counts = chunks | "BuildShards" >> beam.ParDo(
        _BuildShard(vocab, options, output_dir, dict(done or {})), shard_ids)
    input_stats = (read[_ReadFile.STATS]
                   | "InputStats" >> beam.CombineGlobally(_sum_counts))
    sidecar_path = os.path.join(output_dir, sidecar_file_name())
    (pipeline
     | "Once" >> beam.Create([None])
     | "WriteSidecar" >> beam.Map(
         _write_sidecar, sidecar_path, identity,
         beam.pvalue.AsDict(shard_counts), beam.pvalue.AsSingleton(input_stats)))


def _check_flags(options: PipelineOptions, flags: list[str]) -> None:
    """Refuses flags that no Beam pipeline option takes: Beam would drop them with a
    warning and run anyway, e.g. on the DirectRunner for a misspelt `--runner`."""
    parsers = []
    options.get_all_options(add_extra_args_fn=parsers.append)  # Beam's own parser
    _, unknown = parsers[0].parse_known_args(flags)
    if unknown:
        known = [name for action in parsers[0]._actions for name in action.option_strings]
        hints = []
        for flag in unknown:
            close = difflib.get_close_matches(flag.split("=", 1)[0], known, n=1)
            hints.append(f"{flag} (did you mean {close[0]}?)" if close else flag)
        raise ArgumentError(f"Beam takes no pipeline option {', '.join(hints)}; the options "
                            "are those of apache_beam.options.pipeline_options (--runner, "
                            "--direct_num_workers, --project, --flink_master, ...).",
                            field="beam_options")


def pipeline_options(beam_options: list[str] | PipelineOptions | None) -> PipelineOptions:
    """Beam's `PipelineOptions` of command-line flags (a `PipelineOptions` is kept as it
    is; None: the DirectRunner in this process); `ArgumentError` for a flag that no Beam
    pipeline option takes.

    Example:

    >>> pipeline_options(["--runner=DirectRunner"]).get_all_options()["runner"]
    'DirectRunner'
    """
    if isinstance(beam_options, PipelineOptions):
        return beam_options
    flags = [str(flag) for flag in beam_options or []]
    options = PipelineOptions(flags)
    _check_flags(options, flags)
    return options


def create_pretraining_data_beam(inputs: str | list[str], output_dir: str, vocab_file: str,
                                 options: PretrainingDataOptions = _DEFAULT_OPTIONS,
                                 *, beam_options: list[str] | PipelineOptions | None = None,
                                 overwrite: bool = False) -> dict:
    """`keras_bert.data.create_pretraining_data` as an Apache Beam pipeline: the same
    shards and sidecar, on any Beam runner.

    Everything that can fail on the user's input fails in this process before the
    pipeline starts, as in the local path (which documents the errors). A rerun with the
    same settings, vocab and inputs keeps the shards the earlier run completed.

    Args:
        inputs: comma-separated globs (or a list of them) of text files, plain or gzip,
            local or any `tf.io.gfile` filesystem (gs://, ...) that the workers can read.
        output_dir: where the shards and the sidecar go (the workers write there).
        vocab_file: the WordPiece vocab.txt (read here; sent to the workers).
        options: `PretrainingDataOptions`.
        beam_options: Beam pipeline options, as command-line flags (e.g.
            `["--runner=FlinkRunner", "--flink_master=host:8081"]`) or a
            `PipelineOptions`; by default the DirectRunner in this process.
        overwrite: start over, as in the local path.

    Returns:
        The sidecar's content, as `create_pretraining_data` returns it.

    Raises:
        ArgumentError: `options` is not a `PretrainingDataOptions`, the input is a
            `tf.data.Dataset` (read it with the local path), or a flag of
            `beam_options` is no Beam pipeline option.
        InputNotFoundError, VocabError, OutputError, DataError: as the local path.
    """
    if not isinstance(options, PretrainingDataOptions):
        raise ArgumentError(f"options must be a PretrainingDataOptions, got "
                            f"{type(options).__name__}.", field="options")
    if not isinstance(inputs, (str, os.PathLike, list, tuple)):
        raise ArgumentError("The Beam pipeline reads text files (globs); a "
                            f"{type(inputs).__name__} is read by create_pretraining_data.",
                            field="inputs")
    beam_options = pipeline_options(beam_options)
    run = start_run(inputs, output_dir, vocab_file, options, 0, 1, overwrite)
    done = {name: stats for name, stats in run.sidecar.shards.items()
            if run.sidecar.is_done(run.output_dir, name)}
    with beam.Pipeline(options=beam_options) as pipeline:
        build_pipeline(pipeline, run.files, run.vocab, options, run.output_dir,
                       run.sidecar.identity, done)
    # The workers wrote the sidecar with every shard's counts: read them back.
    run.sidecar = Sidecar(run.sidecar.path, run.sidecar.identity)
    record = fileio.read_json(run.sidecar.path)
    input_stats = record.get("input_stats", {})
    num_shards = len(run.sidecar.shards)
    return finish_run(run, options, input_stats, num_shards, num_shards)
