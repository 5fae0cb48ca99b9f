"""SQuAD v1.1 / v2.0 files and examples, read exactly as google-research/bert's run_squad.py reads them.

0. `load_squad_dataset`: the original SQuAD JSON, or the datasets ecosystem's flattened records (JSON
   lines, JSON, CSV, parquet: id, title, context, question, answers {"text", "answer_start"}) turned into
   the original's nested layout, which the reading below and the official evaluation take.
1. `read_squad_examples`: each question becomes a `SquadExample` (`squad_example`): the context is split on
   whitespace into "doc tokens", every CJK ideograph a doc token of its own (Chinese QA: CMRC2018, DRCD),
   with `char_to_word_offset` mapping every character to its doc token; a training answer's character span
   (at its `answer_start`) becomes a doc-token span. An answer whose text is not found at its
   `answer_start` (the original's "Could not find answer" check) is warned about with its question id,
   counted in the returned stats, and its example skipped for training (never mislabeled).

The examples become the model's windows in `squad_features` (`convert_examples_to_features`).

Examples:

>>> import tempfile
>>> d = tempfile.mkdtemp()
>>> squad = {"version": "v2.0", "data": [{"title": "t", "paragraphs": [{"context": "Ann sang.",
...     "qas": [{"id": "q1", "question": "Who sang?", "answers": [], "is_impossible": False}]}]}]}
>>> with open(os.path.join(d, "dev.json"), "w") as f:
...     json.dump(squad, f)
>>> examples, stats = read_squad_examples(os.path.join(d, "dev.json"), is_training=False,
...                                       version_2_with_negative=True)
>>> examples[0].doc_tokens, examples[0].doc_token_char_starts, stats["num_examples"]
(['Ann', 'sang.'], [0, 4], 1)
"""

import dataclasses
import json
import os
import warnings

from keras_bert_impl.data import dataset_files
from keras_bert_impl.data.dataset_files import cell_value
from keras_bert_impl.tokenizers.basic_tokenizer import is_cjk_char
from keras_bert_impl.utils.errors import UserInputError
from keras_bert_impl.utils.file_io import open_text


@dataclasses.dataclass
class SquadExample:
    """One question about one paragraph, with the paragraph split on whitespace (and CJK ideographs).

    Attributes:
        qas_id: the question id.
        question_text: the question.
        doc_tokens: the whitespace-separated words of the context, each CJK ideograph a word of its own.
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



# ------------------------------------------------------------------------------------------ reading
def _is_whitespace(c):
    """The original run_squad.py's whitespace (note U+202F, the narrow no-break space)."""
    return c == " " or c == "\t" or c == "\r" or c == "\n" or ord(c) == 0x202F


def split_context(paragraph_text):
    """Whitespace split of a context, as the original does it, with every CJK ideograph a doc token of its
    own (as the CMRC2018 baseline splits Chinese): a text without CJK ideographs is split exactly as the
    original splits it, and an unspaced Chinese paragraph becomes one doc token a character, so that an
    answer is an exact span of doc tokens.

    Returns:
        (doc_tokens, char_to_word_offset, doc_token_char_starts): the words; for every character of the
        text, the index of the word it belongs to (a whitespace character maps to the previous word, -1
        before the first); for every word, the index of its first character.

    Examples:

    >>> split_context("Ann sang 杭州2019年.")[0]
    ['Ann', 'sang', '杭', '州', '2019', '年', '.']
    """
    doc_tokens, char_to_word_offset, doc_token_char_starts = [], [], []
    prev_is_whitespace = True  # the next character starts a new doc token
    for i, c in enumerate(paragraph_text):
        if _is_whitespace(c):
            prev_is_whitespace = True
        else:
            cjk = is_cjk_char(c)
            if prev_is_whitespace or cjk:
                doc_tokens.append(c)
                doc_token_char_starts.append(i)
            else:
                doc_tokens[-1] += c
            prev_is_whitespace = cjk
        char_to_word_offset.append(len(doc_tokens) - 1)
    return doc_tokens, char_to_word_offset, doc_token_char_starts


def join_doc_tokens(doc_tokens, char_starts, start, end):
    """The doc tokens `start`..`end` (inclusive) as one text, the original's `" ".join`, except that two doc
    tokens adjacent in the context (a CJK ideograph and its neighbours) are joined without a space: the
    context's own characters for a Chinese span. `char_starts` None: every pair joined by a space.

    >>> tokens, _, starts = split_context("Ann sang 杭州2019年.")
    >>> join_doc_tokens(tokens, starts, 0, 5), join_doc_tokens(tokens, None, 0, 3)
    ('Ann sang 杭州2019年', 'Ann sang 杭 州')
    """
    parts = []
    for i in range(start, end + 1):
        if i > start and is_spaced(doc_tokens, char_starts, i):
            parts.append(" ")
        parts.append(doc_tokens[i])
    return "".join(parts)


