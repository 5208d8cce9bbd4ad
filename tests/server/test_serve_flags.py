"""``gradwalk serve`` given a flag its settings refuse: one line per bad flag, naming the flag
and the value as typed, and exit status 2; no traceback, and no server started."""

from __future__ import annotations

from tests.conftest import gradwalk_cli


def test_out_of_range_flags_are_named_with_their_values() -> None:
    result = gradwalk_cli("serve", "--port", "99999", "--rate", "-1", "--workers", "0", "--retention-mb", "0")
    assert result.returncode == 2, result
    assert result.stderr.splitlines() == [
        "gradwalk serve: --port 99999: Input should be less than or equal to 65535",
        "gradwalk serve: --workers 0: Input should be greater than or equal to 1",
        "gradwalk serve: --rate -1.0: Input should be greater than 0",
        "gradwalk serve: --retention-mb 0.0: Input should be greater than or equal to 1",
    ], result.stderr
    assert "gradwalk: open" not in result.stdout
