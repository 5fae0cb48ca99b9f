"""SQuAD v1.1 / v2.0 examples and features, built exactly as google-research/bert's run_squad.py builds them.

0. `load_squad_dataset`: the original SQuAD JSON, or the datasets ecosystem's flattened records (JSON
   lines, JSON, CSV, parquet: id, title, context, question, answers {"text", "answer_start"}) turned into
   the original's nested layout, which the reading below and the official evaluation take.
1. `read_squad_examples`: the context is split on whitespace into "doc tokens", with `char_to_word_offset`
   mapping every character to its doc token; a training answer's character span becomes a doc-token span.
   An answer whose text is not found at its `answer_start` (the original's "Could not find answer" check)
   is warned about with its question id, counted in the returned stats, and its example skipped for
   training (never mislabeled).
2. `convert_examples_to_features`: WordPiece per doc token (`tok_to_orig_index`, `orig_to_tok_index`),
   the answer narrowed to the tightest sub-token span matching the tokenized answer
   (`_improve_answer_span`), the question truncated to `max_query_length`, the document cut into
   overlapping spans of at most `max_seq_length - len(query) - 3` tokens every `doc_stride` tokens, each
   token flagged with whether this span gives it the most context (`_check_is_max_context`), and the
   feature laid out `[CLS] query [SEP] doc span [SEP]` with segment ids 0 / 1. Training targets are the
   answer's token positions in the feature, or 0 ([CLS]) when the answer is not inside the span or the
   question is impossible.
3. `features_to_arrays`: the model inputs (and targets) as numpy arrays for `model.fit` / `predict`.

Examples:

>>> import tempfile
>>> from keras_bert_impl.tokenizers.bert_tokenizer import BertTokenizer
>>> d = tempfile.mkdtemp()
>>> with open(os.path.join(d, "vocab.txt"), "w") as f:
...     _ = f.write("\\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "who", "sang", "?", "ann", "did", "."]))
>>> squad = {"version": "v2.0", "data": [{"title": "t", "paragraphs": [{"context": "Ann sang.",
...     "qas": [{"id": "q1", "question": "Who sang?", "answers": [], "is_impossible": False}]}]}]}
>>> with open(os.path.join(d, "dev.json"), "w") as f:
...     json.dump(squad, f)
>>> examples, stats = read_squad_examples(os.path.join(d, "dev.json"), is_training=False,
...                                       version_2_with_negative=True)
>>> features = convert_examples_to_features(examples, BertTokenizer(os.path.join(d, "vocab.txt")),
...                                         max_seq_length=16, doc_stride=8, max_query_length=8, is_training=False)
>>> features[0].tokens
['[CLS]', 'who', 'sang', '?', '[SEP]', 'ann', 'sang', '.', '[SEP]']
>>> x, _ = features_to_arrays(features)
>>> x["token_ids"].shape
(1, 16)
"""

import dataclasses
import json
import os
import warnings

import numpy as np

from keras_bert_impl.data import dataset_files
from keras_bert_impl.data.dataset_files import cell_value
from keras_bert_impl.utils.errors import UserInputError
from keras_bert_impl.utils.file_io import open_text

# The first unique_id of the original (features are numbered from here, in order).
FIRST_UNIQUE_ID = 1000000000


@dataclasses.dataclass
class SquadExample:
    """One question about one paragraph, with the paragraph split on whitespace.

    Attributes:
        qas_id: the question id.
        question_text: the question.
        doc_tokens: the whitespace-separated words of the context.
        context_text: the context itself.
        doc_token_char_starts: for each doc token, the index of its first character in `context_text`
            (used to give predicted answers character offsets).
        orig_answer_text: the training answer ("" when impossible or not training).
        start_position: training answer's first doc token (-1 when impossible, None when not training).
        end_position: training answer's last doc token (-1 when impossible, None when not training).
        is_impossible: the question has no answer in the context (v2.0).
    """

    qas_id: str
    question_text: str
    doc_tokens: list
    context_text: str = ""
    doc_token_char_starts: list = None
    orig_answer_text: str = ""
    start_position: int = None
    end_position: int = None
    is_impossible: bool = False


