"""keras-hub BERT presets: read into the canonical weight dict, and written through keras-hub.

A keras-hub preset directory (`keras_hub.models.BertBackbone.save_to_preset`) holds:

    config.json        {"class_name": "BertBackbone", "registered_name": "keras_hub>BertBackbone",
                        "config": {vocabulary_size, num_layers, num_heads, hidden_dim, intermediate_dim,
                                   dropout, max_sequence_length, num_segments, ...}}
    model.weights.h5   the backbone's variables, under Keras' saving paths (`layers/<layer>/vars/<i>`)
    tokenizer.json     {"class_name": "BertTokenizer", "config": {lowercase, strip_accents, ...}}
    assets/tokenizer/vocabulary.txt
    task.json, task.weights.h5   only in a task preset (e.g. BertTextClassifier): the head's variables

Reading needs only h5py (a Keras dependency): `PRESET_TABLE` ties each path of model.weights.h5 to a
canonical (Hugging Face) name and layout, and writing fills the same paths of the file keras-hub writes,
so both directions go through one table. Writing (`write_preset`) imports keras_hub.

keras-hub's BertBackbone computes the tanh approximation of GELU (`keras_hub.src.utils.keras_utils.
gelu_approximate`, `keras.activations.gelu(x, approximate=True)`), so a config read from a preset has
`hidden_act="gelu_approximate"`; its LayerNorm epsilon is fixed at 1e-12 and its one `dropout` rate is
both the hidden and the attention-probabilities dropout.
"""

import json
import os
import shutil
import tempfile
import warnings

import numpy as np

from keras_bert_impl.config import BertConfig
from keras_bert_impl.utils.errors import UserInputError

CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.weights.h5"
TASK_CONFIG_FILE = "task.json"
TASK_WEIGHTS_FILE = "task.weights.h5"

# The activation keras-hub's BertBackbone computes: the tanh approximation of GELU.
KERAS_HUB_HIDDEN_ACT = "gelu_approximate"
_TANH_GELUS = ("gelu_new", "gelu_approximate", "gelu_pytorch_tanh")
_KERAS_HUB_LAYER_NORM_EPS = 1e-12

# keras-hub config field -> BertConfig field.
_CONFIG_FIELDS = {
    "vocabulary_size": "vocab_size",
    "num_layers": "num_hidden_layers",
    "num_heads": "num_attention_heads",
    "hidden_dim": "hidden_size",
    "intermediate_dim": "intermediate_size",
    "max_sequence_length": "max_position_embeddings",
    "num_segments": "type_vocab_size",
}


# ---------------------------------------------------------------------------------------- detection
def _read_json(path):
    with open(path, encoding="utf-8") as f:
        try:
            return json.load(f)
        except (json.JSONDecodeError, UnicodeDecodeError) as error:
            raise UserInputError(f"{path}: not valid JSON ({error})") from None


def _is_keras_object(values):
    """Whether a JSON value is a serialized Keras object of keras-hub (class_name + config + keras_hub names)."""
    if not isinstance(values, dict) or "class_name" not in values or not isinstance(values.get("config"), dict):
        return False
    return str(values.get("registered_name") or "").startswith("keras_hub>") or str(
        values.get("module") or ""
    ).startswith("keras_hub")


def preset_class(directory):
    """The class name in a keras-hub preset's config.json (e.g. "BertBackbone"), or None for other directories."""
    path = os.path.join(os.fspath(directory), CONFIG_FILE)
    if not os.path.isfile(path):
        return None
    try:
        with open(path, encoding="utf-8") as f:
            values = json.load(f)
    except (OSError, json.JSONDecodeError, UnicodeDecodeError):
        return None  # the config reader reports it
    return str(values["class_name"]) if _is_keras_object(values) else None


def is_keras_hub_preset(directory):
    """Whether `directory` is a keras-hub preset (its config.json is a serialized keras-hub backbone)."""
    return preset_class(directory) is not None


