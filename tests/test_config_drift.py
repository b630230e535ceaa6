"""Config drift (benchmarks/drift.py): a field absent from a stored config is no change exactly
where its value now is its dataclass default; any other difference, and a field the code no
longer has, is a change named by its dotted path."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace

from baselines.iql import iql_config
from benchmarks.drift import config_dict, config_drift, field_defaults
from odt.config import make_config


@dataclass
class Part:
    width: int = 8
    planted: bool = True  # "added later": runs recorded before it lack it


@dataclass
class Planted:
    rate: float = 0.5
    steps: int = 100
    part: Part = field(default_factory=Part)
    planted_top: int = 0


@dataclass
class Wrapper:  # a config holding another, as official-odt's holds odt's
    inner: Planted
    tag: str = ""
    name: str = "w"


def _recorded_before_the_plants(cfg) -> dict:
    """``cfg`` as a run made before the planted fields existed stored it."""
    d = asdict(cfg)
    d.pop("planted_top")
    d["part"].pop("planted")
    return d


def test_an_added_field_at_its_default_is_no_change():
    assert config_drift(_recorded_before_the_plants(Planted()), Planted()) == []
    assert config_drift({"inner": _recorded_before_the_plants(Planted()), "tag": "", "name": "w"}, Wrapper(Planted())) == []


def test_an_added_field_away_from_its_default_is_a_change_naming_it():
    drift = config_drift(_recorded_before_the_plants(Planted()), Planted(planted_top=3))
    assert len(drift) == 1 and drift[0].startswith("planted_top:") and "3 now" in drift[0]
    nested = Planted(part=Part(planted=False))
    drift = config_drift({"inner": _recorded_before_the_plants(Planted()), "tag": "", "name": "w"}, Wrapper(nested))
    assert len(drift) == 1 and drift[0].startswith("inner.part.planted:") and "False now" in drift[0]


def test_a_changed_value_is_a_change_and_so_is_a_removed_field():
    stored = asdict(Planted())
    stored["steps"] = 50
    assert config_drift(stored, Planted()) == ["steps: 50 on disk, 100 now"]
    stored = {**asdict(Planted()), "retired": 7}
    drift = config_drift(stored, Planted())
    assert len(drift) == 1 and drift[0].startswith("retired: 7 on disk") and "removed" in drift[0]


def test_a_field_without_a_default_absent_on_disk_is_a_change():
    """A leaf with no default cannot be told from its absence; a nested config's leaves are
    compared one by one, each with its own class default (whole nested configs have none)."""
    @dataclass
    class Required:
        inner: Planted
        tag: str

    drift = config_drift({"inner": asdict(Planted())}, Required(Planted(), "t"))
    assert len(drift) == 1 and drift[0].startswith("tag: '<absent>' on disk") and "no default" in drift[0]
    assert config_drift({"tag": "t"}, Required(Planted(), "t")) == []  # its leaves at their defaults
    assert config_drift({"tag": "t"}, Required(Planted(steps=3), "t"))[0].startswith("inner.steps:")
    assert "tag" not in field_defaults(Required(Planted(), "t")) and field_defaults(Planted())["part.planted"] is True


def test_the_fields_added_to_the_real_configs_since_runs_were_recorded():
    """ODT's update budget and interim episodes, odt-control's add_rollouts, IQL's online window
    and input normalisation: absent on disk at their defaults, no change; set, a change."""
    odt = make_config("hopper-medium", "online", "cpu", {"seed": 0})
    stored = config_dict(odt)
    for name in ("online_updates", "add_rollouts"):
        stored["online"].pop(name)
    stored.pop("eval_episodes_interim")
    assert config_drift(stored, odt) == []
    control = replace(odt, online=replace(odt.online, add_rollouts=False, online_updates=300))
    assert [line.split(":")[0] for line in config_drift(stored, control)] == ["online.add_rollouts",
                                                                           "online.online_updates"]
    iql = iql_config("hopper-medium", "cpu", 0, {"online_window": 0})
    stored = config_dict(iql)
    stored.pop("online_window")
    stored.pop("normalize_observations")
    assert config_drift(stored, iql) == []
    assert config_drift(stored, replace(iql, normalize_observations=True))[0].startswith("normalize_observations:")
    windowed = iql_config("hopper-medium", "cpu", 0)  # the cpu preset's window, not what ran before it
    assert windowed.online_window != 0
    assert [line.split(":")[0] for line in config_drift(stored, windowed)] == ["online_window"]


def test_ignored_fields_drop_out_on_both_sides_and_defaults_still_apply():
    """The cost model compares a run's stored config with the config of another seed: the seed
    is ignored, and a field the stored config lacks still counts as its default."""
    odt = make_config("hopper-medium", "online", "cpu", {"seed": 0})
    other_seed = make_config("hopper-medium", "online", "cpu", {"seed": 7})
    stored = {k: v for k, v in config_dict(odt).items() if k != "eval_episodes_interim"}
    assert config_drift(stored, other_seed, ignore=("seed",)) == []
    assert [line.split(":")[0] for line in config_drift(stored, other_seed)] == ["seed"]
    changed = replace(other_seed, eval_episodes_interim=odt.eval_episodes_interim + 5)
    assert [line.split(":")[0] for line in config_drift(stored, changed, ignore=("seed",))] == ["eval_episodes_interim"]


def test_a_plain_dict_is_compared_as_it_is():
    """Without a dataclass there are no defaults: a missing field is drift."""
    assert config_drift({"a": {"b": 1}}, {"a": {"b": 1}}) == []
    assert config_drift({"a": {}}, {"a": {"b": 1}}) != []


def test_ignored_fields_are_left_out_by_dotted_name_or_section():
    stored = asdict(Planted(rate=0.1, steps=7, part=Part(width=3)))
    assert config_drift(stored, Planted(), ignore=("rate", "steps", "part.width")) == []
    assert config_drift(stored, Planted(), ignore=("rate", "steps", "part")) == []
    assert [line.split(":")[0] for line in config_drift(stored, Planted(), ignore=("part.planted", "rate"))] == [
        "part.width", "steps"]
    assert config_drift(stored, Planted(), ignore=("par",)) != []  # a prefix of a name is not its section
