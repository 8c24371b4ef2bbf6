//! battlelog's one error vocabulary, and the one place where an error
//! becomes a gRPC [`Status`] and a status becomes an error again.
//!
//! Every error a battlelog service answers with is an [`Error`]: a
//! [`Reason`] from one enum per area ([`RequestReason`], [`AuthReason`],
//! [`JournalReason`], [`BattleReason`], [`RulesReason`], [`LimitReason`],
//! [`InternalReason`]), whose UPPER_SNAKE name is stable and unique within
//! the one domain [`DOMAIN`], and whose gRPC code is fixed by the reason.
//! [`Error::into_status`] is the only code in the workspace that builds a
//! `Status` (a test in `tests/` holds every crate to that), so that every
//! answer carries:
//!
//! - a `google.rpc.ErrorInfo` (domain `battlelog.dev`, the reason, and
//!   metadata: the docs/rules.md section of a rules refusal, the field or the
//!   versions at fault, …);
//! - a `google.rpc.BadRequest` naming the field of an `INVALID_ARGUMENT`,
//!   and a `google.rpc.RetryInfo` where waiting helps;
//! - a `google.rpc.LocalizedMessage` in English and one in Russian, of which
//!   the server's door ([`localize`], run by `battlelog_runtime::grpc`) keeps
//!   the one the request's `accept-language` prefers.
//!
//! [`Error::from_status`] reads a status back, by its `ErrorInfo` alone
//! (never by message text): the CLI, and the resolver and roller as clients
//! of the roller and the journal, branch on the typed reason.
//! [`reasons_table`] writes the table of `docs/errors.md`.
//!
//! Modelled on quickwit's `quickwit-proto` error module: one code per
//! error, mapped to gRPC once.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::time::Duration;

use rules::error::Rejection;
pub use rules::error::RulesReason;
use tonic::{Code, Status};
use tonic_types::{BadRequest, ErrorDetail, ErrorInfo, FieldViolation, LocalizedMessage, RetryInfo, StatusExt};

/// The `google.rpc.ErrorInfo` domain of every battlelog error.
pub const DOMAIN: &str = "battlelog.dev";

/// Declares one area's reasons: each variant's wire name, gRPC code, and
/// what it means in English and Russian (the table's text, and the Russian
/// message of an error that brings none of its own).
macro_rules! reasons {
    ($(#[$doc:meta])* $name:ident, $area:literal {
        $($(#[$vdoc:meta])* $variant:ident = $text:literal, $code:ident, $en:literal, $ru:literal;)*
    }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name {
            $($(#[$vdoc])* $variant,)*
        }

        impl $name {
            /// Every reason of the area.
            pub const ALL: &'static [$name] = &[$($name::$variant),*];
            /// The area's name in the docs' table.
            pub const AREA: &'static str = $area;

            /// The UPPER_SNAKE reason on the wire.
            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $text,)* }
            }

            /// The gRPC code a status with this reason has.
            pub fn code(self) -> Code {
                match self { $($name::$variant => Code::$code,)* }
            }

            /// What the reason means, in English.
            pub fn meaning_en(self) -> &'static str {
                match self { $($name::$variant => $en,)* }
            }

            /// What the reason means, in Russian.
            pub fn meaning_ru(self) -> &'static str {
                match self { $($name::$variant => $ru,)* }
            }
        }

        impl From<$name> for Reason {
            fn from(reason: $name) -> Reason {
                Reason::$name(reason)
            }
        }
    };
}

reasons! {
    /// Bad input, whatever the state: the field is named in metadata `field`
    /// and in a `BadRequest` violation.
    RequestReason, "request" {
        InvalidField = "INVALID_FIELD", InvalidArgument,
            "A request field is missing, malformed or over its limit (metadata `field`).",
            "Поле запроса отсутствует, записано неверно или превышает предел (metadata `field`).";
    }
}

reasons! {
    /// Who may call: bearer tokens, roles, share keys.
    AuthReason, "auth" {
        TokenMissing = "TOKEN_MISSING", Unauthenticated,
            "The request carries no bearer token.", "В запросе нет токена.";
        TokenMalformed = "TOKEN_MALFORMED", Unauthenticated,
            "The bearer token is not a well-formed token.", "Токен записан неверно.";
        TokenExpired = "TOKEN_EXPIRED", Unauthenticated,
            "The token has expired.", "Срок действия токена истёк.";
        TokenUnknownKey = "TOKEN_UNKNOWN_KEY", Unauthenticated,
            "The token is signed by a key this service does not know.",
            "Токен подписан неизвестным ключом.";
        TokenBadSignature = "TOKEN_BAD_SIGNATURE", Unauthenticated,
            "The token's signature does not verify.", "Подпись токена неверна.";
        TokenNotYetValid = "TOKEN_NOT_YET_VALID", Unauthenticated,
            "The token is not valid yet.", "Токен ещё не действует.";
        TokenIssuedInFuture = "TOKEN_ISSUED_IN_FUTURE", Unauthenticated,
            "The token says it was issued in the future.", "Токен выпущен в будущем.";
        TokenLifetimeTooLong = "TOKEN_LIFETIME_TOO_LONG", Unauthenticated,
            "The token lives longer than this service allows.",
            "Токен действует дольше, чем разрешает сервис.";
        TokenRevoked = "TOKEN_REVOKED", Unauthenticated,
            "The token has been revoked.", "Токен отозван.";
        TokenTenantReserved = "TOKEN_TENANT_RESERVED", Unauthenticated,
            "The token names a reserved tenant (`_`), which no forum may be.",
            "Токен указывает зарезервированного арендатора (`_`), которым не может быть ни один форум.";
        RoleNotAllowed = "ROLE_NOT_ALLOWED", PermissionDenied,
            "The token's role may not make this call (metadata `needed`).",
            "Роль токена не позволяет этот вызов (metadata `needed`).";
        ShareKeyMalformed = "SHARE_KEY_MALFORMED", PermissionDenied,
            "The share key is not a valid header value.", "Ключ доступа записан неверно.";
    }
}

