"""The package's layout: imports go one way, from higher tiers to lower ones, and form no cycle.

Read from the source with `ast` (every import, also those inside functions), so a cycle hidden by a
function-level import fails here too.
"""

import ast
import os

import pytest

PACKAGE = "keras_bert_impl"
ROOT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), PACKAGE)

# Lowest first. A module may import modules of its own tier (same folder only) and of lower tiers.
TIERS = [
    ("utils", "backends"),
    ("config", "metrics"),
    ("layers", "tokenizers"),
    ("checkpoints",),
    ("data",),
    ("preprocessors",),
    ("models",),
    ("training",),
    ("tasks",),
    ("export",),
    ("runners",),
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


# --- One packer: `[CLS] A [SEP] (B [SEP])` is laid out only in tokenizers/packing.py ---------------------------
# The other modules that name [CLS] / [SEP] in code: the tokenizer that defines their ids, the in-graph twin of
# the tokenizer and packer, the vocabulary learner's reserved tokens, and the pretraining data generator (whose
# random front/back truncation is the original's create_pretraining_data.py).
SPECIAL_TOKEN_MODULES = {"tokenizers/packing.py", "tokenizers/bert_tokenizer.py", "tokenizers/tf_bert_tokenizer.py",
                         "tokenizers/tf_vocab_learning.py", "data/pretraining_data.py", "data/tf_pretraining_data.py"}


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
