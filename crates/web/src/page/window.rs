//! Which events a battle page shows: a big battle is paged (the server
//! renders one window of it; the export it links stays whole, so the
//! verifier still checks every event), searchable by actor, event type and
//! version range, and a roll used by an action is drawn inside that action
//! (so they page together, the action being the anchor).
//!
//! Everything here works on the readable export lines only: no rendering.

use std::collections::BTreeMap;

use battlelog_verify::export::ExportLine;
use serde::Deserialize;
use serde_json::Value;

/// The page's own query parameters (besides the share key and language,
/// which the service reads). All strings, read leniently: a bad number is
/// ignored rather than refused, since a judge may type a URL by hand.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct ViewQuery {
    /// The page to show, from 1.
    pub page: Option<String>,
    /// A version to show: the page holding it is chosen (a permalink).
    pub v: Option<String>,
    /// Only events by this actor (a roll's actor, an action's actor, a
    /// dispute's party, a ruling's judge): any part of the name, in any
    /// case (Cyrillic included).
    pub actor: Option<String>,
    /// Free text: any part of any value the event records (a participant,
    /// a move, a purpose, a value, a nonce), in any case; `v12` or `12`
    /// also finds version 12.
    pub q: Option<String>,
    /// `1`: only what is disputed (the contested events and their
    /// disputes and rulings).
    pub disputed: Option<String>,
    /// Only events of this type (`ActionResolved`, `DiceRolled`, ...).
    #[serde(rename = "type")]
    pub event_type: Option<String>,
    /// Only versions from this one …
    pub from: Option<String>,
    /// … up to this one, inclusive.
    pub to: Option<String>,
    /// The head hash the forum posted, to pre-fill the head field.
    pub head: Option<String>,
    /// `final`: the final outcome of every action after all rulings.
    pub view: Option<String>,
    /// The version to show the state after (the state panel).
    pub at: Option<String>,
    /// The roll whose calculation to show (its version).
    pub calc: Option<String>,
}

/// The query read: every value checked, empty ones dropped.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct View {
    pub page: Option<usize>,
    pub v: Option<u64>,
    pub actor: Option<String>,
    pub q: Option<String>,
    pub disputed: bool,
    pub event_type: Option<String>,
    pub from: Option<u64>,
    pub to: Option<u64>,
    pub head: Option<String>,
    pub final_view: bool,
    pub at: Option<u64>,
    pub calc: Option<u64>,
}

fn given(value: &Option<String>) -> Option<&str> {
    value.as_deref().map(str::trim).filter(|s| !s.is_empty())
}

impl View {
    pub fn from_query(query: &ViewQuery) -> View {
        let number = |value: &Option<String>| given(value).and_then(|s| s.trim_start_matches('v').parse::<u64>().ok());
        View {
            page: given(&query.page).and_then(|s| s.parse::<usize>().ok()).filter(|p| *p >= 1),
            v: number(&query.v),
            actor: given(&query.actor).map(str::to_owned),
            q: given(&query.q).map(str::to_owned),
            disputed: matches!(given(&query.disputed), Some("1" | "on" | "true" | "yes")),
            event_type: given(&query.event_type).map(str::to_owned),
            from: number(&query.from),
            to: number(&query.to),
            // A head is 64 hex digits: anything else is not pre-filled.
            head: given(&query.head)
                .filter(|h| h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()))
                .map(str::to_ascii_lowercase),
            final_view: given(&query.view) == Some("final"),
            at: number(&query.at),
            calc: number(&query.calc),
        }
    }

    /// Whether any filter narrows the timeline.
    pub fn filtered(&self) -> bool {
        self.actor.is_some()
            || self.q.is_some()
            || self.disputed
            || self.event_type.is_some()
            || self.from.is_some()
            || self.to.is_some()
    }
}

/// One entry of the timeline: an event, and the rolls drawn inside it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    /// Index of the event in the export's lines.
    pub line: usize,
    /// Indexes of the rolls (`DiceRolled`) drawn inside it, in log order.
    pub nested: Vec<usize>,
}

/// Who an event is by, as its readable fields say (not its credential).
pub fn actor_of(event: &Value) -> Option<&str> {
    let field = |f: &str| event.get(f).and_then(Value::as_str);
    match event.get("type").and_then(Value::as_str)? {
        "DiceRolled" => field("actor"),
        "ActionResolved" => event.get("action").and_then(|a| a.get("actor")).and_then(Value::as_str),
        "DisputeRaised" => field("by"),
        "JudgeRuling" => field("judge"),
        _ => None,
    }
}

