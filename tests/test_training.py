"""keras_bert_impl.training.resumable, checkpoint_store and metrics_log: atomic checkpoints, exact resume of weights + optimizer + step, logs.

Runs on every backend (KERAS_BACKEND=tensorflow|jax|torch) with a tiny model and tiny TFRecords
generated here (the helpers are shared with tests/test_pretrain_recipe.py).
"""

import importlib.util
import json
import os
import random
import warnings

import keras
import numpy as np
import pytest

from keras_bert_impl.training import checkpoint_store, metrics_log, resumable
from keras_bert_impl.utils import file_io
from keras_bert_impl.models.backbone import BertBackbone
from keras_bert_impl.config import BertConfig
from keras_bert_impl.training.optimization import create_optimizer
from keras_bert_impl.models.pretrainer import BertPretrainer
from tests.tensorboard_reading import tensorboard_scalars

SEQ_LEN = 24
MAX_PREDICTIONS = 4
SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def tiny_config():
    """A ~20k-parameter BERT: vocab 100, hidden 16, 2 layers, 2 heads."""
    return BertConfig(
        vocab_size=100,
        hidden_size=16,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=32,
    )


def write_tiny_data(directory, num_documents=24, dupe_factor=2, seed=0):
    """Writes vocab.txt, bert_config.json and train/eval TFRecords of a synthetic corpus; returns paths.

    Each document draws its words from its own small "topic" slice of the vocabulary, so next-sentence
    prediction is learnable, like topic shift in real corpora.
    """
    from keras_bert_impl.data import pretraining_instances, pretraining_records

    class Tokenizer:
        def __init__(self, vocab):
            self.vocab = {token: i for i, token in enumerate(vocab)}

        def convert_tokens_to_ids(self, tokens):
            return [self.vocab[t] for t in tokens]

    os.makedirs(directory, exist_ok=True)
    words = [f"w{i}" for i in range(100 - len(SPECIAL))]
    vocab = SPECIAL + words
    vocab_file = os.path.join(directory, "vocab.txt")
    with open(vocab_file, "w") as f:
        f.write("\n".join(vocab) + "\n")
    config_file = os.path.join(directory, "bert_config.json")
    tiny_config().to_json_file(config_file)

    rng = random.Random(seed)
    documents = []
    for d in range(num_documents):
        topic = words[(d % 6) * 15 : (d % 6) * 15 + 15]
        documents.append([[rng.choice(topic) for _ in range(rng.randint(4, 9))] for _ in range(6)])
    tokenizer = Tokenizer(vocab)
    paths = {"vocab": vocab_file, "config": config_file}
    for split, docs in (("train", documents[4:]), ("eval", documents[:4])):
        instances = pretraining_instances.create_training_instances(
            docs, vocab, random.Random(seed), max_seq_length=SEQ_LEN, dupe_factor=dupe_factor,
            max_predictions_per_seq=MAX_PREDICTIONS,
        )
        path = os.path.join(directory, f"{split}.tfrecord")
        pretraining_records.write_instances_to_example_files(instances, tokenizer, path, SEQ_LEN, MAX_PREDICTIONS)
        paths[split] = path
    return paths


def tiny_dataset(path, batch_size=4, is_training=True):
    """The batches of `path` as pretrain.py reads them: a tf.data pipeline where TensorFlow is installed, else
    a generator of numpy batches."""
    if importlib.util.find_spec("tensorflow") is None:
        from keras_bert_impl.data.pretraining_batches import pretraining_batches

        return pretraining_batches(path, SEQ_LEN, MAX_PREDICTIONS, batch_size, is_training=is_training, seed=0)
    from keras_bert_impl.data.tf_pretraining_datasets import pretraining_dataset

    return pretraining_dataset(path, SEQ_LEN, MAX_PREDICTIONS, batch_size, is_training=is_training, seed=0)


def compiled_model(num_train_steps=12):
    model = BertPretrainer(BertBackbone(tiny_config()))
    model.compile(optimizer=create_optimizer(1e-3, num_train_steps, 2))
    return model


def optimizer_moments(model):
    """The optimizer's variables other than the iteration counter (AdamW's m and v), as numpy."""
    return [
        keras.ops.convert_to_numpy(v)
        for v in model.optimizer.variables
        if v is not model.optimizer.iterations and "iteration" not in v.path
    ]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return write_tiny_data(str(tmp_path_factory.mktemp("tiny_data")))


def test_checkpoint_round_trip_restores_weights_optimizer_and_step(data, tmp_path):
    """A saved checkpoint restores into a fresh model: weights, AdamW moments and the iteration counter."""
    model = compiled_model()
    model.fit(tiny_dataset(data["train"]), steps_per_epoch=3, epochs=1, verbose=0, shuffle=False)
    step, path = checkpoint_store.save_checkpoint(model, str(tmp_path))
    assert step == 3 and os.path.basename(path) == "ckpt-00000003.weights.h5"
    assert sorted(os.listdir(tmp_path)) == ["ckpt-00000003.weights.h5", "ckpt-00000003.weights.h5.sha256"]  # no temporary file

    fresh = compiled_model()
    assert checkpoint_store.restore_latest_checkpoint(fresh, str(tmp_path)) == 3
    assert int(keras.ops.convert_to_numpy(fresh.optimizer.iterations)) == 3
    for a, b in zip(model.weights, fresh.weights):
        np.testing.assert_array_equal(keras.ops.convert_to_numpy(a), keras.ops.convert_to_numpy(b))
    moments, restored = optimizer_moments(model), optimizer_moments(fresh)
    assert len(moments) == 2 * len(model.trainable_variables)
    assert any(np.abs(m).max() > 0 for m in moments)
    for a, b in zip(moments, restored):
        np.testing.assert_array_equal(a, b)


