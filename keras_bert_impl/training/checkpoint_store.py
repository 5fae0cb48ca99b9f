"""Atomic, sha256-checked step checkpoints of a model under training, and its weights alone.

A checkpoint `ckpt-<step>.weights.h5` holds what training needs to go on exactly where it stopped: the
model's weights, the optimizer's state (including `optimizer.iterations`, which is the step) and every random
state training consumes (`training/random_state.py`), with its sha256 in `ckpt-<step>.weights.h5.sha256`
(`sha256sum -c` format). The file is built in memory, then written under a temporary name and renamed with
`os.replace`, so a process killed mid-write (even with SIGKILL) leaves at most a `.tmp-*` file that is never
taken for a checkpoint, and a full disk raises an `OSError` naming the file before h5py ever sees a failing
file (h5py segfaults on one). A model with a non-finite variable is refused (`TrainingDivergedError`), so a
diverged state is never the newest checkpoint. `restore_latest_checkpoint` loads the newest checkpoint whose
sha256 matches and that reads, falling back to older ones with a warning naming the skipped file.

The training driver (`training/resumable.py`) writes and restores the checkpoints of pretraining and of
fine-tuning (`training/epoch_schedule.py`) here; `save_model_weights` writes a best-epoch or final model's
weights without the optimizer's slots.

Why not `keras.callbacks.BackupAndRestore(save_freq=N)` (Keras 3.15): it restores model and optimizer state,
but (1) it restores only the epoch number, not the step inside the epoch, so a run interrupted at step 7 of a
10-step epoch with `save_freq=3` resumes at step 6, runs the whole epoch again and ends at 16 optimizer steps
instead of 10; (2) it writes `latest.weights.h5` in place and its metadata JSON afterwards, so a kill during
or between the two writes leaves a truncated file or weights that disagree with the recorded epoch; (3) it
keeps one (or two) backups and deletes them when `fit` ends.
"""

import errno
import hashlib
import os
import re
import warnings

import keras
import numpy as np

from keras_bert_impl.training import random_state
from keras_bert_impl.utils import file_io, keras_compat
from keras_bert_impl.utils.errors import TrainingDivergedError, UserInputError

CHECKPOINT_SUBDIR = "checkpoints"
_CHECKPOINT_RE = re.compile(r"^ckpt-(\d+)\.weights\.h5$")
_TEMP_PREFIX = ".tmp-"
_CHECKSUM_SUFFIX = ".sha256"


def checkpoint_path(directory, step):
    """The file name of the checkpoint of optimizer step `step` in `directory`.

    Args:
        directory: Checkpoint directory.
        step: Optimizer step (`optimizer.iterations`) the checkpoint holds.

    Examples:

    >>> checkpoint_path("out/checkpoints", 1000)
    'out/checkpoints/ckpt-00001000.weights.h5'
    """
    return os.path.join(directory, f"ckpt-{int(step):08d}.weights.h5")


def list_checkpoints(directory):
    """Complete checkpoints in `directory` as `[(step, path), ...]`, oldest first.

    Only final names (`ckpt-<step>.weights.h5`) count; temporary files of an interrupted write are ignored.

    Args:
        directory: Checkpoint directory (may not exist).

    Returns:
        A list of `(step, path)` sorted by step.

    Examples:

    >>> list_checkpoints("/nonexistent")
    []
    """
    if not os.path.isdir(directory):
        return []
    found = []
    for name in os.listdir(directory):
        match = _CHECKPOINT_RE.match(name)
        if match and os.path.isfile(os.path.join(directory, name)):
            found.append((int(match.group(1)), os.path.join(directory, name)))
    return sorted(found)


