"""`tf.data` pipelines of BERT pretraining data: `(x, y)` batches read from the masked TFRecords
(`pretraining_dataset`, as `run_pretraining.py`'s input_fn), or unmasked pairs masked on the fly with fresh
randomness every epoch (RoBERTa-style dynamic masking, `data/tf_dynamic_masking.py`), read from unmasked
TFRecords (`unmasked_pretraining_dataset`) or straight from text (`unmasked_dataset_from_text`).

The records' format and the `(x, y)` structure are in `data/tf_pretraining_records.py`. `tf.data` runs under
every Keras backend; the datasets here feed `model.fit` on TensorFlow, JAX and PyTorch alike.
"""

import random
from typing import Optional, Sequence, Union

import numpy as np

from keras_bert_impl.utils.optional_dependencies import require

# Without TensorFlow: one line naming the extra to install, before `import tensorflow` fails.
require("tf.data pipelines of pretraining files (data/tf_pretraining_datasets.py)", "tensorflow", ("tensorflow",))

import tensorflow as tf

from keras_bert_impl.data.pretraining_documents import read_documents
from keras_bert_impl.data.pretraining_instances import create_training_instances, instance_to_features
from keras_bert_impl.data.tf_dynamic_masking import apply_dynamic_masking
from keras_bert_impl.data.tf_pretraining_records import (
    check_record_shapes,
    original_feature_spec,
    parsed_to_inputs_and_labels,
    unmasked_feature_spec,
    unmasked_parsed_to_features,
)


def _list_files(file_patterns) -> list:
    if isinstance(file_patterns, str):
        file_patterns = file_patterns.split(",")
    files = []
    for pattern in file_patterns:
        if pattern:
            files.extend(sorted(tf.io.gfile.glob(pattern)))
    if not files:
        raise ValueError(f"no file matches {file_patterns!r}")
    return files


def _records(files, is_training, shuffle_buffer_size, cycle_length, seed, repeat):
    """Serialized records: as `run_pretraining.py`'s input_fn (shuffled files, interleave, shuffle) for training."""
    if is_training:
        d = tf.data.Dataset.from_tensor_slices(tf.constant(files))
        d = d.shuffle(buffer_size=len(files), seed=seed, reshuffle_each_iteration=True)
        if repeat:
            d = d.repeat()
        cycle = cycle_length or min(4, len(files))
        d = d.interleave(
            tf.data.TFRecordDataset,
            cycle_length=cycle,
            num_parallel_calls=tf.data.AUTOTUNE,
            deterministic=seed is not None,
        )
        d = d.shuffle(buffer_size=shuffle_buffer_size, seed=seed, reshuffle_each_iteration=True)
    else:
        d = tf.data.TFRecordDataset(files)
        if repeat:
            d = d.repeat()
    return d


