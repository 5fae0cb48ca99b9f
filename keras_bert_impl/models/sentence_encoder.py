"""BertSentenceEncoder: sentence embeddings (sentence-transformers' Transformer + Pooling + Normalize).

Each text is packed `[CLS] text [SEP]` and runs through the backbone alone; its token vectors are pooled
into one vector (`layers.SentencePooling`: mean, CLS, max or mean-sqrt-len) and, for a model with a
Normalize module, L2-normalized:

    embedding = normalize(pool(sequence_output, padding_mask))      # [batch, columns, dim], float32

The inputs hold K texts per example ([batch, K, seq]): one to encode (`encode` feeds [n, 1, seq]), two or
more to train with a contrastive loss (`models.sentence_losses`), whose columns are embedded in one pass.
"""

import keras
import numpy as np
from keras import ops

from keras_bert_impl.checkpoints import model_io
from keras_bert_impl.data import batching
from keras_bert_impl.layers.sentence_pooling import SentencePooling, pooling_modes
from keras_bert_impl.models.backbone import BertBackbone
from keras_bert_impl.models.multiple_choice import MergeChoices
from keras_bert_impl.models.sentence_losses import MultipleNegativesRankingLoss
from keras_bert_impl.models.stored_settings import StoredSetting
from keras_bert_impl.models.task_model import BertTaskModel
from keras_bert_impl.preprocessors import input_checks
from keras_bert_impl.preprocessors.sentence_encoder_preprocessor import BertSentenceEncoderPreprocessor
from keras_bert_impl.utils.errors import UserInputError

_INPUT_NAMES = ("token_ids", "segment_ids", "padding_mask")
# encode() shows a progress bar when the texts fill more batches than this.
PROGRESS_BATCHES = 10


class SplitColumns(keras.layers.Layer):
    """[batch * columns, dim] -> [batch, columns, dim], the columns read from `token_ids` [batch, columns, seq]."""

    def call(self, embeddings, token_ids):
        shape = ops.shape(token_ids)
        return ops.reshape(embeddings, (shape[0], shape[1], ops.shape(embeddings)[-1]))

    def compute_output_shape(self, embeddings_shape, token_ids_shape):
        return (token_ids_shape[0], token_ids_shape[1], embeddings_shape[-1])


class SentenceModuleSettings(StoredSetting):
    """`pooling` and `normalize`, kept in a sentence-transformers directory's modules (1_Pooling/config.json, a
    Normalize module) rather than config.json: given, else the directory's, else mean pooling, not normalized.
    A Pooling module made for another embedding size than the backbone's is a `UserInputError`."""

    arguments = ("pooling", "normalize")
    head = False

    def load(self, checkpoint, backbone, given):
        modules = checkpoint.sentence_modules
        if modules is not None and modules.embedding_dimension not in (None, backbone.config.hidden_size):
            raise UserInputError(f"{checkpoint.path}: the Pooling module pools vectors of size "
                                 f"{modules.embedding_dimension}; the model's hidden size is "
                                 f"{backbone.config.hidden_size}.")
        return {"pooling": given.get("pooling", "mean" if modules is None else modules.pooling),
                "normalize": given.get("normalize", modules is not None and modules.normalize)}


def _holds_sentence_modules(checkpoint):
    """Whether a `ModelDirectory` is a sentence-transformers directory (its modules.json)."""
    return checkpoint.sentence_modules is not None


# A sentence-transformers directory is a BertModel directory told apart by its modules.json; its pooling has
# no weights, so every task loads its backbone from it.
@model_io.register_task(architectures=("BertModel",), pipeline="sentence-similarity", serving="sentence_encoder",
                        recognizes=_holds_sentence_modules, backbone_source=True)
