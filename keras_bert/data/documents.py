"""Streaming BERT-format text into bounded chunks of documents.

BERT's pretraining text has one sentence a line and a blank line between documents
(google-research/bert's format). Files are read line by line (plain or gzip) and the
documents grouped into chunks of about `chunk_chars` characters, so memory stays bounded
whatever the corpus size. Bad input is counted, never fatal: empty files, binary files
(a NUL byte in the first 8 KiB, as `grep` and `git` decide), lines over 1 MiB, invalid
UTF-8 (decoded dropping the bad bytes, as the original's `convert_to_unicode`) and
unreadable or corrupt files (what was read before the error is kept). Paths with a scheme
(gs://, ...) are read through `tf.io.gfile`; `keras_bert.core.input_files.expand_patterns`
expands the input globs.
"""

from __future__ import annotations

import collections
import gzip
import io
import logging
import zlib
from collections.abc import Iterable, Iterator

from keras_bert.core import fileio

logger = logging.getLogger(__name__)

MAX_LINE_BYTES = 1 << 20
_SNIFF_BYTES = 8192
_GZIP_MAGIC = b"\x1f\x8b"
# Marks the end of a document in the stream of lines.
END_OF_DOCUMENT = None


class _GFileReader(io.RawIOBase):
    """A `tf.io.gfile.GFile` as a raw stream, so that `io.BufferedReader` (readline with
    a size limit) and `gzip` can read remote files."""

    def __init__(self, path: str):
        import tensorflow as tf  # remote paths only

        self._file = tf.io.gfile.GFile(path, "rb")
        self._errors = tf.errors.OpError

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        try:
            data = self._file.read(len(buffer))
        except self._errors as e:  # counted as an unreadable file, as OSError is
            raise OSError(e.message) from e
        buffer[:len(data)] = data
        return len(data)

    def close(self) -> None:
        if not self.closed:
            self._file.close()
        super().close()


class _RemoteGzipFile(gzip.GzipFile):
    """A `gzip.GzipFile` over a remote file that also closes the file."""

    def __init__(self, path: str):
        self._remote = io.BufferedReader(_GFileReader(path), buffer_size=1 << 20)
        super().__init__(fileobj=self._remote, mode="rb")

    def close(self) -> None:
        try:
            super().close()
        finally:
            self._remote.close()


def _open_binary(path: str):
    """A binary stream of a local or remote (`tf.io.gfile`) file, gunzipped if it is gzip."""
    remote = fileio.is_remote(path)
    with (_GFileReader(path) if remote else open(path, "rb")) as f:
        is_gzip = f.read(2) == _GZIP_MAGIC
    if remote:
        return (_RemoteGzipFile(path) if is_gzip
                else io.BufferedReader(_GFileReader(path), buffer_size=1 << 20))
    return gzip.open(path, "rb") if is_gzip else open(path, "rb", buffering=1 << 20)


def _decode_line(line: bytes, stats: collections.Counter) -> str:
    try:
        return line.decode("utf-8").strip()
    except UnicodeDecodeError:
        stats["invalid_utf8_lines"] += 1
        return line.decode("utf-8", "ignore").strip()


def read_file_lines(path: str, stats: collections.Counter) -> Iterator[str | None]:
    """Stripped lines of one text file, `END_OF_DOCUMENT` for a blank line and at the
    end of the file (a document never continues into the next file).

    Example:

    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "a.txt"
    >>> _ = path.write_bytes(b"One.\\n  Two. \\n\\nBad \\xff byte.\\n")
    >>> stats = collections.Counter()
    >>> list(read_file_lines(str(path), stats)), stats["invalid_utf8_lines"]
    (['One.', 'Two.', None, 'Bad  byte.', None], 1)
    """
    stats["files"] += 1
    try:
        with _open_binary(path) as f:
            head = f.read(_SNIFF_BYTES)
        if not head:
            stats["empty_files"] += 1
            return
        if b"\x00" in head:
            stats["binary_files"] += 1
            return
        with _open_binary(path) as f:
            while True:
                line = f.readline(MAX_LINE_BYTES + 1)
                if not line:
                    break
                if len(line) > MAX_LINE_BYTES:
                    stats["overlong_lines"] += 1
                    while line and not line.endswith(b"\n"):  # skip the rest of the line
                        line = f.readline(MAX_LINE_BYTES)
                    continue
                stats["lines"] += 1
                text = _decode_line(line, stats)
                yield text if text else END_OF_DOCUMENT
    except (OSError, EOFError, zlib.error) as e:
        stats["unreadable_files"] += 1
        logger.warning("Skipped the rest of %s: %s", path, e)
    yield END_OF_DOCUMENT


