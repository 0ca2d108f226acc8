"""One error tree: every error chainkit raises derives from chainkit.ChainkitError and keeps the
standard base it always had; each package exports its own errors, defined in its errors.py."""

from __future__ import annotations

import ast
import asyncio
import builtins
import importlib
import importlib.metadata
import importlib.util
import inspect
import pkgutil
import re
import subprocess
import sys
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

import pytest

import chainkit
from chainkit import chains, llms, memory, prompts, tools
from chainkit.memory import buffer
from tests.support.extras import missing_extra
from tests.support.named_errors import unnamed_chainkit_error

# Each package's exported errors and the standard exception each one also is (Exception when
# it is none of the more specific ones). A name added, dropped or rebased fails here. A package
# exports the errors a caller handles when a run meets the outside world or ends short (a model,
# a tool, an MCP server or a store failing; a run not finished) and the roots of its families.
EXPORTED_ERRORS: dict[str, dict[str, type[Exception]]] = {
    "schema": {
        "MessageFormatError": TypeError,  # a ValueError too
    },
    "prompts": {
        "PromptError": ValueError,
    },
    "callbacks": {
        "TraceFormatError": ValueError,
    },
    "llms": {
        "AllModelsFailedError": Exception,
        "ModelConnectionError": Exception,
        "ModelError": Exception,
        "ModelRefusalError": Exception,
        "ModelResponseError": Exception,
        "ModelStatusError": Exception,
        "ModelTimeoutError": Exception,
        "OutputValidationError": Exception,
    },
    "tools": {
        "InvalidArgumentsError": Exception,
        "MCPConnectionError": ConnectionError,
        "MCPTimeoutError": TimeoutError,
        "MCPToolError": Exception,
        "ToolError": Exception,
    },
    "chains": {
        "AllStepsFailedError": RuntimeError,
        "CitationError": ValueError,
        "InventedCitationError": ValueError,
        "UncitedAnswerError": ValueError,
    },
    "memory": {},
    "parsers": {
        "ParseError": ValueError,
    },
    "documents": {
        "LoadError": ValueError,
    },
    "indexes": {
        "VectorIndexError": Exception,
    },
    "retrievers": {
        "QueryError": ValueError,
        "RetrieverError": Exception,
    },
    "agents": {
        "ConstraintRefusedError": ValueError,
        "DeadlineExceededError": TimeoutError,
        "NotFinishedError": RuntimeError,
        "OutputParserError": ValueError,
    },
    "checkpoints": {
        "CheckpointError": Exception,
        "InterruptedCallError": RuntimeError,
        "RunExistsError": ValueError,
        "RunFinishedError": RuntimeError,
        "RunLockedError": RuntimeError,
        "RunNotFoundError": LookupError,
        "RunTakenOverError": RuntimeError,
        "StaleStateError": RuntimeError,
        "StateFormatError": ValueError,
        "StateMismatchError": ValueError,
        "StoreError": RuntimeError,
        "StoreUnavailableError": ConnectionError,
    },
}

# Errors a package exports that are chainkit's own (chainkit._errors), the same classes as
# `chainkit.<name>`: every store's database errors, exported where a store raises them too.
SHARED_ERRORS: dict[str, set[str]] = {
    "checkpoints": {"StoreError", "StoreUnavailableError"},
}

