"""The files of sentence-embedding training and evaluation: texts in columns, scored pairs.

A training file (JSON lines, JSON, CSV/TSV with a header, parquet: `data.dataset_files`) holds, per loss:

    mnrl     anchor, positive [, negative]    in-batch negatives (MultipleNegativesRankingLoss); a file
                                              with a `negative` column gives it for every record
    cosent   sentence1, sentence2, score      CoSENT on scored pairs (any finite scores; higher: more similar)
    simcse   text                             unsupervised SimCSE: each text twice through dropout

A validation file holds scored pairs (sentence1, sentence2, score), as STS-B: the cosine similarity of the
two embeddings is scored by its Spearman and Pearson correlation with the scores.

Every text must be a non-empty string and every score a finite number; a record that is not is refused in
one line naming the file, the line and the column.
"""

import math

from keras_bert_impl.data import dataset_files
from keras_bert_impl.utils.errors import UserInputError

# loss -> (its required columns, its optional columns), in the order the model embeds them.
LOSS_COLUMNS = {
    "mnrl": (("anchor", "positive"), ("negative",)),
    "cosent": (("sentence1", "sentence2"), ()),
    "simcse": (("text",), ()),
}
LOSSES = tuple(LOSS_COLUMNS)
SCORED_PAIR_COLUMNS = ("sentence1", "sentence2")
SCORE_COLUMN = "score"


def score_value(record, where):
    """The record's `score`: a finite number (a CSV cell's digits are read as one), or a `UserInputError`
    naming `where` and the column."""
    value = dataset_files.field(record, SCORE_COLUMN, where)
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            pass
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(float(value)):
        raise UserInputError(f"{where}: column {SCORE_COLUMN!r} is {value!r}; expected a finite number.")
    return float(value)


def _texts(record, where, columns):
    return [dataset_files.require_text(dataset_files.text_field(record, column, where), where, f"column {column!r}")
            for column in columns]


def read_training_file(path, loss):
    """The training examples of `path` for `loss` ("mnrl", "cosent" or "simcse").

    Returns:
        (columns, scores): columns a list of K lists of N str (the texts the loss reads, in its order: anchor,
        positive[, negative]; sentence1, sentence2; text); scores a list of N floats for cosent, else None.

    Raises:
        UserInputError: no such file or no records, a missing column (also a `negative` missing from some
            records of a file that has one), an empty text or a score that is not a number: naming the file,
            the line and the column.

    Examples:

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "train.jsonl")
    >>> with open(path, "w") as f:
    ...     _ = f.write('{"anchor": "a cat", "positive": "a kitten"}\\n{"anchor": "rain", "positive": "wet"}\\n')
    >>> read_training_file(path, "mnrl")
    ([['a cat', 'rain'], ['a kitten', 'wet']], None)
    >>> with open(path, "w") as f:
    ...     _ = f.write('{"sentence1": "a", "sentence2": "b", "score": "high"}\\n')
    >>> read_training_file(path, "cosent")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    keras_bert_impl.utils.errors.UserInputError: ...train.jsonl:1: column 'score' is 'high'; expected a finite number.
    """
    if loss not in LOSS_COLUMNS:
        raise UserInputError(f"--loss={loss!r}; expected one of {', '.join(LOSSES)}.")
    required, optional = LOSS_COLUMNS[loss]
    records = dataset_files.require_examples(dataset_files.read_records(path), path)
    columns = list(required) + [c for c in optional if c in records[0][1]]
    texts, scores = [], []
    for where, record in records:
        texts.append(_texts(record, where, columns))
        if loss == "cosent":
            scores.append(score_value(record, where))
    return [list(column) for column in zip(*texts)], scores if loss == "cosent" else None


def read_scored_pairs(path):
    """The scored pairs of a validation file: (sentences1, sentences2, scores), lists of N str, N str and N
    floats.

    Raises:
        UserInputError: as `read_training_file`, naming the file, the line and the column.
    """
    records = dataset_files.require_examples(dataset_files.read_records(path), path)
    pairs = [(*_texts(record, where, SCORED_PAIR_COLUMNS), score_value(record, where)) for where, record in records]
    first, second, scores = (list(column) for column in zip(*pairs))
    if len(set(scores)) < 2:
        raise UserInputError(f"{path}: every pair has the score {scores[0]}; a correlation needs at least two scores.")
    return first, second, scores
