"""evident.wait_for: the bounded condition wait the scenarios and tests use."""
import pytest

from evident import wait_for


def test_returns_the_first_truthy_value_and_stops_asking():
    calls = []

    def condition():
        calls.append(1)
        return {"n": len(calls)} if len(calls) == 3 else None

    assert wait_for(condition, timeout=10, what="the third call", interval=0) == {"n": 3}
    assert len(calls) == 3


def test_times_out_with_what_it_waited_for():
    calls = []

    def never():
        calls.append(1)
        return 0

    with pytest.raises(AssertionError, match=r"timed out after 0s waiting for the page"):
        wait_for(never, timeout=0, what="the page")
    assert len(calls) >= 1  # checked at least once, even with no time at all