/// The timeline's entries: every event in log order, except that a roll an
/// action used is drawn inside that action (its first user, when several
/// actions name the same nonce, which an honest log never does).
pub fn items(lines: &[ExportLine]) -> Vec<Item> {
    let roll_at: BTreeMap<u64, usize> = lines
        .iter()
        .enumerate()
        .filter(|(_, line)| line.event_type == "DiceRolled")
        .filter_map(|(i, line)| Some((line.event.get("nonce")?.as_u64()?, i)))
        .collect();
    let mut host: BTreeMap<usize, usize> = BTreeMap::new();
    for (i, line) in lines.iter().enumerate().filter(|(_, line)| line.event_type == "ActionResolved") {
        for nonce in line.event.get("rolls").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_u64) {
            if let Some(&roll) = roll_at.get(&nonce) {
                host.entry(roll).or_insert(i);
            }
        }
    }
    let mut nested: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for (&roll, &action) in &host {
        nested.entry(action).or_default().push(roll);
    }
    (0..lines.len())
        .filter(|i| !host.contains_key(i))
        .map(|line| Item { line, nested: nested.remove(&line).unwrap_or_default() })
        .collect()
}

/// Whether `text` holds `part`, in any case (Unicode lowercase: a judge
/// typing "мяут" finds "Мяут").
fn contains_folded(text: &str, part: &str) -> bool {
    text.to_lowercase().contains(&part.to_lowercase())
}

/// Whether any value the event records (strings and numbers, at any depth)
/// holds `part`; or `part` names the event's version (`12`, `v12`, `#v12`).
fn event_holds(line: &ExportLine, part: &str) -> bool {
    fn any_value(value: &Value, part: &str) -> bool {
        match value {
            Value::String(s) => contains_folded(s, part),
            Value::Number(n) => n.to_string() == part,
            Value::Array(items) => items.iter().any(|v| any_value(v, part)),
            Value::Object(fields) => fields.values().any(|v| any_value(v, part)),
            _ => false,
        }
    }
    let version = part.trim_start_matches('#').trim_start_matches(['v', 'V']);
    version.parse::<u64>().ok() == Some(line.version) || any_value(&line.event, part)
}

/// The versions a dispute touches: every contested event, every dispute
/// and every ruling (`?disputed=1`).
fn disputed_versions(lines: &[ExportLine]) -> std::collections::BTreeSet<u64> {
    let mut versions = std::collections::BTreeSet::new();
    let contested: std::collections::BTreeSet<u64> = lines
        .iter()
        .filter(|line| line.event_type == "DisputeRaised")
        .filter_map(|line| line.event.get("refers_to").and_then(Value::as_u64))
        .collect();
    for line in lines {
        if matches!(line.event_type.as_str(), "DisputeRaised" | "JudgeRuling") || contested.contains(&line.version) {
            versions.insert(line.version);
        }
    }
    versions
}

/// Whether `item` (or a roll inside it) passes the view's filters.
fn matches(view: &View, lines: &[ExportLine], disputed: &std::collections::BTreeSet<u64>, item: &Item) -> bool {
    std::iter::once(item.line).chain(item.nested.iter().copied()).any(|i| {
        let line = &lines[i];
        view.event_type.as_deref().is_none_or(|t| line.event_type.eq_ignore_ascii_case(t))
            && view.actor.as_deref().is_none_or(|a| actor_of(&line.event).is_some_and(|b| contains_folded(b, a)))
            && view.q.as_deref().is_none_or(|q| event_holds(line, q))
            && (!view.disputed || disputed.contains(&line.version))
            && view.from.is_none_or(|from| line.version >= from)
            && view.to.is_none_or(|to| line.version <= to)
    })
}

/// The window a page shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Window {
    /// The entries on this page.
    pub items: Vec<Item>,
    /// This page, from 1.
    pub page: usize,
    /// How many pages the (filtered) timeline has; at least 1.
    pub pages: usize,
    /// How many entries passed the filters, over all pages.
    pub matching: usize,
}

impl Window {
    /// Whether the event at `version` is drawn on this page (nested or not).
    pub fn shows(&self, lines: &[ExportLine], version: u64) -> bool {
        self.items.iter().any(|item| {
            std::iter::once(item.line).chain(item.nested.iter().copied()).any(|i| lines[i].version == version)
        })
    }
}