def is_spaced(doc_tokens, char_starts, i):
    """Whether whitespace separates doc token `i` from doc token `i - 1` in the context (always, without
    `char_starts`)."""
    return char_starts is None or char_starts[i] > char_starts[i - 1] + len(doc_tokens[i - 1])


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
    answer's characters, joined by spaces (`join_doc_tokens`), do not contain the whitespace-normalized
    answer text; or the offsets fall outside the context) is reported with a warning naming the question
    id, counted, and the example skipped. Only training reads answers, so only training checks them (as the original).

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
            split = split_context(paragraph_text)
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
                if not question_text.strip():
                    raise SquadFormatError(f"{source}: {where_q}: the question is empty; expected its text.")
                num_questions += 1
                is_impossible = _is_impossible(qa, source, where_q) if version_2_with_negative else False
                answer_text, answer_start = "", None
                if is_training:
                    answers = _get(qa, "answers", source, where_q, list)
                    if not answers and not is_impossible:
                        raise SquadFormatError(
                            f"{source}: {where_q}: for training, each answerable question needs an answer; it has "
                            "none (SQuAD v2.0's impossible questions need --version_2_with_negative)."
                        )
                    if not is_impossible:
                        where_a = f"{where_q}.answers[0]"
                        answer_text = _get(answers[0], "text", source, where_a, str)
                        answer_start = _get(answers[0], "answer_start", source, where_a, int)
                example, reason = squad_example(qas_id, question_text, paragraph_text, answer_text, answer_start,
                                                is_impossible, is_training, split)
                if reason is not None:
                    warnings.warn(f"{source}: question id {qas_id!r}: the answer is not at its answer_start "
                                  f"({reason}); skipping the example.", stacklevel=2)
                    misaligned.append(qas_id)
                    continue
                examples.append(example)
    stats = {
        "num_questions": num_questions,
        "num_examples": len(examples),
        "num_impossible": sum(e.is_impossible for e in examples),
        "num_misaligned_answers": len(misaligned),
        "misaligned_qids": misaligned,
    }
    return examples, stats


def squad_example(qas_id, question_text, context, answer_text="", answer_start=None, is_impossible=False,
                  is_training=False, split=None):
    """One question about a context as the original `read_squad_examples` makes it a `SquadExample`.

    For training, an answerable question's answer (its text and the character offset `answer_start` in
    `context`) becomes the doc tokens it spans, checked as the original checks it: the doc tokens covering
    the answer's characters, joined by spaces (`join_doc_tokens`: none between adjacent doc tokens), must
    contain the whitespace-normalized answer text. The answer's doc tokens are those of its characters at
    `answer_start`, so an answer that occurs twice is trained where `answer_start` puts it.

    Args:
        qas_id, question_text, context: the question's id, its text and its context.
        answer_text, answer_start: the training answer (unused when not training or impossible).
        is_impossible: the question has no answer in the context (SQuAD v2.0).
        is_training: read the answer as the training target.
        split: `split_context(context)`, when the caller has it (the questions of a paragraph share it).

    Returns:
        (example, reason): the `SquadExample` and None, or None and why the answer is not at its
        `answer_start` (the original's "Could not find answer").

    Examples:

    >>> example, _ = squad_example("q1", "Who sang?", "Ann sang.", "Ann", 0, is_training=True)
    >>> example.doc_tokens, example.start_position, example.end_position
    (['Ann', 'sang.'], 0, 0)
    >>> squad_example("q1", "Who sang?", "Ann sang.", "Bob", 0, is_training=True)[1]
    "could not find answer: 'Ann' vs. 'Bob'"
    """
    doc_tokens, char_to_word_offset, char_starts = split or split_context(context)
    start_position = end_position = None
    if is_training and is_impossible:
        start_position = end_position = -1
    if not is_training or is_impossible:
        answer_text = ""
    elif not answer_text.strip():
        return None, "the answer text is empty"
    elif answer_start < 0 or answer_start + len(answer_text) > len(context):
        return None, (f"answer_start {answer_start} + length {len(answer_text)} is outside the context of "
                      f"{len(context)} characters")
    else:
        start_position = char_to_word_offset[answer_start]
        end_position = char_to_word_offset[answer_start + len(answer_text) - 1]
        actual_text = join_doc_tokens(doc_tokens, char_starts, max(start_position, 0), end_position)
        cleaned_answer_text = " ".join(answer_text.split())
        if actual_text.find(cleaned_answer_text) == -1:
            return None, f"could not find answer: {actual_text!r} vs. {cleaned_answer_text!r}"
    example = SquadExample(qas_id=qas_id, question_text=question_text, doc_tokens=doc_tokens, context_text=context,
                           doc_token_char_starts=char_starts, orig_answer_text=answer_text,
                           start_position=start_position, end_position=end_position, is_impossible=is_impossible)
    return example, None


def _is_impossible(qa, source, where):
    """A question's `is_impossible`: a JSON boolean (False when absent); a SquadFormatError for anything
    else, such as the string "false" (which `bool` would read as True)."""
    value = qa.get("is_impossible", False)
    if not isinstance(value, bool):
        raise SquadFormatError(f"{source}: {where}.is_impossible is {value!r}; expected a JSON boolean, "
                               "true or false.")
    return value
