"""The training log: each loop's averaged metrics with the global optimizer step, appended to a JSON-lines
file and written as TensorBoard scalars, and read back or truncated when a run resumes.

Why not `keras.callbacks.TensorBoard` for the curves: it needs TensorFlow and the `tensorboard` package
(neither is a dependency of the JAX and torch installs), and its batch-level step counter restarts from 0 at
every `fit` call, so the curves of a resumed run would overwrite the first run's. The scalars here are
written at the global optimizer step by `training/tensorboard_events.py`, which writes the event files
without TensorFlow on every backend; `tensorboard --logdir output_dir/logs` shows them as usual.
"""

import json
import os
import time

from keras_bert_impl.training.step_callbacks import StepCounter
from keras_bert_impl.training.tensorboard_events import EventFileWriter
from keras_bert_impl.utils import file_io
from keras_bert_impl.utils.progress import number_text


class MetricsLogger(StepCounter):
    """Appends each epoch's (training loop's) averaged metrics, with the global step, to a JSON-lines
    file and writes them as TensorBoard scalars (`tensorboard_events`) at that step; optionally also the running
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
        accumulation_steps, initial_batches: batches per optimizer step, and the batches trained before
            (`step_callbacks.StepCounter`).

    Examples:

    >>> logger = MetricsLogger("out/train_log.jsonl", initial_step=0, tensorboard_dir="out/logs/train")
    """

    def __init__(self, path, initial_step=0, tensorboard_dir=None, steps_path=None, log_every_steps=0,
                 accumulation_steps=1, initial_batches=None):
        super().__init__(initial_step, accumulation_steps, initial_batches)
        self.path = path
        self.tensorboard_dir = tensorboard_dir
        self.steps_path = steps_path
        self.log_every_steps = int(log_every_steps or 0)
        self._writer = None
        self._epoch = 0
        self._last_logged_step = self.step

    def on_train_begin(self, logs=None):
        os.makedirs(os.path.dirname(os.path.abspath(self.path)), exist_ok=True)
        if self.tensorboard_dir:
            self._writer = EventFileWriter(self.tensorboard_dir)

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
        try:
            with open(path, "a", encoding="utf-8") as f:
                f.write(json.dumps(record, sort_keys=True) + "\n")
        except OSError as error:  # e.g. no space left on device: name the file
            raise OSError(error.errno, error.strerror or str(error), path) from error
        if self._writer is not None:
            self._writer.add_scalars(self.step, {tag_prefix + name: value for name, value in record.items()
                                                 if name not in ("step", "epoch", "time")})

    def on_train_end(self, logs=None):
        if self._writer is not None:
            self._writer.close()
            self._writer = None


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


def metrics_text(metrics):
    """"name=value, ..." of the numbers among `metrics`, sorted by name: a count (an int, or an integral value of
    a count's name, "num_...", "total", ...: `utils.progress.number_text`) as an integer, any other number with 4
    decimals.

    Examples:

    >>> metrics_text({"f1": 0.8571428, "num_gold": 70.0, "num_pred": 71, "task_name": "ner"})
    'f1=0.8571, num_gold=70, num_pred=71'
    """
    numbers = {k: v for k, v in sorted(metrics.items()) if isinstance(v, (int, float)) and not isinstance(v, bool)}
    return ", ".join(f"{k}={number_text(k, v)}" for k, v in numbers.items())

