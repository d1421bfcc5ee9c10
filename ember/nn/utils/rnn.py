"""Variable-length batches for the recurrent layers, with PyTorch's names:
`PackedSequence`, `pack_padded_sequence`, `pad_packed_sequence`, `pad_sequence`,
`pack_sequence`, `unpack_sequence`, `unpad_sequence`.

A `PackedSequence` holds PyTorch's fields (`data`, `batch_sizes`,
`sorted_indices`, `unsorted_indices`, with the same values); `RNN`/`LSTM`/`GRU`
accept one and run on the padded batch with a lengths mask, so each sequence's
final state is the one after its last real step and padded steps output zeros.
The lengths must be concrete (as in PyTorch, where they live on the CPU): they
fix the packed layout, so a `PackedSequence` is a pytree whose only leaf is
`data`.  Every operation is a gather, so gradients flow through all of them.

Example:
    >>> import ember.numpy as enp
    >>> from ember import nn
    >>> from ember.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence
    >>> x = enp.arange(6.0).reshape(3, 2, 1)            # (time, batch, feature)
    >>> p = pack_padded_sequence(x, [3, 1])
    >>> p.data[:, 0].tolist(), p.batch_sizes.tolist()
    ([0.0, 1.0, 2.0, 4.0], [2, 1, 1])
    >>> out, lengths = pad_packed_sequence(nn.GRU(1, 2)(p)[0])
    >>> out.shape, lengths.tolist()
    ((3, 2, 2), [3, 1])
"""
from __future__ import annotations

import numpy as np

from ...array import Array
from ...fx.core import Tracer, get_aval
from ...tree import register_pytree_node
from ... import numpy as enp

__all__ = ["PackedSequence", "pack_padded_sequence", "pad_packed_sequence", "pad_sequence",
           "pack_sequence", "unpack_sequence", "unpad_sequence", "invert_permutation"]


def _concrete_lengths(lengths, where: str) -> np.ndarray:
    if isinstance(lengths, Tracer):
        raise TypeError(f"{where}: `lengths` is a traced value; the lengths fix the packed layout, "
                        f"so they must be concrete (a list, numpy array or ember array computed "
                        f"outside jit/vmap), as PyTorch needs them on the CPU")
    arr = np.asarray(lengths)
    if arr.ndim != 1 or arr.size == 0 or not (np.issubdtype(arr.dtype, np.integer) or arr.dtype == object
                                                or np.all(np.mod(arr, 1) == 0)):
        raise ValueError(f"{where}: `lengths` must be a non-empty 1-D sequence of integers, got "
                         f"{arr.tolist()!r}")
    arr = arr.astype(np.int64)
    if np.any(arr <= 0):
        raise ValueError(f"{where}: every length must be positive (PyTorch rejects empty sequences), "
                         f"got {arr.tolist()}")
    return arr


def invert_permutation(permutation):
    """The inverse of a permutation (None stays None), as an int64 array.

    Example:
        >>> invert_permutation([2, 0, 1]).tolist()
        [1, 2, 0]
    """
    if permutation is None:
        return None
    p = np.asarray(permutation, dtype=np.int64)
    inv = np.empty_like(p)
    inv[p] = np.arange(p.size, dtype=np.int64)
    return enp.asarray(inv)


class PackedSequence:
    """A batch of sequences packed time-step by time-step (PyTorch's layout):
    `data` stacks, for t = 0, 1, ..., the step-t elements of the sequences still
    running (longest first); `batch_sizes[t]` is how many there are;
    `sorted_indices` maps packed position to batch entry (None when the batch was
    already sorted) and `unsorted_indices` is its inverse.  Build one with
    `pack_padded_sequence` or `pack_sequence`.

    Example:
        >>> import ember.numpy as enp
        >>> p = pack_sequence([enp.ones(2), enp.ones(3)], enforce_sorted=False)
        >>> p.batch_sizes.tolist(), p.sorted_indices.tolist()
        ([2, 2, 1], [1, 0])
    """
    __slots__ = ("data", "_sizes", "_sorted", "_unsorted")

    def __init__(self, data, batch_sizes, sorted_indices=None, unsorted_indices=None):
        self.data = data
        self._sizes = tuple(int(b) for b in np.asarray(batch_sizes).reshape(-1))
        self._sorted = None if sorted_indices is None else tuple(int(i) for i in np.asarray(sorted_indices))
        if unsorted_indices is None and self._sorted is not None:
            unsorted_indices = np.asarray(invert_permutation(self._sorted))
        self._unsorted = None if unsorted_indices is None else tuple(int(i) for i in np.asarray(unsorted_indices))

    @property
    def batch_sizes(self):
        """How many sequences are still running at each time step (int64)."""
        return enp.asarray(np.asarray(self._sizes, dtype=np.int64))

    @property
    def sorted_indices(self):
        """Packed position -> batch entry (int64), or None if the batch was sorted."""
        return None if self._sorted is None else enp.asarray(np.asarray(self._sorted, dtype=np.int64))

    @property
    def unsorted_indices(self):
        """Batch entry -> packed position (int64), or None if the batch was sorted."""
        return None if self._unsorted is None else enp.asarray(np.asarray(self._unsorted, dtype=np.int64))

    def lengths(self) -> np.ndarray:
        """Each sequence's length, in the original batch order (a numpy array).

        Example:
            >>> import ember.numpy as enp
            >>> pack_padded_sequence(enp.ones((3, 2)), [1, 3], enforce_sorted=False).lengths().tolist()
            [1, 3]
        """
        sizes = np.asarray(self._sizes)
        sorted_lengths = (sizes[None, :] > np.arange(sizes[0])[:, None]).sum(axis=1)
        order = np.arange(sizes[0]) if self._sorted is None else np.asarray(self._sorted)
        out = np.empty_like(sorted_lengths)
        out[order] = sorted_lengths
        return out

    def __iter__(self):  # PyTorch's PackedSequence is a namedtuple of these four fields
        return iter((self.data, self.batch_sizes, self.sorted_indices, self.unsorted_indices))

    def __repr__(self):
        return (f"PackedSequence(data={get_aval(self.data).str_user()}, batch_sizes={list(self._sizes)}, "
                f"sorted_indices={None if self._sorted is None else list(self._sorted)})")


