"""A training run's output directory: made with one-line errors, written by one run at a time, bound to the
settings that define its run, and cleared (of what a run wrote only) for a fresh start.

* `make_output_dir(path)`: creates the directory; a path that is a file, cannot be created or cannot be
  written is a `UserInputError` naming it. `created_output_dir(path)` does it for a run's life: the folders
  it created are removed again when the run fails before it wrote anything in them (but its lock file).
* `RunLock(path)`: held for the run's life, `fcntl.flock` on `path/.lock`, whose text names the holder
  (pid, host, start time, command). A second run on the same directory is refused in one line naming the
  holder. The kernel releases the lock when its process ends however it ends (even kill -9), so the lock of
  a dead process is taken over with no cleanup. (`flock` locks hold on local file systems; on NFS they
  depend on the server.) In a multi-worker job only the chief locks the directory: the other workers write
  temporary directories (`distribute.Distribution.write_dir`). A file system that cannot lock files gets a
  warning, and the run goes on unlocked.
* `bind_run_settings(path, settings, bound)`: `path/run_settings.json` records the settings that shape the
  trained weights (learning rate, batch size, sequence length, steps or epochs, warmup, seed, model, data,
  ...; not output-only ones such as evaluation batch sizes), written atomically when the run starts
  training (`record_run_settings`). While the directory holds training state (`bound`: e.g. checkpoints), a
  run whose settings differ is refused before it loads anything, in one line listing each differing setting
  with the recorded and the new value, so that a resume never mixes two runs. A directory without training
  state takes the new settings.
* `check_trained_labels(directory, state, labels)`: a resumed run whose data gives another label set than the
  one its checkpoints were trained on is refused, naming both sets.
* `print_outputs(path, since, descriptions)`: the list a run prints at its end, what it wrote and the disk it takes.
* `remove_run_outputs(path, names, settings)`: `--overwrite_output_dir`, a fresh start: removes the entries
  `names` (what the run writes: checkpoints, logs, model, results, the settings record), never any other file;
  refused, before anything is removed, when a file the run reads (a path setting: `--init_checkpoint`,
  `--vocab_file`, `--bert_config_file`, `--data_dir`, `--train_file`, ...) is one of them or lies inside one.
"""

import contextlib
import datetime
import errno
import fcntl
import json
import logging
import os
import shutil
import socket
import sys
import warnings

from keras_bert_impl.utils.errors import UserInputError
from keras_bert_impl.utils.file_io import disk_usage, is_within, size_text, write_json

logger = logging.getLogger(__name__)

LOCK_FILE = ".lock"
SETTINGS_FILE = "run_settings.json"
# Settings whose values are paths: recorded absolute, so that the same files named from another working
# directory are the same setting.
_PATH_SUFFIXES = ("_file", "_dir", "_checkpoint", "labels")


def make_output_dir(path, flag="--output_dir"):
    """Creates the directory `path` (and its parents); returns `path`.

    Raises:
        UserInputError: `path` is a file, cannot be created or cannot be written (a read-only file system, no
            permission), naming `flag` and the path.

    Examples:

    >>> import tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "run")
    >>> make_output_dir(path) == path and os.path.isdir(path)
    True
    >>> open(os.path.join(path, "file"), "w").close()
    >>> make_output_dir(os.path.join(path, "file"))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    keras_bert_impl.utils.errors.UserInputError: --output_dir: .../run/file is a file, not a directory
    """
    if os.path.exists(path) and not os.path.isdir(path):
        raise UserInputError(f"{flag}: {path} is a file, not a directory")
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as error:
        where = f" ({error.filename})" if error.filename and os.fspath(error.filename) != os.fspath(path) else ""
        if isinstance(error, FileExistsError) or error.errno == errno.ENOTDIR:
            raise UserInputError(f"{flag}: cannot create {path}: a part of it is a file{where}") from None
        raise UserInputError(f"{flag}: cannot create {path}: {error.strerror}{where}") from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise UserInputError(f"{flag}: cannot write to {path} (a read-only file system or no permission)")
    return path


