"""``ppverify report`` without a browser: what an op waited for, results files (good, truncated,
from another version), the page's data and self-containment, the CLI.

Expected waits are derived by hand from the async semantics (transfer = fixed delay, op starts when
its device is free and its inputs have arrived); the browser tests are in test_report_browser.py.
"""

from __future__ import annotations

import dataclasses
import json
import re

import pandas as pd
import pytest
from hypothesis import given, reject, settings
from hypothesis import strategies as st

from ppverify.cli import main
from ppverify.core.comm import FixedDelay
from ppverify.core.costs import CostModel
from ppverify.core.errors import ParameterError, ScheduleFileError
from ppverify.engines import run
from ppverify.report import load_results
from ppverify.report.page import page_data, render_html
from ppverify.report.payload import canonical_ops, op_waits, timeline_payload
from ppverify.report.study import config_of_row, study_from_rows
from ppverify.schedules import build

ARGS = [
    "--schedules",
    "gpipe,1f1b",
    "-p",
    "2",
    "-m",
    "2",
    "--costs",
    "F=1,B=2",
    "--comm-delay",
    "0.5",
    "--levels",
    "slot,async",
    "--no-progress",
    "--no-verify",
]


def test_waits_gpipe_by_hand():
    # gpipe p=2 m=2, F=1 B=2, delay 0.5. Device 0: 0F0 [0,1], 0F1 [1,2] (device busy). Device 1:
    # 1F0 at 1.5 (0F0's activation in flight), 1F1 at 2.5 = both 1F0's end and 0F1's arrival
    # (input wins ties), 1B0 [3.5,5.5] after 1F1 (device busy), 1B1 [5.5,7.5] (device busy).
    # Device 0: 0B0 at 6 (1B0's gradient arrives 5.5 + 0.5), 0B1 at 8 = 0B0's end = 1B1's arrival.
    s = build("gpipe", p=2, m=2)
    tl = run(s, CostModel.abstract(s.placement, F=1, B=2), FixedDelay(0.5), semantics="async")
    got = {str(op): (float(tl.start[i]), code) for i, (op, code) in enumerate(zip(tl.ops, op_waits(tl)[0]))}
    assert got == {
        "0F0": (0.0, 0),
        "0F1": (1.0, 1),
        "1F0": (1.5, 2),
        "1F1": (2.5, 2),
        "1B0": (3.5, 1),
        "1B1": (5.5, 1),
        "0B0": (6.0, 2),
        "0B1": (8.0, 2),
    }


@settings(max_examples=25, deadline=None)
@given(
    fam=st.sampled_from(["gpipe", "1f1b", "1f1b-split", "interleaved-1f1b"]),
    p=st.sampled_from([2, 4]),
    m=st.integers(1, 6),
    delay=st.sampled_from([0.0, 0.5, 2.0]),
    sem=st.sampled_from(["async", "contention", "slot"]),
)
def test_wait_reason_explains_the_start(fam, p, m, delay, sem):
    """Whatever the reason code, the thing named ended exactly when the op started."""
    try:
        s = build(fam, p=p, m=m)
    except ParameterError:
        # a size the family refuses (interleaved-1f1b p=2 m=5: m not a multiple of p); any other
        # error fails. Rejected, not passed: hypothesis fails the test if nothing is ever built
        reject()
    tl = run(
        s,
        CostModel.abstract(s.placement, F=1, B=2),
        FixedDelay(delay),
        semantics=sem,
        **({"charge_comm": True} if sem == "slot" else {}),
    )
    codes, refs = op_waits(tl)
    for i, (c, r) in enumerate(zip(codes, refs)):
        if c == 0:
            assert tl.start[i] == 0
        elif c in (1, 3):
            assert tl.end[r] == pytest.approx(tl.start[i])
            assert (tl.device[r] == tl.device[i]) == (c == 1) or c == 3
        elif c == 2:
            assert tl.transfers.end[r] == pytest.approx(tl.start[i]) and tl.transfers.dst_op[r] == i
        else:
            assert c == 4 and tl.start[i] > 0


def test_payload_lists_every_op_once_per_level():
    s = build("1f1b-split", p=3, m=4)
    ops = canonical_ops(s)
    expected = sorted(f"{st_}{k}{mb}" for st_ in range(3) for mb in range(4) for k in "FIW")
    assert sorted(map(str, ops)) == expected
    pl = timeline_payload(run(s, semantics="async"), ops)
    assert sorted(pl["o"]) == list(range(len(ops)))


def _write_csv(tmp_path):
    out = tmp_path / "r.csv"
    assert main(["compare", *ARGS, "--out", str(out)]) == 0
    return out


