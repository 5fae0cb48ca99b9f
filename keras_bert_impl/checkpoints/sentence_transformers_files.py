"""The files of a sentence-transformers directory: the modules it chains, how it pools, its packed length.

A sentence-transformers directory (what `SentenceTransformer.save` writes; all-MiniLM-L6-v2 is one) is a
Hugging Face BERT directory (config.json, weights, vocabulary: the Transformer module, at its root or in a
folder of its own) and:

    modules.json                [{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
                                 {"idx": 1, "name": "1", "path": "1_Pooling", "type": "...Pooling"},
                                 {"idx": 2, "name": "2", "path": "2_Normalize", "type": "...Normalize"}]
    sentence_bert_config.json   {"max_seq_length": 256, "do_lower_case": false}, in the Transformer's folder
    1_Pooling/config.json       {"word_embedding_dimension": 384, "pooling_mode_mean_tokens": true, ...}; from
                                sentence-transformers 6 also {"embedding_dimension": 384, "pooling_mode": "mean"}
    2_Normalize/                the Normalize module (L2 normalization of the pooled embedding; no settings)

`read_sentence_modules(root)` reads them into a `SentenceModules`; `write_sentence_modules` writes them in the
form sentence-transformers 2 to 6 read (the pooling modes as the `pooling_mode_*` booleans when their order
allows). Only the chain Transformer, Pooling (cls, max, mean, mean_sqrt_len_tokens), optional Normalize is
read; a directory chaining another module (Dense, LayerNorm, ...) or pooling another way is refused, naming
the module. `ModelDirectory` is their reader and the model directory's writer calls the writer. (The
pooling modes are `layers.sentence_pooling`'s, imported when a Pooling module is read or written: the model
directory is read without Keras until then.)
"""

import dataclasses
import os

from keras_bert_impl.utils import file_io, model_files
from keras_bert_impl.utils.errors import UserInputError

POOLING_FOLDER = "1_Pooling"
NORMALIZE_FOLDER = "2_Normalize"
# The module types this package writes (sentence-transformers 6 maps them to its own modules).
MODULE_TYPES = {kind: f"sentence_transformers.models.{kind}" for kind in ("Transformer", "Pooling", "Normalize")}
# The `pooling_mode_*` booleans of a Pooling config, in the order sentence-transformers concatenates them.
LEGACY_POOLING_KEYS = {
    "pooling_mode_cls_token": "cls",
    "pooling_mode_max_tokens": "max",
    "pooling_mode_mean_tokens": "mean",
    "pooling_mode_mean_sqrt_len_tokens": "mean_sqrt_len_tokens",
    "pooling_mode_weightedmean_tokens": "weightedmean",
    "pooling_mode_lasttoken": "lasttoken",
}


@dataclasses.dataclass(frozen=True)
class SentenceModules:
    """What a sentence-transformers directory says beyond its BERT checkpoint.

    Attributes:
        pooling: the pooling modes, concatenated in this order (e.g. ("mean",)).
        normalize: whether a Normalize module L2-normalizes the pooled embedding.
        max_seq_length: the packed length texts are cut to (sentence_bert_config.json), or None.
        do_lower_case: sentence_bert_config.json's `do_lower_case` (the texts are lower-cased first).
        embedding_dimension: the token embeddings' size the Pooling module was made for, or None.
        transformer_path: the Transformer module's folder, relative to the directory ("" its root).
    """

    pooling: tuple = ("mean",)
    normalize: bool = False
    max_seq_length: int = None
    do_lower_case: bool = False
    embedding_dimension: int = None
    transformer_path: str = ""


