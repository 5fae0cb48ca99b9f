"""recipes/run_ner.py end to end: fine-tuning the real MiniLM checkpoint on data/ner reaches entity F1 >= 90 on
held-out names; the CRF + document-context and the feature-based (BiLSTM) variants run through the recipe."""

import importlib.util
import json
import os
import shutil

import pytest

from keras_bert_impl.models.backbone import BertBackbone
from keras_bert_impl.config import BertConfig
from keras_bert_impl.data import conll_data
from keras_bert_impl.data.conll_data import read_conll_file
from keras_bert_impl.models.token_classifier import BertTokenClassifier
from keras_bert_impl.tokenizers.bert_tokenizer import BertTokenizer
from tests.finetuning_files import run_recipe_with_backend_defaults

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA_DIR = os.path.join(REPO, "data", "ner")


def _recipe():
    spec = importlib.util.spec_from_file_location("run_ner_recipe", os.path.join(REPO, "recipes", "run_ner.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _read_predictions(path):
    """[(token, gold, pred)] of every non-DOCSTART line of a conlleval file."""
    rows = []
    for line in open(path, encoding="utf-8"):
        parts = line.split()
        if parts and parts[0] != "-DOCSTART-":
            assert len(parts) == 3, line
            rows.append(tuple(parts))
    return rows


@pytest.mark.large
def test_fine_tuning_minilm_reaches_entity_f1_90_on_held_out_names(minilm_path, tmp_path):
    output_dir = str(tmp_path / "ner")
    run_recipe_with_backend_defaults("run_ner", [
        f"--data_dir={DATA_DIR}", f"--init_checkpoint={minilm_path}", f"--output_dir={output_dir}",
        "--do_train", "--do_eval", "--do_predict", "--max_seq_length=64", "--train_batch_size=10",
        "--eval_batch_size=80", "--learning_rate=2e-4", "--num_train_epochs=2", "--pad_to_multiple_of=16",
        "--verbose=0",
    ])
    results = json.load(open(os.path.join(output_dir, "eval_results.json"), encoding="utf-8"))
    assert results["tagging_scheme"] == "iob1"
    assert results["f1"] >= 0.90, results  # dev: names never seen in training
    assert results["test"]["f1"] >= 0.90, results["test"]
    assert set(results["per_type"]) == {"LOC", "MISC", "ORG", "PER"}

    assert results["test"]["per_type"]["PER"]["support"] > 0
    # Test predictions: one `token gold pred` line per test word, gold as in the file, IOB1 predictions.
    rows = _read_predictions(os.path.join(output_dir, "test_predictions.txt"))
    test = read_conll_file(os.path.join(DATA_DIR, "test.txt"))
    assert [(w, g) for w, g, _ in rows] == [(w, g) for s in test for w, g in zip(s.words, s.labels)]
    assert sum(p.startswith("I-") for _, _, p in rows) > sum(p.startswith("B-") for _, _, p in rows) > 0
    # The saved model is a Hugging Face BertForTokenClassification with the label names.
    model_dir = os.path.join(output_dir, "model")
    config = json.load(open(os.path.join(model_dir, "config.json"), encoding="utf-8"))
    assert config["architectures"] == ["BertForTokenClassification"] and config["id2label"]["7"] == "B-PER"
    model = BertTokenClassifier.from_pretrained(model_dir)
    assert model.num_classes == 9
    # Rebuilt with the sequence length it was fine-tuned at (--max_seq_length=64, config.json), not the default 128.
    assert config["max_seq_length"] == 64 and model.preprocessor.sequence_length == 64
    from keras_bert_impl import pipeline

    ner = pipeline("ner", model=model_dir, aggregation_strategy="first")
    assert ner.settings["max_seq_length"] == 64
    text = " ".join(test[0].words)
    predicted = [p for _, _, p in rows[: len(test[0].words)]]
    entities = [p[2:] for p in conll_data.iob1_to_bio(predicted) if p.startswith("B-")]
    assert [group["entity_group"] for group in ner(text)] == entities  # the recipe's words, grouped


@pytest.fixture(scope="module")
def tiny_checkpoint(minilm_path, tmp_path_factory):
    """A small random BERT with MiniLM's vocabulary: fast runs that check the recipe's plumbing."""
    directory = str(tmp_path_factory.mktemp("tiny_bert"))
    config = BertConfig(vocab_size=30522, hidden_size=32, num_hidden_layers=4, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=64)
    BertBackbone(config).save_pretrained(directory)
    shutil.copy(os.path.join(minilm_path, "vocab.txt"), os.path.join(directory, "vocab.txt"))
    return directory


@pytest.mark.parametrize("variant", ["crf_document_context", "feature_based"])
def test_recipe_variants_train_and_write_their_outputs(variant, tiny_checkpoint, tmp_path):
    output_dir = str(tmp_path / variant)
    flags = ["--use_crf", "--use_document_context"] if variant == "crf_document_context" else [
        "--feature_based", "--lstm_units=8", "--lstm_layers=1", "--feature_layers=-1,-3"]
    results = _recipe().main([
        f"--data_dir={DATA_DIR}", f"--init_checkpoint={tiny_checkpoint}", f"--output_dir={output_dir}",
        "--do_train", "--do_eval", "--do_predict", "--max_seq_length=32", "--train_batch_size=30",
        "--eval_batch_size=80", "--learning_rate=5e-3", "--num_train_epochs=2", "--pad_to_multiple_of=32",
        "--tagging_scheme=iob1", "--verbose=0", *flags,
    ])
    history = json.load(open(os.path.join(output_dir, "dev_metrics_per_epoch.json"), encoding="utf-8"))
    assert [h["epoch"] for h in history] == [1, 2]
    assert 0.0 <= results["f1"] <= 1.0 and "test" in results
    rows = _read_predictions(os.path.join(output_dir, "test_predictions.txt"))
    assert len(rows) == sum(len(s.words) for s in read_conll_file(os.path.join(DATA_DIR, "test.txt")))
    model_dir = os.path.join(output_dir, "model")
    # A complete model directory: the tokenizer (uncased: the checkpoint's default) and max_seq_length.
    assert BertTokenizer.from_pretrained(model_dir).do_lower_case is True
    assert json.load(open(os.path.join(model_dir, "config.json"), encoding="utf-8"))["max_seq_length"] == 32
    assert json.load(open(os.path.join(model_dir, "label_list.json"), encoding="utf-8"))["tagging_scheme"] == "iob1"
    if variant == "feature_based":
        # The saved tagger, evaluated by itself (no tagger flags: the saved settings), scores as the run did.
        reloaded_dir = str(tmp_path / "reloaded")
        reloaded = _recipe().main([
            f"--data_dir={DATA_DIR}", f"--init_checkpoint={model_dir}", f"--output_dir={reloaded_dir}",
            "--feature_based", "--do_eval", "--do_predict", "--max_seq_length=32", "--eval_batch_size=80",
            "--verbose=0",
        ])
        for key in ("precision", "recall", "f1"):
            assert reloaded[key] == pytest.approx(results[key], abs=1e-9), key
        assert _read_predictions(os.path.join(reloaded_dir, "test_predictions.txt")) == rows
    else:
        model = BertTokenClassifier.from_pretrained(model_dir, use_crf=True)
        assert model.use_crf and model.num_classes == 9
