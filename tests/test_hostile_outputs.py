"""Every format against log text and file names written to attack whoever reads the output.

Two ways in: a run directory on disk (hostile file names, hostile lines, a `--config` outside the run directory)
through the whole pipeline, and a Report built through the library API with hostile text in every field (what
read time neutralises cannot reach the formats that way, so they must be safe on their own). For every format:
no control character (an OSC 52 clipboard write, a window title, BEL, BS, CR), no line that starts a GitHub
Actions workflow command unless triage means it and no legacy `##[command]` anywhere, and each format still valid for its consumer: SARIF against
the 2.1.0 schema with format checking (a `uri` must be a URI reference), JUnit against Jenkins' XSD, GitLab Code
Quality against GitLab's schema, Markdown tables whole in a GFM renderer, HTML without markup from the log.
"""

from __future__ import annotations

import json
import re
from urllib.parse import unquote

import jsonschema
import pytest
import xmlschema
from markdown_it import MarkdownIt
from realcases import ROOT
from test_sarif import SCHEMA as SARIF_SCHEMA

from triage.analyze import Settings, analyze
from triage.model import Evidence, Finding, Knob, LogFile, Report, Timeline
from triage.report import FORMATS, RenderOptions, render

OSC52 = "\x1b]52;c;ZWNobyBwd25lZA==\x07"
TITLE = "\x1b]0;pwned title\x07"
HOSTILE = (f"{OSC52}{TITLE}bell\x07 back\x08space \x1b[2J\x1b[31mred\x1b[0m \x9b31m c1-csi ::error::injected "
           "`tick` ``two`` | pipe <script>alert(1)</script> </pre> ##[error]old ##[stop-commands]tok "
           "\u202eevil\u202c \u2028sep")
OOM = "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB. "
NAMES = ["a b.log", "100%25 done.log", "12:30:01.log", "a|b.log", "new\nline.log", "ünï—cödé.log",
         "::error::name.log", "#x?y.log", "##[warning]name.log"]

# C0 except tab and LF, DEL, C1, line/paragraph separators, bidi controls: none may leave triage raw
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
INTENDED = re.compile(r"^::(error|warning|notice) (file=[^,]*,line=\d+,)?title=[^:]*::")
JUNIT_XSD = xmlschema.XMLSchema(str(ROOT / "tests" / "schemas" / "junit-10.xsd"))
GITLAB_SCHEMA = json.loads((ROOT / "tests" / "schemas" / "gitlab-codeclimate.json").read_text())
GFM = MarkdownIt("commonmark", {"html": False}).enable(["table", "strikethrough"])


@pytest.fixture(scope="module")
def disk_report(tmp_path_factory: pytest.TempPathFactory) -> Report:
    base = tmp_path_factory.mktemp("hostile")
    run = base / "run"
    run.mkdir()
    for name in NAMES:
        (run / name).write_text(f"step 1 ok\n{OOM}{HOSTILE}\n::error::a whole line as a command\n"
                                f"  ::warning file=x::indented\nERROR {HOSTILE}\n", encoding="utf-8")
    outside = base / "elsewhere"
    outside.mkdir()
    config = outside / "run.yaml"
    config.write_text("inference.max_context_length: 16384\ninference.max_response_length: 512\n"
                      "miles.rollout_max_prompt_len: 16384\n")
    return analyze(Settings(paths=[str(run)], config=config))


def api_report() -> Report:
    """A report whose every text field is hostile, as a library user could build one."""
    ev = Evidence(f"dir/{NAMES[4]}", 3, HOSTILE)
    f = Finding(rule="trainer.cuda-oom", category="trainer-oom", severity="error", title=f"OOM {HOSTILE}", count=2,
                evidence=[ev, Evidence("/abs/outside/run.yaml", 4, HOSTILE), Evidence("../up/x.log", 5, HOSTILE)],
                knobs=[Knob("trainer.micro_batch_size", ["--micro-batch-size"], HOSTILE, f"x.log:3 {HOSTILE}")],
                not_knobs=[HOSTILE, {"memory or length knobs": "not a capacity problem", "__line__": 16}],  # type: ignore[list-item]
                explain=f"::error::{HOSTILE}\n::warning::second line", first=ev, last=ev, fingerprint="ab12cd34ef56ab12cd34")
    w = Finding(rule="other.nccl", category="other", severity="warning", title=HOSTILE,
                evidence=[Evidence("/abs/outside/run.yaml", 1, HOSTILE)], fingerprint="ff12cd34ef56ab12cd34",
                known=True, baseline={"reason": HOSTILE, "ticket": HOSTILE, "expires": None})
    g = Finding(rule="generation.cap", category="generation-tail", severity="info", title=HOSTILE,
                evidence=[Evidence("::error::x.log", 1, HOSTILE)], fingerprint="ee12cd34ef56ab12cd34")
    timeline = Timeline(source=f"engine {HOSTILE}", file="dir/e.log", kind="engine", x=[1, 2, 3],
                        series={f"token usage {HOSTILE}": [0.1, 0.5, 1.0]}, marks=[{"line": 2, "label": HOSTILE}], rows=3)
    return Report(version="0", root=f"run {HOSTILE}", findings=[f, g, w],
                  files=[LogFile(path="x", rel=f"dir/{NAMES[4]}", kind="trainer", reason=HOSTILE),
                         LogFile(path="y", rel=HOSTILE, kind="text", status="skipped", reason=HOSTILE)],
                  config={"trainer.micro_batch_size": {"value": HOSTILE, "source": HOSTILE}},
                  errors=[HOSTILE], timelines=[timeline])


