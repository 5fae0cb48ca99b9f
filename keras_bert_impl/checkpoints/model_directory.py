"""The model directory: the one reader and writer of a checkpoint on disk.

`ModelDirectory(path)` reads what a checkpoint holds, whichever layout it is in:

    a Hugging Face directory   config.json + model.safetensors (or its sharded index, or pytorch_model.bin),
                               vocab.txt + tokenizer_config.json (or tokenizer.json); what save_pretrained
                               and the recipes write
    a Google TF1 checkpoint    bert_config.json + bert_model.ckpt.* (a directory, or the checkpoint prefix)
    a keras-hub preset         config.json of a serialized keras-hub BertBackbone + model.weights.h5
    a sentence-transformers    a Hugging Face directory + modules.json, sentence_bert_config.json, 1_Pooling/
    directory                  (its BERT files at its root or in the folder modules.json names)

and answers in one form: the `BertConfig`, the canonical weight dict (`keras_bert_impl.checkpoints.
weight_tables`), the architecture, the label names and the task settings that config.json records (each
model class declares its own entries: `use_crf`, `bilstm_units`, the SQuAD decoding settings, ...; this
module reads them by key, `setting`), the Keras dtype policy, the tokenizer's files and settings, the
extra JSON files a recipe keeps beside the model (`extra_file`, e.g. NER's label_list.json), and a
sentence-transformers directory's modules (`sentence_modules`, read by `sentence_transformers_files`).

`write_model_directory` writes a whole directory: the tokenizer's files (`write_tokenizer_files`), the extra
files, the files of a layout of its own (such as the sentence-transformers modules), then the weights and
config.json (`write_weights_and_config`), config.json last.

A checkpoint may be named instead of given by its path: a Hugging Face hub name or a keras-hub preset
(`keras_bert_impl.utils.model_names.resolve_model_path`, the one place where a name becomes a directory).
"""

import dataclasses
import functools
import os
import re

import numpy as np

from keras_bert_impl.checkpoints import checkpoint_files, sentence_transformers_files
from keras_bert_impl.checkpoints.checkpoint_files import CorruptCheckpointError
from keras_bert_impl.config import BertConfig
from keras_bert_impl.utils import file_io, model_files
from keras_bert_impl.utils.errors import CheckpointNotFoundError, UserInputError
from keras_bert_impl.utils.model_names import resolve_model_path
from keras_bert_impl.utils.optional_dependencies import require_tensorflow

# config.json entries this package writes beside transformers' own (transformers ignores them).
DTYPE_POLICY_KEY = "keras_dtype_policy"  # the Keras dtype policy of the saved model, e.g. "mixed_bfloat16"
MAX_SEQ_LENGTH_KEY = "max_seq_length"  # the packed length the recipes fine-tuned at

# Entries of a weights file that are not weights (buffers, counters): skipped without a word.
_IGNORED = re.compile(r"(^|\.)(position_ids|token_type_ids)$")
_FOREIGN_MODELS = ("roberta", "albert", "distilbert", "electra")


def find_tf1_checkpoint(path):
    """The checkpoint prefix of a Google TF1 checkpoint at `path` (a directory or a prefix), or None."""
    path = os.fspath(path)
    if os.path.isfile(path + ".index"):
        return path
    if os.path.isdir(path):
        default = os.path.join(path, model_files.GOOGLE_CHECKPOINT)
        if os.path.isfile(default + ".index"):
            return default
        indexes = sorted(f for f in os.listdir(path) if f.endswith(".index"))
        if len(indexes) == 1:
            return os.path.join(path, indexes[0][: -len(".index")])
    return None


def require_checkpoint_reader(path):
    """Raises `MissingDependencyError` (one line naming the `[tensorflow]` extra) when `path` is a Google TF1
    checkpoint and TensorFlow is not installed; nothing for any other path (its errors come when it is read).
    The recipes call it before they write anything.

    Examples:

    >>> require_checkpoint_reader("/no/such/checkpoint")
    """
    try:
        prefix = find_tf1_checkpoint(resolve_model_path(path))
    except Exception:  # noqa: BLE001 -- reading the checkpoint reports it
        return
    if prefix is not None:
        require_tensorflow(f"the Google TF1 checkpoint {prefix}")