def test_from_csv_round_trip(tmp_path):
    f = _write_csv(tmp_path)
    df = load_results(f)
    assert len(df) == 2 * 2 and set(df["level"]) == {"slot", "async"}
    st_ = study_from_rows(df)
    assert [(p.schedule, list(p.levels)) for p in st_.points] == [
        ("gpipe", ["slot", "async"]),
        ("1f1b", ["slot", "async"]),
    ]
    # slot makespan with a per-column hop charge: (m+p-1)(tF+tB+2c) = 3 * 4 = 12
    assert st_.points[0].levels["slot"]["makespan"] == 12.0


def test_from_jsonl_and_json(tmp_path, capsys):
    f = _write_csv(tmp_path)
    rows = pd.read_csv(f).drop(columns=["rank", "rank_change", "gap_to_bound", "optimum_peak"])
    jl = tmp_path / "r.jsonl"
    jl.write_text(
        "".join(
            json.dumps({k: (None if pd.isna(v) else v) for k, v in r.items()}) + "\n"
            for r in rows.to_dict(orient="records")
        )
    )
    assert load_results(jl)["rank"].tolist() == load_results(f)["rank"].tolist()
    js = tmp_path / "r.json"
    capsys.readouterr()
    assert main(["compare", *ARGS, "--json"]) == 0  # the --json form: an object with rows
    js.write_text(capsys.readouterr().out)
    assert load_results(js)["makespan"].tolist() == load_results(f)["makespan"].tolist()


@pytest.mark.parametrize("suffix,cut,row", [(".csv", -30, "row 5"), (".jsonl", -30, "row 4")])
def test_truncated_file_names_file_and_row(tmp_path, suffix, cut, row):
    f = _write_csv(tmp_path)
    if suffix == ".jsonl":
        rows = pd.read_csv(f)
        text = "".join(
            json.dumps({k: (None if pd.isna(v) else v) for k, v in r.items()}) + "\n"
            for r in rows.to_dict(orient="records")
        )
        f = tmp_path / "r.jsonl"
    else:
        text = f.read_text()
    f.write_text(text[:cut])
    with pytest.raises(ScheduleFileError, match=rf"^{re.escape(str(f))}: {row}: .*trunc"):
        load_results(f)


