"""Extra checks for derivations/{uat_theory,pruning,lora,discussion}.py (the ledger runs the entries themselves)."""

import sympy
from symuat_paper import discussion, lora, pruning

from symuat.expansion import R_name, U_name, V_name, beta_name


def test_certificates_are_nonnegative_sums_of_squares():
    p, r = sympy.symbols("p r", real=True)
    for kind, certs in pruning.CERTIFICATES.items():
        assert len(certs) == len(pruning.CASES), kind
        for cert in certs:
            poly = sympy.Poly(sympy.sympify(cert(p, r)), p, r)
            for exps, coeff in poly.terms():
                assert coeff >= 0 and all(e % 2 == 0 for e in exps), (kind, poly)


def test_cases_are_exhaustive_signs_and_dominance():
    assert {(dom, sa, sc) for dom, sa, sc in pruning.CASES} == {
        (d, a, c) for d in ("a", "c") for a in (1, -1) for c in (1, -1)}


def test_a_wrong_certificate_fails():
    bad = dict(pruning.CERTIFICATES)
    try:
        pruning.CERTIFICATES["reverse"] = (lambda p, r: p**2,) * 8
        from symuat import check_identity
        assert not check_identity(pruning.step("reverse")).holds
    finally:
        pruning.CERTIFICATES.update(bad)


def test_random_search_finds_no_violation():
    bad = pruning.random_search(1, trials=2000)
    assert bad["eq15"] == bad["eq16"] == bad["eq16_from_eq14"] == 0
    assert bad["theta_distinct"] > 0


def test_lora_changed_rows_depth2():
    assert set(lora.changed_rows(2, 1, 2)) == {V_name(1), R_name(1), beta_name(2), R_name(2)}
    assert set(lora.changed_rows(2, 2, 3)) == {U_name(2, 2), R_name(2)}


def test_conv_density():
    assert discussion.conv_density(4, 2) == 10 * 4 / 64
