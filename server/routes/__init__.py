"""The routers, one per resource: runs (REST and websocket), examples, health, pages."""

from __future__ import annotations

from . import events, examples, health, pages, runs

__all__ = ["events", "examples", "health", "pages", "runs"]