def save_checkpoint(model, directory, keep_checkpoint_max=5):
    """Atomically writes the model's weights, optimizer state and random states; returns `(step, path)`.

    The step is `model.optimizer.iterations`. The `.weights.h5` file (Keras' layout, plus the random states
    of `random_state.random_state_datasets`) is built in memory, its sha256 is written to
    `<path>.sha256`, then the file is written as `.tmp-*`, flushed to disk and renamed to
    `ckpt-<step>.weights.h5`; older checkpoints beyond `keep_checkpoint_max` are deleted afterwards.

    Args:
        model: A compiled Keras model whose optimizer is built.
        directory: Checkpoint directory (created if needed).
        keep_checkpoint_max: Number of newest checkpoints kept; `None` or 0 keeps all.

    Returns:
        `(step, path)` of the new checkpoint.

    Raises:
        TrainingDivergedError: A variable of the model or optimizer is not finite (nothing is written).
        OSError: The disk is full (or read-only); the message names the file, the newest checkpoint
            stays the previous one.

    Examples:

    >>> import tempfile
    >>> model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    >>> model.compile(optimizer="sgd", loss="mse")
    >>> _ = model.fit(np.ones((4, 2)), np.ones((4, 1)), batch_size=2, verbose=0)  # 2 optimizer steps
    >>> directory = tempfile.mkdtemp()
    >>> step, path = save_checkpoint(model, directory)
    >>> step, os.path.basename(path), sorted(os.listdir(directory))
    (2, 'ckpt-00000002.weights.h5', ['ckpt-00000002.weights.h5', 'ckpt-00000002.weights.h5.sha256'])
    """
    os.makedirs(directory, exist_ok=True)
    step = int(keras.ops.convert_to_numpy(model.optimizer.iterations))
    final = checkpoint_path(directory, step)
    bad = _first_non_finite(list(model.variables) + list(model.optimizer.variables))
    if bad is not None:
        newest = list_checkpoints(directory)
        newest = f"the newest checkpoint is {newest[-1][1]}" if newest else "there is no checkpoint yet"
        raise TrainingDivergedError(f"step {step}: variable {bad} is not finite; not saving {final} ({newest}).")
    data = keras_compat.weights_h5_bytes(model, extra_datasets=random_state.random_state_datasets(model))
    checksum_path = final + _CHECKSUM_SUFFIX
    digest = hashlib.sha256(data).hexdigest()
    try:
        # The checksum first: a checkpoint under its final name always has one.
        _write_file(checksum_path, f"{digest}  {os.path.basename(final)}\n".encode())
        _write_file(final, data)
    except OSError:
        if not os.path.exists(final) and os.path.exists(checksum_path):
            os.remove(checksum_path)
        raise
    if keep_checkpoint_max:
        for _, old in list_checkpoints(directory)[:-keep_checkpoint_max]:
            os.remove(old)
            if os.path.exists(old + _CHECKSUM_SUFFIX):
                os.remove(old + _CHECKSUM_SUFFIX)
    return step, final


def verify_checkpoint(path):
    """Why the checkpoint `path` cannot be trusted (a one-line reason), or `None` if its sha256 matches.

    The expected digest is the first field of `<path>.sha256`. A checkpoint without that file (written
    before checksums existed) is not refused: `None` is returned and a warning names it.

    Examples:

    >>> import tempfile
    >>> model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    >>> model.compile(optimizer="sgd", loss="mse")
    >>> model.optimizer.build(model.trainable_variables)
    >>> _, path = save_checkpoint(model, tempfile.mkdtemp())
    >>> verify_checkpoint(path) is None
    True
    >>> with open(path, "r+b") as f:
    ...     _ = f.seek(-8, os.SEEK_END)
    ...     _ = f.write(b"garbage!")
    >>> verify_checkpoint(path)
    'its sha256 does not match ckpt-00000000.weights.h5.sha256 (the file changed after it was written)'
    """
    checksum_path = path + _CHECKSUM_SUFFIX
    if not os.path.exists(checksum_path):
        warnings.warn(f"{path} has no {os.path.basename(checksum_path)}; loading it unverified.", stacklevel=2)
        return None
    with open(checksum_path, encoding="utf-8", errors="replace") as f:
        fields = f.read().split()
    if not fields:
        return f"{os.path.basename(checksum_path)} is empty"
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    if digest.hexdigest() != fields[0].lower():
        return f"its sha256 does not match {os.path.basename(checksum_path)} (the file changed after it was written)"
    return None


