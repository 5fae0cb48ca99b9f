"""Named-entity data (CoNLL-2003 and others): reading the files, label lists, scoring and writing.

File formats (`read_ner_file`):

* CoNLL-2003 text (any file that is not JSON lines, JSON, CSV or parquet; a .tsv whose header names the
  tokens column is read as records): one token a line with whitespace-separated columns,
  `token POS chunk NER` (any number of columns >= 2: the FIRST is the word, the LAST its tag); a blank
  line ends a sentence; a line whose first column is `-DOCSTART-` starts a new document.
* The datasets ecosystem's records (JSON lines, JSON, CSV/TSV, parquet; `data.dataset_files`): one
  sentence a record, a list of words in the tokens column ("tokens") and a list of tags in the tags
  column ("ner_tags"). Tags are strings, or integer ids (`datasets`' ClassLabel) that index a list of
  label names (`read_label_file`). CSV cells hold the lists as text (`dataset_files.cell_value`). All records are one
  document; a record whose first word is `-DOCSTART-` starts a new one.

* CLUENER2020 JSON lines (`data.cluener_data`: a records file whose first record has a "text" field and
  no tokens column): one sentence a record, one word a character, BIO tags from its entity spans.

Tags are "O" or "P-TYPE" for any TYPE (CoNLL's PER, GermEval's LOCderiv, ...) with P one of the letters of
the BIO, IOB1, BIOES and BMES schemes (`data.tag_schemes`): B, I, E, S, M.

Label lists: with a label file (`read_label_file`, e.g. GermEval's labels.txt), `label_list_from_names`:
the file's labels in the file's order, a bare TYPE line standing for B-TYPE and I-TYPE, completed with
the B-/I- tag a listed type lacks and with "O" first when the file lacks it. Without one,
`build_label_list` over every split read: "O", then B-X, I-X for every type X, sorted.

Tagging schemes (`data.tag_schemes`): the original CoNLL-2003 files use IOB1 (an entity starts with `I-X`;
`B-X` only separates two adjacent entities of the same type), most later copies BIO (every entity starts
with `B-X`), Chinese NER sets often BIOES or BMES (E- ends an entity, S- is a one-token entity, BMES's M-
is I-). Training always uses BIO labels (`to_bio`: `iob1_to_bio` is the identity on valid BIO; BIOES and
BMES through their entity spans). Predictions are converted back to the file's scheme (`from_bio`) before
they are scored as entity spans (with `keras_bert_impl.metrics.ner_metrics`) and written.

The sentences become the model's windows in `conll_features` (`convert_sentences_to_features`), whose
predictions come back as word tags that `evaluate_word_tags` scores and `write_predictions` writes.
"""

import dataclasses
import os

from keras_bert_impl.data import dataset_files
from keras_bert_impl.data.cluener_data import cluener_words_and_tags, is_cluener_record, is_labelled
from keras_bert_impl.data.tag_schemes import (  # noqa: F401 (the tagging schemes, read with the files)
    TAGGING_SCHEMES,
    bio_to_iob1,
    conlleval_tags,
    detect_tagging_scheme,
    iob1_to_bio,
    is_tag,
    resolve_tagging_scheme,
    tag_type,
    to_bio,
)
from keras_bert_impl.metrics.ner_metrics import ner_scores
from keras_bert_impl.utils.errors import UserInputError
from keras_bert_impl.utils.file_io import atomic_open, open_text

DOCSTART = "-DOCSTART-"
_EXPECTED_TAGS = "expected 'O' or 'P-TYPE' with P one of B, I, E, S, M (BIO, IOB1, BIOES, BMES)"


# ---------------------------------------------------------------------------------------------- reading
@dataclasses.dataclass
class ConllSentence:
    """One sentence of a CoNLL file.

    Attributes:
        words: the tokens (first column).
        labels: their tags (last column), as written in the file.
        document: index of the document (counted from 0; -DOCSTART- lines start a new one).
        lines: where every word is in the file, for error messages: its 1-based line number (CoNLL text,
            JSON lines, CSV) or its record's index as "[i]" (JSON, parquet).
        path: the file it comes from.
        starts_document: True when a -DOCSTART- line precedes it (to write predictions back alike).
        record: the CLUENER record it was read from (`data.cluener_data`; its predictions are written back
            into it), else None.
    """

    words: list
    labels: list
    document: int
    lines: list
    path: str = ""
    starts_document: bool = False
    record: dict = None

    @property
    def labelled(self):
        """Whether the sentence has gold tags (all do but the records of a CLUENER test file)."""
        return self.record is None or is_labelled(self.record)

    def where(self, i):
        """`"path:line"` of word `i`."""
        return f"{self.path}:{self.lines[i]}"


