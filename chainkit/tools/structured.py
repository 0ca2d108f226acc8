"""StructuredTool and @tool: a typed Python function offered to a model as a tool.

The function's type hints become the JSON schema a tool-calling model fills in; its docstring
gives the tool's description and each parameter's. The JSON arguments a model sends back are
validated and coerced against the same schema before the function runs, and every problem is
reported back to the model in one observation so it can fix them all in its next try.

Defaults are advertised as they will be accepted: `x: str = None` makes `x` nullable, a
default that is no value of its type is a TypeError when the tool is made, and one with no
JSON form (NaN, an object) is not advertised.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Coroutine, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any, overload

from chainkit._jsonschema.specs import (
    FieldSpec,
    ObjectSpec,
    Spec,
    compile_type,
    defaulted_field,
    resolved_hints,
)
from chainkit._stop import to_thread
from chainkit.tools._arguments import blank_input_arguments, decode_json
from chainkit.tools.base import Tool, ToolExample, check_approval_mark
from chainkit.tools.errors import (
    ArgumentProblem,
    MalformedJSONError,
    ToolConfigError,
    ToolDefinitionError,
    ToolTypeError,
)
from chainkit.tools.errors import InvalidArgumentsError as InvalidArgumentsError
from chainkit.tools.toolset import observation

_GOOGLE_ARGS_HEADERS = frozenset(("args:", "arguments:", "parameters:", "params:"))


class StructuredTool(Tool):
    """A function with typed parameters, called with a JSON object of arguments.

    `call` takes the arguments object as JSON text. A function whose one parameter is a string
    also takes plain text (what a MRKL model writes as its Action Input), and a function with
    one parameter of another type takes that value alone: as JSON (`5` for `def square(x:
    int)`) or, for a scalar type, as plain text (`red` for a Literal or Enum, `True` for a
    bool); text that is not a value of the type is refused naming what was expected.
    Blank input is the empty string for a function whose one parameter is a required string
    (as a plain Tool gets it), else no arguments; a function without parameters ignores text.
    A native tool call's arguments get no such leniency: see `input_from_arguments`.
    Async functions are awaited natively by `acall`; sync ones run in a worker thread there,
    unless made with `blocking=False`. Called directly, the tool is the function: `add(1, 2)`
    runs `add` as written, with no validation.
    """

    def __init__(
        self,
        func: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        return_direct: bool = False,
        blocking: bool = True,
        requires_approval: bool | Callable[[Any], bool] = False,
        idempotent: bool = False,
        examples: Iterable[ToolExample] = (),
    ) -> None:
        if not isinstance(blocking, bool):
            raise ToolTypeError(f"blocking must be True or False, got {blocking!r}")
        check_approval_mark(requires_approval)
        if not isinstance(idempotent, bool):
            raise ToolTypeError(f"idempotent must be True or False, got {idempotent!r}")
        summary, parameter_docs = _parse_docstring(inspect.getdoc(func))
        self.func = func
        self.name = name or str(getattr(func, "__name__", ""))
        if not self.name:
            raise ToolConfigError(f"give the tool for {func!r} a name")
        self.description = description or summary
        if not self.description:
            raise ToolConfigError(
                f"tool {self.name} needs a description: pass description= or give "
                "the function a docstring"
            )
        self.return_direct = return_direct
        self.blocking = blocking
        self.requires_approval = requires_approval
        self.idempotent = idempotent
        self.examples = tuple(examples)  # checked against the schema when the tool joins a Toolset
        self._signature = inspect.signature(func)
        self._spec = _arguments_spec(
            self._signature, _type_hints(func, self.name), parameter_docs, self.name
        )
        self._schema = self._spec.schema()
        self._is_async = inspect.iscoroutinefunction(func)
        fields = list(self._spec.fields.values())
        self._takes_nothing = not fields
        self._single_field = fields[0] if len(fields) == 1 else None

    # Typed loosely on purpose: a ParamSpec-generic tool would keep the signature, but mypy
    # would then infer list[object] for a list of tools with different signatures.
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.func(*args, **kwargs)

    @property
    def parameters(self) -> dict[str, Any]:
        """JSON schema of the function's arguments; an object with no other properties."""
        return self._schema

    def input_from_arguments(self, arguments: str) -> str:
        """The native tool call's arguments, checked and returned unchanged for `call`.

        Strict, since a model calling tools natively was asked for JSON: they must be a JSON
        object fitting the schema (blank means no arguments), else InvalidArgumentsError. Text
        that is cut off or not JSON is never handed to the function as a plain string.
        """
        value = self._native_value(arguments)
        self._validated(value)
        # An object sent as a JSON string (double-encoded) is passed on as the object's text.
        return value if isinstance(value, str) else arguments

    def call(self, input: str) -> str:
        return self._run(self._arguments(input))

    async def acall(self, input: str) -> str:
        if not self._is_async:
            return await super().acall(input)
        return await self._arun(self._arguments(input))

    def call_arguments(self, arguments: str) -> str:
        """Runs the function on a native call's JSON arguments, decoded and validated once
        (strictly, as `input_from_arguments` describes)."""
        return self._run(self._native_value(arguments))

    async def acall_arguments(self, arguments: str) -> str:
        if not self._is_async:
            return await to_thread(f"tool {self.name!r}", self.call_arguments, arguments)
        return await self._arun(self._native_value(arguments))

    def _run(self, value: object) -> str:
        args, kwargs = self._bind(value)
        if self._is_async:
            return observation(_run_coroutine(self.func(*args, **kwargs)))
        return observation(self.func(*args, **kwargs))

    async def _arun(self, value: object) -> str:
        args, kwargs = self._bind(value)
        return observation(await self.func(*args, **kwargs))

    def _native_value(self, arguments: str) -> object:
        _require_text(self.name, arguments)
        try:
            return decode_json(arguments) if arguments.strip() else {}
        except MalformedJSONError as error:
            raise _malformed(self.name, error) from None

    def _bind(self, value: object) -> tuple[list[object], dict[str, object]]:
        """Positional-only and keyword arguments for the function, validated from `value`."""
        arguments = self._validated(value)
        args: list[object] = []
        for parameter in self._signature.parameters.values():
            if parameter.kind is not inspect.Parameter.POSITIONAL_ONLY:
                break
            args.append(arguments.pop(parameter.name, parameter.default))
        return args, arguments

    def _validated(self, value: object) -> dict[str, object]:
        problems: list[ArgumentProblem] = []
        arguments = self._spec.coerce(value, "", problems)
        if not isinstance(arguments, dict):
            raise InvalidArgumentsError(self.name, problems)
        return arguments

    def _arguments(self, input: str) -> object:
        """The arguments object `input` stands for, before validation."""
        _require_text(self.name, input)
        if not input.strip():
            return blank_input_arguments(self._schema, input)
        single = self._single_field
        try:
            value = decode_json(input)
        except MalformedJSONError as error:
            if single is not None and _reads(single.spec, input):
                return {single.name: input}  # "red" for a Literal: validation reads or refuses it
            if self._takes_nothing:
                return {}
            raise _malformed(self.name, error) from None
        if isinstance(value, dict) or (single is None and not self._takes_nothing):
            # A non-object goes on to validation, which decodes a double-encoded object.
            return value
        if single is None:
            return {}
        if single.spec.accepts_text and not single.spec.is_typed_as(value):
            # Text that merely parses as JSON ("42" for a str) is the text; a list sent for
            # `list[str] | str` is the list.
            value = input
        return {single.name: value}