class ModelDirectory:
    """A checkpoint on disk, read on demand (each file at most once).

    Args:
        path: a directory, a Google checkpoint prefix (`.../bert_model.ckpt`), a config file beside the
            weights, or a model name (`resolve_model_path`).

    Examples:

    >>> import tempfile
    >>> from keras_bert_impl.models.backbone import BertBackbone
    >>> directory = tempfile.mkdtemp()
    >>> BertBackbone(BertConfig.preset("bert_tiny")).save_pretrained(directory)
    >>> checkpoint = ModelDirectory(directory)
    >>> checkpoint.architecture, checkpoint.bert_config().hidden_size, checkpoint.label_names
    ('BertModel', 128, None)
    >>> len(checkpoint.read_weights())
    39
    """

    def __init__(self, path):
        self.path = resolve_model_path(path)
        self.tf1_prefix = find_tf1_checkpoint(self.path)
        if self.tf1_prefix is not None:  # read with tf.train.load_checkpoint: refused at once without TensorFlow
            require_tensorflow(f"the Google TF1 checkpoint {self.tf1_prefix}")
        if os.path.isdir(self.path):  # a sentence-transformers directory may keep its BERT files in a folder
            self.directory = sentence_transformers_files.transformer_directory(self.path)
        else:  # a checkpoint prefix or a config file
            self.directory = os.path.dirname(self.tf1_prefix or self.path) or "."

    def __repr__(self):
        return f"ModelDirectory({self.path!r})"

    # ------------------------------------------------------------------------------ what it is
    @functools.cached_property
    def keras_hub_class(self):
        """The class name of a keras-hub preset's config.json (e.g. "BertBackbone"); None for other layouts."""
        from keras_bert_impl.checkpoints import keras_hub_preset

        return None if self.tf1_prefix else keras_hub_preset.preset_class(self.directory)

    @functools.cached_property
    def config_file(self):
        """The config file (config.json, else bert_config.json, or the file given), or None."""
        try:
            return model_files.find_config_file(self.path if os.path.isfile(self.path) else self.directory)
        except FileNotFoundError:
            return None

    @functools.cached_property
    def config(self):
        """The config file as a dict ({} without one, and for a keras-hub preset, whose config is a Keras
        object): BertConfig fields and the entries transformers and this package add to them."""
        if self.config_file is None or self.keras_hub_class is not None:
            return {}
        return model_files.read_json_object(self.config_file)

    def bert_config(self, **overrides):
        """The model's `BertConfig`, `overrides` replacing stored fields.

        Raises:
            CheckpointNotFoundError: no config file.
            UserInputError: the config is not JSON or has a bad field (the message names the file).
        """
        if self.keras_hub_class is not None:
            from keras_bert_impl.checkpoints import keras_hub_preset

            return keras_hub_preset.read_preset_config(self.directory, **overrides)
        if self.config_file is None:
            raise CheckpointNotFoundError(f"{self.directory}: no {' or '.join(model_files.CONFIG_FILES)} in this "
                                          "directory.")
        try:
            config = BertConfig.from_dict(self.config, source=self.config_file)
            return dataclasses.replace(config, **overrides) if overrides else config
        except UserInputError:
            raise
        except ValueError as error:  # a missing or out-of-range field
            raise UserInputError(str(error)) from None

    @property
    def architecture(self):
        """config.json's first `architectures` entry (e.g. "BertForSequenceClassification"), or None."""
        architectures = self.config.get("architectures")
        return architectures[0] if isinstance(architectures, list) and architectures else None

    def setting(self, key, default=None):
        """A task setting that config.json records (e.g. "use_crf", "bilstm_units", "squad"), or `default`."""
        return self.config.get(key, default)

    @property
    def label_names(self):
        """The label names of config.json's `id2label`, in id order; None without one.

        Raises:
            UserInputError: `id2label` is not a map of the ids 0..n-1 to names.
        """
        id2label = self.config.get("id2label")
        if id2label is None:
            return None
        ids = {str(i) for i in range(len(id2label))} if isinstance(id2label, dict) else None
        if ids is None or set(id2label) != ids:
            raise UserInputError(f"{self.config_file}: id2label must map the ids 0..n-1 to label names; got "
                                 f"{id2label!r}.")
        return [str(id2label[str(i)]) for i in range(len(id2label))]

    @property
    def max_seq_length(self):
        """The packed length the model was fine-tuned at (config.json's `max_seq_length`, else the
        `sequence_length` of tokenizer_config.json), or None."""
        value = self.config.get(MAX_SEQ_LENGTH_KEY) or self.tokenizer_config.get(model_files.SEQUENCE_LENGTH_KEY)
        return int(value) if value else None

    @property
    def problem_type(self):
        """config.json's `problem_type` (transformers': "regression", "single_label_classification", ...), or None."""
        return self.config.get("problem_type")

    @property
    def dtype_policy(self):
        """The Keras dtype policy `save_pretrained` recorded (e.g. "mixed_bfloat16"); None for float32."""
        value = self.config.get(DTYPE_POLICY_KEY)
        return value if isinstance(value, str) else None

    @functools.cached_property
    def sentence_modules(self):
        """The `sentence_transformers_files.SentenceModules` of a sentence-transformers directory (pooling,
        normalization, packed length); None for other directories."""
        if self.tf1_prefix is not None or not os.path.isdir(self.path):
            return None
        return sentence_transformers_files.read_sentence_modules(self.path)

    @functools.cached_property
    def sentence_config(self):
        """sentence_bert_config.json beside the BERT files ({"max_seq_length", "do_lower_case"}), or None."""
        return sentence_transformers_files.read_sentence_config(self.directory)

    # ------------------------------------------------------------------------------ tokenizer files
    @functools.cached_property
    def tokenizer_config(self):
        """tokenizer_config.json as a dict ({} without one)."""
        return model_files.read_tokenizer_config(self.directory)

    @property
    def vocab_file(self):
        """The directory's vocab.txt, or None."""
        path = os.path.join(self.directory, model_files.VOCAB_FILE)
        return path if os.path.isfile(path) else None

    @property
    def has_vocabulary(self):
        """Whether a tokenizer can be read here: vocab.txt, or tokenizer.json (transformers 5, keras-hub)."""
        return self.vocab_file is not None or os.path.isfile(
            os.path.join(self.directory, model_files.TOKENIZER_JSON_FILE))

    @property
    def tokenizer_files(self):
        """Where this layout keeps its tokenizer, for messages: a keras-hub preset's tokenizer.json (with
        assets/tokenizer/vocabulary.txt), else vocab.txt (or tokenizer.json)."""
        if self.keras_hub_class is not None:
            return (f"{model_files.TOKENIZER_JSON_FILE} (a keras-hub preset's tokenizer, with "
                    "assets/tokenizer/vocabulary.txt)")
        return f"{model_files.VOCAB_FILE} (or {model_files.TOKENIZER_JSON_FILE})"

    def extra_file(self, name):
        """The JSON object of the extra file `name` that `write_model_directory` wrote beside the model (e.g.
        NER's label_list.json), or None when the directory has none.

        Raises:
            UserInputError: the file is not a JSON object (naming it).
        """
        path = os.path.join(self.directory, name)
        return model_files.read_json_object(path) if os.path.isfile(path) else None

    # ------------------------------------------------------------------------------ weights
    @property
    def has_weights(self):
        """Whether a weights file is here: a Google checkpoint, a keras-hub preset's, or a Hugging Face one."""
        if self.tf1_prefix is not None or self.keras_hub_class is not None:
            return True
        return any(os.path.isfile(os.path.join(self.directory, name)) for name in model_files.WEIGHT_FILES)

    def read_weights(self):
        """The canonical weight dict (backbone and heads, Hugging Face names and layouts).

        Raises:
            CheckpointNotFoundError: no weights file; `CorruptCheckpointError` (a `UserInputError`) naming
            the file when one is truncated or corrupt.
        """
        if self.tf1_prefix is not None:
            from keras_bert_impl.checkpoints import tf1_checkpoint  # TensorFlow by nature: only for TF1 files.

            return tf1_checkpoint.read_tf1_checkpoint(self.tf1_prefix)
        if self.keras_hub_class is not None:
            from keras_bert_impl.checkpoints import keras_hub_preset

            return keras_hub_preset.read_preset_weights(self.directory, self.bert_config().num_hidden_layers)
        return read_hf_weights(self.directory)


