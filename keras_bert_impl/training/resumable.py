"""Resumable pretraining under `model.fit`: periodic atomic checkpoints, automatic resume, logs.

The TF1 Estimator of google-research/bert's `run_pretraining.py` saved a checkpoint every
`save_checkpoints_steps` steps into `output_dir`, kept the last 5, and, when the same command ran again
after an interruption, restored the latest one and trained on to the same `num_train_steps`. This
module does the same on every Keras backend:

* `CheckpointCallback` writes `ckpt-<step>.weights.h5` (model weights + optimizer state, including
  `optimizer.iterations`, which is the step) every `save_every_steps` optimizer steps. The file is
  written under a temporary name and renamed with `os.replace`, so a process killed mid-write (even
  with SIGKILL) leaves at most a `.tmp-*` file that is never taken for a checkpoint.
* `restore_latest_checkpoint` loads the newest complete checkpoint (falling back to older ones if
  it cannot be read) and returns its step.
* `run_training` ties these to `model.fit`: it restores, then fits the remaining steps, so the
  total number of optimizer steps equals `num_train_steps` however often the run is interrupted.
  As in the Estimator, the input pipeline is NOT fast-forwarded on resume: it is simply rebuilt
  (pass a `dataset_fn(initial_step)` to vary its shuffle seed with the step, as `recipes/pretrain.py`
  does, so a resumed run does not replay the same batch order).
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

import json
import math
import os
import re
import time
import warnings

import keras

from keras_bert_impl.utils import file_io

CHECKPOINT_SUBDIR = "checkpoints"
_CHECKPOINT_RE = re.compile(r"^ckpt-(\d+)\.weights\.h5$")
_TEMP_PREFIX = ".tmp-"


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
    """Atomically writes the model's weights and optimizer state; returns `(step, path)`.

    The step is `model.optimizer.iterations`. The file is written as `.tmp-ckpt-*.weights.h5`, flushed
    to disk, then renamed to `ckpt-<step>.weights.h5`; older checkpoints beyond `keep_checkpoint_max`
    are deleted afterwards.

    Args:
        model: A compiled Keras model whose optimizer is built.
        directory: Checkpoint directory (created if needed).
        keep_checkpoint_max: Number of newest checkpoints kept; `None` or 0 keeps all.

    Returns:
        `(step, path)` of the new checkpoint.

    Examples:

    >>> import tempfile
    >>> import numpy as np
    >>> model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    >>> model.compile(optimizer="sgd", loss="mse")
    >>> _ = model.fit(np.ones((4, 2)), np.ones((4, 1)), batch_size=2, verbose=0)  # 2 optimizer steps
    >>> step, path = save_checkpoint(model, tempfile.mkdtemp())
    >>> step, os.path.basename(path)
    (2, 'ckpt-00000002.weights.h5')
    """
    os.makedirs(directory, exist_ok=True)
    step = int(keras.ops.convert_to_numpy(model.optimizer.iterations))
    final = checkpoint_path(directory, step)
    with file_io.atomic_path(final) as tmp:
        model.save_weights(tmp + ".weights.h5")  # Keras insists on the suffix
        os.replace(tmp + ".weights.h5", tmp)
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
    if keep_checkpoint_max:
        for _, old in list_checkpoints(directory)[:-keep_checkpoint_max]:
            os.remove(old)
    return step, final


def restore_latest_checkpoint(model, directory):
    """Loads the newest readable checkpoint of `directory` into `model` (weights + optimizer state).

    Leftover temporary files of an interrupted write are deleted. If the newest checkpoint cannot be
    read, older ones are tried (with a warning).

    Args:
        model: The compiled model the checkpoints were written from (same architecture and optimizer).
        directory: Checkpoint directory.

    Returns:
        The restored step (`model.optimizer.iterations`), 0 when there is no checkpoint.

    Examples:

    >>> import tempfile
    >>> import numpy as np
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
        try:
            model.load_weights(path)
        except Exception as error:  # a truncated or corrupt file: fall back to the previous one
            errors.append(f"{path}: {error}")
            warnings.warn(f"Could not read checkpoint {path} ({error}); trying an older one.", stacklevel=2)
            continue
        restored = int(keras.ops.convert_to_numpy(model.optimizer.iterations))
        if restored != step:
            raise ValueError(f"{path} holds optimizer.iterations={restored}, not the step {step} of its name.")
        return step
    raise OSError("No checkpoint could be read:\n" + "\n".join(errors))


