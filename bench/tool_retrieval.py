"""Tool retrieval on a generated catalog of 1,000+ tools: recall, prompt size and speed.

Run from the repository root: `python bench/tool_retrieval.py` (a few seconds). It builds the
catalog of tests/support/tool_catalog.py with this file's wording (snake_case names; the tests use
other templates, camelCase names and another seed), about half the tools described in
English and half in Chinese, and asks three sets of questions, each about a known tool:

- described: in the language of the tool's description, naming what the tool works on by a
  word its description uses (e.g. "Show me the share price of Tesla" for get_stock_quote,
  described as "Returns the current stock quote (share price) for a given symbol.");
- unseen synonym: the same, by a synonym its description does not use ("bitcoin price" →
  "crypto quote"): what a lexical index cannot bridge;
- cross-language: a Chinese question about an English-described tool, and the reverse
  (its "en questions" are about Chinese-described tools, whose names are English words).

For each it prints Recall@1/@3/@5 of `tools.ToolRetriever(tools, top_k=5)` (the right tool
first, in the first 3, among the 5 selected), by question language; then the prompt of a
OneShotAgent and the `tools=` list of a ToolCallingAgent, with all tools and with the
selected ones; then how long building, selecting and updating take.

Tokens are counted with tiktoken's o200k_base when tiktoken is installed and its encoding is
cached (it downloads it on first use); otherwise they are estimated, and the report says so:
a CJK character is a token, a run of letters or digits a token per 4 characters (rounded
up), any other non-space character a token, which is close to what OpenAI's tokenizers give
for English prose and Chinese.

With `--embeddings-model M [--embeddings-base-url URL]` the retriever also ranks by the
embeddings of any OpenAI-compatible endpoint (`llms.OpenAIEmbeddings`; the key comes from
OPENAI_API_KEY) and fuses both rankings; the recall it prints is that endpoint's.
"""

from __future__ import annotations

import argparse
import functools
import math
import re
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from chainkit.agents.mrkl import create_mrkl_prompt
from chainkit.schema.embedder import Embedder
from chainkit.tools import Tool, ToolRetriever
from tests.support.tool_catalog import Question, QuestionKind, build, wording

SEED = 2024
QUESTIONS: dict[QuestionKind, int] = {
    "described": 400,
    "unseen synonym": 300,
    "cross-language": 300,
}
_TOKEN_PIECES = re.compile(
    r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]|[A-Za-z0-9]+|\S"
)
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")


