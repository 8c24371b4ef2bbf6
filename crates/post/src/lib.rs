//! The forum post of one battle event, ready to paste: the resolver's
//! mutating replies (OpenBattle, Act, Dispute, Rule, Close) carry it in the
//! format the forum asked for, in Russian and in English. Pure: no I/O, no
//! clock — the same event, place and format give the same post, so a retry
//! answers the same text.
//!
//! - [`text`]: what a post says, per event and language, as a small
//!   document of blocks and spans (no markup yet).
//! - [`markup`]: the document written as plain text, Markdown, BBCode or
//!   HTML, escaping every piece of text a player, forum or judge chose (names,
//!   titles, reasons, summaries, dice comments) for that format.
//!
//! Escaping, per format (the hostile-name tests hold each of them):
//! - plain: nothing is markup, nothing is escaped;
//! - Markdown: every ASCII character with a meaning in CommonMark or GFM
//!   (`\` `` ` `` `*` `_` `{` `}` `[` `]` `(` `)` `<` `>` `#` `+` `-` `.` `!`
//!   `|` `~` `&` `"`) gets a backslash, which CommonMark defines for any
//!   ASCII punctuation, so no text opens emphasis, a link, an image, raw
//!   HTML or an entity;
//! - BBCode has no escape of its own: `[` and `]` in chosen text become the
//!   fullwidth `［` and `］` (U+FF3B, U+FF3D), which read as brackets and
//!   are no tag in phpBB, XenForo or vBulletin, whatever those engines do
//!   with `&`; a link's address is percent-encoded where it could end the
//!   tag (`[`, `]`, quotes, spaces, `<`, `>`);
//! - HTML: text through `html_escape::encode_safe` (`&`, `<`, `>`, `"`,
//!   `'`, `/`), the address through `encode_double_quoted_attribute`; only
//!   `http` and `https` addresses become links (any other is shown as
//!   text); no script, style or event handler is ever written.
//!
//! Free text is folded onto one line (line breaks become spaces), so that
//! no text can start a line of its own in a format where that means
//! something.

pub mod markup;
pub mod text;

pub use markup::write;
pub use text::document;

/// A format forums take posts in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Plain,
    Markdown,
    /// phpBB, XenForo, vBulletin: `[b]`, `[s]`, `[url=…]…[/url]`, `[spoiler]`.
    Bbcode,
    Html,
}

/// A language of the post.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lang {
    Ru,
    En,
}

/// The same post in both languages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Post {
    pub ru: String,
    pub en: String,
}

/// Where the event stands in its battle: its place on the battle's web page
/// (empty when the resolver has no web address) and the battle's head right
/// after the call — the version of the call's last record and its chain
/// hash. The head is the event itself except for a close, whose last record
/// is the SeedRevealed written after its BattleClosed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Place<'a> {
    pub head_version: u64,
    pub permalink: &'a str,
    pub head_hash: &'a str,
}

/// One roll of an action: what it was for and its line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiceLine {
    /// What the roll was for (`attack`, `damage` …); may be empty.
    pub purpose: String,
    /// The roll line ([`dice::pieces`]), or the expression and its error
    /// for an arithmetic that failed (as one `Text` piece).
    pub pieces: Vec<dice::Piece>,
}

/// The revealed server seed of a closed battle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Revealed {
    pub epoch: u32,
    /// 64 lowercase hex digits.
    pub server_seed: String,
}

/// The event a post tells of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    Opened {
        battle_id: String,
        title: String,
        /// `name@version`.
        ruleset: String,
        /// The participants' ids, in sheet order.
        participants: Vec<String>,
        /// Lowercase hex SHA-256 of the epoch-0 server seed.
        commitment: String,
    },
    Acted {
        /// Who acted (the action's actor or attacker).
        actor: String,
        /// The ruleset's one-line summary of the outcome, as journaled.
        summary_ru: String,
        summary_en: String,
        /// The rolls the action used, in draw order.
        dice: Vec<DiceLine>,
    },
    Disputed {
        by: String,
        refers_to: u64,
        reason: String,
    },
    Ruled {
        judge: String,
        refers_to: u64,
        text: String,
        /// The ruling replaces the outcome of the event it refers to.
        overrides: bool,
    },
    Closed {
        by: String,
        reason: String,
        /// None only if the reveal is not known (never in the resolver's
        /// replies: a close answers after its reveal).
        revealed: Option<Revealed>,
    },
}

/// The post of `event` at `place`, in `format`, in both languages.
pub fn render(format: Format, event: &Event, place: &Place<'_>) -> Post {
    Post { ru: write(format, &document(Lang::Ru, event, place)), en: write(format, &document(Lang::En, event, place)) }
}
