"""The feature-based approach of the paper (Section 5.3, Table 7): a BiLSTM tagger on frozen BERT features.

The paper's best feature-based CoNLL-2003 system concatenates the token representations of the top
four hidden layers of the pretrained model (no fine-tuning) and feeds them to a randomly initialized
two-layer 768-dimensional BiLSTM before the classification layer. Table 7's other rows (the embeddings,
one layer, a learned weighted sum of layers) are the presets of `keras_bert_impl.models.feature_modes`
(`feature_mode=`); a weighted sum is a `ScalarMix` trained with the tagger.

Labels, masking and decoding follow `keras_bert_impl.models.token_classifier`: the label of a word is on its
first sub-token, -100 elsewhere; `decode` takes the argmax at the word positions.
"""

import keras
import numpy as np
from keras import ops

from keras_bert_impl.layers.scalar_mix import ScalarMix
from keras_bert_impl.models import losses
from keras_bert_impl.models.backbone import BertBackbone
from keras_bert_impl.models.feature_modes import check_feature_layers, feature_mode_layers
from keras_bert_impl.models.losses import IGNORE_LABEL_ID
from keras_bert_impl.preprocessors.token_classifier_preprocessor import BertTokenClassifierPreprocessor
from keras_bert_impl.models.task import BertTask, renamed_argument


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


@keras.saving.register_keras_serializable(package="keras_bert_impl")
class BertFeatureBasedTagger(BertTask):
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
        for layer in backbone._flatten_layers(include_self=True, recursive=True):
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
        self.use_crf = False
        self.classifier = classifier
        self.add_mean_metrics("token_accuracy")

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

    @classmethod
    def from_pretrained(cls, path, num_classes=None, preprocessor="auto", **kwargs):
        """A tagger on the frozen backbone of a checkpoint (see `BertBackbone.from_pretrained`).

        Args:
            path: checkpoint directory or prefix.
            num_classes: number of tags.
            preprocessor: "auto": the directory's vocabulary as the model's preprocessor when it holds
                one (else none); or a preprocessor, or None.
            **kwargs: the other constructor arguments.
        """
        backbone = BertBackbone.from_pretrained(path, output_hidden_states=True)
        return cls(backbone, num_classes=num_classes, preprocessor=cls.pretrained_preprocessor(path, preprocessor), **kwargs)
