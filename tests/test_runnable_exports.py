"""Exports a user can run: Keras' `model.export(path, format="litert" | "onnx")` writes the package's exports
(builtin LiteRT ops, named outputs, dynamic axes); a missing runtime is one line with the pip command and
leaves nothing behind; an export folder carries its tokenizer's files, its position limit and named outputs;
and `pipeline(task, model=EXPORT_DIR)` answers from onnxruntime or LiteRT exactly as the Keras pipeline on the
shipped data (data/sentiment, data/ner), with TensorFlow unimportable too.

The exports are made under TensorFlow (tests/export_folders.py; under JAX and PyTorch in a subprocess), the
pipelines run under every backend."""

import json
import os
import sys

import keras
import numpy as np
import pytest

from keras_bert_impl import pipeline
from keras_bert_impl.utils.errors import UserInputError
from keras_bert_impl.utils.optional_dependencies import MissingDependencyError
from tests import export_folders
from tests.backend_utils import to_numpy

TENSORFLOW = keras.backend.backend() == "tensorflow"
pytestmark = pytest.mark.tensorflow  # the exports are written under TensorFlow


@pytest.fixture(scope="module")
def exports(tmp_path_factory):
    return export_folders.make_export_folders(str(tmp_path_factory.mktemp("exports")))


def _same_answers(got, expected, path=""):
    """Equal answers: the same labels, words and offsets; scores within 1e-4."""
    if isinstance(expected, dict):
        assert sorted(got) == sorted(expected), path
        for key in expected:
            _same_answers(got[key], expected[key], f"{path}.{key}")
    elif isinstance(expected, list):
        assert len(got) == len(expected), path
        for i, (a, b) in enumerate(zip(got, expected)):
            _same_answers(a, b, f"{path}[{i}]")
    elif isinstance(expected, float):
        assert abs(got - expected) <= 1e-4, (path, got, expected)
    else:
        assert got == expected, path


# ------------------------------------------------------------------------------ pipeline(task, model=EXPORT_DIR)
@pytest.mark.parametrize("export_format", export_folders.FORMATS)
def test_an_exports_sentiment_pipeline_answers_as_the_keras_pipeline_on_the_shipped_dev_set(exports, export_format):
    folders, directories = exports
    texts = export_folders.sentiment_texts()
    keras_pipeline = pipeline("sentiment-analysis", model=directories["sentiment"])
    served = pipeline("sentiment-analysis", model=folders["sentiment", export_format])
    expected = keras_pipeline(texts)
    assert {answer["label"] for answer in expected} == {"negative", "positive"}  # the head's spread decides
    _same_answers(served(texts), expected)
    _same_answers(served(texts[:5], top_k=None), keras_pipeline(texts[:5], top_k=None))


@pytest.mark.parametrize("export_format", export_folders.FORMATS)
def test_an_exports_ner_pipeline_answers_as_the_keras_pipeline_on_the_shipped_dev_set(exports, export_format):
    folders, directories = exports
    texts = [" ".join(words) for words, _ in export_folders.ner_sentences()[:60]]
    assert max(len(text.split()) for text in texts) > export_folders.NER_LENGTH  # windows of whole words
    keras_pipeline = pipeline("ner", model=directories["ner"], aggregation_strategy="first")
    served = pipeline("ner", model=folders["ner", export_format], aggregation_strategy="first")
    expected = keras_pipeline(texts)
    assert sum(len(entities) for entities in expected) > 20
    _same_answers(served(texts), expected)


