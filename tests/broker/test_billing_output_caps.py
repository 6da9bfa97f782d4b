"""RT5-BB (redteam5, part b): a request naming more than one output cap is reserved at the
largest, since the provider may honour any one of them (docs/trust.md)."""

from __future__ import annotations

from skillbench.broker.limits import read_head


def test_the_largest_of_three_output_caps_is_reserved() -> None:
    head = read_head(b'{"model":"m","max_tokens":1,"max_completion_tokens":100000}')
    assert head.max_output == 100000
    head = read_head(b'{"model":"m","max_output_tokens":7,"max_tokens":3}')
    assert head.max_output == 7
    assert read_head(b'{"model":"m"}').max_output is None
