"""The admission policy's spec rules are the authority table written as CEL: one validation per
spec row (and two more for participants), each message the table's own refusal. Whether the API
server enforces them as the table says is checked on the real authorizer
(tests/security/test_spec_authority.py)."""

from __future__ import annotations

from pydantic.alias_generators import to_camel

from tiny_harness.core.authority import SPEC_ROWS, row_template
from tiny_harness.kube.admission import RULES
from tiny_harness.kube.authority_rules import GRANT_RULE, REMOVAL_RULE, SPEC_RULES, message


def test_each_spec_row_is_one_rule_in_the_policy_in_the_tables_order() -> None:
    rules = [rule for rule, _ in SPEC_RULES]
    assert len(rules) == len(SPEC_ROWS) + 2
    assert rules[1:3] == [GRANT_RULE, REMOVAL_RULE]
    others = rules[:1] + rules[3:]
    for row, rule in zip(SPEC_ROWS, others, strict=True):
        for field in row.fields:
            assert f"object.spec.{to_camel(field)} == oldObject.spec.{to_camel(field)}" in rule
    assert all(entry in RULES for entry in SPEC_RULES)


def test_a_message_is_the_tables_sentence_with_the_requests_values() -> None:
    budget = next(row for row in SPEC_ROWS if row.name == "budget")
    text = message(row_template(budget))
    assert text.startswith("request.userInfo.username + ' is ' + ")
    assert "' and may not change the budget of task ' + object.metadata.name + ' (spec.budget)" in (
        text
    )
    for placeholder in ("{writer}", "{phrase}", "{task}", "{held}"):
        assert placeholder not in text
