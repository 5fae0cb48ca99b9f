"""GLUE and SWAG read the datasets ecosystem's files (JSON lines, CSV, JSON, TSV with a header) through
--train_file / --validation_file / --test_file: the same examples give the same token ids, segment ids and
label ids as in the original files (GLUE TSVs in --data_dir, SWAG's CSV), labels given as datasets
ClassLabel ids (MNLI's order differs from the original's), label names or STS-B floats; every split is read
in setup(), and a missing file is a one-line UserInputError raised before any model is built."""

import csv
import importlib.util
import json
import os

import numpy as np
import pytest

from keras_bert_impl.config import BertConfig
from keras_bert_impl.data import glue_data, swag_data
from keras_bert_impl.tasks.glue import GlueConfig, GlueTask
from keras_bert_impl.tasks.swag import SwagConfig, SwagTask
from keras_bert_impl.tokenizers.bert_tokenizer import BertTokenizer
from keras_bert_impl.utils.errors import UserInputError

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "on", "a", "mat", "he", "said", "\"",
         ",", ".", "dog", "ran", "far", "is", "not", "'", "s", "plane", "taking", "off", "door", "opens"]

# (text_a, text_b, original label) of every example; quotes, commas and an empty second text included.
PAIRS = [
    ("he said the cat sat .", "\" the cat sat on a mat , he said .", "1"),
    ("the dog ran far", "", "0"),
    ("\" a plane is taking off", "a plane 's door opens .", "1"),
    ("the mat is not a cat", "   ", "0"),
]
MNLI_LABELS = ["neutral", "contradiction", "entailment", "entailment"]
STSB_SCORES = [5.0, 0.5, 3.8, 1.25]

# datasets ClassLabel ids of the original labels
DATASETS_IDS = {"mrpc": {"0": 0, "1": 1}, "sst2": {"0": 0, "1": 1},
                "mnli": {"entailment": 0, "neutral": 1, "contradiction": 2}}


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    path = os.path.join(tmp_path_factory.mktemp("vocab"), "vocab.txt")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(VOCAB) + "\n")
    tokenizer = BertTokenizer(path)
    tokenizer.path = path
    return tokenizer


def _write_tsv(path, rows):
    with open(path, "w", encoding="utf-8") as f:
        f.write("".join("\t".join(row) + "\n" for row in rows))


def _original_files(task, directory):
    """train.tsv and dev(_matched).tsv in the task's original GLUE layout, and test(_matched).tsv."""
    os.makedirs(directory, exist_ok=True)
    if task == "mrpc":
        labelled = [["Quality", "#1 ID", "#2 ID", "#1 String", "#2 String"]] + [
            [label, str(i), str(i + 100), a, b] for i, (a, b, label) in enumerate(PAIRS)]
        test = [["index", "#1 ID", "#2 ID", "#1 String", "#2 String"]] + [
            [str(i), str(i), str(i + 100), a, b] for i, (a, b, _) in enumerate(PAIRS)]
    elif task == "sst2":
        labelled = [["sentence", "label"]] + [[a, label] for a, _, label in PAIRS]
        test = [["index", "sentence"]] + [[str(i), a] for i, (a, _, _) in enumerate(PAIRS)]
    elif task == "mnli":
        fill = ["1", "1n", "fiction", "(", "(", "(", "("]
        labelled = [["index", "promptID", "pairID", "genre", "s1bp", "s2bp", "s1p", "s2p", "sentence1", "sentence2",
                     "label1", "gold_label"]] + [[str(i), *fill, a, b, label, label]
                                                 for i, ((a, b, _), label) in enumerate(zip(PAIRS, MNLI_LABELS))]
        test = [labelled[0][:10]] + [[str(i), *fill, a, b] for i, (a, b, _) in enumerate(PAIRS)]
    else:  # stsb
        fill = ["main-captions", "MSRvid", "2012test", "0001", "none", "none"]
        labelled = [["index", "genre", "filename", "year", "old_index", "source1", "source2", "sentence1",
                     "sentence2", "score"]] + [[str(i), *fill, a, b, f"{s:.3f}"]
                                               for i, ((a, b, _), s) in enumerate(zip(PAIRS, STSB_SCORES))]
        test = [labelled[0][:9]] + [[str(i), *fill, a, b] for i, (a, b, _) in enumerate(PAIRS)]
    for split in ["train", *glue_data.dev_splits(task), *glue_data.test_splits(task)]:
        _write_tsv(os.path.join(directory, f"{split}.tsv"), test if split.startswith("test") else labelled)