def test_the_onnx_and_litert_pipelines_run_without_tensorflow(exports):
    from tests.test_no_tensorflow import run_blocked

    folders, directories = exports
    texts = export_folders.sentiment_texts()[:20]
    backend = "jax" if TENSORFLOW else keras.backend.backend()  # one that runs without TensorFlow
    code = (f"import json, os\nos.environ['KERAS_BACKEND'] = {backend!r}\nfrom keras_bert_impl import pipeline\n"
            f"answers = [pipeline('sentiment-analysis', model=folder)({texts!r}) for folder in "
            f"({folders['sentiment', 'onnx']!r}, {folders['sentiment', 'litert']!r})]\n"
            "print('ANSWER', json.dumps(answers))")
    process = run_blocked(code=code)
    assert process.returncode == 0, process.stderr[-3000:]
    assert "XNNPACK" not in process.stderr  # LiteRT's log line at its first invoke is filtered
    onnx_answers, litert_answers = json.loads(process.stdout.split("ANSWER ", 1)[1].splitlines()[0])
    expected = pipeline("sentiment-analysis", model=directories["sentiment"])(texts)
    _same_answers(onnx_answers, expected)
    _same_answers(litert_answers, expected)


# ------------------------------------------------------------------------------ the export folder
@pytest.mark.parametrize("export_format", export_folders.FORMATS)
def test_the_export_folder_holds_the_tokenizers_files_position_limit_and_named_outputs(exports, export_format):
    from keras_bert_impl.checkpoints.model_directory import ModelDirectory
    from keras_bert_impl.tokenizers.bert_tokenizer import BertTokenizer

    folders, directories = exports
    folder = folders["ner", export_format]
    exported, source = ModelDirectory(folder), ModelDirectory(directories["ner"])
    assert exported.tokenizer_config == source.tokenizer_config == {
        "do_lower_case": False, "normalize": "nfkc", "sequence_length": export_folders.NER_LENGTH,
        "tokenizer_class": "BertTokenizer"}
    assert exported.label_names == export_folders.ner_tags() and exported.max_seq_length == export_folders.NER_LENGTH
    assert exported.bert_config() == source.bert_config()  # max_position_embeddings 64 among them
    with open(os.path.join(folder, "export_config.json"), encoding="utf-8") as f:
        settings = json.load(f)
    assert (settings["max_position_embeddings"], settings["outputs"]) == (export_folders.MAX_POSITIONS, ["logits"])
    word = "Hoffman"  # a cased word of data/ner/dev.txt, written full-width: NFKC gives it back, cased
    full_width = "".join(chr(ord(c) + 0xFEE0) for c in word)
    assert BertTokenizer.from_pretrained(folder).tokenize(f"{full_width} said") == [word, "said"]
    if export_format == "litert":
        from ai_edge_litert.interpreter import Interpreter

        runner = Interpreter(os.path.join(folder, "model.tflite")).get_signature_runner()
        assert list(runner.get_output_details()) == ["logits"]
    else:
        import onnxruntime

        session = onnxruntime.InferenceSession(os.path.join(folder, "model.onnx"))
        assert [o.name for o in session.get_outputs()] == ["logits"]


def test_a_batch_longer_than_the_position_table_is_refused_in_one_line(exports):
    folders, _ = exports
    served = pipeline("sentiment-analysis", model=folders["sentiment", "onnx"])
    rows = export_folders.MAX_POSITIONS + 1
    batch = {name: np.ones((1, rows), "int32") for name in ("token_ids", "segment_ids", "padding_mask")}
    with pytest.raises(UserInputError, match=r"a batch of 65 tokens; the model reads at most 64 "
                                             r"\(its max_position_embeddings\)\.$") as error:
        served.model.predict_on_batch(batch)
    assert "\n" not in str(error.value)
    with pytest.raises(UserInputError, match="max_seq_length must be an integer from 3 to 64"):
        served("a text", max_seq_length=rows)


