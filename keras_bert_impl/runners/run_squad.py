"""The SQuAD v1.1 / v2.0 fine-tuning recipe (google-research/bert run_squad.py): its flags, and a run of
`tasks.squad.SquadTask` on the `SquadConfig` made from them. `python recipes/run_squad.py` or
`python -m keras_bert_impl.runners.run_squad`; usage, data files and outputs: recipes/run_squad.py.
"""

from keras_bert_impl.metrics.squad_metrics import EVAL_METRICS
from keras_bert_impl.runners.finetuning_flags import add_task_flags, finetuning_flag_parser
from keras_bert_impl.runners.finetuning_recipe import finetuning_recipe


def build_parser():
    p = finetuning_flag_parser("Fine-tune BERT on SQuAD v1.1 / v2.0.", max_seq_length=384)
    formats = " (or datasets' flattened records: JSON lines, JSON, CSV, parquet)."
    p.add_argument("--train_file", default=None, help="SQuAD JSON for training, e.g. train-v1.1.json" + formats)
    p.add_argument("--predict_file", default=None, help="SQuAD JSON for predictions, e.g. dev-v1.1.json" + formats)
    p.add_argument("--doc_stride", type=int, default=128, help="Tokens between the starts of document windows.")
    p.add_argument("--max_query_length", type=int, default=64, help="Questions are cut to this many tokens.")
    p.add_argument("--n_best_size", type=int, default=20, help="Size of the n-best lists.")
    p.add_argument("--max_answer_length", type=int, default=30, help="Longest answer, in WordPiece tokens.")
    p.add_bool_flag("version_2_with_negative", False, "SQuAD v2.0: some questions have no answer.")
    p.add_argument("--null_score_diff_threshold", type=float, default=0.0,
                   help="v2.0: predict no answer when score_null - best_non_null > this.")
    p.add_argument("--eval_metric", default="auto", choices=EVAL_METRICS,
                   help="Evaluation of --predict_file: squad (the official SQuAD v1.1 / v2.0 script), cmrc2018 "
                   "(CMRC 2018's character-level F1 and EM, for Chinese), or auto: cmrc2018 when its contexts are "
                   "mostly CJK ideographs, else squad.")
    p.add_bool_flag("verbose_logging", False, "Print the data statistics and the misaligned answers' ids.")
    return add_task_flags(p, "feature", bilstm=True)


# run(args): the task (imported when it runs) on the config of the parsed flags; main(argv=None): parses and runs.
run, main = finetuning_recipe(build_parser, "keras_bert_impl.tasks.squad.SquadTask")


if __name__ == "__main__":
    main()
