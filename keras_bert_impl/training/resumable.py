"""Resumable pretraining under `model.fit`: periodic atomic checkpoints, automatic resume, logs.

The TF1 Estimator of google-research/bert's `run_pretraining.py` saved a checkpoint every
`save_checkpoints_steps` steps into `output_dir`, kept the last 5, and, when the same command ran again
after an interruption, restored the latest one and trained on to the same `num_train_steps`. This
module does the same on every Keras backend:

* `CheckpointCallback` writes `ckpt-<step>.weights.h5` (model weights + optimizer state, including
  `optimizer.iterations`, which is the step, + every random state training consumes: the dropout
  layers' `SeedGenerator` states, Keras' global seed generator and, on torch, torch's generators, which
  its unseeded dropout draws from) every `save_every_steps` optimizer steps, with its sha256 in
  `ckpt-<step>.weights.h5.sha256` (`sha256sum -c` format). The file is built in memory, then written
  under a temporary name and renamed with `os.replace`, so a process killed mid-write (even with
  SIGKILL) leaves at most a `.tmp-*` file that is never taken for a checkpoint, and a full disk raises
  an `OSError` naming the file before h5py ever sees a failing file (h5py segfaults on one).
  A model with a non-finite variable is refused (`TrainingDivergedError`), so a diverged state is
  never the newest checkpoint.
* `restore_latest_checkpoint` loads the newest checkpoint whose sha256 matches and that reads
  (falling back to older ones, with a warning naming the skipped file), restores the random states,
  and returns its step.
* `run_training` ties these to `model.fit`: it restores, then fits the remaining steps, so the
  total number of optimizer steps equals `num_train_steps` however often the run is interrupted.
  A `tf.data.Dataset` input is fast-forwarded past the `initial_step` batches the restored steps
  consumed (`dataset.skip`), so with a seeded dataset, a seeded model (`keras.utils.set_random_seed`)
  and the random states of the checkpoint, a run interrupted any number of times ends bitwise
  identical to an uninterrupted one. A callable `dataset_fn(initial_step)` is called instead and
  positions the input itself (the Estimator's way: rebuild, e.g. with a shuffle seed offset by the
  step, which costs no reading but is not the uninterrupted run's order).
* `MetricsLogger` appends each loop's averaged metrics with the global step to a JSON-lines file and
  to TensorBoard scalars (tf.summary, readable by `tensorboard --logdir output_dir/logs`).

Why not `keras.callbacks.BackupAndRestore(save_freq=N)` (Keras 3.15): it restores model and optimizer
state, but (1) it restores only the epoch number, not the step inside the epoch, so a run interrupted at
step 7 of a 10-step epoch with `save_freq=3` resumes at step 6, runs the whole epoch again and ends at 16
optimizer steps instead of 10; (2) it writes `latest.weights.h5` in place and its metadata JSON
afterwards, so a kill during or between the two writes leaves a truncated file or weights that disagree
with the recorded epoch; (3) it keeps one (or two) backups and deletes them when `fit` ends.

Why not `keras.callbacks.TensorBoard` for the curves: it needs the `tensorboard` package (not a
dependency, and not installed with TensorFlow 2.21: `tf.summary.scalar` raises TBNotInstalledError
without it), and its batch-level step counter restarts from 0 at every `fit` call, so the curves of a
resumed run would overwrite the first run's. The scalars here are written with the low-level
`tf.summary.write` (plus the scalar plugin's metadata) at the global optimizer step; `tensorboard
--logdir output_dir/logs` shows them as usual.
"""

import errno
import hashlib
import io
import json
import math
import os
import re
import time
import warnings

import keras
import numpy as np
from keras.src.saving import saving_lib  # Keras 3.15's .weights.h5 writer, which can write into memory

from keras_bert_impl.utils import file_io
from keras_bert_impl.utils.errors import TrainingDivergedError, UserInputError

