"""Model directories and label files that do not fit are refused: another task's directory (a CRF
NER directory read as a `BertClassifier`) unless `ignore_stored_head=True` (a backbone or pretraining
directory loads into every task); a `--labels` file in another order than the model's id2label is matched by
name, one with other labels refused; a vocabulary of another size than the config's vocab_size refused
(tables padded by up to 1% accepted); tokenizer files that are not what a layout expects named as such."""

import contextlib
import importlib.util
import io
import json
import os

import numpy as np
import pytest

from keras_bert_impl.config import BertConfig
from keras_bert_impl.models.backbone import BertBackbone
from keras_bert_impl.models.classifier import BertClassifier
from keras_bert_impl.models.pretrainer import BertPretrainer
from keras_bert_impl.models.span_qa import BertSpanQA
from keras_bert_impl.models.token_classifier import BertTokenClassifier
from keras_bert_impl.tasks.base import FinetuningConfig, check_model_flags, check_tokenizer_fits_model, load_tokenizer
from keras_bert_impl.tokenizers.bert_tokenizer import BertTokenizer
from keras_bert_impl.tokenizers.vocabulary import check_vocab_size
from keras_bert_impl.utils.errors import UserInputError

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORDS = ["peter", "lives", "in", "berlin", "anna", "met", "paris", "today"]
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]
TINY = BertConfig(vocab_size=len(VOCAB), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                  intermediate_size=32, max_position_embeddings=32)
LABELS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]


def _write_vocab(directory, tokens=VOCAB):
    with open(os.path.join(directory, "vocab.txt"), "w", encoding="utf-8") as f:
        f.write("\n".join(tokens) + "\n")


@pytest.fixture(scope="module")
def crf_ner_dir(tmp_path_factory):
    """A fine-tuned CRF NER model directory (BertForTokenClassification, use_crf, 5 labels), as run_ner writes."""
    directory = str(tmp_path_factory.mktemp("ner_model"))
    model = BertTokenClassifier(BertBackbone(TINY), len(LABELS), use_crf=True)
    model.save_pretrained(directory, label_names=LABELS)
    _write_vocab(directory)
    return directory


@pytest.fixture(scope="module")
def backbone_dir(tmp_path_factory):
    directory = str(tmp_path_factory.mktemp("backbone"))
    BertBackbone(TINY).save_pretrained(directory)
    _write_vocab(directory)
    return directory


def test_a_crf_ner_directory_is_refused_as_a_classifier_naming_what_it_holds(crf_ner_dir):
    with pytest.raises(UserInputError) as error_info:
        BertClassifier.from_pretrained(crf_ner_dir)
    assert str(error_info.value) == (
        f"{crf_ner_dir}: holds a BertTokenClassifier (BertForTokenClassification, with a CRF), not a BertClassifier; "
        "load it with BertTokenClassifier.from_pretrained, or pass ignore_stored_head=True to put a new "
        "BertClassifier head on its backbone.")
    with pytest.raises(UserInputError, match="holds a BertTokenClassifier .*not a BertSpanQA"):
        BertSpanQA.from_pretrained(crf_ner_dir)
    with pytest.raises(UserInputError, match="holds a BertTokenClassifier .*not a BertPretrainer"):
        BertPretrainer.from_pretrained(crf_ner_dir)


