"""The package's layout: imports go one way, from higher tiers to lower ones, and form no cycle.

Read from the source with `ast` (every import, also those inside functions), so a cycle hidden by a
function-level import fails here too.
"""

import ast
import os
import re

import pytest

pytestmark = pytest.mark.backend_independent

PACKAGE = "keras_bert_impl"
ROOT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), PACKAGE)

# Lowest first. A module may import modules of its own tier (same folder only) and of lower tiers.
TIERS = [
    ("utils", "backends"),
    ("config", "feature_modes", "metrics"),
    ("layers", "tokenizers"),
    ("checkpoints",),
    ("data",),
    ("preprocessors",),
    ("models",),
    ("training",),
    ("tasks",),
    ("pipelines",),
    ("export",),
    ("runners",),
    ("experiments",),
]
TIER_OF = {part: level for level, parts in enumerate(TIERS) for part in parts}


def _module_name(path):
    relative = os.path.relpath(path, os.path.dirname(ROOT))[: -len(".py")].replace(os.sep, ".")
    return relative[: -len(".__init__")] if relative.endswith(".__init__") else relative


def _modules():
    modules = {}
    for directory, _, files in os.walk(ROOT):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(directory, name)
                modules[_module_name(path)] = path
    return modules


def _imports(path, modules):
    """The package modules that the file at `path` imports, anywhere in it."""
    found = set()
    for node in ast.walk(ast.parse(open(path, encoding="utf-8").read(), path)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [f"{node.module}.{alias.name}" for alias in node.names] + [node.module]
        else:
            continue
        for name in names:
            while name and name not in modules:
                name = name.rpartition(".")[0]
            if name and name.startswith(PACKAGE + ".") and name != PACKAGE:
                found.add(name)
    return found


def _folder(module):
    """`keras_bert_impl.models.backbone` -> "models"; `keras_bert_impl.config` -> "config"."""
    return module.split(".")[1]


def import_graph():
    modules = _modules()
    return {name: _imports(path, modules) - {name} for name, path in modules.items() if name != PACKAGE}


def test_every_module_sits_in_a_known_tier():
    unknown = sorted({_folder(m) for m in import_graph()} - set(TIER_OF))
    assert not unknown, f"folders or modules without a tier in TIERS: {unknown}"


def test_imports_go_from_higher_tiers_to_lower_ones():
    wrong = []
    for module, imported in sorted(import_graph().items()):
        for target in sorted(imported):
            mine, theirs = _folder(module), _folder(target)
            if TIER_OF[theirs] > TIER_OF[mine] or (TIER_OF[theirs] == TIER_OF[mine] and theirs != mine):
                wrong.append(f"{module} -> {target}")
    assert not wrong, "imports against the tiers:\n" + "\n".join(wrong)


# A lower tier reaches an upper tier's module by no string either (a module name for importlib, a registry's table
# of modules): the upper module registers itself into the lower tier's registry, and the package root, above every
# tier, declares which module fills it (`utils/registering_modules.py`).
# The one exception: a command for the user in a message (`python -m keras_bert_impl.runners.launch`, named by
# training/distribute.py's refusal of a strategy), which the code does not load.
_MODULE_NAME = re.compile(rf"(?<!python -m )\b{PACKAGE}\.(\w+)")


def module_names_in_strings(source, path="<source>"):
    """[(line, folder)] of each `keras_bert_impl.<folder>...` named in a string of `source` (an f-string's
    literal parts too; docstrings and `python -m` commands aside, which name modules as text)."""
    tree = ast.parse(source, path)
    docstrings = _docstring_lines(tree)
    return sorted((node.lineno, folder) for node in ast.walk(tree) if isinstance(node, ast.Constant)
                  and isinstance(node.value, str) and node.lineno not in docstrings
                  for folder in _MODULE_NAME.findall(node.value))


def upward_names(module, source, path="<source>"):
    """"line: keras_bert_impl.<folder>" of each string of `module` naming a module of a higher tier (or of another
    folder of its tier)."""
    mine = _folder(module)
    return [f"{line}: {PACKAGE}.{theirs}" for line, theirs in module_names_in_strings(source, path)
            if theirs in TIER_OF and (TIER_OF[theirs] > TIER_OF[mine] or TIER_OF[theirs] == TIER_OF[mine] and theirs != mine)]


def test_no_module_names_a_higher_tiers_module_in_a_string():
    found = {module: names for module, path in sorted(_modules().items()) if module != PACKAGE
             and (names := upward_names(module, open(path, encoding="utf-8").read(), path))}
    assert not found, ("modules naming a higher tier's module in a string (register it from above instead: "
                       f"utils/registering_modules.py): {found}")


def test_the_string_check_finds_an_upper_module_named_for_importlib_and_passes_docstrings_and_lower_ones():
    source = ('"""Exports with keras_bert_impl.export.onnx_export."""\n'
              'import importlib\n'
              'EXPORTERS = {"onnx": ("keras_bert_impl.export.onnx_export", "export_onnx")}\n'
              'def load(name):\n'
              '    """Imports keras_bert_impl.pipelines.base."""\n'
              '    importlib.import_module(f"keras_bert_impl.runners.{name}")\n'
              '    return importlib.import_module("keras_bert_impl.utils.file_io"), "keras_bert_impl.models.x"\n'
              'raise ValueError("run python -m keras_bert_impl.runners.launch instead")\n')
    assert upward_names("keras_bert_impl.models.portable_export", source) == [
        "3: keras_bert_impl.export", "6: keras_bert_impl.runners"]
    assert upward_names("keras_bert_impl.layers.x", source) == [
        "3: keras_bert_impl.export", "6: keras_bert_impl.runners", "7: keras_bert_impl.models"]


def find_cycle(graph):
    """One import cycle of `graph` as a list of modules, or None."""
    state = {}

    def visit(node, stack):
        state[node] = "open"
        stack.append(node)
        for target in sorted(graph.get(node, ())):
            if state.get(target) == "open":
                return stack[stack.index(target):] + [target]
            if target not in state:
                cycle = visit(target, stack)
                if cycle:
                    return cycle
        stack.pop()
        state[node] = "done"
        return None

    for node in sorted(graph):
        if node not in state:
            cycle = visit(node, [])
            if cycle:
                return cycle
    return None


def test_the_package_has_no_import_cycle():
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_find_cycle_finds_a_cycle_hidden_in_a_function_level_import():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}
    assert find_cycle(graph) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


