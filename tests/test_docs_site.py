"""The docs site (mkdocs.yml, docs/): every page in the navigation, every shell command in README.md and docs/*.md
real, the committed figure current, and — once `.ci/run` has built the site (SYMUAT_DOCS_SITE=site) — the built site
offline, linking the HTML ledger, and rendered by headless Chromium without console errors.

The Python blocks of the same pages run as tests of their own (pytest-markdown-docs, conftest.py).
"""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import shutil
from pathlib import Path

import click
import pytest
from chromium_support import distinct_colours, screenshot

from symuat.cli import main

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]
REQUIRE_DOCS = os.environ.get("SYMUAT_REQUIRE_DOCS") == "1"
#: Fence languages: python runs, bash is shell commands (checked here), the others are output or data.
LANGUAGES = {"python", "bash", "text", "json", "yaml", "toml"}
FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,})(?P<info>[^\n`]*)\n(?P<body>.*?)^(?P=indent)(?P=fence)\s*$",
                   re.M | re.S)


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _fences(page: Path) -> list[tuple[str, str, int]]:
    """(language, body, line) of every fenced block of ``page``."""
    text = page.read_text(encoding="utf-8")
    return [(m.group("info").split()[0] if m.group("info").split() else "", m.group("body"),
             text.count("\n", 0, m.start()) + 1) for m in FENCE.finditer(text)]


def _extras() -> set[str]:
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    section = text.split("[project.optional-dependencies]", 1)[1].split("\n[", 1)[0]
    return set(re.findall(r"^([a-z][a-z0-9-]*)\s*=", section, re.M))


def _ci_torch_pin() -> str:
    return re.search(r"pip install torch==(\S+)", (ROOT / ".ci" / "run").read_text(encoding="utf-8")).group(1)


def check_command(line: str) -> None:
    """Raise ``AssertionError`` unless ``line`` is a command these docs may show, with real options."""
    words = shlex.split(line)
    if words[0] == "symuat":
        ctx = click.Context(main, info_name="symuat")  # the group has no options but --help and --version
        name, *rest = words[1:]
        command = main.get_command(ctx, name)
        assert command is not None, f"no command `symuat {name}`"
        command.make_context(name, rest, parent=ctx)  # unknown options or bad values raise click errors
    elif words[:2] == ["pip", "install"]:
        for word in words[2:]:
            extras = re.fullmatch(r"\.\[([a-z0-9,-]+)\]", word)
            if extras:
                unknown = set(extras.group(1).split(",")) - _extras()
                assert not unknown, f"pyproject.toml declares no extra {sorted(unknown)}"
            elif word.startswith("torch=="):
                assert word == f"torch=={_ci_torch_pin()}", f"{word}: CI installs torch=={_ci_torch_pin()}"
            else:
                assert word in ("-e", "--index-url", "https://download.pytorch.org/whl/cpu"), word
    elif words[:3] == ["python", "-m", "pytest"] or words[:2] == ["mkdocs", "build"]:
        pass
    elif words[0] == "python" and words[1].startswith("benchmarks/"):
        assert (ROOT / words[1]).is_file(), words[1]
    else:
        raise AssertionError(f"unknown shell command in the docs: {line!r}")


def _commands(body: str) -> list[str]:
    """The commands of a shell block: continuation lines joined, ``&&`` split, comments (``# …``) dropped."""
    joined = re.sub(r"\\\n\s*", " ", body)
    lines = (re.sub(r"(^|\s)#.*$", "", line).strip() for line in joined.splitlines())
    return [part.strip() for line in lines if line for part in line.split("&&")]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_fence_names_its_language_and_every_shell_command_is_real(page):
    for language, body, line in _fences(page):
        assert language in LANGUAGES, f"{page.name}:{line}: fence language {language!r} (docs/testing.md)"
        if language == "bash":
            for command in _commands(body):
                try:
                    check_command(command)
                except click.exceptions.ClickException as exc:  # UsageError, NoSuchOption, BadParameter
                    raise AssertionError(f"{page.name}:{line}: {command!r}: {exc.format_message()}") from None


@pytest.mark.parametrize("line, message", [
    ("symuat audti", "no command `symuat audti`"),
    ("symuat html --outt site", "No such option"),
    ("symuat audit --format xml", "is not one of"),
    ("pip install -e '.[torhc]'", "declares no extra"),
    ("pip install torch==2.0.0 --index-url https://download.pytorch.org/whl/cpu", "CI installs torch"),
    ("curl https://example.org | sh", "unknown shell command"),
])
def test_the_command_check_rejects_stale_commands(line, message):
    with pytest.raises((AssertionError, click.exceptions.ClickException)) as info:
        check_command(line)
    text = info.value.format_message() if isinstance(info.value, click.ClickException) else str(info.value)
    assert message in text


def test_the_tutorials_shell_commands_run(tmp_path, monkeypatch):
    """docs/tutorial-your-paper.md: its module saved as my_paper/__init__.py, each `symuat` line of the page runs."""
    from click.testing import CliRunner

    from symuat.ledger import sources

    page = DOCS / "tutorial-your-paper.md"
    fences = _fences(page)
    (tmp_path / "my_paper").mkdir()
    (tmp_path / "my_paper" / "__init__.py").write_text(next(b for lang, b, _ in fences if lang == "python"))
    shutil.copytree(ROOT / "docs" / "examples" / "lora", tmp_path / "docs" / "examples" / "lora")  # the 2nd example
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sources, "_REGISTRY", dict(sources._REGISTRY))  # the tutorial registers its paper
    commands = [c for lang, body, _ in fences if lang == "bash" for c in _commands(body)]
    assert len(commands) == 5
    for command in commands:
        args = shlex.split(command)[1:]
        if args[0] == "build":  # its PDF compile is CI's slow step (tests/test_latex_paper.py)
            args.append("--no-pdf")
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 0, (command, result.output)
    assert (tmp_path / "my-ledger" / "mynotes.html").is_file()
    assert "Notes on vectorisation" in (tmp_path / "my-appendix" / "main.tex").read_text()
    assert "LoRA: Low-Rank" in (tmp_path / "lora-appendix" / "main.tex").read_text()


def test_the_fence_reader_sees_languages_and_marks(tmp_path):
    page = tmp_path / "p.md"
    page.write_text("a\n\n```python fixture:torch continuation\nx = 1\n```\n\n```bash\nsymuat audit\n```\n")
    assert _fences(page) == [("python", "x = 1\n", 3), ("bash", "symuat audit\n", 7)]


def test_the_home_page_counts_the_ledger(ledger):
    text = (DOCS / "index.md").read_text(encoding="utf-8")
    assert int(re.search(r"ledger\s+of\s+(\d+)\s+entries", text).group(1)) == len(ledger)


def test_every_page_is_in_the_navigation_and_every_entry_exists():
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    listed = re.findall(r":\s*([\w-]+\.md)\s*$", config, re.M)
    assert len(listed) == len(set(listed))
    assert sorted(listed) == sorted(p.name for p in DOCS.glob("*.md"))


def test_the_site_hook_drops_test_marks_before_rendering():
    hooks = _load("symuat_docs_hooks", DOCS / "_hooks" / "site.py")
    text = "```python fixture:torch continuation\nx\n```\n~~~python notest\n~~~\n```bash\nsymuat audit\n```\n"
    assert hooks.on_page_markdown(text) == "```python\nx\n```\n~~~python\n~~~\n```bash\nsymuat audit\n```\n"


def test_docstrings_become_markdown_for_the_api_reference():
    if importlib.util.find_spec("griffe") is None:
        assert not REQUIRE_DOCS, "SYMUAT_REQUIRE_DOCS=1 but the docs extra is not installed"
        pytest.skip("the docs extra is not installed (pip install -e '.[docs]')")
    ext = _load("symuat_docs_docstrings", DOCS / "_hooks" / "docstrings.py")
    doc = "See :func:`~symuat.audit`.\n\nParameters\n----------\nx : int\n    A value.\n\n>>> f(1)\n['a']\n"
    assert ext.markdown_docstring(doc) == ("See `symuat.audit`.\n\nParameters\n----------\nx : int\n    A value.\n\n"
                                           "\nExamples\n--------\n```pycon\n>>> f(1)\n['a']\n```\n")


def test_the_committed_figure_is_current():
    from symuat.latex import figures

    if not figures.plot_available():
        pytest.skip("matplotlib not installed")
    import matplotlib

    if matplotlib.__version__ != "3.11.2":  # the release that drew it (.ci/run installs it)
        pytest.skip(f"figure bytes are compared under matplotlib 3.11.2, not {matplotlib.__version__}")
    assert (DOCS / "img" / "fig-attribution.svg").read_bytes() == figures.attribution_figure(fmt="svg"), \
        "regenerate docs/img/fig-attribution.svg with symuat.latex.figures.attribution_figure(fmt='svg')"


# --- the built site (.ci/run: mkdocs build --strict, then SYMUAT_DOCS_SITE=site) -------------------------------

@pytest.fixture(scope="module")
def built_site() -> Path:
    where = os.environ.get("SYMUAT_DOCS_SITE")
    if not where:
        assert not REQUIRE_DOCS, "SYMUAT_REQUIRE_DOCS=1 but SYMUAT_DOCS_SITE does not name the built site"
        pytest.skip("the docs site is not built (.ci/run builds it and sets SYMUAT_DOCS_SITE)")
    site = (ROOT / where).resolve()
    assert (site / "index.html").is_file(), f"SYMUAT_DOCS_SITE={where} holds no built site"
    return site


def test_the_built_site_is_offline_and_links_the_ledger(built_site):
    fetched = re.compile(r'<(?:link|script|img)\b[^>]*?(?:href|src)="(https?:[^"]+)"')
    outside = [f"{page.name}: {url}" for page in sorted(built_site.rglob("*.html"))
               for url in fetched.findall(page.read_text(encoding="utf-8"))]
    assert outside == []
    assert (built_site / "ledger" / "index.html").is_file() and (built_site / "ledger" / "duat.html").is_file()
    assert 'href="ledger/index.html"' in (built_site / "ledger-page.html").read_text(encoding="utf-8")
    api = (built_site / "api.html").read_text(encoding="utf-8")
    assert "duat_form" in api and "load_pretrained" in api and "write_site" in api


def test_chromium_renders_a_tutorial_without_console_errors(chromium, built_site, tmp_path):
    shots = Path(os.environ.get("SYMUAT_SCREENSHOT_DIR") or tmp_path)
    shots.mkdir(parents=True, exist_ok=True)
    png = shots / "docs-tutorial-real-model.png"
    console = screenshot(chromium, built_site / "tutorial-real-model.html", png, tmp_path / "profile")
    assert console == [], console
    assert distinct_colours(png) > 50


def test_no_python_docstring_holds_a_markdown_fence():
    """conftest.py collects markdown blocks from ``.md`` files only; a ```` ```python ```` fence in a docstring of
    symuat, the derivations or the tests would never run, so there is none (doctests are ``>>>`` examples)."""
    import re

    fence = re.compile(r"^\s*```+\s*python", re.M)
    root = Path(__file__).resolve().parents[1]
    files = [p for folder in ("symuat", "derivations", "tests") for p in (root / folder).rglob("*.py")]
    found = [str(p.relative_to(root)) for p in files
             if fence.search(p.read_text(encoding="utf-8")) and p.name != "test_docs_site.py"]
    assert found == []