def test_ignore_stored_head_loads_the_backbone_alone_with_a_new_head(crf_ner_dir):
    stored = BertTokenClassifier.from_pretrained(crf_ner_dir)
    assert stored.use_crf and stored.num_classes == 5 and stored.newly_initialized_heads == []
    with pytest.raises(UserInputError, match="no classifier weights in the checkpoint; pass num_classes"):
        BertClassifier.from_pretrained(crf_ner_dir, ignore_stored_head=True)
    with pytest.warns(UserWarning, match="no classifier weights; initialized randomly"):
        model = BertClassifier.from_pretrained(crf_ner_dir, num_classes=2, ignore_stored_head=True)
    assert model.num_classes == 2 and model.newly_initialized_heads == ["classifier"]
    for ours, theirs in zip(model.backbone.weights, stored.backbone.weights):
        np.testing.assert_array_equal(ours.numpy() if hasattr(ours, "numpy") else np.asarray(ours),
                                      theirs.numpy() if hasattr(theirs, "numpy") else np.asarray(theirs))
    # The same class with a new head: neither the CRF nor the stored classifier is taken.
    with pytest.warns(UserWarning, match="initialized randomly"):
        fresh = BertTokenClassifier.from_pretrained(crf_ner_dir, num_classes=3, ignore_stored_head=True)
    assert not fresh.use_crf and fresh.num_classes == 3


def test_backbone_and_pretraining_directories_load_into_every_task(backbone_dir, tmp_path):
    with pytest.warns(UserWarning, match="initialized randomly"):
        assert BertClassifier.from_pretrained(backbone_dir, num_classes=2).num_classes == 2
        assert BertTokenClassifier.from_pretrained(backbone_dir, num_classes=5).num_classes == 5
    pretraining_dir = str(tmp_path / "pretrained")
    BertPretrainer(BertBackbone(TINY)).save_pretrained(pretraining_dir)
    _write_vocab(pretraining_dir)
    with pytest.warns(UserWarning, match="initialized randomly"):
        assert BertSpanQA.from_pretrained(pretraining_dir).newly_initialized_heads == ["qa_outputs"]


