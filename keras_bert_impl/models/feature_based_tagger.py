"""The feature-based approach of the paper (Section 5.3, Table 7): a BiLSTM tagger on frozen BERT features.

The paper's best feature-based CoNLL-2003 system concatenates the token representations of the top
four hidden layers of the pretrained model (no fine-tuning) and feeds them to a randomly initialized
two-layer 768-dimensional BiLSTM before the classification layer. Table 7's other rows (the embeddings,
one layer, a learned weighted sum of layers) are the presets of `keras_bert_impl.models.feature_modes`
(`feature_mode=`); a weighted sum is a `ScalarMix` trained with the tagger.

Labels, masking and decoding follow `keras_bert_impl.models.token_classifier`: the label of a word is on its
first sub-token, -100 elsewhere; `decode` takes the argmax at the word positions.

`save_pretrained` writes a Hugging Face BertModel directory (transformers reads the backbone) whose
model.safetensors also holds the tagger's weights under `classifier.feature_tagger.*` (rows of
`checkpoints.head_weights`; transformers ignores them), and whose config.json holds the tagger's settings
under `feature_based_tagger`; `from_pretrained` builds the same tagger from it with its trained weights.
"""

import inspect

import keras
import numpy as np
from keras import ops

from keras_bert_impl.checkpoints import model_io
from keras_bert_impl.layers.scalar_mix import ScalarMix
from keras_bert_impl.models import losses
from keras_bert_impl.models.backbone import BertBackbone
from keras_bert_impl.models.feature_modes import check_feature_layers, feature_mode_layers
from keras_bert_impl.models.losses import IGNORE_LABEL_ID
from keras_bert_impl.models.stored_settings import ClassCount, StoredSetting
from keras_bert_impl.models.token_classifier import decode_tags
from keras_bert_impl.preprocessors.token_classifier_preprocessor import BertTokenClassifierPreprocessor
from keras_bert_impl.models.task_model import BertTaskModel, renamed_argument
from keras_bert_impl.preprocessors import input_checks
from keras_bert_impl.utils import keras_compat
from keras_bert_impl.utils.errors import UserInputError

# config.json's entry with a feature-based tagger's settings, and the prefix of its weights.
FEATURE_TAGGER_KEY = "feature_based_tagger"
FEATURE_TAGGER_PREFIX = "classifier.feature_tagger"
# The settings a saved feature-based tagger fixes (its weights' shapes and what they were trained on).
FEATURE_TAGGER_SETTINGS = ("feature_layers", "feature_combine", "lstm_units", "num_lstm_layers")


class FrozenBertFeatures(keras.layers.Layer):
    """The chosen hidden states of a backbone that always runs in inference mode, concatenated or as a list.

    A functional model passes its own `training` flag to every layer whose `call` accepts one, so the
    backbone is called from here, explicitly with `training=False`: its dropout never applies.

    Args:
        backbone: a `BertBackbone` with `output_hidden_states=True`.
        feature_layers: indices into its hidden states (0 = embeddings, -1 = last layer).
        concatenate: return one tensor [B, T, n * H] (True) or the list n x [B, T, H] (False, for a
            `ScalarMix`).
    """

    def __init__(self, backbone, feature_layers, concatenate=True, **kwargs):
        super().__init__(**kwargs)
        self.backbone = backbone
        self.feature_layers = tuple(feature_layers)
        self.concatenate = bool(concatenate)

    def call(self, inputs):
        hidden_states = self.backbone(inputs, training=False)["hidden_states"]  # L+1 x [B, T, H]
        selected = [ops.cast(hidden_states[i], "float32") for i in self.feature_layers]
        if not self.concatenate:
            return selected  # n x [B, T, H]
        return ops.concatenate(selected, axis=-1)  # [B, T, len(feature_layers) * H]

    def compute_output_shape(self, input_shape):
        shape = tuple(input_shape["token_ids"])
        if not self.concatenate:
            return [shape + (self.backbone.config.hidden_size,) for _ in self.feature_layers]
        return shape + (len(self.feature_layers) * self.backbone.config.hidden_size,)