# ---------------------------------------------------------------------------------- Hugging Face weights
def canonical_name(name):
    """Hugging Face key -> canonical name: no `bert.` prefix, old LayerNorm gamma/beta renamed."""
    if name.startswith("bert."):
        name = name[len("bert.") :]
    name = re.sub(r"LayerNorm\.gamma$", "LayerNorm.weight", name)
    name = re.sub(r"LayerNorm\.beta$", "LayerNorm.bias", name)
    return name


def _safetensors_shards(index):
    """The shard file names of a `model.safetensors.index.json`, each checked to exist."""
    try:
        shards = sorted(set(model_files.read_json_object(index)["weight_map"].values()))
    except (UserInputError, KeyError, TypeError, AttributeError):
        raise CorruptCheckpointError(
            f"{index}: not a safetensors index (expected JSON with a \"weight_map\" of name -> shard file)."
        ) from None
    directory = os.path.dirname(index)
    missing = [shard for shard in shards if not os.path.isfile(os.path.join(directory, str(shard)))]
    if missing:
        raise CorruptCheckpointError(f"{index}: names shard {missing[0]}, which is not in {directory}.")
    return shards


def read_hf_weights(directory):
    """Reads the weights of a Hugging Face BERT directory into the canonical dict.

    Raises `CorruptCheckpointError` (a `UserInputError`) naming the file when a weights file is truncated
    or corrupt (`keras_bert_impl.checkpoints.checkpoint_files`).
    """
    single, index, torch_bin = (os.path.join(directory, name) for name in model_files.WEIGHT_FILES)
    if os.path.isfile(single):
        raw = checkpoint_files.read_safetensors(single)
    elif os.path.isfile(index):
        raw = {}
        for shard in _safetensors_shards(index):
            raw.update(checkpoint_files.read_safetensors(os.path.join(directory, shard)))
    elif os.path.isfile(torch_bin):
        raw = checkpoint_files.read_torch_bin(torch_bin)
    else:
        raise CheckpointNotFoundError(
            f"{directory}: no weights found; expected {', '.join(model_files.WEIGHT_FILES[:-1])} or "
            f"{model_files.WEIGHT_FILES[-1]} (Hugging Face), or {model_files.GOOGLE_CHECKPOINT}.index (Google)."
        )
    foreign = sorted({k.split(".")[0] for k in raw if k.split(".")[0] in _FOREIGN_MODELS})
    if foreign:
        raise UserInputError(f"{directory}: unsupported architecture: the weights are those of {foreign[0]}, not BERT.")
    return {canonical_name(k): np.asarray(v) for k, v in raw.items() if not _IGNORED.search(k)}


