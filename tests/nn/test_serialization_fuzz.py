"""ember.load on corrupted safetensors headers: every damaged file is a
CheckpointError naming the file and the reason -- never garbage data, never
another exception (TypeError, RecursionError, a numpy error)."""
import json

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import ember
from ember.serialization import CheckpointError

W = np.arange(6, dtype=np.float32).reshape(2, 3)
B = np.array([1.5, -2.0], np.float64)


def _blob(header, data):
    text = json.dumps(header).encode()
    return len(text).to_bytes(8, "little") + text + data


def _good():
    """A valid header for W (2, 3) float32 then B (2,) float64, and its data bytes."""
    header = {
        "w": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]},
        "b": {"dtype": "F64", "shape": [2], "data_offsets": [24, 40]},
        "__metadata__": {"format": "ember-1"},
    }
    return header, W.tobytes() + B.tobytes()


def _load(tmp_path, blob, name="x"):
    p = tmp_path / f"{name}.safetensors"
    p.write_bytes(blob)
    return p, ember.load(p)


def _assert_fails(tmp_path, blob, match=None, name="x"):
    p = tmp_path / f"{name}.safetensors"
    p.write_bytes(blob)
    with pytest.raises(CheckpointError) as err:
        ember.load(p)
    assert str(p) in str(err.value)
    if match is not None:
        assert match in str(err.value), (match, str(err.value))
    return str(err.value)


def test_good_header_loads_the_values(tmp_path):
    h, data = _good()
    _, out = _load(tmp_path, _blob(h, data))
    np.testing.assert_array_equal(np.asarray(out["w"]), W)
    np.testing.assert_array_equal(np.asarray(out["b"]), B)
    assert out["w"].dtype == np.float32 and out["b"].dtype == np.float64


def _mut(path_and_value):
    h, data = _good()
    *path, value = path_and_value
    node = h
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = value
    return h, data


CASES = {
    # (path..., new value): expected words in the message
    "dtype_unknown": (("w", "dtype", "float32"), "unknown dtype 'float32'"),
    "dtype_not_str": (("w", "dtype", 7), "unknown dtype 7"),
    "shape_not_list": (("w", "shape", "2,3"), "malformed shape"),
    "shape_negative": (("w", "shape", [-2, -3]), "malformed shape"),
    "shape_float": (("w", "shape", [2.0, 3]), "malformed shape"),
    "shape_bool": (("w", "shape", [True, 3]), "malformed shape"),
    "shape_wrong_size": (("w", "shape", [3, 3]), "need 36"),
    "offsets_float": (("w", "data_offsets", [0.0, 24.5]), "malformed data_offsets"),
    "offsets_str": (("w", "data_offsets", ["0", "24"]), "malformed data_offsets"),
    "offsets_one": (("w", "data_offsets", [24]), "malformed data_offsets"),
    "offsets_null": (("w", "data_offsets", None), "malformed data_offsets"),
    "offsets_negative": (("w", "data_offsets", [-8, 16]), "negative or reversed"),
    "offsets_reversed": (("w", "data_offsets", [24, 0]), "negative or reversed"),
    "offsets_out_of_range": (("b", "data_offsets", [24, 4000]), "truncated"),
    "offsets_huge": (("b", "data_offsets", [24, 10 ** 30]), "truncated"),
    "overlap": (("b", "data_offsets", [16, 32]), "overlap"),
    "dtype_bytes_mismatch": (("w", "dtype", "F64"), "need 48"),
    "entry_not_object": (("w", [0, 24]), "malformed entry"),
    "metadata_not_object": (("__metadata__", ["format"]), "__metadata__"),
    "metadata_value_not_str": (("__metadata__", {"format": 1}), "__metadata__"),
    "struct_not_json": (("__metadata__", {"ember.structure": "{oops"}), "not valid JSON"),
    "struct_bad_node": (("__metadata__", {"ember.structure": json.dumps([1, 2])}), "malformed structure"),
    "struct_missing_tensor": (("__metadata__", {"ember.structure": json.dumps({"t": "tensor", "n": "q"})}),
                              "does not hold"),
    "struct_bad_key": (("__metadata__", {"ember.structure": json.dumps(
        {"t": "dict", "k": [["x", 1]], "c": [{"t": "none"}]})}), "dict key"),
    "struct_bad_int": (("__metadata__", {"ember.structure": json.dumps({"t": "int", "v": "1.5"})}),
                       "int value"),
    "struct_bad_bool": (("__metadata__", {"ember.structure": json.dumps({"t": "bool", "v": "no"})}),
                        "bool value"),
    "struct_no_children": (("__metadata__", {"ember.structure": json.dumps({"t": "list"})}), "child list"),
    "dtypes_not_object": (("__metadata__", {"ember.dtypes": "[1]"}), "not a JSON object"),
    "dtypes_unknown_name": (("__metadata__", {"ember.dtypes": json.dumps({"zz": "bfloat16"})}),
                            "does not hold"),
    "dtypes_unknown_dtype": (("__metadata__", {"ember.dtypes": json.dumps({"w": "float128"})}),
                             "unknown recorded dtype"),
    # the audit's case: float32 (2, 3) whose metadata claims bfloat16 must not load as (2, 6)
    "dtypes_lie_bfloat16": (("__metadata__", {"ember.dtypes": json.dumps({"w": "bfloat16"})}),
                            "file stores float32[2, 3]"),
    "dtypes_lie_complex": (("__metadata__", {"ember.dtypes": json.dumps({"w": "complex128"})}),
                           "file stores float32[2, 3]"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_corruption_is_a_checkpoint_error(tmp_path, case):
    change, words = CASES[case]
    h, data = _mut(change)
    _assert_fails(tmp_path, _blob(h, data), match=words)


def test_deep_nesting_is_a_checkpoint_error(tmp_path):
    deep = "[" * 100_000 + "]" * 100_000
    text = ('{"w": ' + deep + "}").encode()
    _assert_fails(tmp_path, len(text).to_bytes(8, "little") + text, match="nested too deeply")
    h, data = _good()
    h["__metadata__"]["ember.structure"] = '{"t": "list", "c": ' + deep + "}"
    _assert_fails(tmp_path, _blob(h, data), match="nested too deeply", name="meta")


def test_deep_but_parseable_structure_round_trips(tmp_path):
    # the decoder is iterative: depth within what JSON parses is no limit
    tree = ember.numpy.asarray(W)
    for i in range(300):
        tree = [tree] if i % 2 else (tree, i)
    ember.save(tmp_path / "d.safetensors", tree)
    out = ember.load(tmp_path / "d.safetensors")
    for i in reversed(range(300)):
        if i % 2:
            assert isinstance(out, list) and len(out) == 1
            out = out[0]
        else:
            assert isinstance(out, tuple) and out[1] == i
            out = out[0]
    np.testing.assert_array_equal(np.asarray(out), W)


def test_bfloat16_and_complex_views_still_checked_and_restored(tmp_path):
    from ember import serialization as S
    x = np.array([[1.5, -2.0]], ml_dtypes.bfloat16)
    c = np.array([1 + 2j, -3j], np.complex128)
    p = tmp_path / "v.safetensors"
    S._write(p, {"x": x, "c": c}, {}, force_view=True)
    out = ember.load(p)
    assert out["x"].dtype == ml_dtypes.bfloat16 and out["x"].shape == (1, 2)
    np.testing.assert_array_equal(np.asarray(out["x"]), x)
    np.testing.assert_array_equal(np.asarray(out["c"]), c)


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2 ** 70, 2 ** 70) | st.floats(allow_nan=False)
    | st.text(max_size=8),
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=6), kids, max_size=4),
    max_leaves=12)