class TaggerSettings(StoredSetting):
    """config.json's `feature_based_tagger` entry: the tagger's architecture (`FEATURE_TAGGER_SETTINGS`) and its
    `feature_mode`; `from_pretrained` takes each setting given, else the saved tagger's, else the constructor's
    default (`_tagger_settings`), and refuses one that differs from the saved tagger's."""

    arguments = (*FEATURE_TAGGER_SETTINGS, "feature_mode")
    keys = (FEATURE_TAGGER_KEY,)

    def save(self, model, label_names=None):
        task_config = model.task_config()
        return {FEATURE_TAGGER_KEY: {key: task_config[key] for key in self.arguments}}

    def load(self, checkpoint, backbone, given):
        return _tagger_settings(checkpoint.path, checkpoint.setting(FEATURE_TAGGER_KEY),
                                backbone.config.num_hidden_layers, **{key: given.get(key) for key in self.arguments})


def _saves_a_tagger(checkpoint):
    """Whether a directory holds a feature-based tagger: a BertModel directory with a `feature_based_tagger` entry."""
    return checkpoint.setting(FEATURE_TAGGER_KEY) is not None


@model_io.register_task(architectures=("BertModel",), pipeline="token-classification", pipeline_aliases=("ner",),
                        serving="token_classifier", recognizes=_saves_a_tagger)
