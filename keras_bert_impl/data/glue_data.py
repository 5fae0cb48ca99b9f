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
score that is not a number, or a label outside the task's labels raises `GlueDataError` naming the file
and line number.
"""

import csv
import dataclasses
import sys
from typing import Optional, Union

import numpy as np

from keras_bert_impl.utils import file_io

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


# (task, labelled?) -> layout.
_LAYOUTS = {
    ("cola", True): _Layout(header=False, num_columns=4, text_a=3, text_b=None, label=1),
    ("cola", False): _Layout(header=True, num_columns=2, text_a=1, text_b=None, label=None),
    ("sst2", True): _Layout(header=True, num_columns=2, text_a=0, text_b=None, label=1),
    ("sst2", False): _Layout(header=True, num_columns=2, text_a=1, text_b=None, label=None),
    ("mrpc", True): _Layout(header=True, num_columns=5, text_a=3, text_b=4, label=0),
    ("mrpc", False): _Layout(header=True, num_columns=5, text_a=3, text_b=4, label=None),
    ("qqp", True): _Layout(header=True, num_columns=6, text_a=3, text_b=4, label=5),
    ("qqp", False): _Layout(header=True, num_columns=3, text_a=1, text_b=2, label=None),
    ("stsb", True): _Layout(header=True, num_columns=10, text_a=7, text_b=8, label=9),
    ("stsb", False): _Layout(header=True, num_columns=9, text_a=7, text_b=8, label=None),
    ("mnli", True): _Layout(header=True, num_columns=None, min_columns=11, text_a=8, text_b=9, label=-1),
    ("mnli", False): _Layout(header=True, num_columns=None, min_columns=10, text_a=8, text_b=9, label=None),
    ("qnli", True): _Layout(header=True, num_columns=4, text_a=1, text_b=2, label=3),
    ("qnli", False): _Layout(header=True, num_columns=3, text_a=1, text_b=2, label=None),
    ("rte", True): _Layout(header=True, num_columns=4, text_a=1, text_b=2, label=3),
    ("rte", False): _Layout(header=True, num_columns=3, text_a=1, text_b=2, label=None),
    ("wnli", True): _Layout(header=True, num_columns=4, text_a=1, text_b=2, label=3),
    ("wnli", False): _Layout(header=True, num_columns=3, text_a=1, text_b=2, label=None),
}


class GlueDataError(ValueError):
    """A malformed GLUE file: the message names the file and the line."""


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
        raise ValueError(f"Unknown GLUE task {task_name!r}; expected one of {', '.join(GLUE_TASKS)}.")
    return key


def get_labels(task_name):
    """The task's label names in class-id order, or None for the regression task STS-B."""
    return GLUE_LABELS[canonical_task(task_name)]


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
        GlueDataError: a line has the wrong number of columns, an STS-B score is not a number, or a
            label is not one of the task's labels; the message names the file and line.
    """
    task = canonical_task(task_name)
    labelled = not split.startswith("test")
    layout = _LAYOUTS[(task, labelled)]
    allowed = GLUE_LABELS[task]
    examples = []
    for line_number, row in _read_tsv(path):
        if layout.header and line_number == 1:
            continue
        if not row:  # a blank line (e.g. at the end of the file)
            continue
        where = f"{path}:{line_number}"
        if layout.num_columns is not None and len(row) != layout.num_columns:
            raise GlueDataError(
                f"{where}: expected {layout.num_columns} tab-separated columns for {task} {split} data, "
                f"found {len(row)}."
            )
        if layout.num_columns is None and len(row) < layout.min_columns:
            raise GlueDataError(
                f"{where}: expected at least {layout.min_columns} tab-separated columns for {task} {split} "
                f"data, found {len(row)}."
            )
        label = None
        if layout.label is not None:
            raw = row[layout.label]
            if allowed is None:
                try:
                    label = float(raw)
                except ValueError:
                    raise GlueDataError(f"{where}: the {task} score {raw!r} is not a number.") from None
            elif raw not in allowed:
                raise GlueDataError(
                    f"{where}: unknown label {raw!r} for {task}; the allowed labels are {allowed}."
                )
            else:
                label = raw
        text_b = None if layout.text_b is None else row[layout.text_b]
        examples.append(InputExample(f"{split}-{line_number}", row[layout.text_a], text_b, label))
    return examples


def read_glue_examples(task_name, data_dir, split):
    """`read_glue_file` of `data_dir/{split}.tsv` (e.g. "train", "dev", "test", MNLI's "dev_matched")."""
    task = canonical_task(task_name)
    valid = ["train", *dev_splits(task), *test_splits(task)]
    if split not in valid:
        raise ValueError(f"{task} has no split {split!r}; its splits are {valid}.")
    path = file_io.join(data_dir, f"{split}.tsv")
    if not file_io.isfile(path):
        raise FileNotFoundError(f"{path}: not found ({task} expects {', '.join(s + '.tsv' for s in valid)}).")
    return read_glue_file(task, path, split)


def label_ids(task_name, examples):
    """Class ids int32 [N] (float32 scores [N] for STS-B) of labelled examples."""
    labels = get_labels(task_name)
    if labels is None:
        return np.asarray([e.label for e in examples], dtype=np.float32)
    index = {name: i for i, name in enumerate(labels)}
    return np.asarray([index[e.label] for e in examples], dtype=np.int32)


def encode_examples(tokenizer, examples, max_seq_length, chunk_size=1024):
    """Tokenizes and packs examples as `[CLS] A [SEP] (B [SEP])`, truncated as the original, unpadded.

    Args:
        tokenizer: a `BertTokenizer`.
        examples: `InputExample`s (all with or all without `text_b`).
        max_seq_length: length of the longest packed sequence.
        chunk_size: examples tokenized per call (bounds memory on large tasks).

    Returns:
        dict {"token_ids", "segment_ids", "padding_mask"} -> list of N int32 arrays of each example's own
        length (the input of `keras_bert_impl.data.batching`).
    """
    features = {"token_ids": [], "segment_ids": [], "padding_mask": []}
    for start in range(0, len(examples), chunk_size):
        chunk = examples[start : start + chunk_size]
        has_b = [e.text_b is not None for e in chunk]
        if any(has_b) and not all(has_b):
            raise ValueError("examples mix single sentences and pairs.")
        pairs = [e.text_b for e in chunk] if all(has_b) else None
        batch = tokenizer([e.text_a for e in chunk], pairs, max_length=max_seq_length, padding="longest")
        lengths = batch["padding_mask"].sum(axis=1)
        for key in features:
            features[key].extend(row[:n].copy() for row, n in zip(batch[key], lengths))
    return features


def write_submission(path, task_name, predictions):
    """Writes GLUE-server predictions: a header `index\\tprediction`, then one line per test example.

    Args:
        path: the file (see `GLUE_SUBMISSION_FILES` for the names the server expects).
        task_name: the task.
        predictions: class ids [N] (written as label names) or, for STS-B, float scores [N].
    """
    labels = get_labels(task_name)
    predictions = np.asarray(predictions)
    with file_io.atomic_open(path) as f:
        f.write("index\tprediction\n")
        for i, value in enumerate(predictions.reshape(-1)):
            text = f"{float(value):.3f}" if labels is None else labels[int(value)]
            f.write(f"{i}\t{text}\n")


def submission_file_name(task_name, split):
    """The GLUE server's file name for a test split, e.g. ("mnli", "test_mismatched") -> "MNLI-mm.tsv"."""
    return GLUE_SUBMISSION_FILES[(canonical_task(task_name), split)]
