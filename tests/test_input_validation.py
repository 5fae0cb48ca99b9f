"""Inputs that would silently give wrong results are refused with a message naming the file, line or field:
empty splits, 0-instance corpora and 0-record TFRecords, TFRecord shapes against the flags,
vocabularies (no [MASK], repeats, blank lines, more ids than the model's vocab_size), SQuAD's strict
booleans, repeated ids and empty contexts, STS-B scores outside 0..5 and empty SWAG endings; a header naming a
column twice; an empty text to classify or an empty question."""

import importlib.util
import json
import os
import types

import numpy as np
import pytest

from keras_bert_impl.data import (
    conll_data,
    glue_data,
    squad_data,
    squad_features,
    swag_data,
    text_classification_data,
)
from keras_bert_impl.data import squad_postprocessing
from keras_bert_impl.tasks.base import FinetuningConfig, check_tokenizer_fits_model
from keras_bert_impl.tokenizers.bert_tokenizer import BertTokenizer
from keras_bert_impl.tokenizers.vocabulary import load_vocab
from keras_bert_impl.utils.errors import UserInputError

pytestmark = pytest.mark.backend_independent

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "who", "sang", "ann", "?", ".", "a", "b"]


def _write(path, text):
    path.write_text(text, encoding="utf-8")
    return str(path)


def _vocab(tmp_path, tokens=VOCAB, name="vocab.txt"):
    return _write(tmp_path / name, "\n".join(tokens) + "\n")


@pytest.mark.parametrize("name,text,reason", [
    ("train.tsv", "sentence\tlabel\n", "header only"),
    ("train.csv", "sentence,label\n", "header only"),
    ("train.jsonl", "", "the file is empty"),
])
def test_glue_split_without_examples_is_refused_naming_the_file(tmp_path, name, text, reason):
    path = _write(tmp_path / name, text)
    with pytest.raises(UserInputError, match=f"{name}: no examples \\({reason}\\)"):
        glue_data.read_glue_records("sst2", path, "train")


def test_glue_original_tsv_header_only_is_refused(tmp_path):
    path = _write(tmp_path / "dev.tsv", "sentence\tlabel\n")
    with pytest.raises(UserInputError, match="dev.tsv: no examples \\(header only\\)"):
        glue_data.read_glue_file("sst2", path, "dev")


def test_ner_and_swag_files_without_examples_are_refused(tmp_path):
    with pytest.raises(UserInputError, match="train.txt: no examples"):
        conll_data.read_ner_file(_write(tmp_path / "train.txt", "-DOCSTART- -X- O O\n\n"))
    header = "sent1,sent2,ending0,ending1,ending2,ending3,label\n"
    with pytest.raises(UserInputError, match="train.csv: no examples \\(header only\\)"):
        swag_data.read_swag_file(_write(tmp_path / "train.csv", header))


def test_stsb_score_outside_0_to_5_is_refused_naming_file_and_line(tmp_path):
    path = _write(tmp_path / "train.jsonl", '{"sentence1": "a", "sentence2": "b", "label": 2.5}\n'
                                            '{"sentence1": "a", "sentence2": "b", "label": 7.0}\n')
    with pytest.raises(UserInputError, match="train.jsonl:2: the stsb score 7.0 is outside 0..5"):
        glue_data.read_glue_records("stsb", path, "train")


@pytest.mark.parametrize("name", ["train.csv", "train.tsv"])
def test_a_header_naming_a_column_twice_is_refused_naming_file_and_column(tmp_path, name):
    sep = "," if name.endswith(".csv") else "\t"
    path = _write(tmp_path / name, sep.join(["text", "text", "label"]) + "\n" + sep.join(["good", "bad", "1"]) + "\n")
    message = f"{path}:1: the header names the column 'text' twice; expected distinct column names."
    with pytest.raises(UserInputError) as refused:
        text_classification_data.read_labelled_records(path, "train")
    assert str(refused.value) == message
    with pytest.raises(UserInputError) as refused:
        glue_data.read_glue_records("sst2", path, "train", text_column="text")
    assert str(refused.value) == message


