//! What a post says, per event and language: a short document of blocks
//! (a bold title, lines, the calculation) made of spans that keep the
//! chosen text apart from the post's own, so that [`crate::markup`] can
//! escape the one and not the other.

use dice::Piece;

use crate::{DiceLine, Event, Lang, Place, Revealed};

/// A run of text in a line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Span {
    /// Text someone chose or the post's own wording: escaped for the format.
    Text(String),
    /// The dice renderer's own text (brackets, counted dice, the total).
    Fixed(String),
    /// A die that does not count, struck through in the format's way.
    Struck(String),
    /// A hash or a seed: hex digits, shown as code where the format has it.
    Code(String),
    /// A link to `url`, shown as `label`.
    Link { label: String, url: String },
}

/// One block of a post.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Block {
    /// The first line, in bold.
    Title(Vec<Span>),
    Line(Vec<Span>),
    /// The dice lines under a label: a spoiler in BBCode, `<details>` in HTML.
    Calculation {
        label: String,
        lines: Vec<Vec<Span>>,
    },
}

/// A post before it is written in a format.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Document {
    pub blocks: Vec<Block>,
}

/// Free text, folded onto one line.
fn text(value: &str) -> Span {
    let folded = value.split(['\n', '\r']).map(str::trim).filter(|part| !part.is_empty()).collect::<Vec<_>>();
    Span::Text(folded.join(" "))
}

/// `ru` or `en`, by `lang`.
fn pick(lang: Lang, ru: impl Into<String>, en: impl Into<String>) -> String {
    match lang {
        Lang::Ru => ru.into(),
        Lang::En => en.into(),
    }
}

fn words(lang: Lang, ru: &str, en: &str) -> Span {
    Span::Text(pick(lang, ru, en))
}

fn dice_line(line: &DiceLine) -> Vec<Span> {
    let mut spans = Vec::new();
    // Some rulesets name a roll by its dice (`2d10`): said once is enough.
    let repeats_formula = matches!(line.pieces.first(), Some(Piece::Text(formula)) if *formula == line.purpose);
    if !line.purpose.trim().is_empty() && !repeats_formula {
        spans.push(text(&line.purpose));
        spans.push(Span::Text(": ".to_owned()));
    }
    spans.extend(line.pieces.iter().map(|piece| match piece {
        Piece::Text(value) => text(value),
        Piece::Fixed(value) => Span::Fixed(value.clone()),
        Piece::Struck(value) => Span::Struck(value.clone()),
    }));
    spans
}

/// An opening's title and lines: ruleset, participants, the commitment.
fn opened(lang: Lang, name: &str, ruleset: &str, participants: &[String], commitment: &str) -> Vec<Block> {
    let mut blocks = vec![
        Block::Title(vec![words(lang, "Бой открыт: ", "Battle opened: "), text(name)]),
        Block::Line(vec![words(lang, "Правила: ", "Ruleset: "), text(ruleset)]),
    ];
    let mut line = vec![words(lang, "Участники: ", "Participants: ")];
    for (i, participant) in participants.iter().enumerate() {
        if i > 0 {
            line.push(Span::Text(", ".to_owned()));
        }
        line.push(text(participant));
    }
    blocks.push(Block::Line(line));
    blocks.push(Block::Line(vec![
        words(lang, "Хеш серверного сида (SHA-256): ", "Server seed commitment (SHA-256): "),
        Span::Code(commitment.to_owned()),
    ]));
    blocks
}

/// A close's title and lines: who, why, and the seed it revealed.
fn closed(lang: Lang, by: &str, reason: &str, revealed: Option<&Revealed>) -> Vec<Block> {
    let mut blocks = Vec::new();
    let mut title = vec![words(lang, "Бой закрыт", "Battle closed")];
    if !by.trim().is_empty() {
        title.push(words(lang, ": ", " by "));
        title.push(text(by));
    }
    blocks.push(Block::Title(title));
    if !reason.trim().is_empty() {
        blocks.push(Block::Line(vec![words(lang, "Причина: ", "Reason: "), text(reason)]));
    }
    if let Some(revealed) = revealed {
        let epoch = revealed.epoch;
        blocks.push(Block::Line(vec![
            Span::Text(pick(
                lang,
                format!("Раскрыт серверный сид эпохи {epoch}: "),
                format!("Server seed of epoch {epoch} revealed: "),
            )),
            Span::Code(revealed.server_seed.clone()),
        ]));
        blocks.push(Block::Line(vec![words(
            lang,
            "Теперь каждый бросок можно проверить по опубликованному хешу сида (battlelog audit).",
            "Every roll can now be checked against the seed's published commitment (battlelog audit).",
        )]));
    }
    blocks
}

/// The post of `event` at `place` in `lang`.
pub fn document(lang: Lang, event: &Event, place: &Place<'_>) -> Document {
    let mut blocks = Vec::new();
    match event {
        Event::Opened { battle_id, title, ruleset, participants, commitment } => {
            let name = if title.trim().is_empty() { battle_id } else { title };
            blocks = opened(lang, name, ruleset, participants, commitment);
        }
        Event::Acted { actor, summary_ru, summary_en, dice } => {
            blocks.push(Block::Title(vec![words(lang, "Действие: ", "Action by "), text(actor)]));
            blocks.push(Block::Line(vec![text(&pick(lang, summary_ru, summary_en))]));
            if !dice.is_empty() {
                blocks.push(Block::Calculation {
                    label: pick(lang, "Броски", "Dice"),
                    lines: dice.iter().map(dice_line).collect(),
                });
            }
        }
        Event::Disputed { by, refers_to, reason } => {
            blocks.push(Block::Title(vec![
                words(lang, "Спор: ", "Dispute by "),
                text(by),
                Span::Text(pick(lang, format!(" оспаривает версию {refers_to}"), format!(" of version {refers_to}"))),
            ]));
            if !reason.trim().is_empty() {
                blocks.push(Block::Line(vec![words(lang, "Причина: ", "Reason: "), text(reason)]));
            }
        }
        Event::Ruled { judge, refers_to, text: ruling, overrides } => {
            blocks.push(Block::Title(vec![
                words(lang, "Решение судьи ", "Ruling by "),
                text(judge),
                Span::Text(pick(lang, format!(" по версии {refers_to}"), format!(" on version {refers_to}"))),
            ]));
            if !ruling.trim().is_empty() {
                blocks.push(Block::Line(vec![text(ruling)]));
            }
            if *overrides {
                blocks.push(Block::Line(vec![Span::Text(pick(
                    lang,
                    format!("Исход версии {refers_to} заменён."),
                    format!("The outcome of version {refers_to} is replaced."),
                ))]));
            }
        }
        Event::Closed { by, reason, revealed } => {
            blocks = closed(lang, by, reason, revealed.as_ref());
        }
    }
    if !place.permalink.is_empty() {
        blocks.push(Block::Line(vec![Span::Link {
            label: pick(lang, "Страница боя", "Battle page"),
            url: place.permalink.to_owned(),
        }]));
    }
    let version = place.head_version;
    blocks.push(Block::Line(vec![
        Span::Text(pick(
            lang,
            format!("Хеш журнала на версии {version}: "),
            format!("Head hash at version {version}: "),
        )),
        Span::Code(place.head_hash.to_owned()),
    ]));
    Document { blocks }
}