reasons! {
    /// The journal's append guards: concurrency, idempotency and the battle
    /// guard's rules of what may follow what in a battle's stream.
    JournalReason, "journal" {
        WrongExpectedVersion = "WRONG_EXPECTED_VERSION", Aborted,
            "The stream is not at the expected version (metadata `actual_version`); fold again and retry.",
            "Поток не на ожидаемой версии (metadata `actual_version`); перечитайте и повторите.";
        IdempotencyKeyReused = "IDEMPOTENCY_KEY_REUSED", FailedPrecondition,
            "The request id (idempotency key) was already used for a different request.",
            "Этот request id (ключ идемпотентности) уже использован для другого запроса.";
        IdempotencyPartialRepeat = "IDEMPOTENCY_PARTIAL_REPEAT", FailedPrecondition,
            "One append mixes repeated idempotency keys with new ones.",
            "Одна запись смешивает повторные ключи идемпотентности с новыми.";
        EventUndecodable = "EVENT_UNDECODABLE", InvalidArgument,
            "The payload is not exactly one battle event.", "Содержимое — не ровно одно событие боя.";
        EventTypeMismatch = "EVENT_TYPE_MISMATCH", InvalidArgument,
            "The record's event type does not name its payload's event.",
            "Тип события записи не совпадает с её содержимым.";
        EventMalformed = "EVENT_MALFORMED", InvalidArgument,
            "A field of the event that must be well formed is not.", "Поле события записано неверно.";
        BattleNotOpened = "BATTLE_NOT_OPENED", FailedPrecondition,
            "Version 0 of a battle must be its BattleOpened.", "Версия 0 боя должна быть его BattleOpened.";
        BattleAlreadyOpened = "BATTLE_ALREADY_OPENED", FailedPrecondition,
            "A battle is opened only at version 0.", "Бой открывается только на версии 0.";
        NonceOutOfOrder = "NONCE_OUT_OF_ORDER", FailedPrecondition,
            "A roll's nonce is not the battle's next one.", "Nonce броска — не следующий в бою.";
        EpochMismatch = "EPOCH_MISMATCH", FailedPrecondition,
            "The event is for another seed epoch than the current one.", "Событие относится к другой эпохе сида.";
        EpochRevealed = "EPOCH_REVEALED", FailedPrecondition,
            "The epoch's seed is already revealed.", "Сид этой эпохи уже раскрыт.";
        EpochNotRevealed = "EPOCH_NOT_REVEALED", FailedPrecondition,
            "A new epoch was committed before the current one was revealed.",
            "Новая эпоха заявлена до раскрытия текущей.";
        SeedMismatch = "SEED_MISMATCH", FailedPrecondition,
            "The revealed seed does not match its commitment.", "Раскрытый сид не совпадает с обязательством.";
        ActionPending = "ACTION_PENDING", FailedPrecondition,
            "An action of the battle is rolled but not yet resolved: only its resolution may follow its rolls.",
            "Действие в бою брошено, но ещё не разрешено: за его бросками может идти только его разрешение.";
        StreamNotABattle = "STREAM_NOT_A_BATTLE", FailedPrecondition,
            "What the stream holds does not fold as a battle.", "Содержимое потока не складывается в бой.";
        BattleBudgetExceeded = "BATTLE_BUDGET_EXCEEDED", FailedPrecondition,
            "The event would take the battle past its size budget.", "Событие превысило бы лимит размера боя.";
        JournalShuttingDown = "JOURNAL_SHUTTING_DOWN", Unavailable,
            "The journal is shutting down; retry.", "Журнал останавливается; повторите позже.";
        RecordCorrupt = "RECORD_CORRUPT", DataLoss,
            "A stored record could not be read back.", "Сохранённую запись не удалось прочитать.";
        StorageUnavailable = "STORAGE_UNAVAILABLE", Unavailable,
            "The journal's storage does not answer; retry.", "Хранилище журнала не отвечает; повторите позже.";
        StorageFailed = "STORAGE_FAILED", Internal,
            "The journal's storage failed.", "Сбой хранилища журнала.";
        StoreBehindCheckpoint = "STORE_BEHIND_CHECKPOINT", FailedPrecondition,
            "The journal's store does not hold the log its last signed checkpoint covers (records lost, or another log put in its place; metadata `store_size`, `checkpoint_size`): it takes no appends and signs nothing until its operator restores the data dir or accepts the loss (docs/operating.md).",
            "Хранилище журнала не содержит журнал, который покрывает его последняя подписанная контрольная точка (записи потеряны или журнал подменён; metadata `store_size`, `checkpoint_size`): журнал не принимает записи и ничего не подписывает, пока оператор не восстановит каталог данных или не примет потерю (docs/operating.md).";
    }
}