def test_an_empty_text_to_classify_is_refused_naming_file_line_and_column(tmp_path):
    own = _write(tmp_path / "train.csv", "text,label\ngood,1\n  ,0\n")
    with pytest.raises(UserInputError) as refused:
        text_classification_data.read_labelled_records(own, "train")
    assert str(refused.value) == f"{own}:3: column 'text' is empty; expected a text."
    pairs = _write(tmp_path / "dev.jsonl", '{"sentence1": " ", "sentence2": "A cat.", "label": 1}\n')
    with pytest.raises(UserInputError, match="dev.jsonl:1: column 'sentence1' is empty; expected a text."):
        glue_data.read_glue_records("mrpc", pairs, "dev")
    original = tmp_path / "sst2"
    original.mkdir()
    _write(original / "train.tsv", "sentence\tlabel\na fine film\t1\n\t0\n")
    with pytest.raises(UserInputError, match="train.tsv:3: the text \\(column 1\\) is empty; expected a text."):
        glue_data.read_glue_examples("sst2", str(original), "train")


def test_an_empty_question_is_refused_naming_the_question():
    data = _squad([{"id": "q1", "question": "Who?", "answers": []}, {"id": "q2", "question": " ", "answers": []}])
    with pytest.raises(UserInputError, match="dev.json: .*qas\\[1\\] \\(question id 'q2'\\): the question is empty"):
        squad_data.squad_examples_from_json(data, False, True, source="dev.json")


def test_swag_empty_ending_is_refused_naming_file_and_line(tmp_path):
    path = _write(tmp_path / "val.jsonl", json.dumps({"sent1": "a", "sent2": "b", "ending0": "x", "ending1": " ",
                                                      "ending2": "y", "ending3": "z", "label": 0}) + "\n")
    with pytest.raises(UserInputError, match="val.jsonl:1: ending1 is empty"):
        swag_data.read_swag_file(path)


def _squad(qas, context="Ann sang."):
    return {"data": [{"title": "t", "paragraphs": [{"context": context, "qas": qas}]}]}


def test_squad_is_impossible_must_be_a_json_boolean():
    data = _squad([{"id": "q1", "question": "Who?", "answers": [], "is_impossible": "false"}])
    with pytest.raises(UserInputError, match="dev.json: .*qas\\[0\\].*is_impossible is 'false'; expected a JSON"):
        squad_data.squad_examples_from_json(data, False, True, source="dev.json")


def test_squad_repeated_question_id_at_predict_time_is_refused():
    data = _squad([{"id": "q1", "question": "Who?", "answers": []}, {"id": "q1", "question": "What?", "answers": []}])
    with pytest.raises(UserInputError, match="dev.json: .*qas\\[1\\]: question id 'q1' repeats"):
        squad_data.squad_examples_from_json(data, False, True, source="dev.json")


@pytest.mark.parametrize("version_2", [False, True])
def test_squad_empty_context_gets_the_null_answer(tmp_path, version_2):
    tokenizer = BertTokenizer(_vocab(tmp_path))
    data = {"data": [{"title": "t", "paragraphs": [
        {"context": "", "qas": [{"id": "q1", "question": "Who sang?", "answers": []}]},
        {"context": "Ann sang.", "qas": [{"id": "q2", "question": "Who sang?", "answers": []}]}]}]}
    examples, _ = squad_data.squad_examples_from_json(data, False, version_2)
    features = squad_features.convert_examples_to_features(examples, tokenizer, max_seq_length=32, doc_stride=16,
                                                       max_query_length=8, is_training=False)
    logits = np.zeros((len(features), 32), np.float32)
    results = squad_postprocessing.raw_results(features, logits, logits)
    predictions = squad_postprocessing.compute_predictions(examples, features, results,
                                                           version_2_with_negative=version_2)
    assert predictions.predictions["q1"] == "" and set(predictions.predictions) == {"q1", "q2"}


