"""Dynamic masking (RoBERTa-style): BERT's masked-LM rules applied inside a `tf.data` pipeline, to unmasked
packed pairs, with fresh randomness every epoch.

`mask_features` is the masking of `data/masked_lm_predictions.py` (the original's rules, the same
MASK/SAME/RND split, whole-word masking) as a pure function of a stateless seed, over a batch at once;
`apply_dynamic_masking` maps it over a dataset with a new seed per element and epoch. The unmasked pairs
come from `data/tf_pretraining_datasets.py`; the result has the `(x, y)` structure of the masked files
(`data/tf_pretraining_records.py`).
"""

import inspect
from typing import Optional, Sequence

from keras_bert_impl.utils.optional_dependencies import require

# Without TensorFlow: one line naming the extra to install, before `import tensorflow` fails.
require("dynamic masking (a tf.data pipeline: data/tf_dynamic_masking.py)", "tensorflow", ("tensorflow",))

import tensorflow as tf

from keras_bert_impl.data.masked_lm_predictions import check_masking_split


def mask_features(
    features: dict,
    seed,
    *,
    vocab_size: int,
    mask_token_id: int,
    special_token_ids: Sequence[int],
    masked_lm_prob: float = 0.15,
    max_predictions_per_seq: int = 20,
    whole_word_mask: bool = False,
    random_token_range: Optional[Sequence[int]] = None,
    mask_token_prob: float = 0.8,
    keep_token_prob: float = 0.1,
    random_token_prob: float = 0.1,
):
    """Masks unmasked packed examples with the original's rules, as a pure function of a stateless seed.

    Works on one example (`[seq]` tensors) or a batch (`[batch, seq]`). Per example, as
    `masked_lm_predictions.create_masked_lm_predictions`: candidates are the real tokens (`padding_mask` 1)
    other than `special_token_ids` ([CLS], [SEP], [PAD] ...); with `whole_word_mask` a candidate with
    `word_starts` 0 joins the word right before it; words are taken in a random order while the number of
    predictions stays within `min(max_predictions_per_seq, max(1, round(n * masked_lm_prob)))` (n = real
    tokens; a word that would overflow is skipped); each chosen word becomes [MASK] (`mask_token_prob`, 80%),
    stays (`keep_token_prob`, 10%) or becomes random tokens (`random_token_prob`, 10%), decided once per word
    by one uniform draw u: [MASK] if u < mask_token_prob, random if u >= 1 - random_token_prob, else kept.
    Positions come out sorted, zero-padded.

    Args:
        features: Dict with int `token_ids`, `segment_ids`, `padding_mask`, `next_sentence_labels`, and
            `word_starts` when `whole_word_mask`.
        seed: A shape-[2] integer tensor (stateless random seed); the same seed gives the same masks.
        vocab_size: Vocabulary size (random replacements are uniform over `random_token_range`).
        mask_token_id: Id of "[MASK]".
        special_token_ids: Ids never masked, e.g. `[cls_id, sep_id, pad_id]`.
        masked_lm_prob: Fraction of tokens to predict.
        max_predictions_per_seq: Upper bound on predictions, and the padded length of the outputs.
        whole_word_mask: Mask whole words (needs `features["word_starts"]`).
        random_token_range: `(low, high)` ids of random replacements; default `(0, vocab_size)`, the whole
            vocabulary as the original.
        mask_token_prob: Probability that a chosen word becomes [MASK] (paper Table 8's MASK).
        keep_token_prob: Probability that it stays itself (SAME).
        random_token_prob: Probability that it becomes random tokens (RND, uniform over
            `random_token_range`, so possibly the token itself). The three sum to 1.

    Returns:
        `(x, y)` in the structure of `tf_pretraining_records.parsed_to_inputs_and_labels`.

    Examples:

    >>> f = {"token_ids": tf.constant([2, 7, 8, 9, 3, 0]), "segment_ids": tf.zeros([6], tf.int32),
    ...      "padding_mask": tf.constant([1, 1, 1, 1, 1, 0]), "next_sentence_labels": tf.constant(0)}
    >>> x, y = mask_features(f, tf.constant([1, 2]), vocab_size=10, mask_token_id=4,
    ...                      special_token_ids=[0, 2, 3], max_predictions_per_seq=3)
    >>> int(tf.reduce_sum(y["masked_lm_weights"]))
    1
    """
    check_masking_split(mask_token_prob, keep_token_prob, random_token_prob)
    unbatched = tf.convert_to_tensor(features["token_ids"]).shape.rank == 1

    def batched(name):  # [seq] -> [1, seq]; a batch as it is
        t = tf.convert_to_tensor(features[name])
        return t[tf.newaxis] if unbatched else t

    token_ids = tf.cast(batched("token_ids"), tf.int32)  # [B, T]
    padding = tf.cast(batched("padding_mask"), tf.bool)  # [B, T]
    if whole_word_mask and "word_starts" not in features:
        raise ValueError("whole_word_mask needs a 'word_starts' feature")
    word_starts = tf.cast(batched("word_starts"), tf.bool) if whole_word_mask else tf.ones_like(padding)
    shuffle_seed, decision_seed, token_seed = tf.unstack(
        tf.random.experimental.stateless_split(tf.cast(seed, tf.int64), num=3))

    candidates = padding & ~_is_special(token_ids, special_token_ids)  # [B, T]
    group_id, num_groups = _word_groups(candidates, word_starts)  # [B, T], [B]
    num_to_predict = _num_to_predict(padding, masked_lm_prob, max_predictions_per_seq)  # [B]
    chosen_group = _chosen_words(_group_sizes(candidates, group_id), num_groups, num_to_predict, shuffle_seed,
                                 whole_word_mask)  # [B, group]
    chosen = candidates & tf.gather(chosen_group, group_id, batch_dims=1)  # [B, T]
    low, high = random_token_range if random_token_range is not None else (0, vocab_size)
    masked_ids = _replaced_tokens(token_ids, chosen, group_id, decision_seed, token_seed, mask_token_id, low, high,
                                  mask_token_prob, random_token_prob)  # [B, T]
    positions, labels, valid = _sorted_predictions(token_ids, chosen, max_predictions_per_seq)  # [B, P] each

    x = {
        "token_ids": masked_ids,
        "segment_ids": tf.cast(batched("segment_ids"), tf.int32),
        "padding_mask": tf.cast(padding, tf.int32),
        "masked_lm_positions": positions,
    }
    y = {
        "masked_lm_ids": labels,
        "masked_lm_weights": tf.cast(valid, tf.float32),
        "next_sentence_labels": tf.cast(tf.reshape(features["next_sentence_labels"], [-1]), tf.int32),
    }
    if unbatched:
        x = {k: v[0] for k, v in x.items()}
        y = {k: v[0] for k, v in y.items()}
    return x, y


