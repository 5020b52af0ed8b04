"""The typed field reads both ``_metadata`` body formats share."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from undertow.runtime.checkpoint.metadata_fields import bool_field, int_field, string_field


def test_a_field_of_the_right_type_is_returned() -> None:
    assert string_field("job", "job_id") == "job"
    assert int_field(7, "checkpoint_id") == 7
    assert bool_field(False, "is_savepoint") is False


@pytest.mark.parametrize(
    ("read", "value", "message"),
    [
        (string_field, 3, "job_id must be a string, got 3"),
        (int_field, True, "job_id must be an integer, got True"),  # a bool is no integer
        (int_field, "1", "job_id must be an integer, got '1'"),
        (bool_field, 1, "job_id must be a boolean, got 1"),
    ],
)
def test_a_field_of_another_type_is_named_with_its_value(
    read: Callable[[object, str], object], value: object, message: str
) -> None:
    with pytest.raises(TypeError) as info:
        read(value, "job_id")
    assert str(info.value) == message


def test_a_long_value_is_cut_in_the_message() -> None:
    with pytest.raises(TypeError) as info:
        string_field(b"x" * 500, "path")
    assert len(str(info.value)) < 120
