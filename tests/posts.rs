//! The forum posts of the resolver's mutating replies, over real gRPC
//! against the real binaries: an `Act` asking for BBCode gets the BBCode
//! post in Russian and English, with the reply's own permalink and head
//! hash and its dice; a retry (the same request_id) gets the same post; the
//! open, dispute, ruling and close posts carry theirs (the close, the seed
//! it revealed, as journaled); an unknown format is refused naming the field.

use battlelog_proto::v1 as pb;
use battlelog_test_support::stack::*;
use pb::PostFormat;
use serde_json::json;
use tonic::Code;

const BBCODE: i32 = PostFormat::Bbcode as i32;

/// The BBCode line of a free roll with no explosions, from the reply's own
/// dice: counted dice as they are, the others struck.
fn bbcode_dice_line(purpose: &str, roll: &pb::DiceRolled) -> String {
    let dice: Vec<String> = roll
        .dice
        .iter()
        .map(|die| if die.kept { die.value.to_string() } else { format!("[s]{}[/s]", die.value) })
        .collect();
    format!("{purpose}: {}: [{}] = {}", roll.expression, dice.join(", "), roll.total)
}

fn assert_footer(post: &pb::Post, permalink: &str, head_hash: &str) {
    assert_eq!(post.format, BBCODE, "{post:?}");
    assert_eq!(head_hash.len(), 64, "a head hash: {head_hash}");
    assert!(permalink.starts_with("http://127.0.0.1:8080/battles/"), "a permalink: {permalink}");
    for (text, page) in [(&post.ru, "Страница боя"), (&post.en, "Battle page")] {
        assert!(text.contains(&format!("[url={permalink}]{page}[/url]")), "the reply's permalink in\n{text}");
        assert!(text.contains(head_hash), "the reply's head hash in\n{text}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn act_answers_the_bbcode_post_with_its_permalink_and_head_hash() {
    let dir = battlelog_test_support::temp_dir("posts");
    let secret_file = dir.path().join("share.secret");
    let (_, options) = share_link_options(&secret_file, "http://127.0.0.1:8080/");
    let stack = Stack::start_with("posts", false, &options).await;
    let mut forum = resolver_client(&stack.resolver).await;
    let mut judge = judge_client(&stack.resolver).await;
    let battle = "posted";

    let open_request = pb::OpenBattleRequest {
        ruleset: "pbta-2d6@1".into(),
        title: "Дуэль [b]у озера".into(),
        participants: vec![obj(json!({"id": "ash", "traits": {"cool": 1}})), obj(json!({"id": "misty"}))],
        client_seed: "forum:tests/posts".into(),
        request_id: "open-posted".into(),
        battle_id: battle.into(),
        post_format: BBCODE,
        ..Default::default()
    };
    let opened = forum.open_battle(open_request.clone()).await.expect("opens").into_inner();
    let again = forum.open_battle(open_request).await.expect("a retried open").into_inner();
    assert_eq!(again.post, opened.post, "a retried open gets the same post");
    let post = opened.post.as_ref().expect("the opening post");
    assert_footer(post, &opened.permalink, &opened.head_hash);
    let commitment = &opened.opened.as_ref().expect("BattleOpened").commitment;
    assert!(post.en.starts_with("[b]Battle opened: Дуэль ［b］у озера[/b]\n"), "{}", post.en);
    assert!(post.ru.starts_with("[b]Бой открыт: Дуэль ［b］у озера[/b]\n"), "{}", post.ru);
    for text in [&post.ru, &post.en] {
        assert!(
            text.contains("pbta-2d6@1") && text.contains("ash, misty") && text.contains(commitment.as_str()),
            "{text}"
        );
    }

    let act_request = pb::ActRequest {
        battle_id: battle.into(),
        action: Some(obj(json!({"type": "roll", "actor": "ash", "expression": "4d6kh3", "purpose": "attack"}))),
        request_id: "roll-1".into(),
        post_format: BBCODE,
    };
    let acted = forum.act(act_request.clone()).await.expect("acts").into_inner();
    let post = acted.post.as_ref().expect("the action's post");
    assert_footer(post, &acted.permalink, &acted.head_hash);
    assert!(acted.permalink.ends_with(&format!("#v{}", acted.version)), "{}", acted.permalink);
    let roll = acted.rolls[0].roll.as_ref().expect("the roll");
    assert_eq!(roll.dice.iter().filter(|die| !die.kept).count(), 1, "4d6kh3 drops one die");
    let resolved = acted.resolved.as_ref().expect("the resolution");
    let line = bbcode_dice_line("attack", roll);
    assert!(post.en.starts_with("[b]Action by ash[/b]\n"), "{}", post.en);
    assert!(post.ru.starts_with("[b]Действие: ash[/b]\n"), "{}", post.ru);
    for (text, summary, label) in [(&post.ru, &resolved.summary_ru, "Броски"), (&post.en, &resolved.summary_en, "Dice")]
    {
        assert!(text.contains(&format!("{label}:\n[spoiler]\n{line}\n[/spoiler]")), "{line} in a spoiler in\n{text}");
        // The journaled summary writes its brackets fullwidth: it is text.
        assert!(text.contains(&summary.replace('[', "［").replace(']', "］")), "{summary} in\n{text}");
    }

    // A retry answers from the journal, with the same post.
    let again = forum.act(act_request.clone()).await.expect("a retry").into_inner();
    assert_eq!(again.post, acted.post, "a retry gets the same post");
    // Another format of the same request: the same facts, in Markdown.
    let markdown =
        forum.act(pb::ActRequest { post_format: PostFormat::Markdown as i32, ..act_request }).await.expect("a retry");
    let markdown = markdown.into_inner().post.expect("a post");
    assert_eq!(markdown.format, PostFormat::Markdown as i32);
    assert!(markdown.en.starts_with("**Action by ash**") && markdown.en.contains(&acted.head_hash), "{}", markdown.en);

    let unknown = pb::ActRequest {
        battle_id: battle.into(),
        action: Some(obj(json!({"type": "roll", "actor": "ash", "expression": "1d6"}))),
        request_id: "roll-unknown-format".into(),
        post_format: 9,
    };
    let refused = forum.act(unknown).await.expect_err("an unknown format");
    assert_eq!(refused.code(), Code::InvalidArgument, "{refused:?}");
    assert!(refused.message().contains("post_format"), "{refused:?}");

    let dispute = pb::DisputeRequest {
        battle_id: battle.into(),
        by: "misty".into(),
        refers_to: acted.version,
        reason: "[url=javascript:alert(1)]x[/url]".into(),
        request_id: "dispute-1".into(),
        post_format: BBCODE,
    };
    let disputed = forum.dispute(dispute).await.expect("disputes").into_inner();
    let post = disputed.post.as_ref().expect("the dispute's post");
    assert_footer(post, &disputed.permalink, &disputed.head_hash);
    assert!(post.en.contains(&format!("[b]Dispute by misty of version {}[/b]", acted.version)), "{}", post.en);
    assert!(!post.en.contains("[url=javascript"), "{}", post.en);

    let rule = pb::RuleRequest {
        battle_id: battle.into(),
        refers_to: acted.version,
        text: "The roll stands.".into(),
        request_id: "rule-1".into(),
        post_format: BBCODE,
        ..Default::default()
    };
    let ruled = judge.rule(rule).await.expect("rules").into_inner();
    let post = ruled.post.as_ref().expect("the ruling's post");
    assert_footer(post, &ruled.permalink, &ruled.head_hash);
    assert!(post.en.contains("The roll stands."), "{}", post.en);

    let close_request = pb::CloseRequest {
        battle_id: battle.into(),
        by: "judge-anna".into(),
        reason: "the test is over".into(),
        request_id: "close-1".into(),
        post_format: BBCODE,
    };
    let closed = judge.close(close_request.clone()).await.expect("closes").into_inner();
    let post = closed.post.as_ref().expect("the close's post");
    assert_footer(post, &closed.permalink, &closed.head_hash);
    let (seed, reveal_version) = journaled(&stack, battle)
        .await
        .into_iter()
        .find_map(|e| match &e.event {
            pb::battle_event::Event::SeedRevealed(revealed) => Some((revealed.server_seed.clone(), e.version())),
            _ => None,
        })
        .expect("the close revealed the seed");
    // The close's head is the SeedRevealed after the BattleClosed: the post
    // names that version beside the hash, not the close's own.
    assert!(reveal_version > closed.version, "the reveal follows the close");
    assert!(post.en.contains(&format!("Head hash at version {reveal_version}: {}", closed.head_hash)), "{}", post.en);
    assert!(post.ru.contains(&format!("Хеш журнала на версии {reveal_version}: {}", closed.head_hash)), "{}", post.ru);
    // Issue 21: who closed is the credential, never the request's free
    // text (a note any token may fill with a name).
    assert!(post.en.contains("[b]Battle closed by judge judge-jenny[/b]"), "{}", post.en);
    assert!(post.ru.contains("[b]Бой закрыт: judge judge-jenny[/b]"), "{}", post.ru);
    assert!(!post.en.contains("judge-anna") && !post.ru.contains("judge-anna"), "{}", post.en);
    assert!(post.en.contains(&format!("Server seed of epoch 0 revealed: {seed}")), "{}", post.en);
    assert!(post.ru.contains(&format!("Раскрыт серверный сид эпохи 0: {seed}")), "{}", post.ru);
    let again = judge.close(close_request).await.expect("a retried close").into_inner();
    assert_eq!(again.post, closed.post, "a retried close gets the same post");
}