CHECKPOINT_SUBDIR = "checkpoints"
_CHECKPOINT_RE = re.compile(r"^ckpt-(\d+)\.weights\.h5$")
_TEMP_PREFIX = ".tmp-"
_CHECKSUM_SUFFIX = ".sha256"
_RANDOM_STATE_GROUP = "random_state"


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

    The step is `model.optimizer.iterations`. The `.weights.h5` file (Keras' layout, plus a
    `random_state` group: see `random_states`) is built in memory, its sha256 is written to
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
    data = _weights_h5_bytes(model, include_optimizer=True, random_state=random_states(model))
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
    >>> model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    >>> model.compile(optimizer="sgd", loss="mse")
    >>> _ = model.fit(np.ones((4, 2)), np.ones((4, 1)), batch_size=2, verbose=0)  # 2 optimizer steps
    >>> directory = tempfile.mkdtemp()
    >>> _ = save_checkpoint(model, directory)
    >>> restored = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    >>> restored.compile(optimizer="sgd", loss="mse")
    >>> restore_latest_checkpoint(restored, directory)
    2
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
                _restore_random_states(model, path)
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
    _write_file(path, _weights_h5_bytes(model, include_optimizer=False))


def load_model_weights(model, path):
    """Loads a `save_model_weights` file into `model`, leaving its optimizer's state as it is."""
    skipped = [model.optimizer] if getattr(model, "optimizer", None) is not None else None
    model.load_weights(path, objects_to_skip=skipped)


# ---------------------------------------------------------------------------------- random states
def _seed_generators(model):
    """The `keras.random.SeedGenerator`s of `model`'s layers (dropout's), in a fixed order."""
    generators, seen = [], set()
    for layer in model._flatten_layers(include_self=True, recursive=True):
        for generator in getattr(layer, "_seed_generators", []):
            if id(generator) not in seen:
                seen.add(id(generator))
                generators.append(generator)
    return generators


def random_states(model):
    """Every random state `fit` consumes, as `{name: numpy array}`.

    `seed_generator/<i>`: the state (seed, counter) of each `SeedGenerator` of the model's layers (the
    dropout masks on TensorFlow and JAX; `model.save_weights` leaves them out); `global_seed_generator`:
    Keras' global one (`keras.random.*` with `seed=None`); on torch, `torch_cpu` and `torch_cuda/<i>`:
    torch's generators, which Keras' unseeded torch dropout draws from. The input position is the step
    (see `run_training`).

    Examples:

    >>> model = keras.Sequential([keras.Input((2,)), keras.layers.Dropout(0.1), keras.layers.Dense(1)])
    >>> sorted(name for name in random_states(model) if name.startswith("seed_generator"))
    ['seed_generator/0']
    """
    from keras.src.backend.common import global_state

    states = {}
    for i, generator in enumerate(_seed_generators(model)):
        states[f"seed_generator/{i}"] = np.asarray(keras.ops.convert_to_numpy(generator.state.value))
    global_generator = global_state.get_global_attribute("global_seed_generator")
    if global_generator is not None:
        states["global_seed_generator"] = np.asarray(keras.ops.convert_to_numpy(global_generator.state.value))
    if keras.backend.backend() == "torch":
        import torch

        states["torch_cpu"] = torch.get_rng_state().numpy()
        if torch.cuda.is_available():
            for i, state in enumerate(torch.cuda.get_rng_state_all()):
                states[f"torch_cuda/{i}"] = state.cpu().numpy()
    return states


def _set_random_states(model, states):
    """Sets the random states `random_states(model)` returned (missing names are left as they are)."""
    from keras.src.random import seed_generator

    generators = _seed_generators(model)
    saved = sorted(name for name in states if name.startswith("seed_generator/"))
    if saved and len(saved) != len(generators):
        raise ValueError(f"the checkpoint holds {len(saved)} seed generator states; the model has {len(generators)}.")
    for i, generator in enumerate(generators):
        if f"seed_generator/{i}" in states:
            generator.state.assign(states[f"seed_generator/{i}"].astype(generator.state.dtype))
    if "global_seed_generator" in states:
        generator = seed_generator.global_seed_generator()
        generator.state.assign(states["global_seed_generator"].astype(generator.state.dtype))
    if keras.backend.backend() == "torch":
        import torch

        if "torch_cpu" in states:
            torch.set_rng_state(torch.from_numpy(states["torch_cpu"].copy()))
        cuda = sorted(name for name in states if name.startswith("torch_cuda/"))
        if cuda and torch.cuda.is_available() and len(cuda) == torch.cuda.device_count():
            torch.cuda.set_rng_state_all([torch.from_numpy(states[f"torch_cuda/{i}"].copy()) for i in range(len(cuda))])


