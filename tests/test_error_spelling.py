"""User-facing errors spell types as users type them (``int32[]``, not the IR's
``i32[]``): a list of typical mistakes, eager and under jit."""

from __future__ import annotations

import re

import numpy as np
import pytest

import ember
import ember.numpy as enp
import ember.random as er
from ember import lax
from ember.fx.core import AbstractArray
from ember.fx.spelling import user_str

F32 = np.float32
IR_SPELLING = re.compile(r"\b(f16|bf16|f32|f64|i8|i16|i32|i64|u8|u16|u32|u64|c64|c128|f0)\[")

MISTAKES = {
    "bad key int": lambda: er.normal(np.int32(3), (2,)),
    "bad key float": lambda: er.uniform(np.ones(2, F32), (2,)),
    "lax add shapes": lambda: lax.add(np.ones(3, F32), np.ones(4, F32)),
    "add shapes": lambda: enp.add(np.ones(3, F32), np.ones(4, F32)),
    "lax add dtypes": lambda: lax.add(np.ones(3, F32), np.ones(3, np.int32)),
    "lax add half dtypes": lambda: lax.add(lax.convert_element_type(np.ones(3, F32), "bfloat16"),
                                           np.ones(3, np.float16)),
    "dot shapes": lambda: enp.dot(np.ones((2, 3), F32), np.ones((4, 5), F32)),
    "lax dot shapes": lambda: lax.dot(np.ones((2, 3), F32), np.ones((4, 5), F32)),
    "matmul shapes": lambda: enp.ones((2, 3)) @ enp.ones((4, 5)),
    "reshape": lambda: enp.reshape(enp.ones((2, 3)), (4, 2)),
    "lax reshape": lambda: lax.reshape(np.ones((2, 3), F32), (4, 2)),
    "bitwise on float": lambda: enp.bitwise_and(enp.ones(3), enp.ones(3)),
    "lax bitwise on float": lambda: lax.bitwise_and(np.ones(3, F32), np.ones(3, F32)),
    "shift on float": lambda: enp.left_shift(enp.ones(3), 1),
    "bad axis": lambda: enp.sum(enp.ones((2, 3)), axis=2),
    "lax bad axis": lambda: lax.reduce_sum(np.ones((2, 3), F32), (2,)),
    "concatenate dtypes": lambda: lax.concatenate([np.ones((2, 3), F32), np.ones((2, 3), np.int32)], 0),
    "dynamic_slice indices": lambda: lax.dynamic_slice(np.ones((2, 3), F32), (0,), (1,)),
    "inv of non-square": lambda: enp.linalg.inv(enp.ones((2, 3))),
    "pad value dtype": lambda: lax.pad(np.ones(3, F32), np.int32(0), [(1, 1, 0)]),
    "conv features": lambda: lax.conv_general_dilated(np.ones((1, 2, 5), F32), np.ones((3, 3, 2), F32),
                                                      (1,), "VALID"),
    "top_k of a scalar": lambda: lax.top_k(F32(1), 1),
    "bitcast width": lambda: lax.bitcast_convert_type(np.ones(3, F32), np.float64),
    "rem dtypes": lambda: lax.rem(np.ones(3, F32), np.ones(3, np.int32)),
    "jit add shapes": lambda: ember.jit(lambda a, b: lax.add(a, b))(np.ones(3, F32), np.ones(4, F32)),
    "jit bad key": lambda: ember.jit(lambda k: er.normal(k, (2,)))(np.int32(3)),
}


@pytest.mark.parametrize("name", sorted(MISTAKES))
def test_errors_spell_dtypes_as_users_type_them(name):
    with pytest.raises((TypeError, ValueError, IndexError)) as info:
        MISTAKES[name]()
    msg = str(info.value)
    assert not IR_SPELLING.search(msg), msg


def test_the_reported_key_message():
    with pytest.raises(TypeError, match=r"got int32\[\]"):
        er.normal(np.int32(3), (2,))
    with pytest.raises(TypeError, match=r"got float32\[3\], int32\[3\]"):
        lax.add(np.ones(3, F32), np.ones(3, np.int32))


def test_user_str():
    assert user_str(AbstractArray((2, 3), "bfloat16")) == "bfloat16[2,3]"
    assert user_str(AbstractArray((), "uint32")) == "uint32[]"
    assert user_str((2, 3)) == "(2, 3)" and user_str(4) == "4"
