"""Walking the lessons with Next ▶ in real Chromium: each lesson marks its own step's line in
the code, starts the stepper afresh where it names no step, and Try it lands where the try's
words look (found by a review walking the gallery as a teacher would)."""

from __future__ import annotations

from typing import Any

import pytest

from .conftest import expect
from .lessons_served import STEP_CARD, opened_at

pytestmark = pytest.mark.browser


@pytest.mark.parametrize(
    ("first", "then", "line"), [("leaf-grad", "hooks", "4"), ("broadcast-sums", "linear-weight-grad", "9")]
)
def test_next_marks_the_next_lesson_s_own_line_where_it_opens_at_the_same_step(
    page: Any, first: str, then: str, line: str
) -> None:
    # the two open at the same step number: the store's step did not change, and the code
    # kept the first lesson's line marked (hooks: line 6, a comment; linear-weight-grad:
    # line 8, a blank one) under the second's card
    card = opened_at(page, first)
    card.locator("[data-nav=next]").click()
    expect(card).to_have_attribute("data-lesson", then)
    expect(page.locator(STEP_CARD).locator(".gw-line-link").first).to_have_text(f"line {line}")
    expect(page.locator(".cm-gw-current")).to_have_attribute("data-line", line)


def test_a_lesson_that_names_no_step_starts_the_stepper_at_its_first(page: Any) -> None:
    card = opened_at(page, "data-edit", "step 3 of 36 · backward 1: 3 of 12")
    card.locator("[data-nav=next]").click()
    expect(card).to_have_attribute("data-lesson", "define-by-run")
    expect(page.locator("[role=tab][data-view=tape]")).to_have_attribute("aria-selected", "true")
    page.click("[role=tab][data-view=stepper]")
    # it opened at data-edit's step 3 (step 3 of 8)
    expect(page.locator(".gw-stepper .gw-position")).to_have_text("step 1 of 8")