class _TorchGeneratorsAtFirstStep(keras.callbacks.Callback):
    """Sets torch's global generators back to the restored states just before the first step of `fit`.

    On torch, `fit`'s setup before its first step (the symbolic build of the model on a batch) draws
    from torch's global generator, which Keras' unseeded torch dropout also draws from; an
    uninterrupted run drew it before step 0, a resumed one would draw it after the restore and shift
    every dropout mask after it. (On TensorFlow and JAX the dropout states are the SeedGenerators'
    variables, which nothing but the steps advance; nothing is done there.)"""

    def __init__(self, model):
        super().__init__()
        self._states = {name: value for name, value in random_states(model).items() if name.startswith("torch_")}
        self._pending = bool(self._states)

    def on_train_batch_begin(self, batch, logs=None):
        if self._pending:
            self._pending = False
            _set_random_states(self.model, self._states)


def _restore_random_states(model, path):
    import h5py

    with h5py.File(path, "r") as f:
        if _RANDOM_STATE_GROUP not in f:
            return
        states = {}
        f[_RANDOM_STATE_GROUP].visititems(
            lambda name, item: states.__setitem__(name, np.asarray(item)) if isinstance(item, h5py.Dataset) else None
        )
    _set_random_states(model, states)


# ----------------------------------------------------------------------------------- file writing
def _first_non_finite(variables):
    """The path of the first floating-point variable holding a NaN or infinity, or `None`."""
    for variable in variables:
        if "float" not in str(variable.dtype):
            continue
        value = np.asarray(keras.ops.convert_to_numpy(variable.value), dtype=np.float32)
        if not np.isfinite(value).all():
            return variable.path
    return None


class _MemoryH5Store(saving_lib.H5IOStore):
    """Keras 3.15's `.weights.h5` writer on an HDF5 file held in memory by HDF5's own "core" driver. Why
    not the `io.BytesIO` that `H5IOStore` accepts: h5py then reads and writes through Python callbacks,
    which corrupted the heap ("corrupted size vs. prev_size", SIGABRT) in a TensorFlow training process;
    the core driver keeps the file in C memory and hands back its image. (The `io.BytesIO` passed to the
    constructor only satisfies `H5IOStore`'s type check; nothing is written to it.)"""

    def _get_h5_file(self, path_or_io, mode=None):
        import h5py

        return h5py.File(f"memory-{id(self)}.h5", mode="w", driver="core", backing_store=False)


def _weights_h5_bytes(model, include_optimizer, random_state=None):
    """The bytes of the `.weights.h5` file `model.save_weights` writes (without the optimizer's variables
    unless `include_optimizer`), plus a `random_state` group holding `random_state` (a dict of arrays)."""
    store = _MemoryH5Store(io.BytesIO(), mode="w")
    skipped = set()
    if not include_optimizer and getattr(model, "optimizer", None) is not None:
        skipped.add(id(model.optimizer))
    try:
        saving_lib._save_state(model, weights_store=store, assets_store=None, inner_path="",
                               visited_saveables=skipped)
        for name, value in (random_state or {}).items():
            store.h5_file.create_dataset(f"{_RANDOM_STATE_GROUP}/{name}", data=value)
        store.h5_file.flush()
        return bytes(store.h5_file.id.get_file_image())
    finally:
        store.close()


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


