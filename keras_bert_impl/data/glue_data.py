"""GLUE data (Wang et al., 2018): the TSV readers of the nine tasks, their labels, featurization and the
GLUE-server submission files.

The column indexes are those of google-research/bert run_classifier.py's processors (CoLA, MNLI, MRPC)
and, for the tasks it does not ship, of the processors that follow the same conventions
(Hugging Face's glue processors). Files are read as the original does (`csv.reader` with
`delimiter="\\t"`, no quoting).

==========  ========================  ==================================  =========  ===============================
task        files                     train/dev columns                   test cols  labels
==========  ========================  ==================================  =========  ===============================
cola        train, dev (no header),   id, label, ?, sentence (4)          id,        "0", "1"
            test (header)             text_a=3, label=1                   sentence
sst2        train, dev, test          sentence, label (2)                 index,     "0", "1"
                                                                          sentence
mrpc        train, dev, test          Quality, #1 ID, #2 ID, #1 String,   5          "0", "1"
                                      #2 String (5): a=3, b=4, label=0
qqp         train, dev, test          id, qid1, qid2, q1, q2,             id, q1,    "0", "1"
                                      is_duplicate (6): a=3, b=4, l=5     q2 (3)
stsb        train, dev, test          10 columns: a=7, b=8, score=9       9 (a=7,    float score 0-5
                                      (float)                             b=8)
mnli        train, dev_matched,       >= 10: a=8, b=9, label=last         >= 10      contradiction, entailment,
            dev_mismatched, test_m..                                                 neutral
qnli        train, dev, test          index, question, sentence, label    3          entailment, not_entailment
rte         train, dev, test          index, sentence1, sentence2, label  3          entailment, not_entailment
wnli        train, dev, test          index, sentence1, sentence2, label  3          "0", "1"
==========  ========================  ==================================  =========  ===============================

Every file but CoLA's train/dev has a header line. A line with the wrong number of columns, an STS-B
score that is not a number in [0, 5], or a label outside the task's labels raises `GlueDataError` naming
the file and line number; a file without examples (empty, or its header only) raises one naming the file.

The files of the datasets ecosystem (`read_glue_records`: JSON lines, JSON, CSV, parquet, and a TSV whose
header names the columns) hold one example per record, with the column names of Hugging Face's `glue`
datasets by default (`GLUE_DATASET_COLUMNS`):

==========  ====================  =====================  ======================================
task        text column           text pair column       integer labels (datasets ClassLabel ids)
==========  ====================  =====================  ======================================
cola        sentence              (none)                 0 unacceptable, 1 acceptable
sst2        sentence              (none)                 0 negative, 1 positive
mrpc        sentence1             sentence2              0 not_equivalent, 1 equivalent
qqp         question1             question2              0 not_duplicate, 1 duplicate
stsb        sentence1             sentence2              (float score)
mnli        premise               hypothesis             0 entailment, 1 neutral, 2 contradiction
qnli        question              sentence               0 entailment, 1 not_entailment
rte         sentence1             sentence2              0 entailment, 1 not_entailment
wnli        sentence1             sentence2              0 not_entailment, 1 entailment
==========  ====================  =====================  ======================================

A label is a datasets ClassLabel id (an int, or its digits in a CSV), one of the task's label names
(`GLUE_LABELS`), or a datasets label name from the last column; -1 (datasets' unlabelled test rows) is no
label. MNLI's datasets ids are not the original's class order: 0 is "entailment" there, "contradiction" here.

Packing (`pack_example`) is the original `convert_single_example`: a second text that tokenizes to no
token (empty, whitespace or control characters only) packs a single segment `[CLS] A [SEP]`.
"""

import csv
import dataclasses
import json
import sys
from typing import Optional, Union

import numpy as np

from keras_bert_impl.data.dataset_files import (
    check_header,
    field,
    header_record,
    header_records,
    json_line_record,
    read_records,
    record_format,
    require_examples,
    require_text,
    text_field,
)
from keras_bert_impl.tokenizers import packing
from keras_bert_impl.utils import file_io
from keras_bert_impl.utils.errors import UserInputError