reasons! {
    /// A battle's life: opened, busy, closed, final.
    BattleReason, "battle" {
        BattleNotFound = "BATTLE_NOT_FOUND", NotFound,
            "No such battle has been opened.", "Такой бой не открыт.";
        BattleExists = "BATTLE_EXISTS", AlreadyExists,
            "A battle with this id already exists.", "Бой с таким id уже существует.";
        BattleClosed = "BATTLE_CLOSED", FailedPrecondition,
            "The battle is closed.", "Бой закрыт.";
        BattleFinal = "BATTLE_FINAL", FailedPrecondition,
            "The battle's appeal window has ended; no dispute or ruling may follow.",
            "Срок обжалования боя истёк; споры и решения судьи больше не принимаются.";
        BattleBusy = "BATTLE_BUSY", Aborted,
            "The battle is too busy; retry with the same request id.",
            "Бой слишком занят; повторите с тем же request id.";
        VersionPastHead = "VERSION_PAST_HEAD", OutOfRange,
            "The version asked for is past the battle's head.", "Запрошенная версия дальше последней версии боя.";
    }
}

reasons! {
    /// The servers' edges: connection, request, rate and stream limits.
    LimitReason, "limits" {
        Overloaded = "OVERLOADED", ResourceExhausted,
            "The server is at its limit of concurrent requests; retry shortly.",
            "Сервер обрабатывает предельное число запросов; повторите чуть позже.";
        RateLimited = "RATE_LIMITED", ResourceExhausted,
            "The tenant is over its rate limit; retry after the RetryInfo delay.",
            "Превышен лимит запросов арендатора; повторите после задержки RetryInfo.";
        TooManyStreams = "TOO_MANY_STREAMS", ResourceExhausted,
            "Too many streams are open (metadata `per`, `limit`); end one first.",
            "Открыто слишком много потоков (metadata `per`, `limit`); закройте один.";
        DeadlinePassed = "DEADLINE_PASSED", DeadlineExceeded,
            "The call's deadline passed.", "Срок вызова истёк.";
        CallerGone = "CALLER_GONE", Cancelled,
            "The caller went away before any die was drawn; nothing was done.",
            "Вызывающий ушёл до броска костей; ничего не сделано.";
    }
}

reasons! {
    /// Not a refusal: a fault of ours or of a peer, or an outage.
    InternalReason, "internal" {
        Internal = "INTERNAL", Internal,
            "An internal invariant failed: a bug of ours.", "Нарушен внутренний инвариант: ошибка сервиса.";
        DataLoss = "DATA_LOSS", DataLoss,
            "Recorded data does not read back as it must.", "Записанные данные не читаются как должны.";
        Unavailable = "UNAVAILABLE", Unavailable,
            "A service could not be reached; retry later.", "Сервис недоступен; повторите позже.";
    }
}

/// Why: one reason of one area.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[allow(clippy::enum_variant_names)]
pub enum Reason {
    RequestReason(RequestReason),
    AuthReason(AuthReason),
    JournalReason(JournalReason),
    BattleReason(BattleReason),
    RulesReason(RulesReason),
    LimitReason(LimitReason),
    InternalReason(InternalReason),
}

impl From<RulesReason> for Reason {
    fn from(reason: RulesReason) -> Reason {
        Reason::RulesReason(reason)
    }
}

impl Reason {
    /// Every reason of every area, in the docs' order.
    pub fn all() -> Vec<Reason> {
        let mut all: Vec<Reason> = Vec::new();
        all.extend(RequestReason::ALL.iter().map(|&r| Reason::from(r)));
        all.extend(AuthReason::ALL.iter().map(|&r| Reason::from(r)));
        all.extend(JournalReason::ALL.iter().map(|&r| Reason::from(r)));
        all.extend(BattleReason::ALL.iter().map(|&r| Reason::from(r)));
        all.extend(RulesReason::ALL.iter().map(|&r| Reason::from(r)));
        all.extend(LimitReason::ALL.iter().map(|&r| Reason::from(r)));
        all.extend(InternalReason::ALL.iter().map(|&r| Reason::from(r)));
        all
    }