def test_vocab_with_a_repeated_token_is_refused_naming_file_and_line(tmp_path):
    path = _vocab(tmp_path, VOCAB + ["a"])
    with pytest.raises(UserInputError, match=f"vocab.txt:{len(VOCAB) + 1}: the token 'a' repeats line 11"):
        load_vocab(path)


def test_vocab_blank_line_is_kept_at_its_id_with_a_warning(tmp_path):
    path = _vocab(tmp_path, VOCAB[:5] + [""] + VOCAB[5:])
    with pytest.warns(UserWarning, match="vocab.txt:6: blank line"):
        tokens = load_vocab(path)
    assert tokens[5] == "" and tokens[6] == "who" and len(tokens) == len(VOCAB) + 1


def test_tokenizer_with_more_ids_than_the_model_vocab_size_is_refused(tmp_path):
    config = _write(tmp_path / "bert_config.json", json.dumps(
        {"vocab_size": len(VOCAB) - 1, "hidden_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2,
         "intermediate_size": 32}))
    settings = FinetuningConfig(bert_config_file=config, output_dir=str(tmp_path / "out"))
    with pytest.raises(UserInputError, match=f"vocab.txt: {len(VOCAB)} tokens .*bert_config.json has vocab_size "
                                             f"{len(VOCAB) - 1}"):
        check_tokenizer_fits_model(BertTokenizer(_vocab(tmp_path)), settings)
    check_tokenizer_fits_model(BertTokenizer(_vocab(tmp_path, VOCAB[:-1])), settings)  # as many ids as rows: fine


def _create_pretraining_data(tmp_path, corpus_text, vocab_tokens):
    spec = importlib.util.spec_from_file_location("cpd", os.path.join(REPO, "recipes", "create_pretraining_data.py"))
    recipe = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(recipe)
    output = tmp_path / "out.tfrecord"
    argv = [f"--input_file={_write(tmp_path / 'corpus.txt', corpus_text)}", f"--output_file={output}",
            f"--vocab_file={_vocab(tmp_path, vocab_tokens)}", "--max_seq_length=16", "--dupe_factor=1",
            "--max_predictions_per_seq=2"]
    return recipe, argv, output


def test_create_pretraining_data_refuses_an_empty_corpus_and_leaves_no_output(tmp_path, capsys):
    recipe, argv, output = _create_pretraining_data(tmp_path, "\n\n", VOCAB)
    with pytest.raises(SystemExit) as exit_info:
        recipe.main(argv)
    assert exit_info.value.code == 2 and "corpus.txt: no training instances" in capsys.readouterr().err
    assert sorted(os.listdir(tmp_path)) == ["corpus.txt", "vocab.txt"]


def test_create_pretraining_data_refuses_a_vocab_without_mask(tmp_path, capsys):
    recipe, argv, output = _create_pretraining_data(tmp_path, "a b\nb a\n", [t for t in VOCAB if t != "[MASK]"])
    with pytest.raises(SystemExit) as exit_info:
        recipe.main(argv)
    assert exit_info.value.code == 2 and "vocab.txt: no [MASK] token" in capsys.readouterr().err
    assert not output.exists()


def _tfrecord(tmp_path, count):
    from keras_bert_impl.data import pretraining_records
    from keras_bert_impl.data.pretraining_instances import TrainingInstance

    vocab = {t: i for i, t in enumerate(VOCAB)}
    tokenizer = types.SimpleNamespace(vocab=vocab, convert_tokens_to_ids=lambda ts: [vocab[t] for t in ts])
    instance = TrainingInstance(["[CLS]", "[MASK]", "[SEP]", "a", "[SEP]"], [0, 0, 0, 1, 1], True, [1], ["a"])
    path = str(tmp_path / "data.tfrecord")
    if count:
        pretraining_records.write_instances_to_example_files([instance] * count, tokenizer, path, 8, 2)
    else:
        open(path, "wb").close()  # a TFRecord file of no record
    return path