@dataclasses.dataclass
class InputFeature:
    """One `[CLS] query [SEP] doc span [SEP]` window of one example (the original's InputFeatures).

    Attributes:
        unique_id: a number unique over all features (from 1000000000, as in the original).
        example_index: the index of the example in the list of examples.
        doc_span_index: which window of the example's document this is.
        tokens: the WordPiece tokens of the window (no padding).
        token_to_orig_map: {position in `tokens`: doc token index} for the document positions.
        token_is_max_context: {position in `tokens`: whether this window gives that token the most context}.
        input_ids, input_mask, segment_ids: int lists of length max_seq_length (padded with 0).
        start_position, end_position: training targets (0 = [CLS] = no answer in this window), else None.
        is_impossible: the example is impossible (v2.0).
    """

    unique_id: int
    example_index: int
    doc_span_index: int
    tokens: list
    token_to_orig_map: dict
    token_is_max_context: dict
    input_ids: list
    input_mask: list
    segment_ids: list
    start_position: int = None
    end_position: int = None
    is_impossible: bool = False


# ------------------------------------------------------------------------------------------ reading
def _is_whitespace(c):
    """The original run_squad.py's whitespace (note U+202F, the narrow no-break space)."""
    return c == " " or c == "\t" or c == "\r" or c == "\n" or ord(c) == 0x202F


def split_context(paragraph_text):
    """Whitespace split of a context, as the original does it.

    Returns:
        (doc_tokens, char_to_word_offset, doc_token_char_starts): the words; for every character of the
        text, the index of the word it belongs to (a whitespace character maps to the previous word, -1
        before the first); for every word, the index of its first character.
    """
    doc_tokens, char_to_word_offset, doc_token_char_starts = [], [], []
    prev_is_whitespace = True
    for i, c in enumerate(paragraph_text):
        if _is_whitespace(c):
            prev_is_whitespace = True
        else:
            if prev_is_whitespace:
                doc_tokens.append(c)
                doc_token_char_starts.append(i)
            else:
                doc_tokens[-1] += c
            prev_is_whitespace = False
        char_to_word_offset.append(len(doc_tokens) - 1)
    return doc_tokens, char_to_word_offset, doc_token_char_starts


class SquadFormatError(UserInputError):
    """A SQuAD file lacks a required key or column or has a value of the wrong type."""


def _get(obj, key, source, where, expected_type=None):
    """obj[key], raising `SquadFormatError` naming the file and the JSON path when it is missing."""
    if not isinstance(obj, dict) or key not in obj:
        raise SquadFormatError(f"{source}: missing key {key!r} at {where}.")
    value = obj[key]
    if expected_type is not None and not isinstance(value, expected_type):
        raise SquadFormatError(
            f"{source}: {where}.{key} should be a {expected_type.__name__}, got {type(value).__name__}."
        )
    return value


def read_squad_examples(input_file, is_training, version_2_with_negative=False):
    """Reads a SQuAD file in any format (`load_squad_dataset`) into `SquadExample`s (the original
    `read_squad_examples`).

    Args:
        input_file: path of a SQuAD v1.1 / v2.0 JSON file, or of the datasets ecosystem's records.
        is_training: read the answers as training targets (the first answer of each answerable question).
        version_2_with_negative: read `is_impossible` (SQuAD v2.0).

    Returns:
        (examples, stats): see `squad_examples_from_json`.

    Raises:
        SquadFormatError: a required key is missing; the message names the file and the JSON path
            (and the question id when the question has one), or the record.
    """
    source = os.fspath(input_file)
    return squad_examples_from_json(load_squad_dataset(source), is_training, version_2_with_negative, source=source)