    /// The UPPER_SNAKE reason on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::RequestReason(r) => r.as_str(),
            Reason::AuthReason(r) => r.as_str(),
            Reason::JournalReason(r) => r.as_str(),
            Reason::BattleReason(r) => r.as_str(),
            Reason::RulesReason(r) => r.as_str(),
            Reason::LimitReason(r) => r.as_str(),
            Reason::InternalReason(r) => r.as_str(),
        }
    }

    /// The area the reason belongs to.
    pub fn area(self) -> &'static str {
        match self {
            Reason::RequestReason(_) => RequestReason::AREA,
            Reason::AuthReason(_) => AuthReason::AREA,
            Reason::JournalReason(_) => JournalReason::AREA,
            Reason::BattleReason(_) => BattleReason::AREA,
            Reason::RulesReason(_) => "rules",
            Reason::LimitReason(_) => LimitReason::AREA,
            Reason::InternalReason(_) => InternalReason::AREA,
        }
    }

    /// The gRPC code of a status with this reason (an [`Error`] may say
    /// otherwise, e.g. a peer's bad input passed on as ours to prevent).
    pub fn code(self) -> Code {
        match self {
            Reason::RequestReason(r) => r.code(),
            Reason::AuthReason(r) => r.code(),
            Reason::JournalReason(r) => r.code(),
            Reason::BattleReason(r) => r.code(),
            // The rules forbid the action in the battle's present state.
            Reason::RulesReason(_) => Code::FailedPrecondition,
            Reason::LimitReason(r) => r.code(),
            Reason::InternalReason(r) => r.code(),
        }
    }

    /// The reason named `text`, if battlelog has one.
    pub fn parse(text: &str) -> Option<Reason> {
        Reason::all().into_iter().find(|r| r.as_str() == text)
    }

    /// What the reason means in `lang`, for errors that bring no message of
    /// their own in that language (the rules' refusals bring theirs).
    fn meaning(self, lang: Lang) -> &'static str {
        let pick = |en, ru| if lang == Lang::Ru { ru } else { en };
        match self {
            Reason::RequestReason(r) => pick(r.meaning_en(), r.meaning_ru()),
            Reason::AuthReason(r) => pick(r.meaning_en(), r.meaning_ru()),
            Reason::JournalReason(r) => pick(r.meaning_en(), r.meaning_ru()),
            Reason::BattleReason(r) => pick(r.meaning_en(), r.meaning_ru()),
            Reason::RulesReason(_) => pick("The rules forbid the action.", "Правила запрещают это действие."),
            Reason::LimitReason(r) => pick(r.meaning_en(), r.meaning_ru()),
            Reason::InternalReason(r) => pick(r.meaning_en(), r.meaning_ru()),
        }
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The two languages messages come in: the players write Russian.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Lang {
    /// English, unless Russian is preferred.
    #[default]
    En,
    /// Russian.
    Ru,
}

impl Lang {
    /// The BCP 47 tag of the `LocalizedMessage.locale`.
    pub fn tag(self) -> &'static str {
        match self {
            Lang::En => "en",
            Lang::Ru => "ru",
        }
    }

    /// The language an HTTP `Accept-Language` value prefers among the two:
    /// Russian when the highest-weighted range for `ru` or `en` (or `*`,
    /// which counts as English) is `ru`, English otherwise. On equal
    /// weights the first listed wins; a range weighted 0 is refused.
    pub fn from_accept_language(value: &str) -> Lang {
        let mut best: Option<(f32, Lang)> = None;
        for range in value.split(',') {
            let mut parts = range.split(';');
            let tag = parts.next().unwrap_or_default().trim().to_ascii_lowercase();
            let primary = tag.split(['-', '_']).next().unwrap_or_default();
            let lang = match primary {
                "ru" => Lang::Ru,
                "en" | "*" => Lang::En,
                _ => continue,
            };
            let weight = parts
                .find_map(|p| p.trim().strip_prefix("q=").map(|q| q.trim().parse::<f32>().unwrap_or(0.0)))
                .unwrap_or(1.0);
            if weight > 0.0 && best.is_none_or(|(w, _)| weight > w) {
                best = Some((weight, lang));
            }
        }
        best.map_or(Lang::En, |(_, lang)| lang)
    }
}

/// An error as every battlelog service answers it and every client reads
/// it back. Built by the constructors here or by a crate's `From` for its
/// own error type; leaves as a status only through [`Error::into_status`].
#[derive(Debug, Clone, PartialEq)]
pub struct Error {
    /// Why.
    pub reason: Reason,
    /// The gRPC code: the reason's, unless passed on as another.
    pub code: Code,
    /// The English message (the status message).
    pub message: String,
    /// The Russian message.
    pub message_ru: String,
    /// The `ErrorInfo` metadata: `section` for a rules refusal, `field`,
    /// versions, limits…
    pub metadata: BTreeMap<String, String>,
    /// The `BadRequest` violation of an `INVALID_ARGUMENT`: (field, what is wrong).
    pub violation: Option<(String, String)>,
    /// How long to wait before retrying, when that is known.
    pub retry_after: Option<Duration>,
}

impl Error {
    /// An error with `reason`'s code, the English `message`, and the
    /// reason's meaning as its Russian message.
    pub fn new(reason: impl Into<Reason>, message: impl Into<String>) -> Error {
        let reason = reason.into();
        Error {
            reason,
            code: reason.code(),
            message: message.into(),
            message_ru: reason.meaning(Lang::Ru).to_owned(),
            metadata: BTreeMap::new(),
            violation: None,
            retry_after: None,
        }
    }

    /// Adds `key: value` to the `ErrorInfo` metadata.
    pub fn with(mut self, key: &str, value: impl ToString) -> Error {
        self.metadata.insert(key.to_owned(), value.to_string());
        self
    }

    /// Replaces the Russian message.
    pub fn with_message_ru(mut self, message_ru: impl Into<String>) -> Error {
        self.message_ru = message_ru.into();
        self
    }

    /// Answers with `code` instead of the reason's.
    pub fn with_code(mut self, code: Code) -> Error {
        self.code = code;
        self
    }

    /// Adds a `RetryInfo` with `delay`.
    pub fn with_retry_after(mut self, delay: Duration) -> Error {
        self.retry_after = Some(delay);
        self
    }

    /// `INVALID_ARGUMENT` naming `field`: the message `<field>: <what>`,
    /// metadata `field`, and a `BadRequest` violation of the field.
    pub fn invalid_argument(field: &str, description: impl Into<String>) -> Error {
        let description = description.into();
        let mut error = Error::new(RequestReason::InvalidField, format!("{field}: {description}")).with("field", field);
        error.message_ru = format!("{field}: поле отсутствует, записано неверно или превышает предел: {description}");
        error.violation = Some((field.to_owned(), description));
        error
    }