def outputs(report: Report) -> dict[str, str]:
    return {fmt: render(fmt, report, RenderOptions(verbose=True, width=100_000)) for fmt in FORMATS}


def test_the_disk_run_finds_the_oom_in_every_hostile_file(disk_report: Report) -> None:
    oom = next(f for f in disk_report.findings if f.rule == "trainer.cuda-oom")
    assert oom.count == len(NAMES)
    config = next(f for f in disk_report.findings if f.rule == "config.prompt-plus-response-over-context")
    assert config.evidence[0].file.endswith("/elsewhere/run.yaml")  # absolute: the case the formats must handle


def rendered(fmt: str, source: str, disk_report: Report) -> str:
    report = disk_report if source == "disk" else api_report()
    # the text report hard-wraps only on a terminal (the CLI decides the width); in a CI log it is not wrapped
    return render(fmt, report, RenderOptions(verbose=True, width=100_000))


@pytest.mark.parametrize("source", ["disk", "api"])
@pytest.mark.parametrize("fmt", FORMATS)
def test_no_control_character(fmt: str, source: str, disk_report: Report) -> None:
    text = rendered(fmt, source, disk_report)
    assert not CONTROL.search(text), repr(CONTROL.search(text))
    if source == "api":  # a report built through the API: the formats show the sequence (JSON doubles the \\)
        assert "\\x1b]52;c;ZWNobyBwd25lZA==\\x07" in text.replace("\\\\", "\\")
    else:  # read from disk: the line reader removed the whole OSC sequence (input/read.py)
        assert "]52;c;" not in text


MATRIX = [(fmt, source) for fmt in FORMATS for source in ("disk", "api")]


@pytest.mark.parametrize(("fmt", "source"), MATRIX)
def test_no_line_starts_a_workflow_command_triage_did_not_mean(fmt: str, source: str, disk_report: Report) -> None:
    for line in rendered(fmt, source, disk_report).split("\n"):
        if fmt == "github" and INTENDED.match(line):
            continue
        start = line.lstrip()  # the runner trims white space before it looks for `::`
        assert not start.startswith("::"), repr(line)
        assert "##[" not in line, repr(line)  # the legacy form is obeyed anywhere in a line


@pytest.mark.parametrize("fmt", ["sarif", "github", "gitlab"])
def test_ci_formats_publish_no_path_outside_the_run_directory(fmt: str, disk_report: Report) -> None:
    text = render(fmt, disk_report, RenderOptions())
    assert "elsewhere" not in text and "../" not in text
    if fmt == "github":  # the config finding: no file=, its knobs' source named by the file's name
        (line,) = [x for x in text.split("\n") if "config.prompt-plus-response-over-context" in x]
        assert line.startswith("::error title=prompt-budget%3A ")
        assert "(--rollout-max-prompt-len; from config run.yaml:3)" in line


def test_github_annotates_each_live_finding_once_and_nothing_else() -> None:
    text = render("github", api_report(), RenderOptions())
    commands = [line for line in text.split("\n") if line.lstrip().startswith("::")]
    assert [line.split(" ", 1)[0] for line in commands] == ["::error", "::notice"]  # the known one is not annotated
    assert all(INTENDED.match(line) for line in commands)
    # a file outside the run directory gets no file=, one inside keeps its path (escaped as a property)
    assert commands[0].startswith("::error file=dir/new\\x0aline.log,line=3,title=")
    assert commands[1].startswith("::notice file=./%3A%3Aerror%3A%3Ax.log,line=1,title=")


@pytest.mark.parametrize("source", ["disk", "api"])
def test_sarif_is_schema_valid_with_format_checking(source: str, disk_report: Report) -> None:
    report = disk_report if source == "disk" else api_report()
    doc = json.loads(render("sarif", report, RenderOptions()))
    checker = jsonschema.FormatChecker()
    assert "uri-reference" in checker.checkers  # rfc3986-validator installed: the format is really checked
    jsonschema.validate(doc, SARIF_SCHEMA, format_checker=checker)
    run = doc["runs"][0]
    locations = [r["locations"][0]["physicalLocation"]["artifactLocation"] for r in run["results"] if r["locations"]]
    locations += [a["location"] for a in run["artifacts"]]
    for loc in locations:
        assert checker.conforms(loc["uri"], "uri-reference"), loc
        assert not re.match(r"^[a-z][a-z0-9+.-]*:", loc["uri"], re.I) and not loc["uri"].startswith(("/", "../"))
        assert loc["uriBaseId"] in run["originalUriBaseIds"]
    assert "automationDetails" not in run