# Defined in an errors.py but not exported from the package: a mistake in the caller's code or
# settings, whose message names the fix (caught, if at all, as ChainkitError or the standard
# exception), or an error that never leaves chainkit. Importable from `chainkit.<package>.errors`.
UNEXPORTED_ERRORS: dict[str, dict[str, type[Exception]]] = {
    "tools": {
        "MCPNotInstalledError": ModuleNotFoundError,
        "MCPSessionError": RuntimeError,
        "MalformedJSONError": ValueError,
        "ToolAttributeError": AttributeError,
        "ToolConfigError": ValueError,
        "ToolDefinitionError": TypeError,
        "ToolTypeError": TypeError,
    },
    "schema": {
        "ConcatError": ValueError,
        "ConversionError": ValueError,
    },
    "prompts": {
        "PromptAttributeError": AttributeError,
        "PromptTypeError": TypeError,
    },
    "callbacks": {
        "HandlerConfigError": ValueError,
        "HandlerDependencyError": ModuleNotFoundError,
        "HandlerTypeError": TypeError,
    },
    "llms": {
        "FakeLLMExhaustedError": RuntimeError,
        "ModelAttributeError": AttributeError,
        "ModelConfigError": ValueError,
        "ModelDependencyError": ModuleNotFoundError,
        "ModelReplyShapeError": Exception,
        "ModelRequestError": Exception,
        "ModelTypeError": TypeError,
        "UnknownOptionError": TypeError,
    },
    "chains": {
        "ChainAttributeError": AttributeError,
        "ChainKeyError": ValueError,
        "ChainTypeError": TypeError,
        "ChainWiringError": ValueError,
        "InputValueError": ValueError,
        "InputsTypeError": TypeError,
        "MissingInputKeysError": ValueError,
        "MissingOutputKeysError": ValueError,
        "OptionsError": ValueError,
        "OptionsTypeError": TypeError,
        "OutputNotStringError": TypeError,
        "OutputsTypeError": TypeError,
        "SingleKeyError": ValueError,
    },
    "agents": {
        "AgentConfigError": ValueError,
        "AgentTypeError": TypeError,
        "NoReturnError": RuntimeError,
        "UnknownToolError": LookupError,
    },
    "memory": {
        "MemoryKeyError": ValueError,
        "MemoryTypeError": TypeError,
        "MemoryValueError": ValueError,
    },
    "checkpoints": {
        "CheckpointConfigError": ValueError,
    },
    "serving": {
        "ServeConfigError": ValueError,
    },
    "documents": {
        "BinaryFileError": ValueError,
        "DocumentTypeError": TypeError,
        "DocumentValueError": ValueError,
        "ExtraMissingError": ModuleNotFoundError,
        "FileTooLargeError": ValueError,
    },
    "indexes": {
        "IndexConfigError": ValueError,
        "IndexTypeError": TypeError,
    },
    "retrievers": {
        "RetrieverConfigError": ValueError,
        "RetrieverTypeError": TypeError,
    },
    "parsers": {
        "ParserAttributeError": AttributeError,
        "ParserConfigError": ValueError,
        "ParserTypeError": TypeError,
    },
}

# Exported cancellations: BaseExceptions (as KeyboardInterrupt and CancelledError are), so that
# no `except Exception` on the way takes a run stopped on purpose for a failure to handle.
CANCELLATIONS = {"callbacks": {"StreamClosed"}}

# Where errors that moved into an errors.py were imported from before; they still are.
FORMER_HOMES = [
    ("chainkit.schema.message", "MessageFormatError"),
    ("chainkit.schema.concat", "ConcatError"),
    ("chainkit.schema.convert", "ConversionError"),
    ("chainkit.llms.fake", "FakeLLMExhaustedError"),
    ("chainkit.chains.sequential", "ChainWiringError"),
    ("chainkit.memory.buffer", "MemoryKeyError"),
    ("chainkit.tools.base", "ToolError"),
    ("chainkit.tools.structured", "InvalidArgumentsError"),
    ("chainkit.tools._arguments", "MalformedJSONError"),
    ("chainkit.tools._mcp.tool", "MCPToolError"),
    ("chainkit.tools._mcp.client", "MCPConnectionError"),
]

_STANDARD = [
    ModuleNotFoundError,
    ConnectionError,
    TimeoutError,
    LookupError,
    AttributeError,
    TypeError,
    ValueError,
    RuntimeError,
]


def _exported_errors(package: str) -> dict[str, type[BaseException]]:
    module = importlib.import_module(f"chainkit.{package}")
    return {
        name: value
        for name in module.__all__
        if isinstance(value := getattr(module, name), type) and issubclass(value, BaseException)
    }


def _standard_base(error: type[BaseException]) -> type[BaseException]:
    return next((base for base in _STANDARD if issubclass(error, base)), Exception)