# ------------------------------------------------------------------------------------------ config
def read_preset_config(directory, **overrides):
    """The `BertConfig` of a keras-hub BertBackbone preset, with `hidden_act="gelu_approximate"`.

    Raises:
        UserInputError: config.json holds another keras-hub class, lacks a field, or has a bad value
            (the message names the file).
    """
    path = os.path.join(os.fspath(directory), CONFIG_FILE)
    values = _read_json(path)
    class_name = values.get("class_name") if isinstance(values, dict) else None
    if class_name != "BertBackbone":
        raise UserInputError(
            f"{path}: a keras-hub preset of {class_name}, not BertBackbone; only keras-hub BERT presets can be read."
        )
    hub = values["config"]
    missing = [name for name in _CONFIG_FIELDS if hub.get(name) is None]
    if missing:
        raise UserInputError(f"{path}: the keras-hub BertBackbone config lacks {', '.join(missing)}.")
    fields = {ours: hub[theirs] for theirs, ours in _CONFIG_FIELDS.items()}
    dropout = hub.get("dropout", 0.1)
    fields.update(
        hidden_act=KERAS_HUB_HIDDEN_ACT,
        hidden_dropout_prob=dropout,
        attention_probs_dropout_prob=dropout,
        layer_norm_eps=_KERAS_HUB_LAYER_NORM_EPS,
        initializer_range=0.02,
    )
    fields.update(overrides)
    try:
        return BertConfig(**fields)
    except (TypeError, ValueError) as error:
        raise UserInputError(f"{path}: {error}") from None


# ------------------------------------------------------------------------------------ weight table
# Layouts between a keras-hub variable (shape `shape`) and the canonical Hugging Face array.
def _identity_from_hub(k):
    return k


def _kernel_from_hub(k):
    """Dense [in, out] or EinsumDense [H, heads, head_size] -> Linear [out, in]."""
    return k.reshape(k.shape[0], -1).T


def _output_kernel_from_hub(k):
    """EinsumDense [heads, head_size, H] -> Linear [H, heads * head_size]."""
    return k.reshape(-1, k.shape[-1]).T


def _flat_from_hub(k):
    return k.reshape(-1)


def _to_hub(from_hub):
    if from_hub in (_kernel_from_hub, _output_kernel_from_hub):
        return lambda w, shape: np.asarray(w).T.reshape(shape)
    return lambda w, shape: np.asarray(w).reshape(shape)


def _dense_rows(path, prefix, kernel=_kernel_from_hub, bias=_flat_from_hub):
    return [(f"{path}/vars/0", f"{prefix}.weight", kernel), (f"{path}/vars/1", f"{prefix}.bias", bias)]


def _layer_norm_rows(path, prefix):
    return [(f"{path}/vars/0", f"{prefix}.weight", _identity_from_hub), (f"{path}/vars/1", f"{prefix}.bias", _identity_from_hub)]


def encoder_layer_path(index):
    """The saving path of keras-hub's i-th TransformerEncoder (Keras numbers repeated class names _1, _2...)."""
    return "layers/transformer_encoder" + (f"_{index}" if index else "")


def preset_table(num_layers):
    """[(h5 path in model.weights.h5, canonical name, from_hub)] for a keras-hub BertBackbone of `num_layers`."""
    rows = [
        ("layers/reversible_embedding/vars/0", "embeddings.word_embeddings.weight", _identity_from_hub),
        ("layers/position_embedding/vars/0", "embeddings.position_embeddings.weight", _identity_from_hub),
        ("layers/embedding/vars/0", "embeddings.token_type_embeddings.weight", _identity_from_hub),
        *_layer_norm_rows("layers/layer_normalization", "embeddings.LayerNorm"),
    ]
    for i in range(num_layers):
        path, prefix = encoder_layer_path(i), f"encoder.layer.{i}"
        attention = f"{path}/_self_attention_layer"
        for part in ("query", "key", "value"):
            rows += _dense_rows(f"{attention}/{part}_dense", f"{prefix}.attention.self.{part}")
        rows += _dense_rows(
            f"{attention}/output_dense", f"{prefix}.attention.output.dense", kernel=_output_kernel_from_hub
        )
        rows += _layer_norm_rows(f"{path}/_self_attention_layer_norm", f"{prefix}.attention.output.LayerNorm")
        rows += _dense_rows(f"{path}/_feedforward_intermediate_dense", f"{prefix}.intermediate.dense")
        rows += _dense_rows(f"{path}/_feedforward_output_dense", f"{prefix}.output.dense")
        rows += _layer_norm_rows(f"{path}/_feedforward_layer_norm", f"{prefix}.output.LayerNorm")
    rows += _dense_rows("layers/dense", "pooler.dense")
    return rows


# BertTextClassifier's task.weights.h5: its `logits` Dense (the dropout before it has no variables).
CLASSIFIER_TABLE = _dense_rows("layers/dense", "classifier")


def _float32(dataset):
    """A dataset of model.weights.h5 as float32; Keras marks bfloat16 ones with the attribute dtype="bfloat16"."""
    if dataset.attrs.get("dtype") == "bfloat16":
        import ml_dtypes  # a Keras dependency

        return np.array(dataset, dtype=ml_dtypes.bfloat16).astype("float32")
    return np.asarray(dataset, dtype="float32")