def _is_special(token_ids, special_token_ids):
    """[B, T] bool: the tokens never masked ([CLS], [SEP], [PAD] ...; the original skips [CLS] and [SEP])."""
    special = tf.constant(list(special_token_ids), tf.int32)
    return tf.reduce_any(token_ids[..., tf.newaxis] == special, axis=-1)


def _word_groups(candidates, word_starts):
    """Each candidate's word: its group index [B, T] (0 where not a candidate) and the groups per row [B].

    A candidate starts a new group unless it is a "##" piece (`word_starts` 0) right after a candidate.
    """
    previous_is_candidate = tf.concat([tf.zeros_like(candidates[:, :1]), candidates[:, :-1]], axis=1)
    is_start = candidates & (word_starts | ~previous_is_candidate)
    group_id = tf.cumsum(tf.cast(is_start, tf.int32), axis=1) - 1  # valid where a candidate
    return tf.maximum(group_id, 0), tf.reduce_sum(tf.cast(is_start, tf.int32), axis=1)


def _group_sizes(candidates, group_id):
    """[B, T]: the number of tokens of group g of row b at [b, g] (0 past the row's groups)."""
    batch, seq_len = tf.shape(candidates)[0], tf.shape(candidates)[1]
    row = tf.repeat(tf.range(batch)[:, tf.newaxis], seq_len, axis=1)
    flat_group = tf.where(candidates, row * seq_len + group_id, batch * seq_len)  # a dummy slot for non-candidates
    sizes = tf.math.unsorted_segment_sum(tf.cast(candidates, tf.int32), flat_group, batch * seq_len + 1)
    return tf.reshape(sizes[:-1], [batch, seq_len])


