"""A proved timing claim prints its unit on both numbers, T as typed and the witness by the same
rule, and ``verify --json`` says the unit in ``time_unit``.

With presets the costs are seconds while ``simulate`` prints ms: ``--makespan-le 380`` was proved
for a 379.860 ms step with no unit printed (a claim 1000x too loose). And ``--costs F=0.1,B=0.2
--makespan-le 3.3`` printed "makespan <= 3.2999999999999998 ... (witness finishes at
3.3000000000000003)": the bound below its witness, for a claim that holds.
"""

from __future__ import annotations

import json
from fractions import Fraction

from ppverify.cli import main
from ppverify.verify.timing import claim_texts


def _timing_line(argv, capsys):
    code = main(argv)
    line = next(ln.strip() for ln in capsys.readouterr().out.splitlines() if "timing:" in ln)
    return code, line


def test_abstract_claim_prints_t_as_typed_and_units(capsys):
    # by hand: 1F1B p=4 m=8 at F=0.1, B=0.2 takes (m + p - 1)(F + B) = 11 * 0.3 = 3.3 exactly
    code, line = _timing_line(
        ["verify", "1f1b", "-p", "4", "-m", "8", "--costs", "F=0.1,B=0.2", "--makespan-le", "3.3"], capsys
    )
    assert code == 0
    assert line.startswith("proved  timing: makespan <= 3.3 units under costs F=0.1,B=0.2")
    assert line.endswith("(witness finishes at 3.3 units)")


def test_preset_claim_prints_seconds(capsys):
    argv = ["verify", "chimera", "-p", "4", "-m", "8", "--system", "pcie-gen4", "--model", "gpt3-1.3b"]
    # simulate prints this step as 379.860 ms; 380 read as seconds holds, and now says so
    code, line = _timing_line([*argv, "--makespan-le", "380"], capsys)
    assert code == 0 and "makespan <= 380 s under" in line and line.endswith("(witness finishes at 0.37986 s)")
    code, line = _timing_line([*argv, "--makespan-le", "0.38"], capsys)
    assert code == 0 and "makespan <= 0.38 s under" in line
    code, _ = _timing_line([*argv, "--makespan-le", "0.3798"], capsys)  # below 379.860 ms
    assert code == 1


def test_json_says_the_time_unit(capsys):
    base = ["verify", "1f1b", "-p", "2", "-m", "2", "--json"]
    assert main([*base, "--costs", "F=1,B=2", "--makespan-le", "9"]) == 0
    assert json.loads(capsys.readouterr().out)["time_unit"] == "units"
    argv = [*base, "--system", "pcie-gen4", "--model", "gpt3-1.3b", "--makespan-le", "10"]
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out)["time_unit"] == "s"


def test_help_says_seconds_with_presets(capsys):
    try:
        main(["verify", "--help"])
    except SystemExit:
        pass
    text = " ".join(capsys.readouterr().out.split())
    assert "T is in the costs' unit: seconds with presets" in text


def test_claim_texts_never_print_the_bound_below_the_witness():
    # equal exact values print alike, whatever floats the sums made
    assert claim_texts(3.3, Fraction(33, 10), " units") == ("3.3 units", "3.3 units")
    # a finish below the bound prints below it, with the digits that tell them apart
    assert claim_texts(6, Fraction(59999999, 10**7)) == ("6", "5.9999999")
    assert claim_texts(6.0000008, Fraction(6)) == ("6.0000008", "6")
    # six significant digits when they suffice: 379.85957 ms is 0.379860 s
    assert claim_texts(0.38, Fraction(37985957, 10**8), " s") == ("0.38 s", "0.37986 s")


def _refutation(argv, capsys) -> tuple[str, dict]:
    assert main(argv) == 1
    line = next(ln.strip() for ln in capsys.readouterr().out.splitlines() if "timing:" in ln)
    assert main([*argv, "--json"]) == 1
    return line, json.loads(capsys.readouterr().out)["violations"][0]


def test_a_refuted_abstract_claim_prints_units(capsys):
    # by hand: 1F1B p=2 m=2 at F=1, B=2 takes (m + p - 1)(F + B) = 3 x 3 = 9 units, so 8 is refuted
    # (it printed "finishes by 8 under ... earliest finish is 9" with no unit)
    argv = ["verify", "1f1b", "-p", "2", "-m", "2", "--costs", "F=1,B=2", "--makespan-le", "8"]
    line, violation = _refutation(argv, capsys)
    assert line.startswith("VIOLATED timing: no execution of these programs finishes by 8 units under costs F=1,B=2")
    assert (
        "program order longer than 8 units; for reference the earliest finish is 9 units) [makespan <= 8 units;" in line
    )
    assert violation["rule"] == "makespan <= 8 units"


def test_a_refuted_preset_claim_prints_seconds(capsys):
    # presets time in seconds (docs/verification.md: "T is in the costs' unit: seconds with
    # presets"); a 1 ms claim for a GPT-3 1.3B step is refuted in seconds, every number with its s
    argv = ["verify", "1f1b", "-p", "2", "-m", "4", "--system", "dgx-h100", "--model", "gpt3-1.3b"]
    line, violation = _refutation([*argv, "--makespan-le", "0.001"], capsys)
    assert "finishes by 0.001 s under costs gpt3-1.3b" in line
    assert "longer than 0.001 s; for reference the earliest finish is " in line
    assert line.split("earliest finish is ")[1].split(")")[0].endswith(" s")
    assert violation["rule"] == "makespan <= 0.001 s"


def test_a_refuted_claim_in_exponent_range_reads_apart_from_its_finish(capsys):
    # docs/verification.md: "A bound and a finish are printed with as many digits as tell them
    # apart". 1F1B p=2 m=2 takes (m + p - 1)(F + B) = 3 x 3e6 = 9,000,000 units; the claim 8,999,999
    # is refuted, and must not print as "9e+06" beside a finish of "9e+6"
    from ppverify.cli import main

    assert main(["verify", "1f1b", "-p", "2", "-m", "2", "--costs", "F=1e6,B=2e6", "--makespan-le", "8999999"]) == 1
    out = capsys.readouterr().out
    assert "finishes by 8999999 units" in out and "the earliest finish is 9000000 units" in out
