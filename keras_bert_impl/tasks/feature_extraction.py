"""Feature extraction: the logic of google-research/bert's `extract_features.py` (the feature-based approach).

Reads lines of text (`text_a` or `text_a ||| text_b`), runs the pretrained BERT with fixed weights and
writes, for every input line, one JSON object per line ("JSON Lines"), in exactly the original's
structure and key order:

    {"linex_index": 0, "features": [{"token": "[CLS]", "layers": [{"index": -1, "values": [0.1, ...]},
                                                                  {"index": -2, "values": [...]}, ...]},
                                    {"token": "hello", "layers": [...]}, ...]}

`values` are the H floats of that token in that layer, rounded to 6 decimals (`round(float(x), 6)`).
Layer indices count as the original's `model.get_all_encoder_layers()`: over the L ENCODER layers
(the embedding output is not among them), so -1 is the last layer and 0 the first encoder layer.

With `feature_mode`, a Table 7 preset of `keras_bert_impl.feature_modes`, the `layers` list holds
instead: for a "concat" preset, one entry per hidden state, its `index` the encoder-layer index as above
("last" writes exactly what `layer_indexes=[-1]` writes, "concat_last_four" what `[-1, -2, -3, -4]` writes)
or the string "embeddings" for the embedding output; for a "scalar_mix" preset ("sum_last_four",
"sum_all"), one entry whose `index` is the preset's name and whose `values` are the plain average
`(1/n) sum_k h_k` of its n hidden states (all L encoder layers for "sum_all"). That average is an untrained
`ScalarMix` (all weight logits 0, gamma 1): the learned weights of Table 7 exist only in a model that trains
them, such as `BertFeatureBasedTagger(feature_mode=...)`.
"""

import json
import re

import numpy as np
from keras import ops

from keras_bert_impl.feature_modes import check_feature_layers, feature_mode_layers
from keras_bert_impl.utils.errors import UserInputError
from keras_bert_impl.utils import file_io
from keras_bert_impl.utils.file_io import atomic_open

_PAIR_RE = re.compile(r"^(.*) \|\|\| (.*)$")


def read_input_lines(path):
    """The lines of the text file `path` (UTF-8, universal newlines, as the original's reader).

    Raises:
        UserInputError: no file at `path`, or a line that is not UTF-8, naming `path:line`.

    Examples:

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "input.txt")
    >>> _ = open(path, "wb").write(b"Hello\\r\\nna\\xefve\\n")
    >>> try:
    ...     read_input_lines(path)
    ... except UserInputError as error:
    ...     print(str(error).replace(path, "input.txt"))
    input.txt:2: not valid UTF-8 text (invalid continuation byte 0xef at byte 2 of the line).
    """
    if not file_io.isfile(path):
        raise UserInputError(f"{path}: no such input file.")
    with file_io.open_text(path) as f:
        return f.readlines()


def read_examples(lines):
    """The original's `read_examples`: `(unique_id, text_a, text_b)` per line (text_b None if no `|||`).

    Args:
        lines: an iterable of strings (e.g. an open file).

    Returns:
        list of `(unique_id, text_a, text_b)`.

    Examples:

    >>> read_examples(["Who was Jim Henson ? ||| Jim Henson was a puppeteer\\n", "Hello\\n"])
    [(0, 'Who was Jim Henson ?', 'Jim Henson was a puppeteer'), (1, 'Hello', None)]
    """
    examples = []
    for unique_id, line in enumerate(lines):
        line = line.strip()
        match = _PAIR_RE.match(line)
        if match is None:
            examples.append((unique_id, line, None))
        else:
            examples.append((unique_id, match.group(1), match.group(2)))
    return examples


