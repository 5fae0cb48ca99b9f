"""Training to a total number of optimizer steps under `model.fit`, resumable: what the TF1 Estimator of
google-research/bert's `run_pretraining.py` did, on every Keras backend.

The Estimator saved a checkpoint every `save_checkpoints_steps` steps into `output_dir`, kept the last 5,
and, when the same command ran again after an interruption, restored the latest one and trained on to the
same `num_train_steps`. `run_training` does the same with `model.fit`: it restores the newest verified
checkpoint (`training/checkpoint_store.py`: weights, optimizer state with the step, random states), then fits
the remaining steps with a `CheckpointCallback`, a `StopAtStep` and a `MetricsLogger`, so the total number of
optimizer steps equals `num_train_steps` however often the run is interrupted. A `tf.data.Dataset` input is
fast-forwarded past the `initial_step` batches the restored steps consumed (`dataset.skip`), so with a
seeded dataset, a seeded model (`keras.utils.set_random_seed`) and the random states of the checkpoint, a run
interrupted any number of times ends bitwise identical to an uninterrupted one. A callable
`dataset_fn(initial_step)` is called instead and positions the input itself (the Estimator's way: rebuild,
e.g. with a shuffle seed offset by the step, which costs no reading but is not the uninterrupted run's
order). `evaluate` evaluates exactly the batches it is given.

Ctrl-C (SIGINT) or SIGTERM stops `run_training` after the current step (`interrupts.StopOnSignal`, on every
backend): it writes the checkpoint of that step and raises `utils.errors.RunInterrupted` (exit status 130 or
143 through `runners.cli.run_main`). The same command resumes from that checkpoint, bitwise as from any
other; its loops (progress bar, log records) are shifted by the steps of the interrupted loop, its
checkpoints stay at the multiples of `save_checkpoints_steps`.
"""

import itertools
import math
import os

import keras

