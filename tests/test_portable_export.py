"""Every task model exported to LiteRT runs in the stock `ai_edge_litert` interpreter (builtin ops only, no Flex
delegate), and exported to ONNX runs in onnxruntime at other batch sizes and lengths than it was exported
with; both equal the Keras model within 1e-4. The LiteRT export runs under the TensorFlow backend, the ONNX
export under every backend (keras_bert_impl/export/; its graph: tests/test_onnx_export.py)."""

import contextlib
import json
import os

import keras
import numpy as np
import pytest

from keras_bert_impl import backends
from tests.backend_utils import to_numpy
from tests.finetuning_files import subprocess_pythonpath
from tests.task_harness import _build
from tests.test_task_models import CASES, _inputs

# One case per task model class (the regressor is the classifier's graph; the CRF tagger's logits are the
# token classifier's, and its model holds the CRF's transitions).
MODELS = ["classifier", "multiple_choice", "span_qa", "token_classifier_crf", "feature_based_tagger", "pretrainer",
          "sentence_encoder"]
# The ONNX outputs' names: the model's dict keys, else the output layer's: "logits" (the sentence encoder's
# embeddings: "split_columns").
ONNX_OUTPUTS = {"span_qa": ["start_logits", "end_logits"], "pretrainer": ["masked_lm_logits", "next_sentence_logits"],
                "sentence_encoder": ["split_columns"]}
# The ONNX inputs' axes: the multiple-choice model's fixed choices, the sentence encoder's free columns of texts.
ONNX_INPUT_AXES = {"multiple_choice": ["batch", 4, "sequence"], "sentence_encoder": ["batch", "columns", "sequence"]}
TENSORFLOW = keras.backend.backend() == "tensorflow"


def _keras_outputs(model, x):
    out = model(x, training=False)
    return {name: to_numpy(value) for name, value in out.items()} if isinstance(out, dict) else {"": to_numpy(out)}


def _other_shape(name, x):
    """`x` at batch 2 and 7 tokens (the pretrainer's masked positions kept below 7)."""
    smaller = _inputs(seed=5, batch=2, seq=7)
    if name == "multiple_choice":
        smaller = {k: np.stack([v, v[::-1]], axis=1)[:, [0, 1, 1, 0]] for k, v in smaller.items()}  # [2, 4, 7]
    if name == "sentence_encoder":
        smaller = {k: np.stack([v, v[::-1], v], axis=1) for k, v in smaller.items()}  # [2, 3, 7]: three columns
    if name == "pretrainer":
        smaller["masked_lm_positions"] = np.array([[1, 2], [3, 0]], "int32")
    return smaller


@pytest.mark.skipif(not TENSORFLOW, reason="the LiteRT export runs under the TensorFlow backend")
@pytest.mark.parametrize("name", MODELS)
@pytest.mark.tensorflow
def test_litert_file_runs_in_the_stock_interpreter_and_equals_keras(name, tmp_path):
    from ai_edge_litert.interpreter import Interpreter

    from keras_bert_impl.export.export_settings import named_outputs
    from keras_bert_impl.export.tf_litert import export_litert, has_recurrent_layer

    model = _build(CASES[name])
    x, _ = CASES[name].batch()
    path = export_litert(model, str(tmp_path / "model.tflite"))
    interpreter = Interpreter(model_path=path)
    ops = {op["op_name"] for op in interpreter._get_ops_details()}
    assert not [op for op in ops if op.startswith("Flex")], ops
    runner = interpreter.get_signature_runner("serving_default")
    # A model with a recurrent layer exports at batch size 1 (docs/deployment.md); the others at any batch.
    batches = [x] if not has_recurrent_layer(model) else [{k: v[i:i + 1] for k, v in x.items()} for i in range(2)]
    for inputs in batches + ([_other_shape(name, x)] if not has_recurrent_layer(model) else []):
        expected = _keras_outputs(model, inputs)
        served = runner(**inputs)
        names = sorted(named_outputs(model))
        assert sorted(served) == names  # "logits", not "output_0"
        for key, value in expected.items():
            actual = served[key or names[0]]  # one output: its layer's name ("logits"; the encoder's "split_columns")
            np.testing.assert_allclose(actual, value, atol=1e-4, err_msg=f"{name}: {key}")


