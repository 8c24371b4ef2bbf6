//! The repository's documents hold together, so that a reader who follows
//! any reference lands somewhere real:
//!
//! - every citation of a section of the protocol or of the rules
//!   (`docs/protocol.md §N`, `docs/rules.md §N.M`, ranges like `§2–3`)
//!   names a numbered heading of that file — or, for `§6.2.1`, the numbered
//!   item 1 under the heading `6.2` — and every `ARCHITECTURE.md, invariant
//!   N` one of its numbered invariants;
//! - nothing cites the specifications by the names they have outside the
//!   repository any more (the upper-case `.md` files beside the checkout):
//!   a reader of a clone has only the repository's own documents;
//! - every relative link of every tracked Markdown file reaches a file or
//!   folder of the repository and, with a `#fragment`, a heading (by
//!   GitHub's anchor rules) or an explicit anchor of its target;
//! - no Markdown file leaves a code block open, and the README stays at
//!   most 150 lines;
//! - `CONTRIBUTING.md`'s crate table has a row for every workspace member.
//!
//! Each test names every offence it finds, not only the first.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn workspace_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The old names of the specifications, spelled so that this file does not
/// cite them itself.
const OLD_NAMES: [&str; 3] = [concat!("PROTOCOL", ".md"), concat!("RULES", ".md"), concat!("DESIGN", ".md")];

/// Where an old name may stay: the known-answer vectors are a verbatim copy
/// of the specification's, and the vocabulary of errors and the changelog
/// say what the old names were.
fn old_name_allowed(path: &str, line: &str) -> bool {
    path.starts_with("tests/vectors/")
        || path == "CHANGELOG.md"
        || (path == "docs/errors.md" && line.contains("old file name"))
}

/// The repository's files, as git tracks them (so nothing a build or a test
/// run left behind is read). Without git — a source archive — every file
/// under the workspace but the build's and the tools' own folders.
fn tracked_files() -> Vec<String> {
    let root = workspace_dir();
    let git = std::process::Command::new("git").arg("-C").arg(&root).args(["ls-files", "-z"]).output();
    if let Ok(output) = git
        && output.status.success()
    {
        let listed = String::from_utf8(output.stdout).expect("git ls-files gives UTF-8 paths");
        return listed.split('\0').filter(|p| !p.is_empty() && root.join(p).is_file()).map(str::to_owned).collect();
    }
    let mut files = Vec::new();
    walk(&root, &root, &mut files);
    files
}

fn walk(root: &Path, dir: &Path, files: &mut Vec<String>) {
    let skipped = [".git", "target", ".tools", "node_modules", "data"];
    for entry in std::fs::read_dir(dir).expect("a readable folder") {
        let path = entry.expect("a folder entry").path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        if path.is_dir() {
            if !skipped.contains(&name) {
                walk(root, &path, files);
            }
        } else {
            let relative = path.strip_prefix(root).expect("under the root");
            files.push(relative.to_string_lossy().replace('\\', "/"));
        }
    }
}

/// The text files among the tracked ones (a binary file is not read).
fn text_files() -> Vec<(String, String)> {
    let root = workspace_dir();
    tracked_files()
        .into_iter()
        .filter_map(|path| std::fs::read_to_string(root.join(&path)).ok().map(|text| (path, text)))
        .collect()
}

// ---------------------------------------------------------------------------
// Markdown: headings, anchors, code.
// ---------------------------------------------------------------------------

/// The lines of a Markdown text outside fenced code blocks, with their
/// numbers (from 1).
fn prose_lines(text: &str) -> Vec<(usize, &str)> {
    let mut fence: Option<&str> = None;
    let mut lines = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        let marker = ["```", "~~~"].into_iter().find(|m| trimmed.starts_with(m));
        match (fence, marker) {
            (None, Some(m)) => fence = Some(m),
            (Some(open), Some(m)) if open == m => fence = None,
            (None, None) => lines.push((index + 1, line)),
            _ => {}
        }
    }
    lines
}