def _read_h5(path, table):
    import h5py

    try:
        with h5py.File(path, "r") as f:
            missing = [key for key, *_ in table if key not in f]
            if missing:
                raise UserInputError(
                    f"{path}: no {missing[0]} (expected the variables of keras-hub's BertBackbone; "
                    f"{len(missing)} of {len(table)} missing)."
                )
            return {name: from_hub(_float32(f[key])) for key, name, from_hub in table}
    except OSError as error:
        raise UserInputError(f"{path}: not a readable HDF5 weights file ({error}).") from None


def _write_h5(path, table, weights):
    import h5py

    with h5py.File(path, "r+") as f:
        for key, name, from_hub in table:
            dataset = f[key]
            dataset[...] = _to_hub(from_hub)(weights[name], dataset.shape).astype(dataset.dtype)


def read_preset_weights(directory, num_layers):
    """The canonical weight dict of a keras-hub BertBackbone preset, with a BertTextClassifier's head.

    The head of a BertTextClassifier task preset (task.json + task.weights.h5) is read as
    `classifier.weight` [C, H] / `classifier.bias` [C]; other task heads are skipped with a warning.
    """
    directory = os.fspath(directory)
    weights_path = os.path.join(directory, WEIGHTS_FILE)
    if not os.path.isfile(weights_path):
        raise UserInputError(f"{directory}: a keras-hub preset without {WEIGHTS_FILE}.")
    table = preset_table(num_layers)
    weights = _read_h5(weights_path, table)
    import h5py

    with h5py.File(weights_path, "r") as f:
        if encoder_layer_path(num_layers) in f:
            raise UserInputError(
                f"{weights_path}: holds more than the {num_layers} encoder layers that config.json's num_layers says."
            )
    task_path = os.path.join(directory, TASK_CONFIG_FILE)
    task_weights = os.path.join(directory, TASK_WEIGHTS_FILE)
    if os.path.isfile(task_path) and os.path.isfile(task_weights):
        task = _read_json(task_path)
        class_name = task.get("class_name") if isinstance(task, dict) else None
        if class_name == "BertTextClassifier":
            activation = (task.get("config") or {}).get("activation")
            if activation not in (None, "linear"):
                warnings.warn(
                    f"{task_path}: the keras-hub classifier applies activation {activation!r}; the classifier loaded "
                    "from it outputs the logits before it.",
                    stacklevel=3,
                )
            weights.update(_read_h5(task_weights, CLASSIFIER_TABLE))
        else:
            warnings.warn(f"{task_path}: the head of keras-hub's {class_name} is not read (only BertTextClassifier's).", stacklevel=3)
    return weights


def read_preset(directory, **config_overrides):
    """(BertConfig, canonical weight dict) of a keras-hub BertBackbone preset directory."""
    config = read_preset_config(directory, **config_overrides)
    return config, read_preset_weights(directory, config.num_hidden_layers)


# ------------------------------------------------------------------------------------------- writing
def _import_keras_hub():
    try:
        import keras_hub
    except ImportError:
        raise ImportError("save_to_preset writes through keras-hub, which is not installed: pip install keras-hub") from None
    return keras_hub


def check_preset_config(config, allow_gelu_approximation=False):
    """Refuses a `BertConfig` that keras-hub's BertBackbone cannot compute as it is.

    Raises:
        UserInputError: `attention_direction` is "causal", or `hidden_act` is not a GELU, or is the exact GELU without
            `allow_gelu_approximation=True`, or `layer_norm_eps` is not 1e-12.
    """
    if config.attention_direction != "bidirectional":
        raise UserInputError(
            f"attention_direction={config.attention_direction!r}: keras-hub's BertBackbone attends bidirectionally "
            "only; this model cannot be written as a keras-hub preset (save it with save_pretrained)."
        )
    act = config.hidden_act
    if act not in _TANH_GELUS:
        if act != "gelu":
            raise UserInputError(
                f"hidden_act={act!r}: keras-hub's BertBackbone computes the tanh GELU only; this model cannot be "
                "written as a keras-hub preset."
            )
        if not allow_gelu_approximation:
            raise UserInputError(
                "hidden_act='gelu' (the exact erf GELU): keras-hub's BertBackbone computes the tanh approximation, "
                "so its outputs would differ slightly; pass allow_gelu_approximation=True to write it anyway."
            )
    if config.layer_norm_eps != _KERAS_HUB_LAYER_NORM_EPS:
        raise UserInputError(
            f"layer_norm_eps={config.layer_norm_eps}: keras-hub's BertBackbone fixes it at 1e-12; this model cannot "
            "be written as a keras-hub preset."
        )
    if config.hidden_dropout_prob != config.attention_probs_dropout_prob:
        warnings.warn(
            f"keras-hub's BertBackbone has one dropout rate; the preset gets hidden_dropout_prob="
            f"{config.hidden_dropout_prob} (attention_probs_dropout_prob={config.attention_probs_dropout_prob} is dropped).",
            stacklevel=3,
        )