@pytest.mark.parametrize("package", sorted(EXPORTED_ERRORS))
def test_each_package_exports_exactly_its_pinned_errors(package):
    exported = _exported_errors(package)
    for name in CANCELLATIONS.get(package, set()):
        cancellation = exported.pop(name)
        assert not issubclass(cancellation, Exception), name
    assert sorted(exported) == sorted(EXPORTED_ERRORS[package])
    for name, error in exported.items():
        assert issubclass(error, chainkit.ChainkitError), name
        assert _standard_base(error) is EXPORTED_ERRORS[package][name], name


@pytest.mark.parametrize("package", sorted(EXPORTED_ERRORS))
def test_a_package_defines_its_errors_in_its_errors_module(package):
    errors = importlib.import_module(f"chainkit.{package}.errors")
    defined = {
        name
        for name, value in vars(errors).items()
        if inspect.isclass(value)
        and issubclass(value, BaseException)
        and value.__module__ == errors.__name__
    }
    shared = SHARED_ERRORS.get(package, set())
    assert defined == (
        set(EXPORTED_ERRORS[package]) - shared
        | set(UNEXPORTED_ERRORS.get(package, {}))
        | CANCELLATIONS.get(package, set())
    )
    for name in set(EXPORTED_ERRORS[package]) - shared:
        assert getattr(errors, name).__module__ == errors.__name__
    for name in shared:
        assert getattr(errors, name) is getattr(chainkit, name), name


@pytest.mark.parametrize("package", sorted(UNEXPORTED_ERRORS))
def test_an_unexported_error_is_in_the_tree_and_only_in_its_errors_module(package):
    errors = importlib.import_module(f"chainkit.{package}.errors")
    namespace = vars(importlib.import_module(f"chainkit.{package}"))
    for name, standard in UNEXPORTED_ERRORS[package].items():
        error = getattr(errors, name)
        assert issubclass(error, chainkit.ChainkitError), name
        assert _standard_base(error) is standard, name
        assert name not in namespace, name


@pytest.mark.parametrize(("module", "name"), FORMER_HOMES)
def test_moved_errors_are_still_importable_where_they_were(module, name):
    package = module.split(".")[1]
    moved = getattr(importlib.import_module(f"chainkit.{package}.errors"), name)
    assert getattr(importlib.import_module(module), name) is moved


def test_the_root_and_the_errors_of_no_one_package_are_exported_from_chainkit_itself():
    assert chainkit.__all__ == [
        "ChainkitError",
        "Database",
        "EscapedStopError",
        "FactoryError",
        "OutputBusyError",
        "OutputWriteError",
        "StoreConfigError",
        "StoreError",
        "StoreUnavailableError",
        "open_database",
    ]
    assert chainkit.ChainkitError.__mro__[1:] == (Exception, BaseException, object)
    for name, standard in [
        ("EscapedStopError", RuntimeError),
        ("FactoryError", ValueError),
        ("OutputBusyError", OSError),
        ("OutputWriteError", OSError),
        ("StoreConfigError", ValueError),
        ("StoreError", RuntimeError),
        ("StoreUnavailableError", ConnectionError),
    ]:
        error = getattr(chainkit, name)
        assert error.__module__ == "chainkit._errors"
        assert issubclass(error, chainkit.ChainkitError) and issubclass(error, standard), name


def test_a_stop_escaping_user_code_is_a_chainkit_runtime_error():
    from chainkit._stop import stop_escaped

    escaped = stop_escaped(StopIteration("done"), "tool 'x'")
    assert type(escaped) is chainkit.EscapedStopError
    assert isinstance(escaped, chainkit.ChainkitError) and isinstance(escaped, RuntimeError)
    assert str(escaped) == "tool 'x' raised StopIteration: done"


def test_mcptools_without_the_mcp_package_says_how_to_install_it(monkeypatch):
    monkeypatch.delitem(sys.modules, "chainkit.tools._mcp.connection", raising=False)
    monkeypatch.setitem(sys.modules, "mcp", None)  # makes `import mcp` fail
    server = tools.MCPTools(command=["server"])
    with pytest.raises(
        tools.errors.MCPNotInstalledError, match=r"pip install 'chainkit\[mcp\]'"
    ) as got:
        server.__enter__()
    assert isinstance(got.value, ModuleNotFoundError)
    assert got.value.name == "mcp"