@contextlib.contextmanager
def created_output_dir(path, flag="--output_dir"):
    """`make_output_dir(path, flag)` for the block (a run); when the block raises, the folders this call
    created (`path` and its missing parents) are removed again if they hold nothing but the run's lock file,
    so that a run refused for a flag or a file leaves no folder behind. Existing folders are never removed.

    Examples:

    >>> import tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "runs", "sst2")
    >>> try:
    ...     with created_output_dir(path):
    ...         raise UserInputError("train.tsv:3: expected 2 fields")
    ... except UserInputError:
    ...     os.path.exists(path), os.path.exists(os.path.dirname(path))
    (False, False)
    """
    created = []
    parent = os.path.abspath(path)
    while not os.path.lexists(parent):
        created.append(parent)
        parent = os.path.dirname(parent)
    make_output_dir(path, flag)
    try:
        yield path
    except BaseException:
        for directory in created:  # deepest first
            try:
                names = os.listdir(directory)
                if names == [LOCK_FILE]:
                    os.remove(os.path.join(directory, LOCK_FILE))
                os.rmdir(directory)
            except OSError:  # written in, or removed already: left as it is
                break
        raise


class RunLock:
    """The lock of one writer on a run directory, held inside `with RunLock(path):` (see the module docstring).

    Args:
        path: the run directory (it must exist: `make_output_dir`).
        flag: the flag that named it, for the messages.

    Raises (on entering):
        UserInputError: another live process holds the lock (the message names it), or the lock file
            cannot be written.

    Examples:

    >>> import tempfile
    >>> directory = tempfile.mkdtemp()
    >>> with RunLock(directory):
    ...     open(os.path.join(directory, LOCK_FILE)).read().startswith(f"pid {os.getpid()} on ")
    True
    """

    def __init__(self, path, flag="--output_dir"):
        self.path = path
        self.flag = flag
        self._fd = None

    def __enter__(self):
        lock_path = os.path.join(self.path, LOCK_FILE)
        try:
            fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as error:
            raise UserInputError(f"{self.flag}: cannot write to {self.path} ({error.strerror}: {lock_path})") from None
        held = False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as error:
            if error.errno in (errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS):
                warnings.warn(f"{lock_path}: this file system does not lock files ({error.strerror}); a second run "
                              f"on {self.path} would not be refused.", stacklevel=2)
            elif error.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                held = True
            else:
                os.close(fd)
                raise
        if held:
            holder = os.read(fd, 4096).decode("utf-8", "replace").strip() or "another process"
            os.close(fd)
            raise UserInputError(f"{self.flag}: {self.path} is in use by {holder.splitlines()[0]}: wait for it to "
                                 f"end, or use another {self.flag}") from None
        command = " ".join(os.path.basename(a) if i == 0 else a for i, a in enumerate(sys.argv))
        started = datetime.datetime.now().isoformat(timespec="seconds")
        text = f"pid {os.getpid()} on {socket.gethostname()} since {started}: {command}\n"
        os.ftruncate(fd, 0)
        os.pwrite(fd, text.encode("utf-8"), 0)
        self._fd = fd
        return self

    def __exit__(self, *exc_info):
        if self._fd is not None:
            os.close(self._fd)  # releases the lock; the file stays (removing it would race a new holder)
            self._fd = None
        return False


# ---------------------------------------------------------------------------------------- the settings
def _comparable(name, value):
    """`value` as the JSON value it is recorded as (tuples as lists, existing local paths absolute)."""
    if isinstance(value, tuple):
        return [_comparable(name, v) for v in value]
    if (isinstance(value, str) and name.endswith(_PATH_SUFFIXES) and "://" not in value
            and os.path.exists(value)):
        return os.path.abspath(value)
    return value


def read_run_settings(path):
    """The settings recorded in the run directory `path` ({} when there are none or they do not read)."""
    try:
        with open(os.path.join(path, SETTINGS_FILE), encoding="utf-8") as f:
            recorded = json.load(f)
    except (OSError, ValueError):
        return {}
    return recorded if isinstance(recorded, dict) else {}


class _Absent:
    """A setting absent on one side of a comparison."""

    def __repr__(self):
        return "(absent)"


ABSENT = _Absent()


