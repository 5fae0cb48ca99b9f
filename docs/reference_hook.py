"""The mkdocs hook that makes the API reference follow `keras_bert_impl/__init__.py`'s `_EXPORTS`.

A reference page holds a line `<!-- exports: TIER -->`; the hook replaces it with one mkdocstrings block
(`::: module.Name`) for each export whose module lies in that tier (`keras_bert_impl.TIER...`), in the order of
`_EXPORTS`. An export whose tier has no such line, and a line naming a tier without exports, stop the build,
so that a new export is in the reference once it is exported. `_EXPORTS` is read with `ast`: nothing is
imported.

It also fences the docstrings' `>>>` examples as code (`DoctestBlocks`).
"""

import ast
import os
import re

from markdown.extensions import Extension
from markdown.preprocessors import Preprocessor
from mkdocs.exceptions import PluginError
from mkdocs.plugins import event_priority

MARKER = re.compile(r"^<!-- exports: (\w+) -->$", re.MULTILINE)
PACKAGE_INIT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "keras_bert_impl", "__init__.py")


def exports_by_tier():
    """`{tier: ["module.Name", ...]}` from `_EXPORTS` (name -> defining module)."""
    with open(PACKAGE_INIT, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "_EXPORTS" for t in node.targets):
            exports = ast.literal_eval(node.value)
            break
    else:
        raise PluginError(f"{PACKAGE_INIT}: no _EXPORTS dictionary")
    tiers = {}
    for name, module in exports.items():
        tiers.setdefault(module.split(".")[1], []).append(f"{module}.{name}")
    return tiers


def on_files(files, config):
    documented = set()
    for file in files.documentation_pages():
        with open(file.abs_src_path, encoding="utf-8") as f:
            documented.update(MARKER.findall(f.read()))
    tiers = exports_by_tier()
    missing = sorted(set(tiers) - documented)
    if missing:
        raise PluginError(f"no reference page has `<!-- exports: TIER -->` for the exported tier(s) {', '.join(missing)}")
    unknown = sorted(documented - set(tiers))
    if unknown:
        raise PluginError(f"`<!-- exports: TIER -->` names tier(s) without exports: {', '.join(unknown)}")
    return files


def on_page_markdown(markdown, page, config, files):
    tiers = exports_by_tier()
    return MARKER.sub(lambda m: "\n\n".join(f"::: {path}" for path in tiers[m.group(1)]), markdown)


class DoctestBlocks(Preprocessor):
    """Fences each run of `>>>` lines and their output (up to a blank line) as a `pycon` code block.

    The docstrings' examples are doctest text (`tests/test_docstrings.py` runs them), which Markdown would
    read as a block quote with links; fenced, they show as the session they are.
    """

    def run(self, lines):
        out, block, fence = [], None, None
        for line in lines + [""]:
            stripped = line.lstrip()
            if block is not None:
                if stripped:
                    block.append(line[len(indent):] if line.startswith(indent) else stripped)
                    continue
                out += ["", indent + "```pycon"] + [indent + b for b in block] + [indent + "```", ""]
                block = None
            if fence is None and stripped.startswith(("```", "~~~")):
                fence = stripped[:3]
            elif fence is not None and stripped.startswith(fence):
                fence = None
            elif fence is None and stripped.startswith(">>>"):
                indent, block = line[:len(line) - len(stripped)], [stripped]
                continue
            out.append(line)
        return out[:-1] if out and out[-1] == "" and (not lines or lines[-1] != "") else out


class DoctestExtension(Extension):
    def extendMarkdown(self, md):
        # After whitespace normalization (30), before fenced code blocks (25).
        md.preprocessors.register(DoctestBlocks(md), "doctest_blocks", 27)


@event_priority(100)
def on_config(config):
    config.markdown_extensions.append(DoctestExtension())
    return config
