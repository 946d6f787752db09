"""A corpus encoded on Apache Beam: every non-blank line of many text files embedded by
`BertTextEmbedder.encode` and written as Parquet shards, on the DirectRunner here or on
Dataflow, Flink or Spark with Beam's own pipeline flags (`keras-bert encode --input_file
'DIR/*.txt' --output_dir OUT`).

Apache Beam and pyarrow are an optional extra (`pip install "keras-bert[beam]"`);
`import keras_bert` never imports this module.

Output: `OUT/part-NNNNN.parquet`, one row per non-blank input line (blank lines are
skipped, as `keras-bert encode --input_file` skips them), with the columns `text`
(string, the line as read, its trailing "\\r" dropped), `embedding` (list<float32>),
`source_file` (string, the input file) and `line_number` (int64, 1-based, counting blank
lines, as an editor counts): every line exactly once. `OUT/_manifest.json` records the
model and settings, the inputs (size and sha256), the shards (file, line range, rows) and
`complete`. Its leading underscore, like the hidden temporaries', keeps it out of
readers of the folder (`pyarrow.parquet.read_table(OUT)`, `pandas.read_parquet(OUT)`).

The steps, and why every line is written exactly once:

1. The launcher checks everything before any work: the inputs (globs that match, UTF-8
   text: a bad byte is named by file and line), the output folder (none, empty, or this
   same job's: another model, other settings or other inputs are refused), the model
   (its vocab; no weights load here), and the Beam flags. Reading the inputs once, it
   plans the shards: each covers `rows_per_shard` non-blank lines of one file, by byte
   range, so the plan is a function of the inputs and settings alone.
2. Each worker loads the model once (`DoFn.setup`) and writes each shard it is given:
   its lines read by byte range, encoded by `BertTextEmbedder.encode` in batches of
   `batch_size`, written to a hidden temporary name and renamed into place when complete
   (`keras_bert.core.fileio.atomic_path`). A retried bundle writes the same rows under the
   same name; a killed worker leaves at most a hidden temporary, never a shard.
3. A rerun of the same job (after a kill, or a failed pipeline) keeps the shards that
   exist and writes only the others; the launcher then counts every shard's rows against
   the plan and marks the manifest `complete`.

Workers need keras_bert, TensorFlow, apache-beam and pyarrow installed (on Dataflow:
`--setup_file` pointing at this repository's setup.py, or `--sdk_container_image`), and
must reach the inputs, the model and the output folder (on Dataflow: gs:// paths, or a
checkpoint name such as `hf://ORG/NAME`).

Example:

>>> manifest = encode_corpus_beam(  # doctest: +SKIP
...     "gs://bucket/corpus/*.txt", "gs://bucket/embeddings", "hf://sentence-transformers/"
...     "all-MiniLM-L6-v2", beam_options=["--runner=DataflowRunner", "--project=my-project",
...     "--region=us-central1", "--temp_location=gs://bucket/tmp", "--setup_file=./setup.py"])
"""

from __future__ import annotations

import hashlib
import logging
import os

try:
    import apache_beam as beam
    import pyarrow as pa
    import pyarrow.parquet as pq
except ImportError as e:  # the optional extra
    raise ImportError(f"Encoding a corpus on Apache Beam needs apache-beam and pyarrow, "
                      f"which are not installed ({e}): pip install \"keras-bert[beam]\".") from e

from keras_bert.core import fileio
from keras_bert.core.errors import ArgumentError, DataError, OutputError, OutputExistsError
from keras_bert.core.input_files import expand_patterns
from keras_bert.data.beam import pipeline_options
from keras_bert.model.options import EncodeOptions

logger = logging.getLogger("keras_bert")

MANIFEST = "_manifest.json"
FORMAT = "keras_bert.embedding_parquet/1"
DEFAULT_ROWS_PER_SHARD = EncodeOptions.rows_per_shard
# What must agree for a rerun to continue a job (the rest describes it).
_IDENTITY = ("format", "model", "sequence_length", "vocab_file", "lower_case", "dtype",
             "rows_per_shard", "inputs")
_READ_BYTES = 1 << 20


def shard_file_name(shard_id: int) -> str:
    """The name of shard `shard_id`.

    Example:

    >>> shard_file_name(3)
    'part-00003.parquet'
    """
    return f"part-{shard_id:05d}.parquet"


