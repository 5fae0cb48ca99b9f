"""The checks every layer, the backbone and every task model pass, on every backend (keras-hub's `TestCase`
helpers `run_layer_test`, `run_backbone_test`, `run_task_test`, for this package).

`run_serialization_test(instance)`: `get_config` -> `from_config` -> `get_config` gives the same JSON, and so
does a `keras.saving.serialize_keras_object` round trip (keras-hub's).

`run_layer_test(cls, init_kwargs, input_data, expected_output_shape)`: the layer's config round trip; built
by a symbolic call and an eager one, with the expected output shape and trainable weights; a `.keras` round
trip (the layer in a functional model) with equal outputs; built under `mixed_bfloat16` it computes in
bfloat16 and keeps float32 variables; one training step (`fit`, mean squared error) changes its weights.

`run_backbone_test(backbone, input_data, expected_output_shapes, tmp_path)`: the config round trip; the
outputs' shapes, also at shorter sequence lengths; `.keras` and `save_pretrained` -> `from_pretrained` round
trips with equal outputs; under `mixed_bfloat16` it computes in bfloat16.

`run_task_test(case, tmp_path)` takes a `TaskCase` (how to build the model on a backbone, a batch, how to
compile it) and checks, in order:

1. the model builds (with its task's preprocessor), its config round trip (`run_serialization_test`), and its
   outputs have the expected shapes; `predict` on raw text gives what it gives on the token ids the
   preprocessor makes;
2. a bare `compile()` gives the task's loss: `fit` lowers it (from a loss that is not 0), changes the
   trainable weights, `evaluate` on raw text gives what it gives on the preprocessor's ids and labels and
   `fit` on raw text trains, and `sample_weight` is honoured (zeros give 0, ones the unweighted loss); a token
   accuracy leaves out the -100 positions; a `loss`, `metrics` or `loss=None` the model cannot train with
   raises `ValueError` (under TensorFlow these steps run eagerly, see below);
3. a `.keras` file reloads to a model of the same class with the same outputs and preprocessor;
4. `save_pretrained` / `from_pretrained` (the class's own, with nothing but the directory) reload the same
   outputs and the preprocessor's vocabulary, casing and length, and the directory holds the class the
   registry names;
5. under the TensorFlow backend, the exported SavedModel's `serving_token_ids` returns the same outputs;
6. the same model built under `mixed_bfloat16` trains one step with a finite loss and bfloat16 compute.
"""

import copy
import dataclasses
import json
import os
from typing import Callable, Optional

import keras
import numpy as np
import pytest

from keras_bert_impl.checkpoints import model_io
from keras_bert_impl.config import BertConfig
from keras_bert_impl.models.backbone import BertBackbone
from keras_bert_impl.tokenizers.bert_tokenizer import BertTokenizer
from tests.backend_utils import to_numpy

TINY = BertConfig(vocab_size=60, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32,
                  max_position_embeddings=32)
# The vocabulary of TINY: special tokens, the words w0..w49 and some continuation pieces ("w1s" -> w1 ##s).
VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(50)] + [
    "##s", "##ed", "##ing", "?", "."]
TOKENIZER = BertTokenizer(VOCABULARY)


@dataclasses.dataclass
class TaskCase:
    """How to exercise one task model.

    build: (backbone, preprocessor) -> model.
    batch: () -> (x, y), numpy.
    preprocessor: () -> the task's preprocessor on `TOKENIZER`.
    raw_batch: () -> (raw text, its labels), as the preprocessor takes them.
    output_shapes: {output name or "logits": shape} of the model on `batch()`'s x.
    from_pretrained: (directory) -> model; None: the model class's `from_pretrained(directory)`.
    export_task: the `export_saved_model` task name, or None for a model that is not exported.
    backbone_kwargs: extra `BertBackbone` arguments (e.g. output_hidden_states).
    """

    build: Callable
    batch: Callable
    output_shapes: dict
    preprocessor: Callable
    raw_batch: Callable
    from_pretrained: Optional[Callable] = None
    export_task: Optional[str] = None
    backbone_kwargs: dict = dataclasses.field(default_factory=dict)


def _outputs(model, x):
    """The model's outputs on `x` as {name: numpy}."""
    out = model(x, training=False)
    if isinstance(out, dict):
        return {k: to_numpy(v) for k, v in out.items() if not isinstance(v, (list, tuple))}
    return {"logits": to_numpy(out)}


def _assert_same_outputs(actual, expected, atol=1e-5, what=""):
    assert sorted(actual) == sorted(expected), what
    for name in expected:
        np.testing.assert_allclose(actual[name], expected[name], atol=atol, err_msg=f"{what}: {name}")