def write_preset(directory, config, weights, tokenizer=None, classifier=None, allow_gelu_approximation=False):
    """Writes a keras-hub preset of a BERT model with keras-hub's own `save_to_preset`.

    keras-hub builds its BertBackbone from the config and writes the preset; the variables of the
    written model.weights.h5 (and task.weights.h5) are then set to `weights` through `preset_table`
    (and `CLASSIFIER_TABLE`).

    Args:
        directory: the preset directory to write.
        config: the model's `BertConfig`.
        weights: the canonical weight dict (`weight_tables.backbone_weights_dict`), with `classifier.weight`
            [C, H] and `classifier.bias` [C] for a classifier.
        tokenizer: a `BertTokenizer` whose vocabulary and `do_lower_case` the preset's keras-hub
            BertTokenizer gets (`lowercase` and `strip_accents` both `do_lower_case`), or None.
        classifier: None for a backbone preset, or (num_classes, dropout) for a BertTextClassifier
            task preset.
        allow_gelu_approximation: write a model with the exact GELU (`hidden_act="gelu"`), which
            keras-hub computes with the tanh approximation.

    Raises:
        ImportError: keras_hub is not installed.
        UserInputError: the config is one keras-hub cannot compute (`check_preset_config`).
    """
    check_preset_config(config, allow_gelu_approximation)
    keras_hub = _import_keras_hub()
    directory = os.fspath(directory)
    hub_backbone = keras_hub.models.BertBackbone(
        vocabulary_size=config.vocab_size,
        num_layers=config.num_hidden_layers,
        num_heads=config.num_attention_heads,
        hidden_dim=config.hidden_size,
        intermediate_dim=config.intermediate_size,
        dropout=config.hidden_dropout_prob,
        max_sequence_length=config.max_position_embeddings,
        num_segments=config.type_vocab_size,
    )
    hub_tokenizer = None
    if tokenizer is not None:
        hub_tokenizer = keras_hub.models.BertTokenizer(
            vocabulary=tokenizer.vocabulary,
            lowercase=tokenizer.do_lower_case,
            strip_accents=tokenizer.do_lower_case,
        )
    os.makedirs(directory, exist_ok=True)
    # Everything is written in a temporary folder beside `directory`, then moved in, config.json last (an
    # older one removed first): a write killed half-way leaves no config.json over weights that do not match it.
    staging = tempfile.mkdtemp(prefix=".preset-", dir=os.path.dirname(os.path.abspath(directory)))
    try:
        if classifier is None:
            hub_backbone.save_to_preset(staging)
            if hub_tokenizer is not None:
                hub_tokenizer.save_to_preset(staging)
        else:
            num_classes, dropout = classifier
            preprocessor = None
            if hub_tokenizer is not None:
                preprocessor = keras_hub.models.BertTextClassifierPreprocessor(
                    hub_tokenizer, sequence_length=config.max_position_embeddings
                )
            task = keras_hub.models.BertTextClassifier(
                hub_backbone, num_classes=num_classes, preprocessor=preprocessor, dropout=dropout
            )
            task.save_to_preset(staging)
            _write_h5(os.path.join(staging, TASK_WEIGHTS_FILE), CLASSIFIER_TABLE, weights)
        _write_h5(os.path.join(staging, WEIGHTS_FILE), preset_table(config.num_hidden_layers), weights)
        _move_into(staging, directory)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _move_into(staging, directory):
    """Moves every file of `staging` to the same place under `directory`, config.json last."""
    config_path = os.path.join(directory, CONFIG_FILE)
    if os.path.lexists(config_path):
        os.remove(config_path)
    files = [
        os.path.relpath(os.path.join(root, name), staging) for root, _, names in os.walk(staging) for name in names
    ]
    for relative in sorted(files, key=lambda name: name == CONFIG_FILE):
        target = os.path.join(directory, relative)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        os.replace(os.path.join(staging, relative), target)