def _num_to_predict(padding, masked_lm_prob, max_predictions_per_seq):
    """[B]: `min(max_predictions_per_seq, max(1, round(n * masked_lm_prob)))`, n the row's real tokens."""
    num_tokens = tf.reduce_sum(tf.cast(padding, tf.int32), axis=1)
    num_to_predict = tf.cast(tf.round(tf.cast(num_tokens, tf.float64) * masked_lm_prob), tf.int32)
    return tf.minimum(max_predictions_per_seq, tf.maximum(1, num_to_predict))


def _chosen_words(sizes, num_groups, num_to_predict, seed, whole_word_mask):
    """[B, group] bool: the words to predict. The groups are shuffled (the original's
    `rng.shuffle(cand_indexes)`: random keys sorted, absent groups last) and taken in that order: one-token
    words, the first `num_to_predict`; whole words, each that still fits (the original's loop skips a word
    that would overflow)."""
    batch, seq_len = tf.shape(sizes)[0], tf.shape(sizes)[1]
    group_index = tf.range(seq_len)[tf.newaxis, :]
    keys = tf.random.stateless_uniform([batch, seq_len], seed=seed)
    keys = tf.where(group_index < num_groups[:, tf.newaxis], keys, 2.0)
    order = tf.argsort(keys, axis=1, stable=True)  # group ids in shuffled order
    sizes_ordered = tf.gather(sizes, order, batch_dims=1)
    if whole_word_mask:
        def step(count, size):
            take = (size > 0) & (count + size <= num_to_predict)
            return count + tf.where(take, size, 0)

        counts = tf.scan(step, tf.transpose(sizes_ordered), initializer=tf.zeros([batch], tf.int32))
        counts = tf.transpose(counts)  # [B, group]: predictions after each word
        previous_counts = tf.concat([tf.zeros_like(counts[:, :1]), counts[:, :-1]], axis=1)
        chosen_ordered = counts > previous_counts
    else:
        chosen_ordered = (group_index < num_to_predict[:, tf.newaxis]) & (sizes_ordered > 0)
    inverse = tf.argsort(order, axis=1, stable=True)
    return tf.gather(chosen_ordered, inverse, batch_dims=1)


def _replaced_tokens(token_ids, chosen, group_id, decision_seed, token_seed, mask_token_id, low, high,
                     mask_token_prob, random_token_prob):
    """`token_ids` [B, T] with each chosen word replaced: one uniform draw u per word, [MASK] if
    u < mask_token_prob, random tokens (one per position, uniform in [low, high)) if u >= 1 - random_token_prob,
    else kept (80/10/10 by default)."""
    batch, seq_len = tf.shape(token_ids)[0], tf.shape(token_ids)[1]
    decision = tf.gather(tf.random.stateless_uniform([batch, seq_len], seed=decision_seed), group_id, batch_dims=1)
    random_tokens = tf.random.stateless_uniform([batch, seq_len], seed=token_seed, minval=low, maxval=high,
                                                dtype=tf.int32)
    is_masked = chosen & (decision < float(mask_token_prob))
    masked_ids = tf.where(is_masked, mask_token_id, token_ids)
    is_random = chosen & ~is_masked & (decision >= 1.0 - float(random_token_prob))
    return tf.where(is_random, random_tokens, masked_ids)


def _sorted_predictions(token_ids, chosen, max_predictions_per_seq):
    """The chosen positions sorted and zero-padded to `max_predictions_per_seq` [B, P], the original tokens
    there (0 in the padding) [B, P], and which entries are predictions [B, P]."""
    batch, seq_len = tf.shape(token_ids)[0], tf.shape(token_ids)[1]
    index = tf.range(seq_len)[tf.newaxis, :]
    positions = tf.where(chosen, tf.broadcast_to(index, tf.shape(chosen)), seq_len)
    positions = tf.concat([positions, tf.fill([batch, max_predictions_per_seq], seq_len)], axis=1)
    positions = tf.sort(positions, axis=1)[:, :max_predictions_per_seq]
    valid = positions < seq_len
    positions = tf.where(valid, positions, 0)
    labels = tf.where(valid, tf.gather(token_ids, positions, batch_dims=1), 0)
    return positions, labels, valid


