"""check_digits guards int() against long runs of ASCII digits; other scripts' digits are text to
every reader (YAML's and the tables' number patterns are [0-9]), so a run of them is no number."""

from __future__ import annotations

import pytest

from ppverify.core.limits import LimitError, check_digits
from ppverify.core.text_formats import load_yaml


def test_a_long_run_of_arabic_indic_digits_is_text_not_a_number():
    name = "\u0663" * 20  # 20 ARABIC-INDIC DIGIT THREE: > MAX_INT_DIGITS (12) were they digits
    check_digits(f"name: {name}", "c.yaml")  # no LimitError
    assert load_yaml(f"name: {name}", "c.yaml") == {"name": name}  # YAML keeps it a string


def test_a_long_run_of_ascii_digits_is_still_refused():
    with pytest.raises(LimitError, match=r"c.yaml:1:8: a number of 13 digits; at most 12 are allowed"):
        check_digits("count: " + "9" * 13, "c.yaml")  # column 8: after "count: " (7 characters)
