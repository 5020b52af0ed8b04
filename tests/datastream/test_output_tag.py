"""``OutputTag`` under PyFlink's import path (:mod:`undertow.datastream.output_tag`)."""

from __future__ import annotations

from undertow.api.output_tag import OutputTag as ApiOutputTag
from undertow.datastream.output_tag import OutputTag


def test_the_tag_is_the_api_class_and_equal_by_id() -> None:
    assert OutputTag is ApiOutputTag
    assert OutputTag("late") == OutputTag("late") and OutputTag("late") != OutputTag("early")
