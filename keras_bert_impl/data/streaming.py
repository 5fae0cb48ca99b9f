"""Training examples streamed from their file: a training set of any size in bounded memory.

A `StreamedExamples` reads a file of one record a line (a TSV, JSON lines) in chunks of `CHUNK_LINES` lines.
Made, it reads the file once, sequentially: every record is parsed and checked (a mistake stops the run
before training, naming the file and line, as the in-memory readers do), and each chunk's byte offset and
number of examples noted (16 bytes a chunk). Then every epoch reads the chunks again, featurizes and batches
them. What it holds at once is one window of examples (`max_held`), whatever the size of the file.

An epoch (`epoch_batches(batch_size, seed)`) is seeded, as `batching.bucketed_batches`' epochs are: the chunks
are read in a random order (`numpy.random.default_rng(seed)`), their examples gathered into windows of
`bucket_window * batch_size` examples, and each window featurized and cut into length-bucketed, dynamically
padded batches by `batching.bucketed_batches` (shuffled, sorted by length, batched, the batches shuffled). A
run resumed at epoch k (seed + k) sees the batches an uninterrupted one saw in epoch k. An epoch has
`batching.num_batches(num_examples, batch_size)` batches, as a set in memory has, so the learning-rate
schedule knows its total.

The batches are not those of the same examples in memory (there, the windows are drawn from the whole
shuffled set), so the fine-tuning tasks stream a training file from `STREAMING_MIN_BYTES` up (or on request,
`--stream_train_data`): the small sets train as in memory. Which tasks stream: `tasks.glue` (TSV, JSON
lines); the others read their files whole (docs/own_data.md, "Large training files").

`StreamedBatches` is an epoch as a Keras `PyDataset` (JAX and PyTorch); `tf_batching.streamed_dataset` the
same as a `tf.data.Dataset` (TensorFlow); `runners.finetuning.training_batches` picks per backend.

The file must stay as the first pass read it: every chunk read checks its size and modification time, and a
file changed since (lines appended, cut, rewritten) stops the run with a `StreamedFileChanged` naming it (a
`UserInputError`: one line and exit status 2 from a recipe). TensorFlow's `from_generator` wraps an error
raised while reading in its own; `raising_stream_errors` raises the stream's own error instead.
"""

import contextlib
import itertools
import os

import keras
import numpy as np

from keras_bert_impl.data.batching import bucketed_batches, num_batches, process_share_options, share_of_batch
from keras_bert_impl.data.dataset_files import STREAMING_MIN_BYTES, require_examples  # noqa: F401 (its threshold)
from keras_bert_impl.utils.errors import UserInputError
from keras_bert_impl.utils.file_io import decode_line

# Lines a chunk: the unit of reading (and of the first pass's index: one offset and one count a chunk).
CHUNK_LINES = 64


