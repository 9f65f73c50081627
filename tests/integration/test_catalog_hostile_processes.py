"""The tests of tests/unit/test_catalog_hostile.py that start processes (git, a runner, a
supervisor): the integration tier, as the unit tier starts none (tests/conftest.py)."""

from __future__ import annotations

import json

from tests.unit.test_catalog_hostile import cli, fifo, plant_everything, project


def test_list_run_and_doctor_do_not_hang_on_planted_definitions() -> None:
    folder = plant_everything()
    listed = cli("list")
    assert listed.returncode == 0, listed.stderr
    assert "echo" in listed.stdout
    problems = [line for line in listed.stderr.splitlines() if "not a regular file" in line]
    assert len(problems) == 4, listed.stderr
    assert f"{folder / 'fifo.specialist.yaml'}: is a FIFO (named pipe)" in listed.stderr
    ran = cli("run", "echo", "--prompt", "hello")
    assert ran.returncode == 0, ran.stderr
    assert "hello" in ran.stdout
    doctor = cli("doctor", "--json")
    assert "Traceback" not in doctor.stderr
    assert sum("not a regular file" in p for p in json.loads(doctor.stdout)["problems"]) == 4


def test_doctor_reports_a_fifo_config_and_goes_on() -> None:
    config = project() / ".specialists" / "config.toml"
    config.parent.mkdir(exist_ok=True)
    fifo(config)
    plant_everything()
    doctor = cli("doctor")
    assert f"config: {config}: is a FIFO (named pipe)" in doctor.stdout
    assert "specialists: 11 loaded" in doctor.stdout, doctor.stdout
    assert "Traceback" not in doctor.stderr