def _module_entries(root):
    """modules.json of `root` as a list of (kind, path) with kind the type's last name ("Transformer", ...);
    None without the file. The chain must be Transformer, Pooling, optional Normalize."""
    path = os.path.join(root, model_files.MODULES_FILE)
    if not os.path.isfile(path):
        return None
    value = model_files.read_json(path)
    if not isinstance(value, list) or not all(
            isinstance(m, dict) and isinstance(m.get("type"), str) and isinstance(m.get("path"), str) for m in value):
        raise UserInputError(f"{path}: expected a list of modules, each an object with a \"path\" and a \"type\".")
    entries = [(m["type"].rsplit(".", 1)[-1], m["path"]) for m in value]
    for index, (kind, folder) in enumerate(entries):
        expected = ("Transformer", "Pooling", "Normalize")[index] if index < 3 else None
        if kind != expected:
            raise UserInputError(f"{path}: module {index} is a {value[index]['type']}; this package reads the chain "
                                 "Transformer, Pooling and optionally Normalize.")
        if os.path.isabs(folder) or ".." in folder.replace("\\", "/").split("/"):
            raise UserInputError(f"{path}: module {index}'s path {folder!r} is not a folder inside the directory.")
    if len(entries) < 2:
        raise UserInputError(f"{path}: no Pooling module after the Transformer; this package reads the chain "
                             "Transformer, Pooling and optionally Normalize.")
    return entries


def transformer_directory(root):
    """The folder of `root`'s Transformer module (config.json, weights, vocabulary): `root` itself, or the
    folder modules.json names when `root` holds no config file of its own."""
    if any(os.path.isfile(os.path.join(root, name)) for name in model_files.CONFIG_FILES):
        return root
    entries = _module_entries(root)
    return os.path.join(root, entries[0][1]) if entries and entries[0][1] else root


def read_sentence_config(directory):
    """sentence_bert_config.json of the Transformer's folder `directory`: {"max_seq_length": int or None,
    "do_lower_case": bool}; None without the file."""
    path = os.path.join(directory, model_files.SENTENCE_CONFIG_FILE)
    if not os.path.isfile(path):
        return None
    config = model_files.read_json_object(path)
    length = config.get("max_seq_length")
    if length is not None and (isinstance(length, bool) or not isinstance(length, int) or length < 3):
        raise UserInputError(f"{path}: max_seq_length must be an integer >= 3 or null, got {length!r}.")
    lower = config.get("do_lower_case", False)
    if not isinstance(lower, bool):
        raise UserInputError(f"{path}: do_lower_case must be true or false, got {lower!r}.")
    return {"max_seq_length": length, "do_lower_case": lower}


def _read_pooling(path):
    """(modes, embedding dimension or None) of a Pooling module's config.json."""
    from keras_bert_impl.layers.sentence_pooling import POOLING_MODES  # Keras: imported once a model is read

    config = model_files.read_json_object(path)
    if "pooling_mode" in config:
        modes = config["pooling_mode"]
        modes = [modes] if isinstance(modes, str) else modes
    else:
        modes = [mode for key, mode in LEGACY_POOLING_KEYS.items() if config.get(key)] or ["mean"]
    if not isinstance(modes, list) or not modes or not all(isinstance(mode, str) for mode in modes):
        raise UserInputError(f"{path}: pooling_mode must be a mode or a list of modes, got {config['pooling_mode']!r}.")
    for mode in modes:
        if mode not in POOLING_MODES:
            raise UserInputError(f"{path}: pooling mode {mode!r} is not one this package computes "
                                 f"({', '.join(POOLING_MODES)}).")
    if config.get("include_prompt") is False:
        raise UserInputError(f"{path}: include_prompt false (prompts left out of the pooling) is not supported.")
    dimension = config.get("embedding_dimension", config.get("word_embedding_dimension"))
    return tuple(modes), dimension if isinstance(dimension, int) and not isinstance(dimension, bool) else None


