"""Checkpoint conversion: Hugging Face and Google TF1 BERT checkpoints to and from Keras variables.

Every checkpoint is first read into one canonical form: a dict of numpy arrays under Hugging Face's
names without the `bert.` prefix, in Hugging Face's layouts (a Linear weight is [out, in]):

    embeddings.word_embeddings.weight               [vocab, H]
    encoder.layer.{i}.attention.self.query.weight   [H, H]
    ...
    pooler.dense.weight                             [H, H]
    cls.predictions.transform.dense.weight          (heads keep their own names)

Google's TF1 names are translated to this form by `keras_bert_impl.checkpoints.tf1_checkpoint`. One table,
`backbone_weight_table`, then ties each canonical name to a Keras variable, with the layout change in both
directions, so loading and saving cannot drift apart; `keras_bert_impl.checkpoints.head_weights` builds the
same tables for the task and pretraining heads.
"""

import json
import os
import re
import warnings

import numpy as np

from keras_bert_impl.checkpoints import checkpoint_files
from keras_bert_impl.checkpoints.checkpoint_files import CheckpointNotFoundError, CorruptCheckpointError
from keras_bert_impl.config import BertConfig, find_config_file
from keras_bert_impl.utils import file_io, keras_compat
from keras_bert_impl.utils.errors import UserInputError

# Names of head weights a checkpoint may carry, in Hugging Face's naming. They are not part of the
# backbone; from_pretrained keeps them in `backbone.head_weights` for the task and pretraining models.
HEAD_PREFIXES = ("cls.", "classifier.", "qa_outputs.")

# Entries that are not weights (buffers, optimizer state, counters): skipped without a word.
_IGNORED = re.compile(r"(^|\.)(position_ids|token_type_ids)$")


# ---------------------------------------------------------------------------------------------- layouts
def _linear(keras_kernel_shape):
    """HF Linear [out, in] <-> Keras Dense kernel [in, out]."""
    to_keras = lambda w: np.asarray(w).T.reshape(keras_kernel_shape)  # noqa: E731
    from_keras = lambda k: np.asarray(k).reshape(keras_kernel_shape[0], -1).T  # noqa: E731
    return to_keras, from_keras


def _attention_output_kernel(keras_kernel_shape):
    """HF Linear [H_out, heads*head_size] <-> EinsumDense kernel [heads, head_size, H_out]."""
    heads, head_size, hidden = keras_kernel_shape
    to_keras = lambda w: np.asarray(w).T.reshape(heads, head_size, hidden)  # noqa: E731
    from_keras = lambda k: np.asarray(k).reshape(heads * head_size, hidden).T  # noqa: E731
    return to_keras, from_keras


def reshaped_layout(keras_shape):
    """Same values, another shape (a bias [H] <-> [heads, head_size])."""
    to_keras = lambda w: np.asarray(w).reshape(keras_shape)  # noqa: E731
    from_keras = lambda k: np.asarray(k).reshape(-1)  # noqa: E731
    return to_keras, from_keras


_IDENTITY = (np.asarray, np.asarray)


def table_entry(name, variable, layout=_IDENTITY):
    """One row of a weight table: (hf_name, keras_variable, to_keras, from_keras)."""
    return (name, variable, layout[0], layout[1])


def dense_entries(prefix, dense):
    """The rows of a Dense layer stored as a Hugging Face Linear `{prefix}.weight` [out, in], `{prefix}.bias`."""
    return [
        table_entry(prefix + ".weight", dense.kernel, _linear(tuple(dense.kernel.shape))),
        table_entry(prefix + ".bias", dense.bias, reshaped_layout(tuple(dense.bias.shape))),
    ]


def layer_norm_entries(prefix, layer_norm):
    """The rows of a LayerNormalization stored as `{prefix}.weight` (gamma) and `{prefix}.bias` (beta)."""
    return [table_entry(prefix + ".weight", layer_norm.gamma), table_entry(prefix + ".bias", layer_norm.beta)]