def test_an_mcptools_not_open_raises_a_session_error_naming_it():
    server = tools.MCPTools(command=["server"], name="weather")
    with pytest.raises(tools.errors.MCPSessionError, match="is not open"):
        _ = server.tools
    with pytest.raises(tools.errors.MCPSessionError, match="is not open"):
        server.refresh()


# The check every test runs with (tests/support/named_errors.py), checked itself.


def _raising_in(module: types.ModuleType, error: BaseException) -> Callable[..., NoReturn]:
    """A function that raises `error`, whose frame shows as a line of `module`: a stand-in for
    a chainkit function that lets a plain error out."""

    def broken(*args: Any, **kwargs: Any) -> NoReturn:
        raise error

    assert module.__file__ is not None
    broken.__code__ = broken.__code__.replace(co_filename=module.__file__)
    return broken


def _caught(function: Callable[[], object]) -> BaseException:
    try:
        function()
    except BaseException as error:
        return error
    raise AssertionError("nothing was raised")


def test_the_check_names_a_plain_error_raised_in_chainkit_with_its_place():
    error = _caught(_raising_in(buffer, ValueError("plain")))
    problem = unnamed_chainkit_error(error)
    assert problem is not None
    assert "builtins.ValueError(plain)" in problem
    assert f"{buffer.__file__}:" in problem
    assert "not a chainkit.ChainkitError" in problem


def test_the_check_lets_through_what_chainkit_did_not_raise_or_named():
    named = _caught(_raising_in(buffer, memory.errors.MemoryKeyError("named")))
    assert unnamed_chainkit_error(named) is None
    interrupt = _caught(_raising_in(buffer, KeyboardInterrupt()))
    assert unnamed_chainkit_error(interrupt) is None
    users = _caught(_raising_in(sys.modules[__name__], ValueError("the user's own")))
    assert unnamed_chainkit_error(users) is None
    assert unnamed_chainkit_error(ValueError("never raised")) is None


def _chat_with_memory() -> chains.LLMChain:
    prompt = prompts.PromptTemplate.from_template("{history}\nHuman: {input}\nAI:")
    return chains.LLMChain(prompt, llms.FakeLLM(["a", "b"]), memory=memory.ConversationBuffer())


def test_pytest_raises_fails_a_test_that_catches_a_plain_error_from_chainkit(monkeypatch):
    broken = _raising_in(buffer, ValueError("a plain error"))
    monkeypatch.setattr(memory.ConversationBuffer, "load_memory_variables", broken)
    failed = pytest.raises(pytest.fail.Exception, match=r"builtins\.ValueError\(a plain error\) at")
    with failed, pytest.raises(ValueError):
        chains.run(_chat_with_memory(), "hi")


def test_batch_results_are_checked_too(monkeypatch):
    broken = _raising_in(buffer, RuntimeError("a plain error"))
    monkeypatch.setattr(memory.ConversationBuffer, "save_context", broken)
    inputs = [{"input": "hi"}]
    with pytest.raises(pytest.fail.Exception, match=r"chains\.batch returned an error: .*Runtime"):
        chains.batch(_chat_with_memory(), inputs, return_exceptions=True)
    with pytest.raises(pytest.fail.Exception, match=r"chains\.batch returned an error: .*Runtime"):
        asyncio.run(chains.abatch(_chat_with_memory(), inputs, return_exceptions=True))


# The "Errors" table of the docs, checked against the errors chainkit exports.

ERRORS_PAGE = Path(__file__).resolve().parent.parent / "docs" / "errors.md"
# Raised inside chainkit and always caught there: never reach a user.
INTERNAL_ERRORS = {
    "chainkit.tools.errors.MalformedJSONError",
    "chainkit._jsonschema.specs.UnsupportedTypeError",
    "chainkit._jsonschema.lenient.JSONTextError",
}
_TABLE_STANDARD = [
    ModuleNotFoundError,
    ConnectionError,
    TimeoutError,
    OSError,
    LookupError,
    AttributeError,
    TypeError,
    ValueError,
    RuntimeError,
]