def _check_tag(tag, path, line_number, line):
    if not is_tag(tag):
        raise UserInputError(
            f"{path}:{line_number}: malformed tag {tag!r} in line {line!r}: {_EXPECTED_TAGS}."
        )


def read_conll_file(path):
    """Reads a CoNLL-2003 file into a list of `ConllSentence`.

    Args:
        path: the file.

    Returns:
        list of `ConllSentence` (empty sentences are skipped).

    Raises:
        UserInputError: naming `file:line` for a line with fewer than two columns or a malformed tag, or
            the missing file.

    Examples:

    >>> import tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "train.txt")
    >>> with open(path, "w") as f:
    ...     _ = f.write("-DOCSTART- -X- O O\\n\\nPeter NNP I-NP I-PER\\nBlackburn NNP I-NP I-PER\\nsaid VBD I-VP O\\n")
    >>> sentences = read_conll_file(path)
    >>> sentences[0].words[:3], sentences[0].labels[:3]
    (['Peter', 'Blackburn', 'said'], ['I-PER', 'I-PER', 'O'])
    """
    path = os.fspath(path)
    sentences = []
    document = -1
    pending_docstart = False
    words, labels, lines = [], [], []

    def flush():
        nonlocal pending_docstart
        if words:
            sentences.append(
                ConllSentence(list(words), list(labels), max(document, 0), list(lines), path, pending_docstart)
            )
            pending_docstart = False
        words.clear()
        labels.clear()
        lines.clear()

    if not os.path.isfile(path):
        raise UserInputError(f"{path}: no such file.")
    with open_text(path) as f:
        for line_number, raw in enumerate(f, start=1):
            line = raw.rstrip("\n").rstrip("\r")
            columns = line.split()
            if not columns:
                flush()
                continue
            if columns[0] == DOCSTART:
                flush()
                document += 1
                pending_docstart = True
                continue
            if len(columns) < 2:
                raise UserInputError(
                    f"{path}:{line_number}: malformed line {line!r}: expected 'token ... tag' "
                    "(at least two whitespace-separated columns)."
                )
            _check_tag(columns[-1], path, line_number, line)
            if document < 0:
                document = 0
            words.append(columns[0])
            labels.append(columns[-1])
            lines.append(line_number)
    flush()
    return sentences


def read_ner_file(path, tokens_column="tokens", tags_column="ner_tags", label_names=None):
    """The sentences of a NER file in any format of the module docstring: records (`read_ner_records`)
    for JSON lines, JSON, CSV or parquet and for a .tsv whose header names `tokens_column`, CoNLL text
    (`read_conll_file`) for anything else. A file without a sentence raises a `UserInputError` naming it.

    Examples:

    >>> import tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "train.jsonl")
    >>> with open(path, "w") as f:
    ...     _ = f.write('{"tokens": ["EU", "rejects"], "ner_tags": ["B-ORG", "O"]}\\n')
    >>> [(s.words, s.labels, s.where(0)) for s in read_ner_file(path)] == [
    ...     (["EU", "rejects"], ["B-ORG", "O"], path + ":1")]
    True
    """
    path = os.fspath(path)
    kind = dataset_files.record_format(path)
    if kind == "tsv" and os.path.isfile(path):
        with open_text(path) as f:
            if tokens_column not in f.readline().rstrip("\r\n").split("\t"):
                kind = None  # a CoNLL file named .tsv
    if kind is None:
        return dataset_files.require_examples(read_conll_file(path), path)
    return dataset_files.require_examples(read_ner_records(path, tokens_column, tags_column, label_names), path)


