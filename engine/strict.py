"""Whether gradwalk's own failures while observing a run are raised (tests) or absorbed (users).

Observation code (pitfall detectors, optimizer metrics) must never break a user's run: where
it fails, it gives up on that observation and the snippet carries on as without gradwalk.
The test suite sets ``GRADWALK_STRICT=1`` (tests/conftest.py; runner children inherit it)
so such a failure fails the test instead of passing unseen.
"""

from __future__ import annotations

import os

__all__ = ["STRICT"]

STRICT = os.environ.get("GRADWALK_STRICT") == "1"