# STS-B's similarity scores lie in [0, 5]; a score outside them is a mistake in the file.
STSB_MIN_SCORE, STSB_MAX_SCORE = 0.0, 5.0

GLUE_TASKS = ("cola", "sst2", "mrpc", "qqp", "stsb", "mnli", "qnli", "rte", "wnli")

# Label names per task, in the order of the class ids (None: regression).
GLUE_LABELS = {
    "cola": ["0", "1"],
    "sst2": ["0", "1"],
    "mrpc": ["0", "1"],
    "qqp": ["0", "1"],
    "stsb": None,
    "mnli": ["contradiction", "entailment", "neutral"],
    "qnli": ["entailment", "not_entailment"],
    "rte": ["entailment", "not_entailment"],
    "wnli": ["0", "1"],
}

# Column names of Hugging Face's `glue` datasets: (text, text pair; "" for single-sentence tasks).
GLUE_DATASET_COLUMNS = {
    "cola": ("sentence", ""),
    "sst2": ("sentence", ""),
    "mrpc": ("sentence1", "sentence2"),
    "qqp": ("question1", "question2"),
    "stsb": ("sentence1", "sentence2"),
    "mnli": ("premise", "hypothesis"),
    "qnli": ("question", "sentence"),
    "rte": ("sentence1", "sentence2"),
    "wnli": ("sentence1", "sentence2"),
}

# Label names of Hugging Face's `glue` datasets in ClassLabel id order (the integer labels of its files).
DATASET_LABEL_NAMES = {
    "cola": ["unacceptable", "acceptable"],
    "sst2": ["negative", "positive"],
    "mrpc": ["not_equivalent", "equivalent"],
    "qqp": ["not_duplicate", "duplicate"],
    "mnli": ["entailment", "neutral", "contradiction"],
    "qnli": ["entailment", "not_entailment"],
    "rte": ["entailment", "not_entailment"],
    "wnli": ["not_entailment", "entailment"],
}

# The metric BestCheckpoint maximizes: the paper's (Devlin et al., Table 1: F1 for MRPC/QQP, Spearman for
# STS-B, Matthews for CoLA, accuracy otherwise); keys of `keras_bert_impl.metrics.glue_task_metrics`.
GLUE_MAIN_METRIC = {
    "cola": "matthews_corrcoef",
    "sst2": "accuracy",
    "mrpc": "f1",
    "qqp": "f1",
    "stsb": "spearmanr",
    "mnli": "accuracy",
    "qnli": "accuracy",
    "rte": "accuracy",
    "wnli": "accuracy",
}

# Submission file of each test split, as the GLUE server expects them.
GLUE_SUBMISSION_FILES = {
    ("cola", "test"): "CoLA.tsv",
    ("sst2", "test"): "SST-2.tsv",
    ("mrpc", "test"): "MRPC.tsv",
    ("qqp", "test"): "QQP.tsv",
    ("stsb", "test"): "STS-B.tsv",
    ("mnli", "test_matched"): "MNLI-m.tsv",
    ("mnli", "test_mismatched"): "MNLI-mm.tsv",
    ("qnli", "test"): "QNLI.tsv",
    ("rte", "test"): "RTE.tsv",
    ("wnli", "test"): "WNLI.tsv",
}


@dataclasses.dataclass(frozen=True)
class _Layout:
    """Where one kind of file keeps its fields. Indexes may be negative (from the end)."""

    header: bool
    num_columns: Optional[int]  # exact count, or None with `min_columns`
    text_a: int
    text_b: Optional[int]
    label: Optional[int]  # None: unlabelled (test)
    min_columns: int = 0


