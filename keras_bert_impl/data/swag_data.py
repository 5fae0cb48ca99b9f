"""SWAG data (Zellers et al., 2018): the reader and multiple-choice featurization.

The original files `train.csv`, `val.csv` (labelled) and `test.csv` (no `label` column) are comma-separated
with a header naming the columns

    video-id, fold-ind, startphrase, sent1, sent2, gold-source, ending0, ending1, ending2, ending3, label

(the released files also have a leading unnamed index column; columns are found by their header names,
so both layouts read). Hugging Face's `swag` datasets ("regular") have the same columns, and their JSON
lines, JSON, CSV and parquet exports read the same way (`dataset_files.read_records`); only sent1, sent2,
ending0..ending3 and (labelled data) label are needed, and a label of -1 (datasets' test rows) is none.
Each example's choices are packed as in BERT's SWAG setup (Devlin et al., §4.4):
`[CLS] sent1 [SEP] sent2 + " " + ending_i [SEP]`, truncated by popping from the longer segment.

Errors (a missing file or column, a row with the wrong number of fields, a label that is not 0-3) are
`UserInputError`s naming the file and line.
"""

import dataclasses
import os
from typing import List, Optional

import numpy as np

from keras_bert_impl.data.dataset_files import field, read_records, require_examples, text_field
from keras_bert_impl.tokenizers import packing
from keras_bert_impl.utils.errors import UserInputError

NUM_CHOICES = 4
_REQUIRED_COLUMNS = ("sent1", "sent2", *(f"ending{i}" for i in range(NUM_CHOICES)))


class SwagDataError(UserInputError):
    """A missing or malformed SWAG file: the message names the file and the line."""


@dataclasses.dataclass(frozen=True)
class SwagExample:
    """One SWAG example.

    Args:
        swag_id: the example's id ("{video-id}-{line number}", or "{file name}-{index}" without video-id).
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
    """Reads a SWAG file: the original CSV, or a JSON lines, JSON, CSV or parquet file with the columns
    sent1, sent2, ending0..ending3 and label.

    Args:
        path: the file (e.g. train.csv, val.csv, test.csv, validation.jsonl).
        labelled: whether rows must have a label; default: whether the first record has a `label` column.

    Returns:
        A list of `SwagExample`.

    Raises:
        SwagDataError (a UserInputError): the file is missing or holds no example, a required column is
            missing, an ending is empty, or a label is not an integer in [0, 3]; naming file and line. Malformed files raise
            `dataset_files.read_records`' UserInputError.

    Examples:

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "val.jsonl")
    >>> with open(path, "w") as f:
    ...     _ = f.write('{"sent1": "He opens the door.", "sent2": "He", "ending0": "walks in.", '
    ...                 '"ending1": "flies.", "ending2": "sings.", "ending3": "sleeps.", "label": 0}\\n')
    >>> (example,) = read_swag_file(path)
    >>> example.context, example.endings[0], example.label
    ('He opens the door.', 'walks in.', 0)
    """
    if not os.path.isfile(path):
        raise SwagDataError(f"{path}: no such file.")
    records = require_examples(read_records(path), path)
    first_where, first = records[0]
    if labelled is None:
        labelled = "label" in first
    required = _REQUIRED_COLUMNS + (("label",) if labelled else ())
    missing = [name for name in required if name not in first]
    if missing:
        raise SwagDataError(f"{first_where}: no column(s) {missing}; found {sorted(first)}.")
    name = os.path.splitext(os.path.basename(path))[0]
    examples = []
    for i, (where, record) in enumerate(records):
        label = _label(field(record, "label", where), where) if labelled else None
        video_id = record.get("video-id")
        examples.append(
            SwagExample(
                swag_id=f"{video_id}-{where.rsplit(':', 1)[1]}" if video_id else f"{name}-{i}",
                context=_text(record, "sent1", where),
                start_ending=_text(record, "sent2", where),
                endings=[_ending(record, c, where) for c in range(NUM_CHOICES)],
                label=label,
            )
        )
    return examples


def _text(record, column, where):
    return text_field(record, column, where, error=SwagDataError)


def _ending(record, choice, where):
    """The text of ending `choice`; a SwagDataError for an empty one (the model would score a bare context)."""
    text = _text(record, f"ending{choice}", where)
    if not text.strip():
        raise SwagDataError(f"{where}: ending{choice} is empty; expected the text of choice {choice}.")
    return text


def _label(value, where):
    """The label as an int in [0, NUM_CHOICES) (an int, or its digits in a CSV); a SwagDataError otherwise."""
    raw = value.strip() if isinstance(value, str) else value
    label = None
    if isinstance(raw, (int, np.integer)) and not isinstance(raw, bool):
        label = int(raw)
    elif isinstance(raw, str) and raw.lstrip("-").isdigit():
        label = int(raw)
    if label is None or not 0 <= label < NUM_CHOICES:
        raise SwagDataError(f"{where}: label {raw!r} is not one of 0..{NUM_CHOICES - 1}.")
    return label


def encode_swag_examples(tokenizer, examples, max_seq_length):
    """Packs every choice as `[CLS] context [SEP] start_ending ending_i [SEP]` (`pack_choices`), unpadded.

    Returns:
        dict {"token_ids", "segment_ids", "padding_mask"} -> list of N lists of 4 int32 arrays (one per
        choice, each of its own length), the input of `keras_bert_impl.data.batching`.
    """
    return pack_choices(tokenizer, [e.context for e in examples],
                        [[f"{e.start_ending} {ending}" for ending in e.endings] for e in examples], max_seq_length)


def pack_choices(tokenizer, contexts, endings, max_seq_length):
    """Packs every choice of every example as `[CLS] context [SEP] ending [SEP]` (`tokenizers.packing`, through
    `BertTokenizer.__call__`), unpadded.

    Args:
        tokenizer: a `BertTokenizer`.
        contexts: N str.
        endings: N lists of C str (the same C for every example).
        max_seq_length: the packed length of a choice.

    Returns:
        dict {"token_ids", "segment_ids", "padding_mask"} -> list of N lists of C int32 arrays.
    """
    num_choices = len(endings[0]) if endings else 0
    flat = packing.pack_unpadded(tokenizer, [c for c, choices in zip(contexts, endings) for _ in choices],
                                 [e for choices in endings for e in choices], max_seq_length)
    return {key: [rows[i : i + num_choices] for i in range(0, len(rows), num_choices)] for key, rows in flat.items()}


def swag_labels(examples):
    """The right choice of every labelled example, int32 [N]."""
    return np.asarray([e.label for e in examples], dtype=np.int32)
