"""EMBER_CPU / EMBER_CPU_FEATURES: the code-generation target follows them
(fingerprint, gemm tile, vector width), native code built for the chosen
target gives the right values, and bad settings are clear errors.

Each setting is read once per process, so every case runs in a subprocess.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from ember.backends.llvm import packed_gemm, target

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

# reports the target and runs a jitted program with a product and exp
_PROBE = textwrap.dedent("""
    import json, numpy as np
    import ember, ember.numpy as enp
    from ember.backends.llvm import packed_gemm, target
    rng = np.random.default_rng(0)
    a = rng.standard_normal((67, 45)).astype(np.float32)
    b = rng.standard_normal((45, 31)).astype(np.float32)
    out = ember.jit(lambda a, b: enp.exp(a @ b * 0.1))(a, b)
    # half precision: without F16C the conversions are runtime-library calls
    half = ember.jit(lambda h: enp.exp(-h) * 2)(np.array([0.5, -1.25, 3.0], np.float16))
    print(json.dumps({"fingerprint": target.host_fingerprint(), "cpu": target.host_cpu(),
                      "tile": packed_gemm.host_config(np.float32).variant,
                      "bits": target.vector_bits(), "avx512f": target.host_has_feature("avx512f"),
                      "describe": target.describe(), "out": np.asarray(out).tolist(),
                      "half": np.asarray(half).astype(float).tolist()}))
""")


def _run(env_edits: dict, tmp_path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("EMBER_CPU", "EMBER_CPU_FEATURES")}
    env.update(env_edits, PYTHONPATH=ROOT, EMBER_CACHE_DIR=str(tmp_path))
    return subprocess.run([sys.executable, "-c", _PROBE], env=env, capture_output=True,
                          text=True, timeout=300, cwd=ROOT)


def _report(env_edits, tmp_path) -> dict:
    p = _run(env_edits, tmp_path)
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


def _want():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((67, 45))
    b = rng.standard_normal((45, 31))
    return np.exp((a.astype(np.float32).astype(np.float64) @ b.astype(np.float32)) * 0.1)


@pytest.fixture(scope="module")
def host(tmp_path_factory):
    return _report({}, tmp_path_factory.mktemp("host"))


@pytest.mark.parametrize("env,tile,bits", [
    ({"EMBER_CPU": "haswell"}, "avx2 4x24", 256),
    ({"EMBER_CPU": "x86-64"}, "sse2 4x8", 128),
    ({"EMBER_CPU_FEATURES": "-avx2"}, "sse2 4x8", None),
], ids=["haswell", "x86-64", "minus-avx2"])
def test_env_var_changes_the_target(env, tile, bits, host, tmp_path):
    got = _report(env, tmp_path)
    assert got["fingerprint"] != host["fingerprint"]      # no object code is shared
    assert got["tile"] == tile and not got["avx512f"]
    if bits is not None:
        assert got["bits"] == bits
    if "EMBER_CPU" in env:
        assert got["cpu"] == env["EMBER_CPU"]
    for k, v in env.items():
        assert f"{k}={v}" in got["describe"]
    np.testing.assert_allclose(np.array(got["out"]), _want(), rtol=2e-5)
    np.testing.assert_allclose(np.array(host["out"]), _want(), rtol=2e-5)
    half = (np.exp(-np.array([0.5, -1.25, 3.0])) * 2).astype(np.float16).astype(float)
    np.testing.assert_allclose(got["half"], half, rtol=2e-3)


def test_disabling_avx512_picks_the_avx2_tile(tmp_path):
    # on an AVX-512 host this is the AVX2 code path; elsewhere it changes nothing
    got = _report({"EMBER_CPU_FEATURES": "-avx512f"}, tmp_path)
    assert not got["avx512f"] and got["tile"] == "avx2 4x24"


def _lacking_feature() -> str:
    have = target._flags(target._real_host()[1])
    for name in ("avx512f", "amx-tile", "avx512fp16", "avx10.2"):
        if have.get(name) is False:
            return name
    pytest.skip("this host has every candidate feature")


@pytest.mark.parametrize("env,message", [
    ({"EMBER_CPU": "pentium9"}, "EMBER_CPU='pentium9' is not a CPU LLVM knows"),
    ({"EMBER_CPU_FEATURES": "-avx513f"}, "LLVM knows no CPU feature 'avx513f' (did you mean avx512f"),
    ({"EMBER_CPU_FEATURES": "avx2"}, "'avx2' is not an edit; write +feature or -feature"),
    ({"EMBER_CPU_FEATURES": "+LACKING"}, "which this CPU"),
], ids=["unknown-cpu", "unknown-feature", "no-sign", "host-lacks"])
def test_bad_setting_is_a_clear_error(env, message, tmp_path):
    if env.get("EMBER_CPU_FEATURES") == "+LACKING":
        env = {"EMBER_CPU_FEATURES": "+" + _lacking_feature()}
    p = _run(env, tmp_path)
    assert p.returncode != 0
    last = p.stderr.strip().splitlines()[-1]
    assert last.startswith("ember.backends.llvm.target.TargetError: ") and message in last, last


def test_cpu_implying_features_the_host_lacks_is_an_error(tmp_path):
    if target._flags(target._real_host()[1]).get("avx512f") is not False:
        pytest.skip("the host has AVX-512F")
    p = _run({"EMBER_CPU": "skylake-avx512"}, tmp_path)
    assert p.returncode != 0
    assert "EMBER_CPU='skylake-avx512' implies avx512f" in p.stderr
    assert "EMBER_CPU_FEATURES=-avx512f" in p.stderr      # the hint


def test_describe_names_the_variant():
    text = target.describe()
    assert text.startswith(target.host_cpu()) and f"{target.vector_bits()}-bit" in text
    assert packed_gemm.describe().startswith(f"float32 {packed_gemm.host_config(np.float32).variant}")


def test_object_needing_an_unknown_symbol_is_an_error_not_a_crash():
    from ember.backends.llvm import compiler
    ir_text = ('declare i64 @ember_test_no_such_fn()\n'
               'define i64 @f() {\n  %r = call i64 @ember_test_no_such_fn()\n  ret i64 %r\n}\n')
    tm = target.host_target_machine()
    mod = compiler._parse(ir_text, tm)
    obj = tm.emit_object(mod)
    assert "ember_test_no_such_fn" in compiler._undefined_symbols(obj)
    with pytest.raises(RuntimeError, match="'ember_test_no_such_fn' cannot be resolved for the target"):
        compiler._engine_from_object(obj, 3)