def apply_dynamic_masking(dataset: tf.data.Dataset, *, seed: Optional[int] = None,
                          num_parallel_calls=tf.data.AUTOTUNE, **masking) -> tf.data.Dataset:
    """Masks a dataset of unmasked packed examples on the fly, differently every epoch (RoBERTa).

    Each element (one example or a batch) gets a stateless seed from
    `tf.data.Dataset.random(seed, rerandomize_each_iteration=True)`, so every pass over the dataset (each
    new iterator, each `repeat`) draws new masks, while a fixed `seed` makes the whole sequence of epochs
    reproducible. The masking rules are those of `mask_features`.

    Args:
        dataset: Elements are dicts with `token_ids`, `segment_ids`, `padding_mask`, `next_sentence_labels`
            (and `word_starts` for whole-word masking), unbatched or batched.
        seed: Seed of the sequence of epochs; None for nondeterministic.
        num_parallel_calls: Parallelism of the map.
        **masking: The keyword arguments of `mask_features`: `vocab_size`, `mask_token_id` and
            `special_token_ids` (required; `masking_token_ids(vocab)` gives them), `masked_lm_prob`,
            `max_predictions_per_seq`, `whole_word_mask`, `random_token_range`, `mask_token_prob`,
            `keep_token_prob`, `random_token_prob`. Checked here, at the call, not in the map.

    Returns:
        A dataset of `(x, y)` as `tf_pretraining_datasets.pretraining_dataset` gives.

    Examples:

    >>> pairs = {"token_ids": [[2, 7, 8, 3, 9, 3], [2, 8, 3, 7, 3, 0]], "segment_ids": [[0, 0, 0, 0, 1, 1]] * 2,
    ...          "padding_mask": [[1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 1, 0]], "next_sentence_labels": [0, 1]}
    >>> ds = tf.data.Dataset.from_tensor_slices(pairs).batch(2)
    >>> ds = apply_dynamic_masking(ds, vocab_size=10, mask_token_id=4, special_token_ids=[0, 2, 3], seed=1)
    >>> x, y = next(iter(ds))
    >>> sorted(x), sorted(y)
    (['masked_lm_positions', 'padding_mask', 'segment_ids', 'token_ids'], ['masked_lm_ids', 'masked_lm_weights', 'next_sentence_labels'])
    """
    rules = inspect.signature(mask_features).bind(None, None, **masking)  # a missing or unknown one: TypeError
    rules.apply_defaults()
    check_masking_split(rules.arguments["mask_token_prob"], rules.arguments["keep_token_prob"],
                        rules.arguments["random_token_prob"])
    seeds = tf.data.Dataset.random(seed=seed, rerandomize_each_iteration=True).batch(2)
    return tf.data.Dataset.zip((dataset, seeds)).map(
        lambda features, s: mask_features(features, s, **masking), num_parallel_calls=num_parallel_calls
    )


def masking_token_ids(vocab) -> dict:
    """The ids `apply_dynamic_masking` needs, from a BERT vocabulary (dict token -> id).

    Args:
        vocab: `tokenizer.vocab`.

    Returns:
        `{"vocab_size", "mask_token_id", "special_token_ids"}` ([PAD], [CLS], [SEP] as special).

    Examples:

    >>> masking_token_ids({"[PAD]": 0, "[CLS]": 1, "[SEP]": 2, "[MASK]": 3, "a": 4})
    {'vocab_size': 5, 'mask_token_id': 3, 'special_token_ids': [0, 1, 2]}
    """
    return {
        "vocab_size": len(vocab),
        "mask_token_id": vocab["[MASK]"],
        "special_token_ids": [vocab[t] for t in ("[PAD]", "[CLS]", "[SEP]") if t in vocab],
    }
