"""The one resumable training driver: `run_training(model, dataset, schedule, output_dir)` trains under
`model.fit` so that a run interrupted any number of times (a crash, even kill -9; Ctrl-C; SIGTERM) and
started again ends as the uninterrupted run; both pretraining and fine-tuning run through it.

What it does, whatever the schedule: restores the newest verified checkpoint of `output_dir/checkpoints`
(`training/checkpoint_store.py`: weights, optimizer state with the step, random states), drops the log
records after its step, then fits the rest with these callbacks, in this order: a `DivergenceGuard` (a
non-finite or 100-fold grown loss stops the run before anything of that step is logged or saved), the
schedule's own, the caller's, a `MetricsLogger` (`train_log.jsonl` per loop or epoch, `train_steps_log.jsonl`
every `log_every_steps` steps, TensorBoard scalars under `logs/train`, all at the global optimizer step), the
schedule's checkpoints, and last a `StopOnSignal` (Ctrl-C or SIGTERM stops the run after the current step,
raising `utils.errors.RunInterrupted` whose message says where the same command resumes: exit status 130 or
143 through `runners.cli.run_main`). An out-of-memory error is explained in one line naming the batch, and a
model whose weights end non-finite is refused (`TrainingDivergedError`) before anything is saved from it.
Under gradient accumulation (the optimizer's `gradient_accumulation_steps` N) every step is an optimizer
update of N batches.

The schedule says where a run stands and how it goes on:

- `StepSchedule` (pretraining, what the TF1 Estimator of google-research/bert's `run_pretraining.py` did): a
  total of `num_train_steps` optimizer steps, in loops of `iterations_per_loop` steps (a `fit` epoch: the
  progress bar's unit and the window of the logged metrics), a checkpoint every `save_checkpoints_steps`
  steps (the newest `keep_checkpoint_max` kept) and one at the step a signal stopped the run. A
  `tf.data.Dataset` input is fast-forwarded past the batches the restored steps consumed (`dataset.skip`), so
  with a seeded dataset and a seeded model a resumed run is bitwise the uninterrupted one; a callable
  `dataset_fn(initial_step)` positions the input itself.
- `training.epoch_schedule.EpochSchedule` (fine-tuning): `epochs` passes over the data, a checkpoint at every
  epoch's end with the best dev epoch so far (`BestCheckpoint`), every epoch's batches seeded with its seed +
  epoch; a run resumes at the start of the epoch after its newest checkpoint (`dataset_fn(initial_epoch)`).

Running it again after the run finished trains nothing. Its output files are `TRAIN_LOG`, `STEPS_LOG`,
`TENSORBOARD_DIR` and the checkpoints in `write_dir` (default `output_dir`; a multi-worker job's other
workers write a temporary directory and restore from the chief's `output_dir`).
"""

import contextlib
import itertools
import logging
import math
import os
import types
from typing import NamedTuple

import keras

from keras_bert_impl.training import checkpoint_store, divergence, run_directory
from keras_bert_impl.training.checkpoint_store import CHECKPOINT_SUBDIR
from keras_bert_impl.training.interrupts import StopOnSignal
from keras_bert_impl.training.metrics_log import MetricsLogger, read_metrics_log, truncate_metrics_log
from keras_bert_impl.training.out_of_memory import explain_out_of_memory
from keras_bert_impl.training.random_state import BackendGeneratorsAtFirstStep
from keras_bert_impl.training.step_callbacks import CheckpointCallback, StopAtStep
from keras_bert_impl.utils.progress import FitProgress

logger = logging.getLogger(__name__)

TRAIN_LOG = "train_log.jsonl"
STEPS_LOG = "train_steps_log.jsonl"
TENSORBOARD_DIR = "logs"


class Start(NamedTuple):
    """Where a (resumed) run starts: the optimizer `step`, the `fit` `epoch` (a loop or a data epoch) and the
    `batches` trained before it."""

    step: int
    epoch: int
    batches: int


