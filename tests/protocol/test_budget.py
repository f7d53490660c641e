import pytest

from ocx.protocol import budget
from ocx.protocol.errors import FieldError


@pytest.mark.parametrize("text,seconds", [("90s", 90), ("15m", 900), ("2h", 7200), ("1d", 86400), ("007s", 7)])
def test_wall_takes_a_whole_number_and_a_unit(text, seconds):
    assert budget.parse_wall(text) == seconds


@pytest.mark.parametrize("value", ["2 hours", "2", "h", "1.5h", "-1h", "1H", " 1h", "1h ", 7200, None, True, "1w", ""])
def test_wall_refuses_anything_else_naming_the_field(value):
    with pytest.raises(FieldError) as error:
        budget.parse_wall(value)
    assert error.value.field == "budget.wall"
    assert "whole number followed by s, m, h or d" in error.value.why


def test_the_message_d8_gives_as_its_example():
    with pytest.raises(FieldError) as error:
        budget.parse_wall("2 hours")
    assert str(error.value) == 'budget.wall: "2 hours" is not a whole number followed by s, m, h or d'


@pytest.mark.parametrize("parse,value", [(budget.parse_wall, "0s"), (budget.parse_wall, "0d"), (budget.parse_cpu, 0),
                                         (budget.parse_cpu, -5), (budget.parse_memory, 0), (budget.parse_memory, "0K"),
                                         (budget.parse_processes, 0), (budget.parse_processes, -1)])
def test_zero_and_negative_are_refused(parse, value):
    with pytest.raises(FieldError, match="not more than zero"):
        parse(value)


@pytest.mark.parametrize("value,number", [(1, 1), ("1", 1), ("1K", 1024), ("512M", 512 * 1024**2), ("2G", 2 * 1024**3), (4096, 4096)])
def test_memory_in_bytes_or_powers_of_1024(value, number):
    assert budget.parse_memory(value) == number


@pytest.mark.parametrize("value", ["1k", "1KB", "1.5G", "1T", " 1G", True, 1.5, [], "G"])
def test_memory_refuses_other_notations(value):
    with pytest.raises(FieldError) as error:
        budget.parse_memory(value)
    assert error.value.field == "budget.memory"


@pytest.mark.parametrize("value", ["30", 1.0, True, "30s", None])
def test_cpu_and_processes_are_json_whole_numbers(value):
    with pytest.raises(FieldError):
        budget.parse_cpu(value)
    with pytest.raises(FieldError):
        budget.parse_processes(value)


def test_values_systemd_cannot_hold_are_refused_not_clamped():
    with pytest.raises(FieldError, match="larger than a node can enforce"):
        budget.parse_wall("99999999999999999d")
    with pytest.raises(FieldError, match="larger than a node can enforce"):
        budget.parse_memory("99999999999G")
    assert budget.parse_cpu(budget.MAX_SECONDS) == budget.MAX_SECONDS


@pytest.mark.parametrize("seconds,text", [(7200, "2h"), (90, "90s"), (86400, "1d"), (120, "2m"), (3601, "3601s")])
def test_format_seconds_is_exact(seconds, text):
    assert budget.format_seconds(seconds) == text
    assert budget.parse_wall(text) == seconds
