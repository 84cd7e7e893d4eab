"""The HTML pages the API writes (``html=``, ``x=``): the page the command
line writes for the same arguments, opening on the axis asked for."""

import json
import re
import subprocess

import pytest

import memgate

AXES = ["auto", "entries", "time"]


def page_data(path):
    """The page's embedded data document (what its charts are drawn from)."""
    text = path.read_text(encoding="utf-8")
    found = re.search(r'id="memgate-data">(.*?)</script>', text, re.S)
    assert found, f"{path}: no memgate-data element"
    return json.loads(found.group(1))


def calls(examples):
    snap0 = examples / "snapshots" / "rank0.pickle"
    snap1 = examples / "snapshots" / "rank1.pickle"
    return {
        "profile": (
            lambda html, x: memgate.profile(snap0, html=html, x=x),
            ["profile", "--format=json", str(snap0)],
        ),
        "diff": (
            lambda html, x: memgate.diff(snap0, snap1, html=html, x=x),
            ["diff", "--format=json", str(snap0), str(snap1)],
        ),
        "check": (
            lambda html, x: memgate.check(config=examples / "memgate.toml", html=html, x=x),
            ["check", f"--config={examples / 'memgate.toml'}"],
        ),
    }


@pytest.mark.parametrize("command", ["profile", "diff", "check"])
@pytest.mark.parametrize("x", AXES)
def test_the_page_opens_on_the_axis_asked_for_as_the_command_lines(examples, memgate_bin, tmp_path, command, x):
    api, cli = calls(examples)[command]
    ours, theirs = tmp_path / "api.html", tmp_path / "cli.html"
    api(ours, x)
    subprocess.run([memgate_bin, *cli, f"--html={theirs}", f"--x={x}"], capture_output=True, check=False)
    assert theirs.is_file(), f"the command line wrote no page for {cli}"
    mine = page_data(ours)
    assert mine["x"] == x
    # Everything on the page is the command line's, the axis included.
    assert mine == page_data(theirs)


def test_every_axis_changes_the_page_and_the_default_is_auto(examples, tmp_path):
    snap = examples / "snapshots" / "rank0.pickle"
    pages = {}
    for x in AXES:
        pages[x] = tmp_path / f"{x}.html"
        memgate.profile(snap, html=pages[x], x=x)
    default = tmp_path / "default.html"
    memgate.profile(snap, html=default)
    assert [page_data(pages[x])["x"] for x in AXES] == AXES
    assert page_data(default) == page_data(pages["auto"])


@pytest.mark.parametrize("x", ["clock", "Time", "", None, 1])
def test_an_axis_that_is_not_one_of_the_three_is_refused(examples, tmp_path, x):
    with pytest.raises(memgate.MemgateError) as e:
        memgate.profile(examples / "snapshots" / "rank0.pickle", html=tmp_path / "p.html", x=x)
    assert e.value.exit_code == 2 and "x:" in e.value.message
    assert not (tmp_path / "p.html").exists()


@pytest.mark.parametrize("command", ["profile", "diff", "check"])
def test_an_axis_without_a_page_is_refused_not_ignored(examples, command):
    api, _ = calls(examples)[command]
    with pytest.raises(memgate.MemgateError) as e:
        api(None, "time")
    assert e.value.exit_code == 2 and "html=" in e.value.message
    # "auto" is the default, which asks for nothing.
    api(None, "auto")
