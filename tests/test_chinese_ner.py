"""Chinese NER formats: BIOES and BMES tags and CLUENER2020 JSON lines are recognized from the files, trained
through run_ner.py (in BIO), scored as entity spans and written back in their own format; spans -> tags ->
spans is the identity in every scheme; a raw Chinese string is one word a character; a BMES / BIOES tag out of
order is one warning naming its file and line; a CLUENER span ending before it starts is named as such."""

import json
import os
import random

import numpy as np
import pytest

from keras_bert_impl.data import cluener_data, conll_data, conll_features
from keras_bert_impl.data.tag_schemes import (
    detect_tagging_scheme,
    from_bio,
    spans_to_tags,
    tag_order_faults,
    tags_to_spans,
    to_bio,
    warn_tag_order_faults,
)
from keras_bert_impl.preprocessors.token_classifier_preprocessor import BertTokenClassifierPreprocessor
from keras_bert_impl.runners.finetuning import OUTPUT_DESCRIPTIONS
from keras_bert_impl.tokenizers.bert_tokenizer import BertTokenizer
from keras_bert_impl.training import run_directory
from keras_bert_impl.utils.errors import UserInputError
from tests.finetuning_files import load_recipe

SCHEMES = ("bio", "iob1", "bioes", "bmes")
# (text, entities as (type, start, end) with end inclusive)
SENTENCES = [
    ("张三在北京工作。", [("PER", 0, 1), ("LOC", 3, 4)]),
    ("李四去了上海市。", [("PER", 0, 1), ("LOC", 4, 6)]),
    ("王五和赵六住在杭州。", [("PER", 0, 1), ("PER", 3, 4), ("LOC", 7, 8)]),
    ("他在京工作。", [("LOC", 2, 2)]),
    ("欧阳娜娜在广州。", [("PER", 0, 3), ("LOC", 5, 6)]),
]


def _random_spans(rng, length, types=("PER", "LOC", "ORG")):
    spans, position = [], 0
    while position < length:
        position += rng.randint(0, 3)  # a gap (0: the entity follows the previous one directly)
        end = position + rng.randint(0, 3)
        if end >= length:
            break
        spans.append((rng.choice(types), position, end))
        position = end + 1
    return spans


def test_spans_to_tags_to_spans_is_the_identity_in_every_scheme():
    rng = random.Random(0)
    for _ in range(300):
        length = rng.randint(1, 14)
        spans = _random_spans(rng, length)
        bio = spans_to_tags(spans, length, "bio")
        for scheme in SCHEMES:
            tags = spans_to_tags(spans, length, scheme)
            assert tags_to_spans(tags) == spans, (scheme, tags)
            assert to_bio(tags) == bio and from_bio(bio, scheme) == tags


def test_the_scheme_is_recognized_from_the_tags():
    def sentences(*tag_lists):
        return [conll_data.ConllSentence(["x"] * len(tags), tags, 0, list(range(len(tags)))) for tags in tag_lists]

    assert detect_tagging_scheme(sentences(["B-PER", "M-PER", "E-PER"], ["S-LOC", "O"])) == "bmes"
    assert detect_tagging_scheme(sentences(["B-PER", "I-PER", "E-PER"], ["S-LOC", "O"])) == "bioes"
    assert detect_tagging_scheme(sentences(["B-PER", "E-PER"], ["O"])) == "bioes"
    assert detect_tagging_scheme(sentences(["I-PER", "I-PER"], ["B-LOC"])) == "iob1"
    assert detect_tagging_scheme(sentences(["B-PER", "I-PER"], ["B-LOC"])) == "bio"


def test_bmes_predictions_are_written_back_in_bmes():
    sentence = conll_data.ConllSentence(list("张三在北京"), ["B-PER", "E-PER", "O", "B-LOC", "E-LOC"], 0, [1] * 5)
    labels = ["O", "B-LOC", "I-LOC", "B-PER", "I-PER"]
    tokenizer = BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", *"张三在北京"])
    features = conll_features.convert_sentences_to_features([sentence], tokenizer, labels, 16)
    assert features[0].label_ids[1:6].tolist() == [3, 4, 0, 1, 2]  # trained in BIO
    predicted = np.zeros((1, 16), "int32")
    predicted[0, 1:6] = [3, 4, 4, 0, 1]  # B-PER I-PER I-PER O B-LOC
    tags = conll_features.predictions_to_word_tags(features, predicted, [sentence], labels, "bmes")
    assert tags == [["B-PER", "M-PER", "E-PER", "O", "S-LOC"]]
    assert conll_data.evaluate_word_tags([sentence], tags)["num_correct"] == 0
    assert conll_data.evaluate_word_tags([sentence], [sentence.labels])["f1"] == 1.0


def _cluener_record(text, spans, **more):
    label = {}
    for type_, start, end in spans:
        label.setdefault(type_, {}).setdefault(text[start : end + 1], []).append([start, end])
    return {**more, "text": text, "label": label}


