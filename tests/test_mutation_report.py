"""scripts/mutation.py's report: results of modules run in different sessions merge, and the
score counts survivors with a written reason as equivalent (no mutmut run here)."""

import json

from scripts import mutation as M


def _result(code, killed, survived_names, **extra):
    counts = {"killed": killed, "survived": len(survived_names), **extra}
    return dict(code=code, written="t", counts=counts, survivors={n: "-a\n+b" for n in survived_names})


def test_fresh_modules_replace_theirs_and_keep_the_others():
    stored = {"odt.objective": _result("old", 10, []), "odt.policy": _result("old", 1, ["odt.policy.x_f__mutmut_1"])}
    fresh = {"odt.policy": _result("new", 5, [])}
    merged = M.merge_results(stored, fresh)
    assert merged["odt.objective"]["code"] == "old"
    assert merged["odt.policy"]["code"] == "new"
    assert set(merged) == {"odt.objective", "odt.policy"}


def test_score_counts_explained_survivors_as_equivalent():
    names = [f"odt.relabel.x_f__mutmut_{i}" for i in range(3)]
    result = _result("abc", 17, names)
    row = M.module_row("odt.relabel", result, {names[0]: "same value"})
    cells = [c.strip() for c in row.strip("|").split("|")]
    # 20 mutants, 17 killed, 2 unexplained survivors, 1 equivalent: 17 / 19 = 89.5% < 90%
    assert cells[1:6] == ["20", "17", "0", "2", "1"]
    assert cells[8] == "89.5%" and cells[9] == "no" and cells[10] == "abc"
    row = M.module_row("odt.relabel", result, {n: "same value" for n in names[:2]})
    assert [c.strip() for c in row.strip("|").split("|")][8:10] == ["94.4%", "yes"]


def test_a_stopped_run_is_not_done_and_unrun_modules_say_so():
    result = _result("abc", 10, [], **{"not checked": 1})
    assert M.module_row("odt.buffer", result, {}).split("|")[10].strip() == "no"
    assert "not run yet" in M.module_row("odt.buffer", None, {})


def test_write_report_keeps_stored_modules(tmp_path, monkeypatch):
    monkeypatch.setattr(M, "RESULTS", tmp_path / "results.json")
    monkeypatch.setattr(M, "REPORT", tmp_path / "REPORT.md")
    monkeypatch.setattr(M, "EQUIVALENT", tmp_path / "eq.json")
    (tmp_path / "results.json").write_text(json.dumps({"odt.lamb": _result("old", 4, ["odt.lamb.x_g__mutmut_2"])}))
    (tmp_path / "eq.json").write_text(json.dumps({"odt.lamb.x_g__mutmut_2": "numpy ignores case"}))
    M.write_report(fresh={"odt.sampling": _result("new", 3, ["odt.sampling.x_h__mutmut_9"])})
    text = (tmp_path / "REPORT.md").read_text()
    assert "| `odt.lamb` | 5 | 4 | 0 | 0 | 1 |" in text
    assert "| `odt.sampling` | 4 | 3 | 0 | 1 | 0 |" in text
    assert "UNEXPLAINED" in text and "numpy ignores case" in text
    assert set(json.loads((tmp_path / "results.json").read_text())) == {"odt.sampling", "odt.lamb"}
