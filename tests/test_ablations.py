"""recipes/ablations.py (keras_bert_impl/experiments/ablations.py, ablation_plan.py, experiment_steps.py): every step
of Tables 5, 8 and 7 is a command its recipe accepts, runs the package module that recipe calls, with the same data,
steps and seeds across a table's rows; and `--smoke` runs Tables 5 and 7 end to end at toy size (a corpus
written here, a tiny model, 2 pretraining steps, one epoch on a few examples of each shipped set; Table 7 on
a tiny random backbone standing in for MiniLM), writing every row and column of the paper's layout with
finite numbers and the commands that produced them, and a rerun skips every finished step.

The end-to-end smoke runs in one subprocess under the torch backend, in the torch suite only: its 29 small
training runs are the recipes' (tested under every backend by their own tests), and under TensorFlow and
JAX each run traces and compiles its own step functions (minutes for a table; docs/experiments.md), so
the TensorFlow and JAX suites would only run the same torch subprocess again.
Table 8 adds 27 more runs of the same steps (data with another masking split, pretraining, fine-tuning);
the plan test checks its commands, and `python recipes/ablations.py --table=8 --smoke --work_dir=DIR` runs it.
"""

import json
import math
import os
import random
import subprocess
import sys

import keras
import pytest

from keras_bert_impl.config import BertConfig
from keras_bert_impl.models.backbone import BertBackbone
from keras_bert_impl.experiments import ablation_plan, ablations, experiment_steps
from keras_bert_impl.experiments.experiment_steps import Step
from tests.finetuning_files import REPO, load_recipe, subprocess_env

TOPICS = [
    "the movie was great and the actors were good".split(),
    "a river runs through the old town near the hills".split(),
    "the team won the match after a long hard game".split(),
    "prices rose in the market as the bank cut rates".split(),
]


def _write_corpus(directory, seed=0):
    """train.txt (16 documents) and heldout.txt (4), one sentence a line, a blank line between documents."""
    rng = random.Random(seed)
    os.makedirs(directory, exist_ok=True)
    for name, num_documents in (("train.txt", 16), ("heldout.txt", 4)):
        documents = []
        for d in range(num_documents):
            words = TOPICS[d % len(TOPICS)]
            documents.append("\n".join(" ".join(rng.choice(words) for _ in range(rng.randint(5, 9))) + " ."
                                       for _ in range(8)))
        with open(os.path.join(directory, name), "w", encoding="utf-8") as f:
            f.write("\n\n".join(documents) + "\n")
    return str(directory)


def _write_stand_in_checkpoint(directory):
    """A random 3-layer, hidden-16 BERT with a small vocabulary: Table 7's MiniLM in the smoke run."""
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ".", ","] + sorted({w for t in TOPICS for w in t})
    config = BertConfig(vocab_size=len(vocab), hidden_size=16, num_hidden_layers=3, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=64)
    BertBackbone(config).save_pretrained(str(directory))
    with open(os.path.join(directory, "vocab.txt"), "w", encoding="utf-8") as f:
        f.write("\n".join(vocab) + "\n")
    return str(directory)


def _check_table_files(work_dir, number, expected_labels, expected_columns, empty_cells=()):
    """table_N.json has exactly the expected rows and columns, a finite number in every cell but the
    expected empty ones, and table_N.md shows every label, column and step command."""
    result = json.load(open(os.path.join(work_dir, f"table_{number}.json"), encoding="utf-8"))
    assert [row["labels"] for row in result["rows"]] == expected_labels
    assert result["columns"] == expected_columns
    for row in result["rows"]:
        assert set(row["values"]) == set(expected_columns)  # JSON objects: keys sorted
        for column, value in row["values"].items():
            if (row["labels"][0], column) in empty_cells:
                assert value is None, (row["labels"], column)
            else:
                assert isinstance(value, float) and math.isfinite(value), (row["labels"], column, value)
    markdown = open(os.path.join(work_dir, f"table_{number}.md"), encoding="utf-8").read()
    table_lines = [line for line in markdown.splitlines() if line.startswith("|")]
    assert len(table_lines) == 2 + len(expected_labels)  # header, rule, one line per row
    assert all(column in table_lines[0] for column in expected_columns)
    for labels, line in zip(expected_labels, table_lines[2:]):
        assert line.startswith("| " + " | ".join(labels) + " |")
    for step in result["steps"]:
        assert step["command"].startswith(("python recipes/", "python benchmarks/")) and step["seconds"] >= 0
        assert step["command"] in markdown
    return result



