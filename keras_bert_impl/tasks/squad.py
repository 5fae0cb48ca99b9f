"""Extractive question answering on SQuAD v1.1 / v2.0 (google-research/bert run_squad.py) with a
`BertSpanQA`.

Reads `--train_file` / `--predict_file` (the original SQuAD JSON or the datasets ecosystem's flattened
records, `data/squad_data.py`), turns the logits into answers (`data/squad_postprocessing.py`) and
scores them with the official v1.1 / v2.0 evaluation (v2.0 with the null odds as no-answer
probabilities and `--null_score_diff_threshold` as the threshold), or, for Chinese data, with CMRC 2018's
character-level F1 and EM (`--eval_metric`: `auto` picks it when the contexts of `--predict_file` are mostly
CJK ideographs; its results are named `cmrc2018_f1`, `cmrc2018_em`, ...). Writes predictions.json,
nbest_predictions.json, null_odds.json (v2.0) and train_data_stats.json.
"""

import logging
import os
import warnings

from keras_bert_impl.data import squad_data, squad_features
from keras_bert_impl.metrics.cmrc2018_metrics import cmrc2018_evaluate, mostly_chinese
from keras_bert_impl.metrics.squad_metrics import squad_v1_evaluate, squad_v2_evaluate
from keras_bert_impl.models.span_qa import DECODING_SETTINGS, BertSpanQA
from keras_bert_impl.tasks.base import FinetuningTask, TrainingSet
from keras_bert_impl.tasks.configs import SquadConfig
from keras_bert_impl.data.squad_postprocessing import predict_raw_results, write_predictions
from keras_bert_impl.training.metrics_log import metrics_text
from keras_bert_impl.utils.errors import UserInputError
from keras_bert_impl.utils.file_io import write_json

logger = logging.getLogger(__name__)

# --eval_metric: the official SQuAD evaluation, CMRC 2018's (Chinese), or the one that fits the contexts.


def has_answers(dataset):
    """Whether any question of a SQuAD JSON dataset has gold answers (then it can be evaluated)."""
    return any(qa.get("answers") for article in dataset["data"] for p in article["paragraphs"] for qa in p["qas"])


def contexts(dataset):
    """The contexts of a SQuAD JSON dataset."""
    return [p["context"] for article in dataset["data"] for p in article["paragraphs"]]


# A file of this many questions or more is featurized under a progress bar (about a second on a 2-core CPU).
FEATURIZING_PROGRESS_MIN_EXAMPLES = 2000


