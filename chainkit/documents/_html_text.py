"""The main text of an HTML page with the standard library alone: what is inside `<main>` (or
the page's `<article>`s) when it has them, else the body, less scripts, styles, navigation,
headers, footers, asides and forms; a block element starts a new line. The fallback when
trafilatura (the `html` extra) is not installed."""

from __future__ import annotations

from html.parser import HTMLParser

_LEFT_OUT = frozenset(
    {"script", "style", "noscript", "template", "svg", "nav", "header", "footer", "aside"}
    | {"form", "button", "select", "iframe", "head"}
)
_MAIN = frozenset({"main", "article"})
_BLOCKS = frozenset(
    {"p", "div", "section", "article", "main", "br", "li", "ul", "ol", "tr", "table", "pre"}
    | {"blockquote", "h1", "h2", "h3", "h4", "h5", "h6", "dd", "dt", "dl", "hr", "figure"}
)


class _MainText(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.title = ""
        self._in_title = False
        self._left_out = 0
        self._main = 0
        self._pre = 0
        self.everything: list[str] = []
        self.main: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title":
            self._in_title = True
        elif tag in _LEFT_OUT:
            self._left_out += 1
        elif tag in _MAIN:
            self._main += 1
        if tag == "pre":
            self._pre += 1
        if tag in _BLOCKS:
            self._add("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        elif tag in _LEFT_OUT:
            self._left_out = max(0, self._left_out - 1)
        elif tag in _MAIN:
            self._main = max(0, self._main - 1)
        if tag == "pre":
            self._pre = max(0, self._pre - 1)
        if tag in _BLOCKS:
            self._add("\n")

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title += data
        elif not self._left_out:
            self._add(
                data if self._pre else " ".join(data.split()) + (" " if data[-1:].isspace() else "")
            )

    def _add(self, text: str) -> None:
        self.everything.append(text)
        if self._main:
            self.main.append(text)


def main_text(html: str) -> tuple[str, str]:
    """(title, main text) of the page `html`."""
    parser = _MainText()
    parser.feed(html)
    parser.close()
    pieces = parser.main if "".join(parser.main).strip() else parser.everything
    lines = (line.strip() for line in "".join(pieces).splitlines())
    return " ".join(parser.title.split()), "\n".join(line for line in lines if line)