def read_ner_records(path, tokens_column="tokens", tags_column="ner_tags", label_names=None):
    """Reads the records of a JSON lines, JSON, CSV/TSV or parquet file into `ConllSentence`s.

    Args:
        path: the file (`data.dataset_files.read_records`).
        tokens_column: the column holding each sentence's list of words.
        tags_column: the column holding its list of tags: strings, or integer ids into `label_names`.
        label_names: the names of integer tags (`read_label_file`), or None.

    A CLUENER file (its first record has a "text" field and no `tokens_column`, `cluener_data`) gives one
    sentence a record: a word a character, BIO tags from its spans, the record kept (`ConllSentence.record`).

    Returns:
        list of `ConllSentence` (records without words are skipped), all in document 0 unless a record
        whose first word is `-DOCSTART-` starts the next document.

    Raises:
        UserInputError: naming `path:line` (or `path:[i]`) for a missing column, a value that is not a list,
            lists of different lengths, a malformed tag, or an integer tag without (or outside)
            `label_names`.

    Examples:

    >>> import tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "train.csv")
    >>> with open(path, "w") as f:
    ...     _ = f.write("tokens,ner_tags\\n\\"['EU' 'rejects']\\",[3 0]\\n")
    >>> read_ner_records(path, label_names=["O", "B-PER", "I-PER", "B-ORG", "I-ORG"])[0].labels
    ['B-ORG', 'O']
    """
    records = dataset_files.read_records(path)
    if records and is_cluener_record(records[0][1], tokens_column):
        return [_cluener_sentence(where, record, path) for where, record in records if record.get("text")]
    sentences = []
    document, starts_document = -1, False  # as read_conll_file: -DOCSTART- records count the documents
    for where, record in records:
        line = where[len(path) + 1 :]
        words = _list_cell(record, tokens_column, where)
        tags = _list_cell(record, tags_column, where)
        if len(words) != len(tags):
            raise UserInputError(f"{where}: {len(words)} words in column {tokens_column!r} but {len(tags)} tags "
                                 f"in column {tags_column!r}; expected one tag per word.")
        if words and words[0] == DOCSTART:
            document += 1
            starts_document = True
            continue
        if not words:
            continue
        document = max(document, 0)
        for i, word in enumerate(words):
            if not isinstance(word, str):
                raise UserInputError(f"{where}: {tokens_column}[{i}] is {word!r}; expected a string (a word).")
        labels = [_tag_name(tag, label_names, where, f"{tags_column}[{i}]") for i, tag in enumerate(tags)]
        sentences.append(ConllSentence(list(words), labels, document, [line] * len(words), path, starts_document))
        starts_document = False
    return sentences


def _cluener_sentence(where, record, path):
    if not isinstance(record.get("text"), str):
        raise UserInputError(f"{where}: field 'text' holds {record.get('text')!r}; expected a string (CLUENER: "
                             '{"text": ..., "label": {TYPE: {ENTITY: [[start, end]]}}}).')
    words, tags = cluener_words_and_tags(record, where)
    return ConllSentence(words, tags, 0, [where[len(path) + 1 :]] * len(words), path, record=record)


def _list_cell(record, column, where):
    value = dataset_files.cell_value(dataset_files.field(record, column, where), where, column)
    if not isinstance(value, (list, tuple)):
        raise UserInputError(f"{where}: column {column!r} holds {value!r}; expected a list (one entry per word).")
    return list(value)


def _tag_name(tag, label_names, where, name):
    """The tag string of a tag or an integer tag id."""
    if isinstance(tag, int) and not isinstance(tag, bool):
        if label_names is None:
            raise UserInputError(f"{where}: {name} is the integer {tag}; integer tags (label ids) need the list of "
                                 "label names: pass --labels=FILE with one label per line, in id order.")
        if not 0 <= tag < len(label_names):
            raise UserInputError(f"{where}: {name} is the label id {tag}, but the label list has "
                                 f"{len(label_names)} labels (ids 0 to {len(label_names) - 1}).")
        tag = label_names[tag]
    if not isinstance(tag, str) or not is_tag(tag):
        raise UserInputError(f"{where}: malformed tag {tag!r} in {name}: {_EXPECTED_TAGS}"
                             + ("" if label_names is None else " (or an integer label id)") + ".")
    return tag


def read_label_file(path):
    """The labels of a label file (as GermEval 2014's labels.txt): one label a line, in id order (the
    order of integer tags); blank lines are skipped.

    Raises:
        UserInputError: the file is missing, empty, or a label is repeated or holds whitespace (naming the line).

    Examples:

    >>> import tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "labels.txt")
    >>> with open(path, "w") as f:
    ...     _ = f.write("B-LOC\\nI-LOC\\nO\\n")
    >>> read_label_file(path)
    ['B-LOC', 'I-LOC', 'O']
    """
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise UserInputError(f"{path}: no such file (--labels: a file with one label per line).")
    names, seen = [], {}
    with open_text(path) as f:
        for number, raw in enumerate(f, start=1):
            label = raw.strip()
            if not label:
                continue
            if len(label.split()) > 1:
                raise UserInputError(f"{path}:{number}: {label!r} holds whitespace; expected one label per line.")
            if label in seen:
                raise UserInputError(f"{path}:{number}: label {label!r} repeats line {seen[label]}.")
            seen[label] = number
            names.append(label)
    if not names:
        raise UserInputError(f"{path}: no labels; expected one label per line.")
    return names


