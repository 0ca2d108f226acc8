"""OpenTelemetry's SDK for the tests that read spans. It comes with `.[dev]`, not with
chainkit or its `otel` extra (the API only): without it, a test that asks for spans skips,
and the other tests of its file still run."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter


def exporter_and_provider() -> tuple[InMemorySpanExporter, TracerProvider]:
    """A tracer provider whose finished spans the exporter keeps; skips without the SDK."""
    pytest.importorskip("opentelemetry.sdk", reason="OpenTelemetry's SDK is in .[dev]")
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return exporter, provider
