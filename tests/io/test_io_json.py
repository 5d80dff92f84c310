"""The ppverify JSON schedule format: exact round trips (every registered family, random
programs, costs, tables) and strict, located rejection of malformed files."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppverify.core.costs import CostModel
from ppverify.core.dag import structural_problems
from ppverify.core.errors import PPVerifyError, ScheduleFileError
from ppverify.core.ops import Comm, Marker, Op, Overlap, compute_ops
from ppverify.core.placement import bidirectional, custom, linear
from ppverify.core.schedule import Schedule
from ppverify.engines import run
from ppverify.engines.table import table_grid_of
from ppverify.io import load_schedule
from ppverify.io.json_format import (
    FORMAT_VERSION,
    TableGrid,
    document_from_dict,
    dumps,
    load_json,
    loads_document,
    read_json,
    save_json,
    schedule_from_dict,
    schedule_to_dict,
)
from ppverify.schedules import build, families


def small_instances(buildable, fam) -> list[Schedule]:
    """A few small, valid instances of a family (found by trying, since families have rules)."""
    sizes = [(p, m) for p in (2, 4, 3) for m in (p, 2 * p, 1, 3)]
    return [s for _, _, s in buildable(fam.name, sizes)][:3]


def assert_same_schedule(a: Schedule, b: Schedule) -> None:
    assert a.placement == b.placement
    assert a.m == b.m
    assert a.programs == b.programs
    assert a.pipe_of_mb == b.pipe_of_mb
    assert a.family == b.family
    assert dict(a.params) == dict(b.params)


FAMILIES = families()


@pytest.mark.parametrize("fam", FAMILIES, ids=[f.name for f in FAMILIES])
def test_every_family_round_trips_exactly(fam, tmp_path, buildable):
    instances = small_instances(buildable, fam)
    assert instances, f"no small valid instance of {fam.name} found"
    for s in instances:
        assert_same_schedule(schedule_from_dict(schedule_to_dict(s)), s)
        # through real JSON text and a file, with costs and the table embedded
        costs = CostModel.abstract(s.placement, F=1, B=2)
        path = save_json(s, tmp_path / f"{fam.name}.json", costs, table=table_grid_of(s, costs))
        doc = read_json(path)
        assert_same_schedule(doc.schedule, s)
        assert doc.costs == costs
        assert doc.table == table_grid_of(s, costs)
        assert_same_schedule(load_schedule(path), s)


@pytest.mark.parametrize("fam", FAMILIES, ids=[f.name for f in FAMILIES])
def test_table_alone_is_a_schedule(fam, buildable):
    """A file holding only the table (no programs) gives the same op order and the same timing."""
    for s in small_instances(buildable, fam)[:2]:
        costs = CostModel.abstract(s.placement, F=1, B=2)
        d = schedule_to_dict(s, costs, table_grid_of(s, costs))
        del d["programs"]
        back = schedule_from_dict(d)
        for prog_a, prog_b in zip(s.programs, back.programs):
            assert list(compute_ops(prog_a)) == list(compute_ops(prog_b))
        ta, tb = run(s, costs, semantics="slot"), run(back, costs, semantics="slot")
        assert ta.ops == tb.ops
        assert np.array_equal(ta.start, tb.start) and np.array_equal(ta.end, tb.end)


def test_hand_written_file_with_idle_slots_and_two_pipes(tmp_path):
    text = """{
      "format": "ppverify-schedule", "version": 1, "comment": "hand-written",
      "p": 2, "m": 2,
      "placement": {"name": "bidirectional", "maps": [[0, 1], [1, 0]]},
      "pipe_of_mb": [0, 1],
      "programs": [["0F0", "1F1", null, "1B1", "0B0"], ["0F1", "1F0", "1B0", "0B1"]]
    }"""
    path = tmp_path / "c.json"
    path.write_text(text)
    s = load_schedule(path)
    assert s.placement == bidirectional(2)
    assert s.pipe_of_mb == (0, 1)
    assert s.programs[0][2] is None
    assert structural_problems(s) == []
    assert read_json(path).comment == "hand-written"
    # unit slots, by hand: dev0 0F0@0, 1F1@1 (after 0F1@0 on dev1), idle@2, 1B1@3, 0B0@4 (after 1B0@2)
    tl = run(s, semantics="slot")
    assert tl.makespan == 5.0


def test_every_action_form_round_trips():
    prog = (
        Op("F", 0, 0),
        Comm("SEND_F", 0, 0),
        Marker("UNSHARD", 0),
        None,
        Overlap((Op("F", 0, 1), Op("B", 0, 0))),
        Comm("RECV_B", 0, 1),
        Op("I", 0, 1),
        Op("W", 0, 1),
        Marker("REDUCE_GRAD", 0),
    )
    s = Schedule(linear(1), 2, (prog,), (0, 0), "custom", {"note": "x", "split": (1, 2)})
    d = json.loads(dumps(s))
    assert d["programs"][0] == [
        "0F0",
        "0SEND_F0",
        "0UNSHARD",
        None,
        "(0F1;0B0)OVERLAP_F_B",
        "0RECV_B1",
        "0I1",
        "0W1",
        "0REDUCE_GRAD",
    ]
    assert_same_schedule(schedule_from_dict(d), s)


def test_ops_that_do_not_exist_load_and_are_reported_structurally():
    d = schedule_to_dict(build("gpipe", p=2, m=1))
    d["programs"][0].append("5F9")  # no stage 5, no microbatch 9: not a file error
    s = schedule_from_dict(d)
    problems = structural_problems(s)
    assert any("5F9" in pr for pr in problems)


@st.composite
def random_schedules(draw):
    p = draw(st.integers(1, 4))
    pipes = draw(st.integers(1, 2))
    S = draw(st.integers(1, 5))
    maps = [draw(st.lists(st.integers(0, p - 1), min_size=S, max_size=S)) for _ in range(pipes)]
    m = draw(st.integers(1, 6))
    pom = tuple(draw(st.lists(st.integers(0, pipes - 1), min_size=m, max_size=m)))
    op = st.builds(Op, st.sampled_from("FBIW"), st.integers(0, 9), st.integers(0, 9))
    action = st.one_of(
        op,
        st.none(),
        st.builds(
            Comm, st.sampled_from(["SEND_F", "RECV_F", "SEND_B", "RECV_B"]), st.integers(0, 9), st.integers(0, 9)
        ),
        st.builds(Marker, st.sampled_from(["UNSHARD", "RESHARD", "REDUCE_GRAD"]), st.integers(0, 9)),
        st.builds(  # an overlapped slot pairs one forward with one backward (PyTorch's OVERLAP_F_B)
            lambda a, b: Overlap(
                (Op("F", a.stage, a.mb), Op(b.kind, b.stage, b.mb) if b.kind != "F" else Op("B", b.stage, b.mb))
            ),
            op,
            op,
        ),
    )
    programs = tuple(tuple(draw(st.lists(action, max_size=8))) for _ in range(p))
    # a name ppverify gives ("linear") only where the maps are linear: a file whose name contradicts
    # its maps is refused (tests/io/test_interchange_edges.py)
    linear_maps = tuple(map(tuple, maps)) == linear(p).maps
    name = draw(st.sampled_from(["custom", "linear", "x y"] if linear_maps else ["custom", "x y"]))
    return Schedule(
        custom(p, maps, name), m, programs, pom, draw(st.sampled_from(["custom", "1f1b"])), {"p": p, "m": m}
    )


@given(random_schedules())
@settings(max_examples=150, deadline=None)
def test_random_schedules_round_trip_exactly(s):
    assert_same_schedule(loads_document(dumps(s)).schedule, s)


# --------------------------------------------------------------------------- bad input


def valid() -> dict:
    s = build("1f1b", p=4, m=4)
    return schedule_to_dict(s, CostModel.unit(s.placement))


def mutate(fn):
    d = copy.deepcopy(valid())
    fn(d)
    return d


BAD = [
    # (mutation, expected location, words the rule must contain)
    (lambda d: d["programs"][1].__setitem__(3, "0X1"), "programs[1][3]", "'0X1' is not an action"),
    (lambda d: d["programs"][2].__setitem__(0, 7), "programs[2][0]", "got an integer (7)"),
    (lambda d: d["programs"].pop(), "programs", "has 3 programs (one per device); need 4"),
    (lambda d: d.__setitem__("programs", "0F0"), "programs", "expected a JSON list"),
    (lambda d: d["placement"]["maps"][0].__setitem__(2, 4), "placement.maps[0][2]", "4 out of range; must be in 0..3"),
    (lambda d: d["placement"]["maps"][0].__setitem__(1, -1), "placement.maps[0][1]", "out of range"),
    (lambda d: d["placement"]["maps"].append([0, 1]), "placement.maps[1]", "has 2 stages but pipe 0 has 4"),
    (lambda d: d["placement"].pop("maps"), "placement", "missing key 'maps'"),
    (lambda d: d.pop("m"), "top level", "missing key 'm'"),
    (lambda d: d.__setitem__("m", 0), "m", "0 out of range; must be >= 1"),
    (lambda d: d.__setitem__("m", 2.5), "m", "expected an integer"),
    (lambda d: d.__setitem__("p", True), "p", "expected an integer, got a boolean"),
    (lambda d: d.__setitem__("pipe_of_mb", [0, 0, 1, 0]), "pipe_of_mb[2]", "1 out of range; must be in 0..0"),
    (lambda d: d.__setitem__("pipe_of_mb", [0]), "pipe_of_mb", "has 1 entries (one per microbatch); need 4"),
    (lambda d: d.__setitem__("programz", []), "programz", "unknown key"),
    (lambda d: d.__setitem__("format", "other"), "format", "'ppverify-schedule'"),
    (lambda d: d.__setitem__("version", FORMAT_VERSION + 1), "version", "newer than this ppverify reads"),
    (lambda d: d.pop("version"), "top level", "missing key 'version'"),
    (lambda d: d.pop("programs"), "top level", "missing key 'programs'"),
    (lambda d: d["costs"]["duration"].pop("W"), "costs.duration", "missing kind 'W'"),
    (lambda d: d["costs"]["duration"]["F"].pop(), "costs.duration.F", "has 3 stages; need 4"),
    (lambda d: d["costs"]["activation"].__setitem__(0, "big"), "costs.activation[0]", "expected a finite number"),
    (lambda d: d["costs"]["freed_by_I"].__setitem__(0, 2.0), "costs.freed_by_I[0]", "<= 1.0"),
    (lambda d: d.__setitem__("params", {"x": {"y": 1}}), "params.x", "JSON scalars or lists"),
    (lambda d: d.__setitem__("table", {"grid": [["0F0"]]}), "table.grid", "has 1 rows (one per device); need 4"),
    (
        lambda d: d.__setitem__("table", {"grid": [["0F0"], [], [], ["3Q0"]]}),
        "table.grid[3][0]",
        "'3Q0' is not an action",
    ),
    (
        lambda d: d.__setitem__("table", {"tick": 1, "grid": [["0F1"], ["1F0"], ["2F0"], ["3F0"]]}),
        "table.grid[0]",
        "disagrees with programs[0]: its op #0 is 0F1, the program's is 0F0",
    ),
    (lambda d: d.__setitem__("placement", [[0, 1, 2, 3]]), "placement", "expected a JSON object, got a list"),
]


@pytest.mark.parametrize("mut,location,rule", BAD, ids=[b[1] + ":" + b[2][:20] for b in BAD])
def test_malformed_documents_name_location_and_rule(mut, location, rule):
    with pytest.raises(ScheduleFileError) as err:
        document_from_dict(mutate(mut), "bad.json")
    assert err.value.path == "bad.json"
    assert err.value.location == location
    assert rule in err.value.rule
    assert str(err.value).startswith(f"bad.json: {location}: ")


def test_two_pipes_need_pipe_of_mb():
    d = schedule_to_dict(build("chimera", p=2, m=2))
    del d["pipe_of_mb"]
    with pytest.raises(ScheduleFileError, match="missing key 'pipe_of_mb'"):
        schedule_from_dict(d, "c.json")


def test_invalid_json_names_line_and_column(tmp_path):
    # the missing comma is at line 3, column 3 (1-based), where "p" starts
    path = tmp_path / "broken.json"
    path.write_text('{\n  "format": "ppverify-schedule"\n  "p": 2\n}\n')
    with pytest.raises(ScheduleFileError) as err:
        load_json(path)
    assert err.value.location == "line 3 column 3"
    assert "invalid JSON: Expecting ',' delimiter" in err.value.rule


@pytest.mark.parametrize(
    "text,rule",
    [
        ('{"m": 1, "m": 2}', "appears twice"),
        ('{"m": NaN}', "NaN is not valid JSON"),
        ("[1, 2]", "expected a JSON object, got a list"),
        ("", "invalid JSON"),
    ],
)
def test_other_json_level_errors(text, rule):
    with pytest.raises(ScheduleFileError, match=rule):
        loads_document(text, "x.json")


def test_unreadable_files(tmp_path):
    with pytest.raises(ScheduleFileError, match="file not found"):
        read_json(tmp_path / "none.json")
    bad = tmp_path / "latin.json"
    bad.write_bytes(b'{"comment": "caf\xe9"}')
    with pytest.raises(ScheduleFileError, match="not UTF-8 text"):
        read_json(bad)


def test_errors_are_ppverify_errors():
    assert issubclass(ScheduleFileError, PPVerifyError)


def test_table_grid_value():
    t = TableGrid(0.5, (("0F0", "0F0"), (None,)))
    assert t.ticks == 2


# --------------------------------------------------------------------------- fuzz: never a traceback

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-3, 10)
    | st.floats(-1, 10, allow_nan=False)
    | st.text(max_size=6)
    | st.sampled_from(["0F0", "1B1", "(0F0;1B0)OVERLAP_F_B", "F", "B"]),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=4), children, max_size=3),
    max_leaves=8,
)


def paths(obj, prefix=()):
    yield prefix
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from paths(v, prefix + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from paths(v, prefix + (i,))


@given(st.data())
@settings(max_examples=150, deadline=None)
def test_any_corruption_is_a_located_file_error_or_loads(data):
    d = valid()
    d["table"] = {"tick": 1.0, "grid": [list(r) for r in table_grid_of(schedule_from_dict(d)).cells]}
    all_paths = [p for p in paths(d) if p]
    where = data.draw(st.sampled_from(all_paths))
    target = d
    for k in where[:-1]:
        target = target[k]
    if data.draw(st.booleans()) and isinstance(target, dict):
        del target[where[-1]]
    else:
        target[where[-1]] = data.draw(json_values)
    try:
        document_from_dict(json.loads(json.dumps(d)), "f.json")
    except ScheduleFileError as exc:
        assert str(exc).startswith("f.json: ")