def label_list_from_names(names, source="the label file"):
    """The model's BIO label list from the labels of a label file (see the module docstring): the
    names in their order, a bare TYPE standing for B-TYPE and I-TYPE and a BIOES / BMES tag (E-, S-, M-)
    for B-TYPE, then the B-/I- tag a listed type lacks, and "O" first when the names lack it.

    Raises:
        UserInputError: a name with another one-letter prefix, naming `source`.

    Examples:

    >>> label_list_from_names(["B-LOC", "B-PER", "I-PER", "O"])
    ['B-LOC', 'B-PER', 'I-PER', 'O', 'I-LOC']
    >>> label_list_from_names(["PER", "LOC"])
    ['O', 'B-PER', 'I-PER', 'B-LOC', 'I-LOC']
    >>> label_list_from_names(["O", "B-PER", "M-PER", "E-PER", "S-PER"])
    ['O', 'B-PER', 'I-PER']
    """
    labels = []
    for name in names:
        if not is_tag(name) and len(name) >= 2 and name[1] == "-":
            raise UserInputError(f"{source}: label {name!r}: expected 'O', 'P-TYPE' with P one of B, I, E, S, M, "
                                 "or a bare TYPE (the BIO, IOB1, BIOES and BMES schemes).")
        if not is_tag(name):
            tags = [f"B-{name}", f"I-{name}"]
        else:
            tags = [name if name == "O" or name[0] in "BI" else f"B-{tag_type(name)}"]
        for tag in tags:
            if tag not in labels:
                labels.append(tag)
    for type_ in dict.fromkeys(tag_type(tag) for tag in list(labels) if tag != "O"):
        labels += [tag for tag in (f"B-{type_}", f"I-{type_}") if tag not in labels]
    return labels if "O" in labels else ["O"] + labels


# ------------------------------------------------------------------------------------------- labels
def build_label_list(sentences):
    """The BIO label list of sentences (those of every split read): "O", then B-X and I-X for every
    entity type X.

    Both B-X and I-X are included for each type seen (in any scheme), sorted by type.

    Examples:

    >>> build_label_list([ConllSentence(["a", "b"], ["I-PER", "I-LOC"], 0, [1, 2])])
    ['O', 'B-LOC', 'I-LOC', 'B-PER', 'I-PER']
    """
    types = sorted({tag_type(tag) for s in sentences for tag in s.labels if tag != "O"})
    labels = ["O"]
    for type_ in types:
        labels += [f"B-{type_}", f"I-{type_}"]
    return labels


def check_labels(sentences, label_list, source="the labels of the training data are"):
    """Raises `UserInputError` naming file, line, label and the allowed labels (after `source`) for a tag
    whose BIO form is not in `label_list`."""
    allowed = set(label_list)
    for sentence in sentences:
        for tag, line in zip(sentence.labels, sentence.lines):
            bio_tag = tag if tag == "O" else "B-" + tag[2:]
            if bio_tag not in allowed:
                raise UserInputError(
                    f"{sentence.path}:{line}: unknown label {tag!r}; {source} {', '.join(label_list)}."
                )


def unknown_labels(sentences, label_list):
    """The tags of `sentences` whose BIO form is not in `label_list`, sorted (they are scored, never trained).

    >>> unknown_labels([ConllSentence(["a", "b"], ["I-PER", "B-LOC"], 0, [1, 2])], ["O", "B-PER", "I-PER"])
    ['B-LOC']
    """
    allowed = set(label_list)
    return sorted({tag for s in sentences for tag in to_bio(s.labels) if tag not in allowed})


# ------------------------------------------------------------------------------- scoring and writing
def evaluate_word_tags(sentences, predicted_tags):
    """Entity-level scores (conlleval rules) of predicted word tags against the sentences' gold tags (any
    scheme: BMES's M- read as I-, `tag_schemes.conlleval_tags`)."""
    return ner_scores([conlleval_tags(s.labels) for s in sentences], [conlleval_tags(t) for t in predicted_tags])


def write_predictions(path, sentences, predicted_tags):
    """Writes `token gold pred` lines (conlleval's input), a blank line after every sentence and a
    `-DOCSTART- O O` line (and a blank line) where the source file had a -DOCSTART- line. The file appears
    under `path` only once complete (`file_io.atomic_open`)."""
    with atomic_open(path) as f:
        for sentence, tags in zip(sentences, predicted_tags):
            if sentence.starts_document:
                f.write(f"{DOCSTART} O O\n\n")
            for word, gold, pred in zip(sentence.words, sentence.labels, tags):
                f.write(f"{word} {gold} {pred}\n")
            f.write("\n")