# The layouts of each task's (labelled, test) files.
_INDEX_SENTENCE_PAIR = (_Layout(True, 4, text_a=1, text_b=2, label=3), _Layout(True, 3, text_a=1, text_b=2, label=None))
_LAYOUTS = {
    "cola": (_Layout(False, 4, text_a=3, text_b=None, label=1), _Layout(True, 2, text_a=1, text_b=None, label=None)),
    "sst2": (_Layout(True, 2, text_a=0, text_b=None, label=1), _Layout(True, 2, text_a=1, text_b=None, label=None)),
    "mrpc": (_Layout(True, 5, text_a=3, text_b=4, label=0), _Layout(True, 5, text_a=3, text_b=4, label=None)),
    "qqp": (_Layout(True, 6, text_a=3, text_b=4, label=5), _Layout(True, 3, text_a=1, text_b=2, label=None)),
    "stsb": (_Layout(True, 10, text_a=7, text_b=8, label=9), _Layout(True, 9, text_a=7, text_b=8, label=None)),
    "mnli": (_Layout(True, None, min_columns=11, text_a=8, text_b=9, label=-1),
             _Layout(True, None, min_columns=10, text_a=8, text_b=9, label=None)),
    "qnli": _INDEX_SENTENCE_PAIR,  # index, question, sentence, label
    "rte": _INDEX_SENTENCE_PAIR,  # index, sentence1, sentence2, label
    "wnli": _INDEX_SENTENCE_PAIR,
}


class GlueDataError(UserInputError):
    """A missing or malformed GLUE file: the message names the file and the line."""


@dataclasses.dataclass(frozen=True)
class InputExample:
    """One GLUE example, as the original's `InputExample`.

    Args:
        guid: unique id, "{split}-{line number}".
        text_a: the first sequence.
        text_b: the second sequence, or None for single-sentence tasks.
        label: the label name (a str), the float score (STS-B), or None (test data).
    """

    guid: str
    text_a: str
    text_b: Optional[str]
    label: Union[str, float, None]


def canonical_task(task_name):
    """"SST-2" -> "sst2", "STS-B" -> "stsb", ...; an unknown task is an error listing the known ones."""
    key = "".join(ch for ch in str(task_name).lower() if ch.isalnum())
    if key not in GLUE_TASKS:
        raise UserInputError(f"Unknown GLUE task {task_name!r}; expected one of {', '.join(GLUE_TASKS)}.")
    return key


def get_labels(task_name):
    """The task's label names in class-id order, or None for the regression task STS-B."""
    return GLUE_LABELS[canonical_task(task_name)]


def model_label_names(task_name):
    """The label names a fine-tuned model of the task keeps (config.json's `id2label`): the task's, where they
    are digits ("0", "1": CoLA, SST-2, MRPC, QQP, WNLI) the names of Hugging Face's `glue` datasets for them
    (as transformers' run_glue.py saves them); None for STS-B.

    Examples:

    >>> model_label_names("sst2"), model_label_names("rte")
    (['negative', 'positive'], ['entailment', 'not_entailment'])
    """
    labels = get_labels(task_name)
    if labels is None or not all(label.isdigit() for label in labels):
        return labels
    return DATASET_LABEL_NAMES[canonical_task(task_name)]


def num_outputs(task_name):
    """Outputs of the task's classifier: the number of labels, 1 for STS-B."""
    labels = get_labels(task_name)
    return 1 if labels is None else len(labels)


def dev_splits(task_name):
    """The dev splits: ["dev_matched", "dev_mismatched"] for MNLI, else ["dev"]."""
    return ["dev_matched", "dev_mismatched"] if canonical_task(task_name) == "mnli" else ["dev"]


def test_splits(task_name):
    """The test splits: ["test_matched", "test_mismatched"] for MNLI, else ["test"]."""
    return ["test_matched", "test_mismatched"] if canonical_task(task_name) == "mnli" else ["test"]