    /// A refusal of the rules (`FAILED_PRECONDITION`): the rule's reason,
    /// metadata `section` (its section of docs/rules.md), the English message
    /// the rules word and their Russian one.
    pub fn rejection(rejection: &Rejection) -> Error {
        Error::new(rejection.reason(), rejection.to_string())
            .with_message_ru(rejection.message_ru())
            .with("section", rejection.section())
    }

    /// `BATTLE_CLOSED`: the battle takes nothing more but its appeal.
    pub fn battle_closed(battle_id: &str) -> Error {
        Error::new(BattleReason::BattleClosed, format!("battle {battle_id} is closed"))
            .with_message_ru(format!("бой {battle_id} закрыт"))
            .with("battle_id", battle_id)
    }

    /// `BATTLE_NOT_FOUND`: no battle `battle_id` has been opened (for this
    /// tenant: another tenant's battle is not found either).
    pub fn battle_not_found(battle_id: &str) -> Error {
        Error::new(BattleReason::BattleNotFound, format!("battle {battle_id} has not been opened"))
            .with_message_ru(format!("бой {battle_id} не открыт"))
            .with("battle_id", battle_id)
    }

    /// `INTERNAL`: an invariant of ours failed.
    pub fn internal(message: impl Into<String>) -> Error {
        Error::new(InternalReason::Internal, message)
    }

    /// `DATA_LOSS`: recorded data does not read back as it must.
    pub fn data_loss(message: impl Into<String>) -> Error {
        Error::new(InternalReason::DataLoss, message)
    }

    /// `UNAVAILABLE`: a peer could not be reached.
    pub fn unavailable(message: impl Into<String>) -> Error {
        Error::new(InternalReason::Unavailable, message)
    }

    /// The message in `lang`.
    pub fn localized(&self, lang: Lang) -> &str {
        match lang {
            Lang::En => &self.message,
            Lang::Ru => &self.message_ru,
        }
    }

    /// The status for a caller: the one place a battlelog `Status` is
    /// built. It carries both messages; [`localize`] keeps one at the door.
    ///
    /// Every text is cut to its share of the response headers first
    /// ([`bounded`]): a message echoing a 5 000-character field would
    /// otherwise outgrow the client's 16 KiB header limit, and the caller
    /// would see `RESOURCE_EXHAUSTED` instead of this error.
    pub fn into_status(self) -> Status {
        let metadata: HashMap<String, String> = self
            .metadata
            .into_iter()
            .take(MAX_METADATA_ENTRIES)
            .map(|(key, value)| (bounded(key, MAX_NAME_BYTES), bounded(value, MAX_METADATA_VALUE_BYTES)))
            .collect();
        let message = bounded(self.message, MAX_MESSAGE_BYTES);
        let mut details = vec![ErrorDetail::ErrorInfo(ErrorInfo::new(self.reason.as_str(), DOMAIN, metadata))];
        if let Some((field, description)) = self.violation {
            let violation =
                FieldViolation::new(bounded(field, MAX_NAME_BYTES), bounded(description, MAX_MESSAGE_BYTES));
            details.push(ErrorDetail::BadRequest(BadRequest::new(vec![violation])));
        }
        if let Some(delay) = self.retry_after {
            details.push(ErrorDetail::RetryInfo(RetryInfo::new(Some(delay))));
        }
        details.push(ErrorDetail::LocalizedMessage(LocalizedMessage::new(Lang::En.tag(), message.clone())));
        let message_ru = bounded(self.message_ru, MAX_MESSAGE_BYTES);
        details.push(ErrorDetail::LocalizedMessage(LocalizedMessage::new(Lang::Ru.tag(), message_ru)));
        Status::with_error_details_vec(self.code, message, details)
    }

    /// Reads a battlelog status back by its `ErrorInfo`: `None` when it
    /// carries none of [`DOMAIN`] with a known reason (a transport failure,
    /// another server). A message missing in one language is the other's.
    pub fn from_status(status: &Status) -> Option<Error> {
        let details = status.get_error_details_vec();
        let info = details.iter().find_map(|d| match d {
            ErrorDetail::ErrorInfo(info) if info.domain == DOMAIN => Some(info),
            _ => None,
        })?;
        let reason = Reason::parse(&info.reason)?;
        let localized = |lang: Lang| {
            details.iter().find_map(|d| match d {
                ErrorDetail::LocalizedMessage(m) if m.locale == lang.tag() => Some(m.message.clone()),
                _ => None,
            })
        };
        let violation = details.iter().find_map(|d| match d {
            ErrorDetail::BadRequest(b) => b.field_violations.first().map(|v| (v.field.clone(), v.description.clone())),
            _ => None,
        });
        let retry_after = details.iter().find_map(|d| match d {
            ErrorDetail::RetryInfo(r) => r.retry_delay,
            _ => None,
        });
        let message = localized(Lang::En).unwrap_or_else(|| status.message().to_owned());
        Some(Error {
            reason,
            code: status.code(),
            message_ru: localized(Lang::Ru).unwrap_or_else(|| message.clone()),
            message,
            metadata: info.metadata.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
            violation,
            retry_after,
        })
    }
}

