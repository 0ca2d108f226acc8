"""Lexical search, shared by the tool retriever and the offline model: the terms a text is
turned into, and an Okapi BM25 index over them."""