def _read_tsv(path):
    """Rows of a TSV file as the original reads them (csv.reader, tab, no quoting), with line numbers."""
    csv.field_size_limit(min(sys.maxsize, 2**31 - 1))
    with file_io.open_text(path, newline="") as f:  # local, or gs:// on a Colab TPU
        reader = csv.reader(f, delimiter="\t", quotechar=None)
        for row in reader:
            yield reader.line_num, row


def read_glue_file(task_name, path, split):
    """Reads one GLUE TSV file into `InputExample`s.

    Args:
        task_name: a GLUE task ("cola", "sst2", "mrpc", "qqp", "stsb", "mnli", "qnli", "rte", "wnli").
        path: the TSV file.
        split: "train", "dev", "dev_matched", ... or "test..." (unlabelled: label None).

    Returns:
        A list of `InputExample`.

    Raises:
        GlueDataError: a line has the wrong number of columns, an STS-B score is not a number in [0, 5],
            or a label is not one of the task's labels; the message names the file and line. A file
            without examples raises a UserInputError naming it.
    """
    task = canonical_task(task_name)
    layout = _layout(task, split)
    examples = []
    for line_number, row in _read_tsv(path):
        if layout.header and line_number == 1:
            continue
        example = _row_example(task, split, layout, path, line_number, row)
        if example is not None:
            examples.append(example)
    return require_examples(examples, path)


def _layout(task, split):
    """The `_Layout` of a task's labelled (train, dev) or unlabelled (test) files."""
    return _LAYOUTS[task][1 if split.startswith("test") else 0]


def _row_example(task, split, layout, path, line_number, row):
    """The `InputExample` of row `line_number` of an original GLUE TSV; None for a blank line."""
    if not row:  # a blank line (e.g. at the end of the file)
        return None
    where = f"{path}:{line_number}"
    if layout.num_columns is not None and len(row) != layout.num_columns:
        raise GlueDataError(f"{where}: expected {layout.num_columns} tab-separated columns for {task} {split} data, "
                            f"found {len(row)}.")
    if layout.num_columns is None and len(row) < layout.min_columns:
        raise GlueDataError(f"{where}: expected at least {layout.min_columns} tab-separated columns for {task} {split} "
                            f"data, found {len(row)}.")
    label = None
    allowed = GLUE_LABELS[task]
    if layout.label is not None:
        raw = row[layout.label]
        if allowed is None:
            try:
                label = float(raw)
            except ValueError:
                raise GlueDataError(f"{where}: the {task} score {raw!r} is not a number.") from None
            _check_score(task, label, raw, where)
        elif raw not in allowed:
            raise GlueDataError(f"{where}: unknown label {raw!r} for {task}; the allowed labels are {allowed}.")
        else:
            label = raw
    text_a = require_text(row[layout.text_a], where, f"the text (column {layout.text_a + 1})", GlueDataError)
    text_b = None if layout.text_b is None else row[layout.text_b]  # empty: one segment, as the original
    return InputExample(f"{split}-{line_number}", text_a, text_b, label)


def glue_file(task_name, data_dir, split):
    """The path of `data_dir/{split}.tsv` (e.g. "train", "dev", "test", MNLI's "dev_matched"); a
    `GlueDataError` when the task has no such split or the file is missing."""
    task = canonical_task(task_name)
    valid = ["train", *dev_splits(task), *test_splits(task)]
    if split not in valid:
        raise UserInputError(f"{task} has no split {split!r}; its splits are {valid}.")
    path = file_io.join(data_dir, f"{split}.tsv")
    if not file_io.isfile(path):
        raise GlueDataError(f"{path}: not found ({task} expects {', '.join(s + '.tsv' for s in valid)}).")
    return path


def read_glue_examples(task_name, data_dir, split):
    """`read_glue_file` of `data_dir/{split}.tsv` (e.g. "train", "dev", "test", MNLI's "dev_matched")."""
    return read_glue_file(task_name, glue_file(task_name, data_dir, split), split)


