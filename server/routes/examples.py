"""``/api/examples``: the library of worked snippets."""

from __future__ import annotations

from fastapi import APIRouter, Request

from ..models import ExampleList, ExamplePublic

__all__ = ["router"]

router = APIRouter(prefix="/api/examples", tags=["examples"])


@router.get("", response_model=ExampleList)
async def list_examples(request: Request) -> ExampleList:
    """List the example snippets with a title and one line of explanation each."""
    return ExampleList(
        examples=[
            ExamplePublic(id=e.id, title=e.title, summary=e.summary, source=e.source, file=e.file)
            for e in request.app.state.examples
        ]
    )
