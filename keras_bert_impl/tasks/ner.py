"""Named-entity recognition on CoNLL-2003-format files (the paper's Section 5.3).

Two models: a `BertTokenClassifier` (fine-tuned; optionally a linear-chain CRF over the words) and the
paper's feature-based approach, a `BertFeatureBasedTagger` (frozen BERT, concatenated hidden layers,
BiLSTMs). Words are tagged by their first sub-token; see `data/conll_data.py` for the file format, the
tagging schemes and the windows. Evaluates entity precision / recall / F1 (conlleval rules); writes
test_predictions.txt (`token gold pred` lines).
"""

import json
import os

import numpy as np

from keras_bert_impl.data import batching, conll_data
from keras_bert_impl.models.feature_based_tagger import BertFeatureBasedTagger
from keras_bert_impl.models.token_classifier import IGNORE_LABEL_ID, BertTokenClassifier
from keras_bert_impl.tasks.base import (
    FinetuningTask,
    TrainingSet,
    config_overrides,
    load_backbone,
    save_model_directory,
)
from keras_bert_impl.utils.file_io import atomic_path, write_json

SPLIT_FILE_NAMES = {
    "train": ("train.txt", "eng.train"),
    "dev": ("dev.txt", "valid.txt", "eng.testa"),
    "test": ("test.txt", "eng.testb"),
}
FEATURE_BASED_WEIGHTS = "feature_based_tagger.weights.h5"


def split_file(args, split):
    """The path of a split's file (`--{split}_file`, else a known name in --data_dir), or None."""
    explicit = getattr(args, f"{split}_file")
    if explicit:
        return explicit
    for name in SPLIT_FILE_NAMES[split]:
        path = os.path.join(args.data_dir or "", name)
        if os.path.isfile(path):
            return path
    return None


def require_file(args, split):
    """`split_file`, or a FileNotFoundError naming the flags and file names to use."""
    path = split_file(args, split)
    if path is None:
        raise FileNotFoundError(
            f"no {split} file: pass --{split}_file or put one of {', '.join(SPLIT_FILE_NAMES[split])} in "
            f"--data_dir={args.data_dir}."
        )
    return path


def labels_from_checkpoint(path):
    """The label list stored in a checkpoint's config.json (`id2label`), or None."""
    config_path = os.path.join(path or "", "config.json")
    if not os.path.isfile(config_path):
        return None
    with open(config_path, encoding="utf-8") as f:
        id2label = json.load(f).get("id2label")
    if not id2label:
        return None
    return [id2label[str(i)] for i in range(len(id2label))]


class NerSplit:
    """The sentences of one file and their model windows."""

    def __init__(self, path, tokenizer, label_list, args):
        self.path = path
        self.sentences = conll_data.read_conll_file(path)
        conll_data.check_labels(self.sentences, label_list)
        self.features = conll_data.convert_sentences_to_features(
            self.sentences, tokenizer, label_list, args.max_seq_length, args.use_document_context
        )
        self.x, self.labels, self.label_mask = conll_data.features_to_lists(self.features)


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