WORDING = wording(
    False,
    {
        "G": (
            "get_{slug}",
            "查询",
            "Returns the current {obj} ({alt}) for a given {arg}.",
            "查询指定{arg}的{obj}（{alt}）。",
            (
                "What is the {obj} for {entity}?",
                "Show me the {obj} of {entity}",
                "I need the latest {obj} for {entity}",
            ),
            ("{entity}的{obj}是多少?", "帮我查一下{entity}的{obj}", "告诉我{entity}现在的{obj}"),
        ),
        "L": (
            "list_{slug}s",
            "列表",
            "Lists all {obj} ({alt}) records, newest first, optionally filtered by {arg}.",
            "列出所有{obj}（{alt}）记录，可按{arg}筛选。",
            ("List every {obj} for {entity}", "Show all my {obj} records"),
            ("列出{entity}所有的{obj}", "把全部{obj}列给我看"),
            ("limit",),
        ),
        "C": (
            "create_{slug}",
            "创建",
            "Creates a new {obj} ({alt}) and returns its id.",
            "新建一个{obj}（{alt}），返回其编号。",
            ("Create a new {obj} for {entity}", "Set up a new {obj} about {entity}"),
            ("帮我新建一个{entity}的{obj}", "创建一个新的{obj}，关于{entity}"),
            ("fields",),
        ),
        "U": (
            "update_{slug}",
            "修改",
            "Updates an existing {obj} ({alt}): changes the given fields by id.",
            "修改已有的{obj}（{alt}），按编号更新字段。",
            ("Change the {obj} of {entity}", "Update my {obj} for {entity}"),
            ("修改{entity}的{obj}", "更新一下{entity}的{obj}"),
            ("id", "fields"),
        ),
        "D": (
            "delete_{slug}",
            "删除",
            "Deletes a {obj} ({alt}) permanently by id.",
            "按编号永久删除{obj}（{alt}）。",
            ("Delete the {obj} for {entity}", "Remove my {obj} about {entity}"),
            ("删除{entity}的{obj}", "把{entity}这个{obj}删掉"),
            ("id",),
        ),
        "S": (
            "search_{slug}s",
            "搜索",
            "Searches {obj} ({alt}) entries by keyword and filters.",
            "按关键词搜索{obj}（{alt}）。",
            ("Search for {obj} matching {entity}", "Find {obj} about {entity}"),
            ("搜索和{entity}有关的{obj}", "找一找{entity}相关的{obj}"),
            ("query",),
        ),
        "H": (
            "get_{slug}_history",
            "历史",
            "Returns the historical {obj} ({alt}) over a date range, as a time series.",
            "查询{obj}（{alt}）的历史数据，按日期范围返回时间序列。",
            (
                "How has the {obj} of {entity} changed over the past month?",
                "Show the {obj} history for {entity}",
            ),
            ("{entity}过去一个月{obj}的历史走势", "查看{entity}{obj}的历史数据"),
            ("start_date", "end_date"),
        ),
        "E": (
            "export_{slug}s",
            "导出",
            "Exports {obj} ({alt}) records to a CSV, Excel or PDF file.",
            "把{obj}（{alt}）记录导出为CSV、Excel或PDF文件。",
            ("Export my {obj} records to a spreadsheet", "Download the {obj} of {entity} as CSV"),
            ("把{entity}的{obj}导出成表格", "导出{obj}为PDF文件"),
            ("format",),
        ),
        "A": (
            "subscribe_{slug}_alerts",
            "提醒",
            "Subscribes to alerts: sends a notification when the {obj} ({alt}) changes.",
            "订阅提醒：{obj}（{alt}）变化时发送通知。",
            (
                "Alert me when the {obj} of {entity} changes",
                "Notify me about {obj} changes for {entity}",
            ),
            ("{entity}的{obj}变化时提醒我", "订阅{entity}的{obj}变化通知"),
            ("threshold",),
        ),
        "K": (
            "compare_{slug}s",
            "对比",
            "Compares the {obj} ({alt}) of two or more {arg}s side by side.",
            "对比多个{arg}的{obj}（{alt}）。",
            (
                "Compare the {obj} of {entity} and {entity2}",
                "Which is better for {obj}, {entity} or {entity2}?",
            ),
            ("比较{entity}和{entity2}的{obj}", "{entity}和{entity2}的{obj}对比一下"),
        ),
        "F": (
            "forecast_{slug}",
            "预测",
            "Forecasts the {obj} ({alt}) for the coming days.",
            "预测未来几天的{obj}（{alt}）。",
            (
                "What will the {obj} be in {entity} tomorrow?",
                "Forecast the {obj} for {entity} this week",
            ),
            ("预测一下{entity}未来几天的{obj}", "{entity}明天的{obj}预测"),
            ("days",),
        ),
        "N": (
            "analyze_{slug}",
            "分析",
            "Analyzes the {obj} ({alt}) and returns a summary report with statistics.",
            "分析{obj}（{alt}）并生成统计报告。",
            (
                "Analyze the {obj} of {entity}",
                "Give me an analysis report on the {obj} for {entity}",
            ),
            ("分析一下{entity}的{obj}", "生成{entity}{obj}的分析报告"),
        ),
        "B": (
            "book_{slug}",
            "预订",
            "Books a {obj} ({alt}) and returns a confirmation number.",
            "预订{obj}（{alt}），返回确认号。",
            ("Book a {obj} in {entity}", "Reserve a {obj} for me in {entity}"),
            ("帮我预订{entity}的{obj}", "在{entity}预订一个{obj}"),
            ("date",),
        ),
        "X": (
            "cancel_{slug}",
            "取消",
            "Cancels a {obj} ({alt}) by its confirmation number.",
            "按确认号取消{obj}（{alt}）。",
            ("Cancel my {obj} in {entity}", "I want to cancel the {obj} for {entity}"),
            ("取消我在{entity}的{obj}", "帮我取消{entity}的{obj}"),
            ("confirmation_number",),
        ),
        "R": (
            "recommend_{slug}s",
            "推荐",
            "Recommends {obj} ({alt}) options based on the user's preferences.",
            "根据用户偏好推荐{obj}（{alt}）。",
            ("Recommend a good {obj} in {entity}", "Suggest some {obj} like {entity}"),
            ("推荐几个{entity}的{obj}", "{entity}有什么好的{obj}推荐"),
            ("preferences",),
        ),
        "M": (
            "send_{slug}",
            "发送",
            "Sends a {obj} ({alt}) to a recipient.",
            "发送{obj}（{alt}）给收件人。",
            ("Send a {obj} to {entity}", "Write and send a {obj} to {entity}"),
            ("给{entity}发一条{obj}", "发送{obj}给{entity}"),
            ("body",),
        ),
        "P": (
            "play_{slug}",
            "播放",
            "Plays a {obj} ({alt}) on the user's device.",
            "在用户设备上播放{obj}（{alt}）。",
            ("Play a {obj} by {entity}", "Put on some {obj} from {entity}"),
            ("播放{entity}的{obj}", "放一首{entity}的{obj}"),
            ("device",),
        ),
        "O": (
            "toggle_{slug}",
            "开关",
            "Turns a {obj} ({alt}) on or off.",
            "打开或关闭{obj}（{alt}）。",
            ("Turn on the {obj} in {entity}", "Switch off the {obj} in {entity}"),
            ("打开{entity}的{obj}", "把{entity}的{obj}关掉"),
            ("on",),
        ),
    },
)


