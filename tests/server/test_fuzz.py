"""Property-based API fuzzing: schemathesis against the real server's OpenAPI finds no 5xx.

Every operation gets valid and invalid requests generated from its schema; each answer
must be no server error, a documented status, the declared content type and match the
declared response schema; valid input must be accepted and invalid input refused.
(Schemathesis's pytest plugin does not run on pytest 9 yet, so
the strategies are driven with Hypothesis directly.)
"""

from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.specs.openapi.checks import ignored_auth

from tests.server.conftest import client_address
from tests.server.harness import LiveServer

EXAMPLES = {GenerationMode.POSITIVE: 15, GenerationMode.NEGATIVE: 10}


@pytest.mark.parametrize("mode", list(GenerationMode), ids=lambda m: m.value)
def test_no_server_errors(server: LiveServer, mode: GenerationMode) -> None:
    schema = schemathesis.openapi.from_url(f"{server.url}/openapi.json")
    operations = [result.ok() for result in schema.get_all_operations()]  # type: ignore[union-attr]
    assert len(operations) >= 6

    for operation in operations:

        @given(case=operation.as_strategy(generation_mode=mode))
        @settings(
            max_examples=EXAMPLES[mode], deadline=None, suppress_health_check=list(HealthCheck), database=None
        )
        def check(case: schemathesis.Case) -> None:
            # A fresh client address per request: this is about bad input, not the rate limit.
            headers = {"authorization": f"Bearer {server.token}", "x-forwarded-for": client_address()}
            # ignored_auth would resend without the token, but headers passed here are re-added
            # to every request it makes; test_security.py checks the token itself.
            case.call_and_validate(headers=headers, timeout=30, excluded_checks=[ignored_auth])

        try:
            check()
        except Unsatisfiable:
            # Negative mode has nothing to break in an operation without parameters or body.
            assert mode is GenerationMode.NEGATIVE
