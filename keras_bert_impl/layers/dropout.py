"""Dropout: Keras' layer, with the backend's faster mask where it has one (`keras_bert_impl.backends.dropout`).

The same computation as `keras.layers.Dropout` (each value zeroed with probability `rate`, the others
scaled by 1 / (1 - rate)) with the same seed generator, config and weights (none), so a model saved with
either loads into the other.
"""

import keras

from keras_bert_impl import backends


@keras.saving.register_keras_serializable(package="keras_bert_impl")
class BertDropout(keras.layers.Dropout):
    """`keras.layers.Dropout` that draws its mask through `backends.dropout`.

    On torch, Keras' unseeded dropout calls `torch.nn.functional.dropout` on torch's default generator;
    `backends.dropout` draws from the same generator. On JAX's CPU in one process it runs Keras' dropout,
    from the layer's seed generator, with the bits of JAX's original threefry layout instead of the
    partitionable one. A `seed` or a `noise_shape` takes Keras' path on every backend.

    Examples:

    >>> layer = BertDropout(0.5)
    >>> x = keras.ops.ones((4, 1000))
    >>> bool(keras.ops.all(layer(x) == x))  # inference: unchanged
    True
    >>> y = keras.ops.convert_to_numpy(layer(x, training=True))
    >>> sorted(set(y.ravel().tolist())), bool(0.45 < (y == 0).mean() < 0.55)
    ([0.0, 2.0], True)
    """

    def call(self, inputs, training=False):
        if training and 0 < self.rate < 1 and self.seed is None and self.noise_shape is None:
            return backends.dropout(inputs, self.rate, lambda: super(BertDropout, self).call(inputs, training=training))
        return super().call(inputs, training=training)


def dropout_in_training(layer, inputs, training):
    """`layer(inputs, training=training)` in training, else `inputs` itself: what a Dropout layer returns
    outside training, without the layer call (about 0.1 ms of Python on torch; a 6-layer encoder's forward
    makes 13 of them)."""
    return layer(inputs, training=training) if training else inputs