def estimated_tokens(text: str) -> int:
    """Tokens as OpenAI's tokenizers roughly count them (see the module docstring)."""
    count = 0
    for piece in _TOKEN_PIECES.findall(text):
        if piece[0].isascii() and piece[0].isalnum():
            count += math.ceil(len(piece) / 4)
        else:
            count += 1
    return count


def token_counter() -> tuple[Callable[[str], int], str]:
    try:
        import importlib

        encoding = importlib.import_module("tiktoken").get_encoding("o200k_base")
    except Exception as error:  # not installed, or no network to fetch the encoding
        reason = f"{type(error).__name__}: {str(error)[:60]}"
        return estimated_tokens, f"ESTIMATED tokens (tiktoken unavailable: {reason})"

    def count(text: str) -> int:
        return len(encoding.encode(text))

    return count, "tokens by tiktoken o200k_base"


def recall(
    retriever: ToolRetriever, questions: Sequence[Question]
) -> tuple[dict[int, float], dict[str, tuple[int, int]], list[list[Tool]]]:
    hits = dict.fromkeys((1, 3, 5), 0)
    by_language: dict[str, tuple[int, int]] = {}
    selections = []
    for question in questions:
        selected = retriever.select(question.text)
        selections.append(selected)
        names = [tool.name for tool in selected]
        for k in hits:
            hits[k] += question.tool in names[:k]
        found, asked = by_language.get(question.language, (0, 0))
        by_language[question.language] = (found + (question.tool in names), asked + 1)
    return {k: n / len(questions) for k, n in hits.items()}, by_language, selections


def mrkl_prompt(tools: Sequence[Tool], question: str) -> str:
    return create_mrkl_prompt(tools).format(input=question, agent_scratchpad="")


