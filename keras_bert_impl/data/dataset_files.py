"""Records from the files of the datasets ecosystem: JSON lines, JSON, CSV/TSV with a header, parquet.

What Hugging Face `datasets` exports (`to_json`, `to_csv`, `to_parquet`) and what transformers' example
scripts take as `--train_file` / `--validation_file`. Every task reader turns these records (dicts of
column -> value) into its own examples; the original formats (GLUE TSVs, CoNLL, SQuAD JSON, SWAG CSV)
are read by the task modules themselves.
"""

import ast
import csv
import io
import json
import os
import tokenize

from keras_bert_impl.utils.errors import UserInputError
from keras_bert_impl.utils.file_io import open_text

RECORD_FORMATS = ("jsonl", "json", "csv", "tsv", "parquet")
# Training files from this size up are streamed (`data.streaming`) by the fine-tuning tasks that can
# (`tasks.glue`): the size above which featurizing the whole file in memory (about 30 times the file:
# docs/large_files.md) costs more than the reordering of the batches that streaming brings.
STREAMING_MIN_BYTES = 16 * 2**20


def record_format(path):
    """The format of `path` from its extension: jsonl (also .jsonlines, .ndjson), json, csv, tsv or parquet;
    None for any other extension."""
    extension = os.path.splitext(path)[1].lower().lstrip(".")
    return {"jsonlines": "jsonl", "ndjson": "jsonl"}.get(extension, extension) if extension in (
        *RECORD_FORMATS, "jsonlines", "ndjson") else None


def read_records(path):
    """The records of a JSON-lines, JSON, CSV/TSV or parquet file: a list of `(where, record)`, where `where`
    is `"path:line"` (JSON lines, CSV: the file's line; JSON, parquet: `"path:[i]"`) for error messages and
    `record` a dict column -> value.

    A `.json` file holding one JSON value is a list of records, or a dict holding one (`{"data": [...]}`,
    as `datasets`' `to_json(lines=False)` writes a dict of columns `{"col": [...], ...}` is also read).
    A `.json` file with one JSON object per line is read as JSON lines.

    Raises:
        UserInputError: the file is missing, of another format, or not valid in its format.

    Examples:

    >>> import tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "train.jsonl")
    >>> with open(path, "w") as f:
    ...     _ = f.write('{"sentence": "a fine film", "label": 1}\\n{"sentence": "dull", "label": 0}\\n')
    >>> [(where.rsplit(":", 1)[1], record["label"]) for where, record in read_records(path)]
    [('1', 1), ('2', 0)]
    """
    if not os.path.isfile(path):
        raise UserInputError(f"{path}: no such file.")
    kind = record_format(path)
    if kind is None:
        raise UserInputError(f"{path}: unknown file type; expected one of .{', .'.join(RECORD_FORMATS)}.")
    if kind == "parquet":
        return _read_parquet(path)
    if kind in ("csv", "tsv"):
        return _read_csv(path, "\t" if kind == "tsv" else ",")
    with open_text(path) as f:
        text = f.read()
    if kind == "json":
        try:
            return _json_records(path, json.loads(text))
        except json.JSONDecodeError:
            pass  # one object per line, as datasets' to_json() writes by default
    return _read_json_lines(path, text)


def _read_json_lines(path, text):
    records = (json_line_record(path, number, line) for number, line in enumerate(text.splitlines(), 1))
    return [record for record in records if record is not None]


def json_line_record(path, number, line):
    """`(where, record)` of line `number` of a JSON-lines file (`where` is "path:number"); None for a blank line.

    Raises:
        UserInputError: the line is not JSON, or not a JSON object, naming the file and line.
    """
    if not line.strip():
        return None
    try:
        record = json.loads(line)
    except json.JSONDecodeError as error:
        raise UserInputError(f"{path}:{number}: not valid JSON ({error.msg} at column {error.colno}).") from None
    if not isinstance(record, dict):
        raise UserInputError(f"{path}:{number}: expected a JSON object, found {type(record).__name__}.")
    return f"{path}:{number}", record


def _json_records(path, value):
    if isinstance(value, dict) and isinstance(value.get("data"), list):
        value = value["data"]
    if isinstance(value, dict) and value and all(isinstance(v, list) for v in value.values()):
        columns = list(value)
        lengths = {len(value[c]) for c in columns}
        if len(lengths) != 1:
            raise UserInputError(f"{path}: the columns {columns} have different lengths {sorted(lengths)}.")
        value = [{c: value[c][i] for c in columns} for i in range(lengths.pop())]
    if not isinstance(value, list) or not all(isinstance(r, dict) for r in value):
        raise UserInputError(f"{path}: expected a list of JSON objects (records), one per example.")
    return [(f"{path}:[{i}]", record) for i, record in enumerate(value)]