def load_squad_dataset(path):
    """The SQuAD dataset of a file, in the original nested layout (`{"data": [{"title", "paragraphs":
    [{"context", "qas": [{"id", "question", "answers": [{"text", "answer_start"}], "is_impossible"}]}]}]}`),
    which `squad_examples_from_json` and the official evaluation read.

    The file is the original SQuAD JSON (a JSON object whose "data" items have "paragraphs", or any
    JSON object that is not records), or the datasets ecosystem's flattened records
    (`data.dataset_files.read_records`: JSON lines, a JSON list or `{"data": [...]}`, CSV, parquet),
    converted by `squad_dataset_from_records`.

    Raises:
        SquadFormatError: the file is missing or not valid in its format.

    Examples:

    >>> import tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "dev.jsonl")
    >>> with open(path, "w") as f:
    ...     _ = f.write(json.dumps({"id": "q1", "title": "T", "context": "Ann sang.", "question": "Who sang?",
    ...                             "answers": {"text": ["Ann"], "answer_start": [0]}}) + "\\n")
    >>> load_squad_dataset(path)["data"][0]["paragraphs"][0]["qas"]
    [{'id': 'q1', 'question': 'Who sang?', 'answers': [{'text': 'Ann', 'answer_start': 0}], 'is_impossible': False}]
    """
    source = os.fspath(path)
    if not os.path.isfile(source):
        raise SquadFormatError(f"{source}: no such file.")
    if dataset_files.record_format(source) in (None, "json"):
        with open_text(source) as f:
            text = f.read()
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            if dataset_files.record_format(source) is None:
                raise SquadFormatError(f"{source}: not valid JSON: {e}") from None
            data = None  # JSON lines named .json
        if _is_original_squad(data) or dataset_files.record_format(source) is None:
            return data
    try:
        records = dataset_files.read_records(source)
    except UserInputError as e:
        raise SquadFormatError(str(e)) from None
    return squad_dataset_from_records(records, source)


def _is_original_squad(data):
    """Whether parsed JSON is meant as the original nested SQuAD layout: a dict whose "data" items have
    "paragraphs" (or whose "data" is empty), or a dict that is neither `{"data": [records]}` nor a dict of
    columns, so that its errors are reported as the original layout's."""
    if not isinstance(data, dict):
        return False
    items = data.get("data")
    if isinstance(items, list):
        return not items or (isinstance(items[0], dict) and "paragraphs" in items[0])
    return not (data and all(isinstance(v, list) for v in data.values()))


def squad_dataset_from_records(records, source="<records>"):
    """The nested SQuAD dataset of the datasets ecosystem's flattened records.

    Each record is one question: `id`, `question`, `context`, `title` (optional) and `answers`
    `{"text": [...], "answer_start": [...]}` (or the flattened columns `answers.text`,
    `answers.answer_start`); no answers means an impossible question (SQuAD v2.0). A CSV cell holding the
    answers is read as JSON, a Python literal or numpy's print (`dataset_files.cell_value`). Consecutive
    records of one title form an article, of one context a paragraph, as in the original files.

    Args:
        records: list of `(where, record)` (`data.dataset_files.read_records`).
        source: the file name, for the "version" entry.

    Raises:
        SquadFormatError: naming the record (`path:line`) and the column for a missing column or a value of
            the wrong type.
    """
    data = []
    for where, record in records:
        qas_id = _record_value(record, "id", where, (str, int))
        question = _record_value(record, "question", where, str)
        context = _record_value(record, "context", where, str)
        title = record.get("title") or ""
        if "answers" in record:
            answers = cell_value(record["answers"], where, "answers")
            if not isinstance(answers, dict):
                raise SquadFormatError(f"{where}: column 'answers' holds {answers!r}; expected "
                                       '{"text": [...], "answer_start": [...]}.')
            texts, starts = (_answer_list(answers, key, where) for key in ("text", "answer_start"))
        elif "answers.text" in record:
            texts, starts = (_answer_list(record, f"answers.{key}", where) for key in ("text", "answer_start"))
        else:
            raise SquadFormatError(f"{where}: no column 'answers'; the columns are {sorted(record)}.")
        if len(texts) != len(starts) or not all(isinstance(t, str) for t in texts) or not all(
                isinstance(a, int) and not isinstance(a, bool) for a in starts):
            raise SquadFormatError(f"{where}: answers {texts!r} at {starts!r}: expected as many texts (strings) as "
                                   "answer_start values (integers).")
        if not data or data[-1]["title"] != title:
            data.append({"title": title, "paragraphs": []})
        paragraphs = data[-1]["paragraphs"]
        if not paragraphs or paragraphs[-1]["context"] != context:
            paragraphs.append({"context": context, "qas": []})
        paragraphs[-1]["qas"].append({
            "id": str(qas_id), "question": question,
            "answers": [{"text": t, "answer_start": a} for t, a in zip(texts, starts)], "is_impossible": not texts,
        })
    return {"version": f"records of {source}", "data": data}