def test_every_step_is_a_command_its_recipe_accepts_with_the_same_data_steps_and_seeds_across_rows(tmp_path):
    stand_in = tmp_path / "stand_in"
    stand_in.mkdir()
    BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=3, num_attention_heads=2,
               intermediate_size=32).to_json_file(str(stand_in / "config.json"))
    parsers = {}
    tables = {}
    for number in (5, 8, 7):
        args = ablations.build_parser(REPO).parse_args([
            f"--table={number}", f"--work_dir={tmp_path / 'work'}", f"--corpus_dir={tmp_path / 'corpus'}",
            f"--init_checkpoint={stand_in}", "--sizes=examples_per_task=0"])
        tables[number] = ablations.TABLES[number](ablation_plan.Plan(args, REPO))
        for step in tables[number].steps:
            name = os.path.basename(step.script)[: -len(".py")]
            parsers.setdefault(name, load_recipe(name).build_parser)
            parsers[name]().parse_args(step.flags)  # an unknown flag or a bad value exits
    commands = {n: [s.command() for s in t.steps] for n, t in tables.items()}
    # Table 5: one data run, three pretraining runs that differ only in --objective and --output_dir.
    assert sum("create_pretraining_data.py" in c and "/train.txt" in c for c in commands[5]) == 1
    pretrain = [c.split() for c in commands[5] if c.startswith("python recipes/pretrain.py")]
    same = [{a for a in c if not a.startswith(("--objective=", "--output_dir="))} for c in pretrain]
    assert same[0] == same[1] == same[2] and [a for c in pretrain for a in c if a.startswith("--objective")] == [
        "--objective=mlm_nsp", "--objective=mlm", "--objective=ltr"]
    assert sum("--bilstm_units=128" in c and "pretrain_ltr_80_10_10/final" in c for c in commands[5]) == 2
    # Every fine-tuning of a table has the same flags but for its model (and the task's own flags).
    ner = [{a for a in c.split() if not a.startswith(("--init_checkpoint=", "--bert_config_file=", "--output_dir="))}
           for c in commands[8] if c.startswith("python recipes/run_ner.py") and "--feature_based" not in c]
    assert len(ner) == 7 and all(flags == ner[0] for flags in ner)
    # The control rows: the same fine-tunings of the table's bert_config.json, randomly initialized.
    for number, count in ((5, 5), (8, 3)):
        control = [s for s in tables[number].steps if s.name.endswith("__random_init")]
        assert len(control) == count and all(
            f"--bert_config_file={tmp_path / 'work' / 'bert_config.json'}" in s.flags
            and not any(f.startswith("--init_checkpoint") for f in s.flags) for s in control)
    # Table 8: one data run per split, all with the same --random_seed; the 80/10/10 row is Table 5's.
    data = [c.split() for c in commands[8] if "create_pretraining_data.py" in c and "/train.txt" in c]
    assert [[a for a in c if a.split("=")[0].endswith("_token_prob")] for c in data] == [
        [f"--mask_token_prob={m}", f"--keep_token_prob={k}", f"--random_token_prob={r}"]
        for m, k, r in ablation_plan.MASKING_SPLITS]
    assert len({next(a for a in c if a.startswith("--random_seed")) for c in data}) == 1
    assert set(commands[5]) & set(commands[8]) >= {s.command() for s in tables[5].steps if "mlm_nsp" in s.name and not s.name.startswith("qa")}
    # Table 7: the fine-tuning row, then one feature-based row per preset, in the paper's order.
    assert [a for c in commands[7] for a in c.split() if a.startswith("--feature_mode=")] == [
        f"--feature_mode={mode}" for mode, _ in ablations.FEATURE_ROWS]
    assert all(f"--init_checkpoint={stand_in}" in c and "--do_predict" in c for c in commands[7])


# Run in the smoke subprocess: tables 5 and 7 in one process, then table 5 again (every step skipped).
_SMOKE_SCRIPT = """
import sys
sys.path.insert(0, {repo!r})
from tests.finetuning_files import load_recipe
recipe = load_recipe("ablations")
common = ["--work_dir=" + {work_dir!r}, "--smoke", "--in_process", "--corpus_dir=" + {corpus!r}]
recipe.main(["--table=5", *common])
recipe.main(["--table=7", *common, "--init_checkpoint=" + {checkpoint!r}])
print("RERUN")
recipe.main(["--table=5", *common])
"""