def predict_label_ids(model, split, args):
    """Predicted label ids [N, width] of every window of `split` (-100 off the word positions)."""
    features = dict(split.x, label_mask=split.label_mask)
    longest = int(batching.example_lengths(split.x).max()) if split.features else 1
    width = max(args.max_seq_length, -(-longest // args.pad_to_multiple_of) * args.pad_to_multiple_of)
    return batching.predict_bucketed(_WordDecoder(model, width), features, batch_size=args.eval_batch_size,
                                     dynamic_padding=args.dynamic_padding, max_length=args.max_seq_length,
                                     pad_to_multiple_of=args.pad_to_multiple_of)


class NerTask(FinetuningTask):
    """CoNLL-2003 NER; the label list comes from the training file (else from the checkpoint's config)."""

    name = "ner"
    main_metric = "f1"

    def __init__(self, args):
        super().__init__(args)
        self.label_list = self.scheme = self.dev = None
        self.train_sentences = None

    def check_flags(self):
        super().check_flags()
        if self.args.feature_based and self.args.use_crf:
            raise ValueError("--use_crf is not available with --feature_based (the paper's BiLSTM tagger is softmax).")

    def setup(self, tokenizer):
        super().setup(tokenizer)
        args = self.args
        train_path = split_file(args, "train")
        if args.do_train and train_path is None:
            require_file(args, "train")
        self.train_sentences = conll_data.read_conll_file(train_path) if train_path else None
        label_list = conll_data.build_label_list(self.train_sentences) if self.train_sentences else None
        if label_list is None:
            label_list = labels_from_checkpoint(args.init_checkpoint)
        if label_list is None:
            raise ValueError("No label list: give a training file, or an --init_checkpoint written by this recipe.")
        scheme_source = self.train_sentences or conll_data.read_conll_file(
            require_file(args, "dev" if args.do_eval else "test"))
        self.label_list = label_list
        self.scheme = conll_data.resolve_tagging_scheme(args.tagging_scheme, scheme_source)
        print(f"labels: {label_list}; tagging scheme: {self.scheme}")
        if args.do_eval:
            self.dev = NerSplit(require_file(args, "dev"), tokenizer, label_list, args)

    def build_model(self):
        args, num_labels = self.args, len(self.label_list)
        if args.feature_based:
            return BertFeatureBasedTagger(
                load_backbone(args, output_hidden_states=True),
                num_labels,
                feature_layers=[int(i) for i in args.feature_layers.split(",")],
                lstm_units=args.lstm_units,
                num_lstm_layers=args.lstm_layers,
                dropout=args.classifier_dropout,
            )
        if args.init_checkpoint:
            # Loads a fine-tuned classifier (and CRF) head too when the checkpoint has one.
            return BertTokenClassifier.from_pretrained(args.init_checkpoint, num_labels=num_labels,
                                                       dropout=args.classifier_dropout,
                                                       use_crf=args.use_crf or None,  # None: the checkpoint's
                                                       **config_overrides(args))
        return BertTokenClassifier(load_backbone(args), num_labels, dropout=args.classifier_dropout,
                                   use_crf=args.use_crf)

    def training_set(self):
        train = NerSplit(require_file(self.args, "train"), self.tokenizer, self.label_list, self.args)
        return TrainingSet(train.x, train.labels, len(train.features),
                           f"{len(train.sentences)} training sentences, {len(train.features)} windows",
                           batching_options={"label_padding_value": IGNORE_LABEL_ID})

    def word_tags(self, model, split):
        """One tag per word of every sentence of `split`, in the task's tagging scheme."""
        predicted = predict_label_ids(model, split, self.args)
        return conll_data.predictions_to_word_tags(split.features, predicted, split.sentences, self.label_list,
                                                   self.scheme)

    def evaluate(self, model):
        """Dev entity precision / recall / F1 (conlleval rules), overall and per entity type."""
        return conll_data.evaluate_word_tags(self.dev.sentences, self.word_tags(model, self.dev))

    def save_model(self, model, directory):
        """A BertForTokenClassification directory (the feature-based tagger: its backbone and
        feature_based_tagger.weights.h5), with label_list.json."""
        if self.args.feature_based:
            save_model_directory(model.backbone, self.tokenizer, directory, self.args.max_seq_length)
            model.save_weights(os.path.join(directory, FEATURE_BASED_WEIGHTS))
        else:
            save_model_directory(model, self.tokenizer, directory, self.args.max_seq_length, id2label=self.label_list)
        write_json(os.path.join(directory, "label_list.json"),
                   {"labels": self.label_list, "tagging_scheme": self.scheme})

    def predict(self, model, results):
        """Writes test_predictions.txt and adds the test set's entity scores as results["test"]."""
        test = NerSplit(require_file(self.args, "test"), self.tokenizer, self.label_list, self.args)
        tags = self.word_tags(model, test)
        test_scores = conll_data.evaluate_word_tags(test.sentences, tags)
        path = os.path.join(self.args.output_dir, "test_predictions.txt")
        with atomic_path(path) as tmp:
            conll_data.write_predictions(tmp, test.sentences, tags)
        results["test"] = test_scores
        print(f"wrote {len(test.sentences)} test sentences' predictions to {path}; "
              f"test entity F1 = {100 * test_scores['f1']:.2f}")
        return results

    def write_results(self, results):
        """eval_results.json: the dev scores (with --do_eval), "test", the tagging scheme and the labels."""
        results["tagging_scheme"] = self.scheme
        results["label_list"] = self.label_list
        write_json(os.path.join(self.args.output_dir, "eval_results.json"), results)
        if self.args.do_eval:
            print("dev entity precision / recall / F1 = "
                  f"{100 * results['precision']:.2f} / {100 * results['recall']:.2f} / {100 * results['f1']:.2f}")