@pytest.mark.parametrize("folder", ["layers", "models", "config", "tokenizers/bert_tokenizer.py"])
def test_backend_neutral_code_imports_no_backend_library_at_module_level(folder):
    """The models, layers and config use keras and keras.ops; a backend library is imported only inside a
    function, under a branch on the backend (the fast paths of `backends/`)."""
    paths = [os.path.join(ROOT, folder)] if folder.endswith(".py") else [
        os.path.join(d, f) for d, _, files in os.walk(os.path.join(ROOT, folder)) for f in files if f.endswith(".py")
    ] if os.path.isdir(os.path.join(ROOT, folder)) else [os.path.join(ROOT, folder + ".py")]
    offenders = []
    for path in paths:
        tree = ast.parse(open(path, encoding="utf-8").read(), path)
        for node in tree.body:  # module level only
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module] if isinstance(node, ast.ImportFrom) and node.module else [])
            offenders += [f"{os.path.relpath(path, ROOT)}: {n}" for n in names
                          if n.split(".")[0] in ("tensorflow", "jax", "torch", "tensorflow_text")]
    assert not offenders, offenders


# --- The models reach checkpoints through one door (keras_bert_impl/checkpoints/model_io.py). ---
MODELS_CHECKPOINT_DOOR = "keras_bert_impl.checkpoints.model_io"