@pytest.mark.slow
@pytest.mark.tensorflow  # the tables' vocabulary step (learn_vocab.py) needs tensorflow-text
@pytest.mark.skipif(keras.backend.backend() != "torch", reason="the smoke runs under torch (module docstring)")
def test_smoke_tables_5_and_7_write_every_row_and_column_with_commands_and_rerun_skips(tmp_path):
    work_dir = str(tmp_path / "work")
    script = _SMOKE_SCRIPT.format(repo=REPO, work_dir=work_dir, corpus=_write_corpus(tmp_path / "corpus"),
                                  checkpoint=_write_stand_in_checkpoint(tmp_path / "stand_in"))
    done = subprocess.run([sys.executable, "-c", script], env=dict(subprocess_env(), KERAS_BACKEND="torch"),
                          capture_output=True, text=True, timeout=900, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]

    columns = ["SST-2 (Acc): data/sentiment", "NER (F1): data/ner", "SQuAD (F1): data/qa, answerable",
               "LM (ppl): held-out"]
    control = ablations.NO_PRETRAINING
    t5 = _check_table_files(
        work_dir, 5, [["BERT (MLM + NSP)"], ["No NSP"], ["LTR & No NSP"], ["+ BiLSTM"], [control],
                      [control + " + BiLSTM"]], columns,
        empty_cells={("+ BiLSTM", columns[0]), ("+ BiLSTM", columns[3]), (control, columns[3]),
                     (control + " + BiLSTM", columns[0]), (control + " + BiLSTM", columns[3])})
    for row in t5["rows"][:3]:
        assert 0.0 <= row["values"][columns[0]] <= 100.0 and row["values"][columns[3]] > 1.0

    labels = [["Fine-tuning approach: all layers"]] + [
        [f"Feature-based: {label.format(L=3)}"] for _, label in ablations.FEATURE_ROWS]
    _check_table_files(work_dir, 7, labels, ["Dev F1", "Test F1"])

    # The same command again: every step skipped, the same numbers.
    rerun_out = done.stdout.split("RERUN", 1)[1]
    assert rerun_out.count("skipped") == len({s["name"] for s in t5["steps"]}) and ": python " not in rerun_out


def test_a_step_reruns_over_a_new_run_of_a_step_it_needs_and_is_skipped_over_the_same_run(tmp_path):
    # Two steps of a script that appends its name to a log: "pretrain" with a --learning_rate flag, and
    # "finetune", which needs it and writes a checkpoint-like file into its own output directory.
    repo, work_dir = tmp_path / "repo", tmp_path / "work"
    repo.mkdir()
    (repo / "step.py").write_text(
        "import os, sys\n"
        "name, log, out = sys.argv[1], sys.argv[2], sys.argv[3]\n"
        "os.makedirs(out, exist_ok=True)\n"
        "open(os.path.join(out, 'ckpt'), 'a').write('x')\n"
        "open(log, 'a').write(name + ' ')\n")
    log = str(tmp_path / "log.txt")

    def run(learning_rate):
        pretrain = Step("pretrain", "step.py", ["pretrain", log, str(work_dir / "pretrain"),
                                                f"--learning_rate={learning_rate}"], str(work_dir / "pretrain"))
        finetune = Step("finetune", "step.py", ["finetune", log, str(work_dir / "finetune")],
                        str(work_dir / "finetune"), needs=("pretrain",))
        records = {}
        for step in (pretrain, finetune):
            records[step.name] = experiment_steps.run_step(step, str(work_dir), str(repo), records=records)
        return {name: r["skipped"] for name, r in records.items()}

    assert run(1e-3) == {"pretrain": False, "finetune": False}
    assert run(1e-3) == {"pretrain": True, "finetune": True}
    # Another learning rate: the pretraining runs again, so does the fine-tuning that reads it, from a clean
    # output directory (one "x": the old run's file is gone), though the fine-tuning's own command is the same.
    assert run(1e-4) == {"pretrain": False, "finetune": False}
    assert (work_dir / "finetune" / "ckpt").read_text() == "x"
    assert run(1e-4) == {"pretrain": True, "finetune": True}
    assert open(log).read().split() == ["pretrain", "finetune", "pretrain", "finetune"]
    # A pretraining record lost: it runs again (same command, new run), and the fine-tuning with it.
    os.remove(work_dir / experiment_steps.STEPS_DIR / "pretrain.json")
    assert run(1e-4) == {"pretrain": False, "finetune": False}
    with pytest.raises(ValueError, match=r"finetune needs \['pretrain'\]"):
        experiment_steps.run_step(Step("finetune", "step.py", [], needs=("pretrain",)), str(work_dir), str(repo))


