"""TFRecord files, `tf.train.Example`s and TensorBoard events written and read without TensorFlow
(utils/record_files.py, utils/protobuf_wire.py, data/example_records.py, data/pretraining_records.py,
data/pretraining_batches.py, training/tensorboard_events.py), against TensorFlow's own writers and readers
and TensorBoard's reader."""

import os
import random

import numpy as np
import pytest

from keras_bert_impl.data import pretraining_batches, pretraining_instances, pretraining_records
from keras_bert_impl.data.example_records import decode_example, encode_example
from keras_bert_impl.training.tensorboard_events import EventFileWriter, scalars_event
from keras_bert_impl.utils import record_files
from keras_bert_impl.utils.errors import UserInputError
from tests.test_training import MAX_PREDICTIONS, SEQ_LEN, write_tiny_data

pytestmark = pytest.mark.backend_independent


def _tf():
    return pytest.importorskip("tensorflow")


def _random_features(rng):
    features = {}
    for i in range(int(rng.integers(0, 8))):
        n = int(rng.integers(0, 20))
        if rng.random() < 0.3:
            features[f"float_{i}"] = rng.normal(size=n).astype(np.float32)
        else:
            features[f"int_{i}"] = rng.integers(-2**62, 2**62, size=n)
    return features


def test_crc32c_has_the_check_value_and_the_python_table_agrees_with_the_one_in_use():
    assert record_files.crc32c(b"123456789") == 0xE3069283  # CRC-32C's published check value
    data = os.urandom(5000)
    assert record_files._python_crc32c(data) == record_files.crc32c(data)


@pytest.mark.tensorflow
def test_examples_are_the_bytes_of_tensorflows_deterministic_serialization_and_decode_back():
    tf = _tf()
    rng = np.random.default_rng(0)
    for _ in range(100):
        features = _random_features(rng)
        expected = tf.train.Example(features=tf.train.Features(feature={
            name: tf.train.Feature(float_list=tf.train.FloatList(value=v.tolist())) if v.dtype.kind == "f"
            else tf.train.Feature(int64_list=tf.train.Int64List(value=v.tolist())) for name, v in features.items()}))
        assert encode_example(features) == expected.SerializeToString(deterministic=True)
        decoded = decode_example(expected.SerializeToString())
        assert sorted(decoded) == sorted(features)
        for name, values in features.items():
            np.testing.assert_array_equal(decoded[name], values)


@pytest.mark.tensorflow
def test_our_record_files_equal_tensorflows_byte_for_byte_and_each_reads_the_other(tmp_path):
    tf = _tf()
    records = [os.urandom(n) for n in np.random.default_rng(1).integers(0, 3000, size=30)]
    with tf.io.TFRecordWriter(str(tmp_path / "theirs.tfrecord")) as writer:
        for record in records:
            writer.write(record)
    with record_files.RecordWriter(str(tmp_path / "ours.tfrecord")) as writer:
        for record in records:
            writer.write(record)
    assert (tmp_path / "ours.tfrecord").read_bytes() == (tmp_path / "theirs.tfrecord").read_bytes()
    assert list(record_files.read_records(str(tmp_path / "theirs.tfrecord"))) == records
    assert [r.numpy() for r in tf.data.TFRecordDataset(str(tmp_path / "ours.tfrecord"))] == records


def _instances(seed=3):
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(40)]
    rng = random.Random(seed)
    documents = [[[rng.choice(vocab[5:]) for _ in range(rng.randint(3, 9))] for _ in range(5)] for _ in range(10)]
    instances = list(pretraining_instances.create_training_instances(
        documents, vocab, random.Random(seed), max_seq_length=SEQ_LEN, dupe_factor=2,
        max_predictions_per_seq=MAX_PREDICTIONS))

    class Tokenizer:
        def convert_tokens_to_ids(self, tokens):
            return [vocab.index(t) for t in tokens]

    return instances, Tokenizer()


@pytest.mark.tensorflow
def test_pretraining_files_equal_those_of_tensorflows_writer_for_the_same_instances(tmp_path):
    tf = _tf()
    from keras_bert_impl.data.tf_pretraining_records import instance_to_tf_example

    instances, tokenizer = _instances()
    for with_masks in (True, False):
        ours = str(tmp_path / f"ours-{with_masks}.tfrecord")
        pretraining_records.write_instances_to_example_files(instances, tokenizer, ours, SEQ_LEN, MAX_PREDICTIONS,
                                                             with_masks=with_masks)
        theirs = str(tmp_path / f"theirs-{with_masks}.tfrecord")
        with tf.io.TFRecordWriter(theirs) as writer:  # the TFRecord path: tf.train.Example, TensorFlow's writer
            for instance in instances:
                example = instance_to_tf_example(instance, tokenizer, SEQ_LEN, MAX_PREDICTIONS, with_masks)
                writer.write(example.SerializeToString(deterministic=True))
        assert open(ours, "rb").read() == open(theirs, "rb").read()


