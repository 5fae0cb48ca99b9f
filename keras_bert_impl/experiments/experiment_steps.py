"""The steps of an experiment: each one command of this repository (`python recipes/<name>.py <flags>`,
writing into its own output directory), run unless a record says the same command finished before over the
same runs of the steps it reads from.

A step of a recipe runs its package module (`RUNNERS`: `recipes/<name>.py` is a thin call of
`keras_bert_impl.runners.<name>`) as `python -m keras_bert_impl.runners.<name> <flags>` in a subprocess, or,
`in_process`, calls the module's `main(flags)` in this process; its command, as a user types it in a
checkout, is `python recipes/<name>.py <flags>`. Any other script (e.g. `benchmarks/pretraining_corpus.py`)
runs as `python <script> <flags>` in a subprocess from the repository root.

Every step writes, once its command has returned, a record `work_dir/steps/<step>.json` (its command,
seconds, finishing time, and the finishing times of the steps it reads from). The same experiment run again
skips every step whose record holds the same finished command over the same runs of its upstream steps, and
reruns the others; a step whose command or upstream runs changed starts over from an empty output directory.
"""

import dataclasses
import datetime
import importlib
import json
import logging
import os
import shlex
import shutil
import subprocess
import sys
import time

from keras_bert_impl.utils.file_io import write_json

logger = logging.getLogger(__name__)

STEPS_DIR = "steps"
# The package module of each recipe a step may run: recipes/<name>.py calls keras_bert_impl.runners.<name>.
RUNNERS = {f"recipes/{name}.py": f"keras_bert_impl.runners.{name}" for name in (
    "learn_vocab", "create_pretraining_data", "pretrain", "run_glue", "run_ner", "run_squad", "run_swag",
    "extract_features")}


@dataclasses.dataclass
class Step:
    """One command of this repository: `python <script> <flags>`, writing into `output_dir` (see the module
    docstring for how a recipe's step runs).

    Examples:

    >>> Step("vocab", "recipes/learn_vocab.py", ["--input_files=corpus/train.txt", "--vocab_size=8192"]).command()
    'python recipes/learn_vocab.py --input_files=corpus/train.txt --vocab_size=8192'
    """

    name: str
    script: str  # relative to the repository root, e.g. "recipes/pretrain.py"
    flags: list
    output_dir: str = ""
    needs: tuple = ()  # the names of the steps whose output this one reads

    def command(self):
        return shlex.join(["python", self.script, *self.flags])


def read_json(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def run_step(step, work_dir, repo, in_process=False, records=None):
    """Runs `step` unless its record in `work_dir/steps/` says the same command finished over the same runs of
    the steps it needs; returns the record ({"name", "command", "upstream", "seconds", "finished",
    "skipped"}). `records`: {step name: record} of the steps run (or skipped) before, holding `step.needs`.

    The record is written twice: {"command", "upstream"} before the step starts, with "seconds" and
    "finished" once it has returned. A step started before with the same command over the same upstream runs
    is run again (the recipe resumes from its checkpoints); one started with another command, or over other
    upstream runs, first loses its output directory (its checkpoints are another run's).

    Examples:

    >>> import tempfile
    >>> repo, work_dir = tempfile.mkdtemp(), tempfile.mkdtemp()
    >>> with open(os.path.join(repo, "hello.py"), "w") as f:
    ...     _ = f.write("import sys; open(sys.argv[1], 'a').write('ran ')")
    >>> step = Step("hello", "hello.py", [os.path.join(work_dir, "out.txt")])
    >>> from keras_bert_impl.runners.cli import recipe_logging  # the lines a recipe shows
    >>> with recipe_logging():
    ...     first = run_step(step, work_dir, repo)  # doctest: +ELLIPSIS
    ...     again = run_step(step, work_dir, repo)
    [ablations] hello: python hello.py .../out.txt
    [ablations] hello: done before (0 s), skipped
    >>> first["skipped"], again["skipped"], open(os.path.join(work_dir, "out.txt")).read()
    (False, True, 'ran ')
    """
    records = records or {}
    missing = [name for name in step.needs if name not in records]
    if missing:
        raise ValueError(f"step {step.name} needs {missing}, which have not run before it")
    upstream = {name: records[name]["finished"] for name in step.needs}
    record_path = os.path.join(work_dir, STEPS_DIR, f"{step.name}.json")
    if os.path.isfile(record_path):
        record = read_json(record_path)
        same = record.get("command") == step.command() and record.get("upstream", {}) == upstream
        if same and "finished" in record:
            logger.info(f"[ablations] {step.name}: done before ({record['seconds']:.0f} s), skipped")
            return dict(record, skipped=True)
        inside = os.path.abspath(step.output_dir or work_dir).startswith(os.path.abspath(work_dir) + os.sep)
        if not same and inside and os.path.isdir(step.output_dir):
            shutil.rmtree(step.output_dir)
    write_json(record_path, {"name": step.name, "command": step.command(), "upstream": upstream})
    logger.info(f"[ablations] {step.name}: {step.command()}")
    start = time.time()
    if in_process and step.script in RUNNERS:
        _run_in_process(step)
    else:
        _run_in_subprocess(step, repo)
    # "finished" names this run of the step: a step that needs it compares it with what it ran over.
    record = {"name": step.name, "command": step.command(), "upstream": upstream,
              "seconds": round(time.time() - start, 1),
              "finished": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="microseconds")}
    write_json(record_path, record)
    return dict(record, skipped=False)


def _run_in_subprocess(step, repo):
    """`python -m <its runner module> <flags>` for a recipe's step, else `python <script> <flags>`, from `repo`."""
    if step.script in RUNNERS:
        # The runner keeps TensorFlow's C++ logs off stderr itself (`runners.cli.run_main`), unless the user
        # set TF_CPP_MIN_LOG_LEVEL.
        target = ["-m", RUNNERS[step.script]]
    else:
        target = [os.path.join(repo, step.script)]
    done = subprocess.run([sys.executable, *target, *step.flags], cwd=repo)
    if done.returncode != 0:
        raise RuntimeError(f"step {step.name} failed with exit status {done.returncode}: {step.command()}")


def _run_in_process(step):
    """The `main(flags)` of a recipe's runner module, in this process."""
    try:
        importlib.import_module(RUNNERS[step.script]).main(list(step.flags))
    except SystemExit as exit:
        if exit.code not in (0, None):
            raise RuntimeError(f"step {step.name} failed with exit status {exit.code}: {step.command()}") from None
    finally:
        import keras

        keras.backend.clear_session()  # a step's models and compiled functions are not needed by the next