def checkpoint_imports_of_models(graph):
    """{models module: the checkpoints modules it imports other than the door} (`from keras_bert_impl.checkpoints
    import model_io` names the package too, which holds no code)."""
    allowed = {MODELS_CHECKPOINT_DOOR, PACKAGE + ".checkpoints"}
    return {module: sorted(t for t in targets if _folder(t) == "checkpoints" and t not in allowed)
            for module, targets in graph.items() if _folder(module) == "models"}


def test_models_import_no_checkpoint_module_but_model_io():
    wrong = {module: targets for module, targets in checkpoint_imports_of_models(import_graph()).items() if targets}
    assert not wrong, f"models/ must reach checkpoints through {MODELS_CHECKPOINT_DOOR} only: {wrong}"


def test_the_door_check_catches_a_models_module_importing_another_checkpoint_module():
    graph = {"keras_bert_impl.models.x": {"keras_bert_impl.checkpoints.head_weights", MODELS_CHECKPOINT_DOOR}}
    assert checkpoint_imports_of_models(graph) == {"keras_bert_impl.models.x": ["keras_bert_impl.checkpoints.head_weights"]}


# ---------------------------------------------------------------- tasks/ reads no argparse Namespace
# A fine-tuning task runs on its typed config (`tasks.base.FinetuningConfig` and its subclasses); the flags
# are parsed in runners/ and recipes/ only. The rule, on the source of every module of tasks/: no import of
# argparse; no identifier `args` (a parameter of any kind, a variable, an attribute such as `self.args`,
# which covers `args.x`, `getattr(args, ...)` and `vars(args)`); no call of `vars(...)` (a Namespace's
# fields as a dict); no name or attribute `Namespace` / `SimpleNamespace`.
NAMESPACE_IDENTIFIERS = ("args", "Namespace", "SimpleNamespace")


def namespace_reads(source, filename="<source>"):
    """Where `source` imports argparse or reads a Namespace, by the rule above: ["line: what", ...]."""
    found = []
    for node in ast.walk(ast.parse(source, filename)):
        if isinstance(node, ast.Import):
            found += [f"{node.lineno}: import {a.name}" for a in node.names if a.name.split(".")[0] == "argparse"]
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "argparse":
            found.append(f"{node.lineno}: from {node.module} import")
        elif isinstance(node, ast.arg) and node.arg in NAMESPACE_IDENTIFIERS:
            found.append(f"{node.lineno}: parameter {node.arg}")
        elif isinstance(node, ast.Name) and node.id in NAMESPACE_IDENTIFIERS:
            found.append(f"{node.lineno}: name {node.id}")
        elif isinstance(node, ast.Attribute) and node.attr in NAMESPACE_IDENTIFIERS:
            found.append(f"{node.lineno}: attribute .{node.attr}")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "vars" and node.args:
            found.append(f"{node.lineno}: vars(...)")
    return sorted(found, key=lambda entry: int(entry.split(":")[0]))


def test_tasks_import_no_argparse_and_read_no_namespace():
    offenders = []
    for directory, _, files in os.walk(os.path.join(ROOT, "tasks")):
        for name in sorted(files):
            if name.endswith(".py"):
                path = os.path.join(directory, name)
                offenders += [f"{os.path.relpath(path, ROOT)}:{entry}"
                              for entry in namespace_reads(open(path, encoding="utf-8").read(), path)]
    assert not offenders, "tasks/ reads an argparse Namespace:\n" + "\n".join(offenders)