def restore_latest_checkpoint(model, directory):
    """Loads the newest verified checkpoint of `directory` into `model` (weights, optimizer, random states).

    Leftover temporary files of an interrupted write are deleted. A checkpoint whose sha256 does not
    match its `.sha256` file, or that cannot be read, is skipped with one warning naming it, and the
    previous one is tried.

    Args:
        model: The compiled model the checkpoints were written from (same architecture and optimizer).
        directory: Checkpoint directory.

    Returns:
        The restored step (`model.optimizer.iterations`), 0 when there is no checkpoint.

    Raises:
        UserInputError: There are checkpoints but none verifies and reads (the message names the
            directory and each file's reason).

    Examples:

    >>> import tempfile
    >>> def compiled_model():
    ...     model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    ...     model.compile(optimizer="sgd", loss="mse")
    ...     return model
    >>> trained, directory = compiled_model(), tempfile.mkdtemp()
    >>> _ = trained.fit(np.ones((6, 2)), np.ones((6, 1)), batch_size=2, verbose=0)  # 3 optimizer steps
    >>> _ = save_checkpoint(trained, directory)
    >>> restore_latest_checkpoint(compiled_model(), directory)
    3
    """
    if os.path.isdir(directory):
        for name in os.listdir(directory):
            if name.startswith(_TEMP_PREFIX):
                os.remove(os.path.join(directory, name))
    checkpoints = list_checkpoints(directory)
    if not checkpoints:
        return 0
    if not model.optimizer.built:
        # The optimizer's variables must exist before their saved values can be loaded.
        model.optimizer.build(model.trainable_variables)
    errors = []
    for step, path in reversed(checkpoints):
        reason = verify_checkpoint(path)
        if reason is None:
            try:
                model.load_weights(path)
                random_state.restore_random_states(model, path)
            except Exception as error:  # noqa: BLE001  (a truncated or unreadable file: the previous one)
                reason = f"cannot be read ({type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''})"
        if reason is not None:
            errors.append(f"{os.path.basename(path)}: {reason}")
            warnings.warn(f"Skipping checkpoint {path}: {reason}; trying the previous one.", stacklevel=2)
            continue
        restored = int(keras.ops.convert_to_numpy(model.optimizer.iterations))
        if restored != step:
            raise ValueError(f"{path} holds optimizer.iterations={restored}, not the step {step} of its name.")
        return step
    raise UserInputError(
        f"{directory}: none of its {len(checkpoints)} checkpoints can be trusted ({'; '.join(errors)}); "
        "remove them to start over."
    )


def save_model_weights(model, path):
    """Atomically writes the model's weights, without the optimizer's slots, as a `.weights.h5` file.

    `model.save_weights` on a compiled model also stores the optimizer's variables (AdamW's two moments
    triple the file); this writes the layers' weights only, which is what a best-epoch or final
    checkpoint needs. `load_model_weights` (or `model.load_weights`, which then warns that it skips the
    optimizer) reads it back. The file is built in memory and then written, so a full disk raises an
    `OSError` naming `path` (never reaching h5py, which segfaults on a failing file).

    Args:
        model: A built Keras model, compiled or not.
        path: The file to write (any name).

    Raises:
        TrainingDivergedError: A weight is not finite (nothing is written).
        OSError: The disk is full (or read-only); the message names `path`.

    Examples:

    >>> import tempfile
    >>> import h5py
    >>> model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    >>> model.compile(optimizer="adam", loss="mse")
    >>> _ = model.fit(np.ones((4, 2)), np.ones((4, 1)), verbose=0)
    >>> path = os.path.join(tempfile.mkdtemp(), "best.weights.h5")
    >>> save_model_weights(model, path)
    >>> with h5py.File(path) as f:
    ...     "optimizer" in f, "layers" in f
    (False, True)
    >>> load_model_weights(model, path)
    """
    bad = _first_non_finite(model.variables)
    if bad is not None:
        raise TrainingDivergedError(f"variable {bad} is not finite; not saving {path}.")
    optimizer = getattr(model, "optimizer", None)
    _write_file(path, keras_compat.weights_h5_bytes(model, skipped=[] if optimizer is None else [optimizer]))


def load_model_weights(model, path):
    """Loads a `save_model_weights` file into `model`, leaving its optimizer's state as it is."""
    skipped = [model.optimizer] if getattr(model, "optimizer", None) is not None else None
    model.load_weights(path, objects_to_skip=skipped)


def _first_non_finite(variables):
    """The path of the first floating-point variable holding a NaN or infinity, or `None`."""
    for variable in variables:
        if "float" not in str(variable.dtype):
            continue
        value = np.asarray(keras.ops.convert_to_numpy(variable.value), dtype=np.float32)
        if not np.isfinite(value).all():
            return variable.path
    return None



def _write_file(path, data):
    """Writes `data` (bytes) to `path` atomically (see `file_io.atomic_path`), flushed to disk.

    An `OSError` (full or read-only disk) is raised again naming `path`; no partial file is left.
    """
    try:
        with file_io.atomic_path(path) as tmp:
            with open(tmp, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
    except OSError as error:
        reason = os.strerror(error.errno) if error.errno else str(error)
        if error.errno == errno.ENOSPC:
            reason = "no space left on device"
        raise OSError(error.errno, f"{reason} while writing {path}") from error