def pretraining_dataset(
    file_patterns: Union[str, Sequence[str]],
    max_seq_length: int,
    max_predictions_per_seq: int,
    batch_size: int,
    is_training: bool = True,
    drop_remainder: Optional[bool] = None,
    shuffle_buffer_size: int = 100,
    cycle_length: Optional[int] = None,
    seed: Optional[int] = None,
    repeat: Optional[bool] = None,
) -> tf.data.Dataset:
    """A `tf.data.Dataset` of `(x, y)` batches read from masked pretraining TFRecords (ours or the original's).

    Training mode follows `run_pretraining.py`: the file list is shuffled, repeated, read `cycle_length`
    files at a time (interleaved), and records are shuffled with a buffer of `shuffle_buffer_size`.
    Evaluation mode reads the files in order, once. Multi-worker sharding is by DATA (`shard_by_data`):
    each worker keeps its replicas' slices of every global batch of `batch_size`. The structure is that of
    `tf_pretraining_records.parsed_to_inputs_and_labels`: `x` has `token_ids`, `segment_ids`, `padding_mask`,
    `masked_lm_positions`; `y` has `masked_lm_ids`, `masked_lm_weights`, `next_sentence_labels`; all int32
    except the float32 weights.

    Args:
        file_patterns: Glob pattern(s): a string (comma-separated allowed) or a list.
        max_seq_length: Sequence length the files were written with.
        max_predictions_per_seq: Predictions per sequence the files were written with.
        batch_size: Examples per batch.
        is_training: Shuffle and repeat (True) or read once in order (False).
        drop_remainder: Drop the last partial batch (static shapes, as TPUs want); default `is_training`.
        shuffle_buffer_size: Record shuffle buffer for training (the original uses 100).
        cycle_length: Files read in parallel for training; default `min(4, number of files)`.
        seed: Seed for the shuffles (and deterministic interleave); None for nondeterministic.
        repeat: Repeat forever (give `steps_per_epoch` to `fit`); default `is_training`.

    Returns:
        A batched `tf.data.Dataset` of `(x, y)`.

    Examples:

    >>> import types
    >>> from keras_bert_impl.data.pretraining_instances import TrainingInstance
    >>> from keras_bert_impl.data.pretraining_records import write_instances_to_example_files
    >>> vocab = {"[PAD]": 0, "[CLS]": 1, "[SEP]": 2, "[MASK]": 3, "a": 4}
    >>> tokenizer = types.SimpleNamespace(vocab=vocab, convert_tokens_to_ids=lambda ts: [vocab[t] for t in ts])
    >>> instance = TrainingInstance(["[CLS]", "[MASK]", "[SEP]", "a", "[SEP]"], [0, 0, 0, 1, 1], True, [1], ["a"])
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "a.tfrecord")
    >>> write_instances_to_example_files([instance] * 3, tokenizer, path, 8, 2)
    3
    >>> ds = pretraining_dataset(path, 8, 2, batch_size=2, is_training=False)
    >>> [tuple(x["token_ids"].shape) for x, y in ds]  # training mode repeats: model.fit(ds, steps_per_epoch=...)
    [(2, 8), (1, 8)]
    """
    files = _list_files(file_patterns)
    check_record_shapes(files, {"input_ids": ("--max_seq_length", max_seq_length),
                                "masked_lm_positions": ("--max_predictions_per_seq", max_predictions_per_seq)})
    spec = original_feature_spec(max_seq_length, max_predictions_per_seq)
    d = _parsed_batches(files, lambda serialized: parsed_to_inputs_and_labels(tf.io.parse_example(serialized, spec)),
                        batch_size, is_training, drop_remainder, shuffle_buffer_size, cycle_length, seed, repeat)
    return shard_by_data(d.prefetch(tf.data.AUTOTUNE))


def _parsed_batches(files, parse, batch_size, is_training, drop_remainder, shuffle_buffer_size, cycle_length, seed,
                    repeat):
    """The records of `files` (`_records`) in batches of `batch_size`, each parsed by `parse` (one vectorized
    parse per batch); `drop_remainder` and `repeat` default to `is_training`."""
    drop_remainder = is_training if drop_remainder is None else drop_remainder
    repeat = is_training if repeat is None else repeat
    d = _records(files, is_training, shuffle_buffer_size, cycle_length, seed, repeat)
    return d.batch(batch_size, drop_remainder=drop_remainder).map(parse, num_parallel_calls=tf.data.AUTOTUNE)


def shard_by_data(dataset):
    """`dataset` with tf.distribute's auto-sharding set to DATA: under MultiWorkerMirroredStrategy every
    worker reads the same pipeline and keeps its own replicas' slices of each global batch (disjoint,
    their union the whole batch), so global batch k holds the examples of one process's batch k
    whatever the number of workers. Sharding by FILE would read less but changes the batches and needs
    at least as many files as workers. A single process (Mirrored, TPU, one device) is unaffected.

    Examples:

    >>> d = shard_by_data(tf.data.Dataset.range(4).batch(2))
    >>> d.options().experimental_distribute.auto_shard_policy == tf.data.experimental.AutoShardPolicy.DATA
    True
    """
    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.DATA
    return dataset.with_options(options)


