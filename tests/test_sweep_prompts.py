"""Prompt files (.txt, .jsonl, .parquet) and the sweep's options: every line is a prompt, a bad one an error."""

from __future__ import annotations

import pytest

from symuat.errors import InvalidValueError, UnsupportedError
from symuat.sweep import Prompt, SweepOptions, prompt_key, read_prompts


def test_jsonl_lines_with_ids_text_and_targets(tmp_path):
    p = tmp_path / "p.jsonl"
    p.write_text('{"input_ids": [1, 2]}\n{"text": "a b", "target": 4}\n')
    got = read_prompts(p)
    assert got == (Prompt(0, input_ids=(1, 2)), Prompt(1, text="a b", target=4))


def test_a_corrupted_run_is_read_and_keyed_only_when_given(tmp_path):
    p = tmp_path / "p.jsonl"
    p.write_text('{"input_ids": [1, 2], "corrupt_ids": [1, 3]}\n{"text": "a b", "corrupt": "a c"}\n'
                 '{"input_ids": [1, 2]}\n')
    a, b, plain = read_prompts(p)
    assert (a.corrupt_ids, b.corrupt, plain.has_corrupt) == ((1, 3), "a c", False)
    assert "corrupt_ids" in a.content() and "corrupt" not in plain.content() and "corrupt_ids" not in plain.content()


@pytest.mark.parametrize("line, problem", [
    ("[1, 2]", "expected an object with 'text' or 'input_ids', got list"),
    ('{"text": "a", "input_ids": [1]}', "give exactly one of 'text' and 'input_ids'"),
    ("{}", "give exactly one of 'text' and 'input_ids'"),
    ('{"text": 3}', "'text' must be a string, got int"),
    ('{"input_ids": "1 2"}', "'input_ids' must be a list of integers, got str"),
    ('{"input_ids": [1, 2.5]}', "each of 'input_ids' must be an integer token id, got 2.5"),
    ('{"input_ids": [true]}', "each of 'input_ids' must be an integer token id, got True"),
    ('{"input_ids": [1], "target": "x"}', "'target' must be an integer token id, got 'x'"),
    ("{not json", "line 1 is not JSON: Expecting property name enclosed in double quotes"),
    ('{"input_ids": [1], "corrupt": "a", "corrupt_ids": [2]}', "give at most one of 'corrupt' and 'corrupt_ids'"),
    ('{"input_ids": [1], "corrupt": [2]}', "'corrupt' must be a string, got list"),
    ('{"input_ids": [1], "corrupt_ids": 2}', "'corrupt_ids' must be a list of integers, got int"),
    ('{"input_ids": [1], "corrupt_ids": [null]}', "each of 'corrupt_ids' must be an integer token id, got None"),
])
def test_a_malformed_line_is_a_prompt_with_its_problem(tmp_path, line, problem):
    p = tmp_path / "p.jsonl"
    p.write_text(line + "\n")
    (prompt,) = read_prompts(p)
    assert prompt.problem == problem and prompt.text is None and prompt.input_ids is None


def test_txt_keeps_every_line_even_an_empty_one(tmp_path):
    p = tmp_path / "p.txt"
    p.write_text("first\n\nthird\n")
    assert [q.text for q in read_prompts(p)] == ["first", "", "third"]


def test_parquet_columns(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"input_ids": [[1, 2], [3]], "target": [None, 2]}), tmp_path / "p.parquet")
    assert read_prompts(tmp_path / "p.parquet") == (Prompt(0, input_ids=(1, 2)), Prompt(1, input_ids=(3,), target=2))
    pq.write_table(pa.table({"words": ["a"]}), tmp_path / "q.parquet")
    with pytest.raises(InvalidValueError, match="needs a column 'text' or 'input_ids', has \\['words'\\]"):
        read_prompts(tmp_path / "q.parquet")


@pytest.mark.parametrize("name, error, match", [
    ("p.csv", UnsupportedError, "expected one of .jsonl, .parquet, .txt, got '.csv'"),
    ("missing.jsonl", InvalidValueError, "does not exist or is not a file"),
])
def test_unreadable_prompt_files_are_refused(tmp_path, name, error, match):
    (tmp_path / "p.csv").write_text("a\n")
    with pytest.raises(error, match=match):
        read_prompts(tmp_path / name)


def test_not_utf8(tmp_path):
    (tmp_path / "p.txt").write_bytes(b"\xff\xfe bad")
    with pytest.raises(InvalidValueError, match="is not UTF-8 text"):
        read_prompts(tmp_path / "p.txt")


@pytest.mark.parametrize("kwargs, match", [
    (dict(by="expert"), "by must be one of"),
    (dict(target=-1), "target must be 'top' or a token id >= 0, got -1"),
    (dict(target=True), "target must be 'top' or a token id >= 0, got True"),
    (dict(target="logits"), "target must be 'top' or a token id"),
    (dict(top=-2), "top must be an integer >= 0"),
    (dict(tolerance=0.0), "tolerance must be a float in \\(0, 1\\)"),
    (dict(tolerance=float("nan")), "tolerance must be a float in \\(0, 1\\)"),
])
def test_options_are_validated(kwargs, match):
    with pytest.raises(InvalidValueError, match=match):
        SweepOptions(**kwargs)


def test_the_key_is_the_content_the_model_and_the_options():
    a, b = Prompt(0, input_ids=(1, 2)), Prompt(7, input_ids=(1, 2))
    o = SweepOptions()
    assert prompt_key(a, "m", o) == prompt_key(b, "m", o)  # the same prompt on another line: one row
    assert prompt_key(a, "m", o) != prompt_key(a, "n", o)
    assert prompt_key(a, "m", o) != prompt_key(a, "m", SweepOptions(by="layer"))
    assert prompt_key(a, "m", o) != prompt_key(Prompt(0, input_ids=(1, 2), target=3), "m", o)
