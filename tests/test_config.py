"""Configuration: every source, precedence, per-tool resolution and each error message."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolcap import Config, ConfigError, ToolPolicy, load_config
from toolcap._config import find_config_file
from toolcap.core._marker import DEFAULT_MARKER

KB = 1024
DESIGN_EXAMPLE = """
batch_ceiling = "256KB"
artifacts = "~/.cache/toolcap/artifacts"

[tools."*"]
size_threshold = "32KB"
strategy = "head_tail"
spill = true

[tools.Read]
size_threshold = "64KB"
strategy = "head"

[tools]
Grep = "8KB"
"""


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_defaults_match_the_design() -> None:
    config = Config()
    assert config.batch_ceiling == 256 * KB
    assert config.wire_budget == 64 * KB
    assert config.for_tool("Anything") == ToolPolicy(32 * KB, "head_tail", 0.2)
    assert config.for_tool("Anything").spill is True
    assert config.for_tool("Anything").marker.template == DEFAULT_MARKER


def test_the_design_example_resolves_per_tool_then_star_then_default(tmp_path: Path) -> None:
    # TOML forbids defining [tools] after [tools.Read]; the shorthand goes in the table itself.
    text = DESIGN_EXAMPLE.replace('\n[tools]\nGrep = "8KB"\n', "").replace(
        '[tools."*"]', '[tools]\nGrep = "8KB"\n\n[tools."*"]'
    )
    config = load_config(write(tmp_path / "toolcap.toml", text), env={})
    read, grep, other = (config.for_tool(n) for n in ("Read", "Grep", "Glob"))
    assert (read.size_threshold, read.strategy, read.spill) == (64 * KB, "head", True)
    assert (grep.size_threshold, grep.strategy) == (8 * KB, "head_tail")
    assert (other.size_threshold, other.strategy) == (32 * KB, "head_tail")
    assert config.artifacts == "~/.cache/toolcap/artifacts"


def test_star_values_fill_what_a_tool_table_leaves_out() -> None:
    config = Config.from_mapping(
        {"tools": {"*": {"strategy": "tail", "head_ratio": 0.5}, "Read": {"size_threshold": "1MB"}}}
    )
    assert config.for_tool("Read") == ToolPolicy(1024 * KB, "tail", 0.5)


def test_a_toolcap_toml_is_found_walking_up_from_the_working_directory(tmp_path: Path) -> None:
    write(tmp_path / "toolcap.toml", 'batch_ceiling = "1MB"\n')
    nested = tmp_path / "a" / "b"
    nested.mkdir(parents=True)
    assert find_config_file(nested, env={}) == tmp_path / "toolcap.toml"
    assert load_config(start=nested, env={}).batch_ceiling == 1024 * KB


def test_pyproject_tool_table_is_read(tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml",
          '[project]\nname = "x"\n\n[tool.toolcap]\nbatch_ceiling = "2MB"\n'
          '[tool.toolcap.tools]\nRead = "16KB"\n')
    config = load_config(start=tmp_path, env={})
    assert config.batch_ceiling == 2048 * KB
    assert config.for_tool("Read").size_threshold == 16 * KB
    assert config.source == str(tmp_path / "pyproject.toml")


@pytest.mark.parametrize("text", ["tool = 5\n", "[tool]\ntoolcap = 5\n"])
def test_a_pyproject_with_a_malformed_tool_table_is_a_clear_error(
    tmp_path: Path, text: str
) -> None:
    path = write(tmp_path / "pyproject.toml", text)
    with pytest.raises(ConfigError, match=r"no \[tool\.toolcap\] table"):
        load_config(path, env={})


def test_a_pyproject_without_a_toolcap_table_is_passed_over(tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", '[project]\nname = "x"\n')
    assert find_config_file(tmp_path, env={}) != tmp_path / "pyproject.toml"


def test_toolcap_toml_wins_over_pyproject_in_the_same_directory(tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", '[tool.toolcap]\nbatch_ceiling = "2MB"\n')
    write(tmp_path / "toolcap.toml", 'batch_ceiling = "3MB"\n')
    assert load_config(start=tmp_path, env={}).batch_ceiling == 3 * 1024 * KB


def test_toolcap_config_names_the_file_over_any_found_one(tmp_path: Path) -> None:
    write(tmp_path / "toolcap.toml", 'batch_ceiling = "3MB"\n')
    named = write(tmp_path / "elsewhere.toml", 'batch_ceiling = "5MB"\n')
    config = load_config(start=tmp_path, env={"TOOLCAP_CONFIG": str(named)})
    assert config.batch_ceiling == 5 * 1024 * KB


def test_an_explicit_path_wins_over_toolcap_config(tmp_path: Path) -> None:
    named = write(tmp_path / "env.toml", 'batch_ceiling = "5MB"\n')
    explicit = write(tmp_path / "cli.toml", 'batch_ceiling = "7MB"\n')
    config = load_config(explicit, env={"TOOLCAP_CONFIG": str(named)})
    assert config.batch_ceiling == 7 * 1024 * KB


def test_environment_overrides_the_file(tmp_path: Path) -> None:
    path = write(tmp_path / "toolcap.toml",
                 'batch_ceiling = "3MB"\n[tools."*"]\nsize_threshold = "8KB"\n'
                 '[tools.Read]\nsize_threshold = "64KB"\n')
    env = {"TOOLCAP_SIZE_THRESHOLD": "16KB", "TOOLCAP_BATCH_CEILING": "unlimited",
           "TOOLCAP_ARTIFACTS": "/tmp/elsewhere"}
    config = load_config(path, env=env)
    assert config.batch_ceiling is None
    assert config.for_tool("Glob").size_threshold == 16 * KB
    assert config.for_tool("Read").size_threshold == 64 * KB  # a tool's own value still wins
    assert config.artifacts == "/tmp/elsewhere"


def test_no_file_anywhere_gives_the_defaults(tmp_path: Path) -> None:
    assert load_config(start=tmp_path, env={}) == Config()


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        ('bach_ceiling = "1MB"', "toolcap.toml: bach_ceiling: unknown key 'bach_ceiling'"),
        ('batch_ceiling = "1XB"', "toolcap.toml: batch_ceiling: invalid size '1XB': unknown unit"),
        ("batch_ceiling = 0", 'toolcap.toml: batch_ceiling: a limit of 0 would drop every response;'
                              ' write "unlimited" for no limit'),
        ('[tools.Read]\nsize_threshold = "512B"',
         "toolcap.toml: tools.Read.size_threshold: limit '512B' is below the 1KB minimum"),
        ('[tools.Read]\nsize_treshold = "8KB"',
         "toolcap.toml: tools.Read.size_treshold: unknown key 'size_treshold'"),
        ('[tools.Read]\nstrategy = "middle"',
         "toolcap.toml: tools.Read.strategy: unknown strategy 'middle'"),
        ('[tools."*"]\nhead_ratio = 1.0',
         'toolcap.toml: tools."*".head_ratio: head_ratio must be between 0 and 1'),
        ('[tools."*"]\nhead_ratio = 0',
         'toolcap.toml: tools."*".head_ratio: head_ratio must be between 0 and 1'),
        ('[tools.Read]\nspill = "yes"', "toolcap.toml: tools.Read.spill: expected true or false"),
        ('[tools.Read]\nmarker = "{nope}"', "unknown placeholder {nope}"),
        ('[tools.Read]\nmarker = "' + "m" * 201 + '"', "over the 200-byte maximum"),
        ("[tools]\nRead = true", "toolcap.toml: tools.Read: expected a table or a size"),
        ('tools = "8KB"', "toolcap.toml: tools: must be a table"),
        ("[store]\nmax_age_days = -1", "toolcap.toml: store.max_age_days: expected a positive"),
        ("[store]\nmax_files = 3", "toolcap.toml: store.max_files: unknown key 'max_files'"),
        ("batch_ceiling = ", "toolcap.toml: invalid TOML"),
        ('[tools.Bash]\nkeep_lines = "error"',
         "toolcap.toml: tools.Bash.keep_lines: expected a list of strings, got 'error'"),
        ('[tools.Bash]\nkeep_lines = ["ok", 3]',
         "toolcap.toml: tools.Bash.keep_lines: expected a list of strings"),
        ('[tools.Bash]\nkeep_lines = ["err(or"]',
         "toolcap.toml: tools.Bash.keep_lines: invalid pattern 'err(or'"),
        ('[tools.Bash]\nkeep_lines = ["(a)\\\\1"]',
         "toolcap.toml: tools.Bash.keep_lines: pattern '(a)\\\\1' is not supported"),
        ('[tools.Bash]\nkeep_lines_share = 0',
         "toolcap.toml: tools.Bash.keep_lines_share: keep_lines_share must be above 0"),
        ('[tools.Bash]\nkeep_lines_share = "half"',
         "toolcap.toml: tools.Bash.keep_lines_share: keep_lines_share must be above 0"),
    ],
)
def test_each_configuration_error_names_key_value_and_file(
    tmp_path: Path, toml: str, message: str
) -> None:
    path = write(tmp_path / "toolcap.toml", toml + "\n")
    with pytest.raises(ConfigError) as caught:
        load_config(path, env={})
    assert str(caught.value).replace(str(tmp_path) + "/", "").startswith(message) or (
        message in str(caught.value)
    )
    assert "\n" not in str(caught.value)


def test_a_missing_named_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="configuration file not found"):
        load_config(tmp_path / "nope.toml", env={})


def test_a_bad_environment_override_names_the_variable() -> None:
    with pytest.raises(ConfigError, match="TOOLCAP_BATCH_CEILING: limit '12' is below"):
        Config().with_env({"TOOLCAP_BATCH_CEILING": "12"})


def test_configuration_built_in_code_is_validated_too() -> None:
    with pytest.raises(ConfigError, match=r"tools\.Read\.strategy"):
        Config(tools={"Read": {"strategy": "sideways"}})
    assert Config(batch_ceiling="1MB").batch_ceiling == 1024 * KB  # type: ignore[arg-type]


def test_unknown_tools_lists_configured_names_the_caller_does_not_have() -> None:
    config = Config.from_mapping({"tools": {"*": "8KB", "Read": "8KB", "Old": "8KB"}})
    assert config.unknown_tools(["Read", "Bash"]) == ["Old"]


@pytest.mark.parametrize("template", ["x {} y", "x {0} y", "bad \ud800 {kept}"])
def test_markers_with_positional_fields_or_surrogates_are_refused(template: str) -> None:
    with pytest.raises(ConfigError, match="marker"):
        Config(tools={"*": {"marker": template}})


def test_a_marker_field_with_a_conversion_still_renders() -> None:
    config = Config(tools={"*": {"marker": "[{dropped!s} cut]", "size_threshold": "1KB"}})
    marker = config.for_tool("x").marker
    assert marker.render(original=4096, kept=1024, reference=None) == "[3.0 KB cut]"


@pytest.mark.parametrize(
    ("template", "message"),
    [
        ("{kept:>4000000000}", "takes no format spec"),
        ("[{original:{kept}}]", "takes no format spec"),
        ("[{kept!x}]", "unknown conversion !x"),
        ("{" * 100_000, "over the 200-byte maximum"),
    ],
)
def test_a_marker_that_would_exhaust_memory_is_a_one_line_error(
    tmp_path: Path, template: str, message: str
) -> None:
    path = write(tmp_path / "toolcap.toml", f'[tools.Read]\nmarker = "{template}"\n')
    with pytest.raises(ConfigError, match=message) as caught:
        load_config(path, env={})
    assert "\n" not in str(caught.value) and len(str(caught.value)) < 400


def test_a_marker_built_in_code_is_checked_like_one_from_a_file() -> None:
    from toolcap.core._marker import Marker

    with pytest.raises(ConfigError, match="format spec"):
        Config(tools={"*": {"marker": Marker("{kept:>4000000000}")}})


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("a = " + "[" * 50_000 + "]" * 50_000 + "\n", "nested too deeply"),
        ("x = " + "{a = " * 50_000 + "}" * 50_000 + "\n", "nested too deeply"),
        (b'batch_ceiling = "1MB"\n# caf\xe9\n', r"not UTF-8 \(invalid byte at offset 27\)"),
        ("# " + "x" * (1024 * 1024) + "\n", "larger than 1024 KB"),
    ],
    ids=["arrays", "inline-tables", "latin-1", "huge"],
)
def test_a_hostile_configuration_file_is_a_one_line_error(
    tmp_path: Path, content: str | bytes, message: str
) -> None:
    path = tmp_path / "toolcap.toml"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises(ConfigError, match=message) as caught:
        load_config(path, env={})
    assert "\n" not in str(caught.value)


def test_a_deeply_nested_value_in_a_known_key_is_a_one_line_error(tmp_path: Path) -> None:
    # Parsed fine at this depth, but the error's description of the value must stay short.
    path = write(tmp_path / "toolcap.toml", "artifacts = " + "[" * 200 + "]" * 200 + "\n")
    with pytest.raises(ConfigError, match="artifacts: expected a string") as caught:
        load_config(path, env={})
    assert len(str(caught.value)) < 200


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
def test_a_device_named_as_the_configuration_is_refused_unread(device: str) -> None:
    with pytest.raises(ConfigError, match="not a regular file"):
        load_config(env={"TOOLCAP_CONFIG": device})


def test_a_fifo_named_as_the_configuration_is_refused_without_waiting(tmp_path: Path) -> None:
    import os

    fifo = tmp_path / "config.fifo"
    os.mkfifo(fifo)  # no writer: a blocking open would wait forever
    with pytest.raises(ConfigError, match="not a regular file"):
        load_config(fifo, env={})


def test_a_directory_named_as_the_configuration_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not a regular file"):
        load_config(tmp_path, env={})


def test_a_byte_limit_written_in_tokens_says_where_tokens_go() -> None:
    with pytest.raises(ConfigError) as error:
        Config.from_mapping({"tools": {"Read": "8k tokens"}}, source="toolcap.toml")
    message = str(error.value)
    assert "\n" not in message and "tools.Read" in message and "toolcap.toml" in message
    assert "this limit is in bytes (e.g. '32KB'); tokens are for context_window" in message
    with pytest.raises(ConfigError, match="batch_ceiling: invalid size '200k tokens'"):
        Config.from_mapping({"batch_ceiling": "200k tokens"})


def test_keep_lines_are_read_per_tool_and_an_empty_list_turns_them_off(tmp_path: Path) -> None:
    path = write(tmp_path / "toolcap.toml",
                 '[tools."*"]\nkeep_lines_share = 0.5\n'
                 '[tools.Bash]\nkeep_lines = ["^E\\\\d+", "boom"]\n'
                 '[tools.Quiet]\nkeep_lines = []\n')
    config = load_config(path, env={})
    bash, quiet, other = (config.for_tool(n) for n in ("Bash", "Quiet", "Other"))
    assert bash.keep_lines == ("^E\\d+", "boom") and bash.keep.share == 0.5
    assert len(bash.keep.matchers) == 2
    assert quiet.keep.matchers == ()
    assert other.keep_lines is None and other.keep.matchers  # the built-in set
