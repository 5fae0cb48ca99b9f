"""The batches of the pretraining objectives other than masked LM + next sentence (the paper's Table 5),
made from the masked batches of `data/tf_pretraining_datasets.py`: masked LM only ("No NSP") and
left-to-right LM ("LTR & No NSP").
"""

from keras_bert_impl.utils.optional_dependencies import require

# Without TensorFlow: one line naming the extra to install, before `import tensorflow` fails.
require("tf.data pipelines of pretraining files (data/tf_pretraining_objectives.py)", "tensorflow", ("tensorflow",))

import tensorflow as tf

from keras_bert_impl.config import PRETRAINING_OBJECTIVES
from keras_bert_impl.utils.errors import UserInputError


def left_to_right_lm_batch(x: dict, y: dict):
    """A left-to-right LM example from a masked one: the original tokens and next-token targets.

    The masked files hold `[MASK]`/random tokens at `masked_lm_positions`; the original token there is
    `masked_lm_ids` (where `masked_lm_weights` > 0). Those are put back, and position t gets the token at
    t + 1 as its target, weighted 1 where that token is real (not padding, not past the end).

    Args:
        x, y: the `(x, y)` of `tf_pretraining_datasets.pretraining_dataset` (batched [batch, ...] or one example).

    Returns:
        `(x, y)`: x {`token_ids` (restored), `segment_ids`, `padding_mask`} [..., seq]; y
        {`next_token_ids` int32 [..., seq] (0 at the last position), `next_token_weights` float32
        [..., seq]}.

    Examples:

    >>> x = {"token_ids": tf.constant([[2, 4, 7, 3, 0]]), "segment_ids": tf.zeros((1, 5), tf.int32),
    ...      "padding_mask": tf.constant([[1, 1, 1, 1, 0]]), "masked_lm_positions": tf.constant([[1, 2, 0]])}
    >>> y = {"masked_lm_ids": tf.constant([[5, 6, 0]]), "masked_lm_weights": tf.constant([[1.0, 1.0, 0.0]]),
    ...      "next_sentence_labels": tf.constant([0])}
    >>> x, y = left_to_right_lm_batch(x, y)
    >>> x["token_ids"].numpy().tolist(), y["next_token_ids"].numpy().tolist()
    ([[2, 5, 6, 3, 0]], [[5, 6, 3, 0, 0]])
    >>> y["next_token_weights"].numpy().tolist()
    [[1.0, 1.0, 1.0, 0.0, 0.0]]
    """
    token_ids = tf.cast(x["token_ids"], tf.int32)  # [..., T]
    seq_length = tf.shape(token_ids)[-1]
    # [..., P, T]: one-hot of each real prediction's position.
    hits = tf.one_hot(tf.cast(x["masked_lm_positions"], tf.int32), seq_length, dtype=tf.int32)
    hits *= tf.cast(tf.cast(y["masked_lm_weights"], tf.float32) > 0, tf.int32)[..., None]
    restored_ids = tf.reduce_sum(hits * tf.cast(y["masked_lm_ids"], tf.int32)[..., None], axis=-2)  # [..., T]
    restored = tf.reduce_max(hits, axis=-2) > 0  # [..., T]
    token_ids = tf.where(restored, restored_ids, token_ids)
    padding_mask = tf.cast(x["padding_mask"], tf.int32)
    pad = tf.zeros_like(token_ids[..., :1])  # [..., 1]
    next_token_ids = tf.concat([token_ids[..., 1:], pad], axis=-1)  # [..., T]
    next_token_weights = tf.cast(tf.concat([padding_mask[..., 1:], pad], axis=-1), tf.float32)
    inputs = {"token_ids": token_ids, "segment_ids": tf.cast(x["segment_ids"], tf.int32), "padding_mask": padding_mask}
    return inputs, {"next_token_ids": next_token_ids, "next_token_weights": next_token_weights}


def masked_lm_only_batch(x: dict, y: dict):
    """`(x, y)` without `next_sentence_labels`: the targets of a masked-LM-only ("mlm") pretrainer."""
    return x, {k: v for k, v in y.items() if k != "next_sentence_labels"}


def objective_dataset(dataset: tf.data.Dataset, objective: str) -> tf.data.Dataset:
    """The `(x, y)` batches of `tf_pretraining_datasets.pretraining_dataset` (or its unmasked twin) for `objective`.

    "mlm_nsp" and "sop" (the labels' meaning is the files'): unchanged; "mlm": without
    `next_sentence_labels` (`masked_lm_only_batch`); "ltr": the original tokens and next-token targets
    (`left_to_right_lm_batch`).

    Examples:

    >>> x = {"token_ids": tf.constant([[2, 4, 3]]), "segment_ids": tf.zeros((1, 3), tf.int32),
    ...      "padding_mask": tf.ones((1, 3), tf.int32), "masked_lm_positions": tf.constant([[1]])}
    >>> y = {"masked_lm_ids": tf.constant([[5]]), "masked_lm_weights": tf.constant([[1.0]]),
    ...      "next_sentence_labels": tf.constant([0])}
    >>> ds = tf.data.Dataset.from_tensors((x, y))
    >>> sorted(next(iter(objective_dataset(ds, "mlm")))[1])
    ['masked_lm_ids', 'masked_lm_weights']
    >>> sorted(next(iter(objective_dataset(ds, "ltr")))[1])
    ['next_token_ids', 'next_token_weights']
    """
    if objective not in PRETRAINING_OBJECTIVES:
        raise UserInputError(f"objective must be one of {', '.join(PRETRAINING_OBJECTIVES)}; got {objective!r}.")
    if objective == "mlm":
        return dataset.map(masked_lm_only_batch, num_parallel_calls=tf.data.AUTOTUNE)
    if objective == "ltr":
        return dataset.map(left_to_right_lm_batch, num_parallel_calls=tf.data.AUTOTUNE)
    return dataset