def save_model_weights(model, path):
    """Atomically writes the model's weights, without the optimizer's slots, as a `.weights.h5` file.

    `model.save_weights` on a compiled model also stores the optimizer's variables (AdamW's two moments
    triple the file); this writes the layers' weights only, which is what a best-epoch or final
    checkpoint needs. `load_model_weights` (or `model.load_weights`, which then warns that it skips the
    optimizer) reads it back.

    Args:
        model: A built Keras model, compiled or not.
        path: The file to write (any name; the temporary file gets Keras' `.weights.h5` suffix).

    Examples:

    >>> import tempfile
    >>> import h5py
    >>> import numpy as np
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
    from keras.src.saving import saving_lib  # Keras 3.15's writer, which can leave objects out

    skipped = [model.optimizer] if getattr(model, "optimizer", None) is not None else None
    with file_io.atomic_path(path) as tmp:
        saving_lib.save_weights_only(model, tmp + ".weights.h5", objects_to_skip=skipped)
        os.replace(tmp + ".weights.h5", tmp)


def load_model_weights(model, path):
    """Loads a `save_model_weights` file into `model`, leaving its optimizer's state as it is."""
    skipped = [model.optimizer] if getattr(model, "optimizer", None) is not None else None
    model.load_weights(path, objects_to_skip=skipped)


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
        dataset: An endlessly repeating `tf.data.Dataset` (or any `fit` input) of `(x, y)`, or a
            callable `dataset_fn(initial_step)` returning one, called after the restore.
        num_train_steps: Total optimizer steps of the run.
        output_dir: Run directory.
        save_checkpoints_steps: Optimizer steps between checkpoints.
        iterations_per_loop: Steps per `fit` epoch; default `min(save_checkpoints_steps, num_train_steps)`.
        keep_checkpoint_max: Newest checkpoints kept.
        steps_per_execution: The model's `steps_per_execution`; `num_train_steps`,
            `save_checkpoints_steps` and `iterations_per_loop` must be multiples of it, so that the
            run stops and saves at exact steps.
        verbose: `fit`'s verbosity (1 = progress bar, 2 = one line per loop).
        callbacks: Extra Keras callbacks.

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
    iterations_per_loop = int(iterations_per_loop or min(save_checkpoints_steps, num_train_steps))
    for name, value in (
        ("num_train_steps", num_train_steps),
        ("save_checkpoints_steps", save_checkpoints_steps),
        ("iterations_per_loop", iterations_per_loop),
    ):
        if value <= 0 or value % steps_per_execution:
            raise ValueError(f"{name}={value} must be a positive multiple of steps_per_execution={steps_per_execution}.")

    checkpoint_dir = os.path.join(output_dir, CHECKPOINT_SUBDIR)
    log_path = os.path.join(output_dir, "train_log.jsonl")
    initial_step = restore_latest_checkpoint(model, checkpoint_dir)
    history = {}
    if initial_step < num_train_steps:
        if callable(dataset):
            dataset = dataset(initial_step)
        # If initial_step is not a multiple of the loop (e.g. the flags changed), the loops are just
        # shifted; StopAtStep still ends the run at exactly num_train_steps.
        initial_epoch = initial_step // iterations_per_loop
        epochs = math.ceil(num_train_steps / iterations_per_loop)
        own_callbacks = [
            StopAtStep(num_train_steps, initial_step),
            CheckpointCallback(checkpoint_dir, save_checkpoints_steps, initial_step, keep_checkpoint_max),
            MetricsLogger(log_path, initial_step, os.path.join(output_dir, "logs", "train")),
        ]
        fit_history = model.fit(
            dataset,
            epochs=epochs,
            initial_epoch=initial_epoch,
            steps_per_epoch=iterations_per_loop,
            callbacks=own_callbacks + list(callbacks or []),
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
