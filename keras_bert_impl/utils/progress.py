"""Progress as a person watching a terminal wants it, and as a log file wants it.

On a terminal (standard output a tty) a progress bar redraws its line; written to a file (a recipe's output
redirected to a log) it would leave carriage returns, backspaces and Keras' ANSI colour codes in the file, one
redraw after the other. So:

* `progress_bar(target, unit_name)`: Keras' `Progbar`, drawn on a terminal; in a file one plain line when the
  loop ends (Keras' verbose 2), e.g. "119/119 - 3s - 25ms/batch".
* `FitProgress(verbose)`: `model.fit`'s progress (fit is called with `verbose=0` and this callback): on a
  terminal, "Epoch k/n" and a line redrawn as the steps go; in a file (or with verbose 2) one plain line per
  epoch; the metrics as `number_text` shows them, so that a count is "119", not "119.0000".
"""

import re
import sys
import time

import keras

# The metrics that count (questions, entities, skipped answers): shown as integers, with or without a prefix
# such as "dev_" or "HasAns_".
_COUNT = re.compile(r"(?:^|_)(?:num_\w+|total|count|skip)$")


def on_terminal(stream=None):
    """Whether `stream` (default: standard output) is a terminal."""
    stream = sys.stdout if stream is None else stream
    return bool(getattr(stream, "isatty", None) and stream.isatty())


def progress_bar(target, unit_name="step"):
    """A `keras.utils.Progbar` over `target` units: drawn on a terminal, one plain line at the end in a file."""
    return keras.utils.Progbar(target, unit_name=unit_name, verbose=1 if on_terminal() else 2)


def number_text(name, value):
    """A metric's value as the package prints it: a count (an int, or an integral value of a count's name:
    `num_...`, `total`, `count`, `skip`) as an integer, any other number with 4 decimals.

    Examples:

    >>> number_text("dev_HasAns_total", 119.0), number_text("loss", 0.69314), number_text("num_gold", 70)
    ('119', '0.6931', '70')
    """
    if isinstance(value, int) or _COUNT.search(name) and float(value).is_integer():
        return str(int(value))
    return f"{float(value):.4f}"


class FitProgress(keras.callbacks.Callback):
    """`model.fit`'s progress, for a fit called with `verbose=0` (see the module docstring).

    Args:
        verbose: fit's verbosity: 1 or "auto" (a bar on a terminal, a line per epoch in a file), 2 (a line per
            epoch), 0 (nothing).
        stream: where it writes; default standard output.

    Examples:

    >>> import io
    >>> import numpy as np
    >>> model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    >>> model.compile(optimizer="sgd", loss="mse")
    >>> log = io.StringIO()
    >>> _ = model.fit(np.ones((4, 2)), np.ones((4, 1)), batch_size=2, epochs=2, verbose=0,
    ...               callbacks=[FitProgress(1, stream=log)])
    >>> [re.sub(r"\\d+(m?s)", r"N\\1", line) for line in log.getvalue().splitlines()]
    ['Epoch 1/2 - 2/2 steps - Ns - Nms/step - loss: ...', 'Epoch 2/2 - 2/2 steps - Ns - Nms/step - loss: ...']
    """

    def __init__(self, verbose=1, stream=None):
        super().__init__()
        self.verbose = 1 if verbose == "auto" else int(verbose)
        self.stream = stream
        self._width = 0

    @property
    def _out(self):
        return sys.stdout if self.stream is None else self.stream

    def _drawn(self):
        return self.verbose == 1 and on_terminal(self._out)

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch, self._started, self._drawn_at, self._steps_done = epoch, time.time(), 0.0, 0
        if self._drawn():
            self._write(f"Epoch {epoch + 1}/{self.params.get('epochs')}\n")

    def on_train_batch_end(self, batch, logs=None):
        self._steps_done = batch + 1
        if self._drawn() and time.time() - self._drawn_at >= 0.1:
            self._drawn_at = time.time()
            self._redraw(self._line(logs, ended=False))

    def on_epoch_end(self, epoch, logs=None):
        if not self.verbose:
            return
        line = self._line(logs, ended=True)
        if self._drawn():
            self._redraw(line + "\n")
            self._width = 0
        else:
            self._write(f"Epoch {epoch + 1}/{self.params.get('epochs')} - {line}\n")

    def _line(self, logs, ended):
        steps, done = self.params.get("steps"), self._steps_done
        elapsed = time.time() - self._started
        count = f"{done}/{steps}" if steps else f"{done}"
        per_step = elapsed / max(done, 1)
        timing = (f"{elapsed:.0f}s - {per_step * 1000:.0f}ms/step" if per_step < 1 else
                  f"{elapsed:.0f}s - {per_step:.0f}s/step")
        if not ended and steps:
            timing = f"ETA {per_step * (steps - done):.0f}s"
        metrics = " - ".join(f"{name}: {number_text(name, value)}" for name, value in (logs or {}).items()
                             if isinstance(value, (int, float)) or hasattr(value, "__float__"))
        return f"{count} steps - {timing}" + (f" - {metrics}" if metrics else "")

    def _redraw(self, line):
        text = line.rstrip("\n")
        padding = " " * max(0, self._width - len(text))
        self._width = len(text)
        self._write("\r" + text + padding + ("\n" if line.endswith("\n") else ""))

    def _write(self, text):
        self._out.write(text)
        self._out.flush()