def _record_value(record, column, where, expected_type):
    try:
        value = dataset_files.field(record, column, where)
    except UserInputError as e:
        raise SquadFormatError(str(e)) from None
    if not isinstance(value, expected_type) or isinstance(value, bool):
        kind = "a string" if expected_type is str else "a string or an integer"
        raise SquadFormatError(f"{where}: column {column!r} holds {value!r}; expected {kind}.")
    return value


def _answer_list(answers, key, where):
    if key not in answers:
        raise SquadFormatError(f"{where}: the answers lack {key!r}; expected "
                               '{"text": [...], "answer_start": [...]}.')
    value = cell_value(answers[key], where, key)
    if not isinstance(value, (list, tuple)):
        raise SquadFormatError(f"{where}: answers {key!r} holds {value!r}; expected a list.")
    return list(value)


def squad_examples_from_json(data, is_training, version_2_with_negative=False, source="<json>"):
    """`read_squad_examples` on an already parsed SQuAD JSON object (the dict with "data").

    An answer whose text is not at its `answer_start` (the original's check: the doc tokens covering the
    answer's characters, joined by spaces, do not contain the whitespace-normalized answer text; or the
    offsets fall outside the context) is reported with a warning naming the question id, counted, and
    the example skipped. Only training reads answers, so only training checks them (as the original).

    Args:
        data: the parsed JSON: {"data": [{"paragraphs": [{"context", "qas": [...]}]}]}.
        is_training: read the answers as training targets: the first answer of each answerable question
            (training files have one; dev files list several, as transformers' run_qa.py trains on the first;
            the original refuses more than one).
        version_2_with_negative: read `is_impossible`, a JSON boolean (a missing `is_impossible` means False).
        source: the file name for error messages.

    Raises:
        SquadFormatError: naming the file and the question: a missing key, a value of the wrong type
            (`is_impossible` that is not true/false), or, when not training, a question id read twice.

    Returns:
        (examples, stats) with stats a dict: `num_questions` (read from the file), `num_examples`
        (returned), `num_impossible` (among the returned), `num_misaligned_answers` and
        `misaligned_qids` (skipped because the answer is not at its `answer_start`).
    """
    articles = _get(data, "data", source, "the top level", list)
    examples = []
    misaligned = []
    num_questions = 0
    first_place = {}  # question id -> where it was first read
    for a, article in enumerate(articles):
        paragraphs = _get(article, "paragraphs", source, f"data[{a}]", list)
        for p, paragraph in enumerate(paragraphs):
            where_p = f"data[{a}].paragraphs[{p}]"
            paragraph_text = _get(paragraph, "context", source, where_p, str)
            doc_tokens, char_to_word_offset, char_starts = split_context(paragraph_text)
            for q, qa in enumerate(_get(paragraph, "qas", source, where_p, list)):
                where_q = f"{where_p}.qas[{q}]"
                qas_id = _get(qa, "id", source, where_q)
                if not is_training and qas_id in first_place:
                    raise SquadFormatError(f"{source}: {where_q}: question id {qas_id!r} repeats "
                                           f"{first_place[qas_id]}; predictions are keyed by id, so ids must be "
                                           "unique.")
                first_place.setdefault(qas_id, where_q)
                where_q = f"{where_q} (question id {qas_id!r})"
                question_text = _get(qa, "question", source, where_q, str)
                num_questions += 1
                is_impossible = _is_impossible(qa, source, where_q) if version_2_with_negative else False
                start_position = end_position = None
                orig_answer_text = ""
                if is_training:
                    answers = _get(qa, "answers", source, where_q, list)
                    if not answers and not is_impossible:
                        raise SquadFormatError(
                            f"{source}: {where_q}: for training, each answerable question needs an answer; it has "
                            "none (SQuAD v2.0's impossible questions need --version_2_with_negative)."
                        )
                    if not is_impossible:
                        where_a = f"{where_q}.answers[0]"
                        orig_answer_text = _get(answers[0], "text", source, where_a, str)
                        answer_offset = _get(answers[0], "answer_start", source, where_a, int)
                        answer_end = answer_offset + len(orig_answer_text) - 1
                        reason = None
                        if not orig_answer_text.strip():
                            reason = "the answer text is empty"
                        elif answer_offset < 0 or answer_end >= len(paragraph_text):
                            reason = (
                                f"answer_start {answer_offset} + length {len(orig_answer_text)} is outside the "
                                f"context of {len(paragraph_text)} characters"
                            )
                        else:
                            start_position = char_to_word_offset[answer_offset]
                            end_position = char_to_word_offset[answer_end]
                            actual_text = " ".join(doc_tokens[max(start_position, 0) : end_position + 1])
                            cleaned_answer_text = " ".join(orig_answer_text.split())
                            if actual_text.find(cleaned_answer_text) == -1:
                                reason = f"could not find answer: {actual_text!r} vs. {cleaned_answer_text!r}"
                        if reason is not None:
                            warnings.warn(
                                f"{source}: question id {qas_id!r}: the answer is not at its answer_start "
                                f"({reason}); skipping the example.",
                                stacklevel=2,
                            )
                            misaligned.append(qas_id)
                            continue
                    else:
                        start_position = end_position = -1
                examples.append(
                    SquadExample(
                        qas_id=qas_id,
                        question_text=question_text,
                        doc_tokens=doc_tokens,
                        context_text=paragraph_text,
                        doc_token_char_starts=char_starts,
                        orig_answer_text=orig_answer_text,
                        start_position=start_position,
                        end_position=end_position,
                        is_impossible=is_impossible,
                    )
                )
    stats = {
        "num_questions": num_questions,
        "num_examples": len(examples),
        "num_impossible": sum(e.is_impossible for e in examples),
        "num_misaligned_answers": len(misaligned),
        "misaligned_qids": misaligned,
    }
    return examples, stats