def tools_payload(tools: Sequence[Tool]) -> str:
    import json

    return json.dumps([tool.info().to_dict() for tool in tools], ensure_ascii=False)


def timed(function: Callable[[], object], repeat: int) -> list[float]:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--top-k", type=int, default=5)
    parser.add_argument("--embeddings-model", help="rank by this model's embeddings too")
    parser.add_argument("--embeddings-base-url", help="its OpenAI-compatible base URL")
    args = parser.parse_args()
    catalog = build(WORDING, seed=SEED)
    tools = catalog.tools
    chinese = sum(entry.language == "zh" for entry in catalog.entries)
    print(
        f"catalog: {len(tools)} tools in {len({e.domain.name for e in catalog.entries})} "
        f"domains, {chinese} described in Chinese, {len(tools) - chinese} in English; "
        f"top_k={args.top_k}"
    )
    embedder: Embedder | None = None
    if args.embeddings_model:
        from chainkit.llms import OpenAIEmbeddings

        embedder = OpenAIEmbeddings(args.embeddings_model, base_url=args.embeddings_base_url)
        print(f"embedder: {args.embeddings_model} at {args.embeddings_base_url or 'OpenAI'}")
    start = time.perf_counter()
    retriever = ToolRetriever(tools, top_k=args.top_k, embedder=embedder)
    built = time.perf_counter() - start

    print("\nrecall (the right tool among the first k selected)")
    described: list[Question] = []
    chosen: list[list[Tool]] = []
    for number, (kind, count) in enumerate(QUESTIONS.items()):
        questions = catalog.questions(count, kind, seed=SEED + 1 + number)
        rates, by_language, selections = recall(retriever, questions)
        languages_text = ", ".join(
            f"{language} questions {found}/{asked}"
            for language, (found, asked) in sorted(by_language.items())
        )
        print(
            f"  {kind:<15} {len(questions)} questions: "
            + "  ".join(f"R@{k} {rate:6.1%}" for k, rate in rates.items())
            + f"   (R@{args.top_k}: {languages_text})"
        )
        if kind == "described":
            described, chosen = questions, selections

    count_tokens, how = token_counter()
    print(f"\nprompt size, {how}; mean over the {len(described)} described questions")
    every_prompt = statistics.fmean(count_tokens(mrkl_prompt(tools, q.text)) for q in described)
    selected_prompt = statistics.fmean(
        count_tokens(mrkl_prompt(picked, q.text))
        for q, picked in zip(described, chosen, strict=True)
    )
    every_payload = count_tokens(tools_payload(tools))
    selected_payload = statistics.fmean(count_tokens(tools_payload(p)) for p in chosen)
    for label, every, selected in (
        ("OneShotAgent prompt", every_prompt, selected_prompt),
        ("ToolCallingAgent tools=", every_payload, selected_payload),
    ):
        print(
            f"  {label:<24} all tools {every:9,.0f}   selected {selected:7,.0f}   "
            f"= {selected / every:.2%} of all"
        )

    print("\nspeed")
    print(f"  build the index of {len(tools)} tools: {built * 1e3:.1f} ms")
    texts = [question.text for question in described]
    times = [t for text in texts for t in timed(functools.partial(retriever.select, text), 5)]
    times.sort()
    print(
        f"  select: median {statistics.median(times) * 1e6:.0f} µs, "
        f"p99 {times[int(len(times) * 0.99)] * 1e6:.0f} µs over {len(times)} selections"
    )
    probe = tools[:100]
    start = time.perf_counter()
    retriever.remove(*probe)
    retriever.add(*probe)
    updated = (time.perf_counter() - start) / len(probe)
    [renormalizing] = timed(lambda: retriever.select(texts[0]), 1)
    print(
        f"  remove a tool and add it back: {updated * 1e6:.0f} µs; the select after "
        f"updates, which brings the index up to date, {renormalizing * 1e3:.1f} ms"
    )


if __name__ == "__main__":
    main()