def test_sarif_uris_decode_to_the_file_names(disk_report: Report) -> None:
    doc = json.loads(render("sarif", disk_report, RenderOptions()))
    run = doc["runs"][0]
    uris = {unquote(a["location"]["uri"]): a["location"] for a in run["artifacts"]}
    for name in NAMES:
        # discover prints a control character in a name visibly; the formats show a legacy `##[` visibly
        shown = name.replace("\n", "\\n").replace("##[", "#\\x23[")
        assert uris[shown]["uriBaseId"] == "RUNROOT", name
    assert uris["a b.log"]["uri"] == "a%20b.log"
    assert uris["100%25 done.log"]["uri"] == "100%2525%20done.log"
    assert uris["12:30:01.log"]["uri"] == "12%3A30%3A01.log"
    assert uris["ünï—cödé.log"]["uri"] == "%C3%BCn%C3%AF%E2%80%94c%C3%B6d%C3%A9.log"
    assert uris["#x?y.log"]["uri"] == "%23x%3Fy.log"
    assert uris["#\\x23[warning]name.log"]["uri"] == "%23%5Cx23%5Bwarning%5Dname.log"
    # the config outside the run directory: its own base, its name only, the absolute path nowhere
    assert uris["run.yaml"]["uriBaseId"] == "EXTERNAL_1"
    assert "EXTERNAL_1" in run["originalUriBaseIds"]
    assert "/elsewhere/" not in json.dumps(uris)
    config = next(r for r in run["results"] if r["ruleId"] == "config.prompt-plus-response-over-context")
    assert config["locations"][0]["physicalLocation"]["artifactLocation"] == {"uri": "run.yaml", "uriBaseId": "EXTERNAL_1"}
    assert config["partialFingerprints"]["primaryLocationLineHash"] == config["partialFingerprints"]["triage/v1"]


def test_sarif_category_sets_the_automation_id() -> None:
    doc = json.loads(render("sarif", api_report(), RenderOptions(sarif_category="nightly/engine")))
    assert doc["runs"][0]["automationDetails"] == {"id": "nightly/engine/"}
    jsonschema.validate(doc, SARIF_SCHEMA, format_checker=jsonschema.FormatChecker())


@pytest.mark.parametrize("source", ["disk", "api"])
def test_junit_is_valid_against_the_jenkins_xsd(source: str, disk_report: Report) -> None:
    report = disk_report if source == "disk" else api_report()
    JUNIT_XSD.validate(render("junit", report, RenderOptions()))


@pytest.mark.parametrize("source", ["disk", "api"])
def test_gitlab_issues_are_valid_and_paths_stay_in_the_run_directory(source: str, disk_report: Report) -> None:
    report = disk_report if source == "disk" else api_report()
    issues = json.loads(render("gitlab", report, RenderOptions()))
    assert issues
    for issue in issues:
        jsonschema.validate(issue, GITLAB_SCHEMA)
        path = issue["location"]["path"]
        assert not path.startswith(("/", "../")) and "/../" not in path, path
    paths = {i["location"]["path"] for i in issues}
    assert ("run.yaml" in paths) if source == "disk" else ("dir/new\\x0aline.log" in paths)


@pytest.mark.parametrize("source", ["disk", "api"])
def test_markdown_tables_stay_whole_and_log_text_stays_text(source: str, disk_report: Report) -> None:
    report = disk_report if source == "disk" else api_report()
    text = render("markdown", report, RenderOptions())
    tables: list[list[int]] = []  # per table, each row's cell count
    for t in GFM.parse(text):
        if t.type == "table_open":
            tables.append([])
        elif t.type == "tr_open":
            tables[-1].append(0)
        elif t.type in ("th_open", "td_open"):
            tables[-1][-1] += 1
    assert tables and all(len(set(rows)) == 1 for rows in tables), tables
    html = GFM.render(text)
    assert "<script>" not in html and "</pre>" not in html.replace("</code></pre>", "")


@pytest.mark.parametrize("source", ["disk", "api"])
def test_html_holds_no_markup_from_the_log(source: str, disk_report: Report) -> None:
    report = disk_report if source == "disk" else api_report()
    page = render("html", report, RenderOptions())
    assert "<script" not in page
    assert page.count("</pre>") == page.count("<pre>")
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_rule_data_read_as_a_mapping_prints_as_the_sentence_it_was() -> None:
    for fmt, text in outputs(api_report()).items():
        assert "__line__" not in text, fmt
        if fmt not in ("json", "gitlab"):  # JSON keeps the data; GitLab's issue has no knob text
            assert "memory or length knobs: not a capacity problem" in text, fmt
