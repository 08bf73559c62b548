"""Parsers do work in proportion to their text, on real captured outputs made long and on
hostile shapes. Held without a clock (the speed itself is bench/parse_speed.py's): fio's
decoder is counted — it is given the text itself, never a copy of its rest, and the
characters it goes over add up to the text's length at most — and each text pattern is
given a hostile line, where a pattern that goes back over what it read would take a
quadratic number of steps: the shapes are long enough that it would not end within the
test run's time, and short for a linear one."""

import json
import multiprocessing
from pathlib import Path

import pytest

from harness.errors import BadInput
from workloads import iozone
from workloads.fio import json_output, text_output

TOOLS = Path(__file__).parent.parent / "data" / "tools"
SEED = Path(__file__).parent.parent / "data" / "seed"
STATUS = (TOOLS / "fio-3.33-status-interval-jsonplus.json").read_text()


@pytest.fixture
def decoded(monkeypatch):
    """Every call of the JSON decoder's raw_decode: (given the text itself, characters gone over)."""
    calls: list[tuple[str, int, int]] = []
    original = json.JSONDecoder.raw_decode

    def spy(self, s, idx=0):
        try:
            doc, end = original(self, s, idx)
        except json.JSONDecodeError as exc:
            calls.append((s, idx, exc.pos))
            raise
        calls.append((s, idx, end))
        return doc, end

    monkeypatch.setattr(json.JSONDecoder, "raw_decode", spy)
    return calls


def test_fio_status_interval_documents_are_decoded_in_place_once(decoded):
    text = STATUS * 50  # (300 documents, one after another as --status-interval prints them)
    docs = json_output._json_documents(text)
    assert len(docs) == 300 and docs[-1]["jobs"][0]["job_runtime"] == 5000
    assert all(s is text for s, _, _ in decoded), "a document was decoded from a copy of the text"
    assert sum(reached - idx for _, idx, reached in decoded) <= len(text)


def test_fio_text_cut_short_is_gone_over_a_bounded_number_of_times(decoded):
    """fio killed while it printed its last document: the rest is read once more at most
    for each line of it that opens an object, and never from a copy."""
    text = STATUS * 10 + STATUS[:len(STATUS) // 20]  # (cut in its first document)
    docs = json_output._json_documents(text)
    assert len(docs) == 60
    assert all(s is text for s, _, _ in decoded)
    assert sum(reached - idx for _, idx, reached in decoded) <= 2 * len(text)


def test_fio_lines_that_open_structures_and_never_close_them_are_refused_in_bounded_work(decoded):
    """Each line opens an object and an array the next line is inside of, none closed: each
    is read to the end of the text and refused, and the text is refused after 33 of them."""
    text = STATUS + '{"a": [\n' * 300 + "0,\n" * 50000
    with pytest.raises(BadInput, match="more than 32 lines open a JSON document that is not one"):
        json_output._json_documents(text)
    assert all(s is text for s, _, _ in decoded)
    assert sum(reached - idx for _, idx, reached in decoded) <= 34 * len(text)


@pytest.mark.parametrize("cut_after", ['"jobs" : [', '"jobs" : [\n    {', '"read" : {', '"jobname" :'])
def test_a_document_cut_short_does_not_swallow_the_next_one(cut_after):
    """fio killed while it printed, then run again into the same log (or the final document
    after an interval's broken one): the decoder reads the cut one on into the next, as if
    that were a value of it; the next one is still found, and the final figures are its
    own, not an interval's (before: an interval's lat_mean stood as the final, 13 % off)."""
    docs = json_output._json_documents(STATUS)
    second = STATUS.index("\n{", 1) + 1  # (the second document: an interval's, cut in it)
    at = STATUS.index(cut_after, second) + len(cut_after)
    cut = STATUS[:at] + "\n" + STATUS
    found = json_output._json_documents(cut)
    assert len(found) == len(docs) + 1 and found[-1] == docs[-1]
    assert json_output.parse(cut, source="cut.json") == json_output.parse(STATUS, source="whole.json")


@pytest.mark.parametrize("line", ["{\n", "{ not json\n", '{"\n'])
def test_fio_many_lines_that_open_json_and_break_off_are_refused(decoded, line):
    """Each refusal of the decoder counts the lines of the text up to where it stopped: a
    text of many such lines is refused after a few of them, not gone over once for each."""
    text = STATUS + line * 20000
    with pytest.raises(BadInput, match=f"hostile.txt: more than 32 lines open a JSON document that is not one "
                                       f".the first of them at line {STATUS.count(chr(10)) + 1}."):
        json_output.parse(text, source="hostile.txt")
    assert len([1 for s, idx, reached in decoded if idx >= len(STATUS)]) == 33


def test_fio_text_job_takes_its_engine_from_its_own_header_only():
    """A header line without an engine does not take the next job's (searched to the end of
    the text from each header, it did, and many such headers were quadratic)."""
    heads = text_output._text_heads("a: (g=0): rw=read, bs=(R) 4096B-4096B\n"
                                    "b: (g=0): rw=write, bs=(R) 4096B-4096B, (W) 4096B-4096B, (T) 4096B-4096B, "
                                    "ioengine=libaio, iodepth=64\n")
    assert "ioengine" not in heads["a"][0] and "iodepth" not in heads["a"][0]
    assert heads["b"][0]["ioengine"] == "libaio" and heads["b"][0]["iodepth"] == 64


# hostile lines for the text patterns (each 400 KB, the latency one 3 MB): a pattern that goes back over what
# it read takes minutes to hours on them (a line of 80 KB of the first took 72 s); a linear
# one well under a second, so a minute is room enough on a loaded machine
HOSTILE = {
    "a line of non-word characters": "-\n" * 200_000,
    "one line of dots": "." * 400_000,
    "lines of braces": "{\n" * 200_000,
    "a latency line without commas": "j: (groupid=0, jobs=1)\n read: IOPS=1, BW=1B/s\n" + "lat (usec): min=" * 200_000,
    "a percentile line of digits": "j: (groupid=0, jobs=1)\n read: IOPS=1, BW=1B/s\nclat percentiles (usec)\n"
                                   + "1" * 400_000,
}
WITHIN = 60.0


def finishes(parse, text: str) -> bool:
    """Whether ``parse(text)`` ends (with records or BadInput) within WITHIN seconds, in a
    process of its own that is ended if it does not."""
    context = multiprocessing.get_context("fork")
    worker = context.Process(target=_parse_quietly, args=(parse, text))
    worker.start()
    worker.join(WITHIN)
    if worker.is_alive():
        worker.kill()
        worker.join()
        return False
    return worker.exitcode == 0


def _parse_quietly(parse, text: str) -> None:
    try:
        parse(text, source="hostile.txt")
    except BadInput as exc:
        assert "hostile.txt" in exc.message


@pytest.mark.parametrize("shape", HOSTILE)
def test_fio_text_patterns_do_not_go_back_over_a_hostile_line(shape):
    assert finishes(json_output.parse, HOSTILE[shape])