def _is_impossible(qa, source, where):
    """A question's `is_impossible`: a JSON boolean (False when absent); a SquadFormatError for anything
    else, such as the string "false" (which `bool` would read as True)."""
    value = qa.get("is_impossible", False)
    if not isinstance(value, bool):
        raise SquadFormatError(f"{source}: {where}.is_impossible is {value!r}; expected a JSON boolean, "
                               "true or false.")
    return value


# ----------------------------------------------------------------------------------------- features
def _improve_answer_span(doc_tokens, input_start, input_end, tokenizer, orig_answer_text):
    """The tightest sub-token span [new_start, new_end] inside [input_start, input_end] whose tokens,
    joined by spaces, equal the tokenized answer; the input span when there is none.

    E.g. context "(1895-1943)." with answer "1895": the doc token "(1895-1943)." is the WordPiece tokens
    "( 1895 - 1943 ) ." and the answer is narrowed from all six to "1895".
    """
    tok_answer_text = " ".join(tokenizer.tokenize(orig_answer_text))
    for new_start in range(input_start, input_end + 1):
        for new_end in range(input_end, new_start - 1, -1):
            text_span = " ".join(doc_tokens[new_start : new_end + 1])
            if text_span == tok_answer_text:
                return new_start, new_end
    return input_start, input_end