def _build(case, dtype=None, preprocessor=None):
    return case.build(BertBackbone(TINY, dtype=dtype, **case.backbone_kwargs), preprocessor)


def _predictions(model, x):
    out = model.predict(x, verbose=0)
    return {k: np.asarray(v) for k, v in out.items()} if isinstance(out, dict) else {"logits": np.asarray(out)}


def _check_predict_on_raw_text_gives_what_its_token_ids_give(model, raw_x):
    """(The preprocessor is copied with its state: the masked-LM one draws new masks at every call.)"""
    ids_x, _, _ = copy.deepcopy(model.preprocessor)(raw_x)
    _assert_same_outputs(_predictions(model, raw_x), _predictions(model, ids_x), what="predict on raw text")


def _check_evaluate_and_fit_on_raw_text(model, raw_x, raw_y, batch_size):
    """evaluate on raw text equals evaluate on the preprocessor's ids and labels; fit on raw text trains.
    (Raw batches have the token-id batches' shapes: the compiled steps are reused.)"""
    ids_x, ids_y, _ = copy.deepcopy(model.preprocessor)(raw_x, raw_y)
    on_ids = model.evaluate(ids_x, ids_y, batch_size=batch_size, verbose=0, return_dict=True)
    on_raw = model.evaluate(raw_x, raw_y, batch_size=batch_size, verbose=0, return_dict=True)
    assert on_raw.keys() == on_ids.keys()
    for name in on_ids:
        np.testing.assert_allclose(on_raw[name], on_ids[name], rtol=1e-6, err_msg=f"evaluate on raw text: {name}")
    history = model.fit(raw_x, raw_y, epochs=1, batch_size=batch_size, verbose=0)
    assert np.isfinite(history.history["loss"][0]) and history.history["loss"][0] > 0.01


def _check_compile_refuses_what_the_model_cannot_train_with(model):
    if model.computes_own_loss():
        for wrong in ({"loss": "mse"}, {"metrics": ["accuracy"]}, {"weighted_metrics": ["accuracy"]}):
            with pytest.raises(ValueError, match="computes its own loss"):
                model.compile(**wrong)
    else:
        with pytest.raises(ValueError, match="no loss to train with"):
            model.compile(loss=None)


def _check_token_accuracy_leaves_out_ignored_positions(model, x, labels, reported):
    predicted = np.argmax(_outputs(model, x)["logits"], axis=-1)  # [B, T]
    labelled = labels != -100
    expected = float(np.mean(predicted[labelled] == labels[labelled]))
    assert labelled.sum() < labels.size  # the batch has ignored positions
    np.testing.assert_allclose(reported, expected, atol=1e-6)


def run_serialization_test(instance):
    """`get_config` -> `from_config` -> `get_config`, and `serialize_keras_object` -> `deserialize_keras_object`,
    give the same config (as JSON)."""
    config = json.dumps(instance.get_config(), sort_keys=True, default=str)
    revived = type(instance).from_config(instance.get_config())
    assert json.dumps(revived.get_config(), sort_keys=True, default=str) == config
    serialized = json.loads(json.dumps(keras.saving.serialize_keras_object(instance), default=str))
    revived = keras.saving.deserialize_keras_object(serialized)
    assert type(revived) is type(instance)
    assert json.dumps(revived.get_config(), sort_keys=True, default=str) == config
    return revived


def _float_dtypes(structure):
    return {str(keras.backend.standardize_dtype(t.dtype)) for t in keras.tree.flatten(structure)
            if "float" in str(keras.backend.standardize_dtype(t.dtype))}


