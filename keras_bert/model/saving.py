"""Writing model files all or nothing: `save` and `save_weights` of keras_bert's models.

Keras writes a `.keras` file in place: it truncates the target, then adds the config and
the weights to the zip, so a Ctrl-C (or a full disk) in between leaves a stub where a
good model was. Here the file is written beside the target under a hidden temporary name
(`.NAME.tmp-PID-RANDOM.keras`: Keras insists on the suffix) and renamed over it only once
complete: an interrupted save leaves the previous file as it was, and its temporary is
removed on the way out (a killed process's is removed by the next save of that file).

Only `.keras` files are written: an `.h5` model file of a keras_bert model would not
load back (Keras's legacy format does not record its custom layers' configs).
"""

from __future__ import annotations

import io
import os

from keras_bert.core import fileio, stopping
from keras_bert.core.errors import ArgumentError

KERAS_SUFFIX = ".keras"
WEIGHTS_SUFFIX = ".weights.h5"


def _local_target(filepath) -> str:
    """The file a local path writes: a symbolic link's target, so that the rename
    replaces the file the link points at, not the link."""
    path = os.path.abspath(filepath)
    return os.path.realpath(path) if os.path.islink(path) else path


def _proceed(path: str, overwrite: bool) -> bool:
    """Keras's question before replacing an existing file with `overwrite=False`."""
    if overwrite or not fileio.exists(path):
        return True
    from keras.src.utils import io_utils

    return io_utils.ask_to_proceed_with_overwrite(path)


def _write_atomically(path: str, suffix: str, write) -> None:
    """`write(temporary)` and the rename over `path`; Ctrl-C and SIGTERM at any moment
    leave `path` as it was (`keras_bert.core.stopping` makes sure a signal that arrives
    inside a library callback still stops the write before the rename)."""
    if not fileio.is_remote(path):
        path = _local_target(path)
        fileio.check_writable(path, kind="file", what="filepath")
        directory, name = os.path.split(path)
        fileio.remove_dead_temporaries(directory, owned=lambda target: target == name)
    with stopping.stop_on_signals(), fileio.atomic_path(path, suffix=suffix) as temporary:
        write(temporary)


def save_model(keras_save, model, filepath, overwrite: bool = True, zipped=None,
               **kwargs) -> None:
    """`keras.Model.save` (`keras_save`, the bound method) of `model` to `filepath`,
    atomically: a `.keras` file, a directory with `zipped=False`, or a file object (as
    Keras writes it). Any other path is refused before anything is written."""
    if isinstance(filepath, io.IOBase):
        return keras_save(filepath, overwrite=overwrite, zipped=zipped, **kwargs)
    path = os.fspath(filepath)
    if path.startswith("hf://"):  # uploaded by Keras to the Hugging Face Hub
        return keras_save(filepath, overwrite=overwrite, zipped=zipped, **kwargs)
    if zipped is False:
        if not _proceed(path, overwrite):
            return None
        fileio.atomic_directory(  # Ctrl-C stops it there too (stopping)
            path, lambda tmp: keras_save(tmp, overwrite=True, zipped=False, **kwargs),
            overwrite=True)
        return None
    if not path.endswith(KERAS_SUFFIX):
        _refuse_suffix(model, path)
    if not _proceed(path, overwrite):
        return None
    _write_atomically(path, KERAS_SUFFIX, lambda tmp: keras_save(
        tmp, overwrite=True, zipped=zipped, **kwargs))
    return None


def save_weights(keras_save_weights, filepath, overwrite: bool = True,
                 max_shard_size=None) -> None:
    """`keras.Model.save_weights` (`keras_save_weights`, the bound method) to a
    `.weights.h5` file, atomically; sharded weights (`max_shard_size`, several files)
    are written as Keras writes them."""
    path = os.fspath(filepath)
    if max_shard_size is not None or not path.endswith(WEIGHTS_SUFFIX):
        return keras_save_weights(filepath, overwrite=overwrite,
                                  max_shard_size=max_shard_size)
    if not _proceed(path, overwrite):
        return None
    _write_atomically(path, WEIGHTS_SUFFIX,
                      lambda tmp: keras_save_weights(tmp, overwrite=True))
    return None


def _refuse_suffix(model, path: str) -> None:
    suffix = os.path.splitext(path)[1]
    what = f"a {suffix!r} file" if suffix else "a path without the .keras suffix"
    name = os.path.basename(path)
    stem = (name[:-len(WEIGHTS_SUFFIX)] if name.endswith(WEIGHTS_SUFFIX)
            else os.path.splitext(name)[0]) or "model"
    h5 = (" (Keras's legacy .h5 format does not record keras_bert's layers, so "
          "load_model could not read it back)" if suffix in (".h5", ".hdf5") else "")
    raise ArgumentError(
        f"save({path!r}): a {type(model).__name__} is saved as a .keras file, not as "
        f"{what}{h5}. Save it with model.save({stem + KERAS_SUFFIX!r}); for the weights "
        f"alone use model.save_weights({stem + WEIGHTS_SUFFIX!r}), and for serving "
        "model.export(DIRECTORY).", field="filepath")