def _dataset_records(task, labelled):
    """The examples as datasets' `glue` rows: its column names, integer ClassLabel ids (floats for STS-B)."""
    text, pair = glue_data.GLUE_DATASET_COLUMNS[task]
    records = []
    for i, (a, b, label) in enumerate(PAIRS):
        record = {"idx": i, text: a, **({pair: b} if pair else {})}
        if task == "mnli":
            label = DATASETS_IDS["mnli"][MNLI_LABELS[i]]
        elif task == "stsb":
            label = STSB_SCORES[i]
        else:
            label = DATASETS_IDS[task][label]
        record["label"] = label if labelled else -1
        records.append(record)
    return records


def _write_records(path, records):
    if path.endswith(".jsonl"):
        with open(path, "w", encoding="utf-8") as f:
            f.writelines(json.dumps(r) + "\n" for r in records)
    elif path.endswith(".json"):
        with open(path, "w", encoding="utf-8") as f:
            json.dump({key: [r[key] for r in records] for key in records[0]}, f)  # datasets' to_json(lines=False)
    else:
        with open(path, "w", encoding="utf-8", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(records[0]))
            writer.writeheader()
            writer.writerows(records)
    return path


def _glue_config(task, **flags):
    """The GlueConfig of a run reading every split (setup writes nothing to output_dir)."""
    return GlueConfig(**{**dict(task_name=task, output_dir="unused", max_seq_length=12, do_train=True, do_eval=True,
                                do_predict=True), **flags})


def _glue_splits(task, tokenizer, **flags):
    """(train, dev, test) (features, labels, examples) as GlueTask.setup reads them."""
    glue = GlueTask(_glue_config(task, **flags))
    glue.setup(tokenizer)
    return glue.train_set, next(iter(glue.dev_sets.values())), next(iter(glue.test_sets.values()))


def _assert_same_split(got, expected):
    for key in ("token_ids", "segment_ids", "padding_mask"):
        assert [r.tolist() for r in got[0][key]] == [r.tolist() for r in expected[0][key]], key
    if expected[1] is None:
        assert got[1] is None
    else:
        assert got[1].dtype == expected[1].dtype
        np.testing.assert_array_equal(got[1], expected[1])


@pytest.mark.parametrize("extension", ["jsonl", "csv", "json"])
@pytest.mark.parametrize("task", ["mrpc", "sst2", "mnli", "stsb"])
def test_glue_record_files_give_the_features_and_label_ids_of_the_original_tsvs(task, extension, tokenizer,
                                                                                tmp_path):
    _original_files(task, str(tmp_path / "original"))
    original = _glue_splits(task, tokenizer, data_dir=str(tmp_path / "original"))
    files = {flag: _write_records(str(tmp_path / f"{flag}.{extension}"), _dataset_records(task, flag != "test_file"))
             for flag in ("train_file", "validation_file", "test_file")}
    from_records = _glue_splits(task, tokenizer, **files)  # no --data_dir
    for got, expected in zip(from_records, original):
        _assert_same_split(got, expected)
    if task == "mnli":  # datasets' 0 is "entailment", the original's class 0 "contradiction"
        assert original[0][1].tolist() == [2, 0, 1, 1]
    if task == "mrpc":  # an empty / whitespace second text packs one segment, as the original
        assert [int(s.sum()) for s in original[0][0]["segment_ids"]][1::2] == [0, 0]