class StreamedExamples:
    """The examples of a file of one record a line, read chunk by chunk (see the module docstring).

    Args:
        path: the file (local).
        parse: `parse(numbered_lines, first_index)` -> the examples of `[(line number, text)]`, checked
            (raising `UserInputError` naming the file and line); `first_index`: the index of their first
            record in the file. E.g. `glue_data.glue_line_parser`'s.
        featurize: a list of examples -> `(features, labels)`: the per-example sequences of
            `batching.bucketed_batches` and the labels (an array [n]).
        header_lines: the lines before the first record.
        chunk_lines: lines a chunk.

    Attributes:
        num_examples: the examples of the file.
        max_held: the most examples held at once so far (by `epoch_batches`): at most a window and a chunk.

    Examples:

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "train.tsv")
    >>> with open(path, "w") as f:
    ...     _ = f.write("".join(f"{'a ' * (i % 7)}b\\t{i % 2}\\n" for i in range(100)))
    >>> def parse(lines, first_index):
    ...     return [line.rstrip("\\n").split("\\t") for _, line in lines]
    >>> def featurize(examples):
    ...     return {"token_ids": [[101] * len(text.split()) for text, _ in examples]}, np.array([int(label) for _, label in examples])
    >>> stream = StreamedExamples(path, parse, featurize, chunk_lines=8)
    >>> batches = list(stream.epoch_batches(batch_size=16, seed=0, bucket_window=2, pad_to_multiple_of=1))
    >>> stream.num_examples, len(batches), sum(len(y) for _, y in batches), stream.max_held <= 2 * 16 + 8
    (100, 7, 100, True)
    """

    def __init__(self, path, parse, featurize, header_lines=0, chunk_lines=CHUNK_LINES):
        self.path = path
        self.parse = parse
        self.featurize = featurize
        self.header_lines = int(header_lines)
        self.chunk_lines = int(chunk_lines)
        self.max_held = 0
        offsets, counts, total = [], [], 0
        for offset, lines in self._chunks():
            offsets.append(offset)
            counts.append(len(parse(lines, total)))
            total += counts[-1]
        self.offsets = np.asarray(offsets, np.int64)  # byte offset of each chunk's first line
        self.counts = np.asarray(counts, np.int64)  # examples of each chunk
        self.first_indexes = np.concatenate([[0], np.cumsum(self.counts)[:-1]]).astype(np.int64)
        self.num_examples = int(self.counts.sum())
        if not self.num_examples:
            require_examples([], path)
        self.stamp = _stamp(os.stat(path))  # (bytes, modification time) of the file the pass read
        self.failure = None  # the `StreamedFileChanged` raised while reading, if any

    def __repr__(self):
        return f"StreamedExamples({self.path!r}, num_examples={self.num_examples})"

    def _chunks(self):
        """(byte offset, [(line number, text)]) of every chunk, reading the file sequentially."""
        with open(self.path, "rb") as f:
            for _ in range(self.header_lines):
                f.readline()
            number = self.header_lines + 1
            while True:
                start = f.tell()
                raw = list(itertools.islice(f, self.chunk_lines))
                if not raw:
                    return
                yield start, self._decoded(raw, number)
                number += len(raw)

    def _decoded(self, raw_lines, first_line):
        """[(line number, text)] of the lines `raw_lines` (bytes), the first of them line `first_line`."""
        try:
            return [(number, raw.decode("utf-8")) for number, raw in enumerate(raw_lines, first_line)]
        except UnicodeDecodeError:
            return [(number, decode_line(raw, self.path, number)) for number, raw in enumerate(raw_lines, first_line)]

    def _read_chunk(self, f, chunk):
        """The examples of chunk `chunk` (an index), read from the open binary file `f`; a file changed since
        the first pass (before or while the chunk is read) raises `StreamedFileChanged`."""
        self._check_unchanged(f)
        f.seek(int(self.offsets[chunk]))
        raw = list(itertools.islice(f, self.chunk_lines))
        self._check_unchanged(f)
        return self.parse(self._decoded(raw, self.header_lines + chunk * self.chunk_lines + 1),
                          int(self.first_indexes[chunk]))

    def _check_unchanged(self, f):
        """Raises (and records as `failure`) `StreamedFileChanged` when the open file `f` is not the one the
        first pass read (another size or modification time)."""
        now = _stamp(os.fstat(f.fileno()))
        if now != self.stamp:
            self.failure = StreamedFileChanged(
                f"{self.path}: the training file changed while the run streamed it ({self.stamp[0]} bytes when the "
                f"run read it, {now[0]} bytes now{', modified since' if now[0] == self.stamp[0] else ''}): a "
                "streamed file is read again every epoch, so it must stay as it is until the run ends (copy it, "
                "and train on the copy)")
            raise self.failure

    def examples(self, limit=None):
        """The examples in the file's order (the first `limit` of them), one chunk held at a time."""
        count = 0
        with open(self.path, "rb") as f:
            for chunk in range(len(self.offsets)):
                for example in self._read_chunk(f, chunk):
                    if limit is not None and count >= limit:
                        return
                    count += 1
                    yield example

    def sample(self):
        """`(features, labels)` of the first chunk: what a batch's structure and dtypes are made of."""
        with open(self.path, "rb") as f:
            return self.featurize(self._read_chunk(f, 0))

    def epoch_batches(self, batch_size, seed=0, bucket_window=100, drop_remainder=False, **options):
        """Yields the `(x, y)` batches of one epoch (see the module docstring).

        Args:
            batch_size: examples a batch.
            seed: the epoch's seed (the chunk order, and each window's shuffling).
            bucket_window: batches a window (`bucket_window * batch_size` examples sorted by length together).
            drop_remainder: only whole batches (TPUs, multi-process JAX): the last `num_examples % batch_size`
                examples of the epoch's order are left out.
            **options: the other arguments of `batching.bucketed_batches` (dynamic_padding, max_length,
                pad_to_multiple_of, padding_values, label_padding_value).
        """
        rng = np.random.default_rng(seed)
        window_size = batch_size * bucket_window
        options = dict(options, batch_size=batch_size, bucket_window=bucket_window)
        pending = []
        with open(self.path, "rb") as f:
            for chunk in rng.permutation(len(self.offsets)):
                pending += self._read_chunk(f, chunk)
                self.max_held = max(self.max_held, len(pending))
                while len(pending) >= window_size:
                    yield from self._window_batches(pending[:window_size], rng, options)
                    pending = pending[window_size:]
        if drop_remainder:
            pending = pending[: len(pending) - len(pending) % batch_size]
        if pending:
            yield from self._window_batches(pending, rng, options)

    def _window_batches(self, examples, rng, options):
        features, labels = self.featurize(examples)
        yield from bucketed_batches(features, labels, shuffle=True, seed=int(rng.integers(2**31)), **options)


