"""NER and SQuAD read the datasets ecosystem's files (JSON lines, JSON, CSV as `datasets` writes it) into the
same features as their original formats (CoNLL text, SQuAD's nested JSON); NER takes any label set (a
--labels file, else the labels of every split read) and scores dev labels the training data lacks; data
errors are one-line `UserInputError`s naming the file and line, raised before any model is built."""

import csv
import importlib.util
import json
import os

import numpy as np
import pytest

from keras_bert_impl.config import BertConfig
from keras_bert_impl.data import conll_data, conll_features, squad_data, squad_features
from keras_bert_impl.metrics.squad_metrics import squad_v1_evaluate, squad_v2_evaluate
from keras_bert_impl.runners.flags import config_from_flags
from keras_bert_impl.tasks.ner import NerConfig, NerTask
from keras_bert_impl.tasks.squad import SquadTask
from keras_bert_impl.tokenizers.bert_tokenizer import BertTokenizer
from keras_bert_impl.utils.errors import UserInputError

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Three CoNLL sentences (IOB1, as the original CoNLL-2003 files), in two documents.
SENTENCES = [
    (["EU", "rejects", "German", "call", "to", "boycott", "British", "lamb", "."],
     ["I-ORG", "O", "I-MISC", "O", "O", "O", "I-MISC", "O", "O"]),
    (["Peter", "Blackburn"], ["I-PER", "I-PER"]),
    (["BRUSSELS", "1996-08-22", "Don't"], ["I-LOC", "O", "O"]),
]
NAMES = ["O", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC", "B-MISC", "I-MISC"]  # conll2003's ClassLabel


def _recipe(name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(REPO, "recipes", f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def tokenizer(minilm_vocab_file):
    return BertTokenizer(minilm_vocab_file, do_lower_case=True)


def _write_conll(path, sentences, docstart_before=(0, 2)):
    with open(path, "w", encoding="utf-8") as f:
        for i, (words, tags) in enumerate(sentences):
            if i in docstart_before:
                f.write("-DOCSTART- -X- -X- O\n\n")
            f.writelines(f"{w} NNP I-NP {t}\n" for w, t in zip(words, tags))
            f.write("\n")
    return str(path)


def _records(sentences, names=None, docstart_before=(0, 2)):
    """Records as `datasets` holds CoNLL-2003: -DOCSTART- as its own record, tags as strings or (with `names`)
    ClassLabel ids."""
    records = []
    for i, (words, tags) in enumerate(sentences):
        if i in docstart_before:
            records.append({"tokens": ["-DOCSTART-"], "ner_tags": [names.index("O") if names else "O"]})
        records.append({"tokens": words, "ner_tags": [names.index(t) for t in tags] if names else tags})
    return records


def _write_jsonl(path, records):
    with open(path, "w", encoding="utf-8") as f:
        f.writelines(json.dumps(r) + "\n" for r in records)
    return str(path)


def _write_csv(path, records, cell):
    """A CSV file whose list cells are `cell(value)`: numpy's print (what datasets' to_csv writes), JSON, repr."""
    with open(path, "w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(list(records[0]))
        for record in records:
            writer.writerow([cell(v) if isinstance(v, (list, dict)) else v for v in record.values()])
    return str(path)


def _numpy_print(value):
    """What pandas writes for an Arrow list cell (numpy's str) or a struct cell (a dict of numpy arrays)."""
    if isinstance(value, dict):
        return str({k: np.array(v, dtype=object if k == "text" else np.int32) for k, v in value.items()})
    return str(np.array(value))


def _tiny_config(tmp_path):
    path = tmp_path / "bert_config.json"
    BertConfig(vocab_size=30522, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32,
               max_position_embeddings=128).to_json_file(path)
    return path


def _features(sentences, tokenizer, use_document_context=False):
    features = conll_features.convert_sentences_to_features(sentences, tokenizer, conll_data.build_label_list(sentences),
                                                        16, use_document_context=use_document_context)
    return [(f.token_ids.tolist(), f.label_ids.tolist(), f.label_mask.tolist()) for f in features]


# ---------------------------------------------------------------------------------------------------- NER
def test_ner_jsonl_json_and_csv_give_the_features_of_the_same_conll_text(tmp_path, tokenizer):
    conll = conll_data.read_ner_file(_write_conll(tmp_path / "train.txt", SENTENCES))
    records = _records(SENTENCES)
    files = {
        "jsonl": _write_jsonl(tmp_path / "train.jsonl", records),
        "json (a list)": str(tmp_path / "list.json"),
        "csv (numpy print)": _write_csv(tmp_path / "numpy.csv", records, _numpy_print),
        "csv (JSON cells)": _write_csv(tmp_path / "json.csv", records, json.dumps),
        "csv (Python repr)": _write_csv(tmp_path / "repr.csv", records, repr),
    }
    (tmp_path / "list.json").write_text(json.dumps(records), encoding="utf-8")
    with open(files["csv (numpy print)"], encoding="utf-8") as f:
        assert "['EU' 'rejects' 'German'" in f.read()  # no commas: Python's literal_eval would join the words
    assert [s.words for s in conll] == [w for w, _ in SENTENCES] and [s.document for s in conll] == [0, 0, 1]
    for use_document_context in (False, True):
        expected = _features(conll, tokenizer, use_document_context)
        for name, path in files.items():
            sentences = conll_data.read_ner_file(path)
            assert [(s.words, s.labels, s.document) for s in sentences] == [
                (s.words, s.labels, s.document) for s in conll], name
            assert _features(sentences, tokenizer, use_document_context) == expected, name
    # Where a record's errors are: its line (JSON lines, CSV) or its index (JSON).
    assert conll_data.read_ner_file(files["jsonl"])[1].where(0) == f"{files['jsonl']}:3"
    assert conll_data.read_ner_file(files["json (a list)"])[0].where(0) == f"{tmp_path / 'list.json'}:[1]"


def test_ner_integer_tags_map_through_the_labels_file_and_need_it(tmp_path):
    labels_file = tmp_path / "labels.txt"
    labels_file.write_text("\n".join(NAMES) + "\n", encoding="utf-8")
    names = conll_data.read_label_file(labels_file)
    ids_file = _write_jsonl(tmp_path / "ids.jsonl", _records(SENTENCES, NAMES))
    sentences = conll_data.read_ner_file(ids_file, label_names=names)
    assert [s.labels for s in sentences] == [t for _, t in SENTENCES]
    csv_file = _write_csv(tmp_path / "ids.csv", _records(SENTENCES, NAMES), _numpy_print)  # "[3 0 7 0 ...]"
    assert [s.labels for s in conll_data.read_ner_file(csv_file, label_names=names)] == [t for _, t in SENTENCES]
    with pytest.raises(UserInputError, match=r"ids\.jsonl:2: ner_tags\[0\] is the integer 4; .*pass --labels"):
        conll_data.read_ner_file(ids_file)
    with pytest.raises(UserInputError, match=r"ids\.jsonl:2: ner_tags\[0\] is the label id 4, but the label list "
                                             r"has 3 labels"):
        conll_data.read_ner_file(ids_file, label_names=NAMES[:3])


def test_ner_label_files_keep_their_order_and_complete_bio(tmp_path):
    germeval = ["B-LOC", "B-LOCderiv", "B-OTH", "I-LOC", "I-LOCderiv", "I-OTH", "O"]  # GermEval's layout: O last
    assert conll_data.label_list_from_names(germeval) == germeval
    assert conll_data.label_list_from_names(["PER", "B-LOC"]) == ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
    # BIOES / BMES labels stand for their type's BIO labels; another one-letter prefix is refused.
    assert conll_data.label_list_from_names(["O", "S-PER", "E-LOC"]) == ["O", "B-PER", "B-LOC", "I-PER", "I-LOC"]
    with pytest.raises(UserInputError, match=r"labels\.txt: label 'X-PER': expected 'O', 'P-TYPE' with P one of"):
        conll_data.label_list_from_names(["O", "X-PER"], "labels.txt")
    path = tmp_path / "labels.txt"
    path.write_text("O\nB-PER\n\nB-PER\n", encoding="utf-8")
    with pytest.raises(UserInputError, match=r"labels\.txt:4: label 'B-PER' repeats line 2"):
        conll_data.read_label_file(path)


def _ner_config(tmp_path, *flags):
    """The NerConfig of run_ner.py's flags."""
    args = _recipe("run_ner").build_parser().parse_args([f"--output_dir={tmp_path / 'out'}", "--max_seq_length=16",
                                                         *flags])
    return config_from_flags(NerConfig, args)


def test_ner_labels_flag_sets_the_label_list_and_refuses_other_labels(tmp_path, tokenizer):
    names = ["B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC", "B-MISC", "I-MISC", "O"]
    labels_file = tmp_path / "labels.txt"
    labels_file.write_text("\n".join(names) + "\n", encoding="utf-8")
    train = _write_jsonl(tmp_path / "train.jsonl", _records(SENTENCES, names))  # label ids in the file's order
    dev = _write_conll(tmp_path / "dev.txt", SENTENCES)
    task = NerTask(_ner_config(tmp_path, "--do_train", "--do_eval", f"--train_file={train}", f"--dev_file={dev}",
                             f"--labels={labels_file}"))
    task.setup(tokenizer)
    assert task.label_list == names
    assert task.scheme == "iob1"
    # The label ids of the integer-tagged train file equal those of the same sentences as CoNLL text.
    assert task.splits["train"].labels == task.splits["dev"].labels
    first = task.splits["train"].features[0]  # "EU" is I-ORG in IOB1: trained as B-ORG
    assert task.label_list[first.label_ids[first.token_positions[0]]] == "B-ORG"

    bad_dev = _write_conll(tmp_path / "bad_dev.txt", [(["Kiel", "Week"], ["B-EVT", "I-EVT"])], docstart_before=())
    task = NerTask(_ner_config(tmp_path, "--do_train", "--do_eval", f"--train_file={train}",
                             f"--validation_file={bad_dev}", f"--labels={labels_file}"))
    with pytest.raises(UserInputError, match=r"bad_dev\.txt:1: unknown label 'B-EVT'; the labels of --labels=.*"
                                             r"labels\.txt are B-PER, I-PER"):
        task.setup(tokenizer)


def test_ner_dev_labels_absent_from_training_are_in_the_label_list_and_scored(tmp_path, minilm_vocab_file):
    """Train knows PER only; dev has LOC and MISC too: the run trains, and its dev scores count them."""
    train = _write_jsonl(tmp_path / "train.jsonl", [{"words": ["Peter", "Blackburn", "said"],
                                                     "ner": ["B-PER", "I-PER", "O"]}] * 4)
    dev = _write_csv(tmp_path / "dev.csv", [
        {"words": ["Peter", "in", "Paris"], "ner": ["B-PER", "O", "B-LOC"]},
        {"words": ["German", "lamb"], "ner": ["B-MISC", "O"]},
    ], _numpy_print)
    config = _tiny_config(tmp_path)
    output_dir = tmp_path / "out"
    common = [f"--vocab_file={minilm_vocab_file}", f"--output_dir={output_dir}", "--max_seq_length=16",
              "--tokens_column=words", "--tags_column=ner", f"--validation_file={dev}", "--verbose=0"]
    results = _recipe("run_ner").main([*common, f"--bert_config_file={config}", f"--train_file={train}",
                                       "--do_train", "--do_eval", "--num_train_epochs=1", "--train_batch_size=4"])
    union = ["O", "B-LOC", "I-LOC", "B-MISC", "I-MISC", "B-PER", "I-PER"]
    assert results["label_list"] == union
    assert results["num_gold"] == 3 and set(results["per_type"]) >= {"LOC", "MISC", "PER"}
    assert results["per_type"]["LOC"]["support"] == 1 and results["per_type"]["MISC"]["support"] == 1
    with open(output_dir / "model" / "config.json", encoding="utf-8") as f:
        id2label = json.load(f)["id2label"]
    assert [id2label[str(i)] for i in range(7)] == union

    # The fine-tuned model's own label list, on dev data with a type it never had: scored, never a crash.
    dev2 = _write_jsonl(tmp_path / "dev2.jsonl", [{"words": ["Kiel", "Week"], "ner": ["B-EVT", "I-EVT"]},
                                                  {"words": ["Peter"], "ner": ["B-PER"]}])
    results = _recipe("run_ner").main([*common[:-2], f"--validation_file={dev2}", f"--output_dir={tmp_path / 'eval'}",
                                       f"--init_checkpoint={output_dir / 'model'}", "--do_eval", "--verbose=0"])
    assert results["label_list"] == union and results["num_gold"] == 2
    assert results["per_type"]["EVT"] == {"precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 1}


def test_ner_data_errors_name_the_file_and_line(tmp_path):
    bad = _write_jsonl(tmp_path / "bad.jsonl", [{"tokens": ["a"], "ner_tags": ["O"]},
                                                {"tokens": ["a", "b"], "ner_tags": ["O"]}])
    with pytest.raises(UserInputError, match=r"bad\.jsonl:2: 2 words in column 'tokens' but 1 tags"):
        conll_data.read_ner_file(bad)
    with pytest.raises(UserInputError, match=r"bad\.jsonl:1: no column 'words'; the columns are \['ner_tags', "
                                             r"'tokens'\]"):
        conll_data.read_ner_file(bad, tokens_column="words")
    tag = _write_jsonl(tmp_path / "tag.jsonl", [{"tokens": ["a"], "ner_tags": ["PER"]}])
    with pytest.raises(UserInputError, match=r"tag\.jsonl:1: malformed tag 'PER' in ner_tags\[0\]"):
        conll_data.read_ner_file(tag)
    cell = _write_csv(tmp_path / "cell.csv", [{"tokens": "a b", "ner_tags": "[0, 0]"}], str)
    with pytest.raises(UserInputError, match=r"cell\.csv:2: column 'tokens' holds 'a b' .*expected a list"):
        conll_data.read_ner_file(cell)
    with pytest.raises(UserInputError, match=r"nope\.txt: no such file"):
        conll_data.read_ner_file(tmp_path / "nope.txt")


# -------------------------------------------------------------------------------------------------- SQuAD
CONTEXT_A = "The Normans gave their name to Normandy, a region in France."
CONTEXT_B = "Rollo agreed to swear fealty to King Charles III of West Francia in 911."
ORIGINAL = {"version": "v2.0", "data": [
    {"title": "Normans", "paragraphs": [{"context": CONTEXT_A, "qas": [
        {"id": "a1", "question": "Where is Normandy?", "is_impossible": False,
         "answers": [{"text": "France", "answer_start": CONTEXT_A.index("France")}]},
        {"id": "a2", "question": "Who named Paris?", "is_impossible": True, "answers": []},
    ]}]},
    {"title": "Rollo", "paragraphs": [{"context": CONTEXT_B, "qas": [
        {"id": "b1", "question": "When did Rollo swear fealty?", "is_impossible": False,
         "answers": [{"text": "911", "answer_start": CONTEXT_B.index("911")}]},
        {"id": "b2", "question": "To whom did Rollo swear?", "is_impossible": False,
         "answers": [{"text": "King Charles III", "answer_start": CONTEXT_B.index("King")}]},
    ]}]},
]}


def _squad_records():
    """The questions of ORIGINAL as `datasets`' squad_v2 holds them: one flat record per question."""
    return [{"id": qa["id"], "title": article["title"], "context": paragraph["context"], "question": qa["question"],
             "answers": {"text": [a["text"] for a in qa["answers"]],
                         "answer_start": [a["answer_start"] for a in qa["answers"]]}}
            for article in ORIGINAL["data"] for paragraph in article["paragraphs"] for qa in paragraph["qas"]]


def _squad_files(tmp_path):
    original = tmp_path / "original.json"
    original.write_text(json.dumps(ORIGINAL), encoding="utf-8")
    (tmp_path / "wrapped.json").write_text(json.dumps({"version": 2.0, "data": _squad_records()}), encoding="utf-8")
    return str(original), {
        "jsonl": _write_jsonl(tmp_path / "dev.jsonl", _squad_records()),
        "json {data: [records]}": str(tmp_path / "wrapped.json"),
        "csv (numpy print)": _write_csv(tmp_path / "numpy.csv", _squad_records(), _numpy_print),
        "csv (JSON cells)": _write_csv(tmp_path / "json.csv", _squad_records(), json.dumps),
    }


def _squad_features(path, tokenizer, is_training):
    examples, stats = squad_data.read_squad_examples(path, is_training, version_2_with_negative=True)
    features = squad_features.convert_examples_to_features(examples, tokenizer, max_seq_length=24, doc_stride=8,
                                                       max_query_length=12, is_training=is_training)
    return stats, [(f.input_ids, f.segment_ids, f.start_position, f.end_position, f.is_impossible) for f in features]


def test_squad_records_give_the_features_of_the_same_original_json(tmp_path, tokenizer):
    original, files = _squad_files(tmp_path)
    for is_training in (True, False):
        expected_stats, expected = _squad_features(original, tokenizer, is_training)
        assert len(expected) > 4 and expected_stats["num_impossible"] == 1
        if is_training:  # some windows hold an answer, others point at [CLS]
            assert {f[2] == 0 for f in expected} == {True, False}
        for name, path in files.items():
            assert _squad_features(path, tokenizer, is_training) == (expected_stats, expected), name


def _answerable(dataset):
    """The dataset without its impossible questions (a SQuAD v1.1 dataset)."""
    return {"data": [{"paragraphs": [{"context": p["context"], "qas": [qa for qa in p["qas"] if qa["answers"]]}
                                     for p in article["paragraphs"]]} for article in dataset["data"]]}


def test_squad_records_evaluate_like_the_original_json(tmp_path):
    original, files = _squad_files(tmp_path)
    predictions = {"a1": "France", "a2": "Paris", "b1": "in 911", "b2": ""}
    null_odds = {"a1": -2.0, "a2": 1.5, "b1": -0.5, "b2": 3.0}
    reference = squad_data.load_squad_dataset(original)
    assert reference == ORIGINAL
    expected_v2 = squad_v2_evaluate(reference, predictions, na_probs=null_odds, na_prob_thresh=1.0)
    expected_v1 = squad_v1_evaluate(_answerable(reference), predictions)
    assert expected_v2["HasAns_total"] == 3 and expected_v2["NoAns_total"] == 1 and 0 < expected_v2["f1"] < 100
    for name, path in files.items():
        dataset = squad_data.load_squad_dataset(path)
        assert squad_v2_evaluate(dataset, predictions, na_probs=null_odds, na_prob_thresh=1.0) == expected_v2, name
        assert squad_v1_evaluate(_answerable(dataset), predictions) == expected_v1, name


def test_squad_training_takes_the_first_of_several_answers(tmp_path, tokenizer):
    record = {"id": "q", "title": "t", "context": CONTEXT_A, "question": "Where?",
              "answers": {"text": ["France", "in France"], "answer_start": [CONTEXT_A.index("France"),
                                                                            CONTEXT_A.index("in France")]}}
    (example,), _ = squad_data.read_squad_examples(_write_jsonl(tmp_path / "t.jsonl", [record]), is_training=True)
    assert example.orig_answer_text == "France" and example.doc_tokens[example.start_position] == "France."


def test_squad_record_errors_name_the_file_and_line(tmp_path):
    record = _squad_records()[0]
    cases = [
        ({k: v for k, v in record.items() if k != "question"}, r"dev\.jsonl:2: no column 'question'"),
        (dict(record, answers={"text": ["France"]}), r"dev\.jsonl:2: the answers lack 'answer_start'"),
        (dict(record, answers={"text": ["France"], "answer_start": []}),
         r"dev\.jsonl:2: answers \['France'\] at \[\]: expected as many texts"),
        (dict(record, context=7), r"dev\.jsonl:2: column 'context' holds 7; expected a string"),
    ]
    for bad, pattern in cases:
        path = _write_jsonl(tmp_path / "dev.jsonl", [record, bad])
        with pytest.raises(squad_data.SquadFormatError, match=pattern):
            squad_data.load_squad_dataset(path)
    assert issubclass(squad_data.SquadFormatError, UserInputError)
    with pytest.raises(UserInputError, match=r"missing\.json: no such file"):
        squad_data.load_squad_dataset(tmp_path / "missing.json")


def test_run_squad_reports_a_bad_train_file_before_building_the_model(tmp_path, minilm_vocab_file, monkeypatch,
                                                                       capsys):
    def build_model(self):
        raise AssertionError("the model was built before the data was read")

    monkeypatch.setattr(SquadTask, "build_model", build_model)
    record = _squad_records()[0]
    train = _write_jsonl(tmp_path / "train.jsonl", [record, {k: v for k, v in record.items() if k != "context"}])
    with pytest.raises(SystemExit) as exit_info:
        _recipe("run_squad").main([f"--train_file={train}", f"--vocab_file={minilm_vocab_file}",
                                   f"--bert_config_file={_tiny_config(tmp_path)}",
                                   f"--output_dir={tmp_path / 'out'}", "--do_train", "--max_seq_length=32",
                                   "--max_query_length=8"])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        f"error: {train}:2: no column 'context'; the columns are ['answers', 'id', 'question', 'title'] "
        "(name others with the recipe's column flags).")