class SquadTask(FinetuningTask):
    """SQuAD v1.1, or v2.0 with `--version_2_with_negative`. Evaluates `--predict_file` when it has answers:
    with the official SQuAD evaluation, or CMRC 2018's (`eval_metric`)."""

    name = "SQuAD"
    config_class = SquadConfig

    def __init__(self, config):
        super().__init__(config)
        self.eval_examples = self.eval_features = self.eval_dataset = None
        self.train = None  # (examples, features, stats) of --train_file, read by setup
        self.latest = None  # the SquadPredictions of the last evaluation (after training: of the best epoch)
        self.best_f1, self.best_predictions = float("-inf"), None
        self._eval_metric = None if self.config.eval_metric == "auto" else self.config.eval_metric

    @property
    def eval_metric(self):
        """"squad" or "cmrc2018": `--eval_metric`, or for "auto" "cmrc2018" when the contexts of
        `--predict_file` are mostly CJK ideographs (`metrics.cmrc2018_metrics.mostly_chinese`)."""
        if self._eval_metric is None:
            dataset = self.eval_dataset
            if dataset is None and self.config.predict_file:
                dataset = squad_data.load_squad_dataset(self.config.predict_file)
            chinese = dataset is not None and mostly_chinese(contexts(dataset))
            self._eval_metric = "cmrc2018" if chinese else "squad"
        return self._eval_metric

    @property
    def main_metric(self):
        """The metric that picks the best epoch: the F1 of the evaluation (`eval_metric`)."""
        return "cmrc2018_f1" if self.eval_metric == "cmrc2018" else "f1"

    def check_flags(self):
        config = self.config
        if not (config.do_train or config.do_predict):
            raise UserInputError("At least one of --do_train or --do_predict must be set.")
        if config.do_train and not config.train_file:
            raise UserInputError("--do_train needs --train_file.")
        if config.do_predict and not config.predict_file:
            raise UserInputError("--do_predict needs --predict_file.")
        if config.max_seq_length <= config.max_query_length + 3:
            raise UserInputError(
                f"--max_seq_length ({config.max_seq_length}) must be greater than --max_query_length "
                f"({config.max_query_length}) + 3."
            )

    def load_features(self, path, is_training, dataset=None):
        """(examples, features, stats) of one SQuAD file (or of its already loaded `dataset`)."""
        config = self.config
        dataset = squad_data.load_squad_dataset(path) if dataset is None else dataset
        examples, stats = squad_data.squad_examples_from_json(dataset, is_training, config.version_2_with_negative,
                                                              source=path)
        if not examples:
            raise UserInputError(f"{path}: no usable questions ({stats['num_questions']} read, "
                                 f"{stats['num_misaligned_answers']} skipped as misaligned).")
        long_questions = sum(len(self.tokenizer.tokenize(e.question_text)) > config.max_query_length
                             for e in examples)
        if long_questions:  # the context is read whole (its windows); only a question is cut
            warnings.warn(f"{path}: {long_questions} of {len(examples)} questions are longer than --max_query_length="
                          f"{config.max_query_length} and are cut to it, as the original cuts them (a larger "
                          "--max_query_length reads more).", stacklevel=2)
        features = squad_features.convert_examples_to_features(
            examples, self.tokenizer, max_seq_length=config.max_seq_length, doc_stride=config.doc_stride,
            max_query_length=config.max_query_length, is_training=is_training,
            progress=config.verbose == 1 and len(examples) >= FEATURIZING_PROGRESS_MIN_EXAMPLES,
        )
        stats = dict(stats, num_features=len(features))
        if config.verbose_logging:
            logger.info(f"{path}: " + ", ".join(f"{k}={v}" for k, v in stats.items()))
        return examples, features, stats

    def setup(self, tokenizer):
        """Reads, checks and featurizes --train_file (with --do_train) and --predict_file (with --do_predict),
        in the original SQuAD JSON or the datasets ecosystem's records, before any model is built."""
        super().setup(tokenizer)
        if self.config.do_train:
            self.train = self.load_features(self.config.train_file, is_training=True)
        if self.config.do_predict:
            self.eval_dataset = squad_data.load_squad_dataset(self.config.predict_file)
            self.eval_examples, self.eval_features, _ = self.load_features(
                self.config.predict_file, is_training=False, dataset=self.eval_dataset)

    def texts_read(self):
        """The questions of every example read and each context once."""
        examples = (self.train[0] if self.train else []) + (self.eval_examples or [])
        contexts = {id(e.context_text): e.context_text for e in examples}  # a paragraph's questions share it
        return [e.question_text for e in examples] + list(contexts.values())

    @property
    def can_evaluate(self):
        return self.eval_dataset is not None and has_answers(self.eval_dataset)

    def preprocessor_settings(self):
        return {"doc_stride": self.config.doc_stride, "max_query_length": self.config.max_query_length}

    def decoding(self):
        """The run's windows' and answers' settings (`models.span_qa.DECODING_SETTINGS`), the model's `decoding`."""
        return {key: getattr(self.config, key) for key in DECODING_SETTINGS}

    def build_model(self):
        """A BertSpanQA on the checkpoint (which may lack the pooler), with its qa_outputs head when it has one,
        answering with the run's settings (its `decoding`, which its directory records in config.json's "squad"
        entry, for the question-answering pipeline and the export)."""
        # bilstm_units from a checkpoint, None: the checkpoint's.
        return self.load_model(BertSpanQA, bilstm_units=self.config.bilstm_units, decoding=self.decoding())

    def training_set(self, distribution):
        """The training features: length-bucketed batches with --dynamic_padding or where the run trains on
        whole batches only (static TPU shapes, a multi-process JAX job's shares), else fixed-length arrays;
        `fit` shuffles the order of the batches (or of the examples) every epoch."""
        config = self.config
        examples, features, stats = self.train
        if stats["num_misaligned_answers"]:
            logger.info(f"{stats['num_misaligned_answers']} training answer(s) not at their answer_start were skipped.")
        write_json(os.path.join(config.output_dir, "train_data_stats.json"), stats)
        description = f"{len(examples)} training examples, {len(features)} features"
        # A multi-process JAX job feeds shares of the bucketed batches (`BucketedBatches`), also at fixed length.
        if config.dynamic_padding or distribution.whole_batches_only:
            x, y = squad_features.features_to_lists(features)
            return TrainingSet(x, y, len(features), description, fit_kwargs={"shuffle": True})
        x, y = squad_features.features_to_arrays(features)
        return TrainingSet(x, y, len(features), description, bucketed=False)

    def predictions(self, model):
        """The `SquadPredictions` of `--predict_file`."""
        config = self.config
        results = predict_raw_results(model, self.eval_features, batch_size=config.predict_batch_size,
                                      dynamic_padding=config.dynamic_padding,
                                      pad_to_multiple_of=config.pad_to_multiple_of, progress=config.verbose == 1)
        if config.verbose == 1:
            logger.info(f"decoding the answers of {len(self.eval_examples)} questions ({len(self.eval_features)} "
                        "windows)")
        return model.answers(self.eval_examples, self.eval_features, results, do_lower_case=self.tokenizer.do_lower_case,
                             **self.decoding())

    def evaluate(self, model):
        """The official v1.1 / v2.0 metrics of the predictions (v2.0 with null odds as na_probs), or CMRC
        2018's (`cmrc2018_f1`, `cmrc2018_em`, `cmrc2018_average`, `cmrc2018_total`, `cmrc2018_skip`)."""
        squad_predictions = self.predictions(model)
        if self.eval_metric == "cmrc2018":
            metrics = {f"cmrc2018_{key}": value
                       for key, value in cmrc2018_evaluate(self.eval_dataset, squad_predictions.predictions).items()}
        elif self.config.version_2_with_negative:
            metrics = squad_v2_evaluate(self.eval_dataset, squad_predictions.predictions,
                                        na_probs=squad_predictions.null_odds,
                                        na_prob_thresh=self.config.null_score_diff_threshold)
        else:
            metrics = squad_v1_evaluate(self.eval_dataset, squad_predictions.predictions)
        self.latest = squad_predictions
        if metrics[self.main_metric] > self.best_f1:
            self.best_f1, self.best_predictions = metrics[self.main_metric], squad_predictions
        return metrics

    def best_results(self, best_metrics):
        self.latest = self.best_predictions  # the model holds the best epoch's weights: reuse its predictions
        return dict(best_metrics)

    def predict(self, model, results):
        """Writes predictions.json, nbest_predictions.json and (v2.0) null_odds.json."""
        if self.latest is None:
            self.latest = self.predictions(model)
        paths = write_predictions(self.config.output_dir, self.latest)
        logger.info(f"wrote {', '.join(paths)}")
        return results

    def write_results(self, results):
        """eval_results.json: the official evaluation of predictions.json, when `--predict_file` has answers."""
        if not self.can_evaluate:
            return
        write_json(os.path.join(self.config.output_dir, "eval_results.json"), results)
        logger.info(f"dev: {metrics_text(results)}")
