"""TensorBoard event files written without TensorFlow: scalars at a step, in the events format that
`tensorboard --logdir` reads.

An event file is a TFRecord file (`utils/record_files.py`) of `Event` protocol buffers, encoded here by hand
(`utils/protobuf_wire.py`):

    Event   { double wall_time = 1; int64 step = 2; string file_version = 3; Summary summary = 5; }
    Summary { repeated Value value = 1; }
    Value   { string tag = 1; float simple_value = 2; }

The first event holds `file_version = "brain.Event:2"`; each later one a step's scalars as `simple_value`s,
which TensorBoard shows under "Scalars" (its `event_accumulator` reads them as scalars:
`tests/test_training.py`). The file is named as TensorFlow's summary writer names it,
`events.out.tfevents.<unix time>.<host>.<pid>.<counter>.v2`.

Why by hand rather than `tf.summary` or tensorboardX: `tf.summary` needs TensorFlow, which the JAX and torch
installs lack, and tensorboardX needs protobuf and its own generated classes for three small messages; the
format is stable (TensorBoard reads files of 2016) and the same framing serves the pretraining files.
"""

import itertools
import os
import socket
import time

from keras_bert_impl.utils import protobuf_wire as wire
from keras_bert_impl.utils.record_files import RecordWriter

FILE_VERSION = "brain.Event:2"
_COUNTER = itertools.count()


def scalars_event(step, scalars, wall_time=None):
    """The encoded `Event` of `scalars` (tag -> float) at `step`.

    Examples:

    >>> scalars_event(3, {"loss": 0.5}, wall_time=0.0).hex()
    '09000000000000000010032a0d0a0b0a046c6f7373150000003f'
    """
    values = b"".join(
        wire.length_delimited(1, wire.length_delimited(1, tag.encode("utf-8")) + wire.float_field(2, float(value)))
        for tag, value in scalars.items())
    return (wire.double_field(1, time.time() if wall_time is None else wall_time) + wire.varint_field(2, int(step))
            + wire.length_delimited(5, values))


class EventFileWriter:
    """Writes scalars to a new TensorBoard event file in `log_dir` (created if missing); each `add_scalars`
    is flushed at once, so a killed run keeps what it logged.

    Args:
        log_dir: The directory of the event file (TensorBoard's run directory, e.g. `output_dir/logs/train`).

    Examples:

    >>> import tempfile
    >>> writer = EventFileWriter(tempfile.mkdtemp())
    >>> writer.add_scalars(10, {"loss": 0.7, "accuracy": 0.5})
    >>> writer.close()
    >>> os.path.basename(writer.path).startswith("events.out.tfevents.")
    True
    """

    def __init__(self, log_dir):
        os.makedirs(log_dir, exist_ok=True)
        name = (f"events.out.tfevents.{int(time.time()):010d}.{socket.gethostname()}.{os.getpid()}."
                f"{next(_COUNTER)}.v2")
        self.path = os.path.join(log_dir, name)
        self._records = RecordWriter(self.path)
        self._records.write(wire.double_field(1, time.time()) + wire.length_delimited(3, FILE_VERSION.encode()))
        self._records.flush()

    def add_scalars(self, step, scalars):
        """Writes one event holding `scalars` (tag -> number) at `step`."""
        self._records.write(scalars_event(step, scalars))
        self._records.flush()

    def close(self):
        self._records.close()
