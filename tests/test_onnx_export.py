"""The ONNX export's graph (keras_bert_impl/export/onnx_export.py), on every backend: BERT runs as onnxruntime's
fused operators; a head on the [CLS] row gets a last layer computed for that row only, equal to the whole
layer's; the BiLSTM heads, causal models, other activations and masks equal Keras within 1e-4; int8 replaces
the products; what the export cannot write is refused by name. (Every task model's export equal to Keras:
tests/test_portable_export.py.)"""

import collections
import dataclasses
import os
import subprocess
import sys

import keras
import numpy as np
import pytest

from keras_bert_impl import BertBackbone, BertClassifier, BertMultipleChoice, BertPretrainer, BertSpanQA
from keras_bert_impl import BertTokenClassifier
from keras_bert_impl.export.onnx_export import export_onnx
from tests.backend_utils import to_numpy
from tests.finetuning_files import subprocess_pythonpath
from tests.task_harness import TINY
from tests.test_task_models import _inputs, _multiple_choice_batch

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
L = TINY.num_hidden_layers


def _session(path):
    import onnxruntime

    return onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])


def _run(session, x):
    outputs = session.run(None, {i.name: x[i.name] for i in session.get_inputs()})
    return dict(zip([o.name for o in session.get_outputs()], outputs))


def _op_counts(path):
    import onnx

    return collections.Counter(node.op_type for node in onnx.load(path).graph.node)


def _keras_outputs(model, x):
    out = model(x, training=False)
    if not isinstance(out, dict):
        return {"logits": to_numpy(out)}
    named = {}
    for name, value in out.items():
        if isinstance(value, (list, tuple)):
            named.update({f"{name}_{i}": to_numpy(v) for i, v in enumerate(value)})
        else:
            named[name] = to_numpy(value)
    return named


def _assert_equals_keras(model, x, path):
    served = _run(_session(export_onnx(model, path)), x)
    expected = _keras_outputs(model, x)
    assert sorted(served) == sorted(expected)
    for name, value in expected.items():
        np.testing.assert_allclose(served[name], value, atol=1e-4, err_msg=name)
    return path


def test_bert_runs_as_onnxruntimes_fused_operators(tmp_path):
    ops = _op_counts(export_onnx(BertBackbone(TINY), str(tmp_path / "backbone.onnx")))
    assert ops["EmbedLayerNormalization"] == 1
    assert ops["Attention"] == L
    assert ops["SkipLayerNormalization"] == 2 * L
    assert ops["BiasGelu"] == L
    # No unfused LayerNorm, GELU or softmax; one product per dense layer (attention output, feed-forward in
    # and out, pooler).
    assert not {"LayerNormalization", "ReduceMean", "Erf", "Softmax", "Pow", "Sqrt", "Div"} & set(ops)
    assert ops["MatMul"] == 3 * L + 1


@pytest.mark.parametrize("head", ["classifier", "multiple_choice", "user_pooled_head"])
def test_a_head_on_the_cls_row_computes_the_last_layer_for_that_row_only_and_equals_the_whole_layer(head, tmp_path):
    backbone = BertBackbone(TINY)
    if head == "multiple_choice":
        model, (x, _) = BertMultipleChoice(backbone, num_choices=4), _multiple_choice_batch()
        dense = model.output_dense
    elif head == "classifier":
        model, x = BertClassifier(backbone, num_classes=3), _inputs()
        dense = model.output_dense
    else:  # a user's functional model on the backbone's pooled_output
        dense = keras.layers.Dense(2, name="logits")
        model, x = keras.Model(backbone.input, dense(backbone(backbone.input)["pooled_output"])), _inputs()
    ops = _op_counts(_assert_equals_keras(model, x, str(tmp_path / "head.onnx")))
    # The last layer: the [CLS] query (MultiHeadAttention) over every key; the others: every row (Attention).
    assert (ops["Attention"], ops["MultiHeadAttention"]) == (L - 1, 1)
    # The whole last layer (the backbone's export), then the head on its pooled_output in numpy.
    whole = _session(export_onnx(backbone, str(tmp_path / "backbone.onnx")))
    assert _op_counts(str(tmp_path / "backbone.onnx"))["MultiHeadAttention"] == 0
    flat = {k: v.reshape(-1, v.shape[-1]) for k, v in x.items()}
    pooled = _run(whole, flat)["pooled_output"]
    expected = pooled @ to_numpy(dense.kernel) + to_numpy(dense.bias)
    served = _run(_session(str(tmp_path / "head.onnx")), x)
    np.testing.assert_allclose(next(iter(served.values())).reshape(expected.shape), expected, atol=1e-5)


def _variants():
    causal = dataclasses.replace(TINY, attention_direction="causal")
    x = _inputs()
    left_padded = dict(x, padding_mask=np.ascontiguousarray(x["padding_mask"][:, ::-1]))
    with_positions = dict(x, masked_lm_positions=np.array([[1, 2], [3, 0], [1, 0]], "int32"))
    return {
        "span_qa_bilstm": (lambda: BertSpanQA(BertBackbone(TINY), bilstm_units=5), x),
        "token_classifier_bilstm_crf": (lambda: BertTokenClassifier(BertBackbone(TINY), 4, use_crf=True,
                                                                    bilstm_units=5), x),
        "backbone_hidden_states": (lambda: BertBackbone(TINY, output_hidden_states=True), x),
        "causal_backbone": (lambda: BertBackbone(causal), x),
        "causal_classifier": (lambda: BertClassifier(BertBackbone(causal), 3), x),
        "ltr_pretrainer": (lambda: BertPretrainer(BertBackbone(causal), objective="ltr"), x),
        "mlm_pretrainer": (lambda: BertPretrainer(BertBackbone(TINY), objective="mlm"), with_positions),
        "gelu_approximate": (lambda: BertClassifier(BertBackbone(dataclasses.replace(TINY, hidden_act="gelu_approximate")),
                                                    3), x),
        "relu": (lambda: BertTokenClassifier(BertBackbone(dataclasses.replace(TINY, hidden_act="relu")), 4), x),
        "left_padded_classifier": (lambda: BertClassifier(BertBackbone(TINY), 3), left_padded),
        "lora_classifier": (_lora_classifier, x),
    }


