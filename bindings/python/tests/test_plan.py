"""The shard planner (evident/plan.py): the plan digest against hand-written canonical bytes,
determinism (input order, hash seed, separate processes), exact cover and balance of both split
rules, the documented durations rule on a worked example, and which shard a CI environment
selects. Pure logic: no display needed."""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys

import pytest

from evident.plan import (ShardError, assign, check_plan, load_durations, make_plan, parse_spec,
                          plan_sha256, resolve_shard, shard_tests)

PKG = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

IDS = [f"tests/test_{m}.py::test_{k}[{p}]" for m in "abc" for k in range(7) for p in ("x", "é")]


def test_plan_digest_is_the_domain_digest_of_the_canonical_plan():
    plan = make_plan(["b.py::t", "a.py::t"], 2)
    # JCS written by hand: keys sorted, no whitespace.
    canonical = b'{"config":{"split":"hash/v1"},"n":2,"tests":["a.py::t","b.py::t"]}'
    expected = hashlib.sha256(b"evident/plan/v1\x00" + canonical).hexdigest()
    assert plan == {"tests": ["a.py::t", "b.py::t"], "n": 2, "config": {"split": "hash/v1"}}
    assert plan_sha256(plan) == expected


def test_hash_split_follows_the_documented_rule():
    plan = make_plan(IDS, 3)
    order = sorted(IDS, key=lambda t: (hashlib.sha256(
        b"evident/shard-order/v1\x00" + t.encode()).hexdigest(), t))
    expected = [sorted(order[k::3]) for k in range(3)]
    assert assign(plan) == expected


@pytest.mark.parametrize("n", [1, 2, 3, 5, 42, 50])
def test_hash_split_is_an_exact_balanced_cover(n):
    shards = assign(make_plan(IDS, n))
    assert len(shards) == n
    flat = [t for s in shards for t in s]
    assert sorted(flat) == sorted(IDS) and len(flat) == len(set(flat))
    sizes = [len(s) for s in shards]
    assert max(sizes) - min(sizes) <= 1
    assert all(s == sorted(s) for s in shards)


