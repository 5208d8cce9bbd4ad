"""``HEAD`` wherever ``GET`` is served: a link checker (a course platform checking an embed's
URL, ``curl -I``) asks with HEAD, and FastAPI's routes answer only the methods they name, so
HEAD /embed/{id} was a 405 while GET served the page."""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["HeadAsGet"]


class HeadAsGet:
    """Answer HEAD as the GET of the same URL would be answered, status and headers (its
    Content-Length among them), without the body. Add it outside any middleware that
    compresses, so the length is the one a GET gets."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "HEAD":
            await self.app(scope, receive, send)
            return

        async def send_no_body(message: Message) -> None:
            if message["type"] == "http.response.body":
                if message.get("more_body", False):
                    return  # the body is dropped piece by piece; the last piece ends it
                message = {"type": "http.response.body", "body": b"", "more_body": False}
            await send(message)

        await self.app({**scope, "method": "GET"}, receive, send_no_body)
