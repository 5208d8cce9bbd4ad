"""The server's configuration: one typed object, built from flags, the environment or a test.

``gradwalk serve`` builds a :class:`Settings` from its flags (which default to the
``GRADWALK_*`` environment variables); tests build one directly. Nothing reads the
environment after :func:`server.app.create_app` has been called.
"""

from __future__ import annotations

import ipaddress
import os
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from engine.events import Limits

__all__ = ["DEFAULT_DB", "Settings", "is_loopback"]

DEFAULT_DB = Path("var") / "gradwalk.sqlite3"
_HERE = Path(__file__).resolve().parent


def is_loopback(host: str) -> bool:
    """Say whether binding ``host`` keeps the server reachable from this machine only."""
    if host in ("localhost", "localhost.localdomain"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _limit_caps() -> Limits:
    # What any client may ask for at most; the defaults themselves stay the engine's.
    return Limits(
        max_ops=200_000,
        max_nodes=200_000,
        max_events=400_000,
        max_output_bytes=4_000_000,
        detail_steps=1_000,
        timeout_s=60.0,
        memory_mb=4096,
    )


class Settings(BaseModel):
    """Everything a gradwalk server needs to know; every field has a safe default.

    ``token`` set means creating and cancelling runs needs ``Authorization: Bearer TOKEN``
    (and viewing too when ``token_for_viewing``). ``isolation="auto"`` picks ``local``
    workers on loopback and ``strict`` sandboxing anywhere else.
    """

    model_config = ConfigDict(extra="forbid")

    host: str = "127.0.0.1"
    port: int = Field(default=8000, ge=0, le=65535)
    db: Path = Field(default=DEFAULT_DB, description="SQLite file holding stored runs")
    workers: int | None = Field(
        default=None, ge=1, le=256, description="worker processes (None: runner's choice)"
    )
    max_queue: int = Field(default=32, ge=0, description="runs waiting for a worker before 429")
    isolation: Literal["auto", "strict", "local"] = "auto"
    allow_unsandboxed: bool = Field(
        default=False, description="fall back to local workers if strict is unavailable"
    )
    token: str | None = Field(default=None, description="bearer token for creating runs")
    token_for_viewing: bool = Field(default=False, description="also require the token to read runs")
    default_limits: Limits = Field(default_factory=Limits)
    limit_caps: Limits = Field(
        default_factory=_limit_caps, description="limits a client asks for are lowered to these"
    )
    # a source of 100,000 characters fits as UTF-8 whatever its characters (4 bytes at most:
    # 256 kB refused 100,000 characters of Chinese, which the README promised)
    max_body_bytes: int = Field(default=512_000, ge=1024)
    body_timeout_s: float = Field(
        default=60.0, gt=0, description="a request body of which nothing arrives this long is answered 408"
    )
    rate_burst: float = Field(default=30.0, gt=0, description="runs a client may create at once")
    rate_per_s: float = Field(default=0.5, gt=0, description="runs per second a client's allowance refills")
    retention_runs: int = Field(default=5_000, ge=1, description="finished runs kept in the store")
    retention_bytes: int = Field(default=512 * 1024 * 1024, ge=1, description="compressed trace bytes kept")
    viewer_max_lag: int = Field(default=100_000, ge=1, description="events a viewer may trail a live run by")
    viewer_send_timeout_s: float = Field(
        default=30.0, gt=0, description="a send stalled this long drops the viewer"
    )
    allowed_hosts: list[str] | None = Field(
        default=None, description="Host headers accepted (None: by binding)"
    )
    api_docs: bool = Field(default=False, description="serve Swagger UI at /docs (it loads from a CDN)")
    templates_dir: Path = _HERE / "templates"
    static_dir: Path = _HERE / "static"
    examples_dir: Path = _HERE / "examples"

    @property
    def loopback(self) -> bool:
        """Say whether the server is bound to loopback only."""
        return is_loopback(self.host)

    @property
    def effective_isolation(self) -> Literal["strict", "local"]:
        """Resolve ``auto``: ``local`` on loopback, ``strict`` anywhere else."""
        if self.isolation == "auto":
            return "local" if self.loopback else "strict"
        return self.isolation

    @property
    def effective_allowed_hosts(self) -> list[str]:
        """Host headers to accept; on loopback only local names, against DNS rebinding."""
        if self.allowed_hosts is not None:
            return self.allowed_hosts
        if self.loopback:
            return ["127.0.0.1", "localhost", "::1", "[::1]"]
        return ["*"]

    @classmethod
    def env_defaults(cls) -> dict[str, object]:
        """Read the ``GRADWALK_*`` variables that ``gradwalk serve`` uses as flag defaults."""
        out: dict[str, object] = {}
        if os.environ.get("GRADWALK_DB"):
            out["db"] = Path(os.environ["GRADWALK_DB"])
        if os.environ.get("GRADWALK_TOKEN"):
            out["token"] = os.environ["GRADWALK_TOKEN"]
        if os.environ.get("GRADWALK_WORKERS"):
            out["workers"] = int(os.environ["GRADWALK_WORKERS"])
        return out