@overload
def tool(func: Callable[..., Any], /) -> StructuredTool: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    return_direct: bool = False,
    blocking: bool = True,
    requires_approval: bool | Callable[[Any], bool] = False,
    idempotent: bool = False,
    examples: Iterable[ToolExample] = (),
) -> Callable[[Callable[..., Any]], StructuredTool]: ...


def tool(
    func: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    return_direct: bool = False,
    blocking: bool = True,
    requires_approval: bool | Callable[[Any], bool] = False,
    idempotent: bool = False,
    examples: Iterable[ToolExample] = (),
) -> StructuredTool | Callable[[Callable[..., Any]], StructuredTool]:
    """Makes a function a StructuredTool: `@tool` or `@tool(name=..., description=...)`;
    `@tool(blocking=False)` for a sync function that returns at once, which async runs then
    call without a thread hop (see `Tool.blocking`); `@tool(requires_approval=True)` (or a
    function of the arguments dict) for one whose calls a person approves (see
    `Tool.requires_approval`); `@tool(idempotent=True)` for a function safe to call twice
    with the same arguments (see `Tool.idempotent`); `@tool(examples=[ToolExample({...})])`
    for worked calls an agent shows the model (see `Tool.examples`)."""

    def make(function: Callable[..., Any]) -> StructuredTool:
        return StructuredTool(
            function,
            name=name,
            description=description,
            return_direct=return_direct,
            blocking=blocking,
            requires_approval=requires_approval,
            idempotent=idempotent,
            examples=examples,
        )

    return make if func is None else make(func)