def plan_shards(files: list[str], rows_per_shard: int = DEFAULT_ROWS_PER_SHARD
                ) -> tuple[list[dict], list[dict]]:
    """Reads `files` once: their identity (path, size, sha256) and the shards that cover
    their non-blank lines, `rows_per_shard` lines of one file each (`name`, `file`, byte
    range `start`-`end`, `first_line`, `rows`). `DataError` names the file and line of a
    NUL byte or bytes that are not UTF-8, before any work.

    Example:

    >>> import tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "a.txt")
    >>> _ = open(path, "wb").write(b"one\\n\\ntwo\\nthree\\n")
    >>> inputs, shards = plan_shards([path], rows_per_shard=2)
    >>> [(s["name"], s["start"], s["end"], s["first_line"], s["rows"]) for s in shards]
    [('part-00000.parquet', 0, 9, 1, 2), ('part-00001.parquet', 9, 15, 4, 1)]
    """
    inputs, shards = [], []
    for path in files:
        digest = hashlib.sha256()
        shard_start = offset = rows = 0
        first_line = 1
        with fileio.open_file(path, "rb") as f:
            for number, line in enumerate(_lines(f), 1):
                digest.update(line)
                if b"\x00" in line:
                    raise DataError(f"line {number} holds a NUL byte: not a text file; give "
                                    "UTF-8 text, one sentence a line.", path=path, line=number)
                try:
                    text = line.decode("utf-8")
                except UnicodeDecodeError as e:
                    raise DataError(f"line {number} is not UTF-8 ({e.reason}); convert the "
                                    "file to UTF-8.", path=path, line=number) from None
                if rows == 0:
                    shard_start, first_line = offset, number
                offset += len(line)
                if text.strip():
                    rows += 1
                    if rows == rows_per_shard:
                        shards.append(_shard(len(shards), path, shard_start, offset,
                                             first_line, rows))
                        rows = 0
        if rows:
            shards.append(_shard(len(shards), path, shard_start, offset, first_line, rows))
        inputs.append({"path": path, "size": offset, "sha256": digest.hexdigest()})
    return inputs, shards


def _lines(f):
    """The lines of binary stream `f`, each with its b"\\n" (read in large blocks, also
    from `tf.io.gfile` files)."""
    rest = b""
    while True:
        block = f.read(_READ_BYTES)
        if not block:
            break
        lines = (rest + block).split(b"\n")
        rest = lines.pop()
        for line in lines:
            yield line + b"\n"
    if rest:
        yield rest


def _shard(shard_id, path, start, end, first_line, rows) -> dict:
    return {"name": shard_file_name(shard_id), "file": path, "start": start, "end": end,
            "first_line": first_line, "rows": rows}


def read_shard(shard: dict) -> tuple[list[str], list[int]]:
    """The texts and 1-based line numbers of `shard`'s non-blank lines, as the in-memory
    `keras-bert encode --input_file` reads them (the line without its "\\n" and
    trailing "\\r"; blank lines skipped)."""
    with fileio.open_file(shard["file"], "rb") as f:
        f.seek(shard["start"])
        data = f.read(shard["end"] - shard["start"])
    texts, numbers = [], []
    for i, line in enumerate(data.decode("utf-8").split("\n")):
        line = line.rstrip("\r")
        if line.strip():
            texts.append(line)
            numbers.append(shard["first_line"] + i)
    if len(texts) != shard["rows"]:
        raise DataError(f"holds {len(texts)} lines where the plan found {shard['rows']}: the "
                        "file changed during the run; rerun on files that stay put.",
                        path=shard["file"], line=shard["first_line"])
    return texts, numbers


def shard_table(texts: list[str], vectors, source: str, line_numbers: list[int]) -> pa.Table:
    """The Parquet rows of one shard: `text`, `embedding` (list<float32>), `source_file`,
    `line_number`.

    Example:

    >>> import numpy as np
    >>> table = shard_table(["a", "b"], np.ones((2, 3), "float32"), "x.txt", [1, 3])
    >>> table.column_names, str(table.schema.field("embedding").type)
    (['text', 'embedding', 'source_file', 'line_number'], 'list<item: float>')
    """
    import numpy as np

    vectors = np.ascontiguousarray(vectors, np.float32)
    width = vectors.shape[1]
    offsets = np.arange(0, (len(texts) + 1) * width, width, dtype=np.int32)
    embedding = pa.ListArray.from_arrays(pa.array(offsets), pa.array(vectors.reshape(-1)))
    return pa.table({"text": pa.array(texts, pa.string()), "embedding": embedding,
                     "source_file": pa.array([source] * len(texts), pa.string()),
                     "line_number": pa.array(line_numbers, pa.int64())})


