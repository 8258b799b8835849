"""Evaluation: every rule type, deny wins, the operator decides by default, rolling budgets with
warn levels and hard stops, auto-approve rules with their own budgets, and a property: no request
exceeding a hard cap is ever approved by a rule."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from svc_console.core.buckets import buckets_for, slot_of
from svc_console.core.money import to_atomic
from svc_console.policy import ManualReview
from svc_console.policy.budgets import RollingTotals
from svc_console.policy.engine import CompiledPolicy
from svc_console.policy.facts import Facts
from svc_console.policy.loader import load_text
from svc_console.policy.verdicts import to_verdict

NOW = dt.datetime(2026, 11, 18, 10, 30, tzinfo=dt.UTC).timestamp()  # a Wednesday, 10:30 UTC


def compiled(yaml: str) -> CompiledPolicy:
    return CompiledPolicy(load_text(f"# SKILLS.md\n\n```policy\n{yaml}```\n"))


def facts(**overrides) -> Facts:
    base = dict(
        agent="research-bot",
        kind="market_call",
        amount=to_atomic(Decimal("0.01")),
        endpoint="ep_websearch_basic",
        provider="prov_searchly",
        provider_name="Searchly",
        domain_type="A7",
        product_class="B1",
        chain="base",
        protocol="x402",
        verified=True,
        quality=0.94,
        reliability=0.995,
        dynamic=False,
        inputs={"query": "solar prices"},
    )
    if "usdc" in overrides:
        overrides["amount"] = to_atomic(Decimal(str(overrides.pop("usdc"))))
    return Facts(**{**base, **overrides})


def judge(policy: CompiledPolicy, request: Facts, totals: RollingTotals | None = None, now=NOW):
    result = policy.evaluate(request, totals or RollingTotals(), now)
    return to_verdict(result, policy.sha256)


def spend(totals: RollingTotals, request: Facts, usdc: str, at: float, rule: str | None = None):
    """What the ledger reports when it reserves an approval."""
    buckets = buckets_for(request.agent, request.provider, request.domain_type, rule)
    totals.apply([(buckets, slot_of(at), to_atomic(Decimal(usdc)))], at)


def test_with_no_rule_deciding_the_operator_decides():
    verdict = judge(compiled("per_call_max_usdc: 5\n"), facts())
    assert verdict.outcome == "ask" and verdict.rules == []
    assert ManualReview().evaluate(None, None, None).outcome == "ask"  # type: ignore[arg-type]


def test_nothing_is_auto_approved_unless_a_rule_says_so():
    policy = compiled("allow:\n  domain_types: [A7]\nrequire: {verified: true}\n")
    assert judge(policy, facts()).outcome == "ask"


@pytest.mark.parametrize(
    ("yaml", "request_overrides", "rule"),
    [
        ("per_call_max_usdc: 0.05\n", {"usdc": "0.06"}, "per_call_max_usdc"),
        ("deny:\n  providers: [prov_search*]\n", {}, "deny.providers"),
        ("deny:\n  providers: [SEARCHLY]\n", {}, "deny.providers"),  # by name, any case
        ("deny:\n  endpoints: [ep_websearch_?asic]\n", {}, "deny.endpoints"),
        ("deny:\n  agents: [research-*]\n", {}, "deny.agents"),
        ("deny:\n  kinds: [market_call]\n", {}, "deny.kinds"),
        ("deny:\n  domain_types: [A7]\n", {}, "deny.domain_types"),
        ("deny:\n  product_classes: [B1]\n", {}, "deny.product_classes"),
        ("deny:\n  chains: [base]\n", {}, "deny.chains"),
        ("deny:\n  protocols: [x402]\n", {}, "deny.protocols"),
        ("deny:\n  tiers: [premium]\n", {"kind": "dataset", "tier": "premium"}, "deny.tiers"),
        ("deny:\n  categories: [finance]\n", {"category": "finance"}, "deny.categories"),
        ("deny:\n  formats: [pdf]\n", {"format": "pdf"}, "deny.formats"),
        ("allow:\n  providers: [prov_other]\n", {}, "allow.providers"),
        ("allow:\n  endpoints: [ep_fx_*]\n", {}, "allow.endpoints"),
        ("allow:\n  agents: [finance-*]\n", {}, "allow.agents"),
        ("allow:\n  kinds: [dataset]\n", {}, "allow.kinds"),
        ("allow:\n  domain_types: [A8]\n", {}, "allow.domain_types"),
        ("allow:\n  product_classes: [B2]\n", {}, "allow.product_classes"),
        ("allow:\n  chains: [solana]\n", {}, "allow.chains"),
        ("allow:\n  protocols: [mpp]\n", {}, "allow.protocols"),
        ("allow:\n  tiers: [free]\n", {"tier": "premium"}, "allow.tiers"),
        ("allow:\n  categories: [news]\n", {"category": "finance"}, "allow.categories"),
        ("allow:\n  formats: [csv]\n", {"format": "pdf"}, "allow.formats"),
        ("require:\n  verified: true\n", {"verified": False}, "require.verified"),
        ("require:\n  min_quality: 0.95\n", {}, "require.min_quality"),
        ("require:\n  min_reliability: 0.999\n", {}, "require.min_reliability"),
        ("never_send: [emails]\n", {"inputs": {"q": "mail bob@example.com"}}, "never_send"),
        ("never_send: [sk_live_keys]\n", {"inputs": {"k": "sk_live_abcdefgh12"}}, "never_send"),
        (
            "never_send: [bearer_tokens]\n",
            {"inputs": {"h": "Bearer abcdefghijklmnop1234"}},
            "never_send",
        ),
        ("never_send: [evm_private_keys]\n", {"inputs": {"k": "0x" + "ab" * 32}}, "never_send"),
        ("never_send: [solana_private_keys]\n", {"inputs": {"k": "5" * 87}}, "never_send"),
        ("never_send: [emails]\n", {"inputs": {"bob@example.com": 1}}, "never_send"),  # in a key
        (
            "never_send_patterns:\n  project: 'PRJ-\\d{4}'\n",
            {"inputs": {"items": [{"q": "about PRJ-1234"}]}},
            "never_send_patterns",
        ),
        ('hours: ["mon-fri 11:00-12:00"]\n', {}, "hours"),
        ('hours: ["sat,sun 00:00-24:00"]\n', {}, "hours"),
        ('timezone: Asia/Tokyo\nhours: ["mon-fri 08:00-18:00"]\n', {}, "hours"),  # 19:30 there
        ("compute_tools: false\n", {"kind": "breed_agent", "usdc": 10}, "compute_tools"),
        ("compute_tools: [svc_breed_agent]\n", {"kind": "merge_models"}, "compute_tools"),
        ("dynamic_pricing: false\n", {"dynamic": True}, "dynamic_pricing"),
        ("budgets:\n  - {per: agent, window: day, max_usdc: 0.005}\n", {}, "budgets[0]"),
    ],
)
def test_every_rule_type_denies_and_is_cited_with_its_line(yaml, request_overrides, rule):
    policy = compiled(yaml)
    verdict = judge(policy, facts(**request_overrides))
    assert verdict.outcome == "deny", verdict.summary
    cited = [c for c in verdict.citations if c.effect == "deny"]
    assert [c.rule for c in cited] == [rule]
    assert cited[0].file == "SKILLS.md" and cited[0].line is not None and cited[0].line >= 4
    assert verdict.rules[0].startswith(f"{rule} (SKILLS.md:")


def test_a_pattern_that_backtracks_exponentially_in_python_runs_in_linear_time():
    """`(a+)+$` against letters and a `!` doubles Python's time with each letter (27 froze the
    broker for 9 s); under RE2 ten thousand letters are nothing. Run in a thread so a regression
    fails this test rather than hanging the suite."""
    import threading

    policy = compiled("never_send_patterns:\n  runaway: '(a+)+$'\n")
    verdicts = []
    request = facts(inputs={"q": "a" * 10_000 + "!", "r": "aaa"})
    worker = threading.Thread(target=lambda: verdicts.append(judge(policy, request)), daemon=True)
    worker.start()
    worker.join(timeout=120)
    assert verdicts, "the pattern did not finish: it is run by a backtracking engine"
    # and RE2 still matches what the pattern means
    assert judge(policy, facts(inputs={"q": "xaaa"})).outcome == "deny"


def test_of_several_patterns_searched_together_the_verdict_names_the_first_that_matches():
    policy = compiled(
        "never_send_patterns:\n  ticket: 'TCK-\\d+'\n  project: '(?i)prj-\\d{4}'\n"
        "  code: '^[A-Z]{3}$'\n"
    )
    cases = {"about prj-1234": "project", "TCK-9 and PRJ-1234": "ticket", "XYZ": "code"}
    for text, name in cases.items():
        verdict = judge(policy, facts(inputs={"q": text}))
        assert verdict.outcome == "deny"
        assert verdict.citations[0].reason == f"input q holds {name}"
    assert judge(policy, facts(inputs={"q": "prj-12, XYZW, TCK-"})).outcome != "deny"


@pytest.mark.parametrize(
    ("yaml", "request_overrides"),
    [
        ("per_call_max_usdc: 0.01\n", {}),  # at the cap is allowed
        ("deny:\n  providers: [prov_other*]\n", {}),
        ("allow:\n  tiers: [free]\n", {}),  # a market call has no tier
        ("allow:\n  domain_types: [A7]\n", {"kind": "dataset", "domain_type": None}),
        ("require:\n  verified: true\n", {"kind": "breed_agent", "verified": None}),
        ("never_send: [emails]\n", {"inputs": {"q": "no address here"}}),
        ('hours: ["mon-fri 10:00-11:00"]\n', {}),
        ('hours: ["tue 22:00-12:00"]\n', {}),  # past midnight: Wednesday morning belongs to Tuesday
        ("compute_tools: true\n", {"kind": "merge_models"}),
        ("compute_tools: false\n", {}),  # a market call is not a compute tool
        ("dynamic_pricing: false\n", {}),
    ],
)
def test_rules_that_do_not_apply_do_not_deny(yaml, request_overrides):
    assert judge(compiled(yaml), facts(**request_overrides)).outcome == "ask"


def test_a_matching_deny_wins_over_an_auto_approve_rule():
    policy = compiled(
        "deny:\n  chains: [base]\nauto_approve:\n  - name: all searches\n"
        "    when: {domain_types: [A7]}\n"
    )
    verdict = judge(policy, facts())
    assert verdict.outcome == "deny" and verdict.rules[0].startswith("deny.chains")


def test_every_deny_is_cited_not_only_the_first():
    policy = compiled("per_call_max_usdc: 0.001\ndeny:\n  chains: [base]\n  domain_types: [A7]\n")
    verdict = judge(policy, facts())
    assert {c.rule for c in verdict.citations} == {
        "per_call_max_usdc",
        "deny.chains",
        "deny.domain_types",
    }
    assert "(and 2 more)" in verdict.summary


def test_auto_approve_names_the_rule_with_its_file_and_line():
    policy = compiled(
        "auto_approve:\n"
        "  - name: big things\n    when: {min_quality: 0.99}\n"
        "  - name: small searches\n    when: {domain_types: [A7], verified: true, max_usdc: 0.05}\n"
    )
    verdict = judge(policy, facts())
    assert verdict.outcome == "auto_approve"
    assert verdict.rules == ["auto_approve 'small searches' (SKILLS.md:7)"]
    assert verdict.summary == "approved by auto_approve 'small searches' (SKILLS.md:7)"


@pytest.mark.parametrize(
    ("when", "request_overrides"),
    [
        ("max_usdc: 0.005", {}),
        ("verified: true", {"verified": False}),
        ("fixed_price: true", {"dynamic": True}),
        ("agents: [finance-*]", {}),
        ("providers: [prov_x]", {}),
        ("endpoints: [ep_fx_rates]", {}),
        ("kinds: [dataset]", {}),
        ("domain_types: [A8]", {}),
        ("product_classes: [B2]", {}),
        ("chains: [solana]", {}),
        ("protocols: [mpp]", {}),
        ("tiers: [free]", {}),  # a market call has no tier: the condition does not hold
        ("categories: [news]", {}),
        ("formats: [csv]", {}),
        ("min_quality: 0.99", {}),
        ("min_reliability: 0.999", {}),
        ('hours: ["sat 00:00-24:00"]', {}),
    ],
)
def test_each_auto_approve_condition_must_hold(when, request_overrides):
    policy = compiled(f"auto_approve:\n  - name: rule\n    when: {{{when}}}\n")
    assert judge(policy, facts(**request_overrides)).outcome == "ask"


def test_rolling_budgets_count_what_was_reserved_warn_then_stop_then_roll_off():
    policy = compiled(
        "budgets:\n  - {name: daily, per: agent, window: day, warn_usdc: 0.03, max_usdc: 0.05}\n"
    )
    totals = RollingTotals()
    request = facts()
    for n in range(3):
        assert judge(policy, request, totals, NOW + n).outcome == "ask"
        spend(totals, request, "0.01", NOW + n)
    warned = judge(policy, request, totals, NOW + 3)
    assert warned.outcome == "ask" and "1 budget warning" in warned.summary
    (impact,) = warned.budgets
    assert (impact.before_usdc, impact.after_usdc) == (Decimal("0.03"), Decimal("0.04"))
    assert impact.budget == "daily: research-bot" and impact.line == 5
    spend(totals, request, "0.02", NOW + 4)
    stopped = judge(policy, request, totals, NOW + 5)
    assert stopped.outcome == "deny" and "0.05 → 0.06 of 0.05 USDC" in stopped.summary
    # Another agent has its own budget; a day later the window has rolled past the spend.
    assert judge(policy, facts(agent="other-bot"), totals, NOW + 5).outcome == "ask"
    assert judge(policy, request, totals, NOW + 86_400 + 120).outcome == "ask"


@pytest.mark.parametrize(
    ("per", "key_overrides"),
    [("provider", {"agent": "someone-else"}), ("domain_type", {"provider": "prov_other"})],
)
def test_budgets_per_provider_and_per_domain_type(per, key_overrides):
    policy = compiled(f"budgets:\n  - {{per: {per}, window: hour, max_usdc: 0.02}}\n")
    totals = RollingTotals()
    spend(totals, facts(), "0.02", NOW)
    # Same provider (or domain type), another agent or provider: the same budget is spent.
    assert judge(policy, facts(**key_overrides), totals, NOW + 1).outcome == "deny"
    assert judge(policy, facts(**key_overrides), totals, NOW + 3600 + 61).outcome == "ask"


def test_a_budget_for_some_keys_ignores_the_others():
    policy = compiled("budgets:\n  - {per: agent, for: [intern-*], window: week, max_usdc: 0.01}\n")
    totals = RollingTotals()
    spend(totals, facts(agent="intern-1"), "0.01", NOW)
    spend(totals, facts(), "5", NOW)
    assert judge(policy, facts(agent="intern-1"), totals, NOW + 1).outcome == "deny"
    verdict = judge(policy, facts(), totals, NOW + 1)
    assert verdict.outcome == "ask" and verdict.budgets == []


def test_every_window_rolls_at_its_own_length():
    windows = {"hour": 3600, "day": 86_400, "week": 7 * 86_400, "month": 30 * 86_400}
    yaml = "budgets:\n" + "".join(f"  - {{window: {w}, max_usdc: 1}}\n" for w in windows)
    policy = compiled(yaml)
    totals = RollingTotals()
    spend(totals, facts(), "1", NOW)
    for name, seconds in windows.items():
        before_end = judge(policy, facts(), totals, NOW + seconds - 120)
        assert any(name in c.reason for c in before_end.citations if c.effect == "deny")
        late = {"week": 3600, "month": 86_400}.get(name, 60)  # the grain of the window's cells
        after_end = judge(policy, facts(), totals, NOW + seconds + late + 1)
        assert not any(name in c.reason for c in after_end.citations if c.effect == "deny")


def test_an_auto_approve_rule_stops_at_its_own_budget_and_the_next_rule_may_approve():
    policy = compiled(
        "auto_approve:\n"
        "  - name: first\n    when: {max_usdc: 0.05}\n"
        "    budgets:\n      - {per: agent, window: day, max_usdc: 0.02}\n"
        "  - name: second\n    when: {verified: true}\n"
    )
    totals = RollingTotals()
    request = facts()
    for n in range(2):
        verdict = judge(policy, request, totals, NOW + n)
        assert verdict.rules[0].startswith("auto_approve 'first'")
        spend(totals, request, "0.01", NOW + n, rule="first")
    verdict = judge(policy, request, totals, NOW + 2)
    assert verdict.rules[0].startswith("auto_approve 'second'")
    assert any(c.effect == "note" and c.rule == "first" for c in verdict.citations)
    # The rule's budget counts only what that rule approved: operator approvals do not spend it.
    fresh = RollingTotals()
    spend(fresh, request, "1", NOW)
    assert judge(policy, request, fresh, NOW + 1).rules[0].startswith("auto_approve 'first'")


def test_auto_approval_suspended_sends_to_the_operator_but_deny_still_applies():
    policy = compiled(
        "deny:\n  chains: [solana]\nauto_approve:\n  - name: all\n    when: {verified: true}\n"
    )
    result = policy.evaluate(facts(), RollingTotals(), NOW, auto_allowed=False)
    assert result.outcome == "ask"
    assert "suspended" in result.citations[0].text()
    denied = policy.evaluate(facts(chain="solana"), RollingTotals(), NOW, auto_allowed=False)
    assert denied.outcome == "deny"


def test_totals_never_run_backwards_with_the_clock():
    policy = compiled("budgets:\n  - {window: hour, max_usdc: 0.01}\n")
    totals = RollingTotals()
    spend(totals, facts(), "0.01", NOW)
    judge(policy, facts(), totals, NOW + 7200)  # the spend rolled off
    # A clock set back an hour must not bring back a window that has moved on, nor crash.
    assert judge(policy, facts(), totals, NOW + 10).outcome == "ask"


# -- the property --------------------------------------------------------------------------------

AGENTS = ["a", "b", "c"]
PROVIDERS = ["p1", "p2"]
DOMAINS = ["A7", "A8"]
WINDOWS = {"hour": 3600, "day": 86_400}


@st.composite
def policies(draw):
    cap = draw(st.integers(1, 300))
    budgets = draw(
        st.lists(
            st.tuples(
                st.sampled_from(["agent", "provider", "domain_type", "overall"]),
                st.sampled_from(list(WINDOWS)),
                st.integers(1, 500),
            ),
            max_size=4,
        )
    )
    rules = draw(
        st.lists(
            st.tuples(
                st.one_of(st.none(), st.integers(1, 400)),
                st.one_of(st.none(), st.sampled_from(DOMAINS)),
                st.lists(
                    st.tuples(
                        st.sampled_from(["agent", "overall"]),
                        st.sampled_from(list(WINDOWS)),
                        st.integers(1, 300),
                    ),
                    max_size=2,
                ),
            ),
            min_size=1,
            max_size=3,
        )
    )
    return cap, budgets, rules


def _yaml(cap, budgets, rules) -> str:
    def listed(items, indent):
        return "".join(
            f"{indent}- {{per: {p}, window: {w}, max_usdc: {m / 100}}}\n" for p, w, m in items
        )

    text = f"per_call_max_usdc: {cap / 100}\n"
    text += f"budgets:\n{listed(budgets, '  ')}" if budgets else ""
    text += "auto_approve:\n"
    for index, (most, domain, own) in enumerate(rules):
        conditions = [f"max_usdc: {most / 100}"] if most else []
        conditions += [f"domain_types: [{domain}]"] if domain else []
        conditions = conditions or ["verified: true"]
        text += f"  - name: r{index}\n    when: {{{', '.join(conditions)}}}\n"
        text += f"    budgets:\n{listed(own, '      ')}" if own else ""
    return text


requests = st.lists(
    st.tuples(
        st.sampled_from(AGENTS),
        st.sampled_from(PROVIDERS),
        st.sampled_from(DOMAINS),
        st.integers(1, 400),  # cents
        st.integers(0, 7200),  # seconds after the previous request
    ),
    min_size=1,
    max_size=40,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(policies(), requests)
def test_no_request_exceeding_a_hard_cap_is_ever_approved_by_a_rule(policy_parts, stream):
    cap, budgets, rules = policy_parts
    policy = compiled(_yaml(cap, budgets, rules))
    totals = RollingTotals()
    approved: list[
        tuple[float, str, str, str, int, str]
    ] = []  # at, agent, provider, domain, ¢, rule
    now = NOW
    for agent, provider, domain, cents, gap in stream:
        now += gap
        request = facts(agent=agent, provider=provider, domain_type=domain, usdc=cents / 100)
        result = policy.evaluate(request, totals, now)
        if result.outcome != "auto_approve":
            continue
        rule = result.rule
        assert cents <= cap, "above the per-call cap"
        index = int(rule[1:])
        most = rules[index][0]
        assert most is None or cents <= most, "above the rule's max_usdc"

        def spent(
            per, window, rule_only=None, at=now, agent=agent, provider=provider, domain=domain
        ):
            key = {"agent": agent, "provider": provider, "domain_type": domain, "overall": None}[
                per
            ]
            field = {"agent": 1, "provider": 2, "domain_type": 3}.get(per)
            return sum(
                c
                for t, *keys, c, r in approved
                if slot_of(t) > at - WINDOWS[window]  # counted to the end of the spend's minute
                and (field is None or keys[field - 1] == key)
                and (rule_only is None or r == rule_only)
            )

        for per, window, most_cents in budgets:
            assert spent(per, window) + cents <= most_cents, f"past a {window} budget per {per}"
        for per, window, most_cents in rules[index][2]:
            assert spent(per, window, rule) + cents <= most_cents, "past the rule's own budget"
        approved.append((now, agent, provider, domain, cents, rule))
        spend(totals, request, str(Decimal(cents) / 100), now, rule=rule)


def test_totals_loaded_from_the_ledger_are_exact_for_a_day_and_never_early_after(tmp_path):
    from svc_console.ledger import Ledger
    from svc_console.ledger.budgets import add, totals_rows
    from svc_console.policy.budgets import WINDOW_INDEX

    ledger = Ledger(tmp_path / "ledger.db")
    rng = __import__("random").Random(7)
    spends = [(NOW - rng.randrange(0, 35 * 86_400), rng.randrange(1, 10_000)) for _ in range(3000)]
    with ledger.db.atomic():
        for at, amount in spends:
            add(ledger.db, (("agent", "bot"),), slot_of(at), settled=amount)
    totals = RollingTotals()
    totals.load(totals_rows(ledger.db, NOW), NOW)
    ledger.close()
    for window, seconds in (
        ("hour", 3600),
        ("day", 86_400),
        ("week", 604_800),
        ("month", 2_592_000),
    ):
        exact = sum(amount for at, amount in spends if slot_of(at) > NOW - seconds)
        loaded = totals.used(("agent", "bot"), WINDOW_INDEX[window], NOW)
        if window in ("hour", "day"):
            assert loaded == exact, window
        else:  # older spend is summed per hour (a week) or day (a month), stamped at its end
            late = 3600 if window == "week" else 86_400
            margin = sum(
                amount
                for at, amount in spends
                if NOW - seconds - late < slot_of(at) <= NOW - seconds
            )
            assert exact <= loaded <= exact + margin, window


# -- the generated hot path agrees with the interpreted rules ----------------------------------

NAMES = ["research-bot", "Intern-1", "prov_searchly", "Searchly", "ep_websearch_basic", "x"]


@st.composite
def list_policies(draw):
    def entries(pool):
        return draw(st.lists(st.sampled_from(pool), min_size=0, max_size=3, unique=True))

    globs = ["research-*", "intern-?", "PROV_*", "*ly", "ep_web*", "x", "nobody"]
    lists = {
        "agents": entries(globs),
        "providers": entries(globs),
        "endpoints": entries(globs),
        "domain_types": entries(["A7", "A8", "A11"]),
        "chains": entries(["base", "solana"]),
    }
    text = ""
    for side in ("allow", "deny"):
        chosen = {k: v for k, v in lists.items() if v and draw(st.booleans())}
        if chosen:
            text += f"{side}:\n" + "".join(f"  {k}: {v}\n" for k, v in chosen.items())
    budgets = draw(
        st.lists(
            st.tuples(
                st.sampled_from(["agent", "provider", "domain_type", "overall"]),
                st.sampled_from(["hour", "day", "week", "month"]),
                st.one_of(st.none(), st.integers(1, 50)),
                st.integers(1, 60),
                st.booleans(),
            ),
            max_size=5,
        )
    )
    if budgets:
        text += "budgets:\n"
        for per, window, warn, most, only in budgets:
            line = f"  - {{per: {per}, window: {window}, max_usdc: {most / 100}"
            line += f", warn_usdc: {min(warn, most) / 100}" if warn else ""
            line += ', for: ["research-*", "prov_s*", "A7"]' if only and per != "overall" else ""
            text += line + "}\n"
    return text or "per_call_max_usdc: 5\n"


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    list_policies(),
    st.lists(
        st.tuples(
            st.sampled_from(NAMES),
            st.sampled_from([*NAMES, None]),
            st.sampled_from(["A7", "A8", "A11", None]),
            st.sampled_from(["base", "solana"]),
            st.integers(1, 30),
            st.integers(0, 90_000),
        ),
        min_size=1,
        max_size=12,
    ),
)
def test_the_generated_hot_path_decides_and_cites_as_the_interpreted_rules(yaml, stream):
    loaded = load_text(f"```policy\n{yaml}```\n")
    generated, interpreted = CompiledPolicy(loaded), CompiledPolicy(loaded, generated=False)
    totals = RollingTotals()
    now = NOW
    for agent, provider, domain, chain, cents, gap in stream:
        now += gap
        request = facts(
            agent=agent, provider=provider, domain_type=domain, chain=chain, usdc=cents / 100
        )
        one = to_verdict(generated.evaluate(request, totals, now))
        other = to_verdict(interpreted.evaluate(request, totals, now))
        assert one.model_dump() == other.model_dump()
        spend(totals, request, str(Decimal(cents) / 100), now)