class StepSchedule:
    """Training to `num_train_steps` optimizer steps in total, a checkpoint every `save_checkpoints_steps`
    (see the module docstring).

    Args:
        num_train_steps: Total optimizer steps of the run.
        save_checkpoints_steps: Optimizer steps between checkpoints.
        iterations_per_loop: Steps per `fit` epoch (at most `num_train_steps`); default
            `save_checkpoints_steps`. The progress bar shows loop `global_step // iterations_per_loop + 1`.
        steps_per_execution: The model's `steps_per_execution`; the three numbers above must be multiples of it
            (times the optimizer's gradient accumulation), so that the run stops and saves at exact steps.
    """

    def __init__(self, num_train_steps, save_checkpoints_steps=1000, iterations_per_loop=None, steps_per_execution=1):
        self.num_train_steps = int(num_train_steps)
        self.save_checkpoints_steps = int(save_checkpoints_steps)
        # A loop longer than the run would show a progress bar target (e.g. 1000) the run never reaches.
        self.iterations_per_loop = min(int(iterations_per_loop or save_checkpoints_steps), self.num_train_steps)
        self.steps_per_execution = int(steps_per_execution)
        self._checkpoints = None

    def check(self, accumulation):
        """Raises `ValueError` unless the steps, the checkpoints and the loops fall on whole compiled calls."""
        for name, value in (("num_train_steps", self.num_train_steps),
                            ("save_checkpoints_steps", self.save_checkpoints_steps),
                            ("iterations_per_loop", self.iterations_per_loop)):
            if value <= 0 or value * accumulation % self.steps_per_execution:
                raise ValueError(f"{name}={value} must be a positive multiple of steps_per_execution="
                                 f"{self.steps_per_execution}"
                                 + (f" / gradient_accumulation_steps={accumulation}." if accumulation > 1 else "."))

    def restore(self, model, checkpoint_dir, accumulation):
        step = checkpoint_store.restore_latest_checkpoint(model, checkpoint_dir)
        return Start(step, step // self.iterations_per_loop, step * accumulation)

    def finished(self, model, start):
        return start.step >= self.num_train_steps

    def announce(self, start, verbose):
        if start.step and verbose != 0:
            # fit's progress bar counts loops ("Epoch k/epochs") and the steps inside the current loop.
            logger.info(f"Resuming at step {start.step} of {self.num_train_steps} (loop {start.epoch + 1}/"
                        f"{self.num_epochs()}, {self.iterations_per_loop} steps per loop).")

    def num_epochs(self):
        return math.ceil(self.num_train_steps / self.iterations_per_loop)

    def callbacks(self, checkpoint_dir, start, keep_checkpoint_max, accumulation):
        """(the callbacks before the caller's and the logger, those after the logger)."""
        self._checkpoints = CheckpointCallback(checkpoint_dir, self.save_checkpoints_steps, start.step,
                                               keep_checkpoint_max, accumulation)
        # On torch, fit's setup draws from the generator the restored states set: put them back before step 1.
        first = [BackendGeneratorsAtFirstStep()] if start.step else []
        return first + [StopAtStep(self.num_train_steps, start.step, accumulation)], [self._checkpoints]

    def dataset(self, dataset, start, accumulation):
        if callable(dataset):
            return dataset(start.step)
        if start.step and hasattr(dataset, "skip"):
            # The restored steps consumed the first initial_step updates' batches: continue where they stopped.
            return dataset.skip(start.step * accumulation)
        return dataset

    def fit_arguments(self, start, accumulation):
        # If the start is not a multiple of the loop (a run stopped by Ctrl-C, or the flags changed), the loops
        # are just shifted; StopAtStep still ends the run at exactly num_train_steps, and the checkpoints stay at
        # the multiples of save_checkpoints_steps.
        return {"epochs": self.num_epochs(), "initial_epoch": start.epoch,
                "steps_per_epoch": self.iterations_per_loop * accumulation,
                "shuffle": False}  # the dataset shuffles itself; Keras ignores `shuffle` for it, with a warning

    def resume_point(self, model, step):
        """Writes the checkpoint of the step a signal stopped the run at (when it ends an update); says where the
        same command resumes."""
        checkpoints = self._checkpoints
        if step > checkpoints.last_saved_step and checkpoints.at_update():
            path = checkpoints.save()
        else:  # saved already, or inside an accumulated update: the newest checkpoint
            step = checkpoints.last_saved_step
            path = checkpoint_store.checkpoint_path(checkpoints.directory, step)
        return f"its checkpoint is {path}: the same command resumes from step {step}"

    def end(self, global_step):
        """What the final check of the weights names."""
        return f"step {global_step}"


def run_training(model, dataset, schedule, output_dir, keep_checkpoint_max=5, verbose="auto", callbacks=None,
                 write_dir=None, fit_kwargs=None, log_every_steps=0, run_settings=None, announcement=None,
                 batch_size=None, sequence_length=None):
    """Trains `model` on `dataset` as `schedule` says, resuming from `output_dir` (see the module docstring).

    Args:
        model: A compiled model (`model.compile(optimizer=...)`).
        dataset: The training data: for a `StepSchedule` an endlessly repeating `tf.data.Dataset` (or
            generator) of `(x, y)` batches (fast-forwarded past the batches already trained on), for an
            `EpochSchedule` one epoch's data; or a callable `dataset_fn(position)` returning it, called after the
            restore with the schedule's position (the restored step, or the epoch to start at).
        schedule: A `StepSchedule` or a `training.epoch_schedule.EpochSchedule`.
        output_dir: The run directory, whose checkpoints are restored.
        keep_checkpoint_max: Newest checkpoints kept.
        verbose: The progress's verbosity (1 = a progress bar on a terminal, a line per loop or epoch in a file;
            2 = a line per loop or epoch; 0 = none: `utils.progress.FitProgress`).
        callbacks: Extra Keras callbacks, which see every batch after the guard and the schedule's own, before
            the logger and the checkpoints.
        write_dir: Where the checkpoints, logs and TensorBoard events are written; default `output_dir`.
        fit_kwargs: More `model.fit` arguments (e.g. `y`, `batch_size`, `shuffle` for arrays).
        log_every_steps: Optimizer steps between two records of `STEPS_LOG` (0: none).
        run_settings: The settings recorded in `write_dir/run_settings.json` (`training.run_directory`) before
            training; None: none.
        announcement: A line logged just before training (not when the run had finished).
        batch_size, sequence_length: The batches' shape, named when training runs out of memory.

    Returns:
        A dict: `initial_step` (restored step), `global_step` (final step), `train_metrics` (the last logged
        record's metrics, also from an earlier run if nothing was left to train), `history` (this call's
        per-epoch metrics).

    Raises:
        RunInterrupted: SIGINT or SIGTERM came; the run stopped after a step (see the schedule for its
            checkpoint).
        TrainingDivergedError: the loss, a metric or the final weights are not finite, or the loss grew
            100-fold.

    Examples:

    >>> import tempfile
    >>> import numpy as np
    >>> model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    >>> model.compile(optimizer="sgd", loss="mse")
    >>> import itertools
    >>> batch = (np.ones((4, 2), "float32"), np.ones((4, 1), "float32"))
    >>> dataset = lambda initial_step: (batch for _ in itertools.count())  # or an endless tf.data.Dataset
    >>> out = tempfile.mkdtemp()
    >>> result = run_training(model, dataset, StepSchedule(6, save_checkpoints_steps=3), out, verbose=0)
    >>> result["global_step"], [step for step, _ in checkpoint_store.list_checkpoints(os.path.join(out, "checkpoints"))]
    (6, [3, 6])
    >>> run_training(model, dataset, StepSchedule(6, save_checkpoints_steps=3), out, verbose=0)["history"]  # done
    {}
    """
    # Batches per optimizer step: the optimizer's gradient accumulation (the steps count updates).
    accumulation = int(getattr(model.optimizer, "gradient_accumulation_steps", None) or 1)
    schedule.check(accumulation)
    write_dir = output_dir if write_dir is None else write_dir
    checkpoint_dir = os.path.join(write_dir, CHECKPOINT_SUBDIR)
    log_path, steps_path = os.path.join(write_dir, TRAIN_LOG), os.path.join(write_dir, STEPS_LOG)
    start = schedule.restore(model, os.path.join(output_dir, CHECKPOINT_SUBDIR), accumulation)
    history = {}
    if not schedule.finished(model, start):
        # Records of steps after the restored checkpoint (a run killed after logging but before its checkpoint,
        # or whose newest checkpoint was refused) are written again by this run.
        for path in (log_path, steps_path):
            truncate_metrics_log(path, start.step)
        schedule.announce(start, verbose)
        before, after = schedule.callbacks(checkpoint_dir, start, keep_checkpoint_max, accumulation)
        guard = divergence.DivergenceGuard(checkpoint_dir, divergence.first_logged_loss(log_path))
        stop = StopOnSignal(schedule.resume_point)
        metrics = MetricsLogger(log_path, start.step, os.path.join(write_dir, TENSORBOARD_DIR, "train"),
                                steps_path=steps_path, log_every_steps=log_every_steps,
                                accumulation_steps=accumulation, initial_batches=start.batches)
        data = schedule.dataset(dataset, start, accumulation)
        fit_kwargs = {**schedule.fit_arguments(start, accumulation), **(fit_kwargs or {})}
        if hasattr(data, "element_spec") or isinstance(data, types.GeneratorType):
            # A tf.data.Dataset or a generator shuffles itself; Keras ignores fit's `shuffle` for it, warning at
            # shuffle=True. (A PyDataset's batches are shuffled by fit as `shuffle` says.)
            fit_kwargs["shuffle"] = False
        if announcement:
            logger.info(announcement)
        if run_settings is not None:
            run_directory.record_run_settings(write_dir, run_settings)
        explained = (explain_out_of_memory(model, batch_size, sequence_length) if batch_size
                     else contextlib.nullcontext())
        # FitProgress shows the progress (fit's own is off): a bar on a terminal, a line per loop or epoch in a file.
        fitted = [guard, *before, *(callbacks or []), metrics, *after, FitProgress(verbose), stop]
        with stop, explained:
            history = model.fit(data, callbacks=fitted, verbose=0, **fit_kwargs).history
    global_step = int(keras.ops.convert_to_numpy(model.optimizer.iterations)) if model.optimizer.built else 0
    # The last update can make the weights non-finite while every logged loss was finite: never save them.
    divergence.check_finite_weights(model, schedule.end(global_step))
    records = read_metrics_log(log_path)
    train_metrics = {k: v for k, v in records[-1].items() if k not in ("epoch", "time")} if records else {}
    return {"initial_step": start.step, "global_step": global_step, "train_metrics": train_metrics,
            "history": history}


def evaluate(model, dataset, max_eval_steps=None):
    """Evaluates `model` on `dataset` (at most `max_eval_steps` batches); returns a dict of floats.

    Args:
        model: A compiled model.
        dataset: A finite `tf.data.Dataset` of `(x, y)`, or a generator of numpy `(x, y)` batches.
        max_eval_steps: Batches to evaluate at most (100 in the original); `None` for all.

    Examples:

    >>> import numpy as np
    >>> model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1, kernel_initializer="zeros")])
    >>> model.compile(loss="mse")
    >>> eval_batches = ((np.ones((2, 2), "float32"), np.ones((2, 1), "float32")) for _ in range(4))
    >>> evaluate(model, eval_batches, max_eval_steps=3)  # or a tf.data.Dataset
    {'loss': 1.0}
    """
    if not hasattr(dataset, "take"):  # a generator of numpy batches (`data/pretraining_batches.py`): read once
        batches = list(itertools.islice(dataset, max_eval_steps or None))
        dataset, num_batches = (batch for batch in batches), len(batches)
    else:
        if max_eval_steps:
            dataset = dataset.take(max_eval_steps)
        # The number of batches is passed explicitly, so that every backend evaluates exactly these batches:
        # with `steps=None` the TensorFlow backend runs one extra step on the exhausted iterator (Keras 3.15).
        num_batches = sum(1 for _ in dataset)
    results = model.evaluate(dataset, steps=num_batches, return_dict=True, verbose=0)
    return {name: float(value) for name, value in results.items()}
