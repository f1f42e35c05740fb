"""The self-assessment as data (build_report) and as markdown (report_markdown): what kata
report prints and the room's Report shows."""

from __future__ import annotations

import collections
from typing import Callable

from graders.core import registry
from graders.core.catalogue import MISTAKES, mistake
from graders.core.i18n import _, translate
from graders.core.registry import Kata
from graders.core.results import ALL_PASSED, CORE_PASSED, FAILING, NOT_STARTED, shown
from graders.practice.common import (IDLE_GAP_S, best_status, countdown, duration, hint_level,
                                     iso, mock_result, progress_line, progress_words,
                                     track_heading, tracks)
from graders.practice import review
from graders.practice.words import review_reason_word
from graders.practice.workspace import Workspace


def kata_summary(state: dict, kata: Kata, status_now: str) -> dict:
    attempts = [a for a in state["attempts"] if a["kata"] == kata.name]
    seen = collections.Counter(slug for a in attempts for slug in dict.fromkeys(a.get("slugs") or []))
    revealed = state["revealed"].get(kata.name)
    return {
        "kata": kata.name,
        "title": kata.title,
        "track": kata.track,
        "status": status_now,  # the file as it stands: what `kata list` shows
        "best_status": best_status(state, kata),  # the best any graded attempt reached
        "attempts": len(attempts),
        "time_s": round(float(state["time"].get(kata.name, {}).get("total_s", 0.0)), 1),
        "hints_used": hint_level(state, kata),
        "hints_total": len(kata.hints),
        "solution_revealed": revealed["at"] if isinstance(revealed, dict) else None,
        "mistakes": dict(seen.most_common()),
        "recurring_mistakes": [slug for slug, count in seen.most_common() if count >= 2],
    }


def practise_next(summaries: list[dict], state: dict, room: bool = False) -> list[dict]:
    """What to work on, most useful first: mistakes that keep coming back, katas still
    failing, solutions seen but not yet written alone, follow-ups left, then new katas.
    No mistake names and no hint for the kata of a running mock interview. ``room``: the
    advice in the practice room's words (its buttons), not the commands'."""
    passed_mocks = {m["kata"] for m in state["mocks"] if m.get("outcome") == ALL_PASSED}
    in_mock = (state["mock"] or {}).get("kata")
    buckets: list[list[dict]] = [[] for _bucket in range(5)]
    for s in summaries:
        status, recurring = s["best_status"], s["recurring_mistakes"]
        if status != ALL_PASSED and recurring:
            slug = recurring[0]
            if s["kata"] == in_mock:  # a mock names no mistake and gives no hint
                buckets[0].append({"kata": s["kata"], "reason": _(
                    "{status}; its recurring mistakes are hidden while its mock interview runs.",
                    status=shown(status))})
                continue
            hint = mistake(slug, registry.get(s["kata"]).id).hint if slug in MISTAKES else ""
            reason = _("{status}, and [{slug}] keeps coming back ({count} attempts).",
                       status=shown(status), slug=slug, count=s["mistakes"][slug])
            buckets[0].append({"kata": s["kata"], "reason": f"{reason} {translate(hint)}".strip()})
        elif status == FAILING:
            buckets[1].append({"kata": s["kata"], "reason": _("failing: Hint may help") if room
                               else _("failing: kata hint may help")})
        elif s["solution_revealed"] and s["kata"] not in passed_mocks:
            buckets[2].append({"kata": s["kata"], "reason": _(
                "you saw the solution: write it alone, timed (Start a mock)") if room else _(
                "you saw the solution: write it alone, timed (kata mock {id})", id=s["kata"][:2])})
        elif status == CORE_PASSED:
            buckets[3].append({"kata": s["kata"], "reason": _("core passed: the follow-ups are left")})
        elif status == NOT_STARTED:
            buckets[4].append({"kata": s["kata"], "reason": shown(NOT_STARTED)})
    return [item for bucket in buckets for item in bucket]