# ------------------------------------------------------------------------------ missing runtimes
def test_a_missing_runtime_is_one_line_with_the_pip_command_and_leaves_nothing(exports, tmp_path, monkeypatch, capsys):
    from keras_bert_impl.models.backbone import BertBackbone
    from keras_bert_impl.runners.export_savedmodel import main

    folders, directories = exports
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    with pytest.raises(MissingDependencyError, match=r'^a pipeline on model.onnx needs onnxruntime, which is not '
                                                     r'installed: pip install "keras_bert_impl\[export\]"$'):
        pipeline("sentiment-analysis", model=folders["sentiment", "onnx"])
    monkeypatch.setitem(sys.modules, "ai_edge_litert", None)
    with pytest.raises(MissingDependencyError, match=r"needs ai_edge_litert, which is not installed: pip install"):
        pipeline("sentiment-analysis", model=folders["sentiment", "litert"])
    monkeypatch.setitem(sys.modules, "onnx", None)
    path = tmp_path / "backbone.onnx"
    with pytest.raises(MissingDependencyError, match=r'^ONNX export needs onnx, which is not installed: pip install '
                                                     r'"keras_bert_impl\[onnx\]"$'):
        BertBackbone.from_pretrained(directories["sentiment"]).export(str(path), format="onnx")
    assert not path.exists() and os.listdir(tmp_path) == []
    if TENSORFLOW:  # the recipe's refusal before anything is written, its one line and exit status 2
        with pytest.raises(SystemExit) as exit_status:
            main(["--model_dir", directories["sentiment"], "--export_dir", str(tmp_path / "out"), "--format=onnx"])
        assert exit_status.value.code == 2
        assert capsys.readouterr().err.strip().count("\n") == 0 and not (tmp_path / "out").exists()


# ------------------------------------------------------------------------------ Keras' model.export
@pytest.mark.skipif(not TENSORFLOW, reason="the LiteRT export runs under the TensorFlow backend")
def test_keras_export_of_a_minilm_classifier_to_litert_runs_in_the_stock_interpreter_and_equals_keras(
        minilm_path, tmp_path):
    from ai_edge_litert.interpreter import Interpreter

    from keras_bert_impl.models.classifier import BertClassifier
    from keras_bert_impl.tokenizers.bert_tokenizer import BertTokenizer

    model = BertClassifier.from_pretrained(minilm_path, num_classes=2)
    path = str(tmp_path / "minilm.tflite")
    model.export(path, format="litert")
    interpreter = Interpreter(model_path=path)
    assert not [op["op_name"] for op in interpreter._get_ops_details() if op["op_name"].startswith("Flex")]
    runner = interpreter.get_signature_runner()
    tokenizer = BertTokenizer.from_pretrained(minilm_path)
    texts = export_folders.sentiment_texts()[:8]
    x = {name: np.asarray(value, "int32") for name, value in tokenizer(texts, max_length=32).items()}
    np.testing.assert_allclose(runner(**x)["logits"], to_numpy(model(x, training=False)), atol=1e-4)
    with pytest.raises(TypeError, match=r"takes batch_size, quantization; not input_signature"):
        model.export(str(tmp_path / "other.tflite"), format="litert", input_signature=[{}])


@pytest.mark.skipif(not TENSORFLOW, reason="the ONNX export of main runs under the TensorFlow backend")
def test_keras_export_to_onnx_writes_export_onnxs_file_with_named_dynamic_axes(exports, tmp_path):
    import onnxruntime

    from keras_bert_impl.models.token_classifier import BertTokenClassifier

    _, directories = exports
    model = BertTokenClassifier.from_pretrained(directories["ner"])
    path = str(tmp_path / "tagger.onnx")
    model.export(path, format="onnx")
    session = onnxruntime.InferenceSession(path)
    assert [i.shape for i in session.get_inputs()] == [["batch", "sequence"]] * 3  # Keras' own: unk__N names
    assert [o.name for o in session.get_outputs()] == ["logits"]  # Keras' own: "Identity:0"
    x = {name: np.ones((3, 9), "int32") for name in ("token_ids", "segment_ids", "padding_mask")}
    np.testing.assert_allclose(session.run(None, x)[0], to_numpy(model(x, training=False)), atol=1e-4)