# ---------------------------------------------------------------------------------------------- writing
def label_entries(num_labels, label_names=None):
    """`id2label` / `label2id` entries of a Hugging Face task config (`LABEL_i` when names are not given).

    Examples:

    >>> label_entries(2, ["negative", "positive"])["id2label"]
    {'0': 'negative', '1': 'positive'}
    """
    names = list(label_names) if label_names is not None else [f"LABEL_{i}" for i in range(num_labels)]
    if len(names) != num_labels:
        raise ValueError(f"{len(names)} label names given for {num_labels} outputs.")
    return {"id2label": {str(i): name for i, name in enumerate(names)}, "label2id": {name: i for i, name in enumerate(names)}}


def write_tokenizer_files(directory, tokenizer, sequence_length=None):
    """Writes the tokenizer's vocab.txt and tokenizer_config.json (casing, `normalize` when set and, when given,
    the packed `sequence_length` the model runs at) into `directory`, each atomically
    (`BertTokenizer.save_pretrained`), which `BertTokenizer.from_pretrained` and transformers read back."""
    tokenizer.save_pretrained(directory, sequence_length=sequence_length)


def write_model_directory(directory, bert_config, weights, architecture="BertModel", settings=None, dtype_policy=None,
                          tokenizer=None, sequence_length=None, extra_files=None, files=None):
    """Writes a whole model directory: with a `tokenizer`, its files (`write_tokenizer_files`, with
    `sequence_length`); `extra_files` ({file name: JSON value}); `files` (None, or a function of `directory`
    writing the layout's other files); then model.safetensors and config.json
    (`write_weights_and_config`, whose arguments the others are), config.json last. Each file is written
    once, from what is given here."""
    os.makedirs(directory, exist_ok=True)
    if tokenizer is not None:
        write_tokenizer_files(directory, tokenizer, sequence_length)
    for name, value in (extra_files or {}).items():
        file_io.write_json(os.path.join(directory, name), value)
    write_weights_and_config(directory, bert_config, weights, architecture=architecture, settings=settings,
                             dtype_policy=dtype_policy, files=files)


