"""The documentation: the mkdocs site and its API reference build with warnings as errors (a docstring that
names a parameter the signature lacks, a broken cross-reference or anchor); every relative link in README.md
and docs/ names a file of the repository (and, into a Markdown file, one of its headings); the README is at
most 200 lines, opens with its two commands as printed and shows a pipeline in its first 60 lines."""

import importlib.util
import os
import re
import subprocess
import sys

import pytest

pytestmark = pytest.mark.backend_independent

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^\s*(```|~~~)")


def markdown_files():
    files = [os.path.join(REPO, "README.md")]
    for root, _, names in os.walk(os.path.join(REPO, "docs")):
        files += [os.path.join(root, n) for n in sorted(names) if n.endswith(".md")]
    return files


def prose_lines(path):
    """(line number, line) of a Markdown file outside its fenced code blocks."""
    inside = False
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if FENCE.match(line):
                inside = not inside
            elif not inside:
                yield number, line


def heading_anchors(path):
    """The anchors GitHub and mkdocs give a Markdown file's headings: lower case, punctuation dropped, spaces
    to hyphens."""
    anchors = set()
    for _, line in prose_lines(path):
        match = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if match:
            text = re.sub(r"`|\*\*|\[([^\]]*)\]\([^)]*\)", r"\1", match.group(1)).strip().lower()
            anchors.add(re.sub(r"\s", "-", re.sub(r"[^\w\- ]", "", text)))
    return anchors


def test_every_relative_link_of_readme_and_docs_names_an_existing_file_and_heading():
    broken = []
    for path in markdown_files():
        for number, line in prose_lines(path):
            for target in LINK.findall(line):
                if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
                    continue
                file_part, _, anchor = target.partition("#")
                resolved = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) if file_part else path
                where = f"{os.path.relpath(path, REPO)}:{number}: {target}"
                if not os.path.exists(resolved):
                    broken.append(f"{where} (no such file)")
                elif anchor and resolved.endswith(".md") and anchor not in heading_anchors(resolved):
                    broken.append(f"{where} (no heading with that anchor)")
    assert not broken, "\n".join(broken)


def test_the_link_checker_finds_a_missing_file_and_a_missing_heading(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("# Models by name: the `cache`\n\n```\n[not a link](nowhere.md)\n```\n"
                    "[a](page.md#models-by-name-the-cache) [b](gone.md) ![img](x.png)\n", encoding="utf-8")
    lines = list(prose_lines(str(page)))
    assert [n for n, _ in lines] == [1, 2, 6]
    assert LINK.findall(lines[-1][1]) == ["page.md#models-by-name-the-cache", "gone.md"]
    assert heading_anchors(str(page)) == {"models-by-name-the-cache"}


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("mkdocs") is None or importlib.util.find_spec("mkdocstrings") is None,
                    reason="mkdocs and mkdocstrings are not installed (the [dev] or [docs] extra)")
def test_the_docs_site_and_api_reference_build_with_warnings_as_errors(tmp_path):
    result = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                            cwd=REPO, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-4000:]
    # Every export of keras_bert_impl/__init__.py is on a reference page (docs/reference_hook.py puts it there).
    reference = (tmp_path / "site" / "reference" / "models" / "index.html").read_text(encoding="utf-8")
    assert 'id="keras_bert_impl.models.backbone.BertBackbone"' in reference
    assert (tmp_path / "site" / "reference" / "pipelines" / "index.html").exists()


def readme_blocks():
    """(first line number, language, code) of each fenced block of README.md."""
    blocks, start, language, code = [], None, None, []
    with open(os.path.join(REPO, "README.md"), encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if FENCE.match(line):
                if start is None:
                    start, language, code = number, line.strip()[3:], []
                else:
                    blocks.append((start, language, "".join(code)))
                    start = None
            elif start is not None:
                code.append(line)
    return blocks


def test_readme_is_short_opens_with_the_two_commands_and_shows_a_pipeline_in_its_first_60_lines():
    with open(os.path.join(REPO, "README.md"), encoding="utf-8") as f:
        assert len(f.readlines()) <= 200
    blocks = readme_blocks()
    # The two first commands, exactly: the main job, then the tests.
    assert blocks[0][1:] == ("bash", 'pip install -e ".[demo]" && python recipes/main_job.py\n')
    assert blocks[1][1:] == ("bash", "bash .ci/run\n")
    pipelines = [start for start, language, code in blocks if language == "python" and "pipeline(" in code]
    assert pipelines and pipelines[0] <= 60, pipelines
    # The extras the README names exist in pyproject.toml.
    with open(os.path.join(REPO, "pyproject.toml"), encoding="utf-8") as f:
        pyproject = f.read()
    with open(os.path.join(REPO, "README.md"), encoding="utf-8") as f:
        for extra in set(re.findall(r"`\[(\w+)\]`", f.read())):
            assert re.search(rf"^{extra} = \[", pyproject, re.MULTILINE), extra