def test_the_namespace_rule_catches_every_kind_of_read_and_passes_a_typed_config():
    offender = "\n".join([
        "import argparse",                                   # 1
        "from argparse import Namespace",                    # 2
        "def build(args, *, flags=None):",                   # 3
        "    return getattr(args, 'max_seq_length', 128)",   # 4
        "class Task:",                                       # 5
        "    def __init__(self, config):",                   # 6
        "        self.args = config",                        # 7
        "        settings = vars(config)",                   # 8
        "        self.ns = types.SimpleNamespace(a=1)",      # 9
        "lambda *args: None",                                # 10
    ])
    assert namespace_reads(offender) == [
        "1: import argparse", "2: from argparse import", "3: parameter args", "4: name args",
        "7: attribute .args", "8: vars(...)", "9: attribute .SimpleNamespace", "10: parameter args"]
    typed = "\n".join([
        "import dataclasses",
        "class Task:",
        "    def __init__(self, config):",
        "        self.config = config",
        "        self.width = getattr(self.config, 'max_seq_length')",
        "        self.fields = dataclasses.asdict(config)",
    ])
    assert namespace_reads(typed) == []


# --- One packer: `[CLS] A [SEP] (B [SEP])` is laid out only in tokenizers/packing.py ---------------------------
# The other modules that name [CLS] / [SEP] in code: the tokenizer that defines their ids, the in-graph twin of
# the tokenizer and packer, the packer of one text with LiteRT's ops (tensorflow-text's, which the twin cannot
# use), the learned vocabularies' reserved tokens, the pretraining data generator (whose
# random front/back truncation is the original's create_pretraining_data.py), and the masked-LM choices, which
# never mask [CLS] / [SEP] (in Python and in the graph).
SPECIAL_TOKEN_MODULES = {"tokenizers/packing.py", "tokenizers/bert_tokenizer.py", "tokenizers/tf_bert_tokenizer.py",
                         "tokenizers/tf_litert_tokenizer.py",
                         "tokenizers/vocabulary.py", "data/pretraining_instances.py",
                         "data/masked_lm_predictions.py", "data/tf_dynamic_masking.py"}


def _special_token_uses(path):
    """`line: what` of each use of "[CLS]" / "[SEP]" or of `cls_token_id` / `sep_token_id` in code (not in
    docstrings, where the examples show packed sequences)."""
    tree = ast.parse(open(path, encoding="utf-8").read(), path)
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                  and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    uses = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and node.value in ("[CLS]", "[SEP]") and id(node) not in docstrings:
            uses.append(f"{node.lineno}: {node.value}")
        elif isinstance(node, ast.Attribute) and node.attr in ("cls_token_id", "sep_token_id"):
            uses.append(f"{node.lineno}: .{node.attr}")
    return uses


def test_only_the_packer_lays_out_cls_and_sep():
    offenders = []
    for module, path in _modules().items():
        relative = os.path.relpath(path, ROOT).replace(os.sep, "/")
        if relative not in SPECIAL_TOKEN_MODULES:
            offenders += [f"{relative}:{use}" for use in _special_token_uses(path)]
    assert not offenders, "lay out [CLS] A [SEP] (B [SEP]) with keras_bert_impl/tokenizers/packing.py: " + str(offenders)


def test_the_special_token_check_sees_a_packer_written_again(tmp_path):
    path = tmp_path / "copy.py"
    path.write_text('"""Packs [CLS] A [SEP]."""\n\n\ndef pack(t, a):\n    """[CLS] a [SEP]"""\n'
                    '    return [t.cls_token_id, *a, t.sep_token_id], ["[CLS]", *a, "[SEP]"]\n')
    assert _special_token_uses(str(path)) == ["6: .cls_token_id", "6: .sep_token_id", "6: [CLS]", "6: [SEP]"]


@pytest.mark.parametrize("module", ["tokenizers/packing.py", "tokenizers/basic_tokenizer.py", "tokenizers/vocabulary.py"])
def test_the_python_tokenizer_modules_import_no_backend_library_at_module_level(module):
    test_backend_neutral_code_imports_no_backend_library_at_module_level(module)


# --- Modules by concept (none over 600 lines), no recipe loaded by path, private Keras APIs only in
# --- utils/keras_compat.py.

