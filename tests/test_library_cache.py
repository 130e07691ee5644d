"""The library's parsed YAML is cached as JSON: the same library with or without it, and never an error."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from conftest import USER_RULE

from triage.library import cache as library_cache
from triage.library.rules import load_library


@pytest.fixture()
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache" / "triage" / "library.json"


def rules_of(lib) -> dict[str, tuple[str, str, str]]:  # type: ignore[no-untyped-def]
    return {r.id: (r.origin, r.title, r.severity) for r in lib.rules}


def test_a_cached_library_is_the_library_parsed_anew(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = load_library()
    assert cache.is_file()
    monkeypatch.delitem(sys.modules, "yaml", raising=False)
    second = load_library()
    assert "yaml" not in sys.modules  # nothing was parsed: the YAML parser was not even imported
    assert rules_of(second) == rules_of(first)
    assert all(int(origin.rsplit(":", 1)[1]) > 0 for origin, _, _ in rules_of(second).values())  # with lines
    assert second.knobs.keys() == first.knobs.keys() and second.categories.keys() == first.categories.keys()


def test_a_changed_rule_file_is_read_again(cache: Path, tmp_path: Path) -> None:
    user = tmp_path / "rules"
    user.mkdir()
    (user / "mine.yaml").write_text(USER_RULE, encoding="utf-8")
    assert load_library([user]).rule("user.my-rule").title == "My failure"
    (user / "mine.yaml").write_text(USER_RULE.replace("My failure", "My other failure"), encoding="utf-8")
    assert load_library([user]).rule("user.my-rule").title == "My other failure"
    (user / "mine.yaml").write_text(USER_RULE.replace("My failure", "My 0ther failure"), encoding="utf-8")
    assert load_library([user]).rule("user.my-rule").title == "My 0ther failure"  # same size, same instant


def test_two_rule_folders_used_in_turn_both_stay_cached(cache: Path, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Two installs or rule folders read in turn must not evict each other's entries (each run re-parsing)."""
    folders = []
    for name in ("a", "b"):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "mine.yaml").write_text(USER_RULE, encoding="utf-8")
        folders.append(folder)
    load_library([folders[0]])
    load_library([folders[1]])
    monkeypatch.delitem(sys.modules, "yaml", raising=False)
    assert load_library([folders[0]]).rule("user.my-rule").title == "My failure"
    assert "yaml" not in sys.modules  # folder a's entry survived folder b's run
    keys = json.loads(cache.read_text(encoding="utf-8"))["files"]
    assert {str(f.resolve() / "mine.yaml") for f in folders} <= keys.keys()


