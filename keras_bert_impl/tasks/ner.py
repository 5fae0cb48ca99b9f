"""Named-entity recognition (the paper's Section 5.3) on CoNLL-2003 text (one word a line: also MSRA's and
People's Daily's one character a line), the datasets ecosystem's JSON lines / JSON / CSV / parquet
records or CLUENER2020 JSON lines, in any tagging scheme (BIO, IOB1, BIOES, BMES, recognized from the
files), with any label set (`--labels`, else the labels of every split read).

Two models: a `BertTokenClassifier` (fine-tuned; optionally a linear-chain CRF over the words) and the
paper's feature-based approach, a `BertFeatureBasedTagger` (frozen BERT, concatenated hidden layers,
BiLSTMs). Words are tagged by their first sub-token; see `data/conll_data.py` for the file formats, the
label lists and the windows, `data/tag_schemes.py` for the schemes. Evaluates entity precision / recall /
F1 (conlleval rules); writes test_predictions.txt (`token gold pred` lines, the predictions in the scheme
of the files), or for a CLUENER test file test_predictions.json (its records with the predicted entities as
their "label", `data/cluener_data.py`).
"""

import logging
import os

import numpy as np

from keras_bert_impl.checkpoints.model_directory import ModelDirectory
from keras_bert_impl.data import batching, cluener_data, conll_data, conll_features, tag_schemes
from keras_bert_impl.models.feature_based_tagger import BertFeatureBasedTagger
from keras_bert_impl.models.token_classifier import IGNORE_LABEL_ID, BertTokenClassifier
from keras_bert_impl.tasks.base import (
    FinetuningTask,
    TrainingSet,
    batching_options,
)
from keras_bert_impl.tasks.configs import NerConfig
from keras_bert_impl.utils.errors import UserInputError
from keras_bert_impl.utils.file_io import atomic_path, write_json

logger = logging.getLogger(__name__)

SPLIT_FILE_NAMES = {
    "train": ("train.txt", "eng.train", "train.json"),
    "dev": ("dev.txt", "valid.txt", "eng.testa", "dev.json"),
    "test": ("test.txt", "eng.testb", "test.json"),
}
SPLIT_FLAGS = {"train": "train_file", "dev": "validation_file", "test": "test_file"}
# The file of a fine-tuned NER model directory holding its label list and tagging scheme.
LABEL_LIST_FILE = "label_list.json"


def split_file(config, split):
    """The path of a split's file (`--train_file`, `--validation_file`, `--test_file`, else a known name in
    --data_dir), or None."""
    explicit = getattr(config, SPLIT_FLAGS[split])
    if explicit:
        return explicit
    for name in SPLIT_FILE_NAMES[split]:
        path = os.path.join(config.data_dir or "", name)
        if os.path.isfile(path):
            return path
    return None


def require_file(config, split):
    """`split_file`, or a UserInputError naming the flags and file names to use."""
    path = split_file(config, split)
    if path is None:
        raise UserInputError(
            f"no {split} file: pass --{SPLIT_FLAGS[split]} or put one of {', '.join(SPLIT_FILE_NAMES[split])} in "
            f"--data_dir={config.data_dir}."
        )
    return path


def labels_from_checkpoint(path):
    """The label list stored in a checkpoint directory written by this task (label_list.json, else
    config.json's `id2label`), or None when it has none or they are not BIO tags (e.g. `LABEL_0`)."""
    checkpoint = ModelDirectory(path)
    label_list = checkpoint.extra_file(LABEL_LIST_FILE)
    labels = label_list.get("labels") if label_list is not None else checkpoint.label_names
    if not labels or "O" not in labels or not all(conll_data.is_tag(label) for label in labels):
        return None
    return labels


def read_split(config, path, label_names=None):
    """The `ConllSentence`s of one file in any format (`conll_data.read_ner_file`) with the column settings."""
    return conll_data.read_ner_file(path, config.tokens_column, config.tags_column, label_names)


class NerSplit:
    """The sentences of one file and their model windows (`config`: the run's `NerConfig`).

    `sentences` (already read) or the file at `path`; with `strict=False` labels outside `label_list`
    are scored but not trained on (`conll_features.convert_sentences_to_features`)."""

    def __init__(self, path, tokenizer, label_list, config, sentences=None, strict=True):
        self.path = path
        self.sentences = read_split(config, path) if sentences is None else sentences
        if strict:
            conll_data.check_labels(self.sentences, label_list, "the labels are")
        self.features = conll_features.convert_sentences_to_features(
            self.sentences, tokenizer, label_list, config.max_seq_length, config.use_document_context, strict=strict
        )
        self.x, self.labels, self.label_mask = conll_features.features_to_lists(self.features)


