"""Keras callbacks that count optimizer steps across interrupted runs: `StepCounter`, and on it
`CheckpointCallback` (an atomic checkpoint every N steps and at the end) and `StopAtStep` (ends `fit` at a
total number of steps).
"""

import keras

from keras_bert_impl.training.checkpoint_store import save_checkpoint


class StepCounter(keras.callbacks.Callback):
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


class CheckpointCallback(StepCounter):
    """Saves an atomic checkpoint at every multiple of `save_every_steps` optimizer steps and at the end of
    training.

    Args:
        directory: Checkpoint directory.
        save_every_steps: Optimizer steps between two checkpoints: one at each step that is a multiple of it
            (also in a run resumed from a step that is not, e.g. one stopped by Ctrl-C).
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
    >>> callback.saved  # the steps of its checkpoints: every 2 steps, and at the end
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
        if self._due() and not last_of_epoch:
            self.save()

    def on_epoch_end(self, epoch, logs=None):
        if self._due():
            self.save()

    def on_train_end(self, logs=None):
        if self.step > self.last_saved_step:
            self.save()


class StopAtStep(StepCounter):
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
