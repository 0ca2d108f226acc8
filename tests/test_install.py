"""The README's install, seen from a user's project: mypy run on a script outside the checkout
finds chainkit and its types."""

import json
import subprocess
import sys
import sysconfig
import textwrap
import tomllib
import venv
from importlib import metadata
from pathlib import Path
from urllib.parse import urlparse
from urllib.request import url2pathname

import pytest

from tests.support.typecheck import MYPY_SECONDS, ROOT, mypy_errors

USER_CODE = textwrap.dedent(
    """
    from chainkit import chains, llms
    from chainkit.prompts import PromptTemplate

    llm = llms.OpenAI("gpt-4o-mini", temperature=0, seed=1)
    chain = chains.LLMChain(PromptTemplate.from_template("{q}"), llm)
    answer: str = chains.run(chain, "hi", max_tokens=5)
    llms.OpenAI("gpt-4o-mini", temprature=0)
    """
)
"""Right but for its last line: a misspelt default option of the model."""

PIP_SECONDS = 150
"""Building and installing the editable wheel: seconds alone, longer on a loaded machine."""


def installed_editable_from_here() -> bool:
    """Whether this environment's chainkit is an editable install of this checkout, as the
    README's `pip install -e ".[dev]"` makes in CI."""
    # Among this environment's packages alone: the checkout holds a chainkit.egg-info too.
    site_packages = sysconfig.get_path("purelib")
    installed = next(iter(metadata.distributions(name="chainkit", path=[site_packages])), None)
    if installed is None:
        return False
    found = json.loads(installed.read_text("direct_url.json") or "{}")
    editable = found.get("dir_info", {}).get("editable", False)
    return bool(editable) and Path(url2pathname(urlparse(found["url"]).path)).resolve() == ROOT


def readme_install(where: Path) -> str:
    """The Python of a new environment where this checkout is installed as the README does
    (`pip install -e`), without its dependencies, which mypy does not need to find chainkit."""
    venv.create(where, with_pip=False)
    python = str(where / "bin" / "python")
    pip = subprocess.run(
        [
            *(sys.executable, "-m", "pip", "--python", python),
            *("install", "--quiet", "--no-deps", "-e", str(ROOT)),
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=PIP_SECONDS,
    )
    assert pip.returncode == 0, pip.stdout + pip.stderr
    return python


@pytest.mark.timeout(PIP_SECONDS + MYPY_SECONDS + 30)
def test_mypy_finds_chainkit_for_a_script_outside_the_checkout(tmp_path: Path) -> None:
    pytest.importorskip("mypy")
    # CI's environment is installed the README's way; elsewhere, one is made like it.
    here = installed_editable_from_here()
    python = sys.executable if here else readme_install(tmp_path / "venv")
    project = tmp_path / "project"
    project.mkdir()
    assert not project.is_relative_to(ROOT)
    errors, output = mypy_errors(project, USER_CODE, installed_in=python)
    assert len(errors) == 1, output
    assert ':8: error: Unexpected keyword argument "temprature" for "OpenAI"' in errors[0]


def test_the_trace_pages_files_are_package_data() -> None:
    # A built wheel holds the files under chainkit that pyproject's package-data names.
    with open(ROOT / "pyproject.toml", "rb") as file:
        globs = tomllib.load(file)["tool"]["setuptools"]["package-data"]["chainkit"]
    package = ROOT / "chainkit"
    assets = sorted((package / "callbacks" / "trace_page").iterdir())
    assert {path.suffix for path in assets} == {".html", ".css", ".js"}
    for path in assets:
        assert any(path.relative_to(package).match(glob) for glob in globs), path
