"""The installed gradwalk version, read without importing anything heavy."""

from __future__ import annotations

from importlib import metadata

__all__ = ["VERSION"]

try:
    VERSION = metadata.version("gradwalk")
except metadata.PackageNotFoundError:  # running from a checkout that was never installed
    VERSION = "0+unknown"
