"""SWAG data (Zellers et al., 2018): the CSV reader and multiple-choice featurization.

Files: `train.csv`, `val.csv` (labelled) and `test.csv` (no `label` column), comma-separated with a
header naming the columns

    video-id, fold-ind, startphrase, sent1, sent2, gold-source, ending0, ending1, ending2, ending3, label

(the released files also have a leading unnamed index column; columns are found by their header names,
so both layouts read). Each example's choices are packed as in BERT's SWAG setup (Devlin et al., §4.4):
`[CLS] sent1 [SEP] sent2 + " " + ending_i [SEP]`, truncated by popping from the longer segment.

Errors (a missing column, a row with the wrong number of fields, a label that is not 0-3) name the file
and line.
"""

import csv
import dataclasses
import sys
from typing import List, Optional

import numpy as np

NUM_CHOICES = 4
_REQUIRED_COLUMNS = ("video-id", "sent1", "sent2", *(f"ending{i}" for i in range(NUM_CHOICES)))


class SwagDataError(ValueError):
    """A malformed SWAG file: the message names the file and the line."""


@dataclasses.dataclass(frozen=True)
class SwagExample:
    """One SWAG example.

    Args:
        swag_id: the example's id ("{video-id}-{line number}").
        context: `sent1`, the first segment of every choice.
        start_ending: `sent2`, the beginning shared by the four endings.
        endings: the four endings.
        label: the index of the right ending, or None (test data).
    """

    swag_id: str
    context: str
    start_ending: str
    endings: List[str]
    label: Optional[int]


def read_swag_file(path, labelled=None):
    """Reads a SWAG CSV file.

    Args:
        path: train.csv, val.csv or test.csv.
        labelled: whether rows must have a label; default: whether the header has a `label` column.

    Returns:
        A list of `SwagExample`.

    Raises:
        SwagDataError: a required column is missing from the header, a row has a different number of
            fields than the header, or a label is not an integer in [0, 3]; naming file and line.
    """
    csv.field_size_limit(min(sys.maxsize, 2**31 - 1))
    examples = []
    with open(path, encoding="utf-8", newline="") as f:
        reader = csv.reader(f)
        header = next(reader, None)
        if header is None:
            raise SwagDataError(f"{path}: empty file; expected a header line.")
        columns = {name.strip(): i for i, name in enumerate(header)}
        if labelled is None:
            labelled = "label" in columns
        required = _REQUIRED_COLUMNS + (("label",) if labelled else ())
        missing = [name for name in required if name not in columns]
        if missing:
            raise SwagDataError(f"{path}:1: the header lacks the column(s) {missing}; found {header}.")
        for row in reader:
            line = reader.line_num
            if not row:
                continue
            if len(row) != len(header):
                raise SwagDataError(f"{path}:{line}: expected {len(header)} comma-separated fields, found {len(row)}.")
            label = None
            if labelled:
                raw = row[columns["label"]].strip()
                try:
                    label = int(raw)
                except ValueError:
                    label = None
                if label is None or not 0 <= label < NUM_CHOICES:
                    raise SwagDataError(f"{path}:{line}: label {raw!r} is not one of 0..{NUM_CHOICES - 1}.")
            examples.append(
                SwagExample(
                    swag_id=f"{row[columns['video-id']]}-{line}",
                    context=row[columns["sent1"]],
                    start_ending=row[columns["sent2"]],
                    endings=[row[columns[f"ending{i}"]] for i in range(NUM_CHOICES)],
                    label=label,
                )
            )
    return examples


def encode_swag_examples(tokenizer, examples, max_seq_length):
    """Packs every choice as `[CLS] context [SEP] start_ending ending_i [SEP]`, unpadded.

    Returns:
        dict {"token_ids", "segment_ids", "padding_mask"} -> list of N lists of 4 int32 arrays (one per
        choice, each of its own length), the input of `keras_bert_impl.data.batching`.
    """
    contexts = [e.context for e in examples for _ in range(NUM_CHOICES)]
    endings = [f"{e.start_ending} {ending}" for e in examples for ending in e.endings]
    features = {"token_ids": [], "segment_ids": [], "padding_mask": []}
    chunk = 1024 * NUM_CHOICES
    flat = {key: [] for key in features}
    for start in range(0, len(contexts), chunk):
        batch = tokenizer(contexts[start : start + chunk], endings[start : start + chunk], max_length=max_seq_length)
        lengths = batch["padding_mask"].sum(axis=1)
        for key in flat:
            flat[key].extend(row[:n].copy() for row, n in zip(batch[key], lengths))
    for key in features:
        features[key] = [flat[key][i : i + NUM_CHOICES] for i in range(0, len(flat[key]), NUM_CHOICES)]
    return features


def swag_labels(examples):
    """The right choice of every labelled example, int32 [N]."""
    return np.asarray([e.label for e in examples], dtype=np.int32)