def test_partial_and_temporary_files_are_not_checkpoints(data, tmp_path):
    """A write killed mid-way leaves a `.tmp-*` file (ignored, then cleaned up); an unreadable file
    with a final name falls back to the previous checkpoint."""
    model = compiled_model()
    model.fit(tiny_dataset(data["train"]), steps_per_epoch=2, epochs=1, verbose=0, shuffle=False)
    checkpoint_store.save_checkpoint(model, str(tmp_path))  # step 2
    good = open(checkpoint_store.checkpoint_path(str(tmp_path), 2), "rb").read()
    # What a SIGKILL during save_checkpoint of step 4 leaves: a truncated temporary file.
    temp = tmp_path / f".tmp-ckpt-00000004-{os.getpid() + 1}.weights.h5"
    temp.write_bytes(good[: len(good) // 2])
    assert checkpoint_store.list_checkpoints(str(tmp_path)) == [(2, checkpoint_store.checkpoint_path(str(tmp_path), 2))]

    fresh = compiled_model()
    assert checkpoint_store.restore_latest_checkpoint(fresh, str(tmp_path)) == 2
    assert not temp.exists()

    # Even a corrupt file under a final name (e.g. disk damage) is skipped for the previous one.
    with open(checkpoint_store.checkpoint_path(str(tmp_path), 6), "wb") as f:
        f.write(good[: len(good) // 3])
    fresh = compiled_model()
    with pytest.warns(UserWarning, match="Skipping checkpoint .*cannot be read"):
        assert checkpoint_store.restore_latest_checkpoint(fresh, str(tmp_path)) == 2
    assert int(keras.ops.convert_to_numpy(fresh.optimizer.iterations)) == 2


def test_run_training_resumes_to_the_same_total_step_count(data, tmp_path):
    """An interrupted run_training continues from its last checkpoint to exactly num_train_steps;
    checkpoints are pruned to keep_checkpoint_max; the log continues the same step axis."""
    out = str(tmp_path)

    class Crash(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            if int(keras.ops.convert_to_numpy(self.model.optimizer.iterations)) == 7:
                raise KeyboardInterrupt  # the process "dies" after step 7, checkpoints at 2, 4, 6

    model = compiled_model(num_train_steps=12)
    with pytest.raises(KeyboardInterrupt):
        resumable.run_training(
            model, tiny_dataset(data["train"]), resumable.StepSchedule(12, save_checkpoints_steps=2,
                                                                       iterations_per_loop=4),
            out, keep_checkpoint_max=2, verbose=0, callbacks=[Crash()],
        )
    checkpoint_dir = os.path.join(out, checkpoint_store.CHECKPOINT_SUBDIR)
    assert [s for s, _ in checkpoint_store.list_checkpoints(checkpoint_dir)] == [4, 6]

    seen_steps = []

    def dataset_fn(initial_step):
        seen_steps.append(initial_step)
        return tiny_dataset(data["train"])

    model = compiled_model(num_train_steps=12)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = resumable.run_training(
            model, dataset_fn, resumable.StepSchedule(12, save_checkpoints_steps=2, iterations_per_loop=4), out,
            keep_checkpoint_max=2, verbose=0
        )
    assert not [w for w in caught if "shuffle" in str(w.message)]  # no `shuffle` passed for a dataset
    assert seen_steps == [6]
    assert result["initial_step"] == 6 and result["global_step"] == 12
    assert int(keras.ops.convert_to_numpy(model.optimizer.iterations)) == 12
    assert [s for s, _ in checkpoint_store.list_checkpoints(checkpoint_dir)] == [10, 12]
    log = metrics_log.read_metrics_log(os.path.join(out, "train_log.jsonl"))
    # First run: loop 1 ends at step 4 (then the crash); resumed run: initial_epoch = 6 // 4 = 1, so
    # its loops end at steps 10 and 12 (the last one cut short by StopAtStep).
    assert [r["step"] for r in log] == [4, 10, 12]
    assert {"loss", "masked_lm_accuracy", "next_sentence_accuracy"} <= set(log[-1])
    assert result["train_metrics"]["step"] == 12
    # TensorBoard's own reader reads the scalars back (written without TensorFlow: training/tensorboard_events.py).
    assert tensorboard_scalars(os.path.join(out, "logs", "train"))["masked_lm_accuracy"] == {
        r["step"]: pytest.approx(r["masked_lm_accuracy"]) for r in log
    }

    # Running again once finished trains nothing and keeps the step.
    model = compiled_model(num_train_steps=12)
    again = resumable.run_training(model, tiny_dataset(data["train"]), resumable.StepSchedule(12, 2), out, verbose=0)
    assert again["initial_step"] == 12 and again["global_step"] == 12 and again["history"] == {}


def test_steps_must_be_multiples_of_steps_per_execution(data, tmp_path):
    with pytest.raises(ValueError, match="multiple of steps_per_execution"):
        resumable.run_training(compiled_model(), tiny_dataset(data["train"]),
                               resumable.StepSchedule(10, save_checkpoints_steps=3, steps_per_execution=2), str(tmp_path))


def test_write_json_atomic(tmp_path):
    path = str(tmp_path / "metrics.json")
    file_io.write_json(path, {"a": 1.5})
    file_io.write_json(path, {"a": 2.5})
    assert json.load(open(path)) == {"a": 2.5}
    assert os.listdir(tmp_path) == ["metrics.json"]