/// The line where a fenced code block opens and never closes: everything
/// after it would be read (and shown) as code.
fn unclosed_fence(text: &str) -> Option<usize> {
    let mut open: Option<(usize, &str)> = None;
    for (index, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        if let Some(marker) = ["```", "~~~"].into_iter().find(|m| trimmed.starts_with(m)) {
            open = match open {
                None => Some((index + 1, marker)),
                Some((_, opened)) if opened == marker => None,
                still => still,
            };
        }
    }
    open.map(|(line, _)| line)
}

/// An ATX heading's level and text (`## 2. Deriving a roll` → 2, `2.
/// Deriving a roll`).
fn heading(line: &str) -> Option<(usize, &str)> {
    let trimmed = line.trim_start();
    if line.len() - trimmed.len() > 3 {
        return None;
    }
    let level = trimmed.chars().take_while(|&c| c == '#').count();
    let rest = &trimmed[level..];
    if !(1..=6).contains(&level) || !(rest.is_empty() || rest.starts_with(' ')) {
        return None;
    }
    Some((level, rest.trim().trim_end_matches('#').trim_end()))
}

/// A dotted section number at the start of a heading's text: `6.2 …` and
/// `2. …` give `6.2` and `2`.
fn section_number(text: &str) -> Option<String> {
    let number: String = text.chars().take_while(|c| c.is_ascii_digit() || *c == '.').collect();
    let number = number.trim_end_matches('.');
    let valid = !number.is_empty() && number.split('.').all(|part| !part.is_empty());
    valid.then(|| number.to_owned())
}

/// The sections of a numbered document: every heading's number, and, for a
/// numbered list directly under a heading `6.2`, each item as `6.2.1`,
/// `6.2.2`, … (the rules cite their versions' changes that way).
fn sections(text: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut current: Option<String> = None;
    for (_, line) in prose_lines(text) {
        if let Some((_, title)) = heading(line) {
            current = section_number(title);
            if let Some(number) = &current {
                found.insert(number.clone());
            }
        } else if let Some(section) = &current {
            let item: String = line.chars().take_while(char::is_ascii_digit).collect();
            if !item.is_empty() && line[item.len()..].starts_with(". ") {
                found.insert(format!("{section}.{item}"));
            }
        }
    }
    found
}

/// A heading's text as GitHub shows it: links by their text, code, emphasis
/// and HTML as their letters.
fn rendered(title: &str) -> String {
    let mut out = String::new();
    let mut rest = title;
    while let Some(start) = rest.find('[') {
        out.push_str(&rest[..start]);
        let after = &rest[start + 1..];
        match after.find("](").and_then(|close| after[close..].find(')').map(|end| (close, close + end))) {
            Some((close, end)) => {
                out.push_str(&after[..close]);
                rest = &after[end + 1..];
            }
            None => {
                out.push('[');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    let mut text = String::new();
    let mut in_tag = false;
    for c in out.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => in_tag = false,
            _ if !in_tag => text.push(c),
            _ => {}
        }
    }
    text
}

/// GitHub's anchor of a heading: lower case, every character but letters,
/// digits, `_`, `-` and spaces dropped, spaces made `-`; a repeated one
/// gets `-1`, `-2`, … in order.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut found = BTreeSet::new();
    for (_, line) in prose_lines(text) {
        if let Some((_, title)) = heading(line) {
            let slug: String = rendered(title)
                .to_lowercase()
                .chars()
                .filter(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | ' '))
                .map(|c| if c == ' ' { '-' } else { c })
                .collect();
            let count = seen.entry(slug.clone()).or_insert(0);
            found.insert(if *count == 0 { slug.clone() } else { format!("{slug}-{count}") });
            *count += 1;
        }
        // Explicit anchors: <a id="…"> or <a name="…">.
        for attribute in ["id=\"", "name=\""] {
            let mut rest = line;
            while let Some(start) = rest.find(attribute) {
                let value = &rest[start + attribute.len()..];
                if let Some(end) = value.find('"') {
                    found.insert(value[..end].to_owned());
                }
                rest = &rest[start + attribute.len()..];
            }
        }
    }
    found
}