def test_other_version_and_bad_field(tmp_path, capsys):
    f = _write_csv(tmp_path)
    df = pd.read_csv(f)
    df.drop(columns=["level"]).to_csv(tmp_path / "old.csv", index=False)
    capsys.readouterr()
    assert main(["report", "--from", str(tmp_path / "old.csv"), "-o", str(tmp_path / "x.html")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "old.csv: row 1 (header): missing column(s) level" in err
    df["makespan"] = df["makespan"].astype(object)
    df.loc[2, "makespan"] = "fast"
    df.to_csv(tmp_path / "bad.csv", index=False)
    with pytest.raises(ScheduleFileError, match=r"bad.csv: row 4: makespan='fast' is not a number"):
        load_results(tmp_path / "bad.csv")


@pytest.mark.parametrize(
    "extra",
    [
        ["-p", "4"],
        ["--schedules", "gpipe"],
        ["--costs", "F=1,B=1"],
        ["--memory-cap", "2"],
        ["--findings"],
        ["--measured"],
        ["--no-verify"],
        ["--out", "x.csv"],
        ["--json"],
    ],
)
def test_from_refuses_what_only_a_run_reads(tmp_path, capsys, extra):
    # these choose what a comparison runs; with --from the rows are the file's, so they were ignored
    f = _write_csv(tmp_path)
    capsys.readouterr()
    assert main(["report", "--from", str(f), *extra, "-o", str(tmp_path / "x.html")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert f"parameter {extra[0]}=" in err and "with --from the rows are" in err
    assert not (tmp_path / "x.html").exists()


def test_report_refuses_report_and_a_schedule_file(tmp_path, capsys):
    # --report is compare's; this command writes -o (it silently wrote ppverify-report.html instead)
    assert main(["report", *ARGS, "--report", str(tmp_path / "a.html")]) == 2
    assert "give -o " in capsys.readouterr().err
    sched = tmp_path / "s.json"
    assert main(["show", "1f1b", "-p", "2", "-m", "2", "--save", str(sched)]) == 0
    capsys.readouterr()
    assert main(["report", "--from", str(sched), "-o", str(tmp_path / "b.html")]) == 2
    err = capsys.readouterr().err
    assert "a schedule file, not results" in err and "ppverify report --schedules FILE" in err
    # the route it names works
    assert main(["report", "--schedules", str(sched), "-p", "2", "-m", "2", "-o", str(tmp_path / "c.html")]) == 0


def test_a_fractional_rank_is_refused_naming_its_row(tmp_path):
    # found by scripts/fuzz.py: a rank of 1.5 reached pandas' integer cast (exit 3)
    f = _write_csv(tmp_path)
    df = pd.read_csv(f)
    df["rank"] = df["rank"].astype(float)
    df.loc[0, "rank"] = 1.5
    df.to_csv(tmp_path / "rank.csv", index=False)
    with pytest.raises(ScheduleFileError, match=r"rank.csv: row 2: rank=.?1\.5.? is not an integer in 1..1e\+12"):
        load_results(tmp_path / "rank.csv")


def test_cli_report_from_file_and_compare_report(tmp_path, capsys):
    f = _write_csv(tmp_path)
    capsys.readouterr()
    out = tmp_path / "s.html"
    assert main(["report", "--from", str(f), "-o", str(out)]) == 0
    assert capsys.readouterr().out.strip() == f"report written to {out} (4 rows, 2 charted points, 32 ops)"
    out2 = tmp_path / "c.html"
    assert main(["compare", *ARGS, "--report", str(out2)]) == 0
    assert capsys.readouterr().out.strip().splitlines()[-1].startswith(f"report written to {out2} (2 charted points")
    assert main(["compare", *ARGS, "--report", str(tmp_path / "s.pdf")]) == 2


def test_page_is_self_contained(tmp_path):
    f = _write_csv(tmp_path)
    page = render_html(study_from_rows(load_results(f)))
    assert "<script src" not in page and "<link" not in page and "@import" not in page
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page)
    data = json.loads(page.split('type="application/json">')[1].split("</script>")[0])
    assert {r["schedule"] for r in data["rows"]} == {"gpipe", "1f1b"}


@pytest.mark.parametrize("cfg", ["p=4 m=8 F=1,B=2 c=0.5", "p=4 m=8 dgx-h100 gpt3-13b mfu=0.5 tp=2"])
def test_config_rebuilt_from_row(cfg):
    parts = cfg.split()
    system, model = (f"comm-delay={parts[3][2:]}", parts[2]) if "c=" in cfg else (parts[2], parts[3])
    row = {"config": cfg, "p": 4, "m": 8, "system": system, "model": model}
    assert config_of_row(row).label == cfg


def test_page_data_keeps_any_level(tmp_path):
    """A level the report does not know (``measured``) still shows with its own semantics."""
    f = _write_csv(tmp_path)
    df = load_results(f)
    extra = df[df["level"] == "async"].assign(level="measured", semantics="measured")
    d = page_data(study_from_rows(pd.concat([df, extra], ignore_index=True)))
    assert d["levels"]["measured"] == "measured" and list(d["levels"])[-1] == "measured"


def test_findings_map_images(tmp_path, capsys):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    f = _write_csv(tmp_path)
    maps = tmp_path / "plots"
    maps.mkdir()
    for key in ("chimera", "hanayo"):
        fig = plt.figure(figsize=(1, 1))
        fig.savefig(maps / f"findings-map-{key}.png")
        plt.close(fig)
    out = tmp_path / "m.html"
    assert main(["report", "--from", str(f), "--findings-map", str(maps), "-o", str(out)]) == 0
    data = json.loads(out.read_text().split('type="application/json">')[1].split("</script>")[0])
    assert [m["name"] for m in data["findings_maps"]] == ["findings-map-chimera", "findings-map-hanayo"]
    assert all(m["src"].startswith("data:image/png;base64,iVBORw0KGgo") for m in data["findings_maps"])
    (tmp_path / "x.png").write_text("not a png")
    capsys.readouterr()
    assert main(["report", "--from", str(f), "--findings-map", str(tmp_path / "x.png"), "-o", str(out)]) == 2
    assert "x.png: not a PNG image" in capsys.readouterr().err
    # a whole map cut in half (a copy interrupted) starts like a PNG but lacks its closing IEND chunk
    whole = (maps / "findings-map-chimera.png").read_bytes()
    (tmp_path / "cut.png").write_bytes(whole[: len(whole) // 2])
    assert main(["report", "--from", str(f), "--findings-map", str(tmp_path / "cut.png"), "-o", str(out)]) == 2
    assert "cut.png: a PNG image cut short" in capsys.readouterr().err


def test_data_block_holds_no_markup_whatever_the_title(tmp_path):
    """A title holding "<!--<script>" (or "</script>") must not reach the JSON data block raw: after
    "<!--<script" the HTML parser would not end the block at its own "</script>", and the page
    script would never run. The block keeps no "<" at all and still reads back the exact title."""
    f = _write_csv(tmp_path)
    title = 'A "quoted" </script><script>alert(1)</script> & <!--<script> title'
    page = render_html(dataclasses.replace(study_from_rows(load_results(f)), title=title))
    block = page.split('<script id="ppverify-data" type="application/json">')[1].split("</script>")[0]
    assert "<" not in block
    assert json.loads(block)["title"] == title
    # the visible title is escaped text: the page holds exactly the two script elements it wrote
    assert page.count("<script") == 2 and "<title>A &quot;quoted&quot; &lt;/script&gt;" in page
