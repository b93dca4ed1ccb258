"""The approval decision table (DESIGN.md "Approvals"), cell by cell."""

from types import MappingProxyType
from typing import cast

import pytest

from meworkd.core.approvals.policy import (
    APPROVAL_LEVELS,
    REQUIRES_USER_INTERACTION_KEY,
    ApprovalLevel,
    AskReason,
    DecidedBy,
    Rule,
    approval_reason,
    ask_reasons,
    decide,
    requires_user_interaction,
    resolve,
)

ASKING_LEVELS: list[ApprovalLevel] = ["request_approval", "allow_edits", "plan"]
KEY = REQUIRES_USER_INTERACTION_KEY


def test_levels_are_the_four_of_the_design() -> None:
    assert APPROVAL_LEVELS == ("request_approval", "allow_edits", "plan", "full_access")


# --- requires_user_interaction -------------------------------------------------------------


@pytest.mark.parametrize(
    ("meta", "expected"),
    [
        pytest.param(None, False, id="no-meta"),
        pytest.param({}, False, id="empty-meta"),
        pytest.param({"other/key": True}, False, id="key-absent"),
        pytest.param({KEY: False}, False, id="false"),
        pytest.param({KEY: True}, True, id="true"),
        pytest.param({KEY: True, "other": 1}, True, id="true-among-others"),
        pytest.param(MappingProxyType({KEY: False}), False, id="read-only-mapping"),
        # Malformed values fail closed.
        pytest.param({KEY: "true"}, True, id="string-true"),
        pytest.param({KEY: "false"}, True, id="string-false"),
        pytest.param({KEY: ""}, True, id="empty-string"),
        pytest.param({KEY: 1}, True, id="one"),
        pytest.param({KEY: 0}, True, id="zero"),
        pytest.param({KEY: 0.0}, True, id="float-zero"),
        pytest.param({KEY: {}}, True, id="object"),
        pytest.param({KEY: []}, True, id="list"),
        pytest.param({KEY: [False]}, True, id="list-of-false"),
        pytest.param({KEY: None}, True, id="null-valued-key"),
        # A _meta that is not an object at all also fails closed.
        pytest.param([], True, id="meta-list"),
        pytest.param([[KEY, False]], True, id="meta-pairs"),
        pytest.param("{}", True, id="meta-string"),
        pytest.param(0, True, id="meta-zero"),
        pytest.param(False, True, id="meta-false"),
        pytest.param(True, True, id="meta-true"),
    ],
)
def test_requires_user_interaction(meta: object, expected: bool) -> None:
    assert requires_user_interaction(meta) is expected


# --- decide: every cell ----------------------------------------------------------------------


@pytest.mark.parametrize("level", ASKING_LEVELS)
def test_ordinary_tool_at_asking_levels(level: ApprovalLevel) -> None:
    assert decide(level, mandatory=False, auto_approve_disabled=False) is Rule.ASK_HOOK_MAY_DECIDE


def test_ordinary_tool_at_full_access_runs() -> None:
    assert decide("full_access", mandatory=False, auto_approve_disabled=False) is Rule.RUN


@pytest.mark.parametrize("level", APPROVAL_LEVELS)
@pytest.mark.parametrize(
    ("mandatory", "auto_approve_disabled"), [(True, False), (False, True), (True, True)]
)
def test_mandatory_or_auto_approve_off_asks_at_every_level(
    level: ApprovalLevel, mandatory: bool, auto_approve_disabled: bool
) -> None:
    rule = decide(level, mandatory=mandatory, auto_approve_disabled=auto_approve_disabled)
    assert rule is Rule.ASK_HOOK_MAY_ONLY_DENY


@pytest.mark.parametrize("level", ["", "FULL_ACCESS", "bypassPermissions", "full-access"])
def test_unknown_level_asks(level: str) -> None:
    rule = decide(cast(ApprovalLevel, level), mandatory=False, auto_approve_disabled=False)
    assert rule is Rule.ASK_HOOK_MAY_DECIDE