def backbone_weight_table(backbone):
    """[(hf_name, keras_variable, to_keras, from_keras)] for every weight of a `BertBackbone`."""
    table = []

    def add(name, variable, layout=_IDENTITY):
        table.append(table_entry(name, variable, layout))

    def add_dense(prefix, dense):
        table.extend(dense_entries(prefix, dense))

    def add_layer_norm(prefix, layer_norm):
        table.extend(layer_norm_entries(prefix, layer_norm))

    emb = backbone.embeddings
    add("embeddings.word_embeddings.weight", emb.word_embeddings.embeddings)
    add("embeddings.position_embeddings.weight", emb.position_embeddings.embeddings)
    add("embeddings.token_type_embeddings.weight", emb.token_type_embeddings.embeddings)
    add_layer_norm("embeddings.LayerNorm", emb.layer_norm)
    for i, block in enumerate(backbone.encoder_blocks):
        p = f"encoder.layer.{i}"
        attention = block.attention
        add_dense(f"{p}.attention.self.query", attention.query)
        add_dense(f"{p}.attention.self.key", attention.key)
        add_dense(f"{p}.attention.self.value", attention.value)
        out = attention.output_dense
        add(f"{p}.attention.output.dense.weight", out.kernel, _attention_output_kernel(tuple(out.kernel.shape)))
        add(f"{p}.attention.output.dense.bias", out.bias)
        add_layer_norm(f"{p}.attention.output.LayerNorm", block.attention_layer_norm)
        add_dense(f"{p}.intermediate.dense", block.intermediate_dense)
        add_dense(f"{p}.output.dense", block.output_dense)
        add_layer_norm(f"{p}.output.LayerNorm", block.output_layer_norm)
    add_dense("pooler.dense", backbone.pooler)
    return table


# ------------------------------------------------------------------------------------- reading files
def canonical_name(name):
    """Hugging Face key -> canonical name: no `bert.` prefix, old LayerNorm gamma/beta renamed."""
    if name.startswith("bert."):
        name = name[len("bert.") :]
    name = re.sub(r"LayerNorm\.gamma$", "LayerNorm.weight", name)
    name = re.sub(r"LayerNorm\.beta$", "LayerNorm.bias", name)
    return name


def _safetensors_shards(index):
    """The shard file names of a `model.safetensors.index.json`, each checked to exist."""
    with open(index, encoding="utf-8") as f:
        try:
            shards = sorted(set(json.load(f)["weight_map"].values()))
        except (json.JSONDecodeError, UnicodeDecodeError, KeyError, TypeError, AttributeError):
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
    single = os.path.join(directory, "model.safetensors")
    index = os.path.join(directory, "model.safetensors.index.json")
    torch_bin = os.path.join(directory, "pytorch_model.bin")
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
            f"{directory}: no weights found; expected model.safetensors, model.safetensors.index.json "
            "or pytorch_model.bin (Hugging Face), or bert_model.ckpt.index (Google)."
        )
    foreign = sorted({k.split(".")[0] for k in raw if k.split(".")[0] in ("roberta", "albert", "distilbert", "electra")})
    if foreign:
        raise UserInputError(f"{directory}: unsupported architecture: the weights are those of {foreign[0]}, not BERT.")
    return {canonical_name(k): np.asarray(v) for k, v in raw.items() if not _IGNORED.search(k)}


def find_tf1_checkpoint(path):
    """The checkpoint prefix of a Google TF1 checkpoint at `path` (a directory or a prefix), or None."""
    path = os.fspath(path)
    if os.path.isfile(path + ".index"):
        return path
    if os.path.isdir(path):
        default = os.path.join(path, "bert_model.ckpt")
        if os.path.isfile(default + ".index"):
            return default
        indexes = sorted(f for f in os.listdir(path) if f.endswith(".index"))
        if len(indexes) == 1:
            return os.path.join(path, indexes[0][: -len(".index")])
    return None


def _read_config(path, config_overrides):
    """`BertConfig.from_pretrained` with its errors as user errors (their messages name the file)."""
    try:
        return BertConfig.from_pretrained(path, **config_overrides)
    except FileNotFoundError as error:
        raise CheckpointNotFoundError(str(error)) from None
    except UserInputError:
        raise
    except ValueError as error:  # not JSON, a missing or out-of-range field
        raise UserInputError(str(error)) from None


# The config.json field holding the Keras dtype policy of the saved model (transformers ignores it).
DTYPE_POLICY_KEY = "keras_dtype_policy"


def stored_config_field(path, key):
    """The value of `key` in the config file of `path` (a directory or a config file); None when the config
    has no such field or cannot be read as a JSON object (e.g. `path` is a TF1 checkpoint prefix)."""
    try:
        with open(find_config_file(path)) as f:
            return json.load(f).get(key)
    except (OSError, ValueError, AttributeError):  # a TF1 prefix, no file, not a JSON object
        return None


