"""The bucketed, dynamically padded batches of `keras_bert_impl.data.batching` (a training set in memory,
`bucketed_dataset`) and of `keras_bert_impl.data.streaming` (a training file streamed, `streamed_dataset`) as
a `tf.data.Dataset`.

TensorFlow by nature (tf.data); the Keras trainers of all three backends read a `tf.data.Dataset`, so the
fine-tuning recipes use it on TensorFlow, JAX and PyTorch alike.

On a TPU (`static_shapes=True`), every batch has the same, fully known shape: the dataset is padded to
`max_length` and only whole batches are kept, which is what XLA on a TPU needs.
"""

import numpy as np

from keras_bert_impl.utils.optional_dependencies import require

# Without TensorFlow: one line naming the extra to install, before `import tensorflow` fails.
require("tf.data batches (data/tf_batching.py)", "tensorflow", ("tensorflow",))

import tensorflow as tf

from keras_bert_impl.data.batching import _is_nested, _is_ragged_labels, bucketed_batches, num_batches


def _label_signature(labels, batch, length):
    if isinstance(labels, dict):
        return {k: _label_signature(v, batch, length) for k, v in labels.items()}
    if _is_ragged_labels(labels):
        dtype = tf.float32 if np.asarray(labels[0]).dtype.kind == "f" else tf.int32
        return tf.TensorSpec([batch] + [length] * np.ndim(labels[0]), dtype)
    array = np.asarray(labels)
    return tf.TensorSpec([batch, *array.shape[1:]], tf.float32 if array.dtype.kind == "f" else tf.int32)


def bucketed_dataset(features, labels=None, batch_size=32, shuffle=False, seed=0, static_shapes=False, initial_epoch=0,
                     **kwargs):
    """`batching.bucketed_batches` as a `tf.data.Dataset` for `model.fit` / `evaluate` (any Keras backend).

    Every pass over the dataset (every epoch) draws a new shuffling seed (`seed + initial_epoch`, then
    `+ 1`, ...): a run resumed at epoch k passes `initial_epoch=k` and sees the batches an uninterrupted run
    saw in epoch k.
    The dataset knows its number of batches, so Keras shows the progress bar's total.

    Args:
        features, labels, batch_size, shuffle, seed: as in `bucketed_batches`.
        initial_epoch: the epoch (0-based) of the first pass.
        static_shapes: TPU mode: every batch padded to `max_length` (no dynamic padding) and only whole
            batches (`drop_remainder`), with those shapes in the dataset's signature.
        **kwargs: the other arguments of `bucketed_batches` (dynamic_padding, max_length, ...).

    Examples:

    >>> features = {"token_ids": [[101, 5, 102], [101, 102], [101, 7, 8, 9, 102]]}
    >>> dataset = bucketed_dataset(features, np.array([0, 1, 0]), batch_size=2, shuffle=True, pad_to_multiple_of=1)
    >>> int(dataset.cardinality()), sorted(tuple(x["token_ids"].shape) for x, y in dataset)
    (2, [(1, 5), (2, 3)])

    `model.fit(dataset, epochs=3, shuffle=False)` trains on it; every epoch gets a new order (the dataset
    shuffles itself; Keras' default `shuffle=True` would only warn that it ignores a dataset).
    """
    kwargs = _static_options(static_shapes, kwargs)
    count = num_batches(len(next(iter(features.values()))), batch_size, kwargs.get("drop_remainder", False))
    return _epochs_dataset(
        lambda epoch_seed: bucketed_batches(features, labels, batch_size=batch_size, shuffle=shuffle, seed=epoch_seed,
                                            **kwargs),
        _signature(features, labels, batch_size, static_shapes, kwargs), count, seed, initial_epoch)


def streamed_dataset(stream, batch_size=32, seed=0, static_shapes=False, initial_epoch=0, **kwargs):
    """The epochs of a `streaming.StreamedExamples` (`epoch_batches`, seeded `seed + epoch`) as a
    `tf.data.Dataset`, as `bucketed_dataset` makes one of a set in memory (`static_shapes`, `initial_epoch`:
    as there; `kwargs`: the other arguments of `epoch_batches`)."""
    kwargs = _static_options(static_shapes, kwargs)
    count = num_batches(stream.num_examples, batch_size, kwargs.get("drop_remainder", False))
    features, labels = stream.sample()
    return _epochs_dataset(lambda epoch_seed: stream.epoch_batches(batch_size, epoch_seed, **kwargs),
                           _signature(features, labels, batch_size, static_shapes, kwargs), count, seed, initial_epoch)


def _static_options(static_shapes, kwargs):
    """The batching arguments of TPU mode: padded to `max_length`, whole batches only."""
    if not static_shapes:
        return kwargs
    if kwargs.get("max_length") is None:
        raise ValueError("static_shapes=True needs max_length, the fixed length of every batch.")
    return dict(kwargs, dynamic_padding=False, drop_remainder=True)


def _signature(features, labels, batch_size, static_shapes, kwargs):
    """The `(x, y)` (or `x`) signature of batches of `features` and `labels` (examples of them suffice)."""
    batch, length = (batch_size, kwargs["max_length"]) if static_shapes else (None, None)

    def feature_spec(values):
        if len(values) and _is_nested(values[0]):
            return tf.TensorSpec([batch, len(values[0]), length], tf.int32)
        return tf.TensorSpec([batch, length], tf.int32)

    x_signature = {k: feature_spec(v) for k, v in features.items()}
    return x_signature if labels is None else (x_signature, _label_signature(labels, batch, length))


def _epochs_dataset(epoch_batches, signature, count, seed, initial_epoch):
    """A dataset whose k-th pass yields `epoch_batches(seed + initial_epoch + k)`, of `count` batches."""
    epoch = [int(initial_epoch)]

    def generator():
        epoch_seed = seed + epoch[0]
        epoch[0] += 1
        yield from epoch_batches(epoch_seed)

    dataset = tf.data.Dataset.from_generator(generator, output_signature=signature)
    dataset = dataset.apply(tf.data.experimental.assert_cardinality(count))
    return dataset.prefetch(2)
