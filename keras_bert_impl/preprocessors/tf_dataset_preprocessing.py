"""tf.data datasets of raw text through a task's preprocessor (TensorFlow by nature: tf.data, tf.py_function).

A task model's `fit`, `evaluate` and `predict` call `preprocess_dataset` on a `tf.data.Dataset` whose
elements hold strings. Each batch is handed to the preprocessor in numpy (`tf.py_function`), so the ids are
those of the Python tokenizer, under every Keras backend (Keras reads tf.data datasets on all three).
"""

import numpy as np

from keras_bert_impl.utils.optional_dependencies import require

# Without TensorFlow: one line naming the extra to install, before `import tensorflow` fails.
require("raw text in a tf.data.Dataset", "tensorflow")

import tensorflow as tf


def holds_text(dataset):
    """Whether any component of the dataset's elements is a string tensor."""
    return any(getattr(spec, "dtype", None) == tf.string for spec in tf.nest.flatten(dataset.element_spec))


def _split(element):
    """Keras' element layout: a tuple of 1 to 3 parts is (x, y, sample_weight); anything else is x."""
    if isinstance(element, tuple) and 1 <= len(element) <= 3:
        return (*element, None, None)[:3]
    return element, None, None


def _join(x, y, sample_weight):
    if y is None and sample_weight is None:
        return x
    return (x, y) if sample_weight is None else (x, y, sample_weight)


def preprocess_dataset(preprocessor, dataset):
    """`dataset` (batched; elements `x`, `(x,)`, `(x, y)` or `(x, y, sample_weight)` of raw text) mapped
    through `preprocessor`. An unlabelled batch of text pairs is the 1-tuple `((first, second),)`, since
    `(first, second)` reads as `(x, y)`."""
    spec = dataset.element_spec

    def run(element):
        return _join(*preprocessor(*_split(element)))

    first = tf.nest.map_structure(lambda t: t.numpy(), next(iter(dataset.take(1))))
    sample = run(first)
    flat_sample = [np.asarray(v) for v in tf.nest.flatten(sample)]

    def numpy_batch(*flat):
        out = run(tf.nest.pack_sequence_as(spec, [t.numpy() for t in flat]))
        return [np.asarray(v, dtype=s.dtype) for v, s in zip(tf.nest.flatten(out), flat_sample)]

    def mapped(*element):
        element = element[0] if len(element) == 1 and not isinstance(spec, tuple) else element
        out = tf.py_function(numpy_batch, tf.nest.flatten(element), [tf.as_dtype(v.dtype) for v in flat_sample])
        for tensor, value in zip(out, flat_sample):
            tensor.set_shape((None,) + value.shape[1:])
        return tf.nest.pack_sequence_as(sample, out)

    return dataset.map(mapped)
