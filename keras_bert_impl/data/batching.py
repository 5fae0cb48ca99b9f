"""Dynamic padding and length bucketing for fine-tuning: variable-length examples -> padded batches.

Every task (GLUE, SWAG, NER, SQuAD) turns its examples into a dict of variable-length int lists per
example, e.g. `{"token_ids": [[101, 7592, 102], ...], "segment_ids": [...], "padding_mask": [...]}`
(one 1-D list per example, or for multiple choice one list per choice: `[[c0 ids], [c1 ids], ...]`),
plus labels. This module batches them:

* **dynamic padding**: each batch is padded to its own longest example (rounded up to
  `pad_to_multiple_of`), not to `max_seq_length`;
* **length bucketing**: for training, the shuffled examples are cut into windows of
  `bucket_window` batches, each window is sorted by length and cut into batches, and the batch order
  is shuffled, so a batch holds examples of similar length (little padding) while every epoch still
  sees every example exactly once in a new random order; for evaluation/prediction the examples are
  sorted by length and the outputs put back in the original order.

Padding does not change the model's outputs: the backbone's `padding_mask` keeps padded positions out of
attention, so a padded batch gives the same logits as the unpadded examples.

Rounding lengths up to a multiple (8 by default) bounds the number of distinct batch shapes, which is
what costs time under JAX (one compilation per shape) and TensorFlow (retracing).

Batches come as numpy (`bucketed_batches`, `predict_bucketed`) or as a Keras `PyDataset` for `model.fit`
(`BucketedBatches`); `keras_bert_impl.data.tf_batching` wraps them in a `tf.data.Dataset` instead (the
TensorFlow backend's choice, and TPUs'). `finetuning.training_batches` picks per backend.
"""

import math

import keras
import numpy as np

from keras_bert_impl.utils.progress import progress_bar

# Default padding value per feature name; every other feature pads with 0.
DEFAULT_PADDING_VALUES = {"token_ids": 0, "segment_ids": 0, "padding_mask": 0}


def _is_nested(example_value):
    """Whether one example's value is a list of sequences (multiple choice) rather than one sequence."""
    return len(example_value) > 0 and isinstance(example_value[0], (list, tuple, np.ndarray))


def example_lengths(features):
    """Length of every example: the longest sequence among its features (and choices), as int64 [N]."""
    keys = list(features)
    if not keys:
        raise ValueError("features is empty; expected a dict of per-example sequences.")
    num_examples = len(features[keys[0]])
    for key in keys:
        if len(features[key]) != num_examples:
            raise ValueError(f"feature {key!r} has {len(features[key])} examples, {keys[0]!r} has {num_examples}.")
    lengths = np.zeros(num_examples, dtype=np.int64)
    for key in keys:
        for i, value in enumerate(features[key]):
            n = max((len(row) for row in value), default=0) if _is_nested(value) else len(value)
            lengths[i] = max(lengths[i], n)
    return lengths


def plan_batches(lengths, batch_size, shuffle=False, seed=0, sort_by_length=True, bucket_window=100,
                 drop_remainder=False):
    """The example indices of every batch of one epoch; each index appears exactly once.

    Args:
        lengths: int array [N], each example's length.
        batch_size: examples per batch (the last batch of a window may be smaller).
        shuffle: random order (training). With `sort_by_length`, examples are shuffled, cut into windows of
            `bucket_window * batch_size`, sorted by length inside each window, cut into batches, and
            the batches shuffled.
        seed: seed of the shuffling (use a new one every epoch).
        sort_by_length: bucket by length (on by default); False keeps the (shuffled) order.
        bucket_window: batches per sorting window when shuffling.
        drop_remainder: leave out the examples that do not fill a whole batch (a random `N % batch_size` of
            them when shuffling), for TPUs, which need every batch of the same shape. When `batch_size`
            divides N nothing is left out and the plan is the one without `drop_remainder`.

    Returns:
        A list of int64 index arrays.
    """
    if drop_remainder and len(lengths) % batch_size:
        n_full = (len(lengths) // batch_size) * batch_size
        if n_full == 0:
            raise ValueError(f"drop_remainder with {len(lengths)} examples and batch_size {batch_size} leaves no batch.")
        rng = np.random.default_rng(seed)
        kept = np.sort(rng.permutation(len(lengths))[:n_full]) if shuffle else np.arange(n_full)
        plan = plan_batches(np.asarray(lengths)[kept], batch_size, shuffle, seed + 1, sort_by_length, bucket_window)
        return [kept[indices] for indices in plan]
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}.")
    lengths = np.asarray(lengths)
    n = len(lengths)
    if not shuffle:
        order = np.argsort(lengths, kind="stable") if sort_by_length else np.arange(n)
        return [order[i : i + batch_size] for i in range(0, n, batch_size)]
    rng = np.random.default_rng(seed)
    order = rng.permutation(n)
    if not sort_by_length:
        return [order[i : i + batch_size] for i in range(0, n, batch_size)]
    window = batch_size * bucket_window
    batches = []
    for start in range(0, n, window):
        chunk = order[start : start + window]
        chunk = chunk[np.argsort(lengths[chunk], kind="stable")]
        batches.extend(chunk[i : i + batch_size] for i in range(0, len(chunk), batch_size))
    return [batches[j] for j in rng.permutation(len(batches))]


