"""recipes/colab_tpu_glue.ipynb stays runnable: valid notebook JSON on a TPU runtime, Python cells that
compile, and every recipe command in it parses with that recipe's own flags (so a renamed flag fails here,
not on a user's TPU). The TPU path those commands take is exercised in test_recipe_distribution.py."""

import importlib.util
import json
import os
import re
import shlex

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NOTEBOOK = os.path.join(REPO, "recipes", "colab_tpu_glue.ipynb")


def _cells():
    with open(NOTEBOOK, encoding="utf-8") as f:
        notebook = json.load(f)
    assert notebook["nbformat"] == 4 and notebook["metadata"]["accelerator"] == "TPU"
    return [("".join(c["source"]), c["cell_type"]) for c in notebook["cells"]]


def _recipe_parser(name):
    spec = importlib.util.spec_from_file_location(f"{name}_nb", os.path.join(REPO, "recipes", f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.build_parser()


def _shell_commands(source, settings):
    """The `!...` commands of a cell, continuation lines joined and {NAME} replaced as IPython does."""
    joined = source.replace("\\\n", " ")
    commands = [line.strip()[1:] for line in joined.splitlines() if line.strip().startswith("!")]
    return [re.sub(r"\{(\w+)\}", lambda m: str(settings[m.group(1)]), c) for c in commands]


@pytest.mark.tensorflow
def test_notebook_cells_compile_and_its_recipe_commands_parse(monkeypatch):
    # recipes/export_savedmodel.py sets KERAS_BACKEND=tensorflow when loaded (its export is a TF graph);
    # monkeypatch puts this process's value back afterwards, so later subprocesses keep their backend.
    monkeypatch.setenv("KERAS_BACKEND", os.environ.get("KERAS_BACKEND", "tensorflow"))
    cells = _cells()
    code = [source for source, kind in cells if kind == "code"]
    settings = {}
    exec(code[0], settings)  # the settings cell is plain Python
    assert settings["GCS_DATA_DIR"].startswith("gs://")
    parsed = {}
    for source in code:
        joined = source.replace("\\\n", " ")  # shell continuation lines
        python = "\n".join(line for line in joined.splitlines() if not line.strip().startswith("!"))
        compile(python, "notebook cell", "exec")
        for command in _shell_commands(source, settings):
            argv = shlex.split(command)
            if argv[:1] == ["python"] and argv[1].startswith("recipes/"):
                name = os.path.basename(argv[1])[: -len(".py")]
                parsed[name] = _recipe_parser(name).parse_args(argv[2:])
    assert set(parsed) == {"run_glue", "export_savedmodel"}
    glue = parsed["run_glue"]
    assert (glue.strategy, glue.mixed_precision, glue.data_dir) == ("tpu", "bfloat16", settings["GCS_DATA_DIR"])
    assert glue.do_train and glue.do_eval and glue.train_batch_size % 8 == 0  # 8 TPU cores share the batch
    assert parsed["export_savedmodel"].model_dir == os.path.join(settings["OUTPUT_DIR"], "model")