def _lora_classifier():
    """A classifier whose backbone has LoRA adapters with non-zero weights (exported merged into the kernels)."""
    backbone = BertBackbone(TINY)
    backbone.enable_lora(2)
    for i, variable in enumerate(backbone.trainable_weights):
        variable.assign(np.random.default_rng(i).normal(size=variable.shape).astype("float32") * 0.1)
    return BertClassifier(backbone, 3)


@pytest.mark.parametrize("name", sorted(_variants()))
def test_heads_attention_directions_activations_and_masks_equal_keras(name, tmp_path):
    build, x = _variants()[name]
    path = _assert_equals_keras(build(), x, str(tmp_path / f"{name}.onnx"))
    ops = _op_counts(path)
    if "bilstm" in name:
        assert ops["LSTM"] == 1
    if name == "gelu_approximate":
        assert ops["FastGelu"] == L and not ops["BiasGelu"]


def test_outputs_are_named_as_the_model_names_them(tmp_path):
    names = [o.name for o in _session(export_onnx(BertBackbone(TINY, output_hidden_states=True),
                                                  str(tmp_path / "b.onnx"))).get_outputs()]
    assert sorted(names) == sorted(["sequence_output", "pooled_output"] + [f"hidden_states_{i}" for i in range(L + 1)])
    tagger = BertTokenClassifier(BertBackbone(TINY), 4, use_crf=True)  # the CRF passes its potentials on
    assert [o.name for o in _session(export_onnx(tagger, str(tmp_path / "t.onnx"))).get_outputs()] == ["logits"]


def test_the_file_names_the_longest_sequence_in_its_metadata_and_in_the_error_of_a_longer_one(tmp_path):
    model = BertClassifier(BertBackbone(TINY), num_classes=2)
    longest = TINY.max_position_embeddings
    for quantization in (None, "dynamic_int8"):
        session = _session(export_onnx(model, str(tmp_path / f"{quantization}.onnx"), quantization=quantization))
        metadata = session.get_modelmeta().custom_metadata_map  # (the quantizer adds its own entry)
        assert metadata["max_position_embeddings"] == str(longest)
        ones = {name: np.ones((1, longest + 1), "int32") for name in ("token_ids", "padding_mask")}
        with pytest.raises(Exception, match=f"at most {longest} tokens") as raised:
            session.run(None, {**ones, "segment_ids": np.zeros((1, longest + 1), "int32")})
        assert f"token_ids below {TINY.vocab_size}, segment_ids below {TINY.type_vocab_size}" in str(raised.value)


def test_dynamic_int8_quantizes_the_products_and_keeps_the_answers(tmp_path):
    model, x = BertClassifier(BertBackbone(TINY), num_classes=3), _inputs()
    path = export_onnx(model, str(tmp_path / "int8.onnx"), quantization="dynamic_int8")
    ops = _op_counts(path)
    assert ops["QAttention"] == L - 1 and not ops["Attention"]
    assert ops["MatMulInteger"] > 0 and not ops["MatMul"]
    assert ops["EmbedLayerNormalization"] == 1  # the embeddings stay float
    served = _run(_session(path), x)["logits"]
    expected = to_numpy(model(x, training=False))
    np.testing.assert_allclose(served, expected, atol=0.05)
    assert os.path.getsize(path) < os.path.getsize(export_onnx(model, str(tmp_path / "float.onnx")))


def test_what_the_export_cannot_write_is_refused_by_name(tmp_path):
    inputs = keras.Input((None, 4), name="features")
    model = keras.Model({"features": inputs}, keras.layers.Conv1D(2, 3, name="conv")(inputs))
    with pytest.raises(ValueError, match="no form for 'conv' \\(Conv1D\\)"):
        export_onnx(model, str(tmp_path / "conv.onnx"))
    with pytest.raises(ValueError, match="quantization='int4'"):
        export_onnx(BertBackbone(TINY), str(tmp_path / "b.onnx"), quantization="int4")
    assert not os.listdir(tmp_path)


def test_the_export_runs_without_tensorflow(tmp_path):
    """In a process where TensorFlow cannot be imported (JAX, or torch on the current backend)."""
    backend = "jax" if keras.backend.backend() == "tensorflow" else keras.backend.backend()
    script = f"""
import importlib.machinery
import sys
class NoTensorFlow:  # a found module whose import fails, as an uninstalled one's
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("tensorflow", "tf2onnx", "tensorflow_text"):
            return importlib.machinery.ModuleSpec(name, self)
    def create_module(self, spec):
        raise ImportError("no " + spec.name)
sys.meta_path.insert(0, NoTensorFlow())
from keras_bert_impl import BertBackbone, BertClassifier
from keras_bert_impl.export.onnx_export import export_onnx
from tests.task_harness import TINY
export_onnx(BertClassifier(BertBackbone(TINY), num_classes=2), {str(tmp_path / "model.onnx")!r})
print("tensorflow" in sys.modules)
"""
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=REPO,
                            env={**os.environ, "KERAS_BACKEND": backend, "PYTHONPATH": subprocess_pythonpath()})
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split()[-1] == "False"
    assert os.path.isfile(tmp_path / "model.onnx")
