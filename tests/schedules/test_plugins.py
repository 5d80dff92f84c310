"""Families from outside ppverify: one module file registers a family; installed packages add
theirs through the entry-point group ``ppverify.families``; a broken plugin costs one warning line.

The family is the manual's example (``eager-1f1b``, docs/your-own-schedule.md): 1F1B with ``extra``
more warm-up forwards, so device d holds ``min(p - d + extra, m)`` activations (1F1B holds
``min(p - d, m)``) and ``extra = 0`` is 1F1B itself. Each check runs in a fresh process, so the
registry of the test process never sees these families.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path


def make_dist(site: Path, name: str, entry_points: dict[str, str], modules: dict[str, str]) -> None:
    """An installed distribution as ``pip`` leaves it: modules plus ``NAME.dist-info`` metadata."""
    site.mkdir(parents=True, exist_ok=True)
    for mod, source in modules.items():
        (site / f"{mod}.py").write_text(source)
    info = site / f"{name.replace('-', '_')}-0.1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1.0\n")
    lines = "".join(f"{k} = {v}\n" for k, v in entry_points.items())
    (info / "entry_points.txt").write_text(f"[ppverify.families]\n{lines}")


def test_a_family_is_one_module_file(tmp_path: Path, eager_family_source: str, small_grid) -> None:
    # the module, imported in a fresh interpreter, is all it takes: build, registry and checks see it
    (tmp_path / "my_schedules.py").write_text(eager_family_source)
    grid = [(p, m) for p, m in small_grid if p <= 5]
    script = textwrap.dedent(f"""
        import my_schedules
        from ppverify.core.dag import structural_problems
        from ppverify.engines import run
        from ppverify.core.costs import CostModel
        from ppverify.engines.formulas import formula_for
        from ppverify.schedules import build, families, get_family
        assert "eager-1f1b" in [f.name for f in families()]
        assert [p.name for p in get_family("eager-1f1b").params] == ["extra"]
        for p, m in {grid!r}:
            assert build("eager-1f1b", p, m, extra=0).programs == build("1f1b", p, m).programs
            for extra in (1, 2):
                s = build("eager-1f1b", p, m, extra=extra)
                assert not structural_problems(s), (p, m, extra)
                t = run(s, CostModel.abstract(s.placement, F=1, B=1), semantics="async")
                want = [min(p - d + extra, m) for d in range(p)]
                assert t.peak_memory().tolist() == want, (p, m, extra, t.peak_memory(), want)
                # its closed form, in the same file: 1F1B's (m+p-1)(tF+tB) at F=1, B=2, the peaks above
                f = formula_for("eager-1f1b", p, m, {{"F": 1, "B": 2}}, extra=extra)
                slot = run(s, CostModel.abstract(s.placement, F=1, B=2), semantics="slot").makespan
                assert f.exact and f.makespan == slot == (m + p - 1) * 3 and list(f.peak_activations) == want
        print("ok")
    """)
    proc = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr


def test_entry_point_family_is_listed_verified_and_exported(
    tmp_path: Path, eager_family_source: str, ppverify_cli
) -> None:
    site = tmp_path / "site"
    family_object = textwrap.dedent("""
        from ppverify.schedules import Family, build

        # registered by ppverify from the entry point (this module does not call register)
        FAMILY = Family("gpipe-again", lambda p, m: build("gpipe", p, m), "GPipe under another name")
    """)
    make_dist(
        site,
        "my-schedules",
        {"eager-1f1b": "my_schedules", "gpipe-again": "fam_object:FAMILY"},
        {"my_schedules": eager_family_source, "fam_object": family_object},
    )

    listed = ppverify_cli("list", pythonpath=site)
    assert listed.returncode == 0 and listed.stderr == "", listed.stderr
    names = [line.split()[0] for line in listed.stdout.splitlines()[2:] if line and not line.startswith(" ")]
    assert "eager-1f1b" in names and "gpipe-again" in names and "gpipe" in names

    # device 0 of eager 1F1B at p=4, extra=1 holds p + 1 = 5 activations: a cap of 5 holds, 4 does not
    ok = ppverify_cli("verify", "eager-1f1b", "-p", "4", "-m", "8", "--memory-cap", "5", pythonpath=site)
    assert ok.returncode == 0 and ok.stdout.startswith("VALID: eager-1f1b p=4 m=8"), ok.stdout + ok.stderr
    tight = ppverify_cli("verify", "eager-1f1b", "-p", "4", "-m", "8", "--memory-cap", "4", pythonpath=site)
    assert tight.returncode == 1 and "device 0 holds 5 activations" in tight.stdout, tight.stdout
    again = ppverify_cli("verify", "gpipe-again", "-p", "3", "-m", "2", pythonpath=site)
    assert again.returncode == 0 and again.stdout.startswith("VALID"), again.stdout + again.stderr

    out = tmp_path / "e.csv"
    exported = ppverify_cli("export", "eager-1f1b", "-p", "2", "-m", "3", "-o", str(out), pythonpath=site)
    assert exported.returncode == 0, exported.stderr
    # device 0: min(2 - 0 + 1, 3) = 3 forwards first; device 1: 2 forwards, then B0 F2 B1 B2
    assert out.read_text() == "0F0,0F1,0F2,0B0,0B1,0B2\n1F0,1F1,1B0,1F2,1B1,1B2\n"


def test_a_broken_plugin_is_one_warning_line(tmp_path: Path, ppverify_cli) -> None:
    site = tmp_path / "site"
    make_dist(
        site,
        "broken-plugins",
        {"missing": "no_such_module_here", "raises": "raising", "clash": "clash:FAMILY"},
        {
            "raising": "raise RuntimeError('boom\\nsecond line')\n",
            "clash": "from ppverify.schedules import Family, build\n"
            "FAMILY = Family('gpipe', lambda p, m: build('1f1b', p, m), 'not GPipe')\n",
        },
    )
    listed = ppverify_cli("list", pythonpath=site)
    assert listed.returncode == 0, listed.stderr
    warnings = listed.stderr.splitlines()
    assert len(warnings) == 3 and all(w.startswith("ppverify: warning: schedule family plugin ") for w in warnings)
    assert any("'missing' (no_such_module_here)" in w and "ModuleNotFoundError" in w for w in warnings)
    assert any("'raises'" in w and "RuntimeError: boom second line" in w for w in warnings)
    assert any("'clash'" in w and "registered twice" in w for w in warnings)
    # every built-in family still works, and the clash did not replace GPipe
    shown = ppverify_cli("show", "gpipe", "-p", "2", "-m", "1", "--no-table", pythonpath=site)
    # GPipe at the default costs F=1, B=2: (m + p - 1)(tF + tB) = 2 * 3
    assert shown.returncode == 0 and "makespan      6 units" in shown.stdout, shown.stdout