def settings_differences(recorded, settings):
    """`[(name, recorded value, new value), ...]` of the settings that differ (sorted by name); a setting
    absent on one side counts as differing, its value there `ABSENT`.

    Examples:

    >>> settings_differences({"learning_rate": 1e-4, "seed": 1}, {"learning_rate": 5e-3, "seed": 1})
    [('learning_rate', 0.0001, 0.005)]
    """
    settings = {name: _comparable(name, value) for name, value in settings.items()}
    differences = []
    for name in sorted(set(recorded) | set(settings)):
        old, new = recorded.get(name, ABSENT), settings.get(name, ABSENT)
        if old != new:
            differences.append((name, old, new))
    return differences


def bind_run_settings(path, settings, bound, overwrite_flag="--overwrite_output_dir", flag="--output_dir"):
    """Refuses a run whose `settings` ({flag name without dashes: value}) differ from those recorded in the
    run directory `path`, when `bound` (the directory holds training state, e.g. a checkpoint).

    Raises:
        UserInputError: one line listing each differing setting as `--name recorded -> new`.

    Examples:

    >>> import tempfile
    >>> directory = tempfile.mkdtemp()
    >>> record_run_settings(directory, {"learning_rate": 1e-4, "train_batch_size": 16})
    >>> bind_run_settings(directory, {"learning_rate": 1e-4, "train_batch_size": 16}, bound=True)
    >>> bind_run_settings(directory, {"learning_rate": 1e-2, "train_batch_size": 4}, bound=True)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    keras_bert_impl.utils.errors.UserInputError: --output_dir ...: its run has other settings: --learning_rate 0.0001 -> 0.01, --train_batch_size 16 -> 4 (recorded in ...run_settings.json); rerun with the recorded values, use another --output_dir, or pass --overwrite_output_dir to start afresh
    """
    if not bound:
        return
    recorded = read_run_settings(path)
    if not recorded:
        return
    differences = settings_differences(recorded, settings)
    if differences:
        listed = ", ".join(f"--{name} {_shown(old)} -> {_shown(new)}" for name, old, new in differences)
        raise UserInputError(
            f"{flag} {path}: its run has other settings: {listed} (recorded in {os.path.join(path, SETTINGS_FILE)}); "
            f"rerun with the recorded values, use another {flag}, or pass {overwrite_flag} to start afresh")


def _shown(value):
    """A recorded value as the message shows it: strings quoted, numbers in full precision (JSON)."""
    return repr(value) if isinstance(value, (str, _Absent)) else json.dumps(value)


def record_run_settings(path, settings):
    """Writes `settings` as the run directory's record, `path/run_settings.json` (atomically)."""
    write_json(os.path.join(path, SETTINGS_FILE), {name: _comparable(name, v) for name, v in settings.items()})


def check_trained_labels(directory, state, labels):
    """Refuses (`UserInputError`, one line naming both sets) to resume from the checkpoints of `directory` when
    the labels recorded in their `state` (a dict; "labels" absent: not recorded) are not `labels`, those the
    data gives now (None: a head without labels).

    Examples:

    >>> check_trained_labels("run/checkpoints", {"labels": ["neg", "pos"]}, ["meh", "neg", "pos"])
    Traceback (most recent call last):
    keras_bert_impl.utils.errors.UserInputError: run/checkpoints: its checkpoints were trained on the labels ['neg', 'pos']; the data now gives ['meh', 'neg', 'pos'] (added 'meh'): rerun on the same labels, use another --output_dir, or pass --overwrite_output_dir to start afresh
    """
    if "labels" in state and state["labels"] != labels:
        raise UserInputError(f"{directory}: its checkpoints were trained on the labels {labels_text(state['labels'])}; "
                             f"the data now gives {labels_text(labels, state['labels'])}: rerun on the same labels, "
                             "use another --output_dir, or pass --overwrite_output_dir to start afresh")


def labels_text(labels, before=None):
    """A label set as an error shows it: the list, "none (a head without labels)", and, given the set
    `before`, what was added and removed.

    Examples:

    >>> labels_text(["a", "b", "c"], ["a", "b"])
    "['a', 'b', 'c'] (added 'c')"
    >>> labels_text(None)
    'none (a regression, or a head without labels)'
    """
    if labels is None:
        return "none (a regression, or a head without labels)"
    text = str(list(labels))
    if before:
        added = [repr(label) for label in labels if label not in before]
        removed = [repr(label) for label in before if label not in labels]
        changes = ([f"added {', '.join(added)}"] if added else []) + ([f"removed {', '.join(removed)}"] if removed
                                                                       else [])
        text += f" ({'; '.join(changes) or 'the same labels in another order'})"
    return text