def _unmasked_instance_arrays(instance, tokenizer, max_seq_length):
    f = instance_to_features(instance, tokenizer, max_seq_length, 0, with_masks=False)
    return {
        "token_ids": f["input_ids"].astype(np.int32),
        "segment_ids": f["segment_ids"].astype(np.int32),
        "padding_mask": f["input_mask"].astype(np.int32),
        "word_starts": f["word_starts"].astype(np.int32),
        "next_sentence_labels": np.int32(f["next_sentence_labels"][0]),
    }


def unmasked_dataset_from_text(
    input_files: Sequence[str],
    tokenizer,
    max_seq_length: int = 128,
    dupe_factor: int = 1,
    short_seq_prob: float = 0.1,
    sentence_order: bool = False,
    shard_size_documents: Optional[int] = 1000,
    random_seed: int = 12345,
) -> tf.data.Dataset:
    """Unmasked packed NSP (or SOP) pairs straight from text, streamed through `tf.data` (no files).

    The pairs are those of `pretraining_instances.create_training_instances(..., do_masking=False)` (the same
    document/pair logic as the masked files, same `random_seed` semantics), padded to `max_seq_length`.
    Every pass over the dataset re-reads the text and rebuilds the same pairs; mask them with
    `apply_dynamic_masking` for fresh masks every epoch.

    Args:
        input_files: Text files (one sentence per line, blank line between documents).
        tokenizer: Anything with `tokenize`, `convert_tokens_to_ids`, `vocab`.
        max_seq_length: Padded sequence length.
        dupe_factor: Passes over each shard of documents (different pairs each pass).
        short_seq_prob: Probability of a shorter target length.
        sentence_order: Sentence-order (ALBERT) pairs instead of next-sentence pairs.
        shard_size_documents: Documents held in memory at once (the NSP random document comes from the shard).
        random_seed: Seed of the `random.Random` choosing the pairs.

    Returns:
        An unbatched dataset of dicts: int32 `token_ids`, `segment_ids`, `padding_mask`, `word_starts`
        ([max_seq_length]) and scalar `next_sentence_labels`.

    Examples:

    >>> import os, tempfile
    >>> from keras_bert_impl.tokenizers.bert_tokenizer import BertTokenizer
    >>> d = tempfile.mkdtemp()
    >>> with open(os.path.join(d, "vocab.txt"), "w") as f:
    ...     _ = f.write("\\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "dog", "sat", "ran"]))
    >>> with open(os.path.join(d, "corpus.txt"), "w") as f:
    ...     _ = f.write("the cat sat\\nthe dog ran\\n\\nthe dog sat\\nthe cat ran\\n")
    >>> tokenizer = BertTokenizer(os.path.join(d, "vocab.txt"))
    >>> ds = unmasked_dataset_from_text([os.path.join(d, "corpus.txt")], tokenizer, 16)
    >>> sorted(next(iter(ds)))
    ['next_sentence_labels', 'padding_mask', 'segment_ids', 'token_ids', 'word_starts']
    """
    input_files = list(input_files)

    def generator():
        instances = create_training_instances(
            read_documents(input_files, tokenizer),
            list(tokenizer.vocab.keys()),
            random.Random(random_seed),
            max_seq_length=max_seq_length,
            dupe_factor=dupe_factor,
            short_seq_prob=short_seq_prob,
            sentence_order=sentence_order,
            shard_size_documents=shard_size_documents,
            do_masking=False,
        )
        for instance in instances:
            yield _unmasked_instance_arrays(instance, tokenizer, max_seq_length)

    seq = tf.TensorSpec([max_seq_length], tf.int32)
    signature = {
        "token_ids": seq,
        "segment_ids": seq,
        "padding_mask": seq,
        "word_starts": seq,
        "next_sentence_labels": tf.TensorSpec([], tf.int32),
    }
    return tf.data.Dataset.from_generator(generator, output_signature=signature)