def truncate_metrics_log(path, max_step):
    """Drops the records of a `MetricsLogger` file after optimizer step `max_step` (atomically), so that a
    run resumed from the checkpoint of `max_step` does not log the steps it repeats twice.

    Examples:

    >>> import tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "train_log.jsonl")
    >>> with open(path, "w") as f:
    ...     _ = f.write('{"step": 5}\\n{"step": 10}\\n')
    >>> truncate_metrics_log(path, 5)
    >>> read_metrics_log(path)
    [{'step': 5}]
    """
    records = read_metrics_log(path)
    kept = [record for record in records if record.get("step", 0) <= max_step]
    with open(path, encoding="utf-8") if os.path.exists(path) else open(os.devnull) as f:
        num_lines = sum(1 for line in f if line.strip())
    if len(kept) < num_lines:
        with file_io.atomic_open(path, "w") as f:
            f.writelines(json.dumps(record, sort_keys=True) + "\n" for record in kept)


# -------------------------------------------------------------------------------------- callbacks
class _StepCounter(keras.callbacks.Callback):
    """Counts optimizer steps from the batch indices `fit` reports, without touching model state.

    (Reading `self.model` on JAX forces a device-to-model state sync, so it is done only when needed.)
    """

    def __init__(self, initial_step):
        super().__init__()
        self.step = int(initial_step)
        self._epoch_start_step = self.step

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch_start_step = self.step

    def on_train_batch_end(self, batch, logs=None):
        # `batch` is the index of the last step run in this epoch (also with steps_per_execution > 1).
        self.step = self._epoch_start_step + int(batch) + 1


class CheckpointCallback(_StepCounter):
    """Saves an atomic checkpoint every `save_every_steps` optimizer steps and at the end of training.

    Args:
        directory: Checkpoint directory.
        save_every_steps: Optimizer steps between two checkpoints.
        initial_step: Step the model starts from (the restored step).
        keep_checkpoint_max: Number of newest checkpoints kept (5, as the Estimator).

    Examples:

    >>> import tempfile
    >>> import numpy as np
    >>> model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    >>> model.compile(optimizer="sgd", loss="mse")
    >>> directory = tempfile.mkdtemp()
    >>> callback = CheckpointCallback(directory, save_every_steps=2, initial_step=0)
    >>> _ = model.fit(np.ones((10, 2)), np.ones((10, 1)), batch_size=2, verbose=0, callbacks=[callback])
    >>> [step for step, _ in list_checkpoints(directory)]  # every 2 steps, and at the end
    [2, 4, 5]
    """

    def __init__(self, directory, save_every_steps, initial_step=0, keep_checkpoint_max=5):
        super().__init__(initial_step)
        if save_every_steps <= 0:
            raise ValueError(f"save_every_steps must be positive; got {save_every_steps}.")
        self.directory = directory
        self.save_every_steps = int(save_every_steps)
        self.keep_checkpoint_max = keep_checkpoint_max
        self.last_saved_step = int(initial_step)
        self.saved = []

    def _save(self):
        step, path = save_checkpoint(self.model, self.directory, self.keep_checkpoint_max)
        self.last_saved_step = step
        self.saved.append(step)

    def on_train_batch_end(self, batch, logs=None):
        super().on_train_batch_end(batch, logs)
        # A checkpoint due at the last step of an epoch (a loop) is saved at the epoch's end, after the
        # callbacks listed before this one (run_training's MetricsLogger) logged the epoch: a kill between
        # the two then leaves a log ahead of the newest checkpoint (truncated on resume), never behind it.
        last_of_epoch = self.params is not None and batch + 1 == self.params.get("steps")
        if self.step - self.last_saved_step >= self.save_every_steps and not last_of_epoch:
            self._save()

    def on_epoch_end(self, epoch, logs=None):
        if self.step - self.last_saved_step >= self.save_every_steps:
            self._save()

    def on_train_end(self, logs=None):
        if self.step > self.last_saved_step:
            self._save()


class StopAtStep(_StepCounter):
    """Stops `fit` once the optimizer has made `num_train_steps` steps in total.

    Args:
        num_train_steps: Total number of optimizer steps.
        initial_step: Step the model starts from.

    Examples:

    >>> stop = StopAtStep(num_train_steps=1000, initial_step=500)
    """

    def __init__(self, num_train_steps, initial_step=0):
        super().__init__(initial_step)
        self.num_train_steps = int(num_train_steps)

    def on_train_batch_end(self, batch, logs=None):
        super().on_train_batch_end(batch, logs)
        if self.step >= self.num_train_steps:
            self.model.stop_training = True


