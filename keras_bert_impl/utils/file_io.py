"""Files: reading data from local paths and from cloud storage (`gs://...`, as on Colab TPUs), and the
one atomic writer that every output of the package goes through.

Local paths use Python's `open`. A path with a URL scheme (`gs://bucket/glue/SST-2/train.tsv`) is read
and written through TensorFlow's `tf.io.gfile`, which is TensorFlow by nature: it is imported only for such
paths (`_gfile`; without TensorFlow such a path is one line naming the `[tensorflow]` extra), so everything
works without TensorFlow for local files.
"""

import contextlib
import glob as _glob
import json
import math
import os
import shutil


def is_remote(path):
    """Whether `path` is a URL (`gs://`, `s3://`, `hdfs://`...) rather than a local path."""
    return "://" in str(path)


def open_text(path, newline=None):
    """A text file object (UTF-8) for reading `path`, local or remote.

    Bytes that are not UTF-8 raise `UserInputError("path:LINE: not valid UTF-8 text (...)")`, naming the
    line that holds them, instead of a `UnicodeDecodeError` naming no file, while the object is read or
    iterated. `newline` is `open`'s (`""` keeps line endings as they are, as the csv module wants).

    Examples:

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "train.tsv")
    >>> _ = open(path, "wb").write(b"sentence\\tlabel\\ngood\\t1\\nbad \\xff\\t0\\n")
    >>> try:
    ...     lines = list(open_text(path))
    ... except ValueError as error:
    ...     print(str(error).replace(path, "train.tsv"))
    train.tsv:3: not valid UTF-8 text (invalid start byte 0xff at byte 4 of the line).
    """
    if is_remote(path):
        return _Utf8Text(_gfile(path).GFile(path, "r"), path)
    return _Utf8Text(open(path, encoding="utf-8", newline=newline), path)


def _gfile(path):
    """TensorFlow's `tf.io.gfile`, for the URL `path`; `MissingDependencyError` without TensorFlow."""
    from keras_bert_impl.utils.optional_dependencies import require_tensorflow

    require_tensorflow(f"a path with a URL scheme ({path})")
    import tensorflow as tf

    return tf.io.gfile


def open_binary(path, mode="rb"):
    """A binary file object of `path` (local or a URL), opened with `mode` ("rb", "wb")."""
    return _gfile(path).GFile(path, mode) if is_remote(path) else open(path, mode)


def glob(pattern):
    """The paths matching `pattern` (local or a URL), sorted.

    Examples:

    >>> glob(os.path.join(os.path.dirname(__file__), "file_i*.py"))[0].endswith("file_io.py")
    True
    """
    return sorted(_gfile(pattern).glob(pattern) if is_remote(pattern) else _glob.glob(pattern))


def makedirs(path):
    """Creates the directory `path` and its parents (local or a URL); no error if it exists."""
    if is_remote(path):
        _gfile(path).makedirs(path)
    else:
        os.makedirs(path, exist_ok=True)


def replace(source, target):
    """Renames `source` to `target`, replacing `target` (local or URLs)."""
    if is_remote(target):
        _gfile(target).rename(source, target, overwrite=True)
    else:
        os.replace(source, target)


def remove_if_exists(path):
    """Removes the file `path` (local or a URL) if it exists."""
    if is_remote(path):
        if _gfile(path).exists(path):
            _gfile(path).remove(path)
    elif os.path.exists(path):
        os.remove(path)