def unmasked_pretraining_dataset(file_patterns: Union[str, Sequence[str]], max_seq_length: int, batch_size: int, *,
                                 is_training: bool = True, drop_remainder: Optional[bool] = None,
                                 shuffle_buffer_size: int = 100, cycle_length: Optional[int] = None,
                                 seed: Optional[int] = None, repeat: Optional[bool] = None, **masking) -> tf.data.Dataset:
    """`(x, y)` batches from unmasked TFRecords, masked on the fly (fresh masks every epoch).

    Reads files written with `pretraining_records.write_instances_to_example_files(..., with_masks=False)`
    (e.g. by `create_pretraining_data --dynamic_masking`) as `pretraining_dataset` reads masked ones, then
    applies `apply_dynamic_masking` to each batch. The output structure equals `pretraining_dataset`'s.

    Args:
        file_patterns: Glob pattern(s).
        max_seq_length: Sequence length the files were written with.
        batch_size: Examples per batch.
        is_training: Shuffle and repeat, or read once in order.
        drop_remainder: Drop the last partial batch; default `is_training`.
        shuffle_buffer_size: Record shuffle buffer for training.
        cycle_length: Files read in parallel for training.
        seed: Seed for shuffles and masks; None for nondeterministic.
        repeat: Repeat forever; default `is_training`.
        **masking: The masking arguments of `apply_dynamic_masking`: `vocab_size`, `mask_token_id`,
            `special_token_ids` (required; `tf_dynamic_masking.masking_token_ids(vocab)` gives all three),
            `masked_lm_prob`, `max_predictions_per_seq`, `whole_word_mask` (uses the files'
            `word_starts`), `random_token_range`, `mask_token_prob`, `keep_token_prob`, `random_token_prob`.

    Returns:
        A batched dataset of `(x, y)`.

    Examples:

    >>> import os, tempfile, types
    >>> from keras_bert_impl.data.pretraining_instances import TrainingInstance
    >>> from keras_bert_impl.data.pretraining_records import write_instances_to_example_files
    >>> vocab = {"[PAD]": 0, "[CLS]": 1, "[SEP]": 2, "[MASK]": 3, "a": 4, "b": 5}
    >>> tokenizer = types.SimpleNamespace(vocab=vocab, convert_tokens_to_ids=lambda ts: [vocab[t] for t in ts])
    >>> instance = TrainingInstance(["[CLS]", "a", "b", "[SEP]", "a", "[SEP]"], [0, 0, 0, 0, 1, 1], False)
    >>> path = os.path.join(tempfile.mkdtemp(), "a.tfrecord")
    >>> write_instances_to_example_files([instance] * 2, tokenizer, path, 8, 2, with_masks=False)
    2
    >>> from keras_bert_impl.data.tf_dynamic_masking import masking_token_ids
    >>> ids = masking_token_ids(tokenizer.vocab)
    >>> ds = unmasked_pretraining_dataset(path, 8, 2, is_training=False, max_predictions_per_seq=2, seed=1, **ids)
    >>> x, y = next(iter(ds))
    >>> tuple(x["masked_lm_positions"].shape), tuple(y["masked_lm_weights"].shape)
    ((2, 2), (2, 2))
    """
    spec = unmasked_feature_spec(max_seq_length)
    d = _parsed_batches(_list_files(file_patterns), lambda s: unmasked_parsed_to_features(tf.io.parse_example(s, spec)),
                        batch_size, is_training, drop_remainder, shuffle_buffer_size, cycle_length, seed, repeat)
    return apply_dynamic_masking(d, seed=seed, **masking).prefetch(tf.data.AUTOTUNE)
