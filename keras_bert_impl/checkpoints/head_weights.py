"""Head weights: the task and pretraining heads' variables under their Hugging Face names.

Each head kind has a table builder returning `[(hf_name, keras_variable, to_keras, from_keras)]`, the
rows of `weight_tables.backbone_weight_table`, so a head loads and saves through the same layout changes:

    classifier_table(dense)          classifier.weight [C, H], classifier.bias [C]
                                     (BertForSequenceClassification, BertForMultipleChoice,
                                     BertForTokenClassification)
    crf_table(crf)                   classifier.crf_transitions [K, K] (ours; transformers ignores it)
    span_table(dense)                qa_outputs.weight [2, H], qa_outputs.bias [2]
    bilstm_table(prefix, bilstm)     {prefix}.bilstm.{forward,backward}.{kernel,recurrent_kernel,bias} (ours:
                                     the "+ BiLSTM" head option of the token tasks, in Keras' LSTM layout)
    scalar_mix_table(prefix, mix)    {prefix}.scalar_mix.scalar_parameters [n], {prefix}.scalar_mix.gamma [1] (ours:
                                     the learned layer weights of the feature-based tagger)
    masked_lm_table(masked_lm_head)  cls.predictions.transform.{dense,LayerNorm}.*, cls.predictions.bias
    next_sentence_table(dense)       cls.seq_relationship.weight [2, H], cls.seq_relationship.bias [2]

The builders take layers, not models: each model class lists its heads with them (its `head_tables()`),
through `model_io`.
"""

from keras_bert_impl.checkpoints.weight_tables import (
    assign_table,
    dense_entries,
    layer_norm_entries,
    reshaped_layout,
    table_entry,
    table_weights_dict,
)
from keras_bert_impl.utils.errors import UserInputError

CRF_TRANSITIONS_NAME = "classifier.crf_transitions"

_HEAD_MISMATCH = (
    "{source}: shape mismatch for {name}: the checkpoint has {kind} {found}, the model expects {kind} {expected} "
    "(the checkpoint's head was made for another number of outputs or another hidden size)."
)


def classifier_table(dense):
    """The `classifier.*` rows of a Dense classification or scoring layer."""
    return dense_entries("classifier", dense)


def crf_table(crf):
    """The `classifier.crf_transitions` row of a `CRF` layer."""
    return [table_entry(CRF_TRANSITIONS_NAME, crf.transitions)]


def span_table(dense):
    """The `qa_outputs.*` rows of the span head, a Dense(2)."""
    return dense_entries("qa_outputs", dense)


def bilstm_table(prefix, bilstm):
    """The rows of a `keras.layers.Bidirectional(LSTM)` under `{prefix}.bilstm.` (prefix "classifier" or
    "qa_outputs", so that `BertBackbone.from_pretrained` keeps them among the head weights), each direction's
    `kernel` [in, 4u], `recurrent_kernel` [u, 4u] and `bias` [4u] in Keras' layout (gates i, f, c, o).
    transformers' BERT classes have no LSTM: they do not load these weights."""
    rows = []
    for direction, layer in (("forward", bilstm.forward_layer), ("backward", bilstm.backward_layer)):
        cell = layer.cell
        for name, variable in (("kernel", cell.kernel), ("recurrent_kernel", cell.recurrent_kernel),
                               ("bias", cell.bias)):
            rows.append(table_entry(f"{prefix}.bilstm.{direction}.{name}", variable))
    return rows


def scalar_mix_table(prefix, scalar_mix):
    """The rows of a `ScalarMix` under `{prefix}.scalar_mix.`: its `scalar_parameters` [n] and its scalar
    `gamma`, stored as [1]."""
    return [
        table_entry(f"{prefix}.scalar_mix.scalar_parameters", scalar_mix.scalar_parameters),
        table_entry(f"{prefix}.scalar_mix.gamma", scalar_mix.gamma, reshaped_layout(())),
    ]


def masked_lm_table(head):
    """The `cls.predictions.*` rows of a `MaskedLMHead` (its projection is the tied word embedding)."""
    return [
        *dense_entries("cls.predictions.transform.dense", head.transform_dense),
        *layer_norm_entries("cls.predictions.transform.LayerNorm", head.transform_layer_norm),
        table_entry("cls.predictions.bias", head.output_bias),
    ]


def next_sentence_table(dense):
    """The `cls.seq_relationship.*` rows of the next-sentence head, a Dense(2)."""
    return dense_entries("cls.seq_relationship", dense)


def assign_head_weights(table, weights, source="checkpoint"):
    """Assigns one head's weights from `weights` (Hugging Face names); returns whether the head was there.

    Args:
        table: the head's rows, from one of the builders above.
        weights: a dict {hf_name: array}, e.g. `backbone.head_weights`.
        source: the checkpoint, for error messages.

    Returns:
        False when none of the head's weights is in `weights` (the caller warns or keeps the
        initialization), True once all are assigned.

    Raises:
        ValueError: only part of the head is there, or a shape differs (the message names the weight
            and both shapes, in Hugging Face layout).
    """
    names = [name for name, *_ in table]
    present = [name for name in names if name in weights]
    if not present:
        return False
    if len(present) < len(names):
        missing = [name for name in names if name not in weights]
        raise UserInputError(
            f"{source}: has {', '.join(present)} but not {', '.join(missing)}; the head is incomplete."
        )
    assign_table(table, weights, source, mismatch=_HEAD_MISMATCH)
    return True


def head_weights_dict(table):
    """{hf_name: float32 numpy array in Hugging Face layout} of a head's variables."""
    return table_weights_dict(table)
