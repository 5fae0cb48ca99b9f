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