def _read_csv(path, delimiter):
    with open_text(path, newline="") as f:
        reader = csv.reader(f, delimiter=delimiter)
        header = next(reader, None)
        if not header:
            raise UserInputError(f"{path}: empty file; expected a header line naming the columns.")
        return header_records(path, header, ((reader.line_num, row) for row in reader))


def header_records(path, header, numbered_rows, error=UserInputError):
    """`(where, record)` of each non-empty row of a CSV/TSV file: `record` maps the `header`'s names to the
    row's fields; a row with another number of fields raises `error` naming its line.

    Args:
        path: the file, for `where` ("path:line") and the messages.
        header: the column names.
        numbered_rows: `(line number, list of fields)` of the rows after the header.
        error: the exception class of a malformed row.
    """
    check_header(path, header, error)
    records = (header_record(path, header, line_number, row, error) for line_number, row in numbered_rows)
    return [record for record in records if record is not None]


def check_header(path, header, error=UserInputError):
    """Refuses (`error`, naming the file and the column) a header naming a column twice: a record would keep
    only one of the two columns, without a word.

    Examples:

    >>> check_header("train.csv", ["text", "text", "label"])
    Traceback (most recent call last):
    keras_bert_impl.utils.errors.UserInputError: train.csv:1: the header names the column 'text' twice; expected distinct column names.
    """
    seen = set()
    for name in header:
        if name in seen:
            raise error(f"{path}:1: the header names the column {name!r} twice; expected distinct column names.")
        seen.add(name)


def header_record(path, header, line_number, row, error=UserInputError):
    """`(where, record)` of one row of a CSV/TSV file (see `header_records`); None for an empty row."""
    if not row:
        return None
    if len(row) != len(header):
        raise error(f"{path}:{line_number}: expected {len(header)} fields (as the header), found {len(row)}.")
    return f"{path}:{line_number}", dict(zip(header, row))


def _read_parquet(path):
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise UserInputError(f"{path}: reading parquet needs pyarrow (pip install pyarrow).") from None
    rows = pq.read_table(path).to_pylist()
    return [(f"{path}:[{i}]", row) for i, row in enumerate(rows)]


def require_examples(examples, path):
    """`examples` when there is at least one; else a `UserInputError` naming `path` and why it has none:
    the file is empty, or (a CSV/TSV) holds only its header line, or holds no example.

    Examples:

    >>> import tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "train.tsv")
    >>> with open(path, "w") as f:
    ...     _ = f.write("sentence\\tlabel\\n")
    >>> try:
    ...     require_examples([], path)
    ... except UserInputError as error:
    ...     print(os.path.basename(str(error)))
    train.tsv: no examples (header only).
    """
    if examples:
        return examples
    if record_format(path) == "parquet":
        raise UserInputError(f"{path}: no examples (no rows).")
    with open_text(path) as f:
        lines = [line for line in f.read().splitlines() if line.strip()]
    if not lines:
        reason = "the file is empty"
    elif len(lines) == 1 and record_format(path) in ("csv", "tsv"):
        reason = "header only"
    else:
        reason = "no line of it is an example"
    raise UserInputError(f"{path}: no examples ({reason}).")


def field(record, name, where):
    """`record[name]`, or a `UserInputError` naming `where`, the missing column and the columns present."""
    if name not in record:
        raise UserInputError(f"{where}: no column {name!r}; the columns are {sorted(record)} "
                             f"(name others with the recipe's column flags).")
    return record[name]


def text_field(record, name, where, error=UserInputError):
    """`field(record, name, where)`, which must be a string; else `error` naming `where` and the column."""
    value = field(record, name, where)
    if not isinstance(value, str):
        raise error(f"{where}: column {name!r} is {value!r}; expected a text (a string).")
    return value


def require_text(text, where, what, error=UserInputError):
    """`text`, unless it is empty or blank: then `error` naming `where` and `what` (e.g. "column 'text'"); a
    model given no text answers with its bias alone (a confident label for nothing).

    Examples:

    >>> require_text("  ", "train.csv:3", "column 'text'")
    Traceback (most recent call last):
    keras_bert_impl.utils.errors.UserInputError: train.csv:3: column 'text' is empty; expected a text.
    """
    if not text.strip():
        raise error(f"{where}: {what} is empty; expected a text.")
    return text


