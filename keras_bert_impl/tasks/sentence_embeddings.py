"""Sentence-embedding training (sentence-transformers' fit) with a `BertSentenceEncoder`.

Reads `--train_file` in the columns of `--loss` (`data.sentence_pairs_data`: anchor, positive [, negative]
for in-batch negatives, the default; sentence1, sentence2, score for CoSENT; text for SimCSE) and
`--validation_file`'s scored pairs, every file in `setup`, before the model is built. Every text is packed
alone, `[CLS] text [SEP]`, cut to `--max_seq_length`; an example's texts are embedded in one pass (SimCSE: the
text twice, through two dropout masks) and the loss compares them across the batch
(`models.sentence_losses`). The dev metric is STS-B's: the Spearman (main) and Pearson correlation of the
cosine similarity of each pair's embeddings with its score. The model directory is a sentence-transformers
one (modules.json, 1_Pooling/, 2_Normalize/ with --normalize, sentence_bert_config.json with
--max_seq_length), which `SentenceTransformer(directory)` loads.
"""

import logging

import keras
import numpy as np

from keras_bert_impl.data import batching, sentence_pairs_data
from keras_bert_impl.metrics.glue_metrics import pearson, spearman
from keras_bert_impl.models.sentence_encoder import BertSentenceEncoder
from keras_bert_impl.models.sentence_losses import (
    CoSENTLoss,
    MultipleNegativesRankingLoss,
    SimCSELoss,
    pairwise_cosine_similarity,
)
from keras_bert_impl.preprocessors.sentence_encoder_preprocessor import BertSentenceEncoderPreprocessor
from keras_bert_impl.tasks.base import (
    FinetuningTask,
    TrainingSet,
    batching_options,
    config_overrides,
    load_backbone,
    warn_cut_examples,
)
from keras_bert_impl.tasks.configs import SentenceEmbeddingsConfig
from keras_bert_impl.utils.errors import UserInputError

logger = logging.getLogger(__name__)

# --loss -> the Keras loss the model is compiled with.
LOSS_CLASSES = {"mnrl": MultipleNegativesRankingLoss, "cosent": CoSENTLoss, "simcse": SimCSELoss}


def pair_cosines(model, first, second, batch_size, config):
    """The cosine similarity of the embeddings of each pair (`first[i]`, `second[i]`): float64 [N]."""
    embeddings = [batching.predict_bucketed(model, features, batch_size=batch_size, **batching_options(config))[:, 0]
                  for features in (first, second)]  # 2 x [N, D]
    return np.asarray(keras.ops.convert_to_numpy(pairwise_cosine_similarity(*(np.asarray(e, "float32") for e in embeddings))),
                      "float64")


