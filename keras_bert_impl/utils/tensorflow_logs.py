"""TensorFlow's C++ log lines kept off a recipe's stderr.

TensorFlow (and XLA) write log lines from C++ straight to the process's stderr, whatever
`TF_CPP_MIN_LOG_LEVEL` says for some of them: `WARNING: All log messages before absl::InitializeLog() is
called are written to STDERR`, then `I0000 00:00:... port.cc:153] oneDNN custom operations are on ...`,
`E0000 ... failed call to cuInit ...` on a machine without a GPU, and so on. `filtered_stderr()` sends file
descriptor 2 through a pipe for as long as it is entered; a thread forwards everything to the real stderr
except those lines. A log line's message may go on over more lines (an error raised inside a `tf.data`
generator is logged with its Python traceback: "Traceback (most recent call last):", indented frames, the
exception's line, "\\t [[{{node PyFunc}}]]"): after a log line, the blank and indented lines, a traceback's
header and the exception line that ends it are dropped too, up to the first other line. Python's own output
(warnings, tracebacks, progress bars, which may end in "\\r" rather than a newline) passes unchanged and at
once.

The recipes filter unless the user asked for the logs: `TF_CPP_MIN_LOG_LEVEL` set in the environment, or
`--debug` (`runners.cli.run_main`). Plain library use (a script's `from keras_bert_impl import pipeline` under
the TensorFlow backend) gets the same for TensorFlow's start-up: the package imports Keras through
`import_keras_quietly`, which filters while TensorFlow is imported and lists its devices (where it logs the
start-up lines and the cuInit failure of a machine without a GPU), unless `TF_CPP_MIN_LOG_LEVEL` is set.
"""

import contextlib
import os
import re
import sys
import threading

# A line TensorFlow's C++ logging writes: "I0000 00:00:1795694161.146854   32301 port.cc:153] ...", W/E/F
# likewise, and absl's notice before its logging is initialized.
# cpu_feature_guard's message goes on over a second line ("To enable the following instructions: AVX2 ...").
# Fixed lines: absl's notice, and LiteRT's interpreter's at its first invoke (ai_edge_litert).
_NOTICES = (b"WARNING: All log messages before absl::InitializeLog() is called",
            b"INFO: Created TensorFlow Lite XNNPACK delegate for CPU.")
TENSORFLOW_LOG_LINE = re.compile(rb"^(?:[IWEF]\d{4} \d\d:\d\d:\d+\.\d+ +\d+ [^\]]+\] |"
                                 rb"To enable the following instructions: .*rebuild TensorFlow with the appropriate|"
                                 + b"|".join(re.escape(notice) for notice in _NOTICES) + rb")")


def _may_become_a_log_line(partial):
    """Whether the start of a line may still turn out to be one of TensorFlow's (then it waits for its end)."""
    return bool(re.match(rb"^[IWEF](?:\d{1,4}(?: .*)?)?$", partial)) or any(
        notice.startswith(partial[:len(notice)]) for notice in _NOTICES)


def wants_tensorflow_logs(debug=False):
    """Whether a recipe shows TensorFlow's C++ logs: the user set TF_CPP_MIN_LOG_LEVEL, or passed --debug."""
    return debug or "TF_CPP_MIN_LOG_LEVEL" in os.environ