def stored_dtype_policy(path):
    """The `keras_dtype_policy` that `save_backbone` wrote to the config of `path`; None when it has none."""
    value = stored_config_field(path, DTYPE_POLICY_KEY)
    return value if isinstance(value, str) else None


def load_weights_dict(path, **config_overrides):
    """Reads any supported checkpoint: returns (BertConfig, canonical weight dict).

    Args:
        path: a Hugging Face directory, a Google TF1 checkpoint directory or prefix, a directory
            written by `BertBackbone.save_pretrained`, or a keras-hub BertBackbone preset directory
            (`keras_bert_impl.checkpoints.keras_hub_preset`; a BertTextClassifier preset's head is read
            as `classifier.*`).
        **config_overrides: fields replacing those of the stored config.

    Raises:
        CheckpointNotFoundError: nothing at `path`, or no config file (a `FileNotFoundError`).
        UserInputError: the config file is not JSON or has a bad field; `CorruptCheckpointError` (one) when
            a weights file is truncated or corrupt. Each message names the file.
    """
    path = os.fspath(path)
    if not os.path.exists(path) and not os.path.isfile(path + ".index"):
        raise CheckpointNotFoundError(f"No checkpoint at {path}")
    tf1_prefix = find_tf1_checkpoint(path)
    if tf1_prefix is not None:
        from keras_bert_impl.checkpoints import tf1_checkpoint  # TensorFlow by nature; imported only for TF1 files.

        config_dir = path if os.path.isdir(path) else os.path.dirname(tf1_prefix)
        config = _read_config(config_dir, config_overrides)
        return config, tf1_checkpoint.read_tf1_checkpoint(tf1_prefix)
    if os.path.isdir(path):
        from keras_bert_impl.checkpoints import keras_hub_preset

        if keras_hub_preset.is_keras_hub_preset(path):
            return keras_hub_preset.read_preset(path, **config_overrides)
    config = _read_config(path, config_overrides)
    directory = path if os.path.isdir(path) else os.path.dirname(find_config_file(path))
    return config, read_hf_weights(directory)


# ------------------------------------------------------------------------------------ loading weights
def _checkpoint_layer_count(weights):
    layers = {int(m.group(1)) for k in weights for m in [re.match(r"encoder\.layer\.(\d+)\.", k)] if m}
    return max(layers) + 1 if layers else 0


def split_head_weights(weights):
    """Splits the canonical dict into (backbone weights, head weights)."""
    heads = {k: v for k, v in weights.items() if k.startswith(HEAD_PREFIXES)}
    return {k: v for k, v in weights.items() if k not in heads}, heads


def assign_backbone_weights(backbone, weights, source="checkpoint", require_pooler=True):
    """Assigns canonical backbone weights to a built `BertBackbone`, checking names and shapes.

    Raises `UserInputError` (a `ValueError`) naming the variable and both shapes on a mismatch, listing
    missing weights, and when the checkpoint's layer count contradicts the config. Unexpected extra
    weights give a warning.
    With `require_pooler=False`, a checkpoint without `pooler.dense.*` (transformers' BertFor
    QuestionAnswering and BertForTokenClassification have none) leaves the pooler as initialized.
    """
    layers_in_checkpoint = _checkpoint_layer_count(weights)
    if layers_in_checkpoint != backbone.config.num_hidden_layers:
        raise UserInputError(
            f"{source}: the config says num_hidden_layers={backbone.config.num_hidden_layers} but the "
            f"checkpoint has {layers_in_checkpoint} encoder layers."
        )
    table = backbone_weight_table(backbone)
    if not require_pooler:
        table = [entry for entry in table if entry[0] in weights or not entry[0].startswith("pooler.")]
    missing = [name for name, *_ in table if name not in weights]
    if missing:
        shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
        raise UserInputError(f"{source}: missing weights {shown}.")
    assign_table(table, weights, source)
    unused = sorted(set(weights) - {name for name, *_ in table})
    if unused:
        warnings.warn(f"{source}: weights not used by the backbone: {', '.join(unused[:10])}", stacklevel=3)



# The shape-mismatch error of `assign_table`; `kind` is the last part of the name (weight, bias, ...).
BACKBONE_MISMATCH = (
    "{source}: shape mismatch for {name}: the checkpoint has {found}, the model built from its config expects "
    "{expected}. Does the config match the weights?"
)