def _readme_error_table(page: str | None = None) -> dict[str, dict[str, str | None]]:
    """Each row of the table in `page` (docs/errors.md's text by default): the module
    (`chainkit.x`, or `chainkit`) and its errors, each with the standard exception the page
    gives it in parentheses (None for none)."""
    text = ERRORS_PAGE.read_text(encoding="utf-8") if page is None else page
    section = text.split("\n## ", 1)[0]
    rows: dict[str, dict[str, str | None]] = {}
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        named = re.match(r"`(\w+)`", cells[0]) if len(cells) == 2 else None
        if named is None or named.group(1) == "package":
            continue
        module = "chainkit" if named.group(1) == "chainkit" else f"chainkit.{named.group(1)}"
        errors: dict[str, str | None] = {}
        # "`A`, `B` (ValueError); `C` (TypeError)": a base in parentheses is that of the
        # errors named since the last parenthesis or semicolon.
        for clause in cells[1].split(";"):
            for piece in clause.split(")"):
                base = re.search(r"\((\w+)$", piece.strip())
                for name in re.findall(r"`(\w+Error)`", piece):
                    errors[name] = base.group(1) if base else None
        rows[module] = errors
    return rows


def _public_modules() -> list[str]:
    names = [info.name for info in pkgutil.walk_packages(chainkit.__path__, "chainkit.")]
    return ["chainkit", *(n for n in names if not any(p.startswith("_") for p in n.split(".")))]


def _exports(module_name: str) -> dict[str, type[BaseException]]:
    """The ChainkitErrors in a module's `__all__`; for a module whose optional dependency
    is missing (an extra not installed), read from its source."""
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        assert missing_extra(error), error
        return _exports_in_source(module_name)
    return {
        name: value
        for name in getattr(module, "__all__", ())
        if isinstance(value := getattr(module, name), type)
        and issubclass(value, chainkit.ChainkitError)
    }


def _exports_in_source(module_name: str) -> dict[str, type[BaseException]]:
    spec = importlib.util.find_spec(module_name)
    assert spec is not None and spec.origin is not None
    tree = ast.parse(Path(spec.origin).read_text())
    exported: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(target, ast.Name) and target.id == "__all__" for target in node.targets
        ):
            exported = set(ast.literal_eval(node.value))
    found: dict[str, type[BaseException]] = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name in exported:
            bases = [
                getattr(builtins, base.id)
                for base in node.bases
                if isinstance(base, ast.Name) and hasattr(builtins, base.id)
            ]
            if any(
                isinstance(base, ast.Name) and base.id == "ChainkitError" for base in node.bases
            ):
                found[node.name] = type(node.name, (chainkit.ChainkitError, *bases), {})
    return found


def _exported_chainkit_errors() -> dict[str, dict[str, type[BaseException]]]:
    exported = {module: _exports(module) for module in _public_modules()}
    return {module: errors for module, errors in exported.items() if errors}


def test_the_readme_error_table_names_exactly_the_exported_errors():
    table = _readme_error_table()
    exported = _exported_chainkit_errors()
    assert {module: sorted(errors) for module, errors in table.items()} == {
        module: sorted(errors) for module, errors in exported.items()
    }


def test_the_readme_error_table_gives_each_error_its_standard_base():
    exported = _exported_chainkit_errors()
    for module, errors in _readme_error_table().items():
        for name, base in errors.items():
            error = exported[module][name]
            if base is None:
                assert not any(issubclass(error, b) for b in _TABLE_STANDARD), name
            else:
                assert issubclass(error, getattr(builtins, base)), (name, base)


def test_the_table_check_sees_a_missing_row_entry():
    # The check parses what the page says, so a name dropped from it is seen.
    text = ERRORS_PAGE.read_text(encoding="utf-8")
    assert ", `MCPTimeoutError` (TimeoutError)" in text
    dropped = text.replace(", `MCPTimeoutError` (TimeoutError)", "")
    assert "MCPTimeoutError" not in _readme_error_table(dropped)["chainkit.tools"]
    assert "MCPTimeoutError" in _exported_chainkit_errors()["chainkit.tools"]


