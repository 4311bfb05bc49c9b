"""kbindex: a knowledge base index for AI agents (SQLite, keywords, similarities, full text)."""

__version__ = "0.1.0"