@keras.saving.register_keras_serializable(package="keras_bert_impl")
class BertFeatureBasedTagger(BertTaskModel):
    """Frozen BERT -> concatenation (or learned weighted sum) of hidden layers -> stacked BiLSTM -> Dense.

    The backbone must return its hidden states (`output_hidden_states=True`); it is frozen
    (`trainable=False`) and always runs in inference mode (no dropout), so its features are those of
    the pretrained model, as in the paper. The BiLSTMs skip padding positions (`padding_mask`).

    Inputs: the backbone's dict {`token_ids`, `segment_ids`, `padding_mask`} ([batch, seq] int32).
    Output: `logits` [batch, seq, num_classes] (float32).
    Train with `model.fit(x, labels)`, labels [batch, seq] with -100 at the positions to ignore; the
    loss is the mean cross-entropy over the labelled positions; fit also reports `token_accuracy`.

    Args:
        backbone: a `BertBackbone` built with `output_hidden_states=True`.
        num_classes: number of tags K (formerly `num_labels`, still accepted with a DeprecationWarning).
        feature_layers: indices into the backbone's hidden states (embeddings are index 0, so -1 is
            the last encoder layer); the paper's best: the top four, (-1, -2, -3, -4).
        lstm_units: units of each LSTM direction (the paper: 768).
        num_lstm_layers: number of stacked BiLSTM layers (the paper: 2).
        dropout: dropout on the features and between the layers.
        feature_combine: "concat" (the states side by side, [B, T, n * H]) or "scalar_mix" (a learned
            `ScalarMix` of them, [B, T, H]; its weights train with the tagger, the backbone stays frozen).
        feature_mode: a Table 7 preset of `keras_bert_impl.models.feature_modes` ("embeddings",
            "second_to_last", "last", "sum_last_four", "concat_last_four", "sum_all"); when given it sets
            `feature_layers` and `feature_combine`.

    Examples:

    >>> from keras_bert_impl.config import BertConfig
    >>> backbone = BertBackbone(BertConfig.preset("bert_tiny"), output_hidden_states=True)
    >>> tagger = BertFeatureBasedTagger(backbone, num_classes=5, feature_layers=(-1, -2, -3), lstm_units=8,
    ...                                 num_lstm_layers=1)
    >>> x = {"token_ids": keras.ops.ones((2, 8), "int32"), "segment_ids": keras.ops.zeros((2, 8), "int32"),
    ...      "padding_mask": keras.ops.ones((2, 8), "int32")}
    >>> tuple(tagger(x).shape)
    (2, 8, 5)
    >>> mixed = BertFeatureBasedTagger(backbone, num_classes=5, feature_mode="sum_all", lstm_units=8, num_lstm_layers=1)
    >>> mixed.feature_layers, mixed.feature_combine, tuple(mixed(x).shape)  # bert_tiny: 2 encoder layers
    ((1, 2), 'scalar_mix', (2, 8, 5))
    """

    preprocessor_class = BertTokenClassifierPreprocessor
    # A BertModel directory (transformers reads the backbone) told apart by its `feature_based_tagger` entry; the
    # tagger's own weights are ours (classifier.feature_tagger.*), the settings its entry's.
    stored_settings = (TaggerSettings(),
                       ClassCount(f"{FEATURE_TAGGER_PREFIX}.classifier.weight", "no feature-based tagger in the checkpoint"))
    backbone_arguments = {"output_hidden_states": True}
    renamed_arguments = {"num_labels": "num_classes"}

    def __init__(
        self,
        backbone,
        num_classes=None,
        feature_layers=(-1, -2, -3, -4),
        lstm_units=768,
        num_lstm_layers=2,
        dropout=0.1,
        feature_combine="concat",
        feature_mode=None,
        **kwargs,
    ):
        num_classes = renamed_argument(num_classes, kwargs, "num_labels", "num_classes", "BertFeatureBasedTagger")
        if num_classes is None:
            raise TypeError("BertFeatureBasedTagger needs num_classes, the number of tags.")
        if not backbone.output_hidden_states:
            raise ValueError("BertFeatureBasedTagger needs a backbone built with output_hidden_states=True.")
        backbone.trainable = False
        if feature_mode is not None:
            feature_layers, feature_combine = feature_mode_layers(feature_mode, backbone.config.num_hidden_layers)
        feature_layers = check_feature_layers(feature_layers, feature_combine, backbone.config.num_hidden_layers)

        # === Layers ===
        feature_dropout = keras.layers.Dropout(dropout, name="feature_dropout")
        bilstms = [
            keras.layers.Bidirectional(
                keras.layers.LSTM(lstm_units, return_sequences=True, dropout=0.0),
                merge_mode="concat",
                name=f"bilstm_{i}",
            )
            for i in range(num_lstm_layers)
        ]
        classifier = keras.layers.Dense(num_classes, name="classifier")

        # === Functional graph ===
        inputs = {k: v for k, v in backbone.input.items() if k in ("token_ids", "segment_ids", "padding_mask")}
        concatenate = feature_combine == "concat"
        features = FrozenBertFeatures(backbone, feature_layers, concatenate, name="features")(inputs)
        if concatenate:
            scalar_mix = None  # features: [B, T, n * H]
        else:
            scalar_mix = ScalarMix(name="scalar_mix")
            features = scalar_mix(features)  # n x [B, T, H] -> [B, T, H]
        lstm_mask = ops.cast(inputs["padding_mask"], "bool")  # [B, T]
        x = feature_dropout(features)
        for i, bilstm in enumerate(bilstms):
            x = bilstm(x, mask=lstm_mask)  # [B, T, 2 * lstm_units]
            if i + 1 < len(bilstms):
                x = keras.layers.Dropout(dropout, name=f"bilstm_dropout_{i}")(x)
        logits = keras.layers.Activation("linear", dtype="float32", name="logits")(classifier(x))  # [B, T, K]
        super().__init__(inputs=inputs, outputs=logits, **kwargs)
        # A `trainable=True` argument (every reload passes the saved one) sets all layers trainable: refreeze
        # each layer (under TensorFlow, setting the backbone's flag alone leaves its layers trainable here).
        for layer in keras_compat.flatten_layers(backbone):
            layer.trainable = False

        # === Config ===
        self.backbone = backbone
        self.num_classes = int(num_classes)
        self.feature_layers = feature_layers
        self.lstm_units = int(lstm_units)
        self.num_lstm_layers = int(num_lstm_layers)
        self.dropout = float(dropout)
        self.feature_combine = feature_combine
        self.feature_mode = feature_mode
        self.scalar_mix = scalar_mix
        self.bilstms = bilstms
        self.use_crf = False
        self.classifier = classifier
        self.add_mean_metrics("token_accuracy")

    def check_labels(self, y):
        """Label ids 0..num_classes-1, or -100 for "no label", per word (raw text) or per token (token ids)."""
        return input_checks.check_tag_ids(y, self.num_classes)

    def check_inputs(self, x, y):
        input_checks.check_one_label_per_token(x, y)

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        self.token_accuracy.update_state(*losses.token_hits(y, y_pred, sample_weight))
        return losses.token_classification_loss(y, y_pred, sample_weight)

    def decode(self, logits, label_mask):
        """Argmax label ids [B, T] (numpy int32) at the positions of `label_mask`; -100 elsewhere."""
        label_mask = np.asarray(ops.convert_to_numpy(label_mask)).astype("int32")
        tags = np.argmax(np.asarray(ops.convert_to_numpy(logits)), axis=-1)
        return np.where(label_mask > 0, tags, IGNORE_LABEL_ID).astype("int32")

    def task_config(self):
        return {
            "num_classes": self.num_classes,
            "feature_layers": list(self.feature_layers),
            "lstm_units": self.lstm_units,
            "num_lstm_layers": self.num_lstm_layers,
            "dropout": self.dropout,
            "feature_combine": self.feature_combine,
            "feature_mode": self.feature_mode,
        }

    def decode_in_graph(self, logits, label_mask):
        """The tags of `decode` in `keras.ops`, traceable (what the SavedModel's graph runs): int32 [B, T]."""
        return decode_tags(logits, label_mask)

    # ------------------------------------------------------------------------------ model directories
    def head_tables(self):
        rows = []
        if self.scalar_mix is not None:
            rows += model_io.scalar_mix_table(FEATURE_TAGGER_PREFIX, self.scalar_mix)
        for i, bilstm in enumerate(self.bilstms):
            rows += model_io.bilstm_table(f"{FEATURE_TAGGER_PREFIX}.lstm_{i}", bilstm)
        rows += model_io.dense_entries(f"{FEATURE_TAGGER_PREFIX}.classifier", self.classifier)
        return {"feature-based tagger": rows}

    @classmethod
    def head_is_stored(cls, checkpoint):
        """A directory without a saved tagger is a plain BERT: its tagger starts random without a warning."""
        return _saves_a_tagger(checkpoint)


