"""The checks every task model passes, on every backend (keras-hub's `run_task_test`, for this package).

`run_task_test(case, tmp_path)` takes a `TaskCase` (how to build the model on a backbone, a batch, how to
compile it) and checks, in order:

1. the model builds (with its task's preprocessor) and its outputs have the expected shapes; `predict` on
   raw text gives what it gives on the token ids the preprocessor makes;
2. a bare `compile()` gives the task's loss: `fit` lowers it (from a loss that is not 0), changes the
   trainable weights, `evaluate` on raw text gives what it gives on the preprocessor's ids and labels and
   `fit` on raw text trains, and `sample_weight` is honoured (zeros give 0, ones the unweighted loss); a token
   accuracy leaves out the -100 positions; a `loss`, `metrics` or `loss=None` the model cannot train with
   raises `ValueError`;
3. a `.keras` file reloads to a model of the same class with the same outputs and preprocessor;
4. `save_pretrained` / `from_pretrained` reload the same outputs and the preprocessor's vocabulary, casing
   and length (for models that write a directory);
5. under the TensorFlow backend, the exported SavedModel's `serving_token_ids` returns the same outputs;
6. the same model built under `mixed_bfloat16` trains one step with a finite loss and bfloat16 compute.
"""

import copy
import dataclasses
import os
from typing import Callable, Optional

import keras
import numpy as np
import pytest

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
    from_pretrained: (directory) -> model, or None for a model that writes no directory.
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


def run_task_test(case, tmp_path):
    x, y = case.batch()

    # 1. build, output shapes; raw text through the preprocessor
    model = _build(case, preprocessor=case.preprocessor())
    expected = _outputs(model, x)
    assert {k: v.shape for k, v in expected.items()} == case.output_shapes
    raw_x, raw_y = case.raw_batch()
    _check_predict_on_raw_text_gives_what_its_token_ids_give(model, raw_x)

    # 2. compile() with the task's defaults trains; sample_weight is honoured; wrong arguments are refused
    batch_size = len(next(iter(x.values())))
    _check_compile_refuses_what_the_model_cannot_train_with(model)
    before = [np.array(to_numpy(w)) for w in model.trainable_weights]
    model.compile()
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

    # 4. save_pretrained / from_pretrained round trip
    if case.from_pretrained is not None:
        directory = os.path.join(tmp_path, "pretrained")
        model.save_pretrained(directory)
        loaded = case.from_pretrained(directory)
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