class _WordDecoder:
    """`predict_on_batch` of a tagger that returns decoded label ids [B, width] (-100 off the words),
    so that `batching.predict_bucketed` gathers them from batches of any padded length."""

    def __init__(self, model, width):
        self.model = model
        self.width = width

    def predict_on_batch(self, x):
        x = dict(x)
        label_mask = x.pop("label_mask")
        ids = self.model.decode(self.model.predict_on_batch(x), label_mask)  # [B, T]
        return np.pad(ids, ((0, 0), (0, self.width - ids.shape[1])), constant_values=IGNORE_LABEL_ID)


def predict_label_ids(model, split, config):
    """Predicted label ids [N, width] of every window of `split` (-100 off the word positions)."""
    features = dict(split.x, label_mask=split.label_mask)
    longest = int(batching.example_lengths(split.x).max()) if split.features else 1
    width = max(config.max_seq_length, -(-longest // config.pad_to_multiple_of) * config.pad_to_multiple_of)
    return batching.predict_bucketed(_WordDecoder(model, width), features, batch_size=config.eval_batch_size,
                                     **batching_options(config))


class NerTask(FinetuningTask):
    """NER on CoNLL-2003 text or the datasets ecosystem's records (see `conll_data`).

    The label list: `--labels` (a label file, `conll_data.label_list_from_names`); else, with
    --do_train, every label of every split read (train, and dev / test when evaluated or predicted);
    else the checkpoint's (label_list.json or config.json's id2label), else the dev / test labels. Dev
    and test labels the model lacks (only possible with a checkpoint's list) are scored, never trained.
    """

    name = "ner"
    main_metric = "f1"
    config_class = NerConfig

    def __init__(self, config):
        super().__init__(config)
        self.label_list = self.scheme = None
        self.splits = {}  # split -> NerSplit, built by setup

    def check_flags(self):
        super().check_flags()
        if self.config.feature_based and self.config.use_crf:
            raise UserInputError("--use_crf is not available with --feature_based (the paper's BiLSTM tagger is "
                                 "softmax).")
        if self.config.feature_based and self.config.bilstm_units is not None:
            raise UserInputError("--bilstm_units is not available with --feature_based (its BiLSTMs are "
                                 "--lstm_units and --lstm_layers).")

    @property
    def dev(self):
        return self.splits.get("dev")

    def setup(self, tokenizer):
        """Reads and checks every file the flags name (train with --do_train, dev with --do_eval, test with
        --do_predict), settles the label list and the tagging scheme, and builds every split's windows."""
        super().setup(tokenizer)
        config = self.config
        label_names = conll_data.read_label_file(config.labels) if config.labels else None
        wanted = [split for split, flag in (("train", config.do_train), ("dev", config.do_eval),
                                            ("test", config.do_predict)) if flag]
        paths = {split: require_file(config, split) for split in wanted}
        sentences = {split: read_split(config, paths[split], label_names) for split in wanted}
        for split in wanted:
            if not sentences[split]:
                raise UserInputError(f"{paths[split]}: no sentences; expected the {split} set.")
            unlabelled = next((s for s in sentences[split] if not s.labelled), None)
            if unlabelled is not None and split != "test":
                raise UserInputError(f"{unlabelled.where(0)}: a record without 'label'; the {split} set needs the "
                                     "entities of every text.")
        everything = [s for split in wanted for s in sentences[split]]
        strict = True
        if label_names is not None:
            label_list = self.model_label_order(conll_data.label_list_from_names(label_names, config.labels),
                                                f"--labels={config.labels}")
            conll_data.check_labels(everything, label_list, f"the labels of --labels={config.labels} are")
        elif config.do_train:
            label_list = self.model_label_order(conll_data.build_label_list(everything), "the training data")
        else:
            label_list = labels_from_checkpoint(config.init_checkpoint)
            strict = label_list is None
            label_list = label_list or conll_data.build_label_list(everything)
        self.label_list = label_list
        self.scheme = conll_data.resolve_tagging_scheme(config.tagging_scheme, sentences.get("train", everything))
        tag_schemes.warn_tag_order_faults([s for s in everything if s.labelled], self.scheme)
        logger.info(f"labels: {label_list}; tagging scheme: {self.scheme}")
        for split in wanted:
            unseen = conll_data.unknown_labels(sentences[split], label_list)
            if unseen:
                logger.info(f"{split}: labels the model lacks, scored as missed: {', '.join(unseen)}")
            self.splits[split] = NerSplit(paths[split], tokenizer, label_list, config, sentences=sentences[split],
                                          strict=strict)

    def model_label_order(self, label_list, source):
        """`label_list` (read from `source`, e.g. "--labels=labels.txt") in the order of the label ids of the
        --init_checkpoint model's head when it has one (a fine-tuned tagger's label_list.json or id2label): its
        labels matched by name, so that its ids keep their meaning. Labels other than the model's are a
        `UserInputError` naming both sets (unless --ignore_stored_head, which trains a new head)."""
        config = self.config
        if not config.init_checkpoint or config.ignore_stored_head:
            return label_list
        stored = labels_from_checkpoint(config.init_checkpoint)
        if stored is None or stored == label_list:
            return label_list
        if set(stored) != set(label_list):
            missing, extra = sorted(set(stored) - set(label_list)), sorted(set(label_list) - set(stored))
            raise UserInputError(
                f"{source}: the labels are not those of the --init_checkpoint model's head ({', '.join(stored)}): "
                f"{'lacks ' + ', '.join(missing) if missing else ''}{'; ' if missing and extra else ''}"
                f"{'adds ' + ', '.join(extra) if extra else ''}; pass --ignore_stored_head to train a new head.")
        logger.info(f"labels of {source} matched by name to the label ids of the --init_checkpoint model")
        return list(stored)

    def texts_read(self):
        """The words of every sentence of every split read."""
        return [word for split in self.splits.values() for s in split.sentences for word in s.words]

    def trained_labels(self):
        """The label list (BIO tags)."""
        return list(self.label_list)

    def build_model(self):
        config, num_classes = self.config, len(self.label_list)
        if config.feature_based:
            # None: the saved tagger's setting (a --do_train output as --init_checkpoint), else the paper's.
            tagger_flags = {
                "feature_layers": [int(i) for i in config.feature_layers.split(",")] if config.feature_layers else None,
                "feature_combine": config.feature_combine,
                "feature_mode": config.feature_mode or None,
                "lstm_units": config.lstm_units,
                "num_lstm_layers": config.lstm_layers,
            }
            if not config.init_checkpoint:
                tagger_flags = {key: value for key, value in tagger_flags.items() if value is not None}
            return self.load_model(BertFeatureBasedTagger, output_hidden_states=True, num_classes=num_classes,
                                   dropout=config.classifier_dropout, **tagger_flags)
        # From a checkpoint: its fine-tuned classifier (and CRF) head too when it has one; use_crf None: the
        # checkpoint's.
        use_crf = (config.use_crf or None) if config.init_checkpoint else config.use_crf
        return self.load_model(BertTokenClassifier, num_classes=num_classes, dropout=config.classifier_dropout,
                               use_crf=use_crf, bilstm_units=config.bilstm_units)

    def training_set(self, distribution):
        train = self.splits["train"]
        return TrainingSet(train.x, train.labels, len(train.features),
                           f"{len(train.sentences)} training sentences, {len(train.features)} windows",
                           batching_options={"label_padding_value": IGNORE_LABEL_ID})

    def word_tags(self, model, split):
        """One tag per word of every sentence of `split`, in the task's tagging scheme."""
        predicted = predict_label_ids(model, split, self.config)
        return conll_features.predictions_to_word_tags(split.features, predicted, split.sentences, self.label_list,
                                                   self.scheme)

    def evaluate(self, model):
        """Dev entity precision / recall / F1 (conlleval rules), overall and per entity type."""
        return conll_data.evaluate_word_tags(self.dev.sentences, self.word_tags(model, self.dev))

    def save_model(self, model, directory):
        """A BertForTokenClassification directory (the feature-based tagger: a BertModel directory holding
        the tagger too, `BertFeatureBasedTagger.save_pretrained`), with label_list.json."""
        super().save_model(model, directory, label_names=self.label_list, extra_files={
            LABEL_LIST_FILE: {"labels": self.label_list, "tagging_scheme": self.scheme}})

    def predict(self, model, results):
        """Writes test_predictions.txt (test_predictions.json for a CLUENER test file) and, when the test set
        has its entities, adds its entity scores as results["test"]."""
        test = self.splits["test"]
        tags = self.word_tags(model, test)
        if all(s.record is not None for s in test.sentences):
            path = os.path.join(self.config.output_dir, "test_predictions.json")
            cluener_data.write_cluener_predictions(path, [s.record for s in test.sentences], tags)
        else:
            path = os.path.join(self.config.output_dir, "test_predictions.txt")
            with atomic_path(path) as tmp:
                conll_data.write_predictions(tmp, test.sentences, tags)
        message = f"wrote {len(test.sentences)} test sentences' predictions to {path}"
        if all(s.labelled for s in test.sentences):
            results["test"] = conll_data.evaluate_word_tags(test.sentences, tags)
            message += f"; test entity F1 = {100 * results['test']['f1']:.2f}"
        logger.info(message)
        return results

    def write_results(self, results):
        """eval_results.json: the dev scores (with --do_eval), "test", the tagging scheme and the labels."""
        results["tagging_scheme"] = self.scheme
        results["label_list"] = self.label_list
        write_json(os.path.join(self.config.output_dir, "eval_results.json"), results)
        if self.config.do_eval:
            logger.info("dev entity precision / recall / F1 = "
                        f"{100 * results['precision']:.2f} / {100 * results['recall']:.2f} / {100 * results['f1']:.2f}")