MAX_MODULE_LINES = 600
COMPAT_MODULE = f"{PACKAGE}.utils.keras_compat"
# The `_`-prefixed (or keras.src-only) names of Keras objects the package relies on; only keras_compat may use
# them (as attributes, method overrides, names or getattr strings). tests/test_keras_compat.py checks that
# Keras still has each of them.
PRIVATE_KERAS_NAMES = {
    "_inbound_nodes", "_nodes_by_depth", "_flatten_layers", "_seed_generators", "_maybe_symbolic_build",
    "_distribute_strategy", "_clip_gradients", "_backend_update_step", "_get_variable_index", "_save_state",
    "H5IOStore", "_get_h5_file", "_collective_all_reduce_multi_worker", "get_global_attribute",
    "global_seed_generator", "reduce_per_replica", "_keras_history",
}
# Calls that load a Python file by its path.
PATH_LOADERS = {"spec_from_file_location", "run_path", "SourceFileLoader", "SourcelessFileLoader"}


def private_keras_uses(source, path="<source>"):
    """The places of `source` that import `keras.src` or use a name of `PRIVATE_KERAS_NAMES`, as "line: what"."""
    found = []
    for node in ast.walk(ast.parse(source, path)):
        if isinstance(node, ast.Import):
            found += [f"{node.lineno}: import {a.name}" for a in node.names if a.name.startswith("keras.src")]
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("keras.src"):
            found.append(f"{node.lineno}: from {node.module}")
        names = []
        if isinstance(node, ast.Attribute):
            names = [node.attr]
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names = [node.name]
        elif isinstance(node, ast.Name):
            names = [node.id]
        elif isinstance(node, ast.alias):
            names = [node.name, node.asname or ""]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in (
                "getattr", "hasattr", "setattr") and len(node.args) > 1 and isinstance(node.args[1], ast.Constant):
            names = [str(node.args[1].value)]
        found += [f"{getattr(node, 'lineno', '?')}: {name}" for name in names if name in PRIVATE_KERAS_NAMES]
    return found


def recipe_loads_by_path(source, path="<source>"):
    """The calls of `source` that load a file by its path (`PATH_LOADERS`), or `exec`/`open` a path that
    names recipes, as "line: call"."""
    found = []
    for node in ast.walk(ast.parse(source, path)):
        if not isinstance(node, ast.Call):
            continue
        name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
        strings = [n.value for arg in node.args for n in ast.walk(arg)
                   if isinstance(n, ast.Constant) and isinstance(n.value, str)]
        if name in PATH_LOADERS or (name in ("exec", "open", "compile") and any("recipes" in s for s in strings)):
            found.append(f"{node.lineno}: {name}")
    return found


def test_no_module_of_the_package_is_longer_than_600_lines():
    long = {name: n for name, path in sorted(_modules().items())
            if (n := sum(1 for _ in open(path, encoding="utf-8"))) > MAX_MODULE_LINES}
    assert not long, f"modules over {MAX_MODULE_LINES} lines (split them by concept): {long}"


def test_the_package_loads_no_recipe_by_path():
    found = {name: uses for name, path in sorted(_modules().items())
             if (uses := recipe_loads_by_path(open(path, encoding="utf-8").read(), path))}
    assert not found, f"the package loads files by path (import keras_bert_impl.runners.<name> instead): {found}"


def test_only_keras_compat_uses_private_keras_apis():
    found = {name: uses for name, path in sorted(_modules().items())
             if name != COMPAT_MODULE and (uses := private_keras_uses(open(path, encoding="utf-8").read(), path))}
    assert not found, f"private Keras APIs outside {COMPAT_MODULE}: {found}"
    assert private_keras_uses(open(_modules()[COMPAT_MODULE], encoding="utf-8").read())  # the list is its names


