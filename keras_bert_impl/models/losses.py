"""The losses the task models compute themselves, with Keras' `sample_weight` applied.

Keras applies `sample_weight` to a loss given to `compile`; a model that computes its own loss in
`compute_loss` (token tagging, span QA, pre-training) gets the weights as an argument and must apply them
itself. Here it is done as Keras does for its own losses ("sum_over_batch_size"): each example's loss is
multiplied by its weight and the sum is divided by the unweighted count (examples, or labelled tokens),
so weights of 0 give a loss of 0 and weights of 1 give the unweighted loss.

`sample_weight` is per example, [B] (or [B, 1]); the token losses also take one weight per token, [B, T].
When the labels are a dict, Keras passes one weight per label, under the label's key (the same array for
each, when `fit` was given one).
"""

import keras
from keras import ops

# Label id of the positions that are not predicted (as in Hugging Face / PyTorch's CrossEntropyLoss).
IGNORE_LABEL_ID = -100


def example_weights(sample_weight, batch_size, key=None):
    """`sample_weight` [B] or [B, 1] (or a dict of them, read at `key`) as float32 [B]; ones [B] when None."""
    if isinstance(sample_weight, dict):
        sample_weight = sample_weight[key]
    if sample_weight is None:
        return ops.ones((batch_size,), "float32")
    return ops.reshape(ops.cast(sample_weight, "float32"), (-1,))  # [B]


def token_weights(sample_weight, labels):
    """The weight of every token [B, T], float32: 0 at ignored positions (label -100), else the example's
    (`sample_weight` [B] or [B, 1]) or the token's (`sample_weight` [B, T]) weight, 1 without weights."""
    labels = ops.cast(labels, "int32")  # [B, T]
    weights = ops.cast(ops.not_equal(labels, IGNORE_LABEL_ID), "float32")  # [B, T]
    if sample_weight is None:
        return weights
    sample_weight = ops.cast(sample_weight, "float32")
    if len(sample_weight.shape) == 1:
        sample_weight = ops.expand_dims(sample_weight, 1)  # [B, 1]; [B, 1] and [B, T] broadcast as they are
    return weights * sample_weight  # [B, T]


def token_classification_loss(labels, logits, sample_weight=None):
    """Mean cross-entropy over the labelled tokens (label != -100), each weighted by `sample_weight`.

    Args:
        labels: int [B, T], -100 at the positions left out.
        logits: [B, T, K].
        sample_weight: None, [B] (per example) or [B, T] (per token).

    Returns:
        float32 scalar: sum(weight * nll) / (number of labelled tokens, at least 1).

    Examples:

    >>> labels = keras.ops.convert_to_tensor([[1, -100, 0]])
    >>> logits = keras.ops.zeros((1, 3, 2))
    >>> round(float(token_classification_loss(labels, logits)), 4)  # ln 2
    0.6931
    >>> float(token_classification_loss(labels, logits, sample_weight=keras.ops.zeros((1,))))
    0.0
    """
    labels = ops.cast(labels, "int32")  # [B, T]
    labelled = ops.cast(ops.not_equal(labels, IGNORE_LABEL_ID), "float32")  # [B, T]
    safe_labels = ops.where(labelled > 0, labels, 0)  # -100 -> 0, weighted out below
    nll = keras.losses.sparse_categorical_crossentropy(safe_labels, ops.cast(logits, "float32"), from_logits=True)
    weights = token_weights(sample_weight, labels)  # [B, T]
    return ops.sum(nll * weights) / ops.maximum(ops.sum(labelled), 1.0)


def token_hits(labels, logits, sample_weight=None):
    """`(correct, weights)` [B, T] float32 for a token accuracy that leaves out the -100 positions:
    `correct` is 1 where the argmax of `logits` is the label, `weights` is `token_weights`."""
    labels = ops.cast(labels, "int32")
    correct = ops.cast(ops.equal(ops.cast(ops.argmax(logits, axis=-1), "int32"), labels), "float32")
    return correct, token_weights(sample_weight, labels)
