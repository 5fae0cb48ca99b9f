"""The package's messages go to its logger ("keras_bert_impl" and its children); a library user configures it as
any logger, and a recipe (`runners.cli.run_main`, `recipe_logging`) shows them as its lines: an INFO message
as it is on stdout (the stream of the moment: a redirection takes it), a warning as "warning: <message>" on
stderr, once even when one recipe runs inside another; afterwards the logger is as it was."""

import contextlib
import io
import logging

from keras_bert_impl.runners.cli import recipe_logging, run_main

LOGGER = logging.getLogger("keras_bert_impl.tasks.example")


def test_a_recipe_shows_the_messages_as_its_lines_on_stdout_and_warnings_on_stderr(capsys):
    with recipe_logging():
        LOGGER.info("labels: ['neg', 'pos']")
        LOGGER.warning("--init_checkpoint x has no trained classifier head")
        LOGGER.debug("not shown")
        with recipe_logging():  # a recipe run in the process of another: one line still
            LOGGER.info("\nepoch 1: dev accuracy=0.5000")
        redirected = io.StringIO()
        with contextlib.redirect_stdout(redirected):
            LOGGER.info("wrote 3 test predictions to out/SST-2.tsv")
    captured = capsys.readouterr()
    assert captured.out == "labels: ['neg', 'pos']\n\nepoch 1: dev accuracy=0.5000\n"
    assert captured.err == "warning: --init_checkpoint x has no trained classifier head\n"
    assert redirected.getvalue() == "wrote 3 test predictions to out/SST-2.tsv\n"


def test_outside_a_recipe_the_logger_is_the_library_users(capsys, caplog):
    package = logging.getLogger("keras_bert_impl")
    before = (list(package.handlers), package.level, package.propagate)
    run_main(lambda: _Parser(), lambda args: LOGGER.info("inside"), [])
    assert capsys.readouterr().out == "inside\n"
    assert (list(package.handlers), package.level, package.propagate) == before
    with caplog.at_level(logging.INFO, logger="keras_bert_impl"):
        LOGGER.info("a library message")
    assert capsys.readouterr().out == "" and caplog.messages == ["a library message"]


class _Parser:
    def parse_args(self, argv):
        return type("Args", (), {})()