/// A line with its inline code spans blanked out (a link or a citation
/// shown as code is an example, not a reference of this document).
fn without_code_spans(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(start) = rest.find('`') {
        out.push_str(&rest[..start]);
        let ticks = rest[start..].chars().take_while(|&c| c == '`').count();
        let after = &rest[start + ticks..];
        match after.find(&"`".repeat(ticks)) {
            Some(end) => {
                out.push_str(&" ".repeat(ticks * 2 + end));
                rest = &after[end + ticks..];
            }
            None => {
                out.push_str(&rest[start..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

// ---------------------------------------------------------------------------
// Citations.
// ---------------------------------------------------------------------------

/// Reads a dotted number at the start of `text`: `6.2.1` of `6.2.1: …`,
/// without a trailing dot.
fn leading_number(text: &str) -> Option<&str> {
    let len = text.char_indices().find(|(_, c)| !(c.is_ascii_digit() || *c == '.')).map_or(text.len(), |(i, _)| i);
    let number = text[..len].trim_end_matches('.');
    (!number.is_empty() && number.split('.').all(|part| !part.is_empty())).then_some(number)
}

/// Every section a text cites in `file` (`docs/rules.md`): the number after
/// `§`, and for a range (`§2–3`, `§1–§4`, `§1-3`) every section in it.
fn cited_sections(text: &str, file: &str) -> Vec<(usize, String)> {
    let mut cited = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let mut rest = line;
        while let Some(start) = rest.find(file) {
            let after = rest[start + file.len()..].trim_start_matches(['`', ',']).trim_start();
            rest = &rest[start + file.len()..];
            let Some(after) = after.strip_prefix('§') else { continue };
            let Some(first) = leading_number(after) else { continue };
            cited.push((index + 1, first.to_owned()));
            let tail = &after[first.len()..];
            let range_end = ["–", "-"]
                .into_iter()
                .find_map(|dash| tail.strip_prefix(dash))
                .map(|t| t.trim_start_matches('§'))
                .and_then(leading_number);
            if let Some(end) = range_end {
                // Whole sections between the ends: §1–4 cites §2 and §3 too.
                if let (Ok(from), Ok(to)) = (first.parse::<u32>(), end.parse::<u32>()) {
                    cited.extend((from + 1..to).map(|n| (index + 1, n.to_string())));
                }
                cited.push((index + 1, end.to_owned()));
            }
        }
    }
    cited
}

/// Every invariant a text cites of the architecture: `ARCHITECTURE.md,
/// invariant 7`, `ARCHITECTURE.md's invariants 4 (…), 5 (…) and 6` (the
/// first number of a list).
fn cited_invariants(text: &str) -> Vec<(usize, u32)> {
    let mut cited = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let mut rest = line;
        while let Some(start) = rest.find("ARCHITECTURE.md") {
            rest = &rest[start + "ARCHITECTURE.md".len()..];
            let after = rest.trim_start_matches(['\'', 's', ',', '`']).trim_start();
            let after = after.strip_prefix("invariants").or_else(|| after.strip_prefix("invariant"));
            let Some(after) = after else { continue };
            if let Some(number) = leading_number(after.trim_start()).and_then(|n| n.parse().ok()) {
                cited.push((index + 1, number));
            }
        }
    }
    cited
}

/// The numbered invariants of `ARCHITECTURE.md`: under its heading
/// "Invariants", the numbered items or the numbered subheadings
/// (`### 8. A journaled roll is never abandoned`).
fn invariants(text: &str) -> BTreeSet<u32> {
    // The level of the heading "Invariants" while inside its section.
    let mut inside: Option<usize> = None;
    let mut found = BTreeSet::new();
    let numbered = |line: &str| -> Option<u32> {
        let item: String = line.chars().take_while(char::is_ascii_digit).collect();
        (!item.is_empty() && line[item.len()..].starts_with(". ")).then(|| item.parse().expect("digits"))
    };
    for (_, line) in prose_lines(text) {
        if let Some((level, title)) = heading(line) {
            let title = rendered(title);
            match inside {
                Some(section) if level > section => found.extend(numbered(title.trim())),
                _ => inside = (title.trim() == "Invariants").then_some(level),
            }
        } else if inside.is_some() {
            found.extend(numbered(line));
        }
    }
    found
}

#[test]
fn every_cited_section_is_a_heading_of_the_document_it_names() {
    let root = workspace_dir();
    let files = text_files();
    let mut offences = Vec::new();
    for document in ["docs/protocol.md", "docs/rules.md"] {
        let text = std::fs::read_to_string(root.join(document)).unwrap_or_else(|e| panic!("{document}: {e}"));
        let sections = sections(&text);
        assert!(!sections.is_empty(), "{document} has no numbered section");
        for (path, text) in &files {
            for (line, section) in cited_sections(text, document) {
                if !sections.contains(&section) {
                    offences.push(format!("{path}:{line}: {document} §{section} is not a section of {document}"));
                }
            }
        }
    }
    let architecture = std::fs::read_to_string(root.join("ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    let invariants = invariants(&architecture);
    assert_eq!(invariants, (1..=9).collect(), "ARCHITECTURE.md's section \"Invariants\" numbers them 1 to 9");
    for (path, text) in &files {
        for (line, number) in cited_invariants(text) {
            if !invariants.contains(&number) {
                offences.push(format!("{path}:{line}: ARCHITECTURE.md has no invariant {number}"));
            }
        }
    }
    assert!(offences.is_empty(), "citations of sections that do not exist:\n{}", offences.join("\n"));
}

#[test]
fn nothing_cites_the_specifications_by_their_names_outside_the_repository() {
    let mut offences = Vec::new();
    for (path, text) in text_files() {
        for (index, line) in text.lines().enumerate() {
            for name in OLD_NAMES {
                let mut rest = line;
                while let Some(start) = rest.find(name) {
                    // `docs/PROTOCOL-signatures.md` and the like are other files.
                    let before = rest[..start].chars().next_back();
                    let part_of_a_longer_name = before.is_some_and(|c| c.is_alphanumeric() || "/._-".contains(c));
                    if !part_of_a_longer_name && !old_name_allowed(&path, line) {
                        offences.push(format!("{path}:{}: {}", index + 1, line.trim()));
                    }
                    rest = &rest[start + name.len()..];
                }
            }
        }
    }
    assert!(
        offences.is_empty(),
        "cite docs/protocol.md, docs/rules.md or ARCHITECTURE.md instead:\n{}",
        offences.join("\n")
    );
}

// ---------------------------------------------------------------------------
// Links.
// ---------------------------------------------------------------------------

/// The targets of a Markdown line's links and images: `[text](target)`,
/// `![alt](<target> "title")`, and a reference definition `[x]: target`.
fn link_targets(line: &str) -> Vec<String> {
    let line = without_code_spans(line);
    let mut targets = Vec::new();
    let mut rest = line.as_str();
    while let Some(start) = rest.find("](") {
        let after = &rest[start + 2..];
        let target = if let Some(angled) = after.strip_prefix('<') {
            angled.find('>').map(|end| &angled[..end])
        } else {
            // The target ends at the first space (a title follows) or at the
            // parenthesis that closes it, nested ones counted.
            let mut depth = 0;
            let end = after.char_indices().find(|&(_, c)| match c {
                '(' => {
                    depth += 1;
                    false
                }
                ')' if depth == 0 => true,
                ')' => {
                    depth -= 1;
                    false
                }
                ' ' => true,
                _ => false,
            });
            end.map(|(i, _)| &after[..i])
        };
        if let Some(target) = target {
            targets.push(target.to_owned());
        }
        rest = after;
    }
    let trimmed = line.trim_start();
    if trimmed.starts_with('[')
        && let Some(close) = trimmed.find("]:")
        && let Some(target) = trimmed[close + 2..].split_whitespace().next()
    {
        targets.push(target.trim_start_matches('<').trim_end_matches('>').to_owned());
    }
    targets
}

/// Where a relative link of the file at `from` points, inside the
/// repository, or `None` when it leaves it.
fn resolve(from: &str, target: &str) -> Option<String> {
    let mut parts: Vec<&str> = if let Some(absolute) = target.strip_prefix('/') {
        absolute.split('/').collect()
    } else {
        let mut parts: Vec<&str> = from.split('/').collect();
        parts.pop();
        parts.extend(target.split('/'));
        parts
    };
    let mut resolved: Vec<&str> = Vec::new();
    for part in parts.drain(..) {
        match part {
            "" | "." => {}
            ".." => {
                resolved.pop()?;
            }
            _ => resolved.push(part),
        }
    }
    Some(resolved.join("/"))
}

fn percent_decoded(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(byte) = text.get(i + 1..i + 3).and_then(|hex| u8::from_str_radix(hex, 16).ok())
        {
            out.push(byte);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[test]
fn every_relative_link_of_every_markdown_file_resolves() {
    let root = workspace_dir();
    let tracked = tracked_files();
    // A folder exists when a tracked file is under it.
    let folders: BTreeSet<String> = tracked
        .iter()
        .flat_map(|path| {
            let parts: Vec<&str> = path.split('/').collect();
            (1..parts.len()).map(move |n| parts[..n].join("/"))
        })
        .collect();
    let files: BTreeSet<&String> = tracked.iter().collect();
    let mut anchor_cache: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut offences = Vec::new();
    let mut checked = 0;
    for path in tracked.iter().filter(|p| p.ends_with(".md")) {
        let text = std::fs::read_to_string(root.join(path)).unwrap_or_else(|e| panic!("{path}: {e}"));
        if let Some(line) = unclosed_fence(&text) {
            offences.push(format!("{path}:{line}: a code block opens here and never closes"));
        }
        for (line_number, line) in prose_lines(&text) {
            for target in link_targets(line) {
                let external = target.contains("://") || target.starts_with("mailto:") || target.is_empty();
                if external {
                    continue;
                }
                checked += 1;
                let (file_part, fragment) = match target.split_once('#') {
                    Some((file, fragment)) => (file, Some(fragment)),
                    None => (target.as_str(), None),
                };
                let target_path =
                    if file_part.is_empty() { Some(path.clone()) } else { resolve(path, &percent_decoded(file_part)) };
                let Some(target_path) = target_path else {
                    offences.push(format!("{path}:{line_number}: ({target}) leaves the repository"));
                    continue;
                };
                let is_file = files.contains(&target_path);
                if !is_file && !folders.contains(target_path.trim_end_matches('/')) {
                    offences.push(format!("{path}:{line_number}: ({target}): no file or folder {target_path}"));
                    continue;
                }
                if let Some(fragment) = fragment.filter(|_| is_file && target_path.ends_with(".md")) {
                    let anchors = anchor_cache.entry(target_path.clone()).or_insert_with(|| {
                        anchors(&std::fs::read_to_string(root.join(&target_path)).expect("a tracked file"))
                    });
                    if !anchors.contains(&percent_decoded(fragment)) {
                        offences.push(format!(
                            "{path}:{line_number}: ({target}): {target_path} has no heading #{fragment}"
                        ));
                    }
                }
            }
        }
    }
    assert!(checked > 0, "no relative link found at all: the link reader is broken");
    assert!(offences.is_empty(), "links that do not resolve:\n{}", offences.join("\n"));
}

/// The README is the page a newcomer reads first, in five minutes: what
/// does not fit belongs under docs/.
#[test]
fn the_readme_is_at_most_150_lines() {
    let readme = std::fs::read_to_string(workspace_dir().join("README.md")).expect("README.md");
    let lines = readme.lines().count();
    assert!(lines <= 150, "README.md has {lines} lines; move what a newcomer does not need first under docs/");
}

// ---------------------------------------------------------------------------
// CONTRIBUTING.md's crate table.
// ---------------------------------------------------------------------------

/// The workspace's members as folders (`crates/tlog`, `tests`): the root
/// manifest's `members`, a trailing `/*` read as every folder under it
/// that holds a `Cargo.toml`.
fn workspace_members() -> Vec<String> {
    let root = workspace_dir();
    let manifest: toml::Table =
        std::fs::read_to_string(root.join("Cargo.toml")).expect("Cargo.toml").parse().expect("Cargo.toml parses");
    let members = manifest["workspace"]["members"].as_array().expect("workspace.members");
    let mut found = Vec::new();
    for member in members {
        let member = member.as_str().expect("a member is a string");
        match member.strip_suffix("/*") {
            Some(parent) => {
                let mut children: Vec<String> = std::fs::read_dir(root.join(parent))
                    .expect("the members' folder")
                    .map(|entry| entry.expect("a folder entry").path())
                    .filter(|path| path.join("Cargo.toml").is_file())
                    .map(|path| format!("{parent}/{}", path.file_name().expect("a name").to_string_lossy()))
                    .collect();
                children.sort();
                found.extend(children);
            }
            None => found.push(member.to_owned()),
        }
    }
    found
}

#[test]
fn contributing_has_a_row_for_every_workspace_member() {
    let text = std::fs::read_to_string(workspace_dir().join("CONTRIBUTING.md")).expect("CONTRIBUTING.md");
    // The first cell of each table row names its folders in code spans.
    let named: BTreeSet<String> = prose_lines(&text)
        .into_iter()
        .filter_map(|(_, line)| line.trim_start().strip_prefix('|').and_then(|row| row.split('|').next()))
        .flat_map(|cell| cell.split('`').skip(1).step_by(2).map(|name| name.trim_end_matches('/').to_owned()))
        .collect();
    let members = workspace_members();
    assert!(members.len() > 10, "the workspace's members were not read: {members:?}");
    let missing: Vec<&String> = members.iter().filter(|member| !named.contains(*member)).collect();
    assert!(missing.is_empty(), "CONTRIBUTING.md's crate table has no row for these workspace members: {missing:?}");
}

// ---------------------------------------------------------------------------
// The readers themselves.
// ---------------------------------------------------------------------------

#[test]
fn the_readers_find_what_they_are_meant_to() {
    let rules = concat!("docs/rules", ".md");
    let cited = cited_sections(&format!("as {rules} §6.2.1 says; see {rules} §2–3 and `{rules}` §1–§2."), rules);
    let numbers: Vec<&str> = cited.iter().map(|(_, n)| n.as_str()).collect();
    assert_eq!(numbers, ["6.2.1", "2", "3", "1", "2"]);
    let text = "# T\n\n## 6. Six\n\n### 6.2 `two`\n\n1. **One.**\n2. Two.\n\n```\n## 7. Not a heading\n```\n";
    assert_eq!(sections(text), ["6", "6.2", "6.2.1", "6.2.2"].map(String::from).into());
    let architecture = concat!("ARCHITECTURE", ".md");
    let invariant_cites =
        cited_invariants(&format!("({architecture}, invariant 7); {architecture}'s invariants 4 (a)"));
    assert_eq!(invariant_cites.iter().map(|(_, n)| *n).collect::<Vec<_>>(), [7, 4]);
    let anchors = anchors("## Who may do what\n### The `battlelog` command\n## Who may do what\n## Checkpoints (§5)\n");
    for anchor in ["who-may-do-what", "the-battlelog-command", "who-may-do-what-1", "checkpoints-5"] {
        assert!(anchors.contains(anchor), "{anchor}: {anchors:?}");
    }
    assert_eq!(
        link_targets("see [a](docs/a.md#x), ![b](<img/b c.png> \"t\") and `[not](a link)`"),
        ["docs/a.md#x", "img/b c.png"]
    );
    assert_eq!(resolve("docs/forums.md", "../README.md").as_deref(), Some("README.md"));
    assert_eq!(resolve("README.md", "../elsewhere"), None);
    assert_eq!(unclosed_fence("a\n```sh\nx\n```\n~~~\n"), Some(5));
    assert_eq!(unclosed_fence("```\n~~~\n```\n"), None);
}
