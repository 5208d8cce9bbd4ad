"""``/api/health``: is the server up, and what can it run."""

from __future__ import annotations

from fastapi import APIRouter

from ..deps import RegistryDep
from ..models import Health
from ..version import VERSION

__all__ = ["router"]

router = APIRouter(prefix="/api/health", tags=["health"])


# Two routes, not one api_route with both methods: one route gives both operations one
# operationId, which OpenAPI forbids (FastAPI warned "Duplicate Operation ID" in the log).
@router.get("", response_model=Health)
@router.head("", response_model=Health)
async def health(registry: RegistryDep) -> Health:
    """Report the workers, their isolation, CUDA and the version."""
    pool = registry.pool
    return Health(
        ok=True,
        workers=int(pool.workers),
        isolation=dict(pool.isolation_report()),
        cuda=bool(pool.cuda_available),
        version=VERSION,
        live_runs=len(registry.live),
    )