@pytest.mark.parametrize("level", APPROVAL_LEVELS)
@pytest.mark.parametrize(
    "meta",
    [{KEY: True}, {KEY: "true"}, {KEY: 1}, {KEY: 0}, {KEY: {}}, {KEY: []}, {KEY: None}, "x"],
)
def test_malformed_or_true_meta_never_runs_unasked(level: ApprovalLevel, meta: object) -> None:
    rule = decide(level, mandatory=requires_user_interaction(meta), auto_approve_disabled=False)
    assert rule is Rule.ASK_HOOK_MAY_ONLY_DENY
    assert resolve(rule, "allow") == ("ask", None)


# --- resolve: the rule combined with a hook verdict --------------------------------------------


@pytest.mark.parametrize(
    ("rule", "hook", "expected"),
    [
        (Rule.RUN, None, ("run", DecidedBy.LEVEL)),
        (Rule.RUN, "allow", ("run", DecidedBy.LEVEL)),
        (Rule.RUN, "deny", ("run", DecidedBy.LEVEL)),
        (Rule.ASK_HOOK_MAY_DECIDE, None, ("ask", None)),
        (Rule.ASK_HOOK_MAY_DECIDE, "allow", ("run", DecidedBy.HOOK)),
        (Rule.ASK_HOOK_MAY_DECIDE, "deny", ("deny", DecidedBy.HOOK)),
        (Rule.ASK_HOOK_MAY_DECIDE, "ask", ("ask", None)),
        (Rule.ASK_HOOK_MAY_DECIDE, "Allow", ("ask", None)),
        (Rule.ASK_HOOK_MAY_ONLY_DENY, None, ("ask", None)),
        (Rule.ASK_HOOK_MAY_ONLY_DENY, "allow", ("ask", None)),
        (Rule.ASK_HOOK_MAY_ONLY_DENY, "deny", ("deny", DecidedBy.HOOK)),
    ],
)
def test_resolve(rule: Rule, hook: str | None, expected: tuple[str, DecidedBy | None]) -> None:
    assert resolve(rule, hook) == expected


def test_decided_by_vocabulary() -> None:
    assert {d.value for d in DecidedBy} == {
        "user",
        "rule",
        "hook",
        "level",
        "policy",
        "timeout",
        "cancelled",
        "shutdown",
    }
    assert str(DecidedBy.USER) == "user"


# --- reason texts -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("level", "mandatory", "auto_off", "expected"),
    [
        ("request_approval", False, False, "approval level request_approval asks for every call"),
        ("allow_edits", False, False, "approval level allow_edits asks for every call"),
        ("plan", False, False, "approval level plan asks for every call"),
        ("full_access", False, False, None),
        ("full_access", True, False, "requires user interaction (server-declared)"),
        ("plan", True, False, "requires user interaction (server-declared)"),
        ("full_access", False, True, "auto-approve is switched off for this tool"),
        ("request_approval", False, True, "auto-approve is switched off for this tool"),
        (
            "full_access",
            True,
            True,
            "requires user interaction (server-declared); "
            "auto-approve is switched off for this tool",
        ),
    ],
)
def test_approval_reason(
    level: ApprovalLevel, mandatory: bool, auto_off: bool, expected: str | None
) -> None:
    assert approval_reason(level, mandatory=mandatory, auto_approve_disabled=auto_off) == expected


@pytest.mark.parametrize("level", APPROVAL_LEVELS)
@pytest.mark.parametrize("mandatory", [False, True])
@pytest.mark.parametrize("auto_off", [False, True])
def test_a_reason_exists_exactly_when_the_call_asks(
    level: ApprovalLevel, mandatory: bool, auto_off: bool
) -> None:
    rule = decide(level, mandatory=mandatory, auto_approve_disabled=auto_off)
    reasons = ask_reasons(level, mandatory=mandatory, auto_approve_disabled=auto_off)
    assert (rule is Rule.RUN) == (reasons == [])
    assert (AskReason.LEVEL_ASKS in reasons) == (rule is Rule.ASK_HOOK_MAY_DECIDE)
