"""Weight tables: each Keras variable of a model tied to its name and layout in a checkpoint.

Every checkpoint is read into one canonical form: a dict of numpy arrays under Hugging Face's names without
the `bert.` prefix, in Hugging Face's layouts (a Linear weight is [out, in]):

    embeddings.word_embeddings.weight               [vocab, H]
    encoder.layer.{i}.attention.self.query.weight   [H, H]
    ...
    pooler.dense.weight                             [H, H]
    cls.predictions.transform.dense.weight          (heads keep their own names)

A table is a list of rows `(hf_name, keras_variable, to_keras, from_keras)`: one table, used in both
directions, so loading and saving cannot drift apart. `backbone_weight_table` is the backbone's;
`keras_bert_impl.checkpoints.head_weights` builds the heads' rows from the same entries. Google's TF1 names
are translated to the canonical form by `keras_bert_impl.checkpoints.tf1_checkpoint`, keras-hub's paths by
`keras_bert_impl.checkpoints.keras_hub_preset`.
"""

import re
import warnings

import numpy as np

from keras_bert_impl.utils.errors import UserInputError

# Names of head weights a checkpoint may carry, in Hugging Face's naming. They are not part of the
# backbone; the task and pretraining models load them (`keras_bert_impl.checkpoints.head_weights`).
HEAD_PREFIXES = ("cls.", "classifier.", "qa_outputs.")


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
    """{hf_name: float32 numpy array in Hugging Face layout} of the variables of `table` (a LoRA layer's kernel
    is the tensor W + (alpha / rank) A B: the adapters merged)."""
    import keras

    def value(variable):
        return variable.value if isinstance(variable, keras.Variable) else variable

    return {
        name: np.ascontiguousarray(from_keras(keras.ops.convert_to_numpy(value(variable))).astype("float32"))
        for name, variable, _, from_keras in table
    }


def backbone_weights_dict(backbone):
    """The canonical (Hugging Face layout) weight dict of a `BertBackbone`."""
    return table_weights_dict(backbone_weight_table(backbone))