def print_outputs(output_dir, since, descriptions):
    """Logs what the run wrote into `output_dir` (the entries changed since the time `since`), a line each: the
    disk each takes, all of them together, and each one's description (`descriptions`: {name: text}, `{path}` in
    a text the entry's path); returns the names."""
    if not os.path.isdir(output_dir):
        return []

    def newest(path):  # lstat: a link's own time (a worker's links to the chief's files may dangle by now)
        if not os.path.isdir(path):
            return os.lstat(path).st_mtime
        times = [os.lstat(os.path.join(root, name)).st_mtime for root, _, names in os.walk(path) for name in names]
        return max(times, default=os.lstat(path).st_mtime)

    written = sorted(name for name in os.listdir(output_dir)
                     if not name.startswith(".") and newest(os.path.join(output_dir, name)) >= since)
    if written:
        logger.info(f"wrote to {output_dir}:")
        width = max(len(name) for name in written) + 2
        sizes = {name: disk_usage(os.path.join(output_dir, name)) for name in written}
        for name in written:
            path = os.path.join(output_dir, name)
            shown = name + ("/" if os.path.isdir(path) else "")
            description = descriptions.get(name, "").format(path=path)
            logger.info(f"  {shown:<{width}}{size_text(sizes[name]):>9}  {description}".rstrip())
        logger.info(f"  {'in all':<{width}}{size_text(sum(sizes.values())):>9}")
    return written


def path_settings(settings):
    """{name: path} of the settings ({name: value}) that name files a run reads: those whose names end in
    `_file`, `_dir`, `_checkpoint` or `labels` (but output_dir), each comma-separated part of a value.

    Examples:

    >>> path_settings({"init_checkpoint": "run/model", "learning_rate": 1e-4, "output_dir": "run",
    ...                "input_file": "a.tfrecord,b.tfrecord"})
    {'init_checkpoint': ['run/model'], 'input_file': ['a.tfrecord', 'b.tfrecord']}
    """
    return {name: [part for part in value.split(",") if part] for name, value in settings.items()
            if name.endswith(_PATH_SUFFIXES) and name != "output_dir" and isinstance(value, str) and value}


def remove_run_outputs(path, names, settings=None, flag="--output_dir", overwrite_flag="--overwrite_output_dir"):
    """Removes the entries `names` of the directory `path` (files or directories) that exist, and the
    settings record; returns the names removed. Nothing else in `path` is touched.

    Raises:
        UserInputError: a file the run reads (`path_settings(settings)`: its flag and path) is an entry to
            remove or lies inside one; one line naming both flags, and nothing is removed.

    Examples:

    >>> import tempfile
    >>> directory = tempfile.mkdtemp()
    >>> for name in ("train_log.jsonl", "notes.txt"):
    ...     open(os.path.join(directory, name), "w").close()
    >>> os.mkdir(os.path.join(directory, "checkpoints"))
    >>> remove_run_outputs(directory, ["checkpoints", "train_log.jsonl", "model"])
    ['checkpoints', 'train_log.jsonl']
    >>> sorted(os.listdir(directory))
    ['notes.txt']
    """
    targets = [name for name in list(names) + [SETTINGS_FILE] if os.path.lexists(os.path.join(path, name))]
    for setting, values in path_settings(settings or {}).items():
        for value in values:
            inside = next((name for name in targets if is_within(value, os.path.join(path, name))), None)
            if inside is not None:
                raise UserInputError(
                    f"{overwrite_flag} would remove {os.path.join(path, inside)}, which holds --{setting} {value}: "
                    f"copy it out of {flag} {path} first, or use another {flag}")
    removed = []
    for name in targets:
        target = os.path.join(path, name)
        if os.path.isdir(target) and not os.path.islink(target):
            shutil.rmtree(target)
        elif os.path.lexists(target):
            os.remove(target)
        else:
            continue
        removed.append(name)
    return removed