def _pretraining_reader(name):
    """pretrain.py's readers of pretraining files: the tf.data pipeline and the numpy batches (no TensorFlow)."""
    if name == "tf.data":
        pytest.importorskip("tensorflow")
        from keras_bert_impl.data.tf_pretraining_datasets import pretraining_dataset

        return pretraining_dataset
    from keras_bert_impl.data.pretraining_batches import pretraining_batches

    return lambda *args, **kwargs: list(pretraining_batches(*args, **kwargs))


READERS = [pytest.param("tf.data", marks=pytest.mark.tensorflow), "numpy"]


@pytest.mark.parametrize("reader", READERS)
def test_pretraining_dataset_refuses_a_tfrecord_without_records(tmp_path, reader):
    path = _tfrecord(tmp_path, 0)
    with pytest.raises(UserInputError, match="data.tfrecord: no records"):
        _pretraining_reader(reader)(path, 8, 2, batch_size=2)


@pytest.mark.parametrize("reader", READERS)
@pytest.mark.parametrize("max_seq_length,max_predictions,message", [
    (16, 2, "input_ids has length 8, but --max_seq_length=16"),
    (8, 3, "masked_lm_positions has length 2, but --max_predictions_per_seq=3"),
])
def test_pretraining_dataset_refuses_shapes_other_than_the_flags(tmp_path, max_seq_length, max_predictions, message,
                                                                 reader):
    path = _tfrecord(tmp_path, 3)
    pretraining_dataset = _pretraining_reader(reader)
    with pytest.raises(UserInputError, match=f"data.tfrecord: {message}"):
        pretraining_dataset(path, max_seq_length, max_predictions, batch_size=2)
    batches = list(pretraining_dataset(path, 8, 2, batch_size=2, is_training=False))
    assert [tuple(x["token_ids"].shape) for x, _ in batches] == [(2, 8), (1, 8)]


def test_squad_questions_and_swag_choices_cut_to_their_lengths_are_one_warning_per_file(tmp_path):
    from keras_bert_impl.tasks.squad import SquadConfig, SquadTask
    from keras_bert_impl.tasks.swag import SwagConfig, SwagTask

    tokenizer = BertTokenizer(_vocab(tmp_path))
    path = _write(tmp_path / "dev.json", json.dumps(_squad([
        {"id": "q1", "question": "who sang ?", "answers": []}, {"id": "q2", "question": "who sang a b ?", "answers": []},
        {"id": "q3", "question": "who ?", "answers": []}])))
    squad = SquadTask(SquadConfig(output_dir=str(tmp_path / "out"), max_seq_length=16, max_query_length=3,
                                  doc_stride=4))
    squad.tokenizer = tokenizer
    with pytest.warns(UserWarning) as caught:
        squad.load_features(path, is_training=False)
    assert [str(w.message) for w in caught] == [
        f"{path}: 1 of 3 questions are longer than --max_query_length=3 and are cut to it, as the original cuts "
        "them (a larger --max_query_length reads more)."]

    row = {"sent1": "ann sang a b a b", "sent2": "a", "ending0": "b", "ending1": "a b a b", "ending2": "b",
           "ending3": "b", "label": 0}
    _write(tmp_path / "val.csv", ",".join(row) + "\n" + ",".join(str(v) for v in row.values()) + "\n")
    swag = SwagTask(SwagConfig(output_dir=str(tmp_path / "out"), data_dir=str(tmp_path), max_seq_length=12))
    swag.tokenizer = tokenizer
    with pytest.warns(UserWarning) as caught:
        swag.load_split("dev")
    assert [str(w.message) for w in caught] == [  # 6 + 2 tokens and 3 special ones fit 12; 6 + 5 do not
        "the dev set: 1 of 4 choices are longer than --max_seq_length=12 and are cut to it, as the original cuts "
        "them (a larger --max_seq_length reads more)."]
