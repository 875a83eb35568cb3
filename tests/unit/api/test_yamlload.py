"""The hardened YAML/JSON reader: refusals before expansion, one-line errors with positions."""

from __future__ import annotations

import os
import tracemalloc

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fleetsched.api import yamlload
from fleetsched.api.load import MEMBER_CLUSTER_KEY, load_text
from fleetsched.api.yamlload import Budget, LoadError, decode_text, iter_documents, load_json


def bomb(levels: int, width: int = 9) -> str:
    """A billion-laughs document: ``width ** levels`` strings from a few hundred bytes."""
    lines = ["status:", "  l0: &l0 [" + ", ".join(["lol"] * width) + "]"]
    lines += [f"  l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * width) + "]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


def docs(text: str, **kwargs: object) -> list[object]:
    return [doc for _, doc in iter_documents(text, "in.yaml", **kwargs)]  # type: ignore[arg-type]


def refusal(text: str, **kwargs: object) -> str:
    with pytest.raises(LoadError) as caught:
        docs(text, **kwargs)
    message = str(caught.value)
    assert "\n" not in message
    return message


def test_alias_bomb_is_refused_before_expansion() -> None:
    message = refusal(bomb(9))
    assert message.startswith("in.yaml: document 1 (line 9, column 7): status.l7: Forbidden: aliases expand")
    assert "more than the 100000 allowed" in message


def test_alias_budget_is_configurable_and_small_reuse_passes() -> None:
    assert docs(bomb(3))  # 9 + 81 + 729 nodes through aliases: fine
    assert "more than the 50 allowed" in refusal(bomb(3), budget=Budget(max_alias_nodes=50))


def test_recursive_alias_is_refused() -> None:
    assert "recursive alias" in refusal("a: &a [1, *a]\n")


def test_merge_keys_may_be_overridden_but_plain_keys_not_repeated() -> None:
    (doc,) = docs("base: &b {x: 1, y: 2}\nm:\n  <<: *b\n  x: 3\n")
    assert doc == {"base": {"x": 1, "y": 2}, "m": {"x": 3, "y": 2}}
    message = refusal("metadata:\n  labels:\n    app: a\n    app: b\n")
    assert message == (
        'in.yaml: document 1 (line 4, column 5): metadata.labels[app]: Duplicate value: "app": '
        "mapping key already defined at line 3"
    )


def test_keys_that_construct_equal_are_duplicates() -> None:
    assert "Duplicate value: 1" in refusal("{1: a, 0x1: b}\n")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("spec:\n  replicas: " + "9" * 5000 + "\n",
                     "spec.replicas: Invalid value: an integer of 5000 digits", id="5000 digits"),
        pytest.param("x: 0x" + "f" * 2000 + "\n", "x: Invalid value: an integer of", id="hex"),
        pytest.param("x: -" + "1" * 400 + "\n", "x: Invalid value: an integer of 400 digits", id="negative"),
        pytest.param("x: 2026-13-45\n", 'x: Invalid value: "2026-13-45": not a valid timestamp',
                     id="bad date"),
    ],
)  # fmt: skip
def test_values_python_cannot_build_are_one_line(text: str, expected: str) -> None:
    assert expected in refusal(text)


def test_largest_allowed_integer_loads() -> None:
    (doc,) = docs("x: " + "9" * 309 + "\n")
    assert doc == {"x": 10**309 - 1}


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        pytest.param(b"a: 1\nb: \xff\xfe\n", "in.yaml (line 2, column 4): not UTF-8 text: invalid start byte",
                     id="ff"),
        pytest.param(b"\x89PNG\r\n\x1a\n\x00\x00", "in.yaml (line 1, column 1): not UTF-8 text", id="binary"),
    ],
)  # fmt: skip
def test_undecodable_bytes_name_line_and_column(data: bytes, expected: str) -> None:
    with pytest.raises(LoadError) as caught:
        decode_text(data, "in.yaml")
    assert str(caught.value).startswith(expected)


def test_byte_order_mark_is_dropped() -> None:
    assert decode_text(b"\xef\xbb\xbfa: 1\n", "in.yaml") == "a: 1\n"


def test_control_characters_and_syntax_errors_are_one_line_with_position() -> None:
    assert refusal("a: 1\nb: \x00\n").startswith("in.yaml: document 1 (line 2, column 4): malformed YAML:")
    assert refusal("a: 1\n---\nb: x: y\n").startswith(
        "in.yaml: document 2 (line 3, column 5): malformed YAML:"
    )