class MetricsLogger(_StepCounter):
    """Appends each epoch's (training loop's) averaged metrics, with the global step, to a JSON-lines
    file and writes them as TensorBoard scalars (`tf.summary`) at that step; optionally also the running
    averages every `log_every_steps` steps, to `steps_path` and as TensorBoard scalars `steps/<metric>`.

    Each line: `{"step": int, "epoch": int, "time": unix seconds, "<metric>": float, ...}` (in `steps_path`,
    `epoch` is the epoch in progress and the metrics are its averages so far). The files are appended to,
    so a resumed run continues the same curves.

    Args:
        path: The JSON-lines file.
        initial_step: Step the model starts from.
        tensorboard_dir: Directory for TensorBoard event files; `None` for none.
        steps_path: The JSON-lines file of the records every `log_every_steps` steps; `None` for none.
        log_every_steps: Optimizer steps between two of those records (0: none).

    Examples:

    >>> logger = MetricsLogger("out/train_log.jsonl", initial_step=0, tensorboard_dir="out/logs/train")
    """

    def __init__(self, path, initial_step=0, tensorboard_dir=None, steps_path=None, log_every_steps=0):
        super().__init__(initial_step)
        self.path = path
        self.tensorboard_dir = tensorboard_dir
        self.steps_path = steps_path
        self.log_every_steps = int(log_every_steps or 0)
        self._writer = None
        self._epoch = 0
        self._last_logged_step = int(initial_step)

    def on_train_begin(self, logs=None):
        os.makedirs(os.path.dirname(os.path.abspath(self.path)), exist_ok=True)
        if self.tensorboard_dir:
            import tensorflow as tf

            self._writer = tf.summary.create_file_writer(self.tensorboard_dir)

    def on_epoch_begin(self, epoch, logs=None):
        super().on_epoch_begin(epoch, logs)
        self._epoch = int(epoch)

    def on_train_batch_end(self, batch, logs=None):
        super().on_train_batch_end(batch, logs)
        # At every multiple of log_every_steps (or the first step past it, with steps_per_execution > 1).
        if (self.steps_path and self.log_every_steps
                and self.step // self.log_every_steps > self._last_logged_step // self.log_every_steps):
            self._last_logged_step = self.step
            self._write(self.steps_path, self._epoch, logs, tag_prefix="steps/")

    def on_epoch_end(self, epoch, logs=None):
        self._write(self.path, epoch, logs)

    def _write(self, path, epoch, logs, tag_prefix=""):
        record = {"step": self.step, "epoch": int(epoch) + 1, "time": round(time.time(), 3)}
        record.update({name: float(value) for name, value in (logs or {}).items()})
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps(record, sort_keys=True) + "\n")
        if self._writer is not None:
            import tensorflow as tf

            with self._writer.as_default():
                for name, value in record.items():
                    if name not in ("step", "epoch", "time"):
                        tf.summary.write(tag_prefix + name, tf.constant(value, tf.float32), step=self.step,
                                         metadata=_scalar_metadata())
            self._writer.flush()

    def on_train_end(self, logs=None):
        if self._writer is not None:
            self._writer.close()


def _scalar_metadata():
    """TensorBoard's scalar-plugin metadata: what `tf.summary.scalar` writes, without needing the
    `tensorboard` package (which `tf.summary.scalar` imports and TensorFlow does not install)."""
    from tensorflow.core.framework import summary_pb2

    return summary_pb2.SummaryMetadata(plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name="scalars"))


def read_metrics_log(path):
    """The records of a `MetricsLogger` file (a list of dicts; empty if the file does not exist).

    Args:
        path: The JSON-lines file.

    Examples:

    >>> read_metrics_log("/nonexistent.jsonl")
    []
    """
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as f:
        lines = [line for line in f if line.strip()]
    records = []
    for number, line in enumerate(lines, 1):
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            if number < len(lines):
                raise ValueError(f"{path}:{number}: not a JSON line") from None
            # The last line of a process killed while appending: left out (`truncate_metrics_log` drops it).
    return records