_paths = st.sampled_from([
    ("w",), ("b",), ("w", "dtype"), ("w", "shape"), ("w", "data_offsets"), ("b", "data_offsets"),
    ("b", "shape"), ("__metadata__",), ("__metadata__", "ember.structure"), ("__metadata__", "ember.dtypes"),
])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(path=_paths, value=_json_values)
def test_fuzzed_header_fields_fail_cleanly_or_load_exactly(tmp_path, path, value):
    h, data = _good()
    _, out = None, None
    node = h
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = value
    p = tmp_path / "f.safetensors"
    p.write_bytes(_blob(h, data))
    try:
        out = ember.load(p)
    except CheckpointError as err:
        assert str(p) in str(err) and "cannot read checkpoint" in str(err)
        return
    # a mutation that left a valid file must give back exactly the stored values
    flat = out if isinstance(out, dict) else {}
    for name, ref in (("w", W), ("b", B)):
        if name in flat and isinstance(flat[name], ember.Array):
            got = np.asarray(flat[name])
            assert got.dtype == ref.dtype and got.shape == ref.shape
            np.testing.assert_array_equal(got, ref)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(header=_json_values, tail=st.binary(max_size=64))
def test_arbitrary_json_headers_fail_cleanly(tmp_path, header, tail):
    p = tmp_path / "a.safetensors"
    p.write_bytes(_blob(header, tail))
    try:
        out = ember.load(p)
    except CheckpointError as err:
        assert "cannot read checkpoint" in str(err)
        return
    # only an object of valid (here: empty) entries can load
    assert isinstance(out, dict)
    for v in out.values():
        assert isinstance(v, ember.Array) and v.size * v.dtype.itemsize <= len(tail)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cut=st.integers(0, 400), junk=st.binary(max_size=16))
def test_truncated_or_garbled_files_fail_cleanly(tmp_path, cut, junk):
    # a file shorter than the original (cut, with fewer junk bytes than were cut) can
    # never hold the tensors its header promises
    h, data = _good()
    blob = _blob(h, data)
    cut = min(cut, len(blob) - 1)
    junk = junk[:max(0, len(blob) - cut - 1)]
    p = tmp_path / "t.safetensors"
    p.write_bytes(blob[:cut] + junk)
    with pytest.raises(CheckpointError):
        ember.load(p)
