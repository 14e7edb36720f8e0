"""Optional imports (``errors.require_extra``) and what the command line reports when an
interrupt lands in one.

A Ctrl-C that arrives while an extension module initializes can surface as an
``ImportError`` (the fresh-clone suite saw ``bondgraph sweep`` end with "plot_study needs
matplotlib, which is not installed", exit 2, when the signal came during the import of
``matplotlib.pyplot``). Such an error is the interrupt's consequence: it must end the
program as an interrupt (exit 130), never as a missing package."""

from __future__ import annotations

import sys
import textwrap

import pytest

from bondgraph.errors import MissingExtraError, require_extra


@pytest.fixture
def package_dir(tmp_path, monkeypatch):
    """A folder on sys.path for throw-away packages; they leave sys.modules after."""
    monkeypatch.syspath_prepend(str(tmp_path))
    before = set(sys.modules)
    yield tmp_path
    for name in set(sys.modules) - before:
        del sys.modules[name]


def _package(root, name: str, body: str) -> None:
    (root / name).mkdir()
    (root / name / "__init__.py").write_text(textwrap.dedent(body))


def test_a_missing_package_is_named_with_its_extra():
    with pytest.raises(MissingExtraError) as info:
        require_extra("no_such_package_x9.sub", "a plot", "plot", package="nspx")
    text = str(info.value)
    assert "a plot needs nspx, which is not installed" in text
    assert 'pip install "vector-bondgraph[plot]"' in text


def test_a_missing_dependency_of_an_installed_package_is_named(package_dir):
    _package(package_dir, "vbg_needs_dep", "import vbg_absent_dependency\n")
    with pytest.raises(MissingExtraError) as info:
        require_extra("vbg_needs_dep", "a feature", None)
    assert "needs vbg_absent_dependency, which is not installed" in str(info.value)


def test_an_installed_package_that_fails_to_import_is_not_called_missing(package_dir):
    _package(package_dir, "vbg_broken", "from os import no_such_name\n")
    with pytest.raises(MissingExtraError) as info:
        require_extra("vbg_broken", "a feature", "plot")
    text = str(info.value)
    assert "installed but failed to import" in text and "no_such_name" in text, text
    assert "not installed" not in text and "--force-reinstall vbg_broken" in text
    assert 'vector-bondgraph[plot]' in text


def test_an_import_interrupted_by_a_signal_raises_the_interrupt(package_dir):
    # what an extension's initialization does when Ctrl-C lands in it: its ImportError
    # carries the KeyboardInterrupt as its context
    _package(package_dir, "vbg_interrupted", """
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt:
            raise ImportError("initialization failed")
    """)
    with pytest.raises(KeyboardInterrupt):
        require_extra("vbg_interrupted", "a plot", "plot")


def test_after_a_ctrl_c_the_command_line_reports_the_interrupt(monkeypatch, capsys):
    """An error raised after the program's SIGINT handler ran (an import the signal
    broke, reported as a missing package) ends as the interrupt: exit 130, one line."""
    from bondgraph_cli import commands, exits

    def broken(args):
        raise MissingExtraError("plot_study", "matplotlib", "plot")

    parser = commands.build_parser()
    monkeypatch.setattr(commands, "build_parser", lambda: parser)
    args = parser.parse_args(["check", "somewhere"])
    monkeypatch.setattr(parser, "parse_args", lambda argv: args)
    monkeypatch.setattr(args, "func", broken)
    assert commands.run(["check", "somewhere"]) == exits.EXIT_BAD_INPUT   # no Ctrl-C
    assert "not installed" in capsys.readouterr().err
    monkeypatch.setattr(exits, "SIGINT_SEEN", [True])
    monkeypatch.setattr(commands, "SIGINT_SEEN", exits.SIGINT_SEEN)
    assert commands.run(["check", "somewhere"]) == exits.EXIT_INTERRUPTED
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("interrupted"), err