@pytest.mark.parametrize("name", MODELS)
def test_onnx_file_runs_in_onnxruntime_with_dynamic_batch_and_sequence_and_equals_keras(name, tmp_path):
    import onnxruntime

    from keras_bert_impl.export.onnx_export import export_onnx

    model = _build(CASES[name])
    x, _ = CASES[name].batch()
    session = onnxruntime.InferenceSession(export_onnx(model, str(tmp_path / "model.onnx")))
    shapes = {i.name: i.shape for i in session.get_inputs()}
    assert shapes["token_ids"] == ONNX_INPUT_AXES.get(name, ["batch", "sequence"])
    names = [o.name for o in session.get_outputs()]
    assert names == ONNX_OUTPUTS.get(name, ["logits"])
    for inputs in (x, _other_shape(name, x)):
        expected = _keras_outputs(model, inputs)
        served = session.run(None, {i.name: inputs[i.name] for i in session.get_inputs()})
        assert len(served) == len(expected)
        for key, value in expected.items():
            np.testing.assert_allclose(served[names.index(key) if key else 0], value, atol=1e-4, err_msg=f"{name}: {key}")


@pytest.mark.parametrize("export_format, quantization", [
    ("onnx", "none"), ("onnx", "dynamic_int8"), pytest.param("litert", "none", marks=pytest.mark.tensorflow)])
def test_export_recipe_writes_the_token_id_model_its_vocabulary_and_settings(export_format, quantization, tmp_path):
    from keras_bert_impl.models.classifier import BertClassifier
    from keras_bert_impl.runners.export_savedmodel import main
    from tests.task_harness import TOKENIZER

    if export_format == "litert" and not TENSORFLOW:
        pytest.skip("the LiteRT export runs under the TensorFlow backend")
    model = _build(CASES["classifier"])
    model_dir, export_dir = str(tmp_path / "model"), str(tmp_path / "export")
    model.save_pretrained(model_dir, label_names=["a", "b", "c"])
    TOKENIZER.save_pretrained(model_dir)
    main(["--model_dir", model_dir, "--export_dir", export_dir, f"--format={export_format}",
          f"--quantization={quantization}"])
    settings = json.load(open(os.path.join(export_dir, "export_config.json")))
    assert (settings["task"], settings["labels"], settings["format"], settings["quantization"]) == (
        "classifier", ["a", "b", "c"], export_format, quantization)
    assert open(os.path.join(export_dir, "vocab.txt")).read().split() == TOKENIZER.vocabulary
    x, _ = CASES["classifier"].batch()
    expected = to_numpy(BertClassifier.from_pretrained(model_dir, num_classes=3)(x))
    if export_format == "onnx":
        import onnxruntime

        session = onnxruntime.InferenceSession(os.path.join(export_dir, "model.onnx"))
        served = session.run(["logits"], {i.name: x[i.name] for i in session.get_inputs()})[0]
    else:
        from ai_edge_litert.interpreter import Interpreter

        served = Interpreter(os.path.join(export_dir, "model.tflite")).get_signature_runner()(**x)["logits"]
    # int8 weights move the logits of this random tiny model by a few hundredths at most.
    np.testing.assert_allclose(served, expected, atol=1e-4 if quantization == "none" else 0.05)


def test_export_target_is_scoped_and_checked():
    assert backends.current_export_target() is None
    with backends.export_target("litert"):
        assert backends.current_export_target() == "litert"
    assert backends.current_export_target() is None
    with pytest.raises(ValueError, match="expected one of"):
        with backends.export_target("coreml"):
            pass


@pytest.mark.parametrize("target", [None, "litert"])
def test_gelu_and_split_rows_compute_the_same_values_for_every_export_target(target):
    x = keras.random.normal((2, 5, 3), seed=0) * 4.0
    reference_gelu = to_numpy(keras.activations.gelu(x, approximate=False))
    reference_rows = [to_numpy(part) for part in keras.ops.split(x, [1], axis=1)]
    with backends.export_target(target) if target else contextlib.nullcontext():
        gelu = to_numpy(backends.gelu(x))
        rows = [to_numpy(part) for part in backends.split_rows(x, 1)]
    np.testing.assert_allclose(gelu, reference_gelu, atol=2e-6)
    for part, reference in zip(rows, reference_rows):
        np.testing.assert_array_equal(part, reference)


