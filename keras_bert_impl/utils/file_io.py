"""Files: reading data from local paths and from cloud storage (`gs://...`, as on Colab TPUs), and the
one atomic writer that every output of the package goes through.

Local paths use Python's `open`. A path with a URL scheme (`gs://bucket/glue/SST-2/train.tsv`) is read
through TensorFlow's `tf.io.gfile`, which is TensorFlow by nature: it is imported only for such paths, so
the readers stay usable without TensorFlow for local files.
"""

import contextlib
import json
import os
import shutil


def is_remote(path):
    """Whether `path` is a URL (`gs://`, `s3://`, `hdfs://`...) rather than a local path."""
    return "://" in str(path)


def open_text(path, newline=None):
    """A text file object (UTF-8) for reading `path`, local or remote."""
    if is_remote(path):
        import tensorflow as tf

        return tf.io.gfile.GFile(path, "r")
    return open(path, encoding="utf-8", newline=newline)


def join(directory, name):
    """`os.path.join` that keeps a URL's slashes."""
    if is_remote(directory):
        return directory.rstrip("/") + "/" + name
    return os.path.join(directory, name)


def isfile(path):
    """`os.path.isfile` for local paths, `tf.io.gfile.exists` (and not a directory) for URLs."""
    if is_remote(path):
        import tensorflow as tf

        return tf.io.gfile.exists(path) and not tf.io.gfile.isdir(path)
    return os.path.isfile(path)


# ------------------------------------------------------------------------------------- atomic writes
_TEMP_PREFIX = ".tmp-"


@contextlib.contextmanager
def atomic_path(path):
    """Yields a temporary path beside `path`; on success it is renamed to `path`, on error removed.

    A reader (or a resumed run) never sees a partial file or directory under the final name: a process
    killed mid-write leaves at most a `.tmp-*` entry. Works for files and for directories (a SavedModel);
    an existing directory at `path` is replaced.

    Examples:

    >>> import os, tempfile
    >>> target = os.path.join(tempfile.mkdtemp(), "weights.bin")
    >>> with atomic_path(target) as tmp:
    ...     _ = open(tmp, "wb").write(b"1234")
    >>> open(target, "rb").read(), [f for f in os.listdir(os.path.dirname(target)) if f.startswith(".tmp-")]
    (b'1234', [])
    """
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    tmp = os.path.join(directory, f"{_TEMP_PREFIX}{os.getpid()}-{os.path.basename(path.rstrip(os.sep))}")
    _remove(tmp)
    try:
        yield tmp
    except BaseException:
        _remove(tmp)
        raise
    if os.path.isdir(tmp) and os.path.isdir(path):
        shutil.rmtree(path)
    os.replace(tmp, path)


@contextlib.contextmanager
def atomic_open(path, mode="w"):
    """`open(path, mode)` whose content appears under `path` only once it is complete (flushed to disk).

    Examples:

    >>> import os, tempfile
    >>> target = os.path.join(tempfile.mkdtemp(), "predictions.txt")
    >>> with atomic_open(target) as f:
    ...     _ = f.write("EU B-ORG\\n")
    >>> open(target).read()
    'EU B-ORG\\n'
    """
    encoding = None if "b" in mode else "utf-8"
    with atomic_path(path) as tmp:
        with open(tmp, mode, encoding=encoding) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())


def write_json(path, value):
    """Writes `value` as indented JSON (sorted keys) to `path` atomically (see `atomic_path`).

    Examples:

    >>> import json, os, tempfile
    >>> target = os.path.join(tempfile.mkdtemp(), "eval_results.json")
    >>> write_json(target, {"f1": 0.9, "exact": 0.8})
    >>> json.load(open(target))
    {'exact': 0.8, 'f1': 0.9}
    """
    with atomic_open(path) as f:
        json.dump(value, f, indent=2, sort_keys=True)
        f.write("\n")


def _remove(path):
    if os.path.isdir(path):
        shutil.rmtree(path, ignore_errors=True)
    elif os.path.lexists(path):
        os.remove(path)
