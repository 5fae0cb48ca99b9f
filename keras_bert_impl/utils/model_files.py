"""The files of a model directory: their names, finding them, and reading its JSON files.

A model directory (what `save_pretrained` writes; Hugging Face's layout, which transformers reads) holds:

    config.json             BertConfig fields, `architectures`, labels, task settings      CONFIG_FILE
    model.safetensors       the weights (or a sharded index, or pytorch_model.bin)          WEIGHT_FILES
    vocab.txt               the WordPiece vocabulary                                         VOCAB_FILE
    tokenizer_config.json   do_lower_case, and the packed sequence_length                   TOKENIZER_CONFIG_FILE

A sentence-transformers directory holds these too, and its modules (`checkpoints.sentence_transformers_files`):

    modules.json                the modules in order: Transformer, Pooling (and Normalize)  MODULES_FILE
    sentence_bert_config.json   the Transformer's max_seq_length and do_lower_case          SENTENCE_CONFIG_FILE
    1_Pooling/config.json       the pooling modes                                           (a module's CONFIG_FILE)

A Google checkpoint directory holds bert_config.json instead of config.json, and bert_model.ckpt.*; a
Hugging Face directory of transformers 5 may hold tokenizer.json instead of vocab.txt.

This module knows the files only. What they mean (the BertConfig, the weights, the labels and task
settings, the architecture's class) is read by `keras_bert_impl.checkpoints.model_directory`, which the
models, tasks and export go through.
"""

import json
import os

from keras_bert_impl.utils.errors import UserInputError

CONFIG_FILE = "config.json"
GOOGLE_CONFIG_FILE = "bert_config.json"
CONFIG_FILES = (CONFIG_FILE, GOOGLE_CONFIG_FILE)
WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin")
GOOGLE_CHECKPOINT = "bert_model.ckpt"
VOCAB_FILE = "vocab.txt"
TOKENIZER_CONFIG_FILE = "tokenizer_config.json"
TOKENIZER_JSON_FILE = "tokenizer.json"
MODULES_FILE = "modules.json"
SENTENCE_CONFIG_FILE = "sentence_bert_config.json"

# tokenizer_config.json's key for the packed length a fine-tuned model was trained at (transformers ignores it).
SEQUENCE_LENGTH_KEY = "sequence_length"


def find_config_file(path):
    """The config file of a checkpoint directory (config.json, else bert_config.json), or `path` itself when
    it is a file.

    Raises:
        FileNotFoundError: nothing at `path`, or a directory without either file.
    """
    path = os.fspath(path)
    if os.path.isfile(path):
        return path
    if not os.path.isdir(path):
        raise FileNotFoundError(f"No such checkpoint directory or config file: {path}")
    for name in CONFIG_FILES:
        candidate = os.path.join(path, name)
        if os.path.isfile(candidate):
            return candidate
    raise FileNotFoundError(f"{path}: no {' or '.join(CONFIG_FILES)} in this directory.")


def read_json(path):
    """The JSON value of the file `path` (an object, a list, ...).

    Raises:
        UserInputError: the file is not UTF-8 JSON; the message names the file (and the line and column of a
            syntax error).
    """
    with open(path, encoding="utf-8") as f:
        try:
            return json.load(f)
        except json.JSONDecodeError as e:
            raise UserInputError(f"{path}: not valid JSON (line {e.lineno}, column {e.colno}: {e.msg})") from None
        except UnicodeDecodeError as e:
            raise UserInputError(f"{path}: not valid JSON ({e})") from None


def read_json_object(path):
    """The JSON object (a dict) of the file `path`.

    Raises:
        UserInputError: the file is not UTF-8 JSON, or holds something other than an object; the message
            names the file (and the line and column of a syntax error).

    Examples:

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "config.json")
    >>> _ = open(path, "w").write("[1, 2]")
    >>> try:
    ...     read_json_object(path)
    ... except ValueError as error:
    ...     print(str(error).replace(path, "config.json"))
    config.json: expected a JSON object ({...}), got a list.
    """
    value = read_json(path)
    if not isinstance(value, dict):
        raise UserInputError(f"{path}: expected a JSON object ({{...}}), got a {type(value).__name__}.")
    return value


def read_tokenizer_config(directory):
    """tokenizer_config.json of `directory` as a dict; {} when there is none."""
    path = os.path.join(os.fspath(directory), TOKENIZER_CONFIG_FILE)
    return read_json_object(path) if os.path.isfile(path) else {}