def test_every_table_step_needs_the_steps_whose_output_its_flags_read(tmp_path):
    # Table 5 and 8: each pretraining needs its data steps; each fine-tuning of a pretrained model needs it.
    for number in (5, 8):
        args = ablations.build_parser(REPO).parse_args([f"--table={number}", f"--work_dir={tmp_path}"])
        table = ablations.TABLES[number](ablation_plan.Plan(args, REPO))
        by_name = {s.name: s for s in table.steps}
        for step in table.steps:
            for need in step.needs:
                assert table.steps.index(by_name[need]) < table.steps.index(step)  # needs run first
            if step.name.startswith("pretrain_"):  # e.g. pretrain_mlm_nsp_80_10_10 reads data_80_10_10
                split = "_".join(step.name.split("_")[-3:])
                assert set(step.needs) == {f"data_{split}", "data_heldout"}
                assert f"--input_file={by_name[f'data_{split}'].flags[1].split('=', 1)[1]}" in step.flags
            elif step.name.endswith("__random_init"):  # reads bert_config.json, written from the vocabulary
                assert step.needs == ("vocab",) and f"--bert_config_file={tmp_path}/bert_config.json" in step.flags
            elif step.script.startswith("recipes/run_"):
                (need,) = step.needs
                assert f"--init_checkpoint={by_name[need].output_dir}/final" in step.flags
            elif step.name.startswith("data_"):
                assert step.needs == ("vocab",)
        assert by_name["vocab"].needs == ("corpus",)


def test_every_recipe_step_runs_the_package_module_its_recipe_calls(tmp_path):
    """The runner module of each recipe a table's steps name is keras_bert_impl.runners.<the recipe's name>,
    and the recipe file is a thin call of that module's main (read with ast: it imports `main` from it)."""
    import ast

    scripts = set()
    for number in (5, 8, 7):
        args = ablations.build_parser(REPO).parse_args([f"--table={number}", f"--work_dir={tmp_path}",
                                                        f"--init_checkpoint={tmp_path}"])
        if number == 7:
            BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=3, num_attention_heads=2,
                       intermediate_size=32).to_json_file(str(tmp_path / "config.json"))
        scripts |= {s.script for s in ablations.TABLES[number](ablation_plan.Plan(args, REPO)).steps}
    recipes = sorted(s for s in scripts if s.startswith("recipes/"))
    assert recipes == ["recipes/create_pretraining_data.py", "recipes/learn_vocab.py", "recipes/pretrain.py",
                       "recipes/run_glue.py", "recipes/run_ner.py", "recipes/run_squad.py"]
    assert set(recipes) <= set(experiment_steps.RUNNERS)
    for script, module in experiment_steps.RUNNERS.items():
        name = os.path.basename(script)[: -len(".py")]
        assert module == f"keras_bert_impl.runners.{name}"
        tree = ast.parse(open(os.path.join(REPO, script), encoding="utf-8").read())
        imported = {(node.module, alias.name) for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                    for alias in node.names}
        assert (module, "main") in imported, script


def test_a_recipe_step_runs_its_module_with_python_m_and_in_process_calls_its_main(tmp_path, monkeypatch):
    """Subprocess: `python -m keras_bert_impl.runners.<name> <flags>` from the repository root, its command
    as a user types it (`python recipes/<name>.py <flags>`); `in_process`: the module's `main(flags)`."""
    calls = []
    monkeypatch.setattr(experiment_steps.subprocess, "run", lambda argv, cwd, **kwargs: calls.append(
        (argv, cwd, kwargs)) or subprocess.CompletedProcess(argv, 0))
    step = Step("vocab", "recipes/learn_vocab.py", ["--input_files=a.txt", "--quiet"], str(tmp_path / "vocab"))
    record = experiment_steps.run_step(step, str(tmp_path / "work"), REPO)
    # The environment is inherited: no TF_CPP_MIN_LOG_LEVEL, which would turn the runner's log filter off.
    assert calls == [([sys.executable, "-m", "keras_bert_impl.runners.learn_vocab", "--input_files=a.txt", "--quiet"],
                      REPO, {})]
    assert record["command"] == "python recipes/learn_vocab.py --input_files=a.txt --quiet"

    runner = tmp_path / "modules" / "fake_runner.py"
    runner.parent.mkdir()
    runner.write_text("def main(argv):\n    open(argv[0], 'w').write(' '.join(argv[1:]))\n")
    monkeypatch.syspath_prepend(str(runner.parent))
    monkeypatch.setitem(experiment_steps.RUNNERS, "recipes/fake.py", "fake_runner")
    out = tmp_path / "out.txt"
    step = Step("fake", "recipes/fake.py", [str(out), "--flag=1"])
    assert not experiment_steps.run_step(step, str(tmp_path / "work"), REPO, in_process=True)["skipped"]
    assert out.read_text() == "--flag=1" and len(calls) == 1
