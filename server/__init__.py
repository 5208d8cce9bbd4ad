"""gradwalk's server: HTTP and websocket API, stored runs, and the web app's pages.

It knows the event schema (``engine.events``), never PyTorch: snippets run in the
runner's worker processes, and this package relays their events to viewers and stores
them. Build the app with :func:`server.app.create_app`; serve it with ``gradwalk serve``.

Layout: ``app`` (factory), ``settings``, ``routes/`` (one router per resource),
``registry`` (live runs), ``live`` (shared event frames), ``storage/`` (``RunStore`` and
SQLite), ``security`` (middleware, tokens, rate limits), ``commands`` (``serve``),
``export`` (a run as one offline page) and ``export_command`` (``gradwalk export``).
"""

from __future__ import annotations

__all__: list[str] = []
