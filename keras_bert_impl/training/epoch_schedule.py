"""Fine-tuning's schedule for the training driver (`training.resumable.run_training`): `EpochSchedule`, whole
passes over the data with a checkpoint at every epoch's end and the best epoch on dev kept.

At every epoch's end `BestCheckpoint` (given a dev evaluation) scores the model on dev, writes its metrics
to `dev_metrics_per_epoch.json` and, when they are the best so far, its weights to `best.weights.h5` (no
optimizer state); then `EpochCheckpoint` writes the driver's state (`checkpoints/state.json`: epochs done,
the `BestCheckpoint` state and the labels the head is trained on, per checkpoint step) and the model +
optimizer checkpoint. `EpochSeed` seeds every epoch with `seed + epoch`, so what `fit` shuffles itself is the
same in a resumed epoch as in an uninterrupted run. At the end of training the model holds the best epoch's
weights.

Resuming: the newest checkpoint is restored with its state (`restore_training`; one trained on other labels
is refused, naming both sets), and the run goes on at the
next epoch's start; a run whose checkpoints reach `epochs` trains nothing and takes its best weights. A run
stopped by a signal resumes from the newest epoch checkpoint (`epoch_resume_point` says which, and how many
steps after it are trained again: an epoch's batches are those of its seeded shuffle, which a run cannot
enter halfway).
"""

import json
import logging
import math
import os

import keras

from keras_bert_impl.training import checkpoint_store, divergence, run_directory
from keras_bert_impl.training.metrics_log import metrics_text
from keras_bert_impl.training.resumable import Start
from keras_bert_impl.utils.errors import TrainingDivergedError, UserInputError
from keras_bert_impl.utils.file_io import write_json

logger = logging.getLogger(__name__)

STATE_FILE = "state.json"
BEST_WEIGHTS = "best.weights.h5"
DEV_METRICS = "dev_metrics_per_epoch.json"


class BestCheckpoint(keras.callbacks.Callback):
    """Evaluates on the dev set after every epoch and keeps the weights with the best dev metric.

    `evaluate_fn(model) -> dict` computes the task's metrics (the paper's metric, on the real dev
    examples, e.g. SQuAD F1 after post-processing); `metric` names the key to maximize. The best weights
    are written to `output_dir/best.weights.h5` (atomically, without the optimizer's state), every
    epoch's metrics to `output_dir/dev_metrics_per_epoch.json`, as `dev_<name>` into the epoch's logs (for
    `metrics_log.MetricsLogger`) and as a line `epoch N: dev <metrics>` to the logger; at the end of training
    the model holds the best weights. `state()` / `restore(state)` carry the best value and the history across
    a resumed run.

    Args:
        evaluate_fn: callable taking the model and returning a dict of dev metrics.
        metric: the key of that dict to maximize.
        output_dir: where the best weights and the per-epoch metrics go.

    Examples:

    >>> import tempfile
    >>> import numpy as np
    >>> model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    >>> model.compile(optimizer="sgd", loss="mse")
    >>> dev_scores = iter([0.5, 0.8, 0.6])
    >>> callback = BestCheckpoint(lambda model: {"accuracy": next(dev_scores)}, "accuracy", tempfile.mkdtemp())
    >>> _ = model.fit(np.ones((4, 2)), np.ones((4, 1)), epochs=3, verbose=0, callbacks=[callback])
    >>> callback.best_metrics, [epoch["accuracy"] for epoch in callback.history]
    ({'accuracy': 0.8, 'epoch': 2}, [0.5, 0.8, 0.6])
    """

    def __init__(self, evaluate_fn, metric, output_dir):
        super().__init__()
        self.evaluate_fn = evaluate_fn
        self.metric = metric
        self.output_dir = output_dir
        self.best_value = -math.inf
        self.best_metrics = None
        self.history = []
        self.path = os.path.join(output_dir, BEST_WEIGHTS)

    def state(self):
        """What a resumed run needs: {"best_metrics": dict or None, "history": [per-epoch dicts]}."""
        return {"best_metrics": self.best_metrics, "history": list(self.history)}

    def restore(self, state):
        """Takes back a `state()` written at a checkpoint."""
        self.best_metrics = state.get("best_metrics")
        self.history = list(state.get("history", []))
        self.best_value = -math.inf if self.best_metrics is None else self.best_metrics[self.metric]

    def on_epoch_end(self, epoch, logs=None):
        metrics = self.evaluate_fn(self.model)
        if self.metric not in metrics:
            raise KeyError(f"evaluate_fn returned {sorted(metrics)}, without the metric {self.metric!r}.")
        numbers = {k: float(v) for k, v in sorted(metrics.items()) if isinstance(v, (int, float))}
        # The line after fit's progress bar of the epoch (which has not ended its line yet).
        logger.info(f"\nepoch {epoch + 1}: dev {metrics_text(metrics)}")
        main_value = numbers.get(self.metric, math.nan)
        if not math.isfinite(main_value):
            # `nan > best` is False, so a NaN epoch would never be best, and the run would end with no best
            # epoch at all: it is stopped here instead, before this epoch's checkpoint is written.
            raise TrainingDivergedError(
                f"epoch {epoch + 1}: dev {self.metric} is {metrics[self.metric]} (the model's dev predictions are "
                "not finite, or all equal).")
        # Another metric can be undefined where the main one is not (e.g. Pearson's r of a constant
        # prediction): it is recorded as null, which strict JSON (and `write_json`) accepts.
        finite = {k: v for k, v in numbers.items() if math.isfinite(v)}
        self.history.append({"epoch": epoch + 1, **{k: (None if k in numbers and k not in finite else v)
                                                    for k, v in metrics.items()}})
        write_json(os.path.join(self.output_dir, DEV_METRICS), self.history)
        if logs is not None:
            logs.update({f"dev_{k}": v for k, v in finite.items()})
        if main_value > self.best_value:
            divergence.check_finite_weights(self.model, f"epoch {epoch + 1}")
            self.best_value = metrics[self.metric]
            self.best_metrics = dict(metrics, epoch=epoch + 1)
            checkpoint_store.save_model_weights(self.model, self.path)

    def on_train_end(self, logs=None):
        if os.path.isfile(self.path):
            checkpoint_store.load_model_weights(self.model, self.path)