class _EncodeShard(beam.DoFn):
    """shard plan -> (shard name, rows written, or 0 when it was already complete); the
    shard written into `output_dir` whole or not at all."""

    def __init__(self, model: str, settings: dict, output_dir: str, batch_size: int):
        self.model = model
        self.settings = settings
        self.output_dir = output_dir
        self.batch_size = batch_size
        self.embedder = None

    def setup(self):
        from keras_bert.tasks.embedding.model import BertTextEmbedder

        # Once per worker: every shard it is given is encoded by this one model.
        self.embedder = BertTextEmbedder.from_preset(self.model, **self.settings)

    def process(self, shard):
        path = os.path.join(self.output_dir, shard["name"])
        if fileio.exists(path):  # completed by an earlier attempt or run
            yield shard["name"], 0
            return
        texts, numbers = read_shard(shard)
        vectors = self.embedder.encode(texts, batch_size=self.batch_size)
        table = shard_table(texts, vectors, shard["file"], numbers)
        # Made in memory (a shard is small): pyarrow writes no `tf.io.gfile` file object.
        sink = pa.BufferOutputStream()
        pq.write_table(table, sink)
        with fileio.atomic_path(path) as temporary:
            with fileio.open_file(temporary, "wb") as f:
                f.write(sink.getvalue().to_pybytes())
        logger.info("Wrote %s: %d rows (%s, lines %d-%d).", shard["name"], len(texts),
                    shard["file"], numbers[0], numbers[-1])
        yield shard["name"], len(texts)


def build_pipeline(pipeline: beam.Pipeline, shards: list[dict], model: str, settings: dict,
                   output_dir: str, batch_size: int = 32):
    """Adds the steps that write `shards` (`plan_shards`) into `output_dir` to `pipeline`;
    returns the PCollection of (shard name, rows written).

    Args:
        pipeline: a `beam.Pipeline`.
        shards: the shards to write (those already complete are skipped by the workers).
        model: what `BertTextEmbedder.from_preset` opens on each worker.
        settings: its keyword arguments (`sequence_length`, `vocab_file`, `lower_case`,
            `dtype`).
        output_dir: where the shards go (local or `tf.io.gfile`).
        batch_size: texts per forward pass.
    """
    return (pipeline
            | "Shards" >> beam.Create(shards)
            | "SpreadShards" >> beam.Reshuffle()  # shards across workers, not all on one
            | "EncodeShards" >> beam.ParDo(_EncodeShard(model, settings, output_dir,
                                                        batch_size)))


def encode_corpus_beam(inputs: str | list[str], output_dir: str, model: str, *,
                       sequence_length: int | None = None, vocab_file: str | None = None,
                       lower_case: bool | None = None, dtype: str | None = None,
                       batch_size: int = 32, rows_per_shard: int = DEFAULT_ROWS_PER_SHARD,
                       beam_options=None, report=print) -> dict:
    """Encodes every non-blank line of the text files `inputs` names with
    `BertTextEmbedder.from_preset(model, ...)` into Parquet shards in `output_dir`, as
    an Apache Beam pipeline (the module docstring has the layout and the guarantees).

    A rerun into the same `output_dir` with the same inputs and settings writes only the
    shards an earlier, interrupted run did not complete; other inputs or settings are
    refused (remove the folder to start over).

    Args:
        inputs: comma-separated globs (or a list of them) of UTF-8 text files, local or
            any `tf.io.gfile` filesystem (gs://, ...).
        output_dir: the folder for the shards and `_manifest.json`.
        model: any checkpoint `BertTextEmbedder.from_preset` takes (the workers open it).
        sequence_length, vocab_file, lower_case, dtype: as `BertTextEmbedder.from_preset`.
        batch_size: texts per forward pass.
        rows_per_shard: non-blank lines per shard (a shard never spans two files).
        beam_options: Beam pipeline flags (e.g. `["--runner=FlinkRunner",
            "--flink_master=host:8081"]`) or a `PipelineOptions`; by default the
            DirectRunner in this process.
        report: called with a line of progress (files, rows, shards skipped).

    Returns:
        The manifest (`complete` true): `rows`, `shards` (each with its `rows`), ...

    Raises:
        InputNotFoundError: a glob matches no file.
        DataError: an input is not UTF-8 text (file and line named), or has no text.
        OutputError: `output_dir` is a file; `OutputExistsError`: it holds other files,
            or another job's shards.
        ArgumentError: a bad setting or Beam flag.
    """
    if isinstance(rows_per_shard, bool) or not isinstance(rows_per_shard, int) \
            or rows_per_shard < 1:
        raise ArgumentError(f"rows_per_shard must be a positive integer, got "
                            f"{rows_per_shard!r}.", field="rows_per_shard")
    options = pipeline_options(beam_options)
    files = [f if fileio.is_remote(f) else os.path.abspath(f)
             for f in expand_patterns(inputs, what="input file")]
    check_output_dir(output_dir)
    input_ids, shards = plan_shards(files, rows_per_shard)
    if not shards:
        raise DataError("the input has no text (every line is blank); give one sentence a "
                        "line.", path=files[0] if len(files) == 1 else None)
    local = "://" not in model and os.path.exists(model)
    settings = {"sequence_length": sequence_length, "vocab_file": vocab_file,
                "lower_case": lower_case, "dtype": dtype}
    manifest = {"format": FORMAT, "model": os.path.realpath(model) if local else model,
                **settings, "vocab_file": os.path.realpath(vocab_file) if vocab_file else None,
                "rows_per_shard": rows_per_shard, "inputs": input_ids,
                "rows": sum(s["rows"] for s in shards), "shards": shards, "complete": False}
    previous = open_manifest(output_dir, manifest)
    if previous is None:
        fileio.makedirs(output_dir)
        fileio.write_json(os.path.join(output_dir, MANIFEST), manifest)
    elif not fileio.is_remote(output_dir):
        fileio.remove_dead_temporaries(output_dir)  # a killed run's half-written shards
    done = [s for s in shards if fileio.exists(os.path.join(output_dir, s["name"]))]
    todo = [s for s in shards if not fileio.exists(os.path.join(output_dir, s["name"]))]
    report(f"{len(files)} input files, {manifest['rows']} lines in {len(shards)} shards"
           + (f"; {len(done)} shards already complete, skipped" if done else "") + ".")
    if todo:
        with beam.Pipeline(options=options) as pipeline:
            build_pipeline(pipeline, todo, manifest["model"], settings, output_dir,
                           batch_size)
    dimension = _check_shards(output_dir, shards)
    manifest.update(complete=True, dimension=dimension)
    fileio.write_json(os.path.join(output_dir, MANIFEST), manifest)
    report(f"Wrote {sum(s['rows'] for s in todo)} rows in {len(todo)} shards "
           f"({len(done)} complete before) to {output_dir}: {manifest['rows']} rows of "
           f"dimension {dimension} from {len(files)} files.")
    return manifest