def _all_modules() -> list[str]:
    names = []
    for info in pkgutil.walk_packages(chainkit.__path__, "chainkit."):
        try:
            importlib.import_module(info.name)
        except ModuleNotFoundError as error:
            assert missing_extra(error), error
            continue
        names.append(info.name)
    return names


def _subclasses(error: type[BaseException]) -> set[type[BaseException]]:
    found = set(error.__subclasses__())
    for child in list(found):
        found |= _subclasses(child)
    return found


def _errors_a_user_can_import() -> set[type[BaseException]]:
    """The errors some public module exports, and those a package's errors module holds for
    its users (not the internal ones)."""
    exported = {
        error for errors in _exported_chainkit_errors().values() for error in errors.values()
    }
    for package, names in UNEXPORTED_ERRORS.items():
        errors_module = importlib.import_module(f"chainkit.{package}.errors")
        exported |= {
            getattr(errors_module, name)
            for name in names
            if f"{errors_module.__name__}.{name}" not in INTERNAL_ERRORS
        }
    return exported


def test_every_public_chainkit_error_is_exported_from_a_public_module():
    _all_modules()
    exported = _errors_a_user_can_import()
    not_exported = {
        f"{error.__module__}.{error.__qualname__}"
        for error in _subclasses(chainkit.ChainkitError)
        if error.__module__.startswith("chainkit.")
        and not error.__name__.startswith("_")
        and error not in exported
    }
    assert not_exported == INTERNAL_ERRORS


def test_a_private_error_class_is_caught_as_an_exported_one():
    _all_modules()
    exported = _errors_a_user_can_import()
    for error in _subclasses(chainkit.ChainkitError):
        if error.__name__.startswith("_"):
            assert any(base in exported for base in error.__mro__[1:]), error


def test_version_is_the_installed_distributions():
    assert chainkit.__version__ == importlib.metadata.version("chainkit")
    # Read from the metadata, not written in the code: another installed version shows.
    code = (
        "import sys, importlib.metadata as metadata\n"
        "real = metadata.version\n"
        "metadata.version = lambda name: '9.8.7' if name == 'chainkit' else real(name)\n"
        "import chainkit\n"
        "print(chainkit.__version__)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.stdout.split() == ["9.8.7"], result.stderr


def test_importing_chainkit_does_not_import_the_metadata_reader():
    code = "import sys, chainkit\nprint('importlib.metadata' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.stdout.split() == ["False"], result.stderr


def _every_error_class() -> list[type[chainkit.ChainkitError]]:
    for module in pkgutil.walk_packages(chainkit.__path__, "chainkit."):
        if module.name.endswith(".errors"):
            importlib.import_module(module.name)
    found: list[type[chainkit.ChainkitError]] = []
    waiting = [chainkit.ChainkitError]
    while waiting:
        error = waiting.pop()
        waiting.extend(error.__subclasses__())
        if error.__module__.startswith("chainkit."):  # not the tests' stand-ins
            found.append(error)
    return found


def test_every_error_pickles_whole_whatever_its_init_takes():
    """A Ray worker's or a batch job's error crosses processes by pickle; most errors'
    `__init__` take other arguments than their `args`, which pickling used to call again."""
    import pickle

    for error in _every_error_class():
        made = error.__new__(error)
        made.args = ("what went wrong",)
        vars(made)["detail"] = {"id": 7}
        copy = pickle.loads(pickle.dumps(made))
        assert type(copy) is error
        assert (copy.args, vars(copy)) == (made.args, {"detail": {"id": 7}})
    from chainkit.agents.errors import OutputParserError

    reply = OutputParserError("bad", "Final Answer: {", typed_answer=True)
    copy = pickle.loads(pickle.dumps(reply))
    assert (str(copy), copy.llm_output, copy.typed_answer) == (str(reply), "Final Answer: {", True)