class StreamedFileChanged(UserInputError):
    """A streamed training file changed after the run's first pass read it (see the module docstring)."""


def _stamp(stat):
    """(size, modification time in ns) of an `os.stat` result: what tells that a file changed."""
    return stat.st_size, stat.st_mtime_ns


@contextlib.contextmanager
def raising_stream_errors(data):
    """Within: an exception while `data` (a `StreamedExamples`, or anything else) was read is raised as the
    stream's own `StreamedFileChanged` when it recorded one (TensorFlow's `from_generator` raises its own error,
    with the traceback of the generator in its message)."""
    try:
        yield
    except Exception:
        failure = getattr(data, "failure", None)
        if failure is None:
            raise
        raise failure from None


class StreamedBatches(keras.utils.PyDataset):
    """The epochs of a `StreamedExamples` as a Keras `PyDataset`, batch by batch in order (what `model.fit` on
    JAX and PyTorch reads; `batching.BucketedBatches` is its twin for a set in memory).

    Args:
        stream: a `StreamedExamples`.
        batch_size: examples a batch.
        seed: the seed of the first epoch (`seed + k` for epoch k).
        initial_epoch: the epoch (0-based) the first pass is, so a run resumed at epoch k sees the batches an
            uninterrupted run saw in epoch k.
        process_share: None, or `(index, count)`: this process's rows of every global batch (multi-process
            JAX, as in `BucketedBatches`; whole batches only).
        **options: the other arguments of `StreamedExamples.epoch_batches`.

    The batches are read as they are asked for: batch i after batch i - 1 (as Keras asks); a batch asked for
    again, or out of order, is read again from the start of the epoch (its seed gives the same batches).
    """

    def __init__(self, stream, batch_size, seed=0, initial_epoch=0, process_share=None, **options):
        super().__init__()
        self.stream, self.batch_size, self.seed, self.process_share = stream, batch_size, seed, process_share
        self.options = process_share_options(batch_size, process_share, options)
        self.num_batches_per_epoch = num_batches(stream.num_examples, batch_size, self.options.get("drop_remainder"))
        self.epoch = int(initial_epoch)
        self._restart()

    def _restart(self):
        self._batches = self.stream.epoch_batches(self.batch_size, self.seed + self.epoch, **self.options)
        self._index, self._batch = -1, None

    def __len__(self):
        return self.num_batches_per_epoch

    def __getitem__(self, index):
        if index < self._index:
            self._restart()
        while self._index < index:
            self._batch, self._index = next(self._batches), self._index + 1
        if self.process_share is None:
            return self._batch
        return share_of_batch(self._batch, *self.process_share)

    def on_epoch_end(self):
        self.epoch += 1
        self._restart()