@keras.saving.register_keras_serializable(package="keras_bert_impl")
class BertSentenceEncoder(BertTaskModel):
    """A `BertBackbone` whose pooled token vectors are sentence embeddings, as a sentence-transformers model.

    Inputs: a dict {`token_ids`, `segment_ids`, `padding_mask`}, each int32 [batch, columns, seq], every text
    packed `[CLS] text [SEP]` (`BertSentenceEncoderPreprocessor`).
    Output: the embeddings, float32 [batch, columns, dim] (dim = hidden size x number of pooling modes).

    `encode(texts)` returns numpy [n, dim] as `SentenceTransformer.encode` does. `compile()` without arguments
    trains with in-batch negatives (`MultipleNegativesRankingLoss`, scale 20) on (anchors, positives[,
    negatives]); `compile(loss=CoSENTLoss())` on scored pairs, `compile(loss=SimCSELoss())` on (texts, texts);
    with the paper's AdamW (see `BertTaskModel.compile`). `fit` takes raw text: x a tuple of columns of
    texts, y the scores of scored pairs (none for the ranking losses).

    Args:
        backbone: a `BertBackbone`.
        pooling: "mean" (default), "cls", "max", "mean_sqrt_len_tokens", or a list of them (concatenated).
        normalize: L2-normalize the embeddings (a sentence-transformers Normalize module).
        **kwargs: `preprocessor` (below) and the arguments of `BertTaskModel`.

    Keyword Args:
        preprocessor: a `BertSentenceEncoderPreprocessor`, for raw text (or None).

    Examples:

    >>> from keras_bert_impl.config import BertConfig
    >>> model = BertSentenceEncoder(BertBackbone(BertConfig.preset("bert_tiny")), normalize=True)
    >>> embeddings = model({
    ...     "token_ids": keras.ops.ones((2, 1, 8), "int32"),
    ...     "segment_ids": keras.ops.zeros((2, 1, 8), "int32"),
    ...     "padding_mask": keras.ops.ones((2, 1, 8), "int32"),
    ... })
    >>> tuple(embeddings.shape)
    (2, 1, 128)

    Load a sentence-transformers directory (or any BERT checkpoint) with
    `BertSentenceEncoder.from_pretrained(path)`; `save_pretrained(directory)` writes one that
    `SentenceTransformer(directory)` loads.
    """

    reads_pooled_output = False
    preprocessor_class = BertSentenceEncoderPreprocessor
    stored_settings = (SentenceModuleSettings(),)
    backbone_arguments = {"require_pooler": False}

    def __init__(self, backbone, pooling="mean", normalize=False, **kwargs):
        pooling = pooling_modes(pooling)
        # === Layers ===
        pooling_layer = SentencePooling(pooling, name="pooling")
        normalization = keras.layers.UnitNormalization(axis=-1, dtype="float32", name="normalize") if normalize else None

        # === Functional graph ===
        inputs = {name: keras.Input(shape=(None, None), dtype="int32", name=name) for name in _INPUT_NAMES}
        merge = MergeChoices(name="merge_columns")
        flat = {name: merge(inputs[name]) for name in _INPUT_NAMES}  # [B*K, T]
        sequence_output = backbone(flat)["sequence_output"]  # [B*K, T, H]
        embeddings = pooling_layer(sequence_output, flat["padding_mask"])  # [B*K, D]
        if normalization is not None:
            embeddings = normalization(embeddings)
        embeddings = SplitColumns(name="split_columns")(embeddings, inputs["token_ids"])  # [B, K, D]
        super().__init__(inputs=inputs, outputs=embeddings, **kwargs)

        # === Config ===
        self.backbone = backbone
        self.pooling = pooling
        self.normalize = bool(normalize)
        self.pooling_layer = pooling_layer
        self.normalization = normalization

    def task_config(self):
        return {"pooling": list(self.pooling), "normalize": self.normalize}

    @property
    def embedding_dim(self):
        """The size of an embedding: hidden size x number of pooling modes."""
        return self.backbone.config.hidden_size * len(self.pooling)

    # ------------------------------------------------------------------------------ training
    def default_loss(self):
        return MultipleNegativesRankingLoss()

    def check_labels(self, y):
        """One finite number per example (a scored pair's score; the ranking losses read none)."""
        return input_checks.check_targets(y)

    def check_inputs(self, x, y):
        """Columns of texts ([batch, columns, seq]), one label per example."""
        shape = tuple(x["token_ids"].shape)
        if len(shape) != 3:
            raise UserInputError(f"x: token_ids of shape {shape}; {type(self).__name__} takes [batch, columns, seq] "
                                 "(one column of texts to encode, two or more to train).")
        if y is not None:
            input_checks.check_num_examples(y, x)

    def _preprocess(self, x, y=None, sample_weight=None, needs_labels=False):
        """Raw text as every task model takes it; training without labels (the ranking losses read none) gets
        zeros, one per example, for Keras, which needs a `y` to call a loss."""
        x, y, sample_weight = super()._preprocess(x, y, sample_weight)
        if needs_labels and y is None and isinstance(x, dict) and "token_ids" in x:
            y = np.zeros((int(x["token_ids"].shape[0]),), "float32")
        return x, y, sample_weight

    # ------------------------------------------------------------------------------ inference
    def encode(self, texts, batch_size=32, normalize=None, progress=None):
        """The embeddings of `texts`, as `SentenceTransformer.encode`: numpy float32 [n, dim] ([dim] for one str).

        The texts run in batches of similar token length (sorted; each batch padded to its longest text,
        rounded up to a multiple of 8), and come back in their order.

        Args:
            texts: a str or a list of str.
            batch_size: texts per batch.
            normalize: None: as the model computes them; True: L2-normalized; False: as the model computes
                them, which must not normalize (ValueError otherwise).
            progress: show a progress bar; None: when the texts fill more than 10 batches.
        """
        if normalize is False and self.normalize:
            raise ValueError(f"{type(self).__name__} normalizes its embeddings (normalize=True: a Normalize module); "
                             "encode(normalize=False) cannot undo it. Build it with normalize=False instead.")
        single = isinstance(texts, (str, bytes))
        features = self._text_preprocessor().rows(texts)
        count = len(features["token_ids"])
        if count == 0:
            return np.zeros((0, self.embedding_dim), "float32")
        if progress is None:
            progress = count > PROGRESS_BATCHES * batch_size
        embeddings = batching.predict_bucketed(self, features, batch_size=batch_size, progress=progress)[:, 0]
        embeddings = np.asarray(embeddings, "float32")  # [n, dim]
        if normalize:
            embeddings = embeddings / np.maximum(np.linalg.norm(embeddings, axis=-1, keepdims=True), 1e-12)
        return embeddings[0] if single else embeddings

    # ------------------------------------------------------------------------------ checkpoints
    def write_layout_files(self, directory):
        """The sentence-transformers modules (1_Pooling/, 2_Normalize/, sentence_bert_config.json with the
        preprocessor's length, modules.json), so that `SentenceTransformer(directory)` loads it."""
        preprocessor = self.preprocessor
        model_io.write_sentence_modules(directory, model_io.SentenceModules(
            pooling=tuple(self.pooling), normalize=self.normalize,
            max_seq_length=None if preprocessor is None else preprocessor.sequence_length,
            embedding_dimension=self.backbone.config.hidden_size))
