"""Real models' chat templates, as llama.cpp keeps them in `models/templates`: read from the
llama-cpp-python source distribution on PyPI, which `.ci/run` downloads once and unpacks into
the folder CHAINKIT_CHAT_TEMPLATES names, so that the project holds no copy of them. Without
the folder the tests that read them skip, unless CI is set: there they fail."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

FOLDER_VARIABLE = "CHAINKIT_CHAT_TEMPLATES"


def chat_template(name: str) -> str:
    """The template `name`.jinja of that folder (read when a test module is collected)."""
    folder = os.environ.get(FOLDER_VARIABLE)
    if not folder:
        if os.environ.get("CI"):
            pytest.fail(f"CI must have the chat templates: .ci/run sets {FOLDER_VARIABLE}")
        pytest.skip(
            f"no chat templates: set {FOLDER_VARIABLE} to llama.cpp's models/templates"
            " (as .ci/run does)",
            allow_module_level=True,
        )
    return (Path(folder) / f"{name}.jinja").read_text(encoding="utf-8")