def _ner_recipe():
    spec = importlib.util.spec_from_file_location("run_ner_recipe", os.path.join(REPO, "recipes", "run_ner.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def ner_data(tmp_path_factory):
    directory = tmp_path_factory.mktemp("ner_data")
    sentences = [("peter lives in berlin", "B-PER O O B-LOC"), ("anna met peter today", "B-PER O B-PER O"),
                 ("anna lives in paris", "B-PER O O B-LOC")]
    with open(directory / "dev.txt", "w", encoding="utf-8") as f:
        for words, tags in sentences * 3:
            f.writelines(f"{w} {t}\n" for w, t in zip(words.split(), tags.split()))
            f.write("\n")
    return directory


def _evaluate(recipe, ner_data, crf_ner_dir, output_dir, *flags):
    with contextlib.redirect_stdout(io.StringIO()) as stdout:
        recipe.main([f"--data_dir={ner_data}", f"--init_checkpoint={crf_ner_dir}", f"--output_dir={output_dir}",
                     "--do_eval", "--max_seq_length=16", "--verbose=0", *flags])
    with open(os.path.join(output_dir, "eval_results.json"), encoding="utf-8") as f:
        return json.load(f), stdout.getvalue()


def test_a_labels_file_in_another_order_is_matched_to_the_models_label_ids(crf_ner_dir, ner_data, tmp_path, capsys):
    recipe = _ner_recipe()
    reference, _ = _evaluate(recipe, ner_data, crf_ner_dir, str(tmp_path / "reference"))
    permuted = tmp_path / "labels.txt"
    permuted.write_text("\n".join(["I-LOC", "B-PER", "O", "B-LOC", "I-PER"]) + "\n", encoding="utf-8")
    matched, printed = _evaluate(recipe, ner_data, crf_ner_dir, str(tmp_path / "matched"), f"--labels={permuted}")
    assert matched["label_list"] == reference["label_list"] == LABELS
    assert "matched by name to the label ids of the --init_checkpoint model" in printed
    assert {k: matched[k] for k in ("precision", "recall", "f1")} == {k: reference[k] for k in ("precision", "recall", "f1")}
    other = tmp_path / "other_labels.txt"
    other.write_text("O\nB-PER\nI-PER\nB-ORG\nI-ORG\n", encoding="utf-8")
    with pytest.raises(SystemExit) as exit_info:
        recipe.main([f"--data_dir={ner_data}", f"--init_checkpoint={crf_ner_dir}", f"--output_dir={tmp_path / 'x'}",
                     "--do_eval", f"--labels={other}"])
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert exit_info.value.code == 2
    assert err == (f"error: --labels={other}: the labels are not those of the --init_checkpoint model's head "
                   "(O, B-PER, I-PER, B-LOC, I-LOC): lacks B-LOC, I-LOC; adds B-ORG, I-ORG; pass --ignore_stored_head "
                   "to train a new head.")


def test_a_vocabulary_cut_short_is_refused_and_a_padded_table_accepted(tmp_path):
    directory = tmp_path / "model"
    BertBackbone(BertConfig(**dict(TINY.to_dict(), vocab_size=300))).save_pretrained(str(directory))
    _write_vocab(str(directory))  # 13 tokens under a 300-row table
    with pytest.raises(UserInputError) as error_info:
        BertClassifier.from_pretrained(str(directory), num_classes=2)
    assert str(error_info.value) == (
        f"{directory / 'vocab.txt'}: 13 tokens, but {directory / 'config.json'} has vocab_size 300 (287 rows of its "
        "embedding table without a token); the vocabulary must be the model's (tables padded past their vocabulary "
        "by at most 1% are accepted).")
    settings = FinetuningConfig(init_checkpoint=str(directory), output_dir=str(tmp_path / "out"))
    with pytest.raises(UserInputError, match="vocab.txt: 13 tokens, but .*config.json has vocab_size 300"):
        check_tokenizer_fits_model(load_tokenizer(settings), settings)
    # NVIDIA's checkpoints pad 30,522 tokens to 30,528 rows; Nordic BERT has 31,748 tokens in 32,000 rows.
    for tokens, rows in ((30522, 30528), (31748, 32000)):
        check_vocab_size(type("Tokenizer", (), {"vocab_size": tokens, "vocab_file": "vocab.txt"})(), rows, "config.json")


def test_tokenizer_files_that_are_not_what_was_expected_are_named(backbone_dir, tmp_path):
    config_path = os.path.join(backbone_dir, "tokenizer_config.json")
    settings = FinetuningConfig(init_checkpoint=backbone_dir, output_dir=str(tmp_path / "out"))
    try:
        for text, message in (("{not json", "tokenizer_config.json: not valid JSON \\(line 1, column 2"),
                              ("[1, 2]", "tokenizer_config.json: expected a JSON object \\(\\{...\\}\\), got a list")):
            with open(config_path, "w", encoding="utf-8") as f:
                f.write(text)
            for load in (lambda: load_tokenizer(settings), lambda: BertClassifier.from_pretrained(backbone_dir, 2),
                         lambda: BertTokenizer.from_pretrained(backbone_dir)):
                with pytest.raises(UserInputError, match=message):
                    load()
    finally:
        os.remove(config_path)
    # A keras-hub preset keeps its tokenizer in tokenizer.json: its absence is named, not a missing vocab.txt.
    preset = tmp_path / "preset"
    preset.mkdir()
    hub_config = {"vocabulary_size": len(VOCAB), "num_layers": 1, "num_heads": 2, "hidden_dim": 16,
                  "intermediate_dim": 32, "dropout": 0.0, "max_sequence_length": 32, "num_segments": 2}
    (preset / "config.json").write_text(json.dumps({"module": "keras_hub.src.models.bert.bert_backbone",
                                                    "class_name": "BertBackbone", "config": hub_config,
                                                    "registered_name": "keras_hub>BertBackbone"}))
    for check in (check_model_flags, load_tokenizer):
        with pytest.raises(UserInputError, match=f"--vocab_file is required: the --init_checkpoint directory {preset} "
                                                 "holds no tokenizer.json \\(a keras-hub preset's tokenizer, with "
                                                 "assets/tokenizer/vocabulary.txt\\)"):
            check(FinetuningConfig(init_checkpoint=str(preset), output_dir=str(tmp_path / "out")))