def test_glue_label_names_and_a_tsv_with_a_header_read_like_integer_ids(tokenizer, tmp_path):
    records = _dataset_records("mnli", labelled=True)
    reference = glue_data.read_glue_records("mnli", _write_records(str(tmp_path / "ids.jsonl"), records), "train")
    for names in (MNLI_LABELS, ["neutral", "contradiction", "entailment", "entailment"]):
        named = [dict(r, label=name) for r, name in zip(records, names)]
        path = str(tmp_path / "names.tsv")
        _write_tsv(path, [list(named[0])] + [[str(r[k]) for k in named[0]] for r in named])
        assert glue_data.read_glue_records("mnli", path, "train") == [
            glue_data.InputExample(f"train-{i}", e.text_a, e.text_b, e.label) for i, e in enumerate(reference)]


def test_a_split_given_by_file_replaces_only_that_split_of_data_dir(tokenizer, tmp_path):
    _original_files("mrpc", str(tmp_path / "original"))
    original = _glue_splits("mrpc", tokenizer, data_dir=str(tmp_path / "original"))
    dev = _write_records(str(tmp_path / "dev.jsonl"), _dataset_records("mrpc", True)[:2])
    mixed = _glue_splits("mrpc", tokenizer, data_dir=str(tmp_path / "original"), validation_file=dev)
    _assert_same_split(mixed[0], original[0])
    assert [e.text_a for e in mixed[1][2]] == [a for a, _, _ in PAIRS[:2]]
    for task in ("mrpc", "sst2"):  # an original GLUE TSV given by file reads as in --data_dir
        _original_files(task, str(tmp_path / task))
        by_dir = _glue_splits(task, tokenizer, data_dir=str(tmp_path / task))
        by_file = _glue_splits(task, tokenizer, **{flag: str(tmp_path / task / f"{split}.tsv") for flag, split in (
            ("train_file", "train"), ("validation_file", "dev"), ("test_file", "test"))})
        for got, expected in zip(by_file, by_dir):
            _assert_same_split(got, expected)


def test_glue_record_errors_name_the_file_line_and_what_was_expected(tokenizer, tmp_path):
    records = _dataset_records("mrpc", labelled=True)
    path = _write_records(str(tmp_path / "train.jsonl"), [records[0], dict(records[1], label=7)])
    with pytest.raises(UserInputError, match=rf"{path}:2: unknown label 7 for mrpc; expected one of \['0', '1'\], "
                                             r"a datasets label id 0..1 \(not_equivalent, equivalent\)"):
        glue_data.read_glue_records("mrpc", path, "train")
    path = _write_records(str(tmp_path / "dev.jsonl"), [dict(records[0], label=-1)])
    with pytest.raises(UserInputError, match=rf"{path}:1: label -1 \(unlabelled\) in the dev data"):
        glue_data.read_glue_records("mrpc", path, "dev")
    with pytest.raises(UserInputError, match=rf"{path}:1: no column 'question1'"):
        glue_data.read_glue_records("qqp", path, "dev")
    good = _write_records(str(tmp_path / "good.jsonl"), records)
    with pytest.raises(UserInputError, match="--data_dir or --validation_file is required for the dev data"):
        _glue_splits("mrpc", tokenizer, train_file=good, test_file=good)
    with pytest.raises(UserInputError, match=rf"{tmp_path}/nope.csv: no such file"):
        _glue_splits("mrpc", tokenizer, train_file=str(tmp_path / "nope.csv"), validation_file=good, test_file=good)


# ------------------------------------------------------------------------------------------------ SWAG
SWAG_COLUMNS = ["video-id", "fold-ind", "startphrase", "sent1", "sent2", "gold-source", "ending0", "ending1",
                "ending2", "ending3", "label"]
SWAG_ROWS = [
    ["v1", "1", "the cat sat, he said.", "the cat sat, he said.", "the dog", "gold", "ran far.", "sat \" on",
     "is not a cat.", "opens the door.", "2"],
    ["v2", "2", "a plane is taking off.", "a plane is taking off.", "he", "gen", "said.", "ran.", "sat.",
     "is not.", "0"],
]