def build_report(app: Workspace, announce: Callable[[str], None]) -> dict:
    """The self-assessment as data. Progress counts every kata's status now, exactly as
    `kata list` does (a file changed since it was last graded is graded, ``announce``
    saying so); each kata's best status over all its attempts is reported beside it."""
    state = app.store.read()
    now = {kata.name: app.status_now(state, kata, "report", announce)[0] for kata in registry.KATAS}
    state = app.store.read()  # with the attempts just graded
    summaries = [kata_summary(state, kata, now[kata.name]) for kata in registry.KATAS]
    return {
        "generated": iso(app.clock()),
        "progress": progress_line(now),
        "tracks": [track for track in ({"track": key, "title": title,
                                        "katas": [k.name for k in registry.KATAS if k.track == key]}
                                       for key, title in registry.TRACKS.items())
                   if track["katas"]],  # a track with no kata yet is left out, as in kata list
        "katas": summaries,
        "mocks": state["mocks"],
        "mock_running": (state["mock"] or {}).get("kata"),  # its mistakes are not named
        "practise_next": practise_next(summaries, state, room=app.front_end == "room"),
        "reviews": [{"kata": r.kata.name, "due": r.due.isoformat(), "step": r.step,
                     "reasons": list(r.reasons), "started": r.started,
                     "is_due": r.is_due(review.day(app.clock()))}
                    for r in review.schedule(state)],
        "recurring": [{"slug": r.slug, "katas": [k.name for k in r.katas], "lesson": r.lesson}
                      for r in review.recurring_mistakes(state)],
    }


def report_markdown(report: dict, room: bool = False) -> str:
    """The report as markdown; ``room``: its advice in the practice room's words."""
    lines = [_("# Attention katas: self-assessment ({time})",
               time=report["generated"].replace("T", " ")), "",
             _("{progress}.", progress=report["progress"]), "",
             _("_Status now: your file as it stands (as on the home page); best: the best any of "
               "your graded attempts reached._") if room else
             _("_Status now: your file as it stands (as in `kata list`); best: the best any of "
               "your graded attempts reached._")]
    summaries = {s["kata"]: s for s in report["katas"]}
    for title, members in tracks(k for k in registry.KATAS if k.name in summaries):
        lines += ["", f"## {track_heading(title, members)}", "",
                  _("| kata | status now | best | attempts | time | hints | solution seen | "
                    "recurring mistakes |"),
                  "|---|---|---|---|---|---|---|---|"]
        for s in (summaries[k.name] for k in members):
            recurring = ", ".join(f"`{slug}` ×{s['mistakes'][slug]}" for slug in s["recurring_mistakes"])
            if recurring and s["kata"] == report.get("mock_running"):
                recurring = _("(hidden during the mock)")
            seen = _("yes") if s["solution_revealed"] else _("no")
            lines.append(f"| {s['kata']} | {progress_words(s['status'])} | "
                         f"{shown(s['best_status'])} | {s['attempts']} "
                         f"| {duration(s['time_s'])} | {s['hints_used']}/{s['hints_total']} | "
                         f"{seen} | {recurring or '-'} |")
    if report["mocks"]:
        lines += ["", _("## Mock interviews"), "",
                  _("| kata | started | time taken | result |"), "|---|---|---|---|"]
        for m in report["mocks"]:
            taken = _("{taken} of {allowed}", taken=countdown(m["taken_s"]),
                      allowed=countdown(m["minutes"] * 60))
            lines.append(f"| {m['kata']} | {m['started'].replace('T', ' ')} | {taken} | "
                         f"{mock_result(m)} |")
    if report.get("reviews"):
        lines += ["", _("## Reviews"), "",
                  _("_A kata comes back for review when it passed only after hints or the "
                    "solution, when a mistake recurred in it, or when a mock of it ran out of "
                    "time; passing a review unaided spaces the next one out ({days} days)._",
                    days=", ".join(str(d) for d in review.SCHEDULE_DAYS)), "",
                  _("| kata | due | reviews passed unaided in a row | why |"), "|---|---|---|---|"]
        for r in report["reviews"]:
            when = _("{date} (due now)", date=r["due"]) if r["is_due"] else r["due"]
            lines.append(f"| {r['kata']} | {when} | {r['step']} | "
                         f"{', '.join(review_reason_word(w) for w in r['reasons'])} |")
    if report.get("recurring"):
        lines += ["", _("## Mistakes across katas"), ""]
        for r in report["recurring"]:
            lines.append("- " + _("`[{slug}]` in {katas}: revisit {lesson}", slug=r["slug"],
                                  katas=", ".join(k[:2] for k in r["katas"]), lesson=r["lesson"]))
    lines += ["", _("## What to practise next"), ""]
    if report["practise_next"]:
        lines += [f"{n}. " + _("{kata}: {reason}", kata=f"**{item['kata']}**", reason=item["reason"])
                  for n, item in enumerate(report["practise_next"], start=1)]
    else:
        lines.append(_("Every kata passes. Keep them fresh with timed mocks: Start a mock.") if room
                     else _("Every kata passes. Keep them fresh with timed mocks: `kata mock`."))
    lines.append("")
    lines.append(_("_Time counts the minutes between your actions on a kata; a pause of more than "
                   "{minutes} minutes counts as a break._", minutes=IDLE_GAP_S // 60))
    return "\n".join(lines)