def read_dataset_lines(dataset, stats: collections.Counter) -> Iterator[str | None]:
    """Lines of a `tf.data.Dataset` of scalar strings: each element is text in the file
    format (usually one document) and ends a document.

    Example:

    >>> import tensorflow as tf
    >>> dataset = tf.data.Dataset.from_tensor_slices(["A.\\nB.", "C."])
    >>> list(read_dataset_lines(dataset, collections.Counter()))
    ['A.', 'B.', None, 'C.', None]
    """
    for element in dataset.as_numpy_iterator():
        if not isinstance(element, bytes):
            raise TypeError("A dataset of documents must yield scalar strings, got "
                            f"{type(element).__name__}; map it to the text first, e.g. "
                            "`ds.map(lambda x: x['text'])`.")
        for line in element.split(b"\n"):
            stats["lines"] += 1
            text = _decode_line(line, stats)
            yield text if text else END_OF_DOCUMENT
        yield END_OF_DOCUMENT


def documents_with_offsets(lines: Iterable[str | None], chunk_chars: int,
                           stats: collections.Counter) -> Iterator[tuple[int, list[str]]]:
    """(offset, document) for each document of a stream of lines; the offset counts the
    characters before it (each non-blank line counts its length plus one).

    A document of `chunk_chars` or more is split before the line that would make it
    longer (counted as `split_documents`); each piece is a document of its own, at its
    own offset. A document's offset and pieces depend only on the text before and in it,
    so the same documents come out of any split of the input (per file, with each file's
    offsets shifted by the characters of the files before it: `keras_bert.data.beam`).

    Example:

    >>> lines = ["a b.", "c d.", None, "e f.", None, "g h.", None, "i j.", "k l.", "m n."]
    >>> list(documents_with_offsets(lines, 8, collections.Counter()))
    [(0, ['a b.', 'c d.']), (10, ['e f.']), (15, ['g h.']), (20, ['i j.', 'k l.']), \
(30, ['m n.'])]
    """
    document: list[str] = []
    offset = start = document_size = 0
    for line in lines:
        if line is END_OF_DOCUMENT:
            if document:
                yield start, document
                document = []
            continue
        if document and document_size >= chunk_chars:  # too long: split it here
            stats["split_documents"] += 1
            yield start, document
            document = []
        if not document:
            start, document_size = offset, 0
        document.append(line)
        document_size += len(line) + 1
        offset += len(line) + 1
    if document:
        yield start, document


def document_chars(document: list[str]) -> int:
    """The characters a document counts for in the offsets (`documents_with_offsets`)."""
    return sum(len(line) + 1 for line in document)


def chunk_documents(lines: Iterable[str | None], chunk_chars: int,
                    stats: collections.Counter) -> Iterator[list[list[str]]]:
    """Groups a stream of lines into chunks of whole documents of about `chunk_chars`.

    A document belongs to chunk `offset // chunk_chars`, the chunk its first character
    falls in (`documents_with_offsets`): so a chunk's documents depend only on the text,
    not on how the input was split into files or read, and the Beam pipeline
    (`keras_bert.data.beam`) groups them the same way. Chunks that no document starts in
    (a long document spans them) are skipped: the chunks yielded are the non-empty ones,
    in order. A chunk holds at most about twice `chunk_chars`.

    Example:

    >>> lines = ["a b.", "c d.", None, "e f.", None, "g h.", None, "i j.", "k l.", "m n."]
    >>> list(chunk_documents(lines, 8, collections.Counter()))
    [[['a b.', 'c d.']], [['e f.'], ['g h.']], [['i j.', 'k l.']], [['m n.']]]
    """
    chunk: list[list[str]] = []
    chunk_id = None
    for offset, document in documents_with_offsets(lines, chunk_chars, stats):
        if chunk and offset // chunk_chars != chunk_id:
            yield chunk
            chunk = []
        chunk_id = offset // chunk_chars
        chunk.append(document)
    if chunk:
        yield chunk
