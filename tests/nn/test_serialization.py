"""ember.save / ember.load on safetensors: names, structure, dtypes (bfloat16),
Module.save/load, interop, and clear errors for damaged files."""
import json
import os

import ml_dtypes
import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import nn
from ember.serialization import CheckpointError

from _nn_helpers import np_, rnd


def _header(path):
    with open(path, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        return json.loads(f.read(n))


def test_round_trip_nested_structure_and_dtypes(tmp_path):
    p = tmp_path / "ckpt.safetensors"
    tree = {
        "model": {"enc": {"weight": rnd((3, 4)), "bias": enp.zeros(4, dtype=enp.bfloat16)},
                  "steps": enp.asarray(np.array(7, np.int32))},
        "opt": [{"lr": 0.001, "betas": (0.9, 0.999), "nesterov": False, "name": "adam", "state": None}],
        "step": 12,
        "half": enp.ones((2,), dtype=enp.float16),
        "f64": enp.asarray(np.arange(3.0)),
        "mask": enp.asarray(np.array([True, False])),
        "u8": enp.asarray(np.arange(4, dtype=np.uint8)),
        "c": enp.asarray(np.array([1 + 2j, 3 - 1j], np.complex128)),
        3: enp.ones(1),
    }
    ember.save(p, tree)
    out = ember.load(p)
    assert set(out) == set(tree)
    assert out["opt"] == [{"lr": 0.001, "betas": (0.9, 0.999), "nesterov": False, "name": "adam", "state": None}]
    assert out["step"] == 12 and isinstance(out[3], ember.Array)
    assert out["model"]["steps"].shape == () and int(out["model"]["steps"]) == 7
    for k in ("half", "f64", "mask", "u8", "c"):
        assert out[k].dtype == tree[k].dtype and out[k].shape == tree[k].shape, k
        np.testing.assert_array_equal(np_(out[k]), np_(tree[k]))
    b = out["model"]["enc"]["bias"]
    assert b.dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(np_(out["model"]["enc"]["weight"]), np_(tree["model"]["enc"]["weight"]))
    h = _header(p)
    # nested names joined with ".", bfloat16 stored as a real BF16 tensor
    assert h["model.enc.bias"]["dtype"] == "BF16" and "model.enc.weight" in h
    assert "ember.structure" in h["__metadata__"]


def test_bfloat16_view_fallback_is_read_back(tmp_path):
    from ember import serialization as S
    p = tmp_path / "bf16.safetensors"
    x = np.array([1.5, -2.0, 3.25], ml_dtypes.bfloat16)
    tensors = {"w": x}
    struct = {"t": "dict", "k": [["s", "w"]], "c": [{"t": "tensor", "n": "w"}]}
    S._write(p, tensors, {"ember.structure": json.dumps(struct)}, force_view=True)
    h = _header(p)
    assert h["w"]["dtype"] == "U16" and json.loads(h["__metadata__"]["ember.dtypes"]) == {"w": "bfloat16"}
    out = ember.load(p)
    assert out["w"].dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(np_(out["w"]), x)


def test_module_save_load(tmp_path):
    p = tmp_path / "model.safetensors"
    a = nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2), nn.Flatten(), nn.Linear(8, 3))
    a(rnd((2, 1, 4, 4)))
    a.save(p)
    b = nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2), nn.Flatten(), nn.Linear(8, 3))
    assert b.load(p) == ([], [])
    for (n, va), (_, vb) in zip(a.state_dict().items(), b.state_dict().items()):
        np.testing.assert_array_equal(np_(va), np_(vb), err_msg=n)
        assert va.dtype == vb.dtype
    assert set(_header(p)) - {"__metadata__"} == set(a.state_dict())
    # a module in bfloat16 keeps its dtype
    c = nn.Linear(2, 2).bfloat16()
    ember.save(tmp_path / "c.safetensors", c)
    d = nn.Linear(2, 2).bfloat16()
    d.load(tmp_path / "c.safetensors")
    assert d.weight.dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(np_(d.weight), np_(c.weight))
    wrong = nn.Sequential(nn.Conv2d(1, 3, 3))
    with pytest.raises(RuntimeError, match="size mismatch"):
        wrong.load(p, strict=False)


def test_foreign_safetensors_file_loads_flat(tmp_path):
    from safetensors.numpy import save_file
    p = tmp_path / "foreign.safetensors"
    save_file({"0.weight": np.ones((2, 2), np.float32), "0.bias": np.zeros(2, np.float32)}, str(p))
    out = ember.load(p)
    assert set(out) == {"0.weight", "0.bias"}
    m = nn.Sequential(nn.Linear(2, 2))
    m.load(p)
    assert float(np_(m[0].weight).sum()) == 4.0


def test_torch_interop(tmp_path):
    torch = pytest.importorskip("torch")
    st = pytest.importorskip("safetensors.torch")
    t = torch.nn.Linear(3, 2).to(torch.bfloat16)
    p = tmp_path / "torch.safetensors"
    st.save_file(t.state_dict(), str(p))
    e = nn.Linear(3, 2).bfloat16()
    e.load(p)
    direct = nn.Linear(3, 2).bfloat16()
    direct.load_state_dict(t.state_dict())  # torch bfloat16 tensors load directly too
    np.testing.assert_array_equal(np_(direct.weight), np_(e.weight))
    np.testing.assert_array_equal(np_(e.weight).astype(np.float32), t.weight.float().detach().numpy())
    q = tmp_path / "ember.safetensors"
    e.save(q)
    back = st.load_file(str(q))
    assert back["weight"].dtype == torch.bfloat16
    assert torch.equal(back["weight"], t.weight.detach())


def test_damaged_files_give_clear_errors(tmp_path):
    p = tmp_path / "good.safetensors"
    ember.save(p, {"w": rnd((16, 16)), "b": rnd((16,))})
    data = p.read_bytes()
    cases = {
        "truncated_data": data[:-10],
        "truncated_header": data[:20],
        "tiny": data[:5],
        "empty": b"",
        "garbage_header": (100).to_bytes(8, "little") + b"{not json" + b" " * 200,
        "huge_header_len": (10 ** 12).to_bytes(8, "little") + data[8:],
    }
    for name, blob in cases.items():
        q = tmp_path / f"{name}.safetensors"
        q.write_bytes(blob)
        with pytest.raises(CheckpointError) as err:
            ember.load(q)
        assert str(q) in str(err.value), name
    with pytest.raises(CheckpointError):
        ember.load(tmp_path / "missing.safetensors")
    # malformed structure metadata is reported, never evaluated
    meta_bad = tmp_path / "meta.safetensors"
    from safetensors.numpy import save_file
    save_file({"w": np.ones(2, np.float32)}, str(meta_bad),
              metadata={"ember.structure": json.dumps({"t": "__import__", "v": "os"})})
    with pytest.raises(CheckpointError, match="unknown structure node"):
        ember.load(meta_bad)
    assert issubclass(CheckpointError, ValueError)


def test_save_rejects_what_it_cannot_store(tmp_path):
    with pytest.raises(TypeError):
        ember.save(tmp_path / "x.safetensors", {"f": lambda: 1})
    with pytest.raises(ValueError, match="share the tensor name"):
        ember.save(tmp_path / "y.safetensors", {"a.b": enp.ones(1), "a": {"b": enp.ones(1)}})
    with pytest.raises(TypeError):
        ember.jit(lambda x: ember.save(tmp_path / "z.safetensors", {"x": x}) or x)(enp.ones(2))
    assert not os.path.exists(tmp_path / "z.safetensors")