def _check_is_max_context(doc_spans, cur_span_index, position):
    """Whether the span `cur_span_index` is the one giving the token at `position` the most context.

    A token's score in a span is min(left context, right context) + 0.01 * span length; the first span
    with the highest score wins (the original's rule).
    """
    best_score = None
    best_span_index = None
    for span_index, (start, length) in enumerate(doc_spans):
        end = start + length - 1
        if position < start or position > end:
            continue
        num_left_context = position - start
        num_right_context = end - position
        score = min(num_left_context, num_right_context) + 0.01 * length
        if best_score is None or score > best_score:
            best_score = score
            best_span_index = span_index
    return cur_span_index == best_span_index


def doc_spans_for(num_doc_tokens, max_tokens_for_doc, doc_stride):
    """The original's sliding windows: list of (start, length), a new window every `doc_stride` tokens
    (or sooner when a window is shorter), the last one ending at the end of the document."""
    doc_spans = []
    start_offset = 0
    while start_offset < num_doc_tokens:
        length = min(num_doc_tokens - start_offset, max_tokens_for_doc)
        doc_spans.append((start_offset, length))
        if start_offset + length == num_doc_tokens:
            break
        start_offset += min(length, doc_stride)
    return doc_spans


def convert_examples_to_features(
    examples, tokenizer, max_seq_length=384, doc_stride=128, max_query_length=64, is_training=False
):
    """Turns examples into fixed-length features (the original `convert_examples_to_features`).

    Args:
        examples: `SquadExample`s (from `read_squad_examples`).
        tokenizer: a `BertTokenizer` (its `do_lower_case` must match the checkpoint).
        max_seq_length: length of every feature, special tokens included.
        doc_stride: tokens between the starts of consecutive document windows.
        max_query_length: the question is cut to this many WordPiece tokens.
        is_training: compute `start_position` / `end_position`.

    Returns:
        list of `InputFeature`, in example order, `unique_id` from 1000000000.
    """
    cls_token, sep_token, pad_id = "[CLS]", "[SEP]", tokenizer.pad_token_id
    features = []
    unique_id = FIRST_UNIQUE_ID
    for example_index, example in enumerate(examples):
        query_tokens = tokenizer.tokenize(example.question_text)[:max_query_length]

        tok_to_orig_index = []  # WordPiece index -> doc token index
        orig_to_tok_index = []  # doc token index -> its first WordPiece index
        all_doc_tokens = []
        for i, token in enumerate(example.doc_tokens):
            orig_to_tok_index.append(len(all_doc_tokens))
            for sub_token in tokenizer.tokenize(token):
                tok_to_orig_index.append(i)
                all_doc_tokens.append(sub_token)

        tok_start_position = tok_end_position = None
        if is_training and example.is_impossible:
            tok_start_position = tok_end_position = -1
        if is_training and not example.is_impossible:
            tok_start_position = orig_to_tok_index[example.start_position]
            if example.end_position < len(example.doc_tokens) - 1:
                tok_end_position = orig_to_tok_index[example.end_position + 1] - 1
            else:
                tok_end_position = len(all_doc_tokens) - 1
            tok_start_position, tok_end_position = _improve_answer_span(
                all_doc_tokens, tok_start_position, tok_end_position, tokenizer, example.orig_answer_text
            )

        # The -3 accounts for [CLS], [SEP] and [SEP].
        max_tokens_for_doc = max_seq_length - len(query_tokens) - 3
        if max_tokens_for_doc < 1:
            raise ValueError(
                f"question {example.qas_id!r}: max_seq_length={max_seq_length} leaves no room for the document "
                f"after its {len(query_tokens)} query tokens and the 3 special tokens; lower max_query_length."
            )
        doc_spans = doc_spans_for(len(all_doc_tokens), max_tokens_for_doc, doc_stride)

        for doc_span_index, (span_start, span_length) in enumerate(doc_spans):
            tokens = [cls_token] + query_tokens + [sep_token]
            segment_ids = [0] * len(tokens)
            token_to_orig_map = {}
            token_is_max_context = {}
            for i in range(span_length):
                split_token_index = span_start + i
                token_to_orig_map[len(tokens)] = tok_to_orig_index[split_token_index]
                token_is_max_context[len(tokens)] = _check_is_max_context(doc_spans, doc_span_index, split_token_index)
                tokens.append(all_doc_tokens[split_token_index])
                segment_ids.append(1)
            tokens.append(sep_token)
            segment_ids.append(1)

            input_ids = tokenizer.convert_tokens_to_ids(tokens)
            input_mask = [1] * len(input_ids)
            padding = max_seq_length - len(input_ids)
            input_ids = input_ids + [pad_id] * padding
            input_mask = input_mask + [0] * padding
            segment_ids = segment_ids + [0] * padding

            start_position = end_position = None
            if is_training and not example.is_impossible:
                # The answer must lie entirely inside this window; otherwise the target is [CLS].
                doc_start = span_start
                doc_end = span_start + span_length - 1
                if tok_start_position >= doc_start and tok_end_position <= doc_end:
                    doc_offset = len(query_tokens) + 2
                    start_position = tok_start_position - doc_start + doc_offset
                    end_position = tok_end_position - doc_start + doc_offset
                else:
                    start_position = end_position = 0
            if is_training and example.is_impossible:
                start_position = end_position = 0

            features.append(
                InputFeature(
                    unique_id=unique_id,
                    example_index=example_index,
                    doc_span_index=doc_span_index,
                    tokens=tokens,
                    token_to_orig_map=token_to_orig_map,
                    token_is_max_context=token_is_max_context,
                    input_ids=input_ids,
                    input_mask=input_mask,
                    segment_ids=segment_ids,
                    start_position=start_position,
                    end_position=end_position,
                    is_impossible=example.is_impossible,
                )
            )
            unique_id += 1
    return features


