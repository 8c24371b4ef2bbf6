//! The English and Russian text of every key an explanation or a state
//! view writes (`trait`, `pokemon.power.p6`, …): the one place a judge's
//! words are chosen, and what the web crate's one-word test reads.

use super::parts::Lang;

/// The text of a key in `lang`; an unknown key is its own text (a status
/// name, an ability, a forum's word).
pub fn label(key: &str, lang: Lang) -> String {
    match known_label(key) {
        Some((en, ru)) => match lang {
            Lang::En => en,
            Lang::Ru => ru,
        }
        .to_owned(),
        None => key.to_owned(),
    }
}

/// Whether [`label`] knows `key` (else it shows the key as it is).
pub fn is_known(key: &str) -> bool {
    known_label(key).is_some()
}

// long: data table
/// The table of every key the crate writes, in English and Russian: one
/// row a key, so it is as long as the vocabulary (the 80-line limit on
/// functions is for steps, not for data tables).
fn known_label(key: &str) -> Option<(&'static str, &'static str)> {
    Some(match key {
        // words of the explanation itself
        "dice" => ("dice", "кости"),
        "rule" => ("rule", "правило"),
        "yes" => ("yes", "да"),
        "no" => ("no", "нет"),
        "state" => ("state", "состояние"),
        "battle" => ("battle", "бой"),
        "participants" => ("participants", "участники"),
        // die roles and meanings
        "die" => ("die", "кубик"),
        "power" => ("power", "сила"),
        "paralysis" => ("paralysis", "паралич"),
        "infatuation" => ("infatuation", "очарование"),
        "confusion" => ("confusion", "путаница"),
        "flinch" => ("flinch", "вздрагивание"),
        "dodge" => ("dodge", "уклонение"),
        "attacker" => ("attacker", "атакующий"),
        "defender" => ("defender", "защитник"),
        "effect" => ("effect", "эффект"),
        "metronome" => ("Metronome", "Метроном"),
        "condition.fails" => ("the move fails", "приём срывается"),
        "condition.passes" => ("no effect", "не мешает"),
        "confusion.self" => ("odd: hits itself", "нечёт: бьёт себя"),
        "confusion.target" => ("even: hits the target", "чёт: бьёт цель"),
        "metronome.picks" => ("picks the move", "выбирает приём"),
        // sums and terms
        "total" => ("total", "итог"),
        "sum" => ("sum of the dice", "сумма костей"),
        "total_skill" => ("total skill", "суммарный скилл"),
        "attacker_total" => ("attacker's A", "A атакующего"),
        "defender_total" => ("defender's D", "D защитника"),
        "diff" => ("difference", "разница"),
        "effective_die" => ("effective die", "итоговое значение кубика"),
        "effect_value" => ("effect die", "кубик эффекта"),
        "trait" => ("trait", "черта"),
        "trait_value" => ("trait value", "значение черты"),
        "help" => ("help", "помощь"),
        "helpers" => ("helpers", "помощники"),
        "experience" => ("experience", "опыт"),
        "attack_experience" => ("attack experience", "опыт атаки"),
        "defense_experience" => ("defence experience", "опыт защиты"),
        "specialization" => ("specialization", "специализация"),
        "specialization_matches" => ("specialization matches", "специализация подходит"),
        "no_match" => ("does not match", "не подходит"),
        "skill_points" => ("skill points", "очки умения"),
        "artifact_bonus" => ("artifact bonus", "бонус артефакта"),
        "berserk_bonus" => ("berserk bonus", "бонус берсерка"),
        "aux_bonus" => ("auxiliary bonus", "вспомогательный бонус"),
        "die_modifier" => ("die modifier", "модификатор кубика"),
        "fixed_roll" => ("fixed roll", "фиксированный бросок"),
        "priority" => ("priority", "приоритет"),
        "multiplier" => ("multiplier", "множитель"),
        "hits" => ("hits", "удары"),
        "damage" => ("damage", "урон"),
        "damage_after" => ("damage after the dodge", "урон после уклонения"),
        "damage_kept" => ("damage kept", "остаётся урона"),
        "turns" => ("turns", "ходов"),
        "incoming_damage" => ("incoming damage", "входящий урон"),
        "effect_strength" => ("effect strength", "сила эффекта"),
        "effect_values" => ("X-Y-Z", "X-Y-Z"),
        "strike_values" => ("strike values", "значения удара"),
        "attacker_damage" => ("attacker's damage", "урон атакующего"),
        "defender_damage" => ("defender's damage", "урон защитника"),
        "tier" => ("tier", "ступень"),
        "weak" => ("weak", "слабый"),
        "medium" => ("medium", "средний"),
        "strong" => ("strong", "сильный"),
        "miss" => ("miss", "промах"),
        "none" => ("none", "нет"),
        // pbta traits
        "brawn" => ("brawn", "сила"),
        "grace" => ("grace", "ловкость"),
        "charm" => ("charm", "обаяние"),
        "grit" => ("grit", "стойкость"),
        "wits" => ("wits", "смекалка"),
        "cool" => ("cool", "хладнокровие"),
        // state fields
        "dodges_used" => ("dodges used", "уклонений использовано"),
        "dodges_left" => ("dodges left", "уклонений осталось"),
        "statuses" => ("statuses (turns left)", "состояния (осталось ходов)"),
        "charging" => ("preparing", "подготовка"),
        "flinched" => ("flinched", "вздрогнул"),
        "uses" => ("uses this episode", "использований в эпизоде"),
        "uses_left" => ("uses left this episode", "осталось в эпизоде"),
        "concentration_broken_in" => ("concentration broken in posts", "концентрация сбита в постах"),
        "episode" => ("episode", "эпизод"),
        "traits" => ("traits", "черты"),
        "awaiting_choice" => ("strikes awaiting the exchange choice", "удары ждут выбора обмена"),
        "pokemon" => ("Pokémon", "покемоны"),
        "broken_posts" => ("concentration broken in posts", "концентрация сбита в постах"),
        // pbta rows
        "pbta.full_success" => ("total 10 or more → full success", "итог 10 и больше → полный успех"),
        "pbta.success_with_cost" => ("total 7–9 → success at a cost", "итог 7–9 → успех с ценой"),
        "pbta.miss" => ("total 6 or less → miss, the GM makes a move", "итог 6 и меньше → провал, ход ведущего"),
        "pbta.helpers_exposed" => ("the helpers share the risk", "помощники разделяют риск"),
        // arcana rows
        "arcana.sum_2" => ("sum 2 → critical success", "сумма 2 → критический успех"),
        "arcana.sum_20_mastery" => {
            ("sum 20 at 12 points → ordinary failure", "сумма 20 при 12 очках → обычная неудача")
        }
        "arcana.sum_20" => ("sum 20 → critical failure", "сумма 20 → критическая неудача"),
        "arcana.sum_19" => ("sum 19 → ordinary failure", "сумма 19 → обычная неудача"),
        "arcana.sum_within_skill" => ("sum ≤ total skill → success", "сумма ≤ суммарного скилла → успех"),
        "arcana.sum_over_skill" => ("sum > total skill → failure", "сумма > суммарного скилла → неудача"),
        "arcana.concentration_broken" => (
            "an ordinary or critical failure breaks concentration for this post",
            "обычная или критическая неудача сбивает концентрацию до конца поста",
        ),
        "arcana.defend.lands" => {
            ("the defence did not stop the attack → it lands", "защита не остановила атаку → атака проходит")
        }
        "arcana.defend.crit_needs_crit" => (
            "a critical success is stopped only by a critical-success defence → it lands",
            "критический успех останавливает только критический успех защиты → атака проходит",
        ),
        "arcana.defend.stopped" => ("the defence succeeded → the attack is stopped", "защита удалась → атака отражена"),
        "arcana.defend.attack_failed" => ("the attack had failed → it does not land", "атака не удалась → не проходит"),
        "arcana.start_episode" => ("a new episode resets per-episode uses", "новый эпизод сбрасывает лимиты"),
        // berserk rows
        "berserk.no_fight.kind" => {
            ("not a simple strike → resolved as against a closed card", "не простой удар → как по закрытой карте")
        }
        "berserk.no_fight.closed" => {
            ("the defender is closed → only the attacker rolls", "защитник закрыт → бросает только атакующий")
        }
        "berserk.no_fight.own_squad" => ("a strike on its own squad → no fight", "удар по своему отряду → без боя"),
        "berserk.closed.weak" => ("A ≤ 3 → weak strike", "A ≤ 3 → слабый удар"),
        "berserk.closed.medium" => ("A 4–5 → medium strike", "A 4–5 → средний удар"),
        "berserk.closed.strong" => ("A ≥ 6 → strong strike", "A ≥ 6 → сильный удар"),
        "berserk.diff.ge5" => {
            ("difference ≥ +5 → attacker strong, defender misses", "разница ≥ +5 → атакующий сильный, защитник промах")
        }
        "berserk.diff.p4" => {
            ("difference +4 → attacker strong, defender weak", "разница +4 → атакующий сильный, защитник слабый")
        }
        "berserk.diff.p3" => {
            ("difference +3 → attacker medium, defender misses", "разница +3 → атакующий средний, защитник промах")
        }
        "berserk.diff.p2" => {
            ("difference +2 → attacker medium, defender weak", "разница +2 → атакующий средний, защитник слабый")
        }
        "berserk.diff.p1" => {
            ("difference +1 → attacker weak, defender misses", "разница +1 → атакующий слабый, защитник промах")
        }
        "berserk.diff.zero_low" => (
            "difference 0, A ≤ 4 → attacker weak, defender misses",
            "разница 0, A ≤ 4 → атакующий слабый, защитник промах",
        ),
        "berserk.diff.zero_high" => (
            "difference 0, A ≥ 5 → attacker misses, defender weak",
            "разница 0, A ≥ 5 → атакующий промах, защитник слабый",
        ),
        "berserk.diff.m1" => {
            ("difference −1 → attacker weak, defender misses", "разница −1 → атакующий слабый, защитник промах")
        }
        "berserk.diff.m2" => ("difference −2 → both miss", "разница −2 → оба промах"),
        "berserk.diff.m3" => {
            ("difference −3 → attacker misses, defender weak", "разница −3 → атакующий промах, защитник слабый")
        }
        "berserk.diff.m4" => {
            ("difference −4 → attacker weak, defender medium", "разница −4 → атакующий слабый, защитник средний")
        }
        "berserk.diff.le_m5" => {
            ("difference ≤ −5 → attacker misses, defender medium", "разница ≤ −5 → атакующий промах, защитник средний")
        }
        "berserk.exchange_avoided" => (
            "the higher side steps one row up and takes no blow",
            "выбросивший больше сдвигается на строку вверх и не получает удара",
        ),
        "berserk.pending_choice.attacker" => {
            ("the attacker may still avoid the exchange", "атакующий ещё может уйти от обмена")
        }
        "berserk.pending_choice.defender" => {
            ("the defender may still avoid the exchange", "защитник ещё может уйти от обмена")
        }
        "berserk.choice.avoid" => ("the exchange is avoided: one row up", "обмен ударами отменён: строка вверх"),
        "berserk.choice.keep" => ("the exchange stands as rolled", "обмен ударами остаётся"),
        "berserk.effect.x" => ("value ≤ 3 → X", "значение ≤ 3 → X"),
        "berserk.effect.y" => ("value 4–5 → Y", "значение 4–5 → Y"),
        "berserk.effect.z" => ("value ≥ 6 → Z", "значение ≥ 6 → Z"),
        // pokemon rows
        "pokemon.flinched" => ("the actor flinched: the move fails", "покемон вздрогнул: приём срывается"),
        "pokemon.charging" => ("a two-turn move: this turn prepares it", "двухходовый приём: этот ход — подготовка"),
        "pokemon.paralysis_fails" => ("paralysis die 1–2 → the move fails", "кубик паралича 1–2 → приём срывается"),
        "pokemon.infatuation_fails" => {
            ("infatuation die odd → the move fails", "кубик очарования нечётный → приём срывается")
        }
        "pokemon.confusion_self_hit" => ("confusion die odd → it hits itself", "кубик путаницы нечётный → бьёт себя"),
        "pokemon.power.p1" => ("power 1 → miss (no dodge spent)", "сила 1 → промах (уклонение не тратится)"),
        "pokemon.power.never_miss" => ("power 1, never misses → hit ×1/3", "сила 1, без промаха → попадание ×1/3"),
        "pokemon.power.p2" => ("power 2 → hit ×1/3", "сила 2 → попадание ×1/3"),
        "pokemon.power.p3" => ("power 3 → hit ×2/3", "сила 3 → попадание ×2/3"),
        "pokemon.power.p4" => ("power 4 → hit ×1", "сила 4 → попадание ×1"),
        "pokemon.power.p5" => ("power 5 → hit ×1", "сила 5 → попадание ×1"),
        "pokemon.power.p5_effect" => ("power 5 → hit ×1 and the effect applies", "сила 5 → попадание ×1 и эффект"),
        "pokemon.power.p6" => ("power 6 → critical hit ×2", "сила 6 → критическая атака ×2"),
        "pokemon.power.high_crit" => (
            "power 5 with a high critical ratio → critical hit ×2",
            "сила 5, высокий шанс крита → критическая атака ×2",
        ),
        "pokemon.power.high_crit_prefer_effect" => (
            "power 5 with a high critical ratio, the effect preferred → hit ×1 and the effect",
            "сила 5, высокий шанс крита, выбран эффект → попадание ×1 и эффект",
        ),
        "pokemon.power.variable" => ("variable power → hit ×(p−1)/5", "переменная сила → попадание ×(p−1)/5"),
        "pokemon.power.multi_hit" => ("multi-hit → p−1 hits at ×1", "серия ударов → p−1 ударов по ×1"),
        "pokemon.power.multi_hit_v2" => (
            "multi-hit → max(1, p−1) hits at the row's multiplier",
            "серия ударов → max(1, p−1) ударов с множителем строки",
        ),
        "pokemon.effect.status" => ("the effect lands for 2 turns", "эффект накладывается на 2 хода"),
        "pokemon.effect.flinch" => {
            ("the flinch effect: the target's next move fails", "эффект вздрагивания: следующий приём цели сорвётся")
        }
        "pokemon.interrupt" => ("an interrupting move: the target flinches", "прерывающий приём: цель вздрагивает"),
        "pokemon.breaks_charge" => ("a 6 breaks the target's preparation", "шестёрка срывает подготовку цели"),
        "pokemon.status.failed" => ("power 1–2 → the status move fails", "сила 1–2 → приём состояния срывается"),
        "pokemon.status.turns" => ("power 3–6 → the status lasts p−2 turns", "сила 3–6 → состояние на p−2 ходов"),
        "pokemon.dodge.e1" => ("effective die 1 → cannot dodge (counted)", "итог 1 → не уклоняется (засчитано)"),
        "pokemon.dodge.e2" => ("effective die 2 → damage −5% (counted)", "итог 2 → урон −5 % (засчитано)"),
        "pokemon.dodge.e3" => ("effective die 3 → damage −50% (counted)", "итог 3 → урон −50 % (засчитано)"),
        "pokemon.dodge.e4" => ("effective die 4 → damage −60% (counted)", "итог 4 → урон −60 % (засчитано)"),
        "pokemon.dodge.e5" => ("effective die 5 → clean dodge (counted)", "итог 5 → чистое уклонение (засчитано)"),
        "pokemon.dodge.e6" => ("effective die 6 → clean dodge, not counted", "итог 6 → чистое уклонение, не засчитано"),
        "pokemon.dodge.not_needed" => {
            ("the attack missed: no dodge needed, not counted", "атака промахнулась: уклонение не нужно и не засчитано")
        }
        "pokemon.dodge.flinched_teleport" => {
            ("a flinched Teleport fails (counted)", "Телепорт вздрогнувшего срывается (засчитано)")
        }
        "pokemon.metronome" => ("face k picks the k-th move", "грань k выбирает k-й приём"),
        "pokemon.pass" => ("the turn is skipped; statuses tick", "ход пропущен; состояния убывают"),
        // common rows
        "common.ruling" => ("a judge's ruling", "решение судьи"),
        "common.ruling.override" => {
            ("a judge's ruling replaces the outcome's fields", "решение судьи заменяет поля исхода")
        }
        "common.dispute" => ("a participant contests a result", "участник оспаривает результат"),
        "common.roll" => (
            "a free roll: its total is the result, no rule table applies",
            "свободный бросок: итог — сумма выражения, таблицы правил не применяются",
        ),
        "outcome_mismatch" => ("the outcome is not of this action", "исход не от этого действия"),
        _ => return None,
    })
}