def _pad_rows(rows, length, value, dtype):
    """A list of 1-D sequences (or of lists of sequences) -> array [B, length] (or [B, C, length])."""
    if _is_nested(rows[0]):
        num_choices = len(rows[0])
        out = np.full((len(rows), num_choices, length), value, dtype=dtype)
        for b, choices in enumerate(rows):
            if len(choices) != num_choices:
                raise ValueError(f"examples have different numbers of choices: {len(choices)} != {num_choices}.")
            for c, row in enumerate(choices):
                if len(row) > length:
                    raise ValueError(f"a sequence of length {len(row)} does not fit the padded length {length}.")
                out[b, c, : len(row)] = row
        return out
    out = np.full((len(rows), length), value, dtype=dtype)
    for b, row in enumerate(rows):
        if len(row) > length:
            raise ValueError(f"a sequence of length {len(row)} does not fit the padded length {length}.")
        out[b, : len(row)] = row
    return out


def _is_ragged_labels(labels):
    return isinstance(labels, list) and len(labels) > 0 and isinstance(labels[0], (list, tuple, np.ndarray))


def _take_labels(labels, indices, length, label_padding_value):
    """Labels of a batch: a dict recursively; per-token (ragged) lists padded to `length`; arrays indexed."""
    if isinstance(labels, dict):
        return {k: _take_labels(v, indices, length, label_padding_value) for k, v in labels.items()}
    if _is_ragged_labels(labels):
        rows = [labels[i] for i in indices]
        dtype = np.float32 if np.asarray(rows[0]).dtype.kind == "f" else np.int32
        return _pad_rows(rows, length, label_padding_value, dtype)
    array = np.asarray(labels)
    array = array.astype(np.float32) if array.dtype.kind == "f" else array.astype(np.int32)
    return array[indices]


def pad_batch(features, indices, length=None, pad_to_multiple_of=1, padding_values=None):
    """Pads the examples `indices` of `features` into int32 arrays.

    Args:
        features: dict name -> list of per-example sequences (1-D, or a list of C sequences).
        indices: the examples of the batch.
        length: pad to exactly this length (fixed padding); default: the batch's longest example
            rounded up to a multiple of `pad_to_multiple_of`.
        pad_to_multiple_of: rounding of the dynamic length.
        padding_values: dict name -> padding value (default 0 for every feature).

    Returns:
        dict name -> int32 array [B, T] (or [B, C, T]).
    """
    padding_values = {**DEFAULT_PADDING_VALUES, **(padding_values or {})}
    indices = np.asarray(indices)
    if length is None:
        longest = int(example_lengths({k: [v[i] for i in indices] for k, v in features.items()}).max())
        length = int(math.ceil(max(longest, 1) / pad_to_multiple_of) * pad_to_multiple_of)
    return {
        key: _pad_rows([values[i] for i in indices], length, padding_values.get(key, 0), np.int32)
        for key, values in features.items()
    }