@pytest.mark.skipif(not TENSORFLOW, reason="the LiteRT export runs under the TensorFlow backend")
@pytest.mark.tensorflow
def test_litert_packer_gives_bert_tokenizers_ids_on_the_shipped_sentiment_texts(minilm_path):
    import tensorflow as tf

    from keras_bert_impl.tokenizers.bert_tokenizer import BertTokenizer
    from keras_bert_impl.tokenizers.tf_litert_tokenizer import LiteRTTextPacker

    tokenizer = BertTokenizer.from_pretrained(minilm_path)
    packer = tf.function(LiteRTTextPacker(tokenizer, 64).__call__,
                         input_signature=[tf.TensorSpec([1], tf.string)])
    texts = []
    for name in ("train.tsv", "dev.tsv", "test.tsv"):
        with open(os.path.join(os.path.dirname(__file__), "..", "data", "sentiment", name), encoding="utf-8") as f:
            texts += [line.rstrip("\n").split("\t")[0 if name != "test.tsv" else 1] for line in list(f)[1:]]
    texts += ["Café DÉJÀ-VU!", "naïve 東京 emoji 😀 tabs\tand\u00a0spaces", "don't stop..."]
    for text in texts:
        expected = tokenizer([text], max_length=64)["token_ids"][0]
        got = packer(tf.constant([text]))["token_ids"].numpy()[0]
        assert got.tolist() == [int(i) for i in expected if i != 0], text


@pytest.mark.skipif(not TENSORFLOW, reason="the LiteRT export runs under the TensorFlow backend")
@pytest.mark.tensorflow
def test_litert_text_classifier_runs_with_tensorflow_texts_registerers_and_equals_keras_on_its_ids(tmp_path):
    from ai_edge_litert.interpreter import Interpreter, InterpreterWithCustomOps

    from keras_bert_impl.export.tf_litert import custom_ops, export_litert_text_model, text_op_registerers
    from tests.task_harness import TOKENIZER
    from tests.test_task_models import TEXTS

    model = _build(CASES["classifier"])
    path = export_litert_text_model(model, TOKENIZER, str(tmp_path / "text.tflite"), max_length=8)
    assert custom_ops(open(path, "rb").read()) == ["FastBertNormalize", "FastWordpieceTokenizeWithOffsets"]
    runner = InterpreterWithCustomOps(model_path=path, custom_op_registerers=text_op_registerers()).get_signature_runner()
    for text in TEXTS:
        ids = {k: np.asarray(v) for k, v in TOKENIZER([text], max_length=8).items()}
        served = runner(text=np.array([text.encode("utf-8")]))["output_0"]
        np.testing.assert_allclose(served, to_numpy(model(ids, training=False)), atol=1e-4, err_msg=text)
    with pytest.raises(RuntimeError, match="unresolved custom op: FastBertNormalize"):
        stock = Interpreter(model_path=path)
        stock.get_signature_runner()(text=np.array([b"w1"]))


def test_model_export_finds_the_onnx_exporter_without_the_export_package_imported(tmp_path):
    """In a fresh process, `model.export(format="onnx")` imports the module the package root declares for the
    format (`export.onnx_export`, which registers itself with `models.portable_export`) and writes its file."""
    import subprocess
    import sys

    path = str(tmp_path / "model.onnx")
    code = ("import sys\n"
            "from keras_bert_impl import BertBackbone, BertClassifier, BertConfig\n"
            "model = BertClassifier(BertBackbone(BertConfig.preset('bert_tiny', vocab_size=8)), num_classes=2)\n"
            "before = [m for m in sys.modules if m.startswith('keras_bert_impl.export')]\n"
            f"model.export({path!r}, format='onnx')\n"
            "print('IMPORTED', before, 'keras_bert_impl.export.onnx_export' in sys.modules)\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                            env=dict(os.environ, PYTHONPATH=subprocess_pythonpath()))
    assert result.returncode == 0, result.stderr[-2000:]
    assert "IMPORTED [] True" in result.stdout
    import onnxruntime

    assert [o.name for o in onnxruntime.InferenceSession(path).get_outputs()] == ["logits"]


def test_a_registered_exporter_serves_model_export_with_its_keyword_arguments_only(tmp_path, monkeypatch):
    from keras_bert_impl.models import portable_export

    calls = []
    monkeypatch.setattr(portable_export, "_EXPORTERS", dict(portable_export._EXPORTERS))
    portable_export.register_exporter("example", ("note",))(lambda model, path, note="": calls.append((path, note)))
    model = _build(CASES["classifier"])
    model.export("out.example", format="example", note="n")
    assert calls == [("out.example", "n")]
    with pytest.raises(TypeError, match=r"^BertClassifier.export\(format='example'\) takes note; not size, "
                                        r"input_signature \(the signature is the model's own inputs\)\.$"):
        model.export("out.example", format="example", size=3, input_signature=[{}])