def run_layer_test(cls, init_kwargs, input_data, expected_output_shape, expected_num_trainable_weights=None,
                   tmp_path=None, run_training_check=True):
    """The checks of a layer (module docstring); `input_data` a numpy array (or a list of them: the layer's one
    input), `expected_output_shape` the output's shape (or a structure of shapes)."""
    layer = cls(**init_kwargs)
    run_serialization_test(layer)

    # Symbolic call: built, output shape.
    symbolic = keras.tree.map_structure(lambda a: keras.KerasTensor(a.shape, a.dtype), input_data)
    layer = cls(**init_kwargs)
    output = layer(symbolic)
    assert layer.built
    assert keras.tree.map_structure(lambda t: tuple(t.shape), output) == expected_output_shape
    if expected_num_trainable_weights is not None:
        assert len(layer.trainable_weights) == expected_num_trainable_weights

    # Eager call; a .keras round trip of the layer in a functional model gives the same outputs.
    layer = cls(**init_kwargs)
    eager = keras.tree.map_structure(to_numpy, layer(input_data))
    assert keras.tree.map_structure(lambda a: tuple(a.shape), eager) == expected_output_shape
    if tmp_path is not None:
        inputs = keras.tree.map_structure(lambda a: keras.Input(a.shape[1:], dtype=a.dtype, batch_size=None), input_data)
        model = keras.Model(inputs, layer(inputs))
        path = os.path.join(tmp_path, f"{cls.__name__}.keras")
        model.save(path)
        restored = keras.saving.load_model(path)
        keras.tree.map_structure(lambda a, b: np.testing.assert_allclose(a, b, atol=1e-6),
                                 keras.tree.map_structure(to_numpy, restored(input_data)), eager)

    # Mixed precision: bfloat16 compute, float32 variables.
    bf16 = cls(**init_kwargs, dtype="mixed_bfloat16")
    outputs = bf16(input_data)
    assert bf16.compute_dtype == "bfloat16" and all(w.dtype == "float32" for w in bf16.weights)
    assert _float_dtypes(outputs) <= {"bfloat16", "float32"}

    # One training step changes the weights.
    if run_training_check and layer.trainable_weights:
        inputs = keras.tree.map_structure(lambda a: keras.Input(a.shape[1:], dtype=a.dtype), input_data)
        model = keras.Model(inputs, layer(inputs))
        before = [np.array(to_numpy(w)) for w in layer.trainable_weights]
        model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
        targets = keras.tree.map_structure(lambda a: np.ones_like(a, "float32"), eager)
        model.fit(input_data, targets, epochs=1, verbose=0)
        assert any(not np.array_equal(b, to_numpy(w)) for b, w in zip(before, layer.trainable_weights))


def run_backbone_test(backbone, input_data, expected_output_shapes, tmp_path):
    """The checks of a backbone (module docstring); `input_data` the dict of token-id arrays [B, T]."""
    revived = run_serialization_test(backbone)
    assert type(revived) is type(backbone)
    outputs = _outputs(backbone, input_data)
    assert {k: v.shape for k, v in outputs.items()} == expected_output_shapes
    for length in (2, 3):  # shorter sequences
        shorter = {k: v[:, :length] for k, v in input_data.items()}
        assert _outputs(backbone, shorter)["sequence_output"].shape[1] == length
    path = os.path.join(tmp_path, "backbone.keras")
    backbone.save(path)
    _assert_same_outputs(_outputs(keras.saving.load_model(path), input_data), outputs, what=".keras round trip")
    directory = os.path.join(tmp_path, "backbone")
    backbone.save_pretrained(directory)
    loaded = type(backbone).from_pretrained(directory)
    _assert_same_outputs(_outputs(loaded, input_data), outputs, atol=1e-5, what="from_pretrained")
    bf16 = type(backbone).from_config({**backbone.get_config(), "dtype": "mixed_bfloat16"})
    assert bf16.embeddings.compute_dtype == "bfloat16"
    assert _float_dtypes(bf16(input_data)) <= {"bfloat16", "float32"}


