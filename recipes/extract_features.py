"""Extracts fixed BERT features (the feature-based approach), as google-research/bert's extract_features.py.

    python recipes/extract_features.py --input_file=input.txt --output_file=output.jsonl \
        --init_checkpoint=PATH --layers=-1,-2,-3,-4 --max_seq_length=128 --batch_size=8

Every line of --input_file is `text_a` or `text_a ||| text_b`; --output_file gets one JSON object per
line in the original's structure (see keras_bert_impl/tasks/feature_extraction.py). --init_checkpoint is a
Hugging Face directory, a Google checkpoint (directory or prefix) or a directory written by
save_pretrained; --vocab_file and --bert_config_file default to the checkpoint's own.

--feature_mode names one of the paper's Table 7 rows instead of --layers: embeddings, second_to_last,
last, sum_last_four, concat_last_four or sum_all (the "sum_" rows write the plain average of their layers,
an untrained scalar mix; see keras_bert_impl/tasks/feature_extraction.py).

The flags, the input and the checkpoint are checked before --output_file is opened, and the output is
written under a temporary name renamed once complete: a mistake or a full disk leaves no --output_file.
A mistake in a flag or a file stops the run with one line and exit status 2 (--debug: the traceback).
"""

from keras_bert_impl.runners.extract_features import build_parser, main, run  # noqa: F401

if __name__ == "__main__":
    main()