def test_the_cache_keeps_a_bounded_number_of_other_entries(cache: Path, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(library_cache, "KEEP_OTHERS", 3)
    for i in range(6):
        folder = tmp_path / f"rules{i}"
        folder.mkdir()
        (folder / "mine.yaml").write_text(USER_RULE, encoding="utf-8")
        load_library([folder])
    keys = json.loads(cache.read_text(encoding="utf-8"))["files"].keys()
    users = [k for k in keys if k.endswith("mine.yaml")]
    assert sorted(Path(k).parent.name for k in users) == ["rules2", "rules3", "rules4", "rules5"]  # newest kept


def test_a_damaged_cache_is_rebuilt(cache: Path) -> None:
    cache.parent.mkdir(parents=True)
    cache.write_text('{"format": 1, "files": {', encoding="utf-8")
    expected = rules_of(load_library())
    assert json.loads(cache.read_text(encoding="utf-8"))["format"] == library_cache.FORMAT
    assert rules_of(load_library()) == expected


def test_a_cache_that_cannot_be_written_is_no_error(cache: Path, tmp_path: Path) -> None:
    (tmp_path / "cache").write_text("a file where the folder should be", encoding="utf-8")
    assert len(load_library().rules) > 50
    assert not cache.exists()
    assert not [p for p in tmp_path.rglob("*.tmp")]


def test_no_cache_when_turned_off(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRIAGE_NO_CACHE", "1")
    load_library()
    assert not cache.exists()


def test_data_json_cannot_hold_is_parsed_every_time(tmp_path: Path) -> None:
    f, plain = tmp_path / "dated.yaml", tmp_path / "plain.yaml"
    f.write_text("when: 2026-12-03\n1: one\n", encoding="utf-8")
    plain.write_text("a: [1, 2.5, x]\n", encoding="utf-8")
    calls = []

    def parse(path: Path) -> object:
        calls.append(path)
        import yaml

        return yaml.safe_load(path.read_text(encoding="utf-8"))

    first = library_cache.YamlCache(tmp_path / "c.json")
    data = first.read(f, parse)
    assert first.read(plain, parse) == {"a": [1, 2.5, "x"]}
    first.save()
    second = library_cache.YamlCache(tmp_path / "c.json")
    assert second.read(plain, parse) == {"a": [1, 2.5, "x"]} and calls == [f, plain]  # from the cache
    assert second.read(f, parse) == data and calls == [f, plain, f]  # a date and an int key: parsed again


def test_never_a_cache_folder_relative_to_where_triage_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/cache")
    monkeypatch.setenv("HOME", "/home/someone")
    assert library_cache.cache_file() == Path("/home/someone/.cache/triage/library.json")
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setattr(library_cache.os.path, "expanduser", lambda p: p)  # no home to be found
    assert library_cache.cache_file() is None


OOM = "trainer.cuda-oom"


def _poison(cache: Path, change) -> None:  # type: ignore[no-untyped-def]
    """Edit the cached data of the file holding the OOM rule in place, keeping every key, hash and stamp."""
    doc = json.loads(cache.read_text(encoding="utf-8"))
    for entry in doc["files"].values():
        data = json.loads(entry["json"])
        rules = data.get("rules") if isinstance(data, dict) else None
        for raw in rules or []:
            if raw.get("id") == OOM:
                change(data, raw)
                entry["json"] = json.dumps(data)
                cache.write_text(json.dumps(doc), encoding="utf-8")
                return
    raise AssertionError(f"{OOM} not in the cache")


def test_a_well_formed_poisoned_cache_is_not_trusted(cache: Path) -> None:
    expected = rules_of(load_library())
    assert expected[OOM][2] == "error"
    _poison(cache, lambda data, raw: raw.update(severity="info"))  # same files, same hashes, OOM rule demoted
    assert rules_of(load_library()) == expected
    _poison(cache, lambda data, raw: data["rules"].remove(raw))  # the OOM rule removed
    assert rules_of(load_library()) == expected


def test_a_cache_of_another_version_is_not_trusted(cache: Path) -> None:
    expected = rules_of(load_library())
    _poison(cache, lambda data, raw: raw.update(severity="info"))
    doc = json.loads(cache.read_text(encoding="utf-8"))
    with pytest.MonkeyPatch.context() as other:  # the digests made right for the poisoned data, by another version
        other.setattr(library_cache, "__version__", "0.0.1")
        for entry in doc["files"].values():
            entry["digest"] = library_cache._digest(entry["sha256"], entry["json"])
    doc["version"] = "0.0.1"
    cache.write_text(json.dumps(doc), encoding="utf-8")
    assert rules_of(load_library()) == expected


def test_a_wrong_typed_cache_is_ignored_and_blames_no_file(cache: Path) -> None:
    expected = rules_of(load_library())
    for bad in ([], {"format": library_cache.FORMAT, "files": []}, {"format": "3", "files": {}},
                {"format": library_cache.FORMAT, "version": library_cache.__version__, "files": {"x": 1}}):
        cache.write_text(json.dumps(bad), encoding="utf-8")
        assert rules_of(load_library()) == expected
    doc = json.loads(cache.read_text(encoding="utf-8"))
    for entry in doc["files"].values():  # every entry's data wrong-typed, digests kept
        entry["json"] = json.dumps({"rules": 7, "knobs": "none", "categories": [1], "markers": 2})
    cache.write_text(json.dumps(doc), encoding="utf-8")
    assert rules_of(load_library()) == expected


def test_cached_data_that_fails_to_load_is_loaded_again_from_the_files(cache: Path) -> None:
    expected = rules_of(load_library())
    doc = json.loads(cache.read_text(encoding="utf-8"))
    for entry in doc["files"].values():  # a wrong type that passes the digest (written by a buggy build)
        data = json.loads(entry["json"])
        if isinstance(data, dict) and "rules" in data:
            data["rules"][0]["priority"] = "high"
            entry["json"] = json.dumps(data)
            entry["digest"] = library_cache._digest(entry["sha256"], entry["json"])
            break
    cache.write_text(json.dumps(doc), encoding="utf-8")
    assert rules_of(load_library()) == expected  # not "priority must be a whole number" blamed on a healthy file
    assert rules_of(load_library()) == expected


def test_a_symlink_planted_in_the_cache_folder_is_never_followed(cache: Path, tmp_path: Path) -> None:
    target = tmp_path / "precious.txt"
    target.write_text("keep me\n", encoding="utf-8")
    cache.parent.mkdir(parents=True)
    for name in [f"library.json.{os.getpid()}.tmp", ".library.json.tmp", "library.json.tmp"]:
        (cache.parent / name).symlink_to(target)  # at every name an attacker could predict
    load_library()
    assert target.read_text(encoding="utf-8") == "keep me\n"
    assert json.loads(cache.read_text(encoding="utf-8"))["format"] == library_cache.FORMAT
    assert not cache.is_symlink()
    cache.unlink()
    cache.symlink_to(target)  # the cache file itself a link: replaced, not written through
    load_library()
    assert target.read_text(encoding="utf-8") == "keep me\n"
    assert not cache.is_symlink()
