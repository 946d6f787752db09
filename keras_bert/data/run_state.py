"""What lets an interrupted run resume: the JSON sidecar, and the checks of what is on disk.

The sidecar (`pretraining_data.json`, or `pretraining_data-IIIII-of-NNNNN.json` for a
slice) is written before the first shard and records the settings, the vocab checksum,
the inputs, the counts per shard and in total; a shard counts as done when its file
exists and the sidecar lists it. A directory with shards that no sidecar describes, or
with a sidecar of other settings, is refused: a `*.tfrecord` glob would mix its old
shards with the new ones.
"""

from __future__ import annotations

import collections
import logging
import os
import time

import tensorflow as tf

from keras_bert.core import fileio
from keras_bert.core.errors import OutputError, Setting
from keras_bert.data.shards import shard_id_of

logger = logging.getLogger(__name__)

_SIDECAR_INTERVAL_S = 5.0
# What a message tells the caller to pass to replace another run's shards.
OVERWRITE = Setting("overwrite", True)


def sidecar_file_name(shard_index: int = 0, num_shards: int = 1) -> str:
    """The JSON sidecar's name: one per run, or per slice when machines split the work.

    Example:

    >>> sidecar_file_name(), sidecar_file_name(1, 4)
    ('pretraining_data.json', 'pretraining_data-00001-of-00004.json')
    """
    if num_shards == 1:
        return "pretraining_data.json"
    return f"pretraining_data-{shard_index:05d}-of-{num_shards:05d}.json"


class Sidecar:
    """The run's JSON record; resuming requires the same settings, vocab and inputs.

    Args:
        path: the sidecar file; an existing one is read, and refused (`OutputError`)
            when it cannot be read or its `identity` differs.
        identity: the format version, settings, vocab and inputs of this run.
    """

    def __init__(self, path: str, identity: dict):
        self.path = path
        self.identity = identity
        self.shards: dict[str, dict] = {}
        self.existed = fileio.exists(path)
        if self.existed:
            try:
                previous = fileio.read_json(path)
            except (OSError, ValueError, tf.errors.OpError) as e:
                raise OutputError.advising(
                    f"{path!r} cannot be read ({e}); remove it and the part-*.tfrecord "
                    "shards beside it, choose another output directory, or pass ",
                    OVERWRITE, " to replace them.") from None
            if not isinstance(previous, dict):
                previous = {}
            differs = [key for key, value in identity.items() if previous.get(key) != value]
            if "settings" in differs and isinstance(previous.get("settings"), dict):
                old_settings = previous["settings"]
                differs[differs.index("settings")] = "settings (" + ", ".join(
                    f"{k}: {old_settings.get(k)!r} → {v!r}"
                    for k, v in identity["settings"].items() if old_settings.get(k) != v) + ")"
            if differs:
                raise OutputError.advising(
                    f"{path!r} was written with different {', '.join(differs)}; its shards "
                    "cannot be resumed and would mix with new ones. Choose another output "
                    "directory, or pass ", OVERWRITE, " to replace them.")
            self.shards = previous.get("shards", {})
        self._last_write = 0.0

    def is_done(self, output_dir: str, name: str) -> bool:
        """Whether shard `name` is listed and its file is in `output_dir`."""
        return name in self.shards and fileio.exists(os.path.join(output_dir, name))

    def write(self, input_stats: dict, complete: bool, force: bool = False) -> dict:
        """Writes the record (at most every few seconds unless `force`); returns it, or
        {} when the write was skipped."""
        if not force and time.monotonic() - self._last_write < _SIDECAR_INTERVAL_S:
            return {}
        record = {**self.identity, "complete": complete, "input_stats": input_stats,
                  "totals": self.totals(), "shards": dict(sorted(self.shards.items()))}
        fileio.write_json(self.path, record, indent=1, sort_keys=False)
        self._last_write = time.monotonic()
        return record

    def totals(self) -> dict:
        """The shards' counts, summed."""
        totals: collections.Counter = collections.Counter()
        for counts in self.shards.values():
            totals.update(counts)
        return dict(sorted(totals.items()))


def check_output_directory(output_dir: str, sidecar: Sidecar, shard_index: int,
                           num_shards: int) -> None:
    """Refuses a directory holding shards that no sidecar of this layout accounts for:
    a `*.tfrecord` glob would feed them to training beside the new ones."""
    if not fileio.isdir(output_dir):
        return
    names = {name.rstrip("/") for name in fileio.listdir(output_dir)}
    strays = []
    for name in sorted(names):
        shard_id = shard_id_of(name)
        if shard_id is None:
            continue
        owner = shard_id % num_shards
        if owner == shard_index:
            if not sidecar.existed:
                strays.append(name)
        elif sidecar_file_name(owner, num_shards) not in names:
            strays.append(name)
    if strays:
        example = ", ".join(strays[:3]) + (f" and {len(strays) - 3} more"
                                           if len(strays) > 3 else "")
        raise OutputError.advising(
            f"The output directory {output_dir!r} holds shards that no "
            f"{sidecar_file_name(0, num_shards) if num_shards == 1 else 'sidecar'} of this "
            f"run describes ({example}): old data, which training would read together with "
            "the new shards. Remove them (with any pretraining_data*.json), choose "
            "another output directory, or pass ", OVERWRITE, " to replace them.")


def _owned_by_slice(name: str, shard_index: int, num_shards: int) -> bool:
    """Whether `name` is a shard of this slice or its sidecar."""
    shard_id = shard_id_of(name)
    if shard_id is not None:
        return shard_id % num_shards == shard_index
    return name == sidecar_file_name(shard_index, num_shards)


def remove_previous_run(output_dir: str, shard_index: int, num_shards: int) -> None:
    """Removes the shards of this slice and its sidecar that an earlier run left."""
    if not fileio.isdir(output_dir):
        return
    removed = 0
    for name in fileio.listdir(output_dir):
        name = name.rstrip("/")
        if _owned_by_slice(name, shard_index, num_shards):
            fileio.remove(os.path.join(output_dir, name))
            removed += 1
    if removed:
        logger.info("Removed %d files of an earlier run from %s (overwrite).", removed,
                    output_dir)


def remove_stale_temporaries(output_dir: str, shard_index: int, num_shards: int) -> None:
    """Clears the hidden temporaries an interrupted run of this slice left (its shards'
    and its sidecar's); other slices' machines may be writing theirs right now."""
    for path in fileio.remove_stale_temporaries(
            output_dir, lambda target: _owned_by_slice(target, shard_index, num_shards)):
        logger.info("Removed %s, left by an interrupted run.", path)


def remove_run(output_dir: str, sidecar: Sidecar, created: bool) -> None:
    """Removes this run's shards, its sidecar and the directory if the run made it and
    it is left empty."""
    for name in sidecar.shards:
        path = os.path.join(output_dir, name)
        if fileio.exists(path):
            fileio.remove(path)
    if fileio.exists(sidecar.path):
        fileio.remove(sidecar.path)
    if created and not fileio.is_remote(output_dir) and not os.listdir(output_dir):
        os.rmdir(output_dir)