def check_output_dir(output_dir: str) -> None:
    """Refuses an `output_dir` that is a file, or a non-empty folder without this
    module's manifest (not ours), before any work; leaves nothing behind."""
    if fileio.exists(output_dir) and not fileio.isdir(output_dir):
        raise OutputError(f"{output_dir!r} is a file; give a folder for the Parquet "
                          "shards.")
    if fileio.isdir(output_dir):
        names = [n for n in fileio.listdir(output_dir) if not fileio.is_temporary(n)]
        if names and MANIFEST not in [n.rstrip("/") for n in names]:
            raise OutputExistsError(f"{output_dir!r} holds other files (no {MANIFEST}): it "
                                    "is no embedding job's; give a new or empty folder.")
    else:
        fileio.check_writable(output_dir, kind="directory", what="output_dir")


def open_manifest(output_dir: str, manifest: dict) -> dict | None:
    """The manifest of an earlier run of the same job in `output_dir` (None when there is
    none); `OutputExistsError` naming what differs for another job's."""
    path = os.path.join(output_dir, MANIFEST)
    if not fileio.exists(path):
        return None
    previous = fileio.read_json(path)
    changed = [key for key in _IDENTITY if previous.get(key) != manifest[key]]
    if changed:
        what = "; ".join("the input files" if key == "inputs" else
                         f"{key} {previous.get(key)!r}, now {manifest[key]!r}"
                         for key in changed)
        raise OutputExistsError(
            f"{output_dir!r} holds the embeddings of another job (it had {what}); remove "
            "the folder to start over, or give a new one.")
    return previous


def _check_shards(output_dir: str, shards: list[dict]) -> int:
    """Every planned shard is there with its planned rows (exactly once); returns the
    embeddings' dimension."""
    dimension = None
    for shard in shards:
        path = os.path.join(output_dir, shard["name"])
        if not fileio.exists(path):
            raise OutputError(f"shard {path!r} was not written; rerun the same command to "
                              "finish the job.")
        if fileio.is_remote(path):
            with fileio.open_file(path, "rb") as f:
                parquet = pq.ParquetFile(pa.BufferReader(f.read()))
        else:
            parquet = pq.ParquetFile(path)
        rows = parquet.metadata.num_rows
        if dimension is None and rows:
            first = parquet.read_row_group(0, columns=["embedding"]).column(0)
            dimension = len(first[0])
        if rows != shard["rows"]:
            raise OutputError(f"shard {path!r} holds {rows} rows, not the {shard['rows']} "
                              "planned; remove the folder and run again.")
    return dimension