def features_to_arrays(features):
    """The model inputs, and the training targets when the features have them, as numpy arrays.

    Returns:
        (x, y): x = {"token_ids", "segment_ids", "padding_mask"} int32 [N, max_seq_length];
        y = {"start_positions", "end_positions"} int32 [N], or None for features without targets.
    """
    x = {
        "token_ids": np.asarray([f.input_ids for f in features], "int32"),  # [N, T]
        "segment_ids": np.asarray([f.segment_ids for f in features], "int32"),  # [N, T]
        "padding_mask": np.asarray([f.input_mask for f in features], "int32"),  # [N, T]
    }
    return x, _span_targets(features)


def _span_targets(features):
    """{"start_positions", "end_positions"} int32 [N], or None when a feature has no target."""
    if not features or any(f.start_position is None for f in features):
        return None
    return {
        "start_positions": np.asarray([f.start_position for f in features], "int32"),  # [N]
        "end_positions": np.asarray([f.end_position for f in features], "int32"),  # [N]
    }


def features_to_lists(features):
    """The model inputs of every feature without its padding (variable-length int lists), for the
    length-bucketing batches of `keras_bert_impl.data.batching` (dynamic padding).

    Returns:
        (x, y): x = {"token_ids", "segment_ids", "padding_mask"}: lists of N int lists; y as in
        `features_to_arrays` (int32 [N] arrays, or None).
    """
    x = {
        "token_ids": [f.input_ids[: len(f.tokens)] for f in features],
        "segment_ids": [f.segment_ids[: len(f.tokens)] for f in features],
        "padding_mask": [f.input_mask[: len(f.tokens)] for f in features],
    }
    return x, _span_targets(features)