def read_sentence_modules(root):
    """The `SentenceModules` of the directory `root`; None when it has no modules.json.

    Raises:
        UserInputError: a module file that is missing, not JSON, or says what this package does not compute
            (naming the file and the module or field).

    Examples:

    >>> import tempfile
    >>> root = tempfile.mkdtemp()
    >>> write_sentence_modules(root, SentenceModules(("mean",), normalize=True, max_seq_length=256,
    ...                                              embedding_dimension=384))
    >>> read_sentence_modules(root)
    SentenceModules(pooling=('mean',), normalize=True, max_seq_length=256, do_lower_case=False, embedding_dimension=384, transformer_path='')
    """
    entries = _module_entries(root)
    if entries is None:
        return None
    transformer_path = entries[0][1]
    pooling_config = os.path.join(root, entries[1][1], model_files.CONFIG_FILE)
    if not os.path.isfile(pooling_config):
        raise UserInputError(f"{pooling_config}: missing; modules.json names a Pooling module there.")
    modes, dimension = _read_pooling(pooling_config)
    sentence_config = read_sentence_config(os.path.join(root, transformer_path)) or {}
    return SentenceModules(pooling=modes, normalize=len(entries) == 3,
                           max_seq_length=sentence_config.get("max_seq_length"),
                           do_lower_case=sentence_config.get("do_lower_case", False),
                           embedding_dimension=dimension, transformer_path=transformer_path)


def pooling_config(modes, embedding_dimension):
    """A Pooling module's config.json: the `pooling_mode_*` booleans that every sentence-transformers version
    reads, when the modes are in their concatenation order; else sentence-transformers 6's `pooling_mode` list.

    Examples:

    >>> pooling_config(("mean",), 384)["pooling_mode_mean_tokens"]
    True
    >>> pooling_config(("mean", "cls"), 384)
    {'embedding_dimension': 384, 'pooling_mode': ['mean', 'cls']}
    """
    from keras_bert_impl.layers.sentence_pooling import POOLING_MODES, pooling_modes

    modes = pooling_modes(modes)
    legacy_order = [mode for mode in LEGACY_POOLING_KEYS.values() if mode in modes]
    if list(modes) != legacy_order:
        return {"embedding_dimension": int(embedding_dimension), "pooling_mode": list(modes)}
    config = {"word_embedding_dimension": int(embedding_dimension)}
    config.update({key: mode in modes for key, mode in LEGACY_POOLING_KEYS.items() if mode in POOLING_MODES})
    return config


def write_sentence_modules(directory, modules):
    """Writes the sentence-transformers files of `modules` (a `SentenceModules`) into the BERT directory
    `directory` (the Transformer at its root): 1_Pooling/config.json, 2_Normalize/ when it normalizes,
    sentence_bert_config.json (with `max_seq_length` when known) and modules.json last, each atomically.

    Raises:
        UserInputError: a file cannot be written (a full disk), naming it.
    """
    entries = [("Transformer", "")]
    written = os.path.join(directory, POOLING_FOLDER, model_files.CONFIG_FILE)
    try:
        os.makedirs(os.path.dirname(written), exist_ok=True)
        file_io.write_json(written, pooling_config(modules.pooling, modules.embedding_dimension))
        entries.append(("Pooling", POOLING_FOLDER))
        if modules.normalize:
            written = os.path.join(directory, NORMALIZE_FOLDER)
            os.makedirs(written, exist_ok=True)
            entries.append(("Normalize", NORMALIZE_FOLDER))
        written = os.path.join(directory, model_files.SENTENCE_CONFIG_FILE)
        sentence_config = {"do_lower_case": bool(modules.do_lower_case)}
        if modules.max_seq_length is not None:
            sentence_config["max_seq_length"] = int(modules.max_seq_length)
        file_io.write_json(written, sentence_config)
        written = os.path.join(directory, model_files.MODULES_FILE)
        file_io.write_json(written, [{"idx": i, "name": str(i), "path": folder, "type": MODULE_TYPES[kind]}
                                     for i, (kind, folder) in enumerate(entries)])
    except OSError as error:
        raise UserInputError(f"{written}: cannot write the sentence-transformers module: "
                             f"{error.strerror or error}") from None
