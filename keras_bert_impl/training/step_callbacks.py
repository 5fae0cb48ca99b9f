"""Keras callbacks that count optimizer steps across interrupted runs: `StepCounter`, and on it
`CheckpointCallback` (an atomic checkpoint every N steps and at the end) and `StopAtStep` (ends `fit` at a
total number of steps).
"""

import keras

from keras_bert_impl.training.checkpoint_store import save_checkpoint


class StepCounter(keras.callbacks.Callback):
    """Counts optimizer steps from the batch indices `fit` reports, without touching model state.

    (Reading `self.model` on JAX forces a device-to-model state sync, so it is done only when needed.)

    Args:
        initial_step: the optimizer step the model starts from.
        accumulation_steps: batches per optimizer step (the optimizer's `gradient_accumulation_steps`).
        initial_batches: the batches trained before this `fit`; default `initial_step * accumulation_steps`
            (a run resumed at an update; a fine-tuning run resumed at an epoch's end may be inside a group).
    """

    def __init__(self, initial_step, accumulation_steps=1, initial_batches=None):
        super().__init__()
        self.accumulation_steps = int(accumulation_steps or 1)
        self.batches = int(initial_step) * self.accumulation_steps if initial_batches is None else int(initial_batches)
        self.step = self.batches // self.accumulation_steps
        self._epoch_start_batches = self.batches

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch_start_batches = self.batches

    def on_train_batch_end(self, batch, logs=None):
        # `batch` is the index of the last batch run in this epoch (also with steps_per_execution > 1).
        self.batches = self._epoch_start_batches + int(batch) + 1
        self.step = self.batches // self.accumulation_steps


class CheckpointCallback(StepCounter):
    """Saves an atomic checkpoint at every multiple of `save_every_steps` optimizer steps and at the end of
    training.

    Args:
        directory: Checkpoint directory.
        save_every_steps: Optimizer steps between two checkpoints: one at each step that is a multiple of it
            (also in a run resumed from a step that is not, e.g. one stopped by Ctrl-C).
        initial_step: Step the model starts from (the restored step).
        keep_checkpoint_max: Number of newest checkpoints kept (5, as the Estimator).
        accumulation_steps: batches per optimizer step; checkpoints are saved after an update's last batch.

    Examples:

    >>> import tempfile
    >>> import numpy as np
    >>> model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    >>> model.compile(optimizer="sgd", loss="mse")
    >>> directory = tempfile.mkdtemp()
    >>> callback = CheckpointCallback(directory, save_every_steps=2, initial_step=0)
    >>> _ = model.fit(np.ones((10, 2)), np.ones((10, 1)), batch_size=2, verbose=0, callbacks=[callback])
    >>> callback.saved  # the steps of its checkpoints: every 2 steps, and at the end
    [2, 4, 5]
    """

    def __init__(self, directory, save_every_steps, initial_step=0, keep_checkpoint_max=5, accumulation_steps=1):
        super().__init__(initial_step, accumulation_steps)
        if save_every_steps <= 0:
            raise ValueError(f"save_every_steps must be positive; got {save_every_steps}.")
        self.directory = directory
        self.save_every_steps = int(save_every_steps)
        self.keep_checkpoint_max = keep_checkpoint_max
        self.last_saved_step = int(initial_step)
        self.saved = []

    def save(self):
        """Saves the checkpoint of the current step now; returns its path."""
        step, path = save_checkpoint(self.model, self.directory, self.keep_checkpoint_max)
        self.last_saved_step = step
        self.saved.append(step)
        return path

    def _due(self):
        return self.step // self.save_every_steps > self.last_saved_step // self.save_every_steps

    def on_train_batch_end(self, batch, logs=None):
        super().on_train_batch_end(batch, logs)
        # A checkpoint due at the last step of an epoch (a loop) is saved at the epoch's end, after the
        # callbacks listed before this one (run_training's MetricsLogger) logged the epoch: a kill between
        # the two then leaves a log ahead of the newest checkpoint (truncated on resume), never behind it.
        last_of_epoch = self.params is not None and batch + 1 == self.params.get("steps")
        if self._due() and self.at_update() and not last_of_epoch:
            self.save()

    def at_update(self):
        """Whether the last batch completed an update (no gradients accumulated and not yet applied)."""
        return self.batches % self.accumulation_steps == 0

    def on_epoch_end(self, epoch, logs=None):
        if self._due() and self.at_update():
            self.save()

    def on_train_end(self, logs=None):
        if self.step > self.last_saved_step and self.at_update():
            self.save()


class StopAtStep(StepCounter):
    """Stops `fit` once the optimizer has made `num_train_steps` steps in total.

    Args:
        num_train_steps: Total number of optimizer steps.
        initial_step: Step the model starts from.

    Examples:

    >>> stop = StopAtStep(num_train_steps=1000, initial_step=500)
    """

    def __init__(self, num_train_steps, initial_step=0, accumulation_steps=1):
        super().__init__(initial_step, accumulation_steps)
        self.num_train_steps = int(num_train_steps)

    def on_train_batch_end(self, batch, logs=None):
        super().on_train_batch_end(batch, logs)
        if self.step >= self.num_train_steps:
            self.model.stop_training = True
