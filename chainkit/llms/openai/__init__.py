"""The OpenAI backend: chat completions and embeddings from the OpenAI API or any
OpenAI-compatible server (vLLM, Ollama, llama.cpp, LM Studio). The `openai` package is imported
only when a request is first sent."""

from chainkit.llms.openai.chat import OpenAI
from chainkit.llms.openai.embeddings import OpenAIEmbeddings

__all__ = ["OpenAI", "OpenAIEmbeddings"]