class _Forwarder:
    """Splits what arrives into lines (ended by "\\n" or "\\r"), drops TensorFlow's log lines (and the lines
    their messages go on over) and writes the rest to `target` (a file descriptor); a partial line is written
    at once unless it may become a log line or go on a log line's message.

    Examples:

    >>> import tempfile
    >>> out = tempfile.TemporaryFile()
    >>> forwarder = _Forwarder(out.fileno())
    >>> forwarder.feed(b"W0000 00:00:1795876573.354680    6603 op_kernel.cc:1845] INVALID_ARGUMENT: ValueError: x\\n"
    ...                b"Traceback (most recent call last):\\n\\n  File \\"a.py\\", line 1, in f\\n    g()\\n\\n"
    ...                b"ValueError: x\\n\\n\\n\\t [[{{node PyFunc}}]]\\nerror: train.tsv changed\\n  kept\\n")
    >>> _ = out.seek(0); out.read()
    b'error: train.tsv changed\\n  kept\\n'
    """

    def __init__(self, target):
        self.target = target
        self.pending = b""
        self.in_record = False  # the lines after a log line go on its message
        self.in_traceback = False  # ... and hold a traceback, whose exception line is the record's too

    def feed(self, data):
        self.pending += data
        parts = re.split(rb"(?<=[\r\n])", self.pending)
        self.pending = parts.pop() if not parts[-1].endswith((b"\n", b"\r")) else b""
        out = [part for part in parts if part and self._kept(part)]
        if self.pending and not self.in_record and not _may_become_a_log_line(self.pending):
            out.append(self.pending)
            self.pending = b""
        if out:
            os.write(self.target, b"".join(out))

    def _kept(self, line):
        """Whether the complete `line` is written (not a log line, nor the rest of a log line's message)."""
        if TENSORFLOW_LOG_LINE.match(line):
            self.in_record, self.in_traceback = True, False
            return False
        if not self.in_record:
            return True
        if not line.strip() or line.startswith((b" ", b"\t")):
            return False
        if line.startswith(b"Traceback (most recent call last):"):
            self.in_traceback = True
            return False
        if self.in_traceback:  # the exception's line, which ends the traceback
            self.in_traceback = False
            return False
        self.in_record = False
        return True

    def close(self):
        if self.pending and self._kept(self.pending):
            os.write(self.target, self.pending)
        self.pending = b""


@contextlib.contextmanager
def filtered_stderr(enabled=True):
    """Inside the block, file descriptor 2 (stderr of Python, C++ and child processes) goes through a thread
    that drops TensorFlow's C++ log lines (`TENSORFLOW_LOG_LINE`); `enabled=False`: a block without it.

    Examples:

    >>> import os, tempfile
    >>> saved, capture = os.dup(2), tempfile.TemporaryFile()
    >>> _ = os.dup2(capture.fileno(), 2)
    >>> with filtered_stderr():
    ...     _ = os.write(2, b"I0000 00:00:1795694161.146854   32301 port.cc:153] oneDNN custom operations\\n")
    ...     _ = os.write(2, b"kept\\n")
    >>> _ = os.dup2(saved, 2); os.close(saved)
    >>> _ = capture.seek(0); capture.read()
    b'kept\\n'
    """
    if not enabled:
        yield
        return
    sys.stderr.flush()
    real_stderr = os.dup(2)
    read_end, write_end = os.pipe()
    os.dup2(write_end, 2)
    os.close(write_end)
    forwarder = _Forwarder(real_stderr)

    def pump():
        while True:
            data = os.read(read_end, 65536)
            if not data:
                break
            forwarder.feed(data)
        forwarder.close()

    thread = threading.Thread(target=pump, name="tensorflow-log-filter", daemon=True)
    thread.start()
    try:
        yield
    finally:
        sys.stderr.flush()
        os.dup2(real_stderr, 2)  # closes this process's write end: the thread reads to the pipe's end
        thread.join(timeout=10)
        if not thread.is_alive():  # else a child process still holds the pipe: the thread forwards until it ends
            os.close(read_end)
            os.close(real_stderr)


def import_keras_quietly():
    """Imports Keras, and with the TensorFlow backend lists TensorFlow's devices, inside `filtered_stderr`:
    TensorFlow's start-up log lines stay off stderr. Nothing is filtered when the user set
    `TF_CPP_MIN_LOG_LEVEL` (the lines are theirs to see) or Keras is imported already (too late to filter)."""
    if "keras" in sys.modules or wants_tensorflow_logs():
        return
    with filtered_stderr():
        import keras

        if keras.backend.backend() == "tensorflow":
            import tensorflow as tf

            tf.config.list_physical_devices()