def _swag_original(path, labelled=True):
    """The released layout: a leading unnamed index column, then the named columns."""
    columns = SWAG_COLUMNS if labelled else SWAG_COLUMNS[:-1]
    with open(path, "w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["", *columns])
        writer.writerows([str(i), *row[:len(columns)]] for i, row in enumerate(SWAG_ROWS))
    return path


def _swag_records(labelled=True):
    """datasets' swag rows: the same columns, an integer label (-1 in test)."""
    return [{**dict(zip(SWAG_COLUMNS[:-1], row[:-1])), "label": int(row[-1]) if labelled else -1}
            for row in SWAG_ROWS]


def _swag_config(**flags):
    """The SwagConfig of a run reading every split (setup writes nothing to output_dir)."""
    return SwagConfig(**{**dict(output_dir="unused", max_seq_length=16, do_train=True, do_eval=True, do_predict=True),
                         **flags})


def _swag_splits(tokenizer, **flags):
    swag = SwagTask(_swag_config(**flags))
    swag.setup(tokenizer)
    return swag.train, swag.dev, swag.test


@pytest.mark.parametrize("extension", ["jsonl", "csv", "json"])
def test_swag_record_files_give_the_features_of_the_original_csv(extension, tokenizer, tmp_path):
    data_dir = tmp_path / "original"
    data_dir.mkdir()
    for name in ("train.csv", "val.csv"):
        _swag_original(str(data_dir / name))
    _swag_original(str(data_dir / "test.csv"), labelled=False)
    original = _swag_splits(tokenizer, data_dir=str(data_dir))
    files = {flag: _write_records(str(tmp_path / f"{flag}.{extension}"), _swag_records(flag != "test_file"))
             for flag in ("train_file", "validation_file", "test_file")}
    from_records = _swag_splits(tokenizer, **files)
    for got, expected in zip(from_records, original):
        for key in ("token_ids", "segment_ids", "padding_mask"):
            assert [[c.tolist() for c in ex] for ex in got[0][key]] == [[c.tolist() for c in ex]
                                                                        for ex in expected[0][key]]
        assert (got[1] is None and expected[1] is None) or got[1].tolist() == expected[1].tolist()
    assert original[0][1].tolist() == [2, 0]
    assert [e.swag_id for e in original[1][2]] == ["v1-2", "v2-3"]


def _recipe(name):
    spec = importlib.util.spec_from_file_location(f"{name}_recipe", os.path.join(REPO, "recipes", f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_run_swag_names_a_missing_file_before_building_a_model(tokenizer, tmp_path, capsys, monkeypatch):
    built = []
    monkeypatch.setattr(SwagTask, "build_model", lambda self: built.append(1))
    train = _write_records(str(tmp_path / "train.jsonl"), _swag_records())
    config = str(tmp_path / "bert_config.json")
    BertConfig(vocab_size=len(VOCAB), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
               intermediate_size=32).to_json_file(config)
    with pytest.raises(SystemExit) as exit_info:
        _recipe("run_swag").main([f"--train_file={train}", f"--data_dir={tmp_path}", f"--vocab_file={tokenizer.path}",
                                  f"--bert_config_file={config}",
                                  f"--output_dir={tmp_path / 'out'}", "--do_train", "--do_eval"])
    assert exit_info.value.code == 2 and not built
    assert capsys.readouterr().err.strip() == (f"error: {tmp_path}/val.csv: no such file (--data_dir holds SWAG's "
                                               "train.csv, val.csv, test.csv; --validation_file names another file).")


def test_swag_label_errors_name_the_file_and_line(tmp_path):
    path = _write_records(str(tmp_path / "val.jsonl"), [dict(_swag_records()[0], label=-1)])
    with pytest.raises(UserInputError, match=rf"{path}:1: label -1 is not one of 0..3"):
        swag_data.read_swag_file(path, labelled=True)
    (example,) = swag_data.read_swag_file(path, labelled=False)
    assert example.label is None and example.swag_id == "v1-1"