from keras_bert_impl.training import checkpoint_store
from keras_bert_impl.training.checkpoint_store import CHECKPOINT_SUBDIR
from keras_bert_impl.training.interrupts import StopOnSignal
from keras_bert_impl.training.metrics_log import MetricsLogger, read_metrics_log, truncate_metrics_log
from keras_bert_impl.training.random_state import BackendGeneratorsAtFirstStep
from keras_bert_impl.training.step_callbacks import CheckpointCallback, StopAtStep
from keras_bert_impl.utils.progress import FitProgress


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

    Under gradient accumulation (the optimizer's `gradient_accumulation_steps` N) every step here is an
    optimizer update of N batches: a loop runs `iterations_per_loop * N` batches, checkpoints fall after an
    update's last batch, and a resumed run skips `initial_step * N` batches.

    Args:
        model: A compiled model (`model.compile(optimizer=...)`); its `steps_per_execution` should be
            `steps_per_execution`.
        dataset: An endlessly repeating `tf.data.Dataset` (or generator) of `(x, y)` batches, fast-forwarded past the
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
        verbose: the progress's verbosity (1 = a progress bar on a terminal, a line per loop in a file; 2 = a
            line per loop; 0 = none: `utils.progress.FitProgress`).
        callbacks: Extra Keras callbacks, which see every batch before the logger and the checkpoints (a
            `DivergenceGuard` there stops a diverged step before it is logged or saved).
        write_dir: Where the checkpoints, `train_log.jsonl` and TensorBoard logs are written; default
            `output_dir`. A non-chief worker passes its `Distribution.write_dir` (a temporary directory):
            it restores from the chief's `output_dir/checkpoints` and writes nothing there.

    Returns:
        A dict: `initial_step` (restored step), `global_step` (final step), `train_metrics` (the last
        logged loop's metrics, also from an earlier run if nothing was left to train), `history`
        (this call's per-loop metrics).

    Raises:
        RunInterrupted: SIGINT or SIGTERM came; the checkpoint of the last finished step is written.

    Examples:

    >>> import tempfile
    >>> import numpy as np
    >>> model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    >>> model.compile(optimizer="sgd", loss="mse")
    >>> import itertools
    >>> batch = (np.ones((4, 2), "float32"), np.ones((4, 1), "float32"))
    >>> dataset = lambda initial_step: (batch for _ in itertools.count())  # or an endless tf.data.Dataset
    >>> out = tempfile.mkdtemp()
    >>> result = run_training(model, dataset, 6, out, save_checkpoints_steps=3, verbose=0)
    >>> result["global_step"], [step for step, _ in checkpoint_store.list_checkpoints(os.path.join(out, "checkpoints"))]
    (6, [3, 6])
    >>> run_training(model, dataset, 6, out, save_checkpoints_steps=3, verbose=0)["history"]  # nothing left to train
    {}
    """
    # A loop longer than the run would show a progress bar target (e.g. 1000) the run never reaches.
    iterations_per_loop = min(int(iterations_per_loop or save_checkpoints_steps), num_train_steps)
    # Batches per optimizer step: the optimizer's gradient accumulation (the steps above count updates).
    accumulation = int(getattr(model.optimizer, "gradient_accumulation_steps", None) or 1)
    for name, value in (
        ("num_train_steps", num_train_steps),
        ("save_checkpoints_steps", save_checkpoints_steps),
        ("iterations_per_loop", iterations_per_loop),
    ):
        if value <= 0 or value * accumulation % steps_per_execution:
            raise ValueError(f"{name}={value} must be a positive multiple of steps_per_execution={steps_per_execution}"
                             + (f" / gradient_accumulation_steps={accumulation}." if accumulation > 1 else "."))

    write_dir = output_dir if write_dir is None else write_dir
    checkpoint_dir = os.path.join(write_dir, CHECKPOINT_SUBDIR)
    log_path = os.path.join(write_dir, "train_log.jsonl")
    initial_step = checkpoint_store.restore_latest_checkpoint(model, os.path.join(output_dir, CHECKPOINT_SUBDIR))
    history = {}
    if initial_step < num_train_steps:
        # Records of steps after the restored checkpoint (a run killed after logging a loop but before
        # its checkpoint, or whose newest checkpoint was refused) are written again by this run.
        truncate_metrics_log(log_path, initial_step)
        epochs = math.ceil(num_train_steps / iterations_per_loop)
        if initial_step and verbose != 0:
            # fit's progress bar counts loops ("Epoch k/epochs") and the steps inside the current loop.
            print(f"Resuming at step {initial_step} of {num_train_steps} (loop {initial_step // iterations_per_loop + 1}"
                  f"/{epochs}, {iterations_per_loop} steps per loop).", flush=True)
        checkpoints = CheckpointCallback(checkpoint_dir, save_checkpoints_steps, initial_step, keep_checkpoint_max,
                                         accumulation)

        def resume_point(model, step):
            if step > checkpoints.last_saved_step and checkpoints.at_update():
                path = checkpoints.save()
            else:  # saved already, or inside an accumulated update: the newest checkpoint
                step = checkpoints.last_saved_step
                path = checkpoint_store.checkpoint_path(checkpoint_dir, step)
            return f"its checkpoint is {path}: the same command resumes from step {step}"

        stop = StopOnSignal(resume_point)
        # The callbacks given (a DivergenceGuard) see a batch first, then the logger, then the checkpoints
        # (a loop's log record is written before its checkpoint), then the signal check.
        own_callbacks = [StopAtStep(num_train_steps, initial_step, accumulation), *list(callbacks or []),
                         MetricsLogger(log_path, initial_step, os.path.join(write_dir, "logs", "train"),
                                       accumulation_steps=accumulation),
                         checkpoints, FitProgress(verbose), stop]
        if callable(dataset):
            dataset = dataset(initial_step)
        elif initial_step and hasattr(dataset, "skip"):
            # The restored steps consumed the first initial_step batches: continue where they stopped.
            dataset = dataset.skip(initial_step * accumulation)
        # If initial_step is not a multiple of the loop (a run stopped by Ctrl-C, or the flags changed), the
        # loops are just shifted; StopAtStep still ends the run at exactly num_train_steps, and the
        # checkpoints stay at the multiples of save_checkpoints_steps.
        with stop:
            fit_history = model.fit(
                dataset,
                epochs=epochs,
                initial_epoch=initial_step // iterations_per_loop,
                steps_per_epoch=iterations_per_loop * accumulation,
                callbacks=[BackendGeneratorsAtFirstStep()] * bool(initial_step) + own_callbacks,
                verbose=0,  # FitProgress: a bar on a terminal, a line per loop in a file
                shuffle=False,  # the dataset shuffles itself; Keras ignores `shuffle` for it, with a warning
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