def bucketed_batches(
    features,
    labels=None,
    batch_size=32,
    shuffle=False,
    seed=0,
    dynamic_padding=True,
    max_length=None,
    pad_to_multiple_of=8,
    bucket_window=100,
    padding_values=None,
    label_padding_value=0,
    drop_remainder=False,
):
    """Yields the padded batches of one epoch: `x` dicts, or `(x, y)` pairs when `labels` is given.

    Args:
        features: dict name -> list of N variable-length int sequences (per example: one list, or a list
            of C lists for multiple choice), e.g. `{"token_ids", "segment_ids", "padding_mask"}`.
        labels: None; an array [N] / [N, k]; per-token ragged lists (padded like the features, with
            `label_padding_value`); or a dict of those.
        batch_size: examples per batch.
        shuffle: new random order (seeded by `seed`).
        seed: shuffling seed.
        dynamic_padding: pad each batch to its longest example and bucket by length (default). False
            pads every batch to `max_length`, in the plain (shuffled) order.
        max_length: the fixed length when `dynamic_padding=False`.
        pad_to_multiple_of: round dynamic lengths up to a multiple of this (bounds compilations).
        bucket_window: batches per length-sorting window when shuffling.
        padding_values: dict name -> padding value of that feature (default 0).
        label_padding_value: padding of per-token labels (e.g. -100 or 0 with a mask).
        drop_remainder: only whole batches (TPUs); a different random remainder is left out every epoch.

    Examples:

    >>> features = {"token_ids": [[101, 5, 102], [101, 102], [101, 7, 8, 9, 102]]}
    >>> [x["token_ids"].shape for x in bucketed_batches(features, batch_size=2, pad_to_multiple_of=1)]
    [(2, 3), (1, 5)]
    """
    if not dynamic_padding and max_length is None:
        raise ValueError("dynamic_padding=False needs max_length, the fixed length to pad to.")
    lengths = example_lengths(features)
    if max_length is not None and len(lengths) and lengths.max() > max_length:
        raise ValueError(f"an example has {int(lengths.max())} tokens, more than max_length={max_length}.")
    plan = plan_batches(lengths, batch_size, shuffle=shuffle, seed=seed, sort_by_length=dynamic_padding,
                        bucket_window=bucket_window, drop_remainder=drop_remainder)
    for indices in plan:
        length = None if dynamic_padding else max_length
        x = pad_batch(features, indices, length=length, pad_to_multiple_of=pad_to_multiple_of,
                      padding_values=padding_values)
        if labels is None:
            yield x
        else:
            batch_length = next(iter(x.values())).shape[-1]
            yield x, _take_labels(labels, indices, batch_length, label_padding_value)


def num_batches(num_examples, batch_size, drop_remainder=False):
    """Batches per epoch of `bucketed_batches` (windows are whole multiples of `batch_size`)."""
    if drop_remainder:
        return num_examples // batch_size
    return int(math.ceil(num_examples / batch_size))


class BucketedBatches(keras.utils.PyDataset):
    """One epoch of `bucketed_batches` as a Keras `PyDataset`, reshuffled (new seed) every epoch.

    What the fine-tuning recipes feed `model.fit` on JAX and PyTorch (`finetuning.training_batches`): there, a
    `tf.data` pipeline (`tf_batching.bucketed_dataset`) would start TensorFlow's runtime, whose threads compete
    with the backend's own for the CPU (a fine-tuning epoch on PyTorch ran ~3x slower with it). On TensorFlow,
    `tf.data` is used instead because its Keras adapter needs the `[None, None]` signature of batches of
    varying length.

    Args:
        features, labels, batch_size: as in `bucketed_batches`.
        seed: shuffling seed of the first epoch (`seed + k` for epoch k).
        initial_epoch: the epoch (0-based) the first pass is, so a run resumed at epoch k sees the
            batches an uninterrupted run saw in epoch k.
        process_share: None, or `(index, count)` in a job of `count` processes that each feed their share of
            every global batch (multi-process JAX): every process plans the same global batches (same seed)
            and this one yields rows `index * b / count` to `(index + 1) * b / count` of each (`share_of_batch`).
            Only whole batches then (`drop_remainder`), each a multiple of `count`.
        **options: the other arguments of `bucketed_batches` (dynamic_padding, max_length,
            label_padding_value, ...).

    Examples:

    >>> features = {"token_ids": [[101, 5, 102], [101, 102], [101, 7, 8, 9, 102]]}
    >>> batches = BucketedBatches(features, np.array([0, 1, 0]), batch_size=2, seed=0, pad_to_multiple_of=1)
    >>> sorted(x["token_ids"].shape for x, y in (batches[i] for i in range(len(batches))))
    [(1, 5), (2, 3)]

    `model.fit(batches, epochs=3, shuffle=False)` trains on it; every epoch gets a new order.
    """

    def __init__(self, features, labels, batch_size, seed=0, initial_epoch=0, process_share=None, **options):
        super().__init__()
        options = process_share_options(batch_size, process_share, options)
        self.features, self.labels, self.batch_size, self.seed, self.options = features, labels, batch_size, seed, options
        self.process_share = process_share
        self.epoch = int(initial_epoch)
        self.batches = self._plan()

    def _plan(self):
        return list(bucketed_batches(self.features, self.labels, batch_size=self.batch_size, shuffle=True,
                                     seed=self.seed + self.epoch, **self.options))

    def __len__(self):
        return len(self.batches)

    def __getitem__(self, index):
        if self.process_share is None:
            return self.batches[index]
        return share_of_batch(self.batches[index], *self.process_share)

    def on_epoch_end(self):
        self.epoch += 1
        self.batches = self._plan()


