"""Module.named_modules (prefix, memo, remove_duplicate) and Module.apply against
PyTorch on the same tree, shared submodules included."""
import pytest

from ember import nn


def _tree(m):
    shared = m.Linear(2, 2)
    inner = m.Sequential(shared, m.ReLU())
    return m.Sequential(inner, m.Sequential(shared, m.Tanh()), m.ModuleDict({"head": m.Linear(2, 1)}))


@pytest.mark.parametrize("kw", [dict(), dict(prefix="model"), dict(remove_duplicate=False)])
def test_named_modules_matches_torch(kw):
    torch = pytest.importorskip("torch")
    e, t = _tree(nn), _tree(torch.nn)
    names_e = [(n, type(m).__name__) for n, m in e.named_modules(**kw)]
    names_t = [(n, type(m).__name__) for n, m in t.named_modules(**kw)]
    assert names_e == names_t
    assert len(names_e) > 0


def test_named_modules_memo_is_a_set_of_modules():
    torch = pytest.importorskip("torch")
    e, t = _tree(nn), _tree(torch.nn)
    memo_e, memo_t = {e[0][0]}, {t[0][0]}  # the shared Linear is already seen
    got = [n for n, _ in e.named_modules(memo=memo_e)]
    assert got == [n for n, _ in t.named_modules(memo=memo_t)]
    assert "0.0" not in got and e[0][0] in memo_e and e in memo_e


def test_apply_visits_children_first_like_torch():
    torch = pytest.importorskip("torch")
    e, t = _tree(nn), _tree(torch.nn)
    seen_e, seen_t = [], []
    assert e.apply(lambda m: seen_e.append(type(m).__name__)) is e
    t.apply(lambda m: seen_t.append(type(m).__name__))
    assert seen_e == seen_t
    # the torch idiom: re-initialise every Linear through apply
    def zero(m):
        if isinstance(m, nn.Linear):
            m.weight = m.weight * 0
    e.apply(zero)
    assert all(float(abs(m.weight).sum()) == 0 for m in e.modules() if isinstance(m, nn.Linear))