register_pytree_node(PackedSequence,
                     lambda p: ((p.data,), (p._sizes, p._sorted, p._unsorted)),
                     lambda aux, children: PackedSequence(children[0], *aux))


def pack_padded_sequence(input, lengths, batch_first: bool = False, enforce_sorted: bool = True):
    """Pack a padded batch `(T, B, *)` (`(B, T, *)` with `batch_first`) of sequences
    with the given lengths.  With `enforce_sorted=True` the lengths must be
    non-increasing; otherwise the batch is sorted (stably) longest first.

    Example:
        >>> import ember.numpy as enp
        >>> pack_padded_sequence(enp.ones((4, 3, 2)), [4, 2, 1]).data.shape
        (7, 2)
    """
    x = enp.asarray(input) if not isinstance(input, (Array, Tracer)) else input
    lens = _concrete_lengths(lengths, "pack_padded_sequence")
    if x.ndim < 2:
        raise ValueError(f"pack_padded_sequence: input must be at least 2-D (time and batch), got "
                         f"{get_aval(x).str_user()}")
    if batch_first:
        x = enp.swapaxes(x, 0, 1)
    T, B = x.shape[0], x.shape[1]
    if lens.size != B:
        raise ValueError(f"pack_padded_sequence: expected {B} lengths (the batch size of "
                         f"{get_aval(x).str_user()}), got {lens.size}")
    if lens.max() > T:
        raise ValueError(f"pack_padded_sequence: a length ({int(lens.max())}) exceeds the padded "
                         f"length {T} of the input")
    if enforce_sorted:
        if np.any(np.diff(lens) > 0):
            raise ValueError(f"pack_padded_sequence: `lengths` must be sorted in decreasing order "
                             f"when enforce_sorted=True, got {lens.tolist()}; pass "
                             f"enforce_sorted=False to sort the batch")
        order = None
        lens_sorted = lens
    else:
        order = np.argsort(-lens, kind="stable")
        lens_sorted = lens[order]
    sizes = (lens_sorted[None, :] > np.arange(int(lens_sorted[0]))[:, None]).sum(axis=1)
    return _pack_in_order(x, sizes, order)


def _pack_in_order(x, sizes, order):
    """Pack the time-major padded `x` in the layout given by `sizes` and `order`."""
    sizes = np.asarray(sizes)
    t_idx = np.repeat(np.arange(sizes.size), sizes)
    pos = np.concatenate([np.arange(n) for n in sizes])
    b_idx = pos if order is None else np.asarray(order)[pos]
    data = x[enp.asarray(t_idx.astype(np.int32)), enp.asarray(b_idx.astype(np.int32))]
    return PackedSequence(data, sizes, order, None if order is None else np.argsort(order))