def assign_table(table, weights, source="checkpoint", mismatch=BACKBONE_MISMATCH):
    """Assigns `weights[hf_name]` to every variable of `table`, first checking every shape.

    Raises `UserInputError` (a `ValueError`) with `mismatch` (a format string over `source`, `name`, `kind`, `found` and
    `expected`, the shapes in Hugging Face layout) when a shape differs; nothing is assigned then.
    """
    for name, variable, _, from_keras in table:
        found = tuple(np.shape(weights[name]))
        expected = tuple(from_keras(np.zeros(tuple(variable.shape), "float32")).shape)
        if found != expected:
            kind = name.rsplit(".", 1)[-1]
            raise UserInputError(mismatch.format(source=source, name=name, kind=kind, found=found, expected=expected))
    for name, variable, to_keras, _ in table:
        variable.assign(to_keras(weights[name]).astype("float32"))


# ------------------------------------------------------------------------------------------- saving
def table_weights_dict(table):
    """{hf_name: float32 numpy array in Hugging Face layout} of the variables of `table`."""
    import keras

    return {
        name: np.ascontiguousarray(from_keras(keras.ops.convert_to_numpy(variable.value)).astype("float32"))
        for name, variable, _, from_keras in table
    }


def backbone_weights_dict(backbone):
    """The canonical (Hugging Face layout) weight dict of a `BertBackbone`."""
    return table_weights_dict(backbone_weight_table(backbone))


def hf_label_config(num_labels, label_names=None):
    """`id2label` / `label2id` entries of a Hugging Face task config (`LABEL_i` when names are not given)."""
    names = list(label_names) if label_names is not None else [f"LABEL_{i}" for i in range(num_labels)]
    if len(names) != num_labels:
        raise ValueError(f"{len(names)} label names given for {num_labels} outputs.")
    return {"id2label": {str(i): name for i, name in enumerate(names)}, "label2id": {name: i for i, name in enumerate(names)}}


def check_not_quantized(model, directory):
    """Refuses to write a Hugging Face directory (float weights) of a model with quantized layers."""
    quantized = [layer.path for layer in keras_compat.flatten_layers(model, include_self=False) if layer.quantization_mode]
    if quantized:
        raise ValueError(
            f"{directory}: a Hugging Face directory holds float weights, and {len(quantized)} layers of this model are "
            f"quantized (e.g. {quantized[0]}); save it with model.save('model.keras'), or save_pretrained before "
            "quantize()."
        )


def save_backbone(backbone, directory, head_weights=None, architecture="BertModel", extra_config=None):
    """Writes `config.json` + `model.safetensors` as Hugging Face's BertModel (or BertFor*) would.

    `architecture` goes to config.json's `architectures` (e.g. "BertForSequenceClassification"), and
    `extra_config` entries (e.g. `id2label`) are added to config.json. A causal backbone
    (`attention_direction="causal"`) gets `is_decoder: true`, with which transformers attends causally.

    model.safetensors carries the SHA-256 of its tensors in its metadata, verified when it is read
    (`checkpoint_files.read_safetensors`). Each file is written under a temporary name and renamed
    (`file_io.atomic_path`), config.json last and any older config.json removed first: a run killed
    while saving leaves no config.json, so the directory never looks loadable with weights and config
    that do not belong together. A write that fails (a full disk) raises `UserInputError` naming the file;
    a backbone with quantized layers (`quantize("int8")`) raises `ValueError`.
    """
    from safetensors.numpy import save_file

    check_not_quantized(backbone, directory)
    os.makedirs(directory, exist_ok=True)
    weights = backbone_weights_dict(backbone)
    for name, value in (head_weights or {}).items():
        weights[name] = np.ascontiguousarray(np.asarray(value, dtype="float32"))
    config = dict(backbone.config.to_dict(), model_type="bert", architectures=[architecture], **(extra_config or {}))
    if backbone.config.attention_direction == "causal":
        config["is_decoder"] = True  # transformers' BertModel attends causally with it
    policy = backbone.dtype_policy
    policy_name = getattr(policy, "default_policy", policy).name  # a DTypePolicyMap's default policy
    if policy_name != "float32":
        config[DTYPE_POLICY_KEY] = policy_name
    from safetensors import SafetensorError

    config_path = os.path.join(directory, "config.json")
    weights_path = os.path.join(directory, "model.safetensors")
    if os.path.lexists(config_path):
        os.remove(config_path)
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
