"""The rolling totals against a model that keeps every spend: whatever the order of spends and
reads, each window's sum is the spend of the cells still inside it, read one window at a time
(`used`) or all at once (`current`, the policy's hot path)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from svc_console.core.buckets import slot_of
from svc_console.policy.budgets import GRAINS, WINDOW_SECONDS, RollingTotals, stamp

BUCKET = ("agent", "a")
START = 1_800_000_000.0

# Steps of (seconds the clock moves on, a spend of that many atomic USDC or a read when None),
# over up to two months so every window fills and empties.
steps = st.lists(
    st.tuples(
        st.one_of(st.floats(0, 120), st.floats(0, 4 * 3600), st.floats(0, 9 * 86_400)),
        st.one_of(st.none(), st.integers(1, 10**6)),
        st.booleans(),  # read all windows at once (else one at a time)
    ),
    max_size=60,
)


def expected(spent: list[tuple[int, int]], window: int, now: float) -> int:
    grain = next(grain for grain, windows in GRAINS if window in windows)
    cutoff = now - WINDOW_SECONDS[window]
    return sum(delta for slot, delta in spent if stamp(slot, grain) > cutoff)


@settings(max_examples=300, deadline=None)
@given(steps)
def test_every_window_holds_the_spend_still_inside_it(script):
    totals, spent, now = RollingTotals(), [], START
    for moved, delta, at_once in script:
        now += moved
        if delta is not None:
            slot = slot_of(now)
            totals.apply([((BUCKET,), slot, delta)], now)
            spent.append((slot, delta))
            continue
        windows = range(len(WINDOW_SECONDS))
        if at_once:
            bucket = totals.bucket(BUCKET)
            found = list(bucket.current(now)) if bucket is not None else [0] * len(windows)
        else:
            found = [totals.used(BUCKET, window, now) for window in windows]
        assert found == [expected(spent, window, now) for window in windows]