class EpochCheckpoint(keras.callbacks.Callback):
    """At every epoch end: writes the driver's state for the step (`STATE_FILE`: epochs done, the
    `BestCheckpoint` state, the labels the head is trained on), then the model + optimizer checkpoint
    (`checkpoint_store.save_checkpoint`).

    The state is written first, so every checkpoint has its state; a kill between the two leaves the
    previous checkpoint the latest, whose state is still there.
    """

    def __init__(self, directory, best=None, keep_checkpoint_max=1, labels=None):
        super().__init__()
        self.directory = directory
        self.best = best
        self.keep_checkpoint_max = keep_checkpoint_max
        self.labels = labels

    def on_epoch_end(self, epoch, logs=None):
        step = int(keras.ops.convert_to_numpy(self.model.optimizer.iterations))
        states = read_checkpoint_states(self.directory)
        states[str(step)] = {"epoch": epoch + 1, "best": None if self.best is None else self.best.state(),
                             "labels": self.labels}
        os.makedirs(self.directory, exist_ok=True)
        write_json(os.path.join(self.directory, STATE_FILE), states)
        checkpoint_store.save_checkpoint(self.model, self.directory, self.keep_checkpoint_max)
        kept = {str(s) for s, _ in checkpoint_store.list_checkpoints(self.directory)}
        if set(states) - kept:
            write_json(os.path.join(self.directory, STATE_FILE), {k: v for k, v in states.items() if k in kept})


class EpochSeed(keras.callbacks.Callback):
    """Seeds Python, NumPy and the backend with `seed + epoch` at the start of every epoch, so that what
    `fit` shuffles itself (arrays, `shuffle=True`) is the same in a resumed epoch as in an uninterrupted run."""

    def __init__(self, seed):
        super().__init__()
        self.seed = seed

    def on_epoch_begin(self, epoch, logs=None):
        keras.utils.set_random_seed(self.seed + epoch)