# ------------------------------------------------------------------------------------------ driver
def run_training(
    model,
    dataset,
    num_train_steps,
    output_dir,
    save_checkpoints_steps=1000,
    iterations_per_loop=None,
    keep_checkpoint_max=5,
    steps_per_execution=1,
    verbose="auto",
    callbacks=None,
    write_dir=None,
):
    """Trains `model` to `num_train_steps` optimizer steps in total, resuming from `output_dir`.

    Restores the latest checkpoint of `output_dir/checkpoints` (if any), then runs `model.fit` for the
    remaining steps with `steps_per_epoch=iterations_per_loop` (one "epoch" = one loop: the progress
    bar's unit and the averaging window of the logged metrics), `initial_epoch` set from the restored
    step, a `CheckpointCallback` every `save_checkpoints_steps` steps, a `StopAtStep` at
    `num_train_steps`, and a `MetricsLogger` writing `output_dir/train_log.jsonl` and TensorBoard
    scalars under `output_dir/logs/train`. Running it again after the run finished trains nothing.

    Args:
        model: A compiled model (`model.compile(optimizer=...)`); its `steps_per_execution` should be
            `steps_per_execution`.
        dataset: An endlessly repeating `tf.data.Dataset` of `(x, y)` batches, fast-forwarded past the
            `initial_step` batches already trained on (for an exact resume, seed its shuffles), or a
            callable `dataset_fn(initial_step)` returning one (not fast-forwarded), called after the
            restore.
        num_train_steps: Total optimizer steps of the run.
        output_dir: Run directory.
        save_checkpoints_steps: Optimizer steps between checkpoints.
        iterations_per_loop: Steps per `fit` epoch (at most `num_train_steps`); default
            `save_checkpoints_steps`. The progress bar shows loop `global_step // iterations_per_loop + 1`.
        keep_checkpoint_max: Newest checkpoints kept.
        steps_per_execution: The model's `steps_per_execution`; `num_train_steps`,
            `save_checkpoints_steps` and `iterations_per_loop` must be multiples of it, so that the
            run stops and saves at exact steps.
        verbose: `fit`'s verbosity (1 = progress bar, 2 = one line per loop).
        callbacks: Extra Keras callbacks.
        write_dir: Where the checkpoints, `train_log.jsonl` and TensorBoard logs are written; default
            `output_dir`. A non-chief worker passes its `Distribution.write_dir` (a temporary directory):
            it restores from the chief's `output_dir/checkpoints` and writes nothing there.

    Returns:
        A dict: `initial_step` (restored step), `global_step` (final step), `train_metrics` (the last
        logged loop's metrics, also from an earlier run if nothing was left to train), `history`
        (this call's per-loop metrics).

    Examples:

    >>> import tempfile
    >>> import numpy as np
    >>> model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    >>> model.compile(optimizer="sgd", loss="mse")
    >>> import tensorflow as tf
    >>> dataset = tf.data.Dataset.from_tensors((np.ones((4, 2), "float32"), np.ones((4, 1), "float32"))).repeat()
    >>> out = tempfile.mkdtemp()
    >>> result = run_training(model, dataset, 6, out, save_checkpoints_steps=3, verbose=0)
    >>> result["global_step"], [step for step, _ in list_checkpoints(os.path.join(out, "checkpoints"))]
    (6, [3, 6])
    >>> run_training(model, dataset, 6, out, save_checkpoints_steps=3, verbose=0)["history"]  # nothing left to train
    {}
    """
    # A loop longer than the run would show a progress bar target (e.g. 1000) the run never reaches.
    iterations_per_loop = min(int(iterations_per_loop or save_checkpoints_steps), num_train_steps)
    for name, value in (
        ("num_train_steps", num_train_steps),
        ("save_checkpoints_steps", save_checkpoints_steps),
        ("iterations_per_loop", iterations_per_loop),
    ):
        if value <= 0 or value % steps_per_execution:
            raise ValueError(f"{name}={value} must be a positive multiple of steps_per_execution={steps_per_execution}.")

    write_dir = output_dir if write_dir is None else write_dir
    checkpoint_dir = os.path.join(write_dir, CHECKPOINT_SUBDIR)
    log_path = os.path.join(write_dir, "train_log.jsonl")
    initial_step = restore_latest_checkpoint(model, os.path.join(output_dir, CHECKPOINT_SUBDIR))
    history = {}
    if initial_step < num_train_steps:
        # Records of steps after the restored checkpoint (a run killed after logging a loop but before
        # its checkpoint, or whose newest checkpoint was refused) are written again by this run.
        truncate_metrics_log(log_path, initial_step)
        if callable(dataset):
            dataset = dataset(initial_step)
        elif initial_step and hasattr(dataset, "skip"):
            # The restored steps consumed the first initial_step batches: continue where they stopped.
            dataset = dataset.skip(initial_step)
        # If initial_step is not a multiple of the loop (e.g. the flags changed), the loops are just
        # shifted; StopAtStep still ends the run at exactly num_train_steps.
        initial_epoch = initial_step // iterations_per_loop
        epochs = math.ceil(num_train_steps / iterations_per_loop)
        if initial_step and verbose != 0:
            # fit's progress bar counts loops ("Epoch k/epochs") and the steps inside the current loop.
            print(f"Resuming at step {initial_step} of {num_train_steps} (loop {initial_epoch + 1}/{epochs}, "
                  f"{iterations_per_loop} steps per loop).", flush=True)
        own_callbacks = [
            _TorchGeneratorsAtFirstStep(model) if initial_step else None,
            StopAtStep(num_train_steps, initial_step),
            # The logger before the checkpoints: a loop's log record is written before its checkpoint.
            MetricsLogger(log_path, initial_step, os.path.join(write_dir, "logs", "train")),
            CheckpointCallback(checkpoint_dir, save_checkpoints_steps, initial_step, keep_checkpoint_max),
        ]
        fit_history = model.fit(
            dataset,
            epochs=epochs,
            initial_epoch=initial_epoch,
            steps_per_epoch=iterations_per_loop,
            callbacks=[c for c in own_callbacks if c is not None] + list(callbacks or []),
            verbose=verbose,
        )
        history = fit_history.history
    global_step = int(keras.ops.convert_to_numpy(model.optimizer.iterations)) if model.optimizer.built else 0
    records = read_metrics_log(log_path)
    train_metrics = {}
    if records:
        train_metrics = {k: v for k, v in records[-1].items() if k not in ("epoch", "time")}
    return {"initial_step": initial_step, "global_step": global_step, "train_metrics": train_metrics, "history": history}


def evaluate(model, dataset, max_eval_steps=None):
    """Evaluates `model` on `dataset` (at most `max_eval_steps` batches); returns a dict of floats.

    Args:
        model: A compiled model.
        dataset: A finite `tf.data.Dataset` of `(x, y)`.
        max_eval_steps: Batches to evaluate at most (100 in the original); `None` for all.

    Examples:

    >>> import numpy as np
    >>> import tensorflow as tf
    >>> model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1, kernel_initializer="zeros")])
    >>> model.compile(loss="mse")
    >>> eval_dataset = tf.data.Dataset.from_tensor_slices((np.ones((8, 2), "float32"), np.ones((8, 1), "float32")))
    >>> evaluate(model, eval_dataset.batch(2), max_eval_steps=3)
    {'loss': 1.0}
    """
    if max_eval_steps:
        dataset = dataset.take(max_eval_steps)
    # The number of batches is passed explicitly, so that every backend evaluates exactly these batches:
    # with `steps=None` the TensorFlow backend runs one extra step on the exhausted iterator (Keras 3.15).
    num_batches = sum(1 for _ in dataset)
    results = model.evaluate(dataset, steps=num_batches, return_dict=True, verbose=0)
    return {name: float(value) for name, value in results.items()}