def convert_example(tokenizer, text_a, text_b, max_seq_length):
    """The original's `convert_examples_to_features` for one example: `[CLS] a [SEP] (b [SEP])`, truncated
    and padded by `tokenizers.packing` (through `BertTokenizer.__call__`).

    Returns:
        `(tokens, token_ids, segment_ids, padding_mask)`: the tokens `[CLS] a [SEP] (b [SEP])` and the
        int32 [max_seq_length] model inputs.
    """
    packed = tokenizer(text_a, text_b or None, max_length=max_seq_length, padding="max_length")
    token_ids, segment_ids, padding_mask = (packed[key][0] for key in ("token_ids", "segment_ids", "padding_mask"))
    tokens = tokenizer.convert_ids_to_tokens(token_ids[: int(padding_mask.sum())])
    return tokens, token_ids, segment_ids, padding_mask


def extract_features(backbone, tokenizer, lines, layer_indexes=(-1, -2, -3, -4), max_seq_length=128, batch_size=32,
                     feature_mode=None):
    """One JSON-ready dict per input line, in the original's structure (module docstring).

    Args:
        backbone: a `BertBackbone` built with `output_hidden_states=True`.
        tokenizer: a `BertTokenizer`.
        lines: iterable of input lines (`text_a` or `text_a ||| text_b`).
        layer_indexes: encoder-layer indices, as the original's `--layers`.
        max_seq_length: window length (longer inputs are truncated as the original does).
        batch_size: lines per forward pass.
        feature_mode: None, or a Table 7 preset ("embeddings", "second_to_last", "last", "sum_last_four",
            "concat_last_four", "sum_all") written instead of `layer_indexes` (module docstring).

    Returns:
        An iterator of `{"linex_index": i, "features": [{"token": ..., "layers": [{"index": j, "values":
        [...]}]}]}`, one per line, computed as it is consumed.

    Raises:
        UserInputError: a layer index out of range or an unknown `feature_mode` (at the call, before anything
            is computed).

    Examples:

    >>> import os, tempfile
    >>> from keras_bert_impl import BertBackbone, BertConfig, BertTokenizer
    >>> vocab_file = os.path.join(tempfile.mkdtemp(), "vocab.txt")
    >>> with open(vocab_file, "w") as f:
    ...     _ = f.write("\\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "hello", "world"]))
    >>> backbone = BertBackbone(BertConfig.preset("bert_tiny"), output_hidden_states=True)
    >>> record = next(extract_features(backbone, BertTokenizer(vocab_file), ["Hello world"], layer_indexes=[-1]))
    >>> [f["token"] for f in record["features"]]
    ['[CLS]', 'hello', 'world', '[SEP]']
    >>> len(record["features"][0]["layers"][0]["values"])  # bert_tiny's hidden size
    128
    >>> record = next(extract_features(backbone, BertTokenizer(vocab_file), ["Hello world"], feature_mode="sum_all"))
    >>> [layer["index"] for layer in record["features"][0]["layers"]]
    ['sum_all']
    """
    if not backbone.output_hidden_states:
        raise ValueError("extract_features needs a backbone built with output_hidden_states=True.")
    entries = feature_entries(backbone.config.num_hidden_layers, layer_indexes, feature_mode)
    # The checks above run at the call, before any output is opened; the records come lazily.
    return _feature_records(backbone, tokenizer, read_examples(lines), entries, max_seq_length, batch_size)


def feature_entries(num_layers, layer_indexes=(-1,), feature_mode=None):
    """`[(written index, hidden-state indices averaged)]`: the feature of each entry of a record, for encoder
    layers `layer_indexes` (the original's `--layers`) or a Table 7 preset `feature_mode` (module docstring).

    Raises:
        UserInputError: a layer index out of range, or an unknown `feature_mode`.

    Examples:

    >>> feature_entries(12, [-1, 0])
    [(-1, [-1]), (0, [1])]
    >>> feature_entries(2, feature_mode="sum_all")
    [('sum_all', [1, 2])]
    """
    if feature_mode is not None:
        return _feature_mode_entries(feature_mode, num_layers)
    layer_indexes = [int(i) for i in layer_indexes]
    for index in layer_indexes:
        if not -num_layers <= index < num_layers:
            raise UserInputError(
                f"layer index {index} out of range for a model with {num_layers} encoder layers "
                f"(expected {-num_layers}..{num_layers - 1})."
            )
    # Encoder layer i is hidden state i + 1 (hidden state 0 is the embeddings); negative ones coincide.
    return [(index, [index + 1 if index >= 0 else index]) for index in layer_indexes]


