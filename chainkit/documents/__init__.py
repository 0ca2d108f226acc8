"""Documents for retrieval: the one `Document` type, loaders that read files into documents
lazily (text, Markdown, HTML, CSV, JSON Lines, PDF, a folder), and splitters that cut them
into chunks that remember where they came from.

HTML's best extractor (trafilatura) comes with `pip install 'chainkit[html]'`, PDF with
`pip install 'chainkit[pdf]'`; neither is imported until a file needs it.
"""

from chainkit.documents import errors
from chainkit.documents.context import as_context
from chainkit.documents.directory import DirectoryLoader, Skipped
from chainkit.documents.document import Document
from chainkit.documents.errors import LoadError
from chainkit.documents.html import load_html
from chainkit.documents.markdown_headers import MarkdownHeaderSplitter
from chainkit.documents.pdf import load_pdf
from chainkit.documents.records import load_csv, load_jsonl
from chainkit.documents.splitters import RecursiveSplitter
from chainkit.documents.text import load_markdown, load_text

__all__ = [
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
]