def test_the_checks_find_a_private_keras_use_and_a_recipe_loaded_by_path():
    source = (
        "from keras.src.saving import saving_lib\n"
        "import importlib.util, runpy\n"
        "class Task(keras.Model):\n"
        "    def _maybe_symbolic_build(self, iterator=None, data_batch=None):\n"
        "        return getattr(self, '_distribute_strategy', None), self.layer._inbound_nodes\n"
        "spec = importlib.util.spec_from_file_location('r', 'recipes/pretrain.py')\n"
        "runpy.run_path('x.py')\n"
        "exec(open(os.path.join(REPO, 'recipes', 'pretrain.py')).read())\n"
        "open('data/train.txt')\n"
    )
    assert sorted(private_keras_uses(source)) == ["1: from keras.src.saving", "4: _maybe_symbolic_build",
                                                  "5: _distribute_strategy", "5: _inbound_nodes"]
    assert recipe_loads_by_path(source) == ["6: spec_from_file_location", "7: run_path", "8: exec", "8: open"]


# --- Settings declared once: the recipes' flags are made from their typed configs (`runners.flags`), so the
# --- runners hold few `add_argument` calls.
MAX_RUNNER_ADD_ARGUMENT_CALLS = 40


def add_argument_calls(source, path="<source>"):
    """The lines of `source` that call `.add_argument(...)` or `.add_bool_flag(...)` (a flag declared by hand)."""
    return [node.lineno for node in ast.walk(ast.parse(source, path)) if isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute) and node.func.attr in ("add_argument", "add_bool_flag")]


def test_the_runners_declare_at_most_40_flags_by_hand():
    calls = {name: len(lines) for name, path in sorted(_modules().items()) if name.startswith(PACKAGE + ".runners.")
             and (lines := add_argument_calls(open(path, encoding="utf-8").read(), path))}
    assert sum(calls.values()) <= MAX_RUNNER_ADD_ARGUMENT_CALLS, (
        f"{sum(calls.values())} add_argument calls in runners/ (declare settings as config fields instead): {calls}")


def test_the_flag_count_sees_add_argument_and_add_bool_flag_calls():
    source = ("p = FlagParser()\np.add_argument('--a', type=int)\nif x:\n    p.add_bool_flag('b', False, 'B.')\n"
              "add_argument('--c')\n")
    assert add_argument_calls(source) == [2, 4]


# --- Library and application apart: below the runners the package prints nothing; its messages go to its logger
# --- (`logging.getLogger(__name__)`), which a recipe shows in its one-line form (`runners.cli.recipe_logging`).
def print_calls(source, path="<source>"):
    """The lines of `source` that call `print(...)` (in code: a docstring's examples are text)."""
    return [node.lineno for node in ast.walk(ast.parse(source, path)) if isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name) and node.func.id == "print"]


def test_no_module_below_the_runners_prints():
    below = {name: path for name, path in _modules().items()
             if name == PACKAGE or TIER_OF[_folder(name)] < TIER_OF["runners"]}
    found = {name: lines for name, path in sorted(below.items())
             if (lines := print_calls(open(path, encoding="utf-8").read(), path))}
    assert not found, f"print() below the runners (log to logging.getLogger(__name__) instead): {found}"


def test_the_print_check_sees_a_print_call_and_not_a_docstring_example():
    source = '"""Example:\n\n>>> print(1)\n1\n"""\n\ndef f(x):\n    print(x)\n    logger.info(x)\n'
    assert print_calls(source) == [8]


# --- A task is one unit: its model class carries its loading, saving, decoding and identity (the task registry),
# --- so that no other module keeps knowledge of it by name.
# The modules that define `from_pretrained`: the config, the tokenizer, the preprocessors' base, the backbone and
# the task models' base (every task model's comes from what its class declares).
MAX_FROM_PRETRAINED_MODULES = 5
TASK_MODEL_CLASSES = ("BertClassifier", "BertTokenClassifier", "BertSpanQA", "BertMultipleChoice", "BertPretrainer",
                      "BertFeatureBasedTagger", "BertSentenceEncoder")