class SentenceEmbeddingsTask(FinetuningTask):
    """Trains a `BertSentenceEncoder` with the loss of `--loss` on `--train_file` and scores
    `--validation_file`'s pairs. `setup` reads `train` ((features, scores or None, count)) and `dev`
    ((features of the first sentences, of the second, scores))."""

    name = "sentence-embeddings"
    main_metric = "spearman"
    config_class = SentenceEmbeddingsConfig

    def check_flags(self):
        super().check_flags()
        config = self.config
        if config.do_predict:
            raise UserInputError("--do_predict: a sentence-embedding run writes no predictions; encode texts with "
                                 "BertSentenceEncoder.from_pretrained(output_dir/model).encode(texts).")
        if config.test_file:
            raise UserInputError("--test_file: a sentence-embedding run reads no test set.")
        if config.do_train and not config.train_file:
            raise UserInputError(f"--do_train needs --train_file ({', '.join(self.train_columns())} per record).")
        if config.do_eval and not config.validation_file:
            raise UserInputError("--do_eval needs --validation_file (sentence1, sentence2, score per record).")
        if config.symmetric and config.loss != "mnrl":
            raise UserInputError(f"--symmetric is an option of --loss=mnrl, not of --loss={config.loss}.")

    def train_columns(self):
        required, optional_columns = sentence_pairs_data.LOSS_COLUMNS[self.config.loss]
        return [*required, *(f"[{column}]" for column in optional_columns)]

    def _pack(self, texts, split):
        """One packed row per text ({name: N lists of one array}), with one warning when some are cut."""
        rows = self.preprocessor().rows(texts)
        warn_cut_examples(self.tokenizer, texts, None, {"token_ids": [r[0] for r in rows["token_ids"]]},
                          self.config.max_seq_length, split, "a larger --max_seq_length reads more", what="texts")
        return rows

    def preprocessor(self):
        """The run's preprocessor: its tokenizer (--vocab_file / --do_lower_case or the checkpoint's), its
        packed length --max_seq_length; saved with the model (sentence_bert_config.json's max_seq_length)."""
        return BertSentenceEncoderPreprocessor(self.tokenizer, sequence_length=self.config.max_seq_length)

    def setup(self, tokenizer):
        """Reads and packs --train_file (with --do_train) and --validation_file (with --do_eval)."""
        super().setup(tokenizer)
        self.train = self.dev = None
        self._texts = []
        if self.config.do_train:
            columns, scores = sentence_pairs_data.read_training_file(self.config.train_file, self.config.loss)
            packed = [self._pack(column, "the train set") for column in columns]  # K x {name: N x [row]}
            if self.config.loss == "simcse":
                packed = packed * 2  # the same text twice: two dropout masks make the positive pair
            features = {key: [[p[key][i][0] for p in packed] for i in range(len(columns[0]))] for key in packed[0]}
            self.train = (features, scores, len(columns[0]))
            self._texts += [text for column in columns for text in column]
        if self.config.do_eval:
            first, second, scores = sentence_pairs_data.read_scored_pairs(self.config.validation_file)
            self.dev = (self._pack(first, "the dev set"), self._pack(second, "the dev set"), scores)
            self._texts += first + second

    def texts_read(self):
        return self._texts

    def build_model(self):
        """A BertSentenceEncoder on --init_checkpoint (its pooling and normalization unless --pooling /
        --normalize say otherwise; any BERT checkpoint: mean pooling; another task's directory with
        --ignore_stored_head), else on a random backbone of --bert_config_file; with the run's preprocessor."""
        config = self.config
        if config.init_checkpoint:
            return BertSentenceEncoder.from_pretrained(config.init_checkpoint, pooling=config.pooling,
                                                       normalize=config.normalize, preprocessor=self.preprocessor(),
                                                       ignore_stored_head=config.ignore_stored_head,
                                                       **config_overrides(config))
        return BertSentenceEncoder(load_backbone(config), pooling=config.pooling or "mean",
                                   normalize=bool(config.normalize), preprocessor=self.preprocessor())

    def training_loss(self):
        """The Keras loss of --loss (and --symmetric)."""
        if self.config.loss == "mnrl":
            return MultipleNegativesRankingLoss(symmetric=self.config.symmetric)
        return LOSS_CLASSES[self.config.loss]()

    def training_set(self, distribution):
        features, scores, count = self.train
        labels = np.zeros((count,), "float32") if scores is None else np.asarray(scores, "float32")
        what = {"mnrl": "text groups", "cosent": "scored pairs", "simcse": "texts"}[self.config.loss]
        return TrainingSet(features, labels, count, f"{count} {what} ({self.config.loss} loss)")

    def evaluate(self, model):
        """STS-B's metric on the dev pairs: Spearman and Pearson of the cosines against the scores."""
        first, second, scores = self.dev
        cosines = pair_cosines(model, first, second, self.config.eval_batch_size, self.config)
        return {"spearman": spearman(cosines, scores), "pearson": pearson(cosines, scores)}

    def write_results(self, results):
        if not self.config.do_eval:
            return
        results["num_dev_pairs"] = len(self.dev[2])
        super().write_results(results)
        logger.info(f"sentence-embeddings dev spearman={results['spearman']:.4f} pearson={results['pearson']:.4f}")
