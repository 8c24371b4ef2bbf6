//! A [`Document`] written in one [`Format`], escaping as the crate's map
//! says: chosen text never becomes markup, and only `http(s)` addresses
//! become links.

use percent_encoding::{AsciiSet, CONTROLS, utf8_percent_encode};

use crate::Format;
use crate::text::{Block, Document, Span};

/// What is percent-encoded in a link's address in every format: what could
/// end an attribute, an angle-bracketed Markdown destination or a line.
const ADDRESS: &AsciiSet = &CONTROLS.add(b' ').add(b'"').add(b'\'').add(b'<').add(b'>').add(b'`').add(b'\\');

/// In BBCode also the brackets, which would end `[url=…]` (an IPv6 host
/// in brackets is not supported there).
const BBCODE_ADDRESS: &AsciiSet = &ADDRESS.add(b'[').add(b']');

/// The ASCII characters Markdown (CommonMark with the GFM extensions) gives
/// a meaning to somewhere; each is written with a backslash, which
/// CommonMark allows before any ASCII punctuation.
const MARKDOWN_SPECIALS: &str = "\\`*_{}[]()<>#+-.!|~&\"";

/// Writes `document` in `format`.
pub fn write(format: Format, document: &Document) -> String {
    let blocks: Vec<String> = document.blocks.iter().map(|block| write_block(format, block)).collect();
    let separator = if format == Format::Markdown { "\n\n" } else { "\n" };
    blocks.join(separator)
}

fn write_block(format: Format, block: &Block) -> String {
    match block {
        Block::Title(spans) => {
            let line = spans_of(format, spans);
            match format {
                Format::Plain => line,
                Format::Markdown => format!("**{line}**"),
                Format::Bbcode => format!("[b]{line}[/b]"),
                Format::Html => format!("<p><b>{line}</b></p>"),
            }
        }
        Block::Line(spans) => {
            let line = spans_of(format, spans);
            if format == Format::Html { format!("<p>{line}</p>") } else { line }
        }
        Block::Calculation { label, lines } => {
            let label = escape(format, label);
            let lines: Vec<String> = lines.iter().map(|spans| spans_of(format, spans)).collect();
            match format {
                Format::Plain => {
                    let lines: Vec<String> = lines.iter().map(|line| format!("  {line}")).collect();
                    format!("{label}:\n{}", lines.join("\n"))
                }
                Format::Markdown => {
                    let lines: Vec<String> = lines.iter().map(|line| format!("- {line}")).collect();
                    format!("{label}:\n\n{}", lines.join("\n"))
                }
                Format::Bbcode => format!("{label}:\n[spoiler]\n{}\n[/spoiler]", lines.join("\n")),
                Format::Html => {
                    let lines: Vec<String> = lines.iter().map(|line| format!("<li>{line}</li>")).collect();
                    format!("<details><summary>{label}</summary>\n<ul>\n{}\n</ul>\n</details>", lines.join("\n"))
                }
            }
        }
    }
}

fn spans_of(format: Format, spans: &[Span]) -> String {
    spans.iter().map(|span| write_span(format, span)).collect()
}

fn write_span(format: Format, span: &Span) -> String {
    match span {
        Span::Text(text) => escape(format, text),
        Span::Fixed(text) => match format {
            // The renderer's own brackets are no BBCode tag (`[6, 5]`).
            Format::Plain | Format::Bbcode => text.clone(),
            Format::Markdown | Format::Html => escape(format, text),
        },
        Span::Struck(face) => {
            let face = escape(format, face);
            match format {
                Format::Plain => format!("({face})"),
                Format::Markdown => format!("~~{face}~~"),
                Format::Bbcode => format!("[s]{face}[/s]"),
                Format::Html => format!("<s>{face}</s>"),
            }
        }
        Span::Code(code) if !code.is_empty() && code.chars().all(|c| c.is_ascii_alphanumeric()) => match format {
            Format::Plain | Format::Bbcode => code.clone(),
            Format::Markdown => format!("`{code}`"),
            Format::Html => format!("<code>{code}</code>"),
        },
        // Never expected (hashes and seeds are hex): written as text.
        Span::Code(code) => escape(format, code),
        Span::Link { label, url } if is_web_address(url) => {
            let text = escape(format, label);
            match format {
                Format::Plain => format!("{label}: {url}"),
                Format::Markdown => format!("[{text}](<{}>)", utf8_percent_encode(url, ADDRESS)),
                Format::Bbcode => format!("[url={}]{text}[/url]", utf8_percent_encode(url, BBCODE_ADDRESS)),
                Format::Html => {
                    let address = utf8_percent_encode(url, ADDRESS).to_string();
                    format!(
                        "<a href=\"{}\" rel=\"nofollow noopener\">{text}</a>",
                        html_escape::encode_double_quoted_attribute(&address)
                    )
                }
            }
        }
        // Not a web address: shown, never linked.
        Span::Link { label, url } => escape(format, &format!("{label}: {url}")),
    }
}

/// Whether `url` is an `http` or `https` address: the only links a post makes.
fn is_web_address(url: &str) -> bool {
    let lower = url.to_ascii_lowercase();
    (lower.starts_with("https://") || lower.starts_with("http://")) && !url.chars().any(char::is_whitespace)
}

/// `text` escaped so that nothing in it is markup in `format`.
pub fn escape(format: Format, text: &str) -> String {
    match format {
        Format::Plain => text.to_owned(),
        Format::Markdown => {
            let mut out = String::with_capacity(text.len());
            for c in text.chars() {
                if MARKDOWN_SPECIALS.contains(c) {
                    out.push('\\');
                }
                out.push(c);
            }
            out
        }
        Format::Bbcode => text.replace('[', "\u{FF3B}").replace(']', "\u{FF3D}"),
        Format::Html => html_escape::encode_safe(text).into_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_escapes_each_special_and_nothing_else() {
        assert_eq!(escape(Format::Markdown, "**x**"), "\\*\\*x\\*\\*");
        assert_eq!(escape(Format::Markdown, "[a](javascript:b)"), "\\[a\\]\\(javascript:b\\)");
        assert_eq!(escape(Format::Markdown, "Пикачу 42"), "Пикачу 42");
    }

    #[test]
    fn bbcode_brackets_become_fullwidth() {
        assert_eq!(escape(Format::Bbcode, "[/b][url=x]"), "［/b］［url=x］");
    }

    #[test]
    fn html_escapes_tags_and_quotes() {
        assert_eq!(escape(Format::Html, "\"><img>"), "&quot;&gt;&lt;img&gt;");
    }

    #[test]
    fn only_web_addresses_are_links() {
        assert!(is_web_address("https://example.org/battles/b?k=1#v2"));
        assert!(is_web_address("HTTP://example.org"));
        assert!(!is_web_address("javascript:alert(1)"));
        assert!(!is_web_address("data:text/html,x"));
        assert!(!is_web_address("https://a b"));
        let link = Span::Link { label: "page".into(), url: "javascript:alert(1)//".into() };
        for format in [Format::Plain, Format::Markdown, Format::Bbcode, Format::Html] {
            let written = write_span(format, &link);
            assert!(!written.contains("href") && !written.contains("[url") && !written.contains("]("), "{written}");
        }
    }
}
