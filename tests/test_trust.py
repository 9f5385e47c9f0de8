"""A configuration file found walking up may set bounds, but not where outputs go, untrusted."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolcap import ConfigError, load_config
from toolcap._trust import trust, trust_state, untrust, user_config_file

KB = 1024
HOSTILE = '[tool.toolcap]\nartifacts = "s3://someone-else/loot"\nbatch_ceiling = "300KB"\n'


@pytest.fixture(autouse=True)
def user_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A user configuration directory of this test's own."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    return tmp_path / "xdg" / "toolcap"


@pytest.fixture
def repository(tmp_path: Path) -> Path:
    """A cloned repository whose pyproject.toml sends outputs elsewhere; cwd is a subfolder."""
    root = tmp_path / "clone"
    (root / "src").mkdir(parents=True)
    (root / "pyproject.toml").write_text(HOSTILE)
    return root


def test_a_store_location_from_a_found_file_is_refused_until_trusted(repository: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(start=repository / "src", env={})
    message = str(caught.value)
    assert message.startswith(f"{repository / 'pyproject.toml'}: artifacts: ")
    assert "not trusted" in message and "toolcap config trust" in message
    assert "\n" not in message


def test_a_found_file_without_a_store_location_still_sets_bounds(repository: Path) -> None:
    (repository / "pyproject.toml").write_text('[tool.toolcap]\nbatch_ceiling = "300KB"\n')
    assert load_config(start=repository / "src", env={}).batch_ceiling == 300 * KB


def test_a_trusted_file_sets_the_store_location(repository: Path) -> None:
    trust(repository / "pyproject.toml")
    config = load_config(start=repository / "src", env={})
    assert config.artifacts == "s3://someone-else/loot"


def test_a_file_changed_after_it_was_trusted_is_refused_again(repository: Path) -> None:
    pyproject = repository / "pyproject.toml"
    trust(pyproject)
    pyproject.write_text(HOSTILE.replace("loot", "more-loot"))
    with pytest.raises(ConfigError, match="changed since you trusted it"):
        load_config(start=repository / "src", env={})
    assert trust_state(pyproject, pyproject.read_bytes()) == "changed"


def test_untrust_forgets_the_file(repository: Path) -> None:
    pyproject = repository / "pyproject.toml"
    trust(pyproject)
    assert untrust(pyproject) is True
    assert untrust(pyproject) is False
    with pytest.raises(ConfigError, match="not trusted"):
        load_config(start=repository / "src", env={})


def test_trust_is_recorded_owner_only_in_the_user_config_directory(
    repository: Path, user_config: Path
) -> None:
    trust(repository / "pyproject.toml")
    record = user_config / "trusted.json"
    assert record.stat().st_mode & 0o077 == 0
    assert str((repository / "pyproject.toml").resolve()) in record.read_text()


def test_a_corrupt_trust_record_is_a_one_line_error(repository: Path, user_config: Path) -> None:
    user_config.mkdir(parents=True)
    (user_config / "trusted.json").write_text("{not json")
    with pytest.raises(ConfigError, match="not valid JSON; remove it"):
        load_config(start=repository / "src", env={})


@pytest.mark.parametrize("how", ["path", "TOOLCAP_CONFIG"])
def test_a_file_the_user_names_is_trusted(repository: Path, how: str) -> None:
    named = repository / "pyproject.toml"
    if how == "path":
        config = load_config(named, env={})
    else:
        config = load_config(start=repository, env={"TOOLCAP_CONFIG": str(named)})
    assert config.artifacts == "s3://someone-else/loot"


def test_the_environment_or_the_caller_overriding_the_location_is_not_refused(
    repository: Path,
) -> None:
    env = {"TOOLCAP_ARTIFACTS": "/mine"}
    assert load_config(start=repository / "src", env=env).artifacts == "/mine"
    assert load_config(start=repository / "src", env={}, artifacts="/own").artifacts == "/own"


def test_the_user_level_file_is_the_last_place_looked_and_is_trusted(
    tmp_path: Path, user_config: Path
) -> None:
    user_config.mkdir(parents=True)
    user_file = user_config / "toolcap.toml"
    user_file.write_text('artifacts = "/home/me/kept"\nbatch_ceiling = "1MB"\n')
    assert user_config_file() == user_file
    elsewhere = tmp_path / "no-project"
    elsewhere.mkdir()
    config = load_config(start=elsewhere, env={})
    assert (config.artifacts, config.source) == ("/home/me/kept", str(user_file))
    # A project's own file is found first.
    (elsewhere / "toolcap.toml").write_text('batch_ceiling = "2MB"\n')
    assert load_config(start=elsewhere, env={}).batch_ceiling == 2048 * KB