class _Utf8Text:
    """A text file object whose decoding errors are `UserInputError`s naming the file and line."""

    def __init__(self, file, path):
        self._file = file
        self._path = path

    def __getattr__(self, name):  # everything else (name, seek, close, ...) is the file's
        return getattr(self._file, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self._file.close()

    def __iter__(self):
        return self

    def __next__(self):
        return self._decoded(self._file.__next__)

    def read(self, *args):
        return self._decoded(self._file.read, *args)

    def readline(self, *args):
        return self._decoded(self._file.readline, *args)

    def readlines(self, *args):
        return self._decoded(self._file.readlines, *args)

    def _decoded(self, method, *args):
        try:
            return method(*args)
        except UnicodeDecodeError as error:
            raise _decoding_error(self._path, error) from None


def _decoding_error(path, error):
    """The `UserInputError` of `UnicodeDecodeError` `error` in `path`: its first undecodable line, found by
    decoding the file's bytes line by line (a text file decodes in blocks, so `error` itself says neither)."""
    from keras_bert_impl.utils.errors import UserInputError

    with open_binary(path) as raw:
        for number, line in enumerate(raw, 1):
            try:
                decode_line(line, path, number)
            except ValueError as line_error:
                return line_error
    return UserInputError(f"{path}: not valid UTF-8 text ({error.reason}).")


def decode_line(line, path, number):
    """The text of line `number` of `path`, given as bytes; bytes that are not UTF-8 raise
    `UserInputError("path:LINE: not valid UTF-8 text (...)")`, as `open_text` reports them."""
    from keras_bert_impl.utils.errors import UserInputError

    try:
        return line.decode("utf-8")
    except UnicodeDecodeError as error:
        bad = error.object[error.start:error.end]
        raise UserInputError(f"{path}:{number}: not valid UTF-8 text ({error.reason} 0x{bad.hex()} at byte "
                             f"{error.start} of the line).") from None


def join(directory, name):
    """`os.path.join` that keeps a URL's slashes."""
    if is_remote(directory):
        return directory.rstrip("/") + "/" + name
    return os.path.join(directory, name)


def is_within(path, directory):
    """Whether the local `path` is `directory` or lies inside it, links resolved (False for a URL).

    Examples:

    >>> is_within("/runs/sst2/model/vocab.txt", "/runs/sst2/model"), is_within("/runs/sst2", "/runs/sst2/model")
    (True, False)
    >>> is_within("/runs/sst2/model", "/runs/sst2/model/"), is_within("/runs/sst2-b", "/runs/sst2")
    (True, False)
    """
    if is_remote(path) or is_remote(directory):
        return False
    path, directory = os.path.realpath(path), os.path.realpath(directory)
    return path == directory or path.startswith(directory.rstrip(os.sep) + os.sep)


def disk_usage(path):
    """The bytes the file or directory `path` holds (its files' sizes; links count as themselves, not followed).

    Examples:

    >>> import tempfile
    >>> directory = tempfile.mkdtemp()
    >>> _ = open(os.path.join(directory, "a.bin"), "wb").write(b"1234")
    >>> os.mkdir(os.path.join(directory, "sub")); _ = open(os.path.join(directory, "sub", "b.bin"), "wb").write(b"56")
    >>> disk_usage(directory), size_text(disk_usage(directory)), size_text(521_300_000)
    (6, '6 B', '521.3 MB')
    """
    if not os.path.isdir(path) or os.path.islink(path):
        return os.lstat(path).st_size
    return sum(os.lstat(os.path.join(root, name)).st_size for root, _, names in os.walk(path) for name in names)


def size_text(size):
    """A number of bytes as a person reads it: "6 B", "83.1 kB", "87.3 MB", "1.2 GB" (powers of 1000)."""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{int(size)} B"


def isfile(path):
    """`os.path.isfile` for local paths, `tf.io.gfile.exists` (and not a directory) for URLs."""
    if is_remote(path):
        return _gfile(path).exists(path) and not _gfile(path).isdir(path)
    return os.path.isfile(path)


# ------------------------------------------------------------------------------------- atomic writes
_TEMP_PREFIX = ".tmp-"


@contextlib.contextmanager
def atomic_path(path):
    """Yields a temporary path beside `path`; on success it is renamed to `path`, on error removed.

    A reader (or a resumed run) never sees a partial file or directory under the final name: a process
    killed mid-write leaves at most `.tmp-*` entries. Works for files and for directories (a SavedModel); an
    existing entry at `path` is replaced.

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
    if os.path.isdir(tmp) and os.path.lexists(path):
        # A directory cannot be renamed over an existing one: the old one is renamed aside first and removed
        # once the new one is in place, so that `path` is never a partly removed directory.
        old = os.path.join(directory, f"{_TEMP_PREFIX}{os.getpid()}-old-{os.path.basename(path.rstrip(os.sep))}")
        _remove(old)
        os.replace(path, old)
        os.replace(tmp, path)
        _remove(old)
        return
    os.replace(tmp, path)


@contextlib.contextmanager
def atomic_open(path, mode="w"):
    """`open(path, mode)` whose content appears under `path` only once it is complete (flushed to disk). A
    write, flush or fsync refused by the file system (no space left on device) raises an `OSError` naming
    `path`.

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
        try:
            with open(tmp, mode, encoding=encoding) as f:
                yield f
                f.flush()
                os.fsync(f.fileno())
        except OSError as error:
            if not error.errno or error.filename is not None:
                raise
            # A write or fsync refused (e.g. no space left on device) names no file: name the target.
            raise OSError(error.errno, error.strerror or str(error), path) from error


def write_json(path, value):
    """Writes `value` as strict, indented JSON (sorted keys; UTF-8, non-ASCII characters as themselves, so that a
    Chinese answer reads as itself) to `path` atomically (see `atomic_path`).

    Strict: a NaN or an infinity, which `json` would write as the bare tokens `NaN` / `Infinity` that other
    JSON readers refuse, raises `ValueError` naming `path` and the key path, and nothing is written. A value
    that is undefined on purpose is written as `None` (null) by its producer.

    Examples:

    >>> import json, os, tempfile
    >>> target = os.path.join(tempfile.mkdtemp(), "eval_results.json")
    >>> write_json(target, {"f1": 0.9, "exact": 0.8})
    >>> json.load(open(target))
    {'exact': 0.8, 'f1': 0.9}
    >>> try:
    ...     write_json(target, {"train": {"loss": float("nan")}})
    ... except ValueError as error:
    ...     print(str(error).replace(target, "eval_results.json"))
    eval_results.json: train.loss is nan, which strict JSON cannot hold.
    """
    where = _first_non_finite(value)
    if where is not None:
        raise ValueError(f"{path}: {where[0] or 'the value'} is {where[1]}, which strict JSON cannot hold.")
    with atomic_open(path) as f:
        json.dump(value, f, indent=2, sort_keys=True, allow_nan=False, ensure_ascii=False)
        f.write("\n")


def _first_non_finite(value, key_path=""):
    """`(key path, value)` of the first NaN or infinite float in the JSON-like `value`, or None."""
    if isinstance(value, float):
        return None if math.isfinite(value) else (key_path, value)
    if isinstance(value, dict):
        items = sorted(value.items(), key=lambda item: str(item[0]))
        for key, item in items:
            found = _first_non_finite(item, f"{key_path}.{key}" if key_path else str(key))
            if found is not None:
                return found
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            found = _first_non_finite(item, f"{key_path}[{index}]")
            if found is not None:
                return found
    return None


def _remove(path):
    if os.path.isdir(path):
        shutil.rmtree(path, ignore_errors=True)
    elif os.path.lexists(path):
        os.remove(path)
