"""keras_bert_impl.data.batching: dynamic padding, length bucketing, every example once, padding-invariant outputs."""

import numpy as np
import pytest

from keras_bert_impl.data import batching
from keras_bert_impl.models.backbone import BertBackbone
from keras_bert_impl.models.classifier import BertClassifier
from keras_bert_impl.config import BertConfig
from keras_bert_impl.models.multiple_choice import BertMultipleChoice

TINY = BertConfig(vocab_size=60, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32,
                  max_position_embeddings=64)


def _features(num_examples=53, seed=0, max_len=40):
    """Packed-looking examples of random lengths 3..max_len: [CLS]=2 ... [SEP]=3, segment B in the second half."""
    rng = np.random.RandomState(seed)
    features = {"token_ids": [], "segment_ids": [], "padding_mask": []}
    for _ in range(num_examples):
        n = rng.randint(3, max_len + 1)
        ids = rng.randint(5, TINY.vocab_size, size=n)
        ids[0], ids[-1] = 2, 3
        features["token_ids"].append(ids.astype("int32"))
        features["segment_ids"].append((np.arange(n) >= n // 2).astype("int32"))
        features["padding_mask"].append(np.ones(n, "int32"))
    return features


def test_each_batch_is_padded_to_its_own_longest_example():
    features = _features()
    lengths = batching.example_lengths(features)
    seen = 0
    for x, y in batching.bucketed_batches(features, np.arange(53), batch_size=8, shuffle=True, seed=3,
                                          pad_to_multiple_of=1):
        assert x["token_ids"].shape[1] == lengths[y].max()
        for row, i in zip(x["token_ids"], y):  # the example itself, then zeros
            np.testing.assert_array_equal(row[: lengths[i]], features["token_ids"][i])
            assert not row[lengths[i] :].any()
        np.testing.assert_array_equal(x["padding_mask"].sum(1), lengths[y])
        seen += 1
    assert seen == batching.num_batches(53, 8) == 7


def test_lengths_round_up_to_the_multiple_and_fixed_padding_uses_max_length():
    features = _features()
    shapes = {x["token_ids"].shape[1] for x in batching.bucketed_batches(features, batch_size=8)}
    assert shapes and all(s % 8 == 0 for s in shapes) and len(shapes) > 1
    fixed = {x["token_ids"].shape[1] for x in batching.bucketed_batches(features, batch_size=8, dynamic_padding=False,
                                                                         max_length=48)}
    assert fixed == {48}
    with pytest.raises(ValueError, match="needs max_length"):
        next(batching.bucketed_batches(features, dynamic_padding=False))
    with pytest.raises(ValueError, match="more than max_length=20"):
        next(batching.bucketed_batches(features, max_length=20))


@pytest.mark.tensorflow
def test_every_example_exactly_once_per_epoch_in_a_new_order_each_epoch():
    from keras_bert_impl.data import tf_batching

    features = _features(num_examples=301)
    labels = np.arange(301)
    dataset = tf_batching.bucketed_dataset(features, labels, batch_size=16, shuffle=True, seed=7, bucket_window=4)
    epochs = [np.concatenate([np.asarray(y) for _, y in dataset]) for _ in range(2)]
    for order in epochs:
        np.testing.assert_array_equal(np.sort(order), labels)
    assert not np.array_equal(epochs[0], epochs[1])
    assert int(dataset.cardinality()) == batching.num_batches(301, 16)


def test_bucketing_pads_much_less_than_random_batches():
    features = _features(num_examples=400)

    def padded_tokens(**kwargs):
        return sum(x["token_ids"].size for x in batching.bucketed_batches(features, batch_size=16, shuffle=True,
                                                                          pad_to_multiple_of=1, **kwargs))

    real = int(batching.example_lengths(features).sum())
    bucketed, unsorted = padded_tokens(), padded_tokens(bucket_window=1)  # window of 1 batch = no sorting
    assert bucketed < real * 1.15 < unsorted


def test_multiple_choice_and_per_token_labels_are_padded_too():
    features = {"token_ids": [[[2, 5, 3], [2, 3]], [[2, 7, 7, 7, 3], [2, 8, 3]]]}
    tags = [[0, 1, 1], [0, 2, 2, 2, 0]]
    (x, y), = batching.bucketed_batches(features, {"tags": tags, "label": np.array([1, 0])}, batch_size=2,
                                        pad_to_multiple_of=1, label_padding_value=-100)
    np.testing.assert_array_equal(x["token_ids"][0], [[2, 5, 3, 0, 0], [2, 3, 0, 0, 0]])
    assert x["token_ids"].shape == (2, 2, 5)
    np.testing.assert_array_equal(y["tags"][0], [0, 1, 1, -100, -100])
    np.testing.assert_array_equal(y["label"], [1, 0])


def test_bucketed_predictions_equal_fixed_length_predictions_in_the_original_order():
    model = BertClassifier(BertBackbone(TINY), num_classes=3)
    features = _features(num_examples=37, max_len=20)  # few distinct shapes: JAX compiles once per shape
    dynamic = batching.predict_bucketed(model, features, batch_size=8)
    fixed = batching.predict_bucketed(model, features, batch_size=8, dynamic_padding=False, max_length=24)
    np.testing.assert_allclose(dynamic, fixed, atol=1e-5)
    one = batching.pad_batch(features, [5], pad_to_multiple_of=1)  # example 5 alone, unpadded
    np.testing.assert_allclose(dynamic[5], np.asarray(model.predict_on_batch(one))[0], atol=1e-5)


def test_multiple_choice_predictions_do_not_depend_on_padding():
    model = BertMultipleChoice(BertBackbone(TINY), num_choices=2)
    flat = _features(num_examples=22, seed=1, max_len=16)
    features = {k: [v[i : i + 2] for i in range(0, 22, 2)] for k, v in flat.items()}
    dynamic = batching.predict_bucketed(model, features, batch_size=4)
    fixed = batching.predict_bucketed(model, features, batch_size=4, dynamic_padding=False, max_length=24)
    assert dynamic.shape == (11, 2)
    np.testing.assert_allclose(dynamic, fixed, atol=1e-5)


@pytest.mark.tensorflow
def test_drop_remainder_keeps_whole_batches_of_distinct_examples_and_static_shapes_pad_to_max_length():
    from keras_bert_impl.data import tf_batching

    features = _features(num_examples=53)
    labels = np.arange(53)
    batches = list(batching.bucketed_batches(features, labels, batch_size=8, shuffle=True, seed=3, drop_remainder=True))
    assert len(batches) == batching.num_batches(53, 8, drop_remainder=True) == 6
    seen = np.concatenate([y for _, y in batches])
    assert len(seen) == 48 and len(set(seen.tolist())) == 48  # 5 left out, none twice
    left_out = {seed: set(range(53)) - set(np.concatenate([y for _, y in batching.bucketed_batches(
        features, labels, batch_size=8, shuffle=True, seed=seed, drop_remainder=True)]).tolist()) for seed in (1, 2)}
    assert left_out[1] != left_out[2]  # a different remainder each epoch
    dataset = tf_batching.bucketed_dataset(features, labels, batch_size=8, shuffle=True, max_length=48,
                                           static_shapes=True)
    assert tuple(dataset.element_spec[0]["token_ids"].shape) == (8, 48) and int(dataset.cardinality()) == 6
    with pytest.raises(ValueError, match="static_shapes=True needs max_length"):
        tf_batching.bucketed_dataset(features, labels, batch_size=8, static_shapes=True)


def test_bucketed_batches_pydataset_covers_every_example_once_and_reshuffles_each_epoch():
    features = _features(num_examples=61)
    labels = np.arange(61)
    batches = batching.BucketedBatches(features, labels, batch_size=8, seed=5, pad_to_multiple_of=1)
    assert len(batches) == batching.num_batches(61, 8)
    first = np.concatenate([batches[i][1] for i in range(len(batches))])
    batches.on_epoch_end()
    second = np.concatenate([batches[i][1] for i in range(len(batches))])
    np.testing.assert_array_equal(np.sort(first), labels)
    np.testing.assert_array_equal(np.sort(second), labels)
    assert not np.array_equal(first, second)
    for i in range(len(batches)):  # each batch padded to its own longest example
        x, y = batches[i]
        assert x["token_ids"].shape[1] == int(batching.example_lengths(features)[y].max())


@pytest.mark.tensorflow
def test_a_resumed_epoch_gets_the_order_an_uninterrupted_run_gave_it():
    from keras_bert_impl.data import tf_batching

    features = _features(num_examples=37)
    labels = np.arange(37)

    def label_order(batches):
        return [batches[i][1].tolist() for i in range(len(batches))]

    uninterrupted = batching.BucketedBatches(features, labels, batch_size=8, seed=5, pad_to_multiple_of=1)
    epochs = []
    for _ in range(3):
        epochs.append(label_order(uninterrupted))
        uninterrupted.on_epoch_end()
    resumed = batching.BucketedBatches(features, labels, batch_size=8, seed=5, initial_epoch=2, pad_to_multiple_of=1)
    assert label_order(resumed) == epochs[2] and epochs[2] != epochs[1]

    dataset = tf_batching.bucketed_dataset(features, labels, batch_size=8, shuffle=True, seed=5, pad_to_multiple_of=1)
    tf_epochs = [[y.numpy().tolist() for _, y in dataset] for _ in range(3)]
    resumed = tf_batching.bucketed_dataset(features, labels, batch_size=8, shuffle=True, seed=5, initial_epoch=2,
                                           pad_to_multiple_of=1)
    assert [y.numpy().tolist() for _, y in resumed] == tf_epochs[2] == epochs[2]
