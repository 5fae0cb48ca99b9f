"""Stopping training on Ctrl-C (SIGINT) or SIGTERM after the current step, on every backend.

`StopOnSignal` is a context manager and a Keras callback: inside `with StopOnSignal(on_stop) as stop:` SIGINT
and SIGTERM only record the signal, and the callback (`model.fit(..., callbacks=[..., stop])`, last in the
list) checks the record after every train batch and at every epoch's end. Once a signal came, it calls
`on_stop(model, step)` (e.g. writes a checkpoint of that step and returns where the same command resumes)
and raises `utils.errors.RunInterrupted`, whose message is one line and whose `exit_status` is 130 for SIGINT
and 143 for SIGTERM (`runners.cli.run_main` prints it and exits with it).

Why a flag and a callback rather than Python's `KeyboardInterrupt`: the exception is raised wherever the main
thread happens to be, and Keras converts every batch's logs inside a bare `except: pass`
(`keras.src.utils.python_utils.pythonify_logs`); on JAX the main thread spends most of a step waiting inside
that conversion, so most Ctrl-Cs were swallowed there and the run went on. A callback raises between steps,
outside any library's `except`.

A second signal while the first is pending stops the process at once (the signal's default action: no
checkpoint; the same command resumes from the newest complete one). Outside the `with` block the previous
handlers are back (Ctrl-C raises `KeyboardInterrupt`). A signal that arrives after `fit` returned but inside
the block raises `RunInterrupted` when the block ends. Handlers are installed in the main thread only (Python
delivers signals there); elsewhere the context does nothing.
"""

import os
import signal
import threading

import keras

from keras_bert_impl.utils.errors import RunInterrupted

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class StopOnSignal(keras.callbacks.Callback):
    """Stops `fit` after the current step when SIGINT or SIGTERM arrives inside its `with` block (see the
    module docstring).

    Args:
        on_stop: None, or a callable `on_stop(model, step) -> str` called once before stopping (the model
            holds the weights of `step`, the optimizer step of the last finished batch); its text is added to
            the message, e.g. "wrote the checkpoint of step 41; the same command resumes from it".

    Examples:

    >>> import numpy as np
    >>> model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    >>> model.compile(optimizer="sgd", loss="mse")
    >>> send = keras.callbacks.LambdaCallback(
    ...     on_train_batch_end=lambda batch, logs: batch == 2 and os.kill(os.getpid(), signal.SIGTERM))
    >>> try:
    ...     with StopOnSignal(lambda model, step: "resume from step 0") as stop:
    ...         model.fit(np.ones((16, 2)), np.ones((16, 1)), batch_size=2, verbose=0, callbacks=[send, stop])
    ... except RunInterrupted as error:
    ...     print(error.exit_status, error)
    143 stopped by SIGTERM after step 3; resume from step 0.
    """

    def __init__(self, on_stop=None):
        super().__init__()
        self.on_stop = on_stop
        self.signum = None
        self._previous = {}

    def __enter__(self):
        self.signum = None
        if threading.current_thread() is threading.main_thread():
            self._previous = {signum: signal.signal(signum, self._record) for signum in SIGNALS}
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        self._previous = {}
        if exc_type is None and self.signum is not None:
            raise RunInterrupted(self.signum, f"stopped by {signal.Signals(self.signum).name} at the end of "
                                 "training; the same command goes on from its checkpoints.")
        return False

    def _record(self, signum, frame):
        if self.signum is not None:
            # A second signal: the signal's default action (the process ends now, without a checkpoint).
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
            return
        self.signum = signum

    def on_train_batch_end(self, batch, logs=None):
        if self.signum is not None:
            self._stop()

    def on_epoch_end(self, epoch, logs=None):
        if self.signum is not None:
            self._stop()

    def _stop(self):
        model = self.model
        step = int(keras.ops.convert_to_numpy(model.optimizer.iterations))
        message = f"stopped by {signal.Signals(self.signum).name} after step {step}"
        if self.on_stop is not None:
            message += "; " + self.on_stop(model, step)
        raise RunInterrupted(self.signum, message.rstrip(".") + ".")
