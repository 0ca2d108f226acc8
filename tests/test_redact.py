"""Masking hits secrets and only secrets: keys, credential headers in any case, values equal to
a configured key; a key that arrives in pieces is masked as if it had come whole."""

from __future__ import annotations

import io
import itertools
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chainkit import callbacks, chains
from chainkit._redact import PieceMasker, mask_secret_fields, redact, remember_key
from chainkit.callbacks import LogHandler, OpenTelemetryHandler
from chainkit.llms import FakeLLM
from chainkit.schema import Message
from tests.support.otel import exporter_and_provider
from tests.support.stub_chains import InputOutputChain

KEY_SHAPED = "sk-proj-AbCdEfGh1234567890abcdefXYZ"
CONFIGURED = "azure-7f3a9c2b1e8d4f6a0c5e"
"""A model's key that looks like no key: only being configured makes it one."""
remember_key(CONFIGURED)

ORDINARY_NAMES = [
    *("key_points", "tokens", "max_tokens", "author", "authority", "keywords", "total_tokens"),
    *("token_usage", "sort_key", "eos_token", "Content-Type", "monkey", "tokenizer"),
]
SECRET_NAMES = [
    *("api_key", "apiKey", "APIKey", "OPENAI_API_KEY", "x-api-key", "API-KEY", "Api-Key"),
    *("Authorization", "AUTHORIZATION", "proxy-authorization", "access_token", "accessToken"),
    *("password", "db_password", "client_secret", "Cookie", "key", "token", "auth"),
]


@pytest.mark.parametrize("name", ORDINARY_NAMES)
def test_an_ordinary_field_is_kept(name):
    assert mask_secret_fields({"nested": [{name: "value 7"}]}) == {"nested": [{name: "value 7"}]}


@pytest.mark.parametrize("name", SECRET_NAMES)
def test_a_credential_field_is_masked_at_any_depth(name):
    assert mask_secret_fields({"extra": ({name: "s3cr3t"},)}) == {"extra": [{name: "***"}]}


def test_headers_lose_their_credentials_only():
    headers = {"API-Key": "a1", "Authorization": "b2", "Content-Type": "json", "X-Trace": "t"}
    assert mask_secret_fields({"extra_headers": headers}) == {
        "extra_headers": {"API-Key": "***", "Authorization": "***", "Content-Type": "json"}
        | {"X-Trace": "t"}
    }
    pairs = [("authorization", "b3"), ("accept", "json")]
    assert mask_secret_fields(pairs) == [["authorization", "***"], ["accept", "json"]]


@pytest.mark.parametrize(
    ("text", "masked"),
    [
        ("Authorization: Bearer abc.def rest", "Authorization: *** rest"),
        ("authorization: basic dXNlcjpwYXNz", "authorization: ***"),
        ('{"API-KEY": "k-123", "n": 1}', '{"API-KEY": "***", "n": 1}'),
        ('args: {\\"api_key\\": \\"k-123\\"}', 'args: {\\"api_key\\": \\"***\\"}'),
        ("password=hunter2&user=ann", "password=***&user=ann"),
        (f"use {CONFIGURED}!", f"use {CONFIGURED[:4]}***!"),
    ],
)
def test_credentials_in_text_are_masked(text, masked):
    assert redact(text) == masked


@pytest.mark.parametrize(
    "text", ["key_points: 3", "max_tokens=5", "the author: Ann", "EMPTY", "tokens: 12"]
)
def test_ordinary_text_is_kept(text):
    assert redact(text) == text


def test_a_short_placeholder_key_masks_no_words():
    remember_key("ollama")  # what a local server takes: no secret
    assert redact("served by ollama") == "served by ollama"


SECRET_TEXTS = [
    f"Sure: {KEY_SHAPED}.",
    f"curl -H 'Authorization: Bearer {CONFIGURED}' https://x",
    f'{{"api_key": "{CONFIGURED}"}}',
    f"key\n{CONFIGURED}\nand {KEY_SHAPED} again",
]
prose = st.text(alphabet=st.sampled_from("ab :=\n'\"-sk"), max_size=12)


@given(
    before=prose,
    secret=st.sampled_from(SECRET_TEXTS),
    after=prose,
    cuts=st.lists(st.integers(min_value=0, max_value=200), max_size=30),
)
def test_a_text_in_pieces_is_masked_as_the_whole_text(before, secret, after, cuts):
    text = before + secret + after
    bounds = sorted({0, len(text), *(cut for cut in cuts if cut < len(text))})
    masker = PieceMasker()
    joined = "".join(masker.feed(text[a:b]) for a, b in itertools.pairwise(bounds))
    joined += masker.flush()
    assert joined == redact(text)
    assert CONFIGURED[5:] not in joined and KEY_SHAPED[8:] not in joined


class Noting(InputOutputChain):
    def _call(self, inputs, **options):
        return {"output": "ok"}


def test_log_trace_file_and_spans_mask_secrets_and_keep_ordinary_fields(tmp_path):
    inputs = {"input": "x", "key_points": "growth", "author": "Ann", "note": CONFIGURED}
    out = io.StringIO()
    exporter, provider = exporter_and_provider()
    path = tmp_path / "run.jsonl"
    with callbacks.TraceFile(path) as trace:
        handlers = [trace, LogHandler(out), OpenTelemetryHandler(provider, capture_content=True)]
        chains.call(Noting(), inputs, callbacks=handlers)
        FakeLLM(["fine"]).generate(
            [Message.user("q")],
            callbacks=handlers,
            max_tokens=5,
            extra_body={"key_points": ["a"], "api_key": "body-secret-1"},
            extra_headers={"API-KEY": "header-secret-2", "Content-Type": "application/json"},
        )
    span_text = json.dumps([dict(span.attributes or {}) for span in exporter.get_finished_spans()])
    for written in (path.read_text(), out.getvalue(), span_text):
        assert CONFIGURED[5:] not in written
        assert "key_points" in written and "growth" in written and "Ann" in written
    for written in (path.read_text(), out.getvalue()):
        assert "body-secret-1" not in written and "header-secret-2" not in written
        assert "application/json" in written and "max_tokens" in written