# The paper's values, for a tagger built on a checkpoint without a saved one: the constructor's defaults.
ARCHITECTURE_DEFAULTS = {name: inspect.signature(BertFeatureBasedTagger).parameters[name].default
                         for name in FEATURE_TAGGER_SETTINGS}


def _tagger_settings(path, saved, num_hidden_layers, feature_mode=None, **requested):
    """The constructor's architecture arguments for `from_pretrained`: each requested one (None: not
    requested), else the saved tagger's, else the default (`feature_mode`, when given, sets the feature layers
    and combine); UserInputError when one differs from the saved tagger's."""
    saved = saved or {}
    settings = {key: requested[key] if requested[key] is not None else saved.get(key, default)
                for key, default in ARCHITECTURE_DEFAULTS.items()}
    if feature_mode is not None:
        settings["feature_layers"], settings["feature_combine"] = feature_mode_layers(feature_mode, num_hidden_layers)
    settings["feature_layers"] = check_feature_layers(settings["feature_layers"], settings["feature_combine"],
                                                      num_hidden_layers)
    for key in FEATURE_TAGGER_SETTINGS:
        if key in saved and _normalized(key, settings[key], num_hidden_layers) != _normalized(
                key, saved[key], num_hidden_layers):
            raise UserInputError(
                f"{path}: the saved feature-based tagger has {key}={saved[key]!r} (config.json {FEATURE_TAGGER_KEY}), not "
                f"{settings[key]!r}; leave it unset to load the saved tagger.")
    return dict(settings, feature_mode=feature_mode or saved.get("feature_mode"))


def _normalized(key, value, num_hidden_layers):
    """A setting as compared by `_tagger_settings`: feature layers as non-negative hidden-state indices."""
    if key == "feature_layers":
        return tuple(int(i) % (num_hidden_layers + 1) for i in value)
    return value