def read_checkpoint_states(directory):
    """{str(step): {"epoch": epochs done, "best": BestCheckpoint state or None}} of `directory` ({} if none)."""
    path = os.path.join(directory, STATE_FILE)
    if not os.path.isfile(path):
        return {}
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def restore_training(model, directory, best=None, labels=None):
    """Restores the latest checkpoint of `directory` into the compiled `model` (and its state into `best`);
    returns the number of epochs it completed (0 when there is none). `labels`: the label names the model's
    head is trained on now (`task.trained_labels()`).

    Raises:
        UserInputError: the checkpoints were trained on other labels (naming both sets), do not fit the model
            (another run's output_dir) or lack their state.
    """
    checkpoints = checkpoint_store.list_checkpoints(directory)
    if not checkpoints:
        return 0
    run_directory.check_trained_labels(directory, read_checkpoint_states(directory).get(str(checkpoints[-1][0]), {}),
                                       labels)
    try:
        step = checkpoint_store.restore_latest_checkpoint(model, directory)
    except (OSError, ValueError) as error:
        first_line = str(error).splitlines()[-1]
        raise UserInputError(f"{directory}: cannot resume from these checkpoints ({first_line}); they belong to "
                             "another model or run: use another --output_dir, or --overwrite_output_dir") from error
    state = read_checkpoint_states(directory).get(str(step))
    if state is None:
        raise UserInputError(f"{os.path.join(directory, STATE_FILE)}: no entry for the checkpoint of step {step}; "
                             "pass --overwrite_output_dir to train from the start")
    if best is not None and state.get("best"):
        best.restore(state["best"])
    return int(state["epoch"])


def epoch_resume_point(directory, step):
    """Where the same command resumes a fine-tuning run stopped after `step` (`StopOnSignal`'s line): the
    newest epoch checkpoint of `directory`, and how many steps after it are trained again."""
    checkpoints = checkpoint_store.list_checkpoints(directory)
    if not checkpoints:
        return f"no epoch had ended: the same command starts from the beginning (its {step} steps are trained again)"
    saved = checkpoints[-1][0]
    epoch = read_checkpoint_states(directory).get(str(saved), {}).get("epoch", "?")
    lost = "nothing is trained again" if saved == step else f"the {step - saved} steps after it are trained again"
    return f"the same command resumes from the checkpoint of epoch {epoch} (step {saved}): {lost}"


class EpochSchedule:
    """Fine-tuning's schedule for `training.resumable.run_training` (see the module docstring): `epochs` passes
    over the data of `batches_per_epoch` batches each, every epoch seeded with `seed + epoch`, a checkpoint at
    every epoch's end, the best epoch on dev kept by `best` (a `BestCheckpoint`, or None without a dev set);
    `labels`: the label names the head is trained on (recorded with each checkpoint; None: a head without labels).

    Its position is the epoch a run starts at: `run_training` calls a callable dataset with it.
    """

    def __init__(self, epochs, seed, batches_per_epoch, best=None, labels=None):
        self.epochs = int(epochs)
        self.seed = seed
        self.batches_per_epoch = int(batches_per_epoch)
        self.best = best
        self.labels = labels
        self._directory = None

    def check(self, accumulation):
        """Nothing to check: epochs end where the data does."""

    def restore(self, model, checkpoint_dir, accumulation):
        self._directory = checkpoint_dir
        epoch = restore_training(model, checkpoint_dir, self.best, self.labels)
        step = int(keras.ops.convert_to_numpy(model.optimizer.iterations)) if epoch else 0
        return Start(step, epoch, epoch * self.batches_per_epoch)

    def finished(self, model, start):
        """Whether the checkpoints reach the last epoch; then the model takes the best epoch's weights."""
        if start.epoch < self.epochs:
            return False
        logger.info(f"{self._directory} holds a finished run ({start.epoch} of {self.epochs} epochs): nothing left to "
                    "train; continuing with its best weights. Pass --overwrite_output_dir (or use another "
                    "--output_dir) to train again.")
        if self.best is not None and os.path.isfile(self.best.path):
            checkpoint_store.load_model_weights(model, self.best.path)
        return True

    def announce(self, start, verbose):
        if start.epoch:
            logger.info(f"resuming from {self._directory} at epoch {start.epoch + 1} of {self.epochs} "
                        f"(step {start.step})")

    def callbacks(self, checkpoint_dir, start, keep_checkpoint_max, accumulation):
        """(the callbacks before the caller's and the logger, those after the logger)."""
        return ([EpochSeed(self.seed)] + ([] if self.best is None else [self.best]),
                [EpochCheckpoint(checkpoint_dir, self.best, keep_checkpoint_max, self.labels)])

    def dataset(self, dataset, start, accumulation):
        return dataset(start.epoch) if callable(dataset) else dataset

    def fit_arguments(self, start, accumulation):
        return {"epochs": self.epochs, "initial_epoch": start.epoch}

    def resume_point(self, model, step):
        return epoch_resume_point(self._directory, step)

    def end(self, global_step):
        """What the final check of the weights names."""
        return "the end of training"