class _NotALiteral(Exception):
    pass


_LAYOUT_TOKENS = (tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER)
_CLOSING = {"[": "]", "(": ")", "{": "}"}


def cell_value(value, where, column):
    """The list (or dict) a CSV cell prints; any value that is not a string is returned unchanged.

    CSV has no lists, so writers print them: as JSON (`["EU", "rejects"]`), as Python literals
    (`['EU', 'rejects']`), or as numpy prints them, which is what `datasets`' `to_csv` writes (through
    pandas): elements separated by spaces, `['EU' 'rejects']`, `[3 0 7]`, and the arrays inside a dict as
    `array([...], dtype=...)`. Nothing is evaluated: the text is tokenized, and only brackets, braces,
    strings, numbers, True/False/None and `array(..., dtype=...)` are accepted. (Python's own
    `ast.literal_eval` would read `['EU' 'rejects']` as `['EUrejects']`.)

    Raises:
        UserInputError: naming `where` and `column` for a text that is none of these, or a list that numpy
            shortened with "..." (more than 1000 elements).

    Examples:

    >>> cell_value("['EU' 'rejects'\\n 'German']", "train.csv:2", "tokens")
    ['EU', 'rejects', 'German']
    >>> cell_value("{'text': array(['France'], dtype=object), 'answer_start': array([159], dtype=int32)}",
    ...            "dev.csv:2", "answers")
    {'text': ['France'], 'answer_start': [159]}
    """
    if not isinstance(value, str):
        return value
    text = value.strip()
    try:
        return json.loads(text)
    except ValueError:
        pass
    try:
        tokens = [t for t in tokenize.generate_tokens(io.StringIO(text).readline) if t.type not in _LAYOUT_TOKENS]
        parsed, end = _literal(tokens, 0)
        if end != len(tokens):
            raise _NotALiteral(f"unexpected {tokens[end].string!r}")
    except (_NotALiteral, tokenize.TokenError, SyntaxError, ValueError, IndexError) as error:
        shown = text if len(text) <= 60 else text[:57] + "..."
        reason = str(error) if isinstance(error, _NotALiteral) else "not a list"
        raise UserInputError(f"{where}: column {column!r} holds {shown!r} ({reason}); expected a list written as "
                             "JSON, a Python literal or numpy's print.") from None
    return parsed


def _literal(tokens, i):
    """(value, index after it) of the literal starting at tokens[i]."""
    token = tokens[i]
    if token.type == tokenize.STRING:
        value = ast.literal_eval(token.string)
        if not isinstance(value, str):
            raise _NotALiteral(f"unexpected {token.string!r}")
        return value, i + 1
    if token.type == tokenize.NUMBER:
        return ast.literal_eval(token.string), i + 1
    if token.string in ("-", "+") and tokens[i + 1].type == tokenize.NUMBER:
        value = ast.literal_eval(tokens[i + 1].string)
        return (-value if token.string == "-" else value), i + 2
    if token.string in ("True", "False", "None"):
        return {"True": True, "False": False, "None": None}[token.string], i + 1
    if token.string == "array" and tokens[i + 1].string == "(":  # numpy's repr: array([...], dtype=int32)
        value, i = _literal(tokens, i + 2)
        if tokens[i].string == ",":
            if [t.string for t in tokens[i + 1 : i + 3]] != ["dtype", "="]:
                raise _NotALiteral("unexpected array(...) arguments")
            i += 4  # , dtype = NAME
        if tokens[i].string != ")":
            raise _NotALiteral("unexpected array(...) arguments")
        return value, i + 1
    if token.string == "...":
        raise _NotALiteral("shortened with '...': write the file as JSON lines or parquet")
    if token.string not in _CLOSING:
        raise _NotALiteral(f"unexpected {token.string!r}")
    closing, i = _CLOSING[token.string], i + 1
    items = [] if token.string != "{" else {}
    while tokens[i].string != closing:
        value, i = _literal(tokens, i)
        if token.string == "{":
            if tokens[i].string != ":":
                raise _NotALiteral(f"expected ':' after {value!r}")
            items[value], i = _literal(tokens, i + 1)
        else:
            items.append(value)
        if tokens[i].string == ",":
            i += 1
    return items, i + 1