/// The page of `per_page` entries the view asks for: the one holding
/// `?v=` when it passes the filters, else `?page=` (clamped to the last).
pub fn window(lines: &[ExportLine], view: &View, per_page: usize) -> Window {
    let per_page = per_page.max(1);
    let disputed = if view.disputed { disputed_versions(lines) } else { Default::default() };
    let all: Vec<Item> = items(lines).into_iter().filter(|item| matches(view, lines, &disputed, item)).collect();
    let pages = all.len().div_ceil(per_page).max(1);
    let holding = view.v.and_then(|v| {
        all.iter().position(|item| {
            std::iter::once(item.line).chain(item.nested.iter().copied()).any(|i| lines[i].version == v)
        })
    });
    let page = match holding {
        Some(position) => position / per_page + 1,
        None => view.page.unwrap_or(1).min(pages),
    };
    let matching = all.len();
    let items = all.into_iter().skip((page - 1) * per_page).take(per_page).collect();
    Window { items, page, pages, matching }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn line(version: u64, event: Value) -> ExportLine {
        ExportLine {
            stream: "b".into(),
            version,
            hash: String::new(),
            record: String::new(),
            event_id: String::new(),
            event_type: event["type"].as_str().unwrap().into(),
            recorded_at_unix_micros: 0,
            event,
        }
    }

    /// v0 opened, then per i in 0..n: a roll (nonce i) and the action using it.
    fn battle(n: u64) -> Vec<ExportLine> {
        let mut lines = vec![line(0, json!({"type": "BattleOpened"}))];
        for i in 0..n {
            let actor = if i % 2 == 0 { "anna" } else { "boris" };
            lines.push(line(1 + 2 * i, json!({"type": "DiceRolled", "nonce": i, "actor": actor})));
            lines.push(line(2 + 2 * i, json!({"type": "ActionResolved", "rolls": [i], "action": {"actor": actor}})));
        }
        lines
    }

    #[test]
    fn a_roll_is_drawn_inside_the_action_that_used_it() {
        let lines = battle(2);
        let items = items(&lines);
        assert_eq!(
            items,
            vec![
                Item { line: 0, nested: vec![] },
                Item { line: 2, nested: vec![1] },
                Item { line: 4, nested: vec![3] }
            ]
        );
    }

    #[test]
    fn the_search_finds_part_of_a_name_in_any_case_a_move_a_nonce_a_version_and_what_is_disputed() {
        let mut lines = vec![line(0, json!({"type": "BattleOpened"}))];
        lines.push(line(1, json!({"type": "DiceRolled", "nonce": 0, "actor": "Мяут", "purpose": "атака"})));
        lines.push(line(
            2,
            json!({"type": "ActionResolved", "rolls": [0], "action": {"actor": "Мяут", "move": "Thunderbolt"}}),
        ));
        lines.push(line(3, json!({"type": "DiceRolled", "nonce": 1, "actor": "Boris"})));
        lines.push(line(
            4,
            json!({"type": "ActionResolved", "rolls": [1], "action": {"actor": "Boris", "move": "Tackle"}}),
        ));
        lines.push(line(5, json!({"type": "DisputeRaised", "by": "boris", "refers_to": 2, "reason": "x"})));
        let shown = |view: View| -> Vec<u64> {
            window(&lines, &view, 100).items.iter().map(|item| lines[item.line].version).collect()
        };
        assert_eq!(shown(View { actor: Some("мяу".into()), ..View::default() }), vec![2]);
        assert_eq!(shown(View { actor: Some("BOR".into()), ..View::default() }), vec![4, 5]);
        assert_eq!(shown(View { q: Some("thunder".into()), ..View::default() }), vec![2]);
        assert_eq!(
            shown(View { q: Some("АТАКА".into()), ..View::default() }),
            vec![2],
            "the roll's purpose, inside its action"
        );
        assert_eq!(shown(View { q: Some("v4".into()), ..View::default() }), vec![4]);
        assert_eq!(shown(View { disputed: true, ..View::default() }), vec![2, 5]);
    }

    #[test]
    fn a_roll_no_action_used_stays_on_its_own() {
        let mut lines = battle(1);
        lines.push(line(3, json!({"type": "DiceRolled", "nonce": 7, "actor": "x"})));
        assert_eq!(items(&lines).last(), Some(&Item { line: 3, nested: vec![] }));
    }

    #[test]
    fn pages_hold_per_page_entries_and_a_version_selects_its_page() {
        // 1 opening + 10 actions = 11 entries; 4 a page: pages of 4, 4, 3.
        let lines = battle(10);
        let first = window(&lines, &View::default(), 4);
        assert_eq!((first.page, first.pages, first.items.len(), first.matching), (1, 3, 4, 11));
        let last = window(&lines, &View { page: Some(99), ..View::default() }, 4);
        assert_eq!((last.page, last.items.len()), (3, 3));
        // v19 is the roll of the 10th action (v20): the 11th entry, page 3.
        let permalink = window(&lines, &View { v: Some(19), page: Some(1), ..View::default() }, 4);
        assert_eq!(permalink.page, 3);
        assert!(permalink.shows(&lines, 19) && permalink.shows(&lines, 20) && !permalink.shows(&lines, 2));
    }

    #[test]
    fn filters_by_actor_type_and_range() {
        let lines = battle(10);
        let boris = window(&lines, &View { actor: Some("Boris".into()), ..View::default() }, 100);
        assert_eq!(boris.matching, 5);
        let rolls = window(&lines, &View { event_type: Some("DiceRolled".into()), ..View::default() }, 100);
        // Every roll is inside an action: the actions holding them show.
        assert_eq!(rolls.matching, 10);
        let range = window(&lines, &View { from: Some(5), to: Some(8), ..View::default() }, 100);
        let shown: Vec<u64> = range.items.iter().map(|i| lines[i.line].version).collect();
        assert_eq!(shown, vec![6, 8]);
    }

    #[test]
    fn the_query_is_read_leniently() {
        let query = ViewQuery {
            page: Some("x".into()),
            v: Some("v12".into()),
            actor: Some("  ".into()),
            head: Some("zz".into()),
            view: Some("final".into()),
            ..ViewQuery::default()
        };
        let view = View::from_query(&query);
        assert_eq!(view, View { v: Some(12), final_view: true, ..View::default() });
        assert!(!view.filtered());
    }
}