def test_cluener_records_are_read_one_word_a_character_and_written_back_with_their_spans():
    for text, spans in SENTENCES:
        record = _cluener_record(text, spans, id=7)
        words, tags = cluener_data.cluener_words_and_tags(record, "train.json:1")
        assert words == list(text) and tags == spans_to_tags(spans, len(text), "bio")
        assert cluener_data.cluener_record(record, tags) == record
        assert cluener_data.cluener_record({"id": 7, "text": text}, tags) == record  # a test record gets "label"
    with pytest.raises(UserInputError, match=r"train\.json:3: label 'PER': the characters \[0, 1\] are '张三', not "
                                             r"the entity '李四'"):
        cluener_data.cluener_words_and_tags({"text": "张三", "label": {"PER": {"李四": [[0, 1]]}}}, "train.json:3")
    with pytest.raises(UserInputError, match=r"train\.json:4: the entities '张三' \[0, 1\] and '三在' \[1, 2\] overlap"):
        cluener_data.cluener_words_and_tags(
            {"text": "张三在", "label": {"PER": {"张三": [[0, 1]]}, "LOC": {"三在": [[1, 2]]}}}, "train.json:4")


def test_a_cluener_span_ending_before_it_starts_is_named_as_such_and_one_past_the_text_as_outside():
    with pytest.raises(UserInputError) as refused:
        cluener_data.cluener_words_and_tags({"text": "张三", "label": {"PER": {"张三": [[1, 0]]}}}, "train.json:5")
    assert str(refused.value) == ('train.json:5: label \'PER\' entity \'张三\': [1, 0] ends before it starts; expected '
                                  '{"TYPE": {"ENTITY": [[start, end], ...]}} with end inclusive, start <= end.')
    with pytest.raises(UserInputError, match=r"train\.json:6: .*\[1, 2\] is outside the text of 2 characters"):
        cluener_data.cluener_words_and_tags({"text": "张三", "label": {"PER": {"三": [[1, 2]]}}}, "train.json:6")


@pytest.mark.parametrize("scheme, tags, line, reason", [
    ("bmes", ["E-PER", "O", "B-LOC", "E-LOC"], 1, "'E-PER' ends an entity that no B-PER began"),
    ("bmes", ["O", "M-PER", "E-PER", "O"], 2, "'M-PER' continues an entity that no B-PER began"),
    ("bioes", ["B-PER", "I-PER", "O", "S-LOC"], 2, "'I-PER' is not followed by the E-PER that ends its entity"),
    ("bioes", ["O", "B-LOC", "O", "O"], 2, "'B-LOC' is not followed by the E-LOC that ends its entity"),
])
def test_bmes_and_bioes_order_faults_are_one_warning_naming_file_and_line(tmp_path, scheme, tags, line, reason):
    path = tmp_path / "train.txt"
    text = "张三在京"
    valid = spans_to_tags([("PER", 0, 1), ("LOC", 3, 3)], 4, scheme)
    path.write_text("".join(f"{c} {t}\n" for c, t in zip(text, valid)) + "\n" +
                    "".join(f"{c} {t}\n" for c, t in zip(text, tags)), encoding="utf-8")
    sentences = conll_data.read_conll_file(str(path))
    with pytest.warns(UserWarning) as caught:
        assert warn_tag_order_faults(sentences, scheme) == 1
    assert [str(w.message) for w in caught] == [
        f"{path}:{5 + line}: {reason} ({scheme.upper()}); 1 such tag-order fault in the data read, each read by "
        "conlleval's rules"]
    assert warn_tag_order_faults(sentences[:1], scheme) == 0  # the valid sentence: no warning
    assert tag_order_faults(["B-PER", "O"], "bmes") == []  # BMEO: a lone B- is a one-character entity


def test_a_raw_chinese_string_is_one_word_a_character():
    tokenizer = BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", *"周杰昨天从广州回来了。"])
    preprocessor = BertTokenClassifierPreprocessor(tokenizer, sequence_length=16)
    x, y, _ = preprocessor(["周杰昨天从广州回来了。"], [[1, 2, 0, 0, 0, 3, 4, 0, 0, 0, 0]])
    assert x["token_ids"][0, :13].tolist() == [2, *range(4, 15), 3]
    assert y[0, :13].tolist() == [-100, 1, 2, 0, 0, 0, 3, 4, 0, 0, 0, 0, -100]
    features = preprocessor.windows(["王五 lives in 杭州"])
    assert features[0].tokens == ["[CLS]", "[UNK]", "[UNK]", "[UNK]", "[UNK]", "[UNK]", "州", "[SEP]"]
    assert features[0].word_indices == [0, 1, 2, 3, 4, 5]  # 王 五 lives in 杭 州


# ------------------------------------------------------------------------------------ through run_ner.py
def _vocabulary():
    chars = sorted({c for text, _ in SENTENCES for c in text})
    return ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b", "n", *chars]