def glue_line_parser(task_name, path, split, columns=None):
    """How `data.streaming.StreamedExamples` reads a GLUE file of one record a line: `(header_lines, parse)`,
    where `parse(numbered_lines, first_index)` gives the `InputExample`s of a list of `(line number, text)` lines
    (`first_index`: the index of their first record in the file) and checks them, as the whole file's reader
    does: `read_glue_file` (`columns` None: a --data_dir file) or `read_glue_records` (`columns`: its
    `(text_column, text_pair_column, label_column)` arguments).

    Lines end at "\n". None for a file of another format (CSV, JSON, parquet) or a remote one: those are
    read whole. A `.json` file streams when it holds JSON lines (its first line a whole JSON object).
    """
    task = canonical_task(task_name)
    kind = record_format(path)
    if file_io.is_remote(path) or kind not in ("tsv", "jsonl", "json") or columns is None and kind != "tsv":
        return None
    if kind == "json" and not _holds_json_lines(path):
        return None
    labelled = not split.startswith("test")
    if columns is not None:
        text_column, text_pair_column, label_column = columns
        columns = _columns(task, text_column, text_pair_column, label_column if labelled else None)

    def examples(records, first_index):
        records = [record for record in records if record is not None]
        return [_record_example(task, split, columns, first_index + i, *record) for i, record in enumerate(records)]

    if kind != "tsv":
        return 0, lambda lines, first_index: examples((json_line_record(path, n, line) for n, line in lines),
                                                      first_index)

    def rows(lines):
        return zip((n for n, _ in lines), csv.reader([line for _, line in lines], delimiter="\t", quotechar=None))

    header = None if columns is None else next(iter(_read_tsv(path)), (1, []))[1]
    if header is not None and all(c in header for c in columns if c):
        check_header(path, header, GlueDataError)
        return 1, lambda lines, first_index: examples(
            (header_record(path, header, n, row, GlueDataError) for n, row in rows(lines)), first_index)
    layout = _layout(task, split)

    def parse(lines, first_index):
        parsed = (_row_example(task, split, layout, path, n, row) for n, row in rows(lines))
        return [example for example in parsed if example is not None]

    return int(layout.header), parse


def _holds_json_lines(path):
    """Whether a .json file holds JSON lines: its first non-blank line is a whole JSON object, a record (not a
    document of records, `{"data": [...]}`, or of columns, `{"sentence": [...], ...}`)."""
    with file_io.open_text(path) as f:
        first = next((line for line in f if line.strip()), "")
    try:
        value = json.loads(first)
    except ValueError:
        return False
    return isinstance(value, dict) and not any(isinstance(v, list) for v in value.values())


def read_glue_records(task_name, path, split, text_column=None, text_pair_column=None, label_column="label"):
    """Reads one split of a GLUE task from a datasets-ecosystem file into `InputExample`s.

    JSON lines, JSON, CSV and parquet go through `dataset_files.read_records`. A `.tsv` is read as the
    original reads TSVs (tab, no quoting): by column name when its header holds the named columns (as
    SST-2's, QNLI's, RTE's, WNLI's do), else in the task's original layout (`read_glue_file`).

    Args:
        task_name: a GLUE task.
        path: the file.
        split: "train", "dev", ... or "test..." (the label column is then not read: label None).
        text_column: the first text's column; default: the task's `GLUE_DATASET_COLUMNS` name.
        text_pair_column: the second text's column, "" for none; default: the task's.
        label_column: the label's column.

    Returns:
        A list of `InputExample`, labels as the task's label names (floats for STS-B).

    Raises:
        UserInputError: a missing file or column, a text that is not a string, or a label that is none of
            the task's labels, ids or datasets names (a GlueDataError naming the file and line).

    Examples:

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "dev.jsonl")
    >>> with open(path, "w") as f:
    ...     _ = f.write('{"premise": "A cat.", "hypothesis": "An animal.", "label": 0}\\n')
    >>> read_glue_records("mnli", path, "dev_matched")
    [InputExample(guid='dev_matched-0', text_a='A cat.', text_b='An animal.', label='entailment')]
    """
    task = canonical_task(task_name)
    labelled = not split.startswith("test")
    text_column, text_pair_column, _ = _columns(task, text_column, text_pair_column, None)
    if path.lower().endswith(".tsv"):
        records = tsv_records(path, [text_column, text_pair_column, label_column if labelled else ""])
        if records is None:
            return read_glue_file(task, path, split)
    else:
        records = read_records(path)
    columns = _columns(task, text_column, text_pair_column, label_column if labelled else None)
    examples = [_record_example(task, split, columns, i, where, record) for i, (where, record) in enumerate(records)]
    return require_examples(examples, path)