@pytest.mark.tensorflow
@pytest.mark.parametrize("objective", ["mlm_nsp", "mlm", "ltr"])
def test_numpy_batches_equal_the_tf_data_pipelines_batches_in_reading_order(tmp_path, objective):
    _tf()
    from keras_bert_impl.data.tf_pretraining_datasets import pretraining_dataset
    from keras_bert_impl.data.tf_pretraining_objectives import objective_dataset

    path = write_tiny_data(str(tmp_path))["train"]
    theirs = objective_dataset(pretraining_dataset(path, SEQ_LEN, MAX_PREDICTIONS, 8, is_training=False), objective)
    ours = list(pretraining_batches.pretraining_batches(path, SEQ_LEN, MAX_PREDICTIONS, 8, is_training=False,
                                                        objective=objective))
    theirs = list(theirs.as_numpy_iterator())
    assert len(ours) == len(theirs) > 2
    for (x, y), (tx, ty) in zip(ours, theirs):
        for ours_part, theirs_part in ((x, tx), (y, ty)):
            assert sorted(ours_part) == sorted(theirs_part)
            for name in ours_part:
                assert ours_part[name].dtype == theirs_part[name].dtype, name
                np.testing.assert_array_equal(ours_part[name], theirs_part[name], err_msg=name)


def test_training_batches_hold_every_instance_once_per_pass_seeded_and_resumable(tmp_path):
    instances, tokenizer = _instances()
    path = str(tmp_path / "train.tfrecord")
    count = pretraining_records.write_instances_to_example_files(instances, tokenizer, path, SEQ_LEN, MAX_PREDICTIONS)
    num_batches = 2 * count // 4  # two passes

    def batches(seed, skip=0):
        stream = pretraining_batches.pretraining_batches(path, SEQ_LEN, MAX_PREDICTIONS, 4, seed=seed,
                                                         skip_batches=skip, shuffle_buffer_size=8)
        return [next(stream) for _ in range(num_batches - skip)]

    first = batches(seed=1)
    # The first `count` rows are the file's instances, each once, in a shuffled order.
    rows = np.concatenate([np.concatenate([x["token_ids"], x["masked_lm_positions"]], axis=1) for x, _ in first])
    written = [np.concatenate([e["input_ids"], e["masked_lm_positions"]]).tolist()
               for e in pretraining_records.read_examples(path)]
    assert sorted(rows[:count].tolist()) == sorted(written) and rows[:count].tolist() != written
    order = [x["token_ids"].tolist() for x, _ in first]
    assert order == [x["token_ids"].tolist() for x, _ in batches(seed=1)]  # seeded
    assert order != [x["token_ids"].tolist() for x, _ in batches(seed=2)]
    assert order[3:] == [x["token_ids"].tolist() for x, _ in batches(seed=1, skip=3)]  # a resumed run's batches


def test_a_corrupt_or_truncated_record_file_is_one_line_naming_the_file_and_record(tmp_path):
    path = tmp_path / "data.tfrecord"
    with record_files.RecordWriter(str(path)) as writer:
        writer.write(encode_example({"input_ids": [1, 2, 3]}))
        writer.write(encode_example({"input_ids": [4, 5, 6]}))
    data = path.read_bytes()
    path.write_bytes(data[:-3])
    with pytest.raises(UserInputError, match=r"data.tfrecord: record 1 at byte \d+: truncated record"):
        list(pretraining_records.read_examples(str(path)))
    path.write_bytes(data[:20] + bytes([data[20] ^ 1]) + data[21:])
    with pytest.raises(UserInputError, match="data.tfrecord: record 0 at byte 0: corrupted record data"):
        list(record_files.read_records(str(path)))
    path.write_bytes(b"sentence\tlabel\ngood\t1\n")
    with pytest.raises(UserInputError, match="record 0 at byte 0: not a TFRecord file"):
        pretraining_records.check_record_shapes([str(path)], {})


def test_tensorboards_reader_reads_the_scalars_written_without_tensorflow(tmp_path):
    tensorboard_reading = pytest.importorskip("tests.tensorboard_reading")
    writer = EventFileWriter(str(tmp_path / "train"))
    for step, loss in ((10, 0.75), (20, 0.5), (30, 0.25)):
        writer.add_scalars(step, {"loss": loss, "steps/accuracy": 1 - loss})
    writer.close()
    assert tensorboard_reading.tensorboard_scalars(str(tmp_path / "train")) == {
        "loss": {10: 0.75, 20: 0.5, 30: 0.25}, "steps/accuracy": {10: 0.25, 20: 0.5, 30: 0.75}}


@pytest.mark.tensorflow
def test_a_scalars_event_is_the_bytes_of_tensorflows_event_proto():
    _tf()
    from tensorflow.core.util import event_pb2

    event = event_pb2.Event(wall_time=1795000000.5, step=42)
    for tag, value in (("loss", 0.625), ("dev_accuracy", 0.875)):
        event.summary.value.add(tag=tag, simple_value=value)
    assert scalars_event(42, {"loss": 0.625, "dev_accuracy": 0.875}, wall_time=1795000000.5) == \
        event.SerializeToString()