def _padded_from_packed(seq: PackedSequence, padding_value, total_length):
    """(padded (T, B, *) in batch order, lengths in batch order, mask (T, B))."""
    lens = seq.lengths()
    T = int(lens.max())
    if total_length is not None:
        if total_length < T:
            raise ValueError(f"pad_packed_sequence: total_length={total_length} is shorter than the "
                             f"longest sequence ({T})")
        T = int(total_length)
    B = lens.size
    sizes = np.asarray(seq._sizes)
    order = np.arange(B) if seq._sorted is None else np.asarray(seq._sorted)
    # row of `data` for (t, packed position p): the rows of earlier steps, then p
    starts = np.concatenate([[0], np.cumsum(sizes)])
    rows = np.full((T, B), sizes.sum(), dtype=np.int64)  # one past the end: the padding row
    for t in range(sizes.size):
        rows[t, order[:sizes[t]]] = starts[t] + np.arange(sizes[t])
    data = seq.data
    pad_row = enp.full((1,) + tuple(data.shape[1:]), padding_value, dtype=data.dtype)
    padded = enp.concatenate([data, pad_row], axis=0)[enp.asarray(rows.astype(np.int32))]
    mask = np.arange(T)[:, None] < lens[None, :]
    return padded, lens, mask


def pad_packed_sequence(sequence, batch_first: bool = False, padding_value=0.0, total_length=None):
    """Undo `pack_padded_sequence`: `(padded, lengths)` with the batch in its
    original order, padded with `padding_value` to the longest length (or
    `total_length`).

    Example:
        >>> import ember.numpy as enp
        >>> p = pack_padded_sequence(enp.ones((3, 2)), [1, 3], enforce_sorted=False)
        >>> out, lens = pad_packed_sequence(p, batch_first=True)
        >>> out.tolist(), lens.tolist()
        ([[1.0, 0.0, 0.0], [1.0, 1.0, 1.0]], [1, 3])
    """
    if not isinstance(sequence, PackedSequence):
        raise TypeError(f"pad_packed_sequence expects a PackedSequence, got {type(sequence).__name__}")
    padded, lens, _ = _padded_from_packed(sequence, padding_value, total_length)
    if batch_first:
        padded = enp.swapaxes(padded, 0, 1)
    return padded, enp.asarray(lens.astype(np.int64))


def pad_sequence(sequences, batch_first: bool = False, padding_value=0.0, padding_side: str = "right"):
    """Stack arrays `(L_i, *)` into `(max L, B, *)` (`(B, max L, *)` with
    `batch_first`), padding with `padding_value` on the right (or left).
    Differentiable and traceable, unlike the collation helper
    `ember.data.pad_sequence`, which works on numpy data in data-loader workers.

    Example:
        >>> import ember.numpy as enp
        >>> pad_sequence([enp.ones(2), enp.ones(1)], batch_first=True).tolist()
        [[1.0, 1.0], [1.0, 0.0]]
    """
    if padding_side not in ("right", "left"):
        raise ValueError(f"pad_sequence: padding_side must be 'right' or 'left', got {padding_side!r}")
    seqs = [s if isinstance(s, (Array, Tracer)) else enp.asarray(s) for s in sequences]
    if not seqs:
        raise ValueError("pad_sequence: received an empty list of sequences")
    rest = tuple(seqs[0].shape[1:]) if seqs[0].ndim else None
    for i, s in enumerate(seqs):
        if s.ndim == 0 or tuple(s.shape[1:]) != rest:
            raise ValueError(f"pad_sequence: every sequence needs a length axis and the same trailing "
                             f"shape; sequence 0 is {get_aval(seqs[0]).str_user()}, sequence {i} is "
                             f"{get_aval(s).str_user()}")
    L = max(s.shape[0] for s in seqs)
    out = []
    for s in seqs:
        n = L - s.shape[0]
        widths = [(0, n) if padding_side == "right" else (n, 0)] + [(0, 0)] * len(rest)
        out.append(enp.pad(s, widths, constant_values=padding_value) if n else s)
    return enp.stack(out, axis=0 if batch_first else 1)


def pack_sequence(sequences, enforce_sorted: bool = True):
    """Pack a list of arrays `(L_i, *)` (`pad_sequence` then `pack_padded_sequence`).

    Example:
        >>> import ember.numpy as enp
        >>> pack_sequence([enp.ones(3), enp.ones(2)]).batch_sizes.tolist()
        [2, 2, 1]
    """
    lengths = [s.shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpad_sequence(padded_sequences, lengths, batch_first: bool = False):
    """The list of sequences of a padded batch, each cut to its length.

    Example:
        >>> import ember.numpy as enp
        >>> [s.shape for s in unpad_sequence(enp.ones((3, 2)), [3, 1])]
        [(3,), (1,)]
    """
    lens = _concrete_lengths(lengths, "unpad_sequence")
    x = padded_sequences if batch_first else enp.swapaxes(padded_sequences, 0, 1)
    return [x[i, :int(n)] for i, n in enumerate(lens)]


def unpack_sequence(packed_sequences):
    """The list of sequences of a `PackedSequence`, in the original batch order.

    Example:
        >>> import ember.numpy as enp
        >>> [s.tolist() for s in unpack_sequence(pack_sequence([enp.ones(1), enp.zeros(2)], False))]
        [[1.0], [0.0, 0.0]]
    """
    padded, lens = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, np.asarray(lens), batch_first=True)