def _columns(task, text_column, text_pair_column, label_column):
    """(text, text pair or "", label or None) column names of a task's records, the defaults filled in."""
    default_text, default_pair = GLUE_DATASET_COLUMNS[task]
    return (text_column or default_text, default_pair if text_pair_column is None else text_pair_column,
            label_column)


def _record_example(task, split, columns, index, where, record):
    """The `InputExample` of the record `index` of a split (`columns`: `_columns`)."""
    text_column, text_pair_column, label_column = columns
    text_a = require_text(_text(record, text_column, where), where, f"column {text_column!r}", GlueDataError)
    text_b = _text(record, text_pair_column, where) if text_pair_column else None  # empty: one segment
    label = None
    if label_column is not None:
        label = _record_label(task, field(record, label_column, where), where)
        if label is None:
            raise GlueDataError(f"{where}: label -1 (unlabelled) in the {split} data; expected a label of {task}.")
    return InputExample(f"{split}-{index}", text_a, text_b, label)


def tsv_records(path, columns=()):
    """(where, record) of a TSV whose header names every one of `columns` ("" entries are ignored), read
    without quoting as the original; None when the header lacks one of them (an original GLUE layout)."""
    if not file_io.isfile(path):
        raise GlueDataError(f"{path}: no such file.")
    rows = iter(_read_tsv(path))
    header = next(rows, (1, []))[1]
    if not all(c in header for c in columns if c):
        return None
    return header_records(path, header, rows, error=GlueDataError)


def _text(record, column, where):
    return text_field(record, column, where, error=GlueDataError)


def _record_label(task, value, where):
    """A record's label as the task's label name (STS-B: a float), None for -1 (unlabelled)."""
    allowed = GLUE_LABELS[task]
    if allowed is None:
        try:
            score = float(value)
        except (TypeError, ValueError):
            raise GlueDataError(f"{where}: the {task} score {value!r} is not a number.") from None
        if score == -1:
            return None
        return _check_score(task, score, value, where)
    if isinstance(value, str) and value in allowed:
        return value
    names = DATASET_LABEL_NAMES[task]
    if isinstance(value, str) and value in names:
        return _from_dataset_name(task, value)
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        index = int(value)
    elif isinstance(value, str) and value.strip().lstrip("-").isdigit():
        index = int(value)
    else:
        index = None
    if index == -1:
        return None
    if index is None or not 0 <= index < len(names):
        raise GlueDataError(f"{where}: unknown label {value!r} for {task}; expected one of {allowed}, a datasets "
                            f"label id 0..{len(names) - 1} ({', '.join(names)}) or -1 (unlabelled).")
    return _from_dataset_name(task, names[index])


def _check_score(task, score, raw, where):
    """`score` when it is a finite similarity score in [0, 5] (STS-B's range); else a GlueDataError."""
    if not STSB_MIN_SCORE <= score <= STSB_MAX_SCORE:  # also False for NaN
        raise GlueDataError(f"{where}: the {task} score {raw!r} is outside {STSB_MIN_SCORE:g}..{STSB_MAX_SCORE:g}.")
    return score


def _from_dataset_name(task, name):
    """The task's label name of a datasets label name ("0"/"1" tasks: the name's index)."""
    allowed = GLUE_LABELS[task]
    return name if name in allowed else allowed[DATASET_LABEL_NAMES[task].index(name)]