def process_share_options(batch_size, process_share, options):
    """The batching `options` of a process that feeds `process_share` = (index, count) of every global batch
    (None: all of it): whole batches only (`drop_remainder`), each a multiple of `count`."""
    if process_share is None:
        return options
    if batch_size % process_share[1]:
        raise ValueError(f"batch_size {batch_size} is not a multiple of the {process_share[1]} processes.")
    return dict(options, drop_remainder=True)


def share_of_batch(batch, index, count):
    """Process `index`'s rows of a global `batch` (any nest of arrays [B, ...]) split into `count` equal,
    consecutive shares: the per-process batch a multi-process JAX job feeds (Keras puts process i's rows
    i-th in the global batch).

    Examples:

    >>> x = {"token_ids": np.arange(8).reshape(4, 2)}
    >>> share_of_batch((x, np.arange(4)), 1, 2)
    ({'token_ids': array([[4, 5],
           [6, 7]])}, array([2, 3]))
    """
    rows = len(keras.tree.flatten(batch)[0])
    if rows % count:
        raise ValueError(f"a batch of {rows} rows does not split into {count} equal shares.")
    share = rows // count
    return keras.tree.map_structure(lambda a: a[index * share:(index + 1) * share], batch)


def predict_bucketed(model, features, batch_size=32, dynamic_padding=True, max_length=None, pad_to_multiple_of=8,
                     padding_values=None, output_length=None, select=None, progress=False):
    """`model`'s outputs for every example, in the original order, from length-sorted padded batches.

    Args:
        model: a Keras model taking the padded feature dict.
        features: dict name -> list of N per-example sequences.
        batch_size: examples per batch.
        dynamic_padding: sort by length and pad each batch to its longest example (default); False pads
            every batch to `max_length`.
        max_length: fixed length when `dynamic_padding=False`.
        pad_to_multiple_of: rounding of dynamic lengths.
        padding_values: dict name -> padding value.
        output_length: None, or the length every batch's outputs get on axis 1 (padded with zeros, or their
            padding positions cut), so that batches of different lengths join: for outputs that are all per
            position (e.g. a tagger's logits [B, T_batch, K]); at least the longest example's length.
        select: None, or a function of a batch's outputs to the outputs kept (e.g. a backbone's
            `hidden_states` only).
        progress: show a progress bar over the batches (`utils.progress.progress_bar`: drawn on a terminal,
            one line at the end in a file).

    Returns:
        numpy array [N, ...] (or a dict of them when the model returns a dict).
    """
    lengths = example_lengths(features)
    plan = plan_batches(lengths, batch_size, shuffle=False, sort_by_length=dynamic_padding)
    bar = progress_bar(len(plan), unit_name="batch") if progress else None
    outputs = []
    for step, indices in enumerate(plan):
        x = pad_batch(features, indices, length=None if dynamic_padding else max_length,
                      pad_to_multiple_of=pad_to_multiple_of, padding_values=padding_values)
        out = model.predict_on_batch(x)
        if select is not None:
            out = select(out)
        out = keras.tree.map_structure(lambda t: np.asarray(keras.ops.convert_to_numpy(t)), out)
        if output_length is not None:
            out = keras.tree.map_structure(lambda a: _pad_axis1(a, output_length), out)
        outputs.append(out)
        if bar is not None:
            bar.update(step + 1)
    order = np.concatenate(plan) if plan else np.zeros(0, np.int64)
    inverse = np.empty_like(order)
    inverse[order] = np.arange(len(order))

    def restore(*parts):
        return np.concatenate(parts, axis=0)[inverse]

    return keras.tree.map_structure(restore, *outputs)


def _pad_axis1(array, length):
    """`array` [B, T, ...] as [B, length, ...]: cut, or padded with zeros."""
    if array.shape[1] >= length:
        return array[:, :length]
    return np.pad(array, [(0, 0), (0, length - array.shape[1])] + [(0, 0)] * (array.ndim - 2))