def run_task_test(case, tmp_path):
    x, y = case.batch()

    # 1. build, config round trip, output shapes; raw text through the preprocessor
    model = _build(case, preprocessor=case.preprocessor())
    run_serialization_test(model)
    expected = _outputs(model, x)
    assert {k: v.shape for k, v in expected.items()} == case.output_shapes
    raw_x, raw_y = case.raw_batch()
    _check_predict_on_raw_text_gives_what_its_token_ids_give(model, raw_x)

    # 2. compile() with the task's defaults trains; sample_weight is honoured; wrong arguments are refused
    batch_size = len(next(iter(x.values())))
    _check_compile_refuses_what_the_model_cannot_train_with(model)
    before = [np.array(to_numpy(w)) for w in model.trainable_weights]
    model.compile()
    # Under TensorFlow the steps run eagerly from here: what is checked (the default loss, sample weights,
    # training, raw text) is the same in a tf.function, and tracing the steps anew for every case cost about
    # half the time (four of the cases, one process: 47 s eagerly, 89 s in tf.functions). Under JAX the
    # compiled steps are faster (the file 187 s, 225 s eagerly). Every task model's compiled train,
    # evaluate and predict steps run in its recipe's tests (a subprocess, on every backend).
    model.run_eagerly = keras.backend.backend() == "tensorflow"
    loss_before = model.evaluate(x, y, batch_size=batch_size, verbose=0, return_dict=True)
    assert loss_before["loss"] > 0.01, loss_before  # not the constant 0 of a model compiled without a loss
    zeros, ones = np.zeros((batch_size,), "float32"), np.ones((batch_size,), "float32")
    weighted = model.evaluate(x, y, sample_weight=zeros, batch_size=batch_size, verbose=0, return_dict=True)
    assert weighted["loss"] == 0.0, weighted
    weighted = model.evaluate(x, y, sample_weight=ones, batch_size=batch_size, verbose=0, return_dict=True)
    np.testing.assert_allclose(weighted["loss"], loss_before["loss"], rtol=1e-6)
    if "token_accuracy" in loss_before:
        _check_token_accuracy_leaves_out_ignored_positions(model, x, y, loss_before["token_accuracy"])
    # The default optimizer at 1e-3: at its 5e-5, three steps move the loss of a tiny random model by about
    # 1e-7 (its choices' [CLS] vectors are nearly equal), below float32's resolution of the loss.
    assert isinstance(model.optimizer, keras.optimizers.AdamW) and model.optimizer.weight_decay == 0.01
    model.optimizer.learning_rate.assign(1e-3)
    history = model.fit(x, y, epochs=3, batch_size=batch_size, verbose=0)
    assert np.all(np.isfinite(history.history["loss"]))
    loss_after = model.evaluate(x, y, batch_size=batch_size, verbose=0, return_dict=True)
    assert loss_after["loss"] < loss_before["loss"], (loss_before, loss_after)
    changed = [not np.array_equal(b, to_numpy(w)) for b, w in zip(before, model.trainable_weights)]
    assert sum(changed) >= len(changed) // 2, f"only {sum(changed)} of {len(changed)} weights changed"
    _check_evaluate_and_fit_on_raw_text(model, raw_x, raw_y, batch_size)
    expected = _outputs(model, x)

    # 3. .keras round trip
    path = os.path.join(tmp_path, "model.keras")
    model.save(path)
    restored = keras.saving.load_model(path)
    assert type(restored) is type(model)
    _assert_same_outputs(_outputs(restored, x), expected, what=".keras round trip")
    assert type(restored.preprocessor) is type(model.preprocessor)
    assert restored.preprocessor.get_config() == model.preprocessor.get_config()

    # 4. save_pretrained / from_pretrained round trip; the directory holds the model's registered class
    directory = os.path.join(tmp_path, "pretrained")
    model.save_pretrained(directory)
    assert model_io.model_class(directory) is type(model)
    loaded = (case.from_pretrained or type(model).from_pretrained)(directory)
    assert type(loaded) is type(model) and loaded.newly_initialized_heads == []
    _assert_same_outputs(_outputs(loaded, x), expected, what="from_pretrained")
    assert type(loaded.preprocessor) is type(model.preprocessor)
    assert (loaded.preprocessor.tokenizer.vocabulary, loaded.preprocessor.tokenizer.do_lower_case,
            loaded.preprocessor.sequence_length) == (VOCABULARY, True, model.preprocessor.sequence_length)

    # 5. the SavedModel computes the same outputs (TensorFlow: the export runs in this process)
    if case.export_task is not None and keras.backend.backend() == "tensorflow":
        import tensorflow as tf

        from keras_bert_impl.export.tf_saved_model import export_saved_model

        vocab = os.path.join(tmp_path, "vocab.txt")
        with open(vocab, "w", encoding="utf-8") as f:
            f.write("".join(t + "\n" for t in ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
                            + [f"w{i}" for i in range(TINY.vocab_size - 5)]))
        labels = [f"L{i}" for i in range(expected["logits"].shape[-1])] if "logits" in expected else None
        export_dir = os.path.join(tmp_path, "saved_model")
        export_saved_model(model, vocab, export_dir, case.export_task, labels=labels)
        served = tf.saved_model.load(export_dir).signatures["serving_token_ids"](
            **{k: tf.constant(x[k], tf.int32) for k in ("token_ids", "segment_ids", "padding_mask")})
        _assert_same_outputs({k: v.numpy() for k, v in served.items() if k in expected}, expected,
                             what="SavedModel serving_token_ids")

    # 6. a bfloat16 step, run eagerly: compiling a second train step would double the test's time, and
    # the compiled bfloat16 step is tested by tests/test_mixed_precision.py.
    bf16 = _build(case, dtype="mixed_bfloat16")
    assert bf16.backbone.embeddings.compute_dtype == "bfloat16"
    bf16.compile(optimizer=keras.optimizers.Adam(1e-3), run_eagerly=keras.backend.backend() != "jax")
    history = bf16.fit(x, y, epochs=1, batch_size=batch_size, verbose=0)
    assert np.isfinite(history.history["loss"][0])
