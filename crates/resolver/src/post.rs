//! The forum post each mutating reply carries (`battlelog-post`), built
//! from the reply itself — the journaled event, its rolls, permalink and
//! head hash — so that a retry, which answers from the journal, gets the
//! same post as the first attempt.

use battlelog_proto::battle::{die_from_proto, struct_to_json};
use battlelog_proto::v1::{
    ActResponse, BattleClosed, DiceRolled, EventResponse, OpenBattleResponse, Post, PostFormat, SeedRevealed,
    battle_event,
};
use battlelog_runtime::grpc::invalid_argument;
use post::{DiceLine, Event, Format, Place, Revealed};
use serde_json::Value;
use tonic::Status;

/// The format a request's `post_format` asks for; a value the proto does
/// not list is refused, naming the field.
pub fn format(value: i32) -> Result<PostFormat, Status> {
    PostFormat::try_from(value).map_err(|_| {
        invalid_argument(
            "post_format",
            format!("{value} is not a PostFormat; use 0 (unspecified: plain), 1 plain, 2 markdown, 3 bbcode or 4 html"),
        )
    })
}

fn write(format: PostFormat, event: &Event, head_version: u64, permalink: &str, head_hash: &str) -> Post {
    let (written, format) = match format {
        PostFormat::Unspecified | PostFormat::Plain => (Format::Plain, PostFormat::Plain),
        PostFormat::Markdown => (Format::Markdown, PostFormat::Markdown),
        PostFormat::Bbcode => (Format::Bbcode, PostFormat::Bbcode),
        PostFormat::Html => (Format::Html, PostFormat::Html),
    };
    let post = post::render(written, event, &Place { head_version, permalink, head_hash });
    Post { format: format.into(), ru: post.ru, en: post.en }
}

/// The reply to OpenBattle with its post.
pub fn opened(format: PostFormat, mut reply: OpenBattleResponse) -> OpenBattleResponse {
    if let Some(opened) = &reply.opened {
        let participants = opened
            .participants
            .iter()
            .map(|sheet| struct_to_json(sheet).get("id").and_then(Value::as_str).unwrap_or_default().to_owned())
            .collect();
        let event = Event::Opened {
            battle_id: reply.battle_id.clone(),
            title: opened.title.clone(),
            ruleset: opened.ruleset.clone(),
            participants,
            commitment: opened.commitment.clone(),
        };
        reply.post = Some(write(format, &event, 0, &reply.permalink, &reply.head_hash));
    }
    reply
}

/// One recorded roll as a dice line: the renderer's pieces, or the
/// expression and its error when the arithmetic failed.
fn dice_line(roll: &DiceRolled) -> DiceLine {
    let pieces = match dice::Expression::parse(&roll.expression) {
        Ok(expression) if roll.error.is_empty() => {
            let rolled = dice::Roll { total: roll.total, dice: roll.dice.iter().map(die_from_proto).collect() };
            dice::pieces(&expression, &rolled)
        }
        _ => vec![dice::Piece::Text(format!("{}: {}", roll.expression, roll.error))],
    };
    DiceLine { purpose: roll.purpose.clone(), pieces }
}

/// The reply to Act with its post.
pub fn acted(format: PostFormat, mut reply: ActResponse) -> ActResponse {
    if let Some(resolved) = &reply.resolved {
        let action = resolved.action.as_ref().map(|action| Value::Object(struct_to_json(action)));
        let mut actor = action.as_ref().map(crate::service::actor_of).unwrap_or_default();
        if actor.is_empty() {
            actor = resolved.credential.as_ref().map(|c| c.subject.clone()).unwrap_or_default();
        }
        let event = Event::Acted {
            actor,
            summary_ru: resolved.summary_ru.clone(),
            summary_en: resolved.summary_en.clone(),
            dice: reply.rolls.iter().filter_map(|recorded| recorded.roll.as_ref()).map(dice_line).collect(),
        };
        reply.post = Some(write(format, &event, reply.version, &reply.permalink, &reply.head_hash));
    }
    reply
}

/// The reply to Dispute, Rule or Close with its post; `revealed` is the
/// seed a close revealed and its version, the head whose hash a close's
/// reply gives.
pub fn event(format: PostFormat, mut reply: EventResponse, revealed: Option<(&SeedRevealed, u64)>) -> EventResponse {
    let event = match reply.event.as_ref().and_then(|event| event.event.as_ref()) {
        Some(battle_event::Event::DisputeRaised(dispute)) => {
            Event::Disputed { by: dispute.by.clone(), refers_to: dispute.refers_to, reason: dispute.reason.clone() }
        }
        Some(battle_event::Event::JudgeRuling(ruling)) => Event::Ruled {
            judge: ruling.judge.clone(),
            refers_to: ruling.refers_to,
            text: ruling.text.clone(),
            overrides: ruling.r#override.is_some(),
        },
        Some(battle_event::Event::BattleClosed(closed)) => Event::Closed {
            // Who closed is the credential the resolver recorded; the
            // request's free-text `by` is only a note, which any forum token
            // could fill with a judge's name.
            by: closed_by(closed),
            reason: closed.reason.clone(),
            revealed: revealed.map(|(seed, _)| Revealed { epoch: seed.epoch, server_seed: seed.server_seed.clone() }),
        },
        _ => return reply,
    };
    let head_version = revealed.map_or(reply.version, |(_, version)| version);
    reply.post = Some(write(format, &event, head_version, &reply.permalink, &reply.head_hash));
    reply
}

/// The closer as a post names it: the recorded credential's role and
/// subject, e.g. `forum forum-pokeboard`; empty for a close recorded
/// without one.
fn closed_by(closed: &BattleClosed) -> String {
    closed.credential.as_ref().map(|c| format!("{} {}", c.role, c.subject)).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use battlelog_proto::v1::{ActionResolved, Credential, RecordedRoll};

    use super::*;

    #[test]
    fn an_unlisted_format_is_refused_naming_the_field() {
        let refused = format(9).expect_err("9 is no PostFormat");
        assert_eq!(refused.code(), tonic::Code::InvalidArgument);
        assert!(refused.message().contains("post_format"), "{refused:?}");
        assert_eq!(format(0).ok(), Some(PostFormat::Unspecified));
        assert_eq!(format(3).ok(), Some(PostFormat::Bbcode));
    }

    #[test]
    fn an_unspecified_format_is_answered_as_plain_text() {
        let reply = ActResponse {
            checkpoint: None,
            resolved: Some(ActionResolved {
                summary_ru: "ru".into(),
                summary_en: "en".into(),
                credential: Some(Credential { subject: "forum-bot".into(), ..Default::default() }),
                ..Default::default()
            }),
            version: 2,
            rolls: vec![RecordedRoll {
                roll: Some(DiceRolled {
                    expression: "1d6/0".into(),
                    purpose: "x".into(),
                    error: "division by zero".into(),
                    ..Default::default()
                }),
                ..Default::default()
            }],
            head_hash: "ab".repeat(32),
            ..Default::default()
        };
        let post = acted(PostFormat::Unspecified, reply).post.expect("a post");
        assert_eq!(post.format, i32::from(PostFormat::Plain));
        // No actor in the action: the caller who acted is named instead.
        assert!(post.en.starts_with("Action by forum-bot\nen\n"), "{}", post.en);
        assert!(post.en.contains("x: 1d6/0: division by zero"), "a failed roll shows its error: {}", post.en);
        assert!(!post.en.contains("http"), "no web_url, no link: {}", post.en);
    }
}
