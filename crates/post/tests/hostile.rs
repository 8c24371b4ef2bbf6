//! Hostile names: whatever a player, a forum or a judge puts in a name, a
//! title, a reason or a dice comment is shown as text in every format and
//! never becomes markup — no tag opened or closed, no link, no script, no
//! event handler.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use dice::{Expression, WordSource};
use post::{DiceLine, Event, Format, Place, Revealed};

const HOSTILE: [&str; 6] = [
    "[url=javascript:alert(1)]x[/url]",
    "[/b]",
    "<script>alert(1)</script>",
    "**x**",
    "\"><img src=x onerror=alert(1)>",
    "[/spoiler][b]x](javascript:alert(1))<a href=\"javascript:alert(1)\">",
];
const HEAD: &str = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
const PERMALINK: &str = "https://battles.example.org/battles/duel-1?k=s3cr3t#v3";
const FORMATS: [Format; 4] = [Format::Plain, Format::Markdown, Format::Bbcode, Format::Html];

struct Faces(std::vec::IntoIter<u32>);

impl WordSource for Faces {
    fn next_word(&mut self) -> u32 {
        self.0.next().map_or(0, |face| face - 1)
    }
}

/// Every event, with `name` in each field someone chose.
fn events(name: &str) -> Vec<Event> {
    let expression = Expression::parse(&format!("4d6kh3 # {name}")).expect("a comment may hold anything");
    let roll = dice::evaluate(&expression, &mut Faces(vec![6, 5, 3, 1].into_iter())).expect("evaluates");
    vec![
        Event::Opened {
            battle_id: name.into(),
            title: name.into(),
            ruleset: "pokemon-d6@1".into(),
            participants: vec![name.into(), format!("{name}\n{name}")],
            commitment: HEAD.into(),
        },
        Event::Acted {
            actor: name.into(),
            summary_ru: format!("{name} бросает"),
            summary_en: format!("{name} rolls"),
            dice: vec![DiceLine { purpose: name.into(), pieces: dice::pieces(&expression, &roll) }],
        },
        Event::Disputed { by: name.into(), refers_to: 1, reason: format!("{name}\r\n{name}") },
        Event::Ruled { judge: name.into(), refers_to: 1, text: name.into(), overrides: true },
        Event::Closed {
            by: name.into(),
            reason: name.into(),
            revealed: Some(Revealed { epoch: 0, server_seed: HEAD.into() }),
        },
    ]
}

fn posts(format: Format, name: &str) -> Vec<String> {
    let place = Place { head_version: 3, permalink: PERMALINK, head_hash: HEAD };
    events(name)
        .iter()
        .flat_map(|event| {
            let post = post::render(format, event, &place);
            [post.ru, post.en]
        })
        .collect()
}

/// The markup a text holds, as its format reads it: BBCode's bracketed
/// runs, HTML's tags and entities' ampersands, Markdown's unescaped special
/// characters. Plain text has none.
fn markup(format: Format, text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut chars = text.chars().peekable();
    match format {
        Format::Plain => {}
        Format::Bbcode | Format::Html => {
            let (open, close) = if format == Format::Bbcode { ('[', ']') } else { ('<', '>') };
            while let Some(c) = chars.next() {
                if c == open {
                    let mut token = String::from(c);
                    for c in chars.by_ref() {
                        token.push(c);
                        if c == close {
                            break;
                        }
                    }
                    found.push(token);
                } else if c == '&' && format == Format::Html {
                    let entity: String = chars.clone().take_while(|c| *c != ';').collect();
                    found.push(format!("&{entity};"));
                }
            }
        }
        Format::Markdown => {
            while let Some(c) = chars.next() {
                if c == '\\' {
                    chars.next();
                } else if "`*_{}[]()<>#+-.!|~&\"".contains(c) {
                    found.push(c.to_string());
                }
            }
        }
    }
    found
}

#[test]
fn hostile_names_add_no_markup_in_any_format() {
    for format in FORMATS {
        let benign = posts(format, "NAME");
        for name in HOSTILE {
            let hostile = posts(format, name);
            for (hostile, benign) in hostile.iter().zip(&benign) {
                let (got, want) = (markup(format, hostile), markup(format, benign));
                if format == Format::Html {
                    // An escaped character is an entity: the same tags, and
                    // entities only where the benign post has none or more.
                    let tags =
                        |found: &[String]| found.iter().filter(|t| t.starts_with('<')).cloned().collect::<Vec<_>>();
                    assert_eq!(tags(&got), tags(&want), "{format:?} with {name:?}:\n{hostile}");
                } else {
                    assert_eq!(got, want, "{format:?} with {name:?}:\n{hostile}");
                }
            }
        }
    }
}

#[test]
fn the_hostile_markup_itself_is_nowhere() {
    for name in HOSTILE {
        for post in posts(Format::Bbcode, name) {
            assert!(!post.contains("[url=javascript"), "{post}");
            assert!(!post.contains("[/url]x") && !post.contains("[/spoiler][b]"), "{post}");
            assert_eq!(post.matches("[/b]").count(), 1, "only the title's bold ends:\n{post}");
            assert_eq!(post.matches("[url=").count(), 1, "only the permalink is a link:\n{post}");
        }
        for post in posts(Format::Html, name) {
            let lower = post.to_ascii_lowercase();
            for forbidden in ["<script", "<img", "href=\"javascript"] {
                assert!(!lower.contains(forbidden), "{forbidden} in\n{post}");
            }
            // `onerror=` may be read as text; inside a tag it would be a handler.
            for tag in markup(Format::Html, &lower).iter().filter(|t| t.starts_with('<')) {
                assert!(!tag.contains(" on") && !tag.contains("javascript"), "{tag} in\n{post}");
            }
            assert_eq!(lower.matches("<a ").count(), 1, "only the permalink is a link:\n{post}");
        }
        for post in posts(Format::Markdown, name) {
            assert!(!post.contains("**x**") && !post.contains("](javascript"), "{post}");
            assert!(!post.contains("<script") || post.contains("\\<script"), "{post}");
            assert_eq!(post.matches("](").count(), 1, "only the permalink is a link:\n{post}");
        }
        for (i, post) in posts(Format::Plain, name).iter().enumerate() {
            // Plain text shows the names exactly as given, and a participant
            // or a reason of two lines (the opening's and the dispute's
            // posts) folded onto one.
            assert!(post.contains(name), "{name} missing from\n{post}");
            if matches!(i, 0 | 1 | 4 | 5) {
                assert!(post.contains(&format!("{name} {name}")), "not folded in\n{post}");
            }
        }
    }
}

#[test]
fn every_format_shows_the_names() {
    // Escaped, not dropped: a reader still sees who acted.
    let shown = [
        (Format::Markdown, "\\*\\*x\\*\\*"),
        (Format::Bbcode, "［/b］"),
        (Format::Html, "&lt;script&gt;alert(1)&lt;&#x2F;script&gt;"),
    ];
    for (format, escaped) in shown {
        let name = match format {
            Format::Markdown => "**x**",
            Format::Bbcode => "[/b]",
            _ => "<script>alert(1)</script>",
        };
        for post in posts(format, name) {
            assert!(post.contains(escaped), "{format:?}: {escaped} missing from\n{post}");
        }
    }
}
