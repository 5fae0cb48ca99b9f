"""CLUENER2020 files: Chinese NER as JSON lines of texts and entity spans, read as one word a character and
written back with the predicted spans.

A record is `{"text": "...", "label": {TYPE: {ENTITY TEXT: [[start, end], ...]}}}` with character offsets,
`end` inclusive (CLUENER's train.json and dev.json); a record without "label" (CLUENER's test.json, which
has "id" and "text") is a text to predict. A records file (JSON lines, JSON; `data.dataset_files`) whose
first record has a "text" field and no tokens column is a CLUENER file (`is_cluener_record`).

Reading (`cluener_words_and_tags`): every character of the text is a word (spaces too), tagged in BIO from
the spans; an entity whose text is not the text's characters at its offsets, offsets outside the text or
ending before they start, or
two entities sharing a character are errors naming the record. Writing (`write_cluener_predictions`): each
input record with its "label" replaced by the predicted spans, in the same layout (types and entities in
order of appearance), one JSON object a line.

Examples:

>>> record = {"text": "周杰在广州。", "label": {"name": {"周杰": [[0, 1]]}, "address": {"广州": [[3, 4]]}}}
>>> words, tags = cluener_words_and_tags(record, "train.json:1")
>>> words, tags
(['周', '杰', '在', '广', '州', '。'], ['B-name', 'I-name', 'O', 'B-address', 'I-address', 'O'])
>>> cluener_record(record, tags) == record
True
"""

import json

from keras_bert_impl.data.tag_schemes import spans_to_tags, tags_to_spans
from keras_bert_impl.utils.errors import UserInputError
from keras_bert_impl.utils.file_io import atomic_open

TEXT_FIELD = "text"
LABEL_FIELD = "label"


def is_cluener_record(record, tokens_column="tokens"):
    """Whether a record is CLUENER's: a string "text" field and no `tokens_column` (a word-list record)."""
    return isinstance(record.get(TEXT_FIELD), str) and tokens_column not in record


def is_labelled(record):
    """Whether a CLUENER record has its entities ("label"); CLUENER's test.json has none."""
    return LABEL_FIELD in record


def cluener_words_and_tags(record, where):
    """(words, BIO tags) of a CLUENER record: one word a character of its text, tagged from its spans ("O"
    everywhere for a record without "label").

    Raises:
        UserInputError: naming `where` (`path:line`): "label" is not {type: {entity: [[start, end], ...]}},
            a span ends before it starts or lies outside the text, its characters are not the entity's text, or
            two spans overlap.
    """
    text = record[TEXT_FIELD]
    words = list(text)
    spans = []
    label = record.get(LABEL_FIELD) or {}
    expected = 'expected {"TYPE": {"ENTITY": [[start, end], ...]}} with end inclusive'
    if not isinstance(label, dict):
        raise UserInputError(f"{where}: field 'label' holds {label!r}; {expected}.")
    for type_, entities in label.items():
        if not isinstance(entities, dict):
            raise UserInputError(f"{where}: label {type_!r} holds {entities!r}; {expected}.")
        for entity, offsets in entities.items():
            if not isinstance(offsets, list):
                raise UserInputError(f"{where}: label {type_!r} entity {entity!r} holds {offsets!r}; {expected}.")
            for pair in offsets:
                if not (isinstance(pair, list) and len(pair) == 2 and all(
                        isinstance(i, int) and not isinstance(i, bool) for i in pair)):
                    raise UserInputError(f"{where}: label {type_!r} entity {entity!r}: {pair!r} is not [start, end].")
                start, end = pair
                if end < start:
                    raise UserInputError(f"{where}: label {type_!r} entity {entity!r}: [{start}, {end}] ends before "
                                         f"it starts; {expected}, start <= end.")
                if not 0 <= start <= end < len(text):
                    raise UserInputError(f"{where}: label {type_!r} entity {entity!r}: [{start}, {end}] is outside "
                                         f"the text of {len(text)} characters.")
                if text[start : end + 1] != entity:
                    raise UserInputError(f"{where}: label {type_!r}: the characters [{start}, {end}] are "
                                         f"{text[start : end + 1]!r}, not the entity {entity!r}.")
                spans.append((type_, start, end))
    spans.sort(key=lambda span: span[1])
    for previous, span in zip(spans, spans[1:]):
        if span[1] <= previous[2]:
            raise UserInputError(f"{where}: the entities {text[previous[1] : previous[2] + 1]!r} "
                                 f"[{previous[1]}, {previous[2]}] and {text[span[1] : span[2] + 1]!r} "
                                 f"[{span[1]}, {span[2]}] overlap; one tag a character cannot hold both.")
    return words, spans_to_tags(spans, len(words), "bio")


def cluener_label(text, tags):
    """CLUENER's "label" of the entities of `tags` (one a character of `text`, any scheme):
    {type: {entity text: [[start, end], ...]}} in order of appearance."""
    label = {}
    for type_, start, end in tags_to_spans(tags):
        label.setdefault(type_, {}).setdefault(text[start : end + 1], []).append([start, end])
    return label


def cluener_record(record, tags):
    """The record with its "label" replaced by the entities of `tags` (its other fields kept, in order)."""
    return {**{key: value for key, value in record.items() if key != LABEL_FIELD},
            LABEL_FIELD: cluener_label(record[TEXT_FIELD], tags)}


def write_cluener_predictions(path, records, predicted_tags):
    """Writes each record with the predicted entities as its "label" (`cluener_record`), one JSON object a
    line (non-ASCII characters as they are), atomically (`file_io.atomic_open`)."""
    with atomic_open(path) as f:
        for record, tags in zip(records, predicted_tags):
            f.write(json.dumps(cluener_record(record, tags), ensure_ascii=False) + "\n")
