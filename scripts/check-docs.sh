#!/usr/bin/env bash
# Checks that the documentation stands on its own: README.md, docs/*.md and
# the comments of every .rs file may only point inside the repository.
#
# It fails (exit 1, one line per problem: file:line: what) on
#  * a reference to files a clone does not have: the design notes and
#    papers kept next to the repository while it was written (`DESIGN.md`,
#    `papers/…`, `../shared/…`) or an absolute path on some machine;
#  * a Markdown link whose target leaves the repository, is absolute, does
#    not exist, or names an anchor that the target page has no heading for;
#  * a path in backticks that names a file of the repository (`docs/…`,
#    `crates/…`, `scripts/…`, `src/…`, `tests/…`, `.ci/…`) that does not exist.
# Links to web pages (http, https, mailto) are not fetched.
#
# Usage: bash scripts/check-docs.sh [ROOT]   (default: this repository)
set -euo pipefail
root="${1:-$(cd "$(dirname "$0")/.." && pwd)}"

exec python3 - "$root" <<'PY'
import os
import re
import subprocess
import sys

root = os.path.realpath(sys.argv[1])

# Files a clone of the repository does not have. Named here once, so that the
# check itself is the only place they appear.
FORBIDDEN = [
    (re.compile(r"\bDESIGN\.md\b"), "the design notes are not in the repository; link to docs/"),
    (re.compile(r"(^|[^\w.-])\.\./shared\b|(^|[\s`(])shared/(papers|reference|DESIGN)"),
     "../shared is outside the repository; link to docs/"),
    (re.compile(r"\bpapers/[\w.-]*"), "the papers are not in the repository; cite them as docs/algorithms.md does"),
    (re.compile(r"[\w-]+\.txt\b(?=[`')\s,.;]|$)"), "a .txt file outside the repository; cite the paper instead"),
    (re.compile(r"(^|[\s`(\"'])/(work|home|tmp|Users|root)/"), "an absolute path on one machine"),
    (re.compile(r"file://"), "a file:// link"),
]
# Code spans starting with these name files of the repository.
REPO_PREFIXES = ("docs/", "crates/", "scripts/", "src/", "tests/", ".ci/")
URL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.I)  # http:, https:, mailto:, chrome:
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
SPAN = re.compile(r"(`+)(.+?)\1")

problems = []


def report(path, line, message):
    problems.append(f"{os.path.relpath(path, root)}:{line}: {message}")


def listed_files():
    """Tracked and new (not ignored) files; a plain walk outside git."""
    try:
        out = subprocess.run(
            ["git", "-C", root, "ls-files", "--cached", "--others", "--exclude-standard"],
            check=True, capture_output=True, text=True,
        ).stdout.split("\n")
        return [os.path.join(root, f) for f in out if f and os.path.exists(os.path.join(root, f))]
    except (OSError, subprocess.CalledProcessError):
        found = []
        for d, dirs, files in os.walk(root):
            dirs[:] = [x for x in dirs if x not in ("target", ".git", ".tools", "node_modules", "dist")]
            found += [os.path.join(d, f) for f in files]
        return found


def slug(heading):
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to '-'."""
    text = re.sub(r"`|\*\*|__", "", heading.strip()).lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


anchors_cache = {}


def anchors(path):
    if path not in anchors_cache:
        seen, out, fenced = {}, set(), False
        with open(path, encoding="utf-8") as f:
            for line in f:
                if line.lstrip().startswith("```"):
                    fenced = not fenced
                    continue
                m = None if fenced else re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
                if m:
                    s = slug(m.group(1))
                    n = seen.get(s, 0)
                    seen[s] = n + 1
                    out.add(s if n == 0 else f"{s}-{n}")
        anchors_cache[path] = out
    return anchors_cache[path]


def inside(path):
    return path == root or path.startswith(root + os.sep)


def check_link(path, line, target):
    if URL.match(target):
        return
    if "::" in target:  # a rustdoc intra-doc link (crate::simulator)
        return
    file_part, _, anchor = target.partition("#")
    if file_part.startswith("/"):
        report(path, line, f"link `{target}` is an absolute path; use a path relative to this file")
        return
    dest = os.path.realpath(os.path.join(os.path.dirname(path), file_part)) if file_part else path
    if not inside(dest):
        report(path, line, f"link `{target}` points outside the repository")
        return
    if not os.path.exists(dest):
        report(path, line, f"link `{target}`: {os.path.relpath(dest, root)} does not exist")
        return
    if anchor and dest.endswith(".md") and anchor not in anchors(dest):
        report(path, line, f"link `{target}`: {os.path.relpath(dest, root)} has no heading #{anchor}")


def check_span(path, line, span):
    word = span.strip().split()[0] if span.strip() else ""
    word = word.rstrip(".,;:")
    if not word.startswith(REPO_PREFIXES) or any(c in word for c in "*…{}<>$"):
        return
    word = word.split("#")[0].split(":")[0]
    dest = os.path.realpath(os.path.join(root, word))
    if not inside(dest) or not os.path.exists(dest):
        report(path, line, f"`{word}` names a file of the repository that does not exist")


def check_text(path, line, text):
    for pattern, why in FORBIDDEN:
        m = pattern.search(text)
        if m:
            found = m.group(0).strip(" `(/\"'")
            report(path, line, f"`{found}`: {why}")


def check_markdown(path, lines, links=True):
    fenced = False
    for n, text in lines:
        check_text(path, n, text)
        if text.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if fenced:
            continue
        if links:
            for m in LINK.finditer(text):
                check_link(path, n, m.group(1))
        for m in SPAN.finditer(text):
            check_span(path, n, m.group(2))


files = listed_files()
this = os.path.realpath(os.path.join(root, "scripts", "check-docs.sh"))
markdown = [f for f in files if f.endswith(".md") and
            (os.path.dirname(f) == root or os.path.relpath(f, root).startswith("docs" + os.sep))]
rust = [f for f in files if f.endswith(".rs")]
checked = 0
for f in sorted(markdown):
    with open(f, encoding="utf-8") as fh:
        check_markdown(f, list(enumerate(fh.read().split("\n"), 1)))
    checked += 1
for f in sorted(rust):
    with open(f, encoding="utf-8") as fh:
        comments = []
        for n, text in enumerate(fh.read().split("\n"), 1):
            s = text.lstrip()
            if s.startswith("//"):
                # Doc comments are Markdown (rustdoc); plain comments only
                # must not point outside the repository.
                body = re.sub(r"^//[/!]?", "", s)
                if s.startswith(("///", "//!")):
                    comments.append((n, body))
                else:
                    check_text(f, n, body)
        check_markdown(f, comments)
    checked += 1
for f in sorted(x for x in files if x.endswith((".sh", ".toml")) and os.path.realpath(x) != this):
    with open(f, encoding="utf-8") as fh:
        for n, text in enumerate(fh.read().split("\n"), 1):
            if text.lstrip().startswith("#"):
                check_text(f, n, text)
    checked += 1

if problems:
    print("\n".join(problems))
    print(f"check-docs: {len(problems)} problem(s) in the documentation", file=sys.stderr)
    sys.exit(1)
print(f"check-docs: {checked} files, every link and path stays inside the repository")
PY