def _parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """The first paragraph, and each parameter's description from a Google-style `Args:`
    section or reST `:param name:` fields."""
    if not doc:
        return "", {}
    lines = inspect.cleandoc(doc).splitlines()
    summary: list[str] = []
    for line in lines:
        stripped = line.strip()
        if not stripped or stripped.lower() in _GOOGLE_ARGS_HEADERS or stripped.startswith(":"):
            break
        summary.append(stripped)
    return " ".join(summary), {**_google_args(lines), **_rest_params(lines)}


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _google_args(lines: list[str]) -> dict[str, str]:
    found: dict[str, str] = {}
    section_indent: int | None = None
    entry_indent: int | None = None
    current: str | None = None
    for line in lines:
        stripped = line.strip()
        if section_indent is None:
            if stripped.lower() in _GOOGLE_ARGS_HEADERS:
                section_indent = _indent(line)
            continue
        if not stripped:
            continue
        indent = _indent(line)
        if indent <= section_indent:
            section_indent = entry_indent = current = None
            if stripped.lower() in _GOOGLE_ARGS_HEADERS:
                section_indent = indent
            continue
        if entry_indent is None:
            entry_indent = indent
        if indent == entry_indent:
            head, colon, text = stripped.partition(":")
            # "name (type): text" or "name: text"
            current = head.split("(")[0].strip() if colon else None
            if current:
                found[current] = text.strip()
        elif current:
            found[current] = f"{found[current]} {stripped}".strip()
    return found


def _rest_params(lines: list[str]) -> dict[str, str]:
    found: dict[str, str] = {}
    current: str | None = None
    field_indent = 0
    for line in lines:
        stripped = line.strip()
        if stripped.startswith(":"):
            current = None
            field, colon, text = stripped[1:].partition(":")
            words = field.split()
            # ":param name: text" or ":param type name: text"
            if colon and len(words) >= 2 and words[0] in ("param", "parameter", "arg", "argument"):
                current = words[-1]
                found[current] = text.strip()
                field_indent = _indent(line)
        elif current and stripped and _indent(line) > field_indent:
            found[current] = f"{found[current]} {stripped}"
        elif stripped:
            current = None
    return found


def _type_hints(func: Callable[..., Any], name: str) -> dict[str, Any]:
    """The function's type hints with every forward reference resolved, nested ones included
    (`Optional[list["Item"]]`), which `inspect.signature(eval_str=True)` leaves as strings."""
    target: object = func
    while isinstance(target, functools.partial):
        target = target.func
    if inspect.isclass(target):
        target = target.__init__
    elif not inspect.isroutine(target):
        target = type(target).__call__  # a callable object: its method holds the hints
    try:
        return resolved_hints(target)
    except TypeError as error:
        raise ToolDefinitionError(f"tool {name}: {error}") from None


def _arguments_spec(
    signature: inspect.Signature,
    hints: Mapping[str, Any],
    parameter_docs: Mapping[str, str],
    name: str,
) -> ObjectSpec:
    fields = []
    for parameter in signature.parameters.values():
        if parameter.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            raise ToolDefinitionError(
                f"tool {name}: *args and **kwargs cannot be described to a model"
            )
        annotation = hints.get(parameter.name, Any)
        try:
            spec = compile_type(annotation)
            # Annotated[T, "..."] is the more specific description; keep it.
            description = spec.description or parameter_docs.get(parameter.name)
            if parameter.default is inspect.Parameter.empty:
                fields.append(FieldSpec(parameter.name, spec, True, description))
            else:
                fields.append(defaulted_field(parameter.name, spec, parameter.default, description))
        except TypeError as error:
            raise ToolDefinitionError(f"tool {name}, parameter {parameter.name}: {error}") from None
    return ObjectSpec(fields)


def _reads(spec: Spec, text: str) -> bool:
    """Whether plain `text` that is not JSON stands for a value of `spec`: any text for a
    string; for another scalar type, text that does not open a JSON object or array (a
    broken one is better reported as such)."""
    return spec.accepts_text or (spec.reads_text and not text.lstrip().startswith(("{", "[")))


def _require_text(tool_name: str, value: object) -> None:
    if not isinstance(value, str):
        raise ToolTypeError(
            f"tool {tool_name} takes its arguments as JSON text (str), got "
            f"{type(value).__name__}: pass json.dumps(arguments)"
        )


def _malformed(tool_name: str, error: MalformedJSONError) -> InvalidArgumentsError:
    return InvalidArgumentsError(tool_name, [ArgumentProblem("", str(error))])


def _run_coroutine(coroutine: Coroutine[Any, Any, object]) -> object:
    """Runs an async tool function's coroutine to completion from synchronous code."""
    import asyncio  # only async functions called synchronously need it; kept off import time

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    # This thread already runs an event loop, so asyncio.run would refuse: use a fresh thread.
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coroutine).result()