def test_split_does_not_depend_on_collection_order_or_process():
    a = make_plan(IDS, 4)
    b = make_plan(list(reversed(IDS)), 4)
    assert a == b and plan_sha256(a) == plan_sha256(b) and assign(a) == assign(b)
    code = ("import json,sys; from evident.plan import make_plan, assign, plan_sha256; "
            "ids=json.load(sys.stdin); p=make_plan(ids, 4); "
            "print(json.dumps([plan_sha256(p), assign(p)]))")
    outs = set()
    for seed in ("0", "1", "12345"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        out = subprocess.run([sys.executable, "-c", code], input=json.dumps(IDS[::-1]),
                             capture_output=True, text=True, env=env, check=True).stdout
        outs.add(out)
    assert outs == {json.dumps([plan_sha256(a), assign(a)]) + "\n"}


def test_durations_split_worked_example():
    durations = {"a": 5000, "b": 3000, "c": 3000, "d": 2000, "not-in-plan": 99999}
    plan = make_plan(["e", "d", "c", "b", "a"], 2, durations)
    # The table is restricted to the plan's tests; e has none and counts as the mean, 3250 ms.
    assert plan["config"] == {"split": "durations/v1",
                              "durations_ms": {"a": 5000, "b": 3000, "c": 3000, "d": 2000}}
    # Longest first to the lightest shard: a->1, e->2, b->2, c->1, d->2.
    assert assign(plan) == [["a", "c"], ["b", "d", "e"]]
    assert shard_tests(plan, 2) == ["b", "d", "e"]


def test_durations_change_the_plan_digest():
    assert plan_sha256(make_plan(IDS, 2)) != plan_sha256(make_plan(IDS, 2, {IDS[0]: 10}))
    assert plan_sha256(make_plan(IDS, 2)) != plan_sha256(make_plan(IDS, 3))
    assert plan_sha256(make_plan(IDS, 2)) != plan_sha256(make_plan(IDS[1:], 2))


def test_durations_file_formats(tmp_path):
    p = tmp_path / "d.json"
    p.write_text('{"a": 1.25, "b": 2}')
    assert load_durations(str(p)) == {"a": 1250, "b": 2000}
    for bad in ('[1]', '{"a": -1}', '{"a": "1"}', '{"a": 1, "a": 2}', '{"a": NaN}', "{"):
        p.write_text(bad)
        with pytest.raises(ShardError) as e:
            load_durations(str(p))
        assert e.value.code == "shard-durations"
    with pytest.raises(ShardError) as e:
        load_durations(str(tmp_path / "missing.json"))
    assert e.value.code == "shard-durations"


@pytest.mark.parametrize("spec", ["0/2", "3/2", "1/0", "a/b", "1", "1/2/3", "-1/2", "1/1025",
                                  " /2", "1/9999999"])
def test_bad_specs_are_refused(spec):
    with pytest.raises(ShardError) as e:
        parse_spec(spec)
    assert e.value.code == "shard-spec"


def test_shard_comes_from_option_then_ci_then_kubernetes():
    assert resolve_shard("2/3", None, {"CI_NODE_INDEX": "1", "CI_NODE_TOTAL": "9"}) == \
        (2, 3, "option")
    assert resolve_shard("off", None, {"CI_NODE_INDEX": "1", "CI_NODE_TOTAL": "9"}) is None
    assert resolve_shard(None, None, {"CI_NODE_INDEX": "4", "CI_NODE_TOTAL": "9"}) == \
        (4, 9, "CI_NODE_INDEX")
    assert resolve_shard(None, None, {"JOB_COMPLETION_INDEX": "0", "EVIDENT_SHARD_TOTAL": "3"}) \
        == (1, 3, "JOB_COMPLETION_INDEX")
    assert resolve_shard(None, 5, {"JOB_COMPLETION_INDEX": "4"}) == (5, 5, "JOB_COMPLETION_INDEX")
    assert resolve_shard(None, None, {}) is None
    for env in ({"CI_NODE_INDEX": "1"}, {"JOB_COMPLETION_INDEX": "0"},
                {"JOB_COMPLETION_INDEX": "3", "EVIDENT_SHARD_TOTAL": "3"},
                {"CI_NODE_INDEX": "x", "CI_NODE_TOTAL": "2"}):
        with pytest.raises(ShardError) as e:
            resolve_shard(None, None, env)
        assert e.value.code == "shard-spec"


def test_plan_shape_is_checked():
    good = make_plan(["a", "b"], 2, {"a": 3})
    assert check_plan(good) is None
    bad = [
        {"tests": ["b", "a"], "n": 2, "config": {"split": "hash/v1"}},
        {"tests": ["a", "a"], "n": 2, "config": {"split": "hash/v1"}},
        {"tests": ["a"], "n": 0, "config": {"split": "hash/v1"}},
        {"tests": ["a"], "n": True, "config": {"split": "hash/v1"}},
        {"tests": ["a"], "n": 1, "config": {"split": "other"}},
        {"tests": ["a"], "n": 1, "config": {"split": "hash/v1", "x": 1}},
        {"tests": ["a"], "n": 1, "config": {"split": "durations/v1", "durations_ms": {"z": 1}}},
        {"tests": ["a"], "n": 1, "config": {"split": "durations/v1", "durations_ms": {"a": -1}}},
        {"tests": [""], "n": 1, "config": {"split": "hash/v1"}},
        {"tests": ["a"], "n": 1},
    ]
    for plan in bad:
        assert check_plan(plan) is not None, plan
        with pytest.raises(ShardError):
            assign(plan)
    with pytest.raises(ShardError) as e:
        make_plan(["a", "a"], 2)
    assert e.value.code == "shard-plan"