def test_json_reader_has_the_same_refusals() -> None:
    assert load_json(b'{"a": [1, 2.5, "x"]}') == {"a": [1, 2.5, "x"]}
    for data, expected in [
        (b'{"a": 1, "a": 2}', 'Duplicate value: "a"'),
        (b'{"a": ' + b"1" * 5000 + b"}", "an integer of 5000 digits"),
        (b'{"a": [1,', "<request> (line 1, column 10): malformed JSON"),
        (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
        (b'{"a": "\xff"}', "not UTF-8 text"),
    ]:
        with pytest.raises(LoadError) as caught:
            load_json(data)
        assert expected in str(caught.value) and "\n" not in str(caught.value)


OBJECT = "apiVersion: {v}\nkind: {k}\nmetadata: {{name: {n}{extra}}}\n"


@pytest.mark.parametrize(
    ("first", "second", "duplicate"),
    [
        pytest.param(("v1", "ConfigMap", "c", ""), ("v1", "ConfigMap", "c", ", namespace: default"), True,
                     id="no namespace is the default namespace"),
        pytest.param(("v1", "ConfigMap", "c", ""), ("v1", "ConfigMap", "c", ", namespace: other"), False,
                     id="other namespace"),
        pytest.param(("v1", "Node", "n", ""), ("v1", "Node", "n",
                     f", annotations: {{{MEMBER_CLUSTER_KEY}: m2}}"), False, id="node of another member"),
        pytest.param(("cluster.karmada.io/v1alpha1", "Cluster", "m", ""),
                     ("cluster.karmada.io/v1alpha1", "Cluster", "m", ", labels: {a: b}"), True, id="cluster"),
        pytest.param(("v1", "ConfigMap", "c", ""), ("v1", "Secret", "c", ""), False, id="other kind"),
    ],
)  # fmt: skip
def test_objects_the_api_would_hold_once_are_refused(
    first: tuple[str, str, str, str], second: tuple[str, str, str, str], duplicate: bool
) -> None:
    text = "\n---\n".join(OBJECT.format(v=v, k=k, n=n, extra=e) for v, k, n, e in (first, second))
    if not duplicate:
        assert len(load_text(text, filename="in.yaml").objects) == 2
        return
    with pytest.raises(LoadError) as caught:
        load_text(text, filename="in.yaml")
    assert str(caught.value).startswith("in.yaml: document 2: metadata.name: Duplicate value: ")
    assert str(caught.value).endswith("is also defined in in.yaml: document 1")


def test_member_cluster_key_matches_the_estimators() -> None:
    from fleetsched.estimator.inprocess import MEMBER_CLUSTER_ANNOTATION

    assert MEMBER_CLUSTER_KEY == MEMBER_CLUSTER_ANNOTATION


def test_plain_documents_skip_the_alias_walk(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[object] = []
    monkeypatch.setattr(yamlload, "_check_aliases", lambda *a: calls.append(a))
    docs("a: {b: [1, 2]}\n")
    assert calls == []
    docs("a: &x {b: [1, 2]}\nc: *x\n")
    assert len(calls) == 1


# ---------------------------------------------------------------------------------------------
# Fuzz, in process: the loaders either load or raise one LoadError line, within bounded memory

settings.register_profile(
    "loader-fuzz",
    max_examples=int(os.environ.get("LOADER_FUZZ_EXAMPLES", "300")),
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

VALID = (
    "apiVersion: work.karmada.io/v1alpha2\nkind: ResourceBinding\nmetadata: {name: b, namespace: default}\n"
    "spec:\n  resource: {apiVersion: apps/v1, kind: Deployment, name: d}\n  replicas: 2\n"
    "status:\n  aggregatedStatus:\n  - clusterName: m1\n    status:\n      ready: 1\n"
)
HOSTILE = [
    bomb(9),
    "x: " + "7" * 5000 + "\n",
    "x: 0o" + "7" * 3000 + "\n",
    "a: 1\na: 2\n",
    "t: 2026-02-30T25:61:00Z\n",
    "d: " + "[" * 3000 + "]" * 3000 + "\n",
    "r: &r {a: *r}\n",
    "k: !!python/name:os.system\n",
    "s: !!set {a, b}\n",
    "? [complex, key]\n: v\n",
    "m: {<<: [*missing]}\n",
    "---\n" + VALID,
    "\ufeff\x85\u2028\ud800\n",
]


@st.composite
def texts(draw: st.DrawFn) -> bytes:
    data = VALID.encode()
    for _ in range(draw(st.integers(1, 4))):
        choice = draw(st.integers(0, 3))
        at = draw(st.integers(0, len(data)))
        if choice == 0:
            piece = draw(st.sampled_from(HOSTILE)).encode("utf-8", "surrogatepass")
        elif choice == 1:
            piece = draw(st.binary(max_size=32))
        elif choice == 2:
            piece = draw(
                st.text(alphabet=st.sampled_from(list("{}[]:,&*!|>-?'\"#%@` \n\t01xa")), max_size=40)
            )
            piece = piece.encode()
        else:
            data, piece = data[:at], b""
        data = data[:at] + piece + data[at:]
    return data


@settings(settings.get_profile("loader-fuzz"))
@given(data=texts(), as_json=st.booleans())
def test_loaders_load_or_fail_in_one_line_within_bounded_memory(data: bytes, as_json: bool) -> None:
    tracemalloc.start()
    try:
        if as_json:
            load_json(data)
        else:
            load_text(decode_text(data, "in.yaml"), filename="in.yaml")
    except LoadError as exc:
        assert "\n" not in str(exc) and str(exc)
    finally:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    assert peak < 64 << 20, f"{peak / 2**20:.0f} MiB"


# --- the fast construction of plain documents ------------------------------------------------

PLAIN_CASES = [
    pytest.param("a: 1\nb: [x, 'y', \"z\"]\nc: {d: ~, e: null}\n", id="mapping sequence flow"),
    pytest.param("n: [0, -3, +7, 0x1f, 0o17, 1_000, 3.5, .inf, -.Inf, .nan, 1e3]\n", id="numbers"),
    pytest.param("b: [yes, No, true, FALSE, on, off]\n", id="booleans"),
    pytest.param("t: 2026-03-04T05:06:07Z\nd: 2026-03-04\nq: '2026-03-04'\n", id="timestamps"),
    pytest.param("1: int key\n2.5: float key\nnull: none key\nfalse: bool key\n", id="scalar keys"),
    pytest.param("- a\n- - b\n  - {c: [d, {e: f}]}\n- []\n- {}\n", id="nested"),
    pytest.param("plain\n", id="scalar document"),
    pytest.param("---\n---\na: 1\n...\n---\n- 2\n", id="empty documents"),
    pytest.param("base: &b {x: 1}\nderived:\n  <<: *b\n  y: 2\n", id="merge key with anchor"),
    pytest.param("derived:\n  <<: {x: 1}\n  y: 2\n", id="merge key without anchor"),
    pytest.param("s: !!set {a, b}\no: !!omap [a: 1]\nbin: !!binary aGk=\n", id="uncommon tags"),
    pytest.param("k: !!str 12\nf: !!float 1\ni: !!int '7'\n", id="explicit tags"),
    pytest.param("a: &x 1\nb: *x\n", id="anchored scalar"),
]


def _reference(text: str, monkeypatch: pytest.MonkeyPatch) -> object:
    """What PyYAML's own construction (through ``_Loader``) gives, or the error it raises."""
    def fallback(loader: object, root: object) -> object:
        raise yamlload._Fallback

    with monkeypatch.context() as patched:
        patched.setattr(yamlload, "_construct_plain", fallback)
        try:
            return docs(text)
        except LoadError as exc:
            return str(exc)


@pytest.mark.parametrize("text", PLAIN_CASES)
def test_fast_construction_builds_what_pyyaml_builds(text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    expected = _reference(text, monkeypatch)
    assert not isinstance(expected, str), expected
    assert docs(text) == expected
    # Types too: 1 and True and 1.0 compare equal.
    assert repr(docs(text)) == repr(expected)


PROBLEM_CASES = [
    pytest.param("a: 1\nb: 2\na: 3\n", id="duplicate key"),
    pytest.param("x:\n  y: " + "9" * 400 + "\n  z: 1\n  z: 2\n", id="big integer before duplicate key"),
    pytest.param("x:\n  y: {z: 1, z: 2}\nw: " + "9" * 400 + "\n", id="outer integer before inner duplicate"),
    pytest.param("- {a: 1}\n- 2026-13-45T00:00:00Z\n", id="bad timestamp"),
    pytest.param("1: a\n0x1: b\n", id="duplicate by value"),
    pytest.param("a: !unknown x\n", id="unknown tag"),
    pytest.param("? {a: 1}\n: b\n", id="unhashable key"),
    pytest.param("? [a, b]\n: complex key\n", id="complex key"),
    pytest.param("= : value key\n", id="value key"),
    pytest.param("1: a\ntrue: b\n", id="true is 1"),
]


@pytest.mark.parametrize("text", PROBLEM_CASES)
def test_fast_construction_reports_the_problem_pyyaml_reports_first(
    text: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = _reference(text, monkeypatch)
    assert isinstance(expected, str), expected
    assert refusal(text) == expected


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=8) | st.floats(allow_nan=False),
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
        max_leaves=20,
    )
)
def test_fast_construction_round_trips_dumped_values(value: object) -> None:
    import yaml

    text = yaml.safe_dump(value)
    assert docs(text) == [yaml.safe_load(text)]


def test_plain_documents_do_not_go_through_pyyaml_construction(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(self: object, node: object) -> object:
        raise AssertionError("PyYAML's construction used")

    monkeypatch.setattr(yamlload._Loader, "construct_document", refuse)
    assert docs("a: [1, x, {b: 2026-03-04}]\n---\n- c\n") == [
        {"a": [1, "x", {"b": __import__("datetime").date(2026, 3, 4)}]},
        ["c"],
    ]
    with pytest.raises(AssertionError, match="construction used"):
        docs("a: &x 1\nb: *x\n")  # anchors: PyYAML builds it (shared values, after the budget check)


@pytest.mark.parametrize(
    "text", ["0", "7", "012", "0x1F", "+5", "-5", "1_000", "1:30", "12345678901234567", "1" * 19]
)
def test_integers_read_as_pyyaml_reads_them(text: str) -> None:
    import yaml

    assert docs(f"v: {text}\n") == [yaml.safe_load(f"v: {text}\n")]