/// Most bytes of a message (English or Russian) or a violation's
/// description in a status. The status message travels percent-encoded in
/// `grpc-message` (up to three characters a byte) and again, with the
/// Russian one, the violation and the metadata, in base64 in
/// `grpc-status-details-bin`: with these bounds all of it stays under
/// 12 KiB, inside the 16 KiB of header list a gRPC client accepts.
pub const MAX_MESSAGE_BYTES: usize = 1024;
/// Most bytes of a field name or a metadata key.
pub const MAX_NAME_BYTES: usize = 128;
/// Most bytes of one metadata value.
pub const MAX_METADATA_VALUE_BYTES: usize = 256;
/// Most metadata entries (every error of the workspace has a few).
pub const MAX_METADATA_ENTRIES: usize = 8;

/// `text` when it fits in `max` bytes; else its head and tail with how
/// much was cut between them, within `max` bytes and on character
/// boundaries: a message names its field first and often its limit last,
/// and both stay.
pub fn bounded(text: String, max: usize) -> String {
    if text.len() <= max {
        return text;
    }
    let marker = |cut: usize| format!(" …[{cut} bytes cut]… ");
    // The marker at its longest: the whole text cut.
    let room = max.saturating_sub(marker(text.len()).len());
    let floor = |mut i: usize| {
        while !text.is_char_boundary(i) {
            i -= 1;
        }
        i
    };
    let ceil = |mut i: usize| {
        while !text.is_char_boundary(i) {
            i += 1;
        }
        i
    };
    let head = floor(room * 2 / 3);
    let tail = ceil(text.len() - (room - room * 2 / 3));
    format!("{}{}{}", &text[..head], marker(tail - head), &text[tail..])
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

impl From<Error> for Status {
    fn from(error: Error) -> Status {
        error.into_status()
    }
}

/// `status` with only the `LocalizedMessage` in `lang` (both when it has
/// none in `lang`), for the server's door to send.
pub fn localize(status: &Status, lang: Lang) -> Status {
    let mut details = status.get_error_details_vec();
    let has = details.iter().any(|d| matches!(d, ErrorDetail::LocalizedMessage(m) if m.locale == lang.tag()));
    if has {
        details.retain(|d| !matches!(d, ErrorDetail::LocalizedMessage(m) if m.locale != lang.tag()));
    }
    Status::with_error_details_vec(status.code(), status.message(), details)
}

/// A status as the three parts a message carries it in (an `AppendBatch`
/// result's `AppendError`): code, message, and the details exactly as
/// `grpc-status-details-bin` carries them, so that the `ErrorInfo` and
/// `BadRequest` of the status travel whole.
pub fn status_parts(status: &Status) -> (i32, String, Vec<u8>) {
    (status.code() as i32, status.message().to_owned(), status.details().to_vec())
}

/// The status [`status_parts`] took apart, as it was: a caller reads it as
/// it would have read the status itself ([`Error::from_status`]). A code
/// this version does not know is `UNKNOWN`.
pub fn status_from_parts(code: i32, message: String, details: Vec<u8>) -> Status {
    Status::with_details(Code::from_i32(code), message, details.into())
}

/// Passes a peer service's answer on, saying where it came from. A peer
/// that cannot be reached is `UNAVAILABLE` (retry later), whatever the
/// transport made of it, so that callers see an outage as one; the peer's
/// `INVALID_ARGUMENT` was ours to prevent, so it is `INTERNAL`. The peer's
/// error details travel on.
pub fn pass_on(service: &str, status: Status) -> Status {
    if unreachable(&status) {
        return Error::unavailable(format!("{service} is unavailable: {}", status.message())).into_status();
    }
    let code = match status.code() {
        Code::InvalidArgument => Code::Internal,
        code => code,
    };
    Status::with_details(code, format!("{service}: {}", status.message()), status.details().to_vec().into())
}

/// Whether the call never got an answer from the peer. tonic 0.14 reports
/// a refused connection on a lazy channel as `UNAVAILABLE` "tcp connect
/// error" (which names no service); every other failure of the transport
/// carries the transport's error as its source, whatever code tonic gives
/// it: `UNKNOWN` when it cannot classify it, and for a peer shutting down
/// `CANCELLED` "operation was canceled" or `INTERNAL` "h2 protocol error"
/// (a request the connection dropped, or the peer's GOAWAY refused). A
/// status the peer itself sent has no source.
pub fn unreachable(status: &Status) -> bool {
    if status.code() == Code::Unavailable {
        return true;
    }
    let mut source = std::error::Error::source(status);
    while let Some(error) = source {
        if error.is::<tonic::transport::Error>() || error.is::<std::io::Error>() {
            return true;
        }
        source = error.source();
    }
    false
}

/// The Markdown table of every reason (`docs/errors.md`): reason, area,
/// gRPC code, docs/rules.md section, and the English and Russian messages. A
/// rules reason shows its refusals' examples (one row per wording); the
/// others what the reason means.
pub fn reasons_table() -> String {
    let mut out =
        String::from("| Reason | Area | gRPC code | docs/rules.md | English | Russian |\n|---|---|---|---|---|---|\n");
    let cell = |text: &str| text.replace('|', "\\|");
    let examples = Rejection::examples();
    for reason in Reason::all() {
        let code = format!("{:?}", reason.code());
        let code = upper_snake(&code);
        match reason {
            Reason::RulesReason(rules) => {
                for example in examples.iter().filter(|e| e.reason() == rules) {
                    out.push_str(&format!(
                        "| `{}` | rules | {code} | {} | {} | {} |\n",
                        reason.as_str(),
                        example.section().trim_start_matches("docs/rules.md "),
                        cell(&example.to_string()),
                        cell(&example.message_ru()),
                    ));
                }
            }
            _ => out.push_str(&format!(
                "| `{}` | {} | {code} | | {} | {} |\n",
                reason.as_str(),
                reason.area(),
                cell(reason.meaning(Lang::En)),
                cell(reason.meaning(Lang::Ru)),
            )),
        }
    }
    out
}

/// `FailedPrecondition` → `FAILED_PRECONDITION`, as gRPC names codes.
fn upper_snake(camel: &str) -> String {
    let mut out = String::new();
    for (i, c) in camel.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            out.push('_');
        }
        out.push(c.to_ascii_uppercase());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The header list size of a status as HTTP/2 counts it against a
    /// client's limit (RFC 7540 §6.5.2: name, value and 32 bytes an entry).
    fn header_list_size(status: Status) -> usize {
        let response = status.into_http::<()>();
        response.headers().iter().map(|(name, value)| name.as_str().len() + value.len() + 32).sum()
    }

    #[test]
    fn bounded_keeps_what_fits_and_cuts_the_middle_of_what_does_not() {
        let max = 100;
        let at = "a".repeat(max);
        assert_eq!(bounded(at.clone(), max), at, "at the limit: whole");
        let under = "a".repeat(max - 1);
        assert_eq!(bounded(under.clone(), max), under);
        let over = format!("field {}b", "x".repeat(max - 6));
        assert_eq!(over.len(), max + 1);
        let cut = bounded(over, max);
        assert!(cut.len() <= max, "{} bytes: {cut}", cut.len());
        assert!(cut.starts_with("field ") && cut.ends_with('b') && cut.contains("bytes cut"), "{cut}");
        // Cyrillic (2 bytes a character) and emoji (4) are cut on boundaries.
        for text in ["поле ".repeat(3000), "🎲".repeat(3000)] {
            let cut = bounded(text.clone(), MAX_MESSAGE_BYTES);
            assert!(cut.len() <= MAX_MESSAGE_BYTES && cut.len() > MAX_MESSAGE_BYTES / 2, "{}", cut.len());
            assert!(text.starts_with(cut.split(" …[").next().unwrap()));
        }
    }

    /// An error that echoes a 5 000-character value everywhere it can still
    /// fits a client's 16 KiB header list, whole enough to read back: its
    /// reason, the field named, the value cut. Unbounded, it does not.
    #[test]
    fn an_error_echoing_a_huge_field_fits_the_response_headers() {
        let huge = "é".repeat(5_000);
        let error = || {
            let mut error =
                Error::invalid_argument("ruleset", format!("unknown ruleset `{huge}`")).with("value", huge.clone());
            error.message_ru = format!("неизвестные правила `{huge}`");
            error
        };
        let unbounded = {
            let error = error();
            let details = vec![
                ErrorDetail::LocalizedMessage(LocalizedMessage::new("en", error.message.clone())),
                ErrorDetail::LocalizedMessage(LocalizedMessage::new("ru", error.message_ru.clone())),
            ];
            Status::with_error_details_vec(error.code, error.message, details)
        };
        assert!(header_list_size(unbounded) > 16 * 1024, "the unbounded status would not fit");
        let status = error().into_status();
        let size = header_list_size(status.clone());
        assert!(size <= 12 * 1024, "{size} bytes of headers");
        let back = Error::from_status(&status).expect("a battlelog error");
        assert_eq!(back.reason, Reason::RequestReason(RequestReason::InvalidField));
        assert_eq!(back.code, Code::InvalidArgument);
        let (field, description) = back.violation.expect("the field named");
        assert_eq!(field, "ruleset");
        assert!(description.contains("bytes cut") && description.len() <= MAX_MESSAGE_BYTES, "{description}");
        assert!(
            back.message.starts_with("ruleset: unknown ruleset `éé") && back.message.ends_with("é`"),
            "{}",
            back.message
        );
        assert!(back.metadata["value"].len() <= MAX_METADATA_VALUE_BYTES);
    }

    #[test]
    fn reasons_are_unique_upper_snake_and_read_back() {
        let all = Reason::all();
        let mut names: Vec<&str> = all.iter().map(|r| r.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), all.len(), "a reason is named twice");
        for reason in all {
            let name = reason.as_str();
            assert!(name.len() <= 63 && name.bytes().all(|b| b.is_ascii_uppercase() || b == b'_'), "{name}");
            assert_eq!(Reason::parse(name), Some(reason));
        }
    }

    /// The reasons that existed before the one vocabulary keep their names.
    #[test]
    fn existing_reasons_keep_their_names() {
        for name in [
            "TOKEN_EXPIRED",
            "ROLE_NOT_ALLOWED",
            "BATTLE_FINAL",
            "BATTLE_CLOSED",
            "IDEMPOTENCY_KEY_REUSED",
            "WRONG_EXPECTED_VERSION",
            "NONCE_OUT_OF_ORDER",
            "EPOCH_REVEALED",
            "OVERLOADED",
            "RATE_LIMITED",
            "TOO_MANY_STREAMS",
        ] {
            assert!(Reason::parse(name).is_some(), "{name} is gone");
        }
    }

    #[test]
    fn a_rules_refusal_round_trips_with_its_section_and_both_messages() {
        let rejection = Rejection::NoDodgesLeft { actor: "pikachu".into(), limit: 5 };
        let status = Error::rejection(&rejection).into_status();
        assert_eq!(status.code(), Code::FailedPrecondition);
        assert_eq!(status.message(), "pikachu has already used all 5 dodges of this battle");
        let info = status.get_details_error_info().expect("an ErrorInfo");
        assert_eq!((info.domain.as_str(), info.reason.as_str()), ("battlelog.dev", "DODGES_EXHAUSTED"));
        assert_eq!(info.metadata.get("section").map(String::as_str), Some("docs/rules.md §1.3"));
        let read = Error::from_status(&status).expect("a battlelog error");
        assert_eq!(read.reason, Reason::RulesReason(RulesReason::DodgesExhausted));
        assert_eq!(read.localized(Lang::Ru), "pikachu уже использовал все 5 уклонений этого боя");
        assert_eq!(read.localized(Lang::En), "pikachu has already used all 5 dodges of this battle");
    }

    #[test]
    fn localize_keeps_the_preferred_message_only() {
        let status = Error::rejection(&Rejection::StakesRequired).into_status();
        let messages = |status: &Status| -> Vec<(String, String)> {
            status
                .get_error_details_vec()
                .into_iter()
                .filter_map(|d| match d {
                    ErrorDetail::LocalizedMessage(m) => Some((m.locale, m.message)),
                    _ => None,
                })
                .collect()
        };
        assert_eq!(messages(&localize(&status, Lang::Ru)), [("ru".to_owned(), "ставки обязательны".to_owned())]);
        assert_eq!(messages(&localize(&status, Lang::En)), [("en".to_owned(), "stakes are required".to_owned())]);
        let ru_only = localize(&status, Lang::Ru);
        assert_eq!(Error::from_status(&ru_only).expect("read").reason.as_str(), "STAKES_REQUIRED");
    }

    #[test]
    fn accept_language_picks_russian_only_when_preferred() {
        assert_eq!(Lang::from_accept_language("ru"), Lang::Ru);
        assert_eq!(Lang::from_accept_language("ru-RU,ru;q=0.9,en-US;q=0.8"), Lang::Ru);
        assert_eq!(Lang::from_accept_language("en-US,en;q=0.9,ru;q=0.8"), Lang::En);
        assert_eq!(Lang::from_accept_language("de-DE, ru;q=0.5"), Lang::Ru);
        assert_eq!(Lang::from_accept_language("en;q=0.4, RU;q=0.6"), Lang::Ru);
        assert_eq!(Lang::from_accept_language("ru;q=0, en;q=0.1"), Lang::En);
        assert_eq!(Lang::from_accept_language("*"), Lang::En);
        assert_eq!(Lang::from_accept_language(""), Lang::En);
        assert_eq!(Lang::from_accept_language("fr"), Lang::En);
    }

    #[test]
    fn an_invalid_argument_names_its_field_three_ways() {
        let status = Error::invalid_argument("action.power", "must be a whole number").into_status();
        assert_eq!(status.code(), Code::InvalidArgument);
        assert_eq!(status.message(), "action.power: must be a whole number");
        let details = status.get_error_details();
        let violations = &details.bad_request().expect("a BadRequest").field_violations;
        assert_eq!(
            (violations[0].field.as_str(), violations[0].description.as_str()),
            ("action.power", "must be a whole number")
        );
        let info = details.error_info().expect("an ErrorInfo");
        assert_eq!(info.reason, "INVALID_FIELD");
        assert_eq!(info.metadata.get("field").map(String::as_str), Some("action.power"));
    }

    #[test]
    fn a_status_of_another_domain_is_not_ours() {
        let foreign = Status::with_error_details(
            Code::Aborted,
            "x",
            tonic_types::ErrorDetails::with_error_info("WRONG_EXPECTED_VERSION", "elsewhere", HashMap::new()),
        );
        assert_eq!(Error::from_status(&foreign), None);
        assert_eq!(Error::from_status(&Status::internal("plain")), None);
    }

    #[test]
    fn a_status_taken_apart_and_rebuilt_reads_as_it_did() {
        let conflict = Error::new(JournalReason::WrongExpectedVersion, "stale").with("actual_version", 7);
        let bad_input = Error::invalid_argument("stream_id", "1-128 bytes");
        for error in [conflict, bad_input] {
            let status = error.clone().into_status();
            let (code, message, details) = status_parts(&status);
            let rebuilt = status_from_parts(code, message, details);
            assert_eq!(rebuilt.code(), status.code());
            assert_eq!(rebuilt.message(), status.message());
            assert_eq!(Error::from_status(&rebuilt), Some(error));
        }
        assert_eq!(status_from_parts(999, "odd".into(), Vec::new()).code(), Code::Unknown);
    }

    #[test]
    fn a_peers_refusal_passed_on_keeps_its_reason() {
        let status = Error::new(JournalReason::WrongExpectedVersion, "stale").with("actual_version", 7).into_status();
        let passed = pass_on("roller", status);
        assert_eq!(passed.message(), "roller: stale");
        let read = Error::from_status(&passed).expect("read");
        assert_eq!(read.reason, Reason::JournalReason(JournalReason::WrongExpectedVersion));
        assert_eq!(read.metadata.get("actual_version").map(String::as_str), Some("7"));
        let bad_input = pass_on("journal", Error::invalid_argument("events", "too many").into_status());
        assert_eq!(bad_input.code(), Code::Internal);
    }
}
