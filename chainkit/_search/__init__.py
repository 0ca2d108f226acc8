"""Lexical search, shared by the tool retriever and the offline model: the terms a text is
turned into, an Okapi BM25 index over them, the requests a question makes, and the near
copies among ranked documents."""