def write_weights_and_config(directory, bert_config, weights, architecture="BertModel", settings=None,
                             dtype_policy=None, files=None):
    """Writes `config.json` + `model.safetensors` as Hugging Face's BertModel (or BertFor*) would.

    Args:
        directory: the model directory (created when missing).
        bert_config: the model's `BertConfig`.
        weights: the canonical weight dict (float arrays).
        architecture: config.json's `architectures` entry (e.g. "BertForSequenceClassification").
        settings: more config.json entries (labels, task settings).
        dtype_policy: the Keras dtype policy's name; recorded under `keras_dtype_policy` unless float32.
        files: None, or a function of `directory` writing the layout's other files (before the weights).

    A causal config (`attention_direction="causal"`) gets `is_decoder: true`, with which transformers
    attends causally. model.safetensors carries the SHA-256 of its tensors in its metadata, verified when it
    is read (`checkpoint_files.read_safetensors`). Each file is written under a temporary name and renamed
    (`file_io.atomic_path`), config.json last and any older config.json removed first: a run killed while
    saving leaves no config.json, so the directory never looks loadable with weights and config that do not
    belong together. A write that fails (a full disk) raises `UserInputError` naming the file.
    """
    from safetensors import SafetensorError
    from safetensors.numpy import save_file

    os.makedirs(directory, exist_ok=True)
    weights = {name: np.ascontiguousarray(np.asarray(value, dtype="float32")) for name, value in weights.items()}
    config = dict(bert_config.to_dict(), model_type="bert", architectures=[architecture], **(settings or {}))
    if bert_config.attention_direction == "causal":
        config["is_decoder"] = True  # transformers' BertModel attends causally with it
    if dtype_policy not in (None, "float32"):
        config[DTYPE_POLICY_KEY] = dtype_policy
    config_path = os.path.join(directory, model_files.CONFIG_FILE)
    weights_path = os.path.join(directory, model_files.WEIGHT_FILES[0])
    if os.path.lexists(config_path):
        os.remove(config_path)
    if files is not None:
        files(directory)
    try:
        with file_io.atomic_path(weights_path) as tmp:
            metadata = {"format": "pt", checkpoint_files.DIGEST_METADATA_KEY: checkpoint_files.weights_digest(weights)}
            save_file(weights, tmp, metadata=metadata)
    except (OSError, SafetensorError) as error:  # a full disk, no permission: nothing is left under the name
        raise UserInputError(f"{weights_path}: cannot write the weights: {error}") from None
    try:
        file_io.write_json(config_path, config)
    except OSError as error:
        raise UserInputError(f"{config_path}: cannot write the config: {error.strerror or error}") from None