# Besides its own module, a task model class may be named in the exports, the registry, its task and its pipeline.
TASK_CLASS_PLACES = {
    "BertClassifier": ("tasks/glue.py", "pipelines/text_classification.py"),
    "BertTokenClassifier": ("tasks/ner.py", "pipelines/token_classification.py"),
    "BertFeatureBasedTagger": ("tasks/ner.py", "pipelines/token_classification.py"),
    "BertSpanQA": ("tasks/squad.py", "pipelines/question_answering.py"),
    "BertMultipleChoice": ("tasks/swag.py", "pipelines/multiple_choice.py"),
    "BertPretrainer": ("pipelines/fill_mask.py",),
    "BertSentenceEncoder": ("tasks/sentence_embeddings.py", "pipelines/sentence_similarity.py"),
}
SHARED_PLACES = ("__init__.py", "checkpoints/task_registry.py")
TASK_CLASS_MODULES = {"BertClassifier": "models/classifier.py", "BertTokenClassifier": "models/token_classifier.py",
                      "BertFeatureBasedTagger": "models/feature_based_tagger.py", "BertSpanQA": "models/span_qa.py",
                      "BertMultipleChoice": "models/multiple_choice.py", "BertPretrainer": "models/pretrainer.py",
                      "BertSentenceEncoder": "models/sentence_encoder.py"}
DISPATCH_FOLDERS = ("export", "pipelines")


def _relative(path):
    return os.path.relpath(path, ROOT).replace(os.sep, "/")


def from_pretrained_modules(sources):
    """The modules ({relative path: source}) that define a function or method named `from_pretrained`."""
    return sorted(path for path, source in sources.items()
                  if any(isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == "from_pretrained"
                         for node in ast.walk(ast.parse(source))))


def _docstring_lines(tree):
    """The line numbers of the docstrings of a module, its classes and functions."""
    lines = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                lines.update(range(first.lineno, first.end_lineno + 1))
    return lines


def names_in_code(source, names):
    """The `names` that `source` names in its code (an identifier, or a word of a string that is no docstring;
    comments aside), as {name: [line, ...]}."""
    import io
    import re
    import tokenize

    docstrings = _docstring_lines(ast.parse(source))
    found = {}
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.start[0] in docstrings or token.type not in (tokenize.NAME, tokenize.STRING, getattr(tokenize, "FSTRING_MIDDLE", -1)):
            continue
        for name in names:
            if token.string == name or (token.type != tokenize.NAME and re.search(rf"\b{name}\b", token.string)):
                found.setdefault(name, []).append(token.start[0])
    return found


def dispatch_on_task(source):
    """`line: what` of each `task == "..."` / `task != "..."` comparison and each isinstance / issubclass on a task
    model class (or on a `model_classes` tuple) in `source`."""
    import re

    found = [f"{n}: task comparison" for n, line in enumerate(source.splitlines(), 1)
             if re.search(r"\btask\s*[!=]=\s*[\"']", line)]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("isinstance", "issubclass") \
                and len(node.args) == 2:
            named = {n.id for n in ast.walk(node.args[1]) if isinstance(n, ast.Name)} | {
                n.attr for n in ast.walk(node.args[1]) if isinstance(n, ast.Attribute)}
            if named & {*TASK_MODEL_CLASSES, "model_classes"}:
                found.append(f"{node.lineno}: {node.func.id} on {', '.join(sorted(named & {*TASK_MODEL_CLASSES, 'model_classes'}))}")
    return found


def _package_sources():
    return {_relative(path): open(path, encoding="utf-8").read() for path in _modules().values()}


def test_from_pretrained_is_defined_in_at_most_five_modules():
    modules = from_pretrained_modules(_package_sources())
    assert len(modules) <= MAX_FROM_PRETRAINED_MODULES, f"from_pretrained defined in {len(modules)} modules: {modules}"