def entry_features(hidden_states, entries):
    """One float32 array [B, T, H] per entry of `feature_entries`: its hidden state, or the plain average of
    its hidden states (an untrained `ScalarMix`)."""
    selected = []
    for _, indexes in entries:
        states = [np.asarray(ops.convert_to_numpy(hidden_states[h]), "float32") for h in indexes]
        selected.append(states[0] if len(states) == 1 else np.mean(np.stack(states), axis=0))
    return selected


def _feature_mode_entries(feature_mode, num_layers):
    """`[(written index, hidden-state indices averaged)]` of a Table 7 preset (module docstring)."""
    try:
        hidden_indexes, combine = feature_mode_layers(feature_mode, num_layers)
        check_feature_layers(hidden_indexes, combine, num_layers, name=f"feature_mode {feature_mode!r}")
    except ValueError as error:
        raise UserInputError(str(error)) from None
    if combine == "scalar_mix":
        return [(feature_mode, list(hidden_indexes))]
    entries = []
    for h in hidden_indexes:
        if h in (0, -(num_layers + 1)):
            entries.append(("embeddings", [h]))
        else:
            entries.append((h - 1 if h > 0 else h, [h]))  # the encoder-layer index of the original's format
    return entries


def _feature_records(backbone, tokenizer, examples, entries, max_seq_length, batch_size):
    """The records of `extract_features`, one batch of `examples` per forward pass; `entries` lists
    `(written index, hidden-state indices)`, several indices averaged."""
    for start in range(0, len(examples), batch_size):
        batch = [convert_example(tokenizer, a, b, max_seq_length) + (uid,)
                 for uid, a, b in examples[start : start + batch_size]]
        inputs = {
            "token_ids": np.stack([b[1] for b in batch]),
            "segment_ids": np.stack([b[2] for b in batch]),
            "padding_mask": np.stack([b[3] for b in batch]),
        }
        hidden_states = backbone(inputs, training=False)["hidden_states"]  # L+1 x [B, T, H]
        selected = entry_features(hidden_states, entries)  # one [B, T, H] array per entry
        for row, (tokens, _, _, _, unique_id) in enumerate(batch):
            features = []
            for position, token in enumerate(tokens):
                layers = [
                    {"index": index, "values": [round(float(x), 6) for x in values[row, position].flat]}
                    for (index, _), values in zip(entries, selected)
                ]
                features.append({"token": token, "layers": layers})
            yield {"linex_index": unique_id, "features": features}


def write_features(output_file, records):
    """Writes the records as the original does: `json.dumps(record) + "\\n"` per line. Returns the count.

    The lines go to a temporary file renamed to `output_file` once all are written and flushed
    (`file_io.atomic_open`): an error while computing the records, a full disk or a kill leaves no
    `output_file` at all, never a truncated one.

    Raises:
        UserInputError: the file cannot be written (a full disk, no permission), naming it.

    Examples:

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "features.jsonl")
    >>> write_features(path, iter([{"linex_index": 0, "features": []}]))
    1
    >>> open(path).read()
    '{"linex_index": 0, "features": []}\\n'
    """
    count = 0
    try:
        with atomic_open(output_file, "w") as writer:
            for record in records:
                writer.write(json.dumps(record) + "\n")
                count += 1
    except OSError as error:
        raise UserInputError(f"{output_file}: cannot write the features: {error.strerror or error}.") from None
    return count