def label_ids(task_name, examples):
    """Class ids int32 [N] (float32 scores [N] for STS-B) of labelled examples."""
    labels = get_labels(task_name)
    if labels is None:
        return np.asarray([e.label for e in examples], dtype=np.float32)
    index = {name: i for i, name in enumerate(labels)}
    return np.asarray([index[e.label] for e in examples], dtype=np.int32)


def pack_example(tokenizer, text_a, text_b, max_seq_length):
    """Token ids and segment ids of one example, as the original `convert_single_example` packs it
    (`encode_examples` of the one example).

    A second text that gives tokens is truncated with the first to `max_seq_length - 3` by
    `_truncate_seq_pair` (popping from the longer, from B on a tie), else A alone to `max_seq_length - 2`;
    B and its `[SEP]` are packed only when tokens of B are left.

    Args:
        tokenizer: a `BertTokenizer`.
        text_a: the first text.
        text_b: the second text, or None.
        max_seq_length: the longest packed length (at least 3).

    Returns:
        (token_ids, segment_ids), two lists of ints of the same length (<= max_seq_length).

    Examples:

    >>> from keras_bert_impl.tokenizers.bert_tokenizer import BertTokenizer
    >>> tokenizer = BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "hi", "there"])
    >>> pack_example(tokenizer, "hi there", "there", 8)
    ([2, 4, 5, 3, 5, 3], [0, 0, 0, 0, 1, 1])
    >>> pack_example(tokenizer, "hi there", "  ", 8)  # B without tokens: one segment
    ([2, 4, 5, 3], [0, 0, 0, 0])
    """
    features = encode_examples(tokenizer, [InputExample("", text_a, text_b, None)], max_seq_length)
    return features["token_ids"][0].tolist(), features["segment_ids"][0].tolist()


def encode_examples(tokenizer, examples, max_seq_length):
    """Tokenizes and packs examples as `[CLS] A [SEP] (B [SEP])`, truncated as the original
    `convert_single_example` (`tokenizers.packing`, through `BertTokenizer.__call__`), unpadded.

    Args:
        tokenizer: a `BertTokenizer`.
        examples: `InputExample`s.
        max_seq_length: length of the longest packed sequence (at least 3).

    Returns:
        dict {"token_ids", "segment_ids", "padding_mask"} -> list of N int32 arrays of each example's own
        length (the input of `keras_bert_impl.data.batching`).
    """
    if max_seq_length < 3:
        raise UserInputError(f"max_seq_length must be at least 3 ([CLS], [SEP] and a token), got {max_seq_length}.")
    texts_b = [e.text_b or "" for e in examples]  # "" packs as no B, as the original's `if example.text_b`
    return packing.pack_unpadded(tokenizer, [e.text_a for e in examples], texts_b if any(texts_b) else None,
                                 max_seq_length)


def write_submission(path, labels, predictions):
    """Writes GLUE-server predictions: a header `index\\tprediction`, then one line per test example.

    Args:
        path: the file (see `GLUE_SUBMISSION_FILES` for the names the server expects).
        labels: a GLUE task name, or the label names in class-id order (None: a regression).
        predictions: class ids [N] (written as label names) or, for STS-B and other regressions, float
            scores [N].
    """
    labels = get_labels(labels) if isinstance(labels, str) else labels
    predictions = np.asarray(predictions)
    with file_io.atomic_open(path) as f:
        f.write("index\tprediction\n")
        for i, value in enumerate(predictions.reshape(-1)):
            text = f"{float(value):.3f}" if labels is None else labels[int(value)]
            f.write(f"{i}\t{text}\n")


def submission_file_name(task_name, split):
    """The GLUE server's file name for a test split, e.g. ("mnli", "test_mismatched") -> "MNLI-mm.tsv"."""
    return GLUE_SUBMISSION_FILES[(canonical_task(task_name), split)]