def test_export_and_pipelines_dispatch_through_the_registry_not_on_task_names_or_classes():
    offenders = {path: found for path, source in _package_sources().items()
                 if path.split("/")[0] in DISPATCH_FOLDERS and (found := dispatch_on_task(source))}
    assert not offenders, f"dispatch on the task's name or class (use the registry or the model's methods): {offenders}"


def test_each_task_model_class_is_named_only_by_its_exports_registry_task_and_pipeline():
    sources = _package_sources()
    wrong = {}
    for path, source in sources.items():
        for name, lines in names_in_code(source, TASK_MODEL_CLASSES).items():
            allowed = {TASK_CLASS_MODULES[name], *SHARED_PLACES, *TASK_CLASS_PLACES[name]}
            if path not in allowed:
                wrong.setdefault(name, []).append(f"{path}:{lines[0]}")
    assert not wrong, f"task model classes named outside their exports, registry, task and pipeline: {wrong}"
    for name in TASK_MODEL_CLASSES:
        places = {path for path, source in sources.items() if name in names_in_code(source, (name,))}
        assert len(places - {TASK_CLASS_MODULES[name]}) <= 4, (name, sorted(places))


def test_the_unit_checks_find_an_override_a_task_chain_and_a_class_named_in_code():
    sources = {"a.py": "class A:\n    @classmethod\n    def from_pretrained(cls, path):\n        pass\n",
               "b.py": "def from_pretrained(path):\n    pass\n", "c.py": "def load(path):\n    pass\n"}
    assert from_pretrained_modules(sources) == ["a.py", "b.py"]
    chain = ('"""Exports the task == "classifier" model."""\n'
             'if task == "span_qa":\n    pass\n'
             'if isinstance(model, (BertSpanQA, keras.Model)) or isinstance(model, self.model_classes):\n    pass\n'
             'if isinstance(model, keras.Model):\n    pass\n')
    assert dispatch_on_task(chain) == ["1: task comparison", "2: task comparison", "4: isinstance on BertSpanQA",
                                       "4: isinstance on model_classes"]
    named = ('"""A BertClassifier module."""\n'
             '# BertSpanQA in a comment\n'
             'from keras_bert_impl.models.classifier import BertClassifier\n'
             'def f():\n    """Loads a BertPretrainer."""\n'
             '    raise ValueError(f"not a BertMultipleChoice: {x}")\n'
             'BertTokenClassifierPreprocessor = 1\n')
    assert names_in_code(named, TASK_MODEL_CLASSES) == {"BertClassifier": [3], "BertMultipleChoice": [6]}


# --- Tests named and described for what they prove: no test file cites an issue of this project (another
# --- project's issue is cited with its name: "TensorFlow's issues #117700").

TESTS = os.path.dirname(os.path.abspath(__file__))
ISSUE_CITATION = re.compile(r"(?<!'s )\b(issues?|Issues?) #\d+")


def issue_citations(source):
    """The lines of `source` that cite an issue number without naming another project, as "line: text"."""
    return [f"{i}: {line.strip()}" for i, line in enumerate(source.splitlines(), 1) if ISSUE_CITATION.search(line)]


def test_no_test_file_cites_an_issue_number():
    names = sorted(n for n in os.listdir(TESTS) if n.startswith(("test_", "conftest")) and n.endswith(".py"))
    assert not [n for n in names if re.search(r"issue|_\d+\.py$", n)], "test files named for an issue"
    found = {n: cited for n in names if (cited := issue_citations(open(os.path.join(TESTS, n), encoding="utf-8").read()))}
    assert not found, f"test files citing an issue (say what the test proves instead): {found}"


def test_the_issue_check_finds_a_citation_and_passes_another_projects_issue():
    number = "#" + "16"  # not a citation of this file
    source = f'"""Inputs are refused (issue {number})."""\n# Issue {number}\'s bound\n# TensorFlow\'s issues {number}\n'
    assert issue_citations(source) == [f'1: """Inputs are refused (issue {number})."""', f"2: # Issue {number}'s bound"]