def _write_setup(directory):
    """vocab.txt and a tiny bert_config.json in `directory`; returns their flags."""
    vocab = os.path.join(directory, "vocab.txt")
    with open(vocab, "w", encoding="utf-8") as f:
        f.write("\n".join(_vocabulary()) + "\n")
    config = os.path.join(directory, "bert_config.json")
    with open(config, "w", encoding="utf-8") as f:
        json.dump({"vocab_size": len(_vocabulary()), "hidden_size": 16, "num_hidden_layers": 1,
                   "num_attention_heads": 2, "intermediate_size": 32, "max_position_embeddings": 32,
                   "hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0}, f)
    return [f"--vocab_file={vocab}", f"--bert_config_file={config}"]


def _run_ner(flags, output_dir):
    return load_recipe("run_ner").main([*flags, f"--output_dir={output_dir}", "--do_train", "--do_eval",
                                        "--do_predict", "--max_seq_length=16", "--num_train_epochs=1",
                                        "--train_batch_size=4", "--learning_rate=1e-2", "--verbose=0"])


@pytest.mark.parametrize("scheme", ["bmes", "bioes"])
def test_character_per_line_bmes_and_bioes_files_train_and_predict_in_their_scheme(scheme, tmp_path):
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    for name in ("train.txt", "dev.txt", "test.txt"):
        with open(data_dir / name, "w", encoding="utf-8") as f:
            for text, spans in SENTENCES:  # MSRA's layout: a character and its tag a line
                f.writelines(f"{c} {t}\n" for c, t in zip(text, spans_to_tags(spans, len(text), scheme)))
                f.write("\n")
    output_dir = tmp_path / "out"
    results = _run_ner([*_write_setup(str(tmp_path)), f"--data_dir={data_dir}"], output_dir)
    assert results["tagging_scheme"] == scheme
    assert results["label_list"] == ["O", "B-LOC", "I-LOC", "B-PER", "I-PER"]  # trained in BIO
    assert results["num_gold"] == 10 and results["test"]["num_gold"] == 10  # scored as entity spans
    rows = [line.split() for line in open(output_dir / "test_predictions.txt", encoding="utf-8") if line.strip()]
    gold = [(c, t) for text, spans in SENTENCES for c, t in zip(text, spans_to_tags(spans, len(text), scheme))]
    assert [(c, g) for c, g, _ in rows] == gold
    predicted = [p for _, _, p in rows]
    letters = {"bmes": "BMES", "bioes": "BIES"}[scheme]
    assert all(p == "O" or p[0] in letters for p in predicted)
    assert from_bio(to_bio(predicted), scheme) == predicted  # valid tags of the scheme


def test_cluener_files_train_and_predict_cluener_json_lines(tmp_path, capsys):
    data_dir = tmp_path / "cluener"
    data_dir.mkdir()
    records = [_cluener_record(text, spans) for text, spans in SENTENCES]
    records.append(_cluener_record("ＮＢＡ在北京。", [("ORG", 0, 2), ("LOC", 4, 5)]))  # full-width: --nfkc
    for name in ("train.json", "dev.json"):
        with open(data_dir / name, "w", encoding="utf-8") as f:
            f.writelines(json.dumps(record, ensure_ascii=False) + "\n" for record in records)
    test = [{"id": i, "text": record["text"]} for i, record in enumerate(records)]  # CLUENER's test.json
    with open(data_dir / "test.json", "w", encoding="utf-8") as f:
        f.writelines(json.dumps(record, ensure_ascii=False) + "\n" for record in test)
    output_dir = tmp_path / "out"
    results = _run_ner([*_write_setup(str(tmp_path)), f"--data_dir={data_dir}", "--nfkc"], output_dir)
    assert results["tagging_scheme"] == "bio" and results["num_gold"] == 12
    assert "test" not in results  # the test file has no entities to score
    assert not os.path.exists(output_dir / "test_predictions.txt")
    lines = open(output_dir / "test_predictions.json", encoding="utf-8").read().splitlines()
    predictions = [json.loads(line) for line in lines]
    assert [(p["id"], p["text"]) for p in predictions] == [(r["id"], r["text"]) for r in test]
    for prediction in predictions:
        for entities in prediction["label"].values():
            for entity, offsets in entities.items():
                assert all(prediction["text"][start : end + 1] == entity for start, end in offsets)
    with open(output_dir / "model" / "tokenizer_config.json", encoding="utf-8") as f:
        assert json.load(f)["normalize"] == "nfkc"
    assert BertTokenizer.from_pretrained(str(output_dir / "model")).tokenize("Ａ在") == ["a", "在"]
    # The run's list of what it wrote describes test_predictions.json, and --overwrite_output_dir removes it.
    listed = [line.split() for line in capsys.readouterr().out.splitlines() if line.startswith("  test_predictions")]
    assert listed and listed[0][0] == "test_predictions.json" and len(listed[0]) > 1
    assert "test_predictions.json" in run_directory.remove_run_outputs(str(output_dir), OUTPUT_DESCRIPTIONS)
